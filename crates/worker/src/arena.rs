//! One allocator arena for every thread of a run (glibc's malloc).
//!
//! glibc gives each thread that finds the allocator's lock taken an arena of its own (up to eight per core); memory
//! freed into an arena serves only that arena's allocations, and an arena gives memory back to the system only from
//! its top. In a streaming run every thread allocates in its own: the workers their events, rendered output and flow
//! state, the collector its merge and the sink's buffers. Each arena then keeps about the most it ever held, each at
//! its own moment, and the process's resident size is the sum of those maxima rather than the most held at once. The
//! longer the input, the more often each arena meets its largest moment: peak RSS grew with the input's length while
//! the heap's own peak did not. Measured on the merged nDPI trace and ten times it (`inspect --threads 2 --scheduler
//! lfb --workers-read`, see `BENCHMARKS.md`): heaptrack's peak heap 17.8 MB and 18.1 MB, but peak RSS 29.5 and
//! 33.3 MiB (1.13–1.16); with one arena 27.1–27.6 and 28.0–28.2 MiB (1.02–1.03), the threads' CPU time unchanged
//! within the noise of the loaded machine it was measured on.

/// Makes every thread started from now on allocate from one arena (glibc's `M_ARENA_MAX` = 1), unless the user set
/// the arena count (`MALLOC_ARENA_MAX`, or `arena_max` in `GLIBC_TUNABLES`). Call it before the run's threads start:
/// an arena a thread already has stays. Returns whether it set it; does nothing on other C libraries (their
/// allocators are their own).
pub fn one_allocator_arena() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set_by_user = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
        if set_by_user {
            return false;
        }
        // SAFETY: `mallopt` sets one of the allocator's parameters under its own lock; it touches no memory of ours.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_arena_count_is_set_unless_the_user_set_it() {
        let by_user = std::env::var_os("MALLOC_ARENA_MAX").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("arena_max"));
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert_eq!(super::one_allocator_arena(), glibc && !by_user);
    }
}
