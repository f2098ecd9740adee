//! Large blocks from their own mappings, whatever the run freed before (glibc's malloc).
//!
//! glibc serves a block of at least its *mmap threshold* (128 KiB at start) from a mapping of its own, given back to
//! the system when freed, and smaller ones from an arena (one per thread that finds the allocator busy: each worker
//! and the collector get one). By default the threshold moves: when a block served from a mapping is freed, glibc
//! raises the threshold to that block's size (up to 32 MiB) and its trim threshold to twice that. A streaming run
//! frees such blocks as it goes (a shard's table that grew past a few hundred flows, the flows a large sweep ends),
//! and from the first one on every block up to that size comes from the arena of the thread that asks: a sweep's output
//! messages, the next large tables, a sweep's list of what it ends. An arena gives memory back only from its top and
//! serves only its own threads, so each kept about the most it had ever held at once, each at its own moment, and a
//! longer input met larger such moments: peak RSS rose with the input's length while the live heap did not (the
//! merged nDPI trace against ten times it, `inspect --threads 2 --scheduler lfb --workers-read`: 29.7–30.0 → 34.3–34.8
//! MiB, 1.14–1.17; with the threshold fixed 29.4–29.5 → 30.5–30.7 MiB, 1.04; see `BENCHMARKS.md`).
//!
//! Fixed, a large block is mapped when asked for and unmapped when freed, and the arenas hold only small blocks. What
//! it costs is a mapping and its page faults per large block (a few dozen a run on the merged trace: tables of large
//! shards and large sweeps, never a packet's work).
//!
//! The trim threshold is the free memory an arena keeps at its top. Each worker's arena kept up to that much beyond
//! what it held, each at its own moment, and a longer input met more of the moments when both kept it: at 1 MiB,
//! peak RSS 10x / 1x of rss `--workers-read` was 1.068-1.110 (10x 27.8-28.5 MiB), lfb `--workers-read` 1.047-1.092,
//! dh 1.042-1.075 in twelve alternated rounds under `chrt -r 1`; at 256 KiB 1.051-1.093 (27.0-27.9 MiB),
//! 1.035-1.060, 1.035-1.059, every 10x peak 0.5-1 MiB lower, for 1,000-1,400 more page faults a run on the merged
//! trace (the arenas' tops given back and faulted in again after sweeps; wall time within 2%, see `BENCHMARKS.md`).
//! glibc's default, 128 KiB, gave peaks in the same range for 300-900 more faults again.

/// The mmap threshold set: glibc's own starting value, now kept.
pub const MMAP_THRESHOLD: usize = 128 << 10;

/// Free memory an arena keeps at its top before giving it back to the system.
pub const TRIM_THRESHOLD: usize = 256 << 10;

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`] and its trim threshold at [`TRIM_THRESHOLD`] (which stops
/// both from moving), unless the user set either (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, or
/// `mmap_threshold` / `trim_threshold` in `GLIBC_TUNABLES`). Call it before the run allocates its state. Returns
/// whether it set them; does nothing on other C libraries (their allocators are their own).
pub fn fixed_mmap_threshold() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if set_by_user() {
            return false;
        }
        let as_int = |v: usize| libc::c_int::try_from(v).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` sets one of the allocator's parameters under its own lock; it touches no memory of ours.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, as_int(MMAP_THRESHOLD)) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, as_int(TRIM_THRESHOLD)) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Whether the user set either threshold through the environment.
fn set_by_user() -> bool {
    std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
        || std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_some()
        || std::env::var("GLIBC_TUNABLES")
            .is_ok_and(|t| t.contains("mmap_threshold") || t.contains("trim_threshold"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_thresholds_are_fixed_unless_the_user_set_them() {
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(
            super::fixed_mmap_threshold(),
            glibc && !super::set_by_user()
        );
    }
}
