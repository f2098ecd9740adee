//! Hardware cache-miss counters per worker thread (ANCS'10 §4.5, Figure 8: misses per packet), read with the Linux
//! `perf_event_open` system call through `libc` (no extra dependency).
//!
//! Each worker opens two counting events on itself in the workload's `on_start` hook (after the start barrier) and
//! stops them in `on_stop`, so exactly the timed region is counted, user space only:
//! * **L1d**: `PERF_TYPE_HW_CACHE`, L1D / read / miss;
//! * **LLC**: `PERF_TYPE_HW_CACHE`, LL / read / miss.
//!
//! The counters read with `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` and are scaled by enabled/running when the kernel
//! multiplexed them. Where the machine has no PMU (this lab's VM: the call fails with `ENOENT`), or
//! `perf_event_paranoid` forbids it, [`Counters::open`] returns the reason and the report says "not supported" with
//! it; nothing else changes. The cost when supported: two `ioctl`s and two `read`s per worker per run, nothing per
//! packet.

use std::io;

const PERF_TYPE_HW_CACHE: u32 = 3;
const CACHE_L1D: u64 = 0;
const CACHE_LL: u64 = 2;
const OP_READ: u64 = 0;
const RESULT_MISS: u64 = 1;
/// `perf_event_attr` flags: disabled (bit 0), exclude_kernel (bit 5), exclude_hv (bit 6).
const FLAGS: u64 = 1 | (1 << 5) | (1 << 6);
const READ_FORMAT: u64 = 1 | 2; // TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// `struct perf_event_attr`, `PERF_ATTR_SIZE_VER5` (112 bytes), as in `linux/perf_event.h`.
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

/// An open counter (a file descriptor), closed on drop.
struct Event(libc::c_int);

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the descriptor was returned by perf_event_open and is closed once, here.
        unsafe {
            libc::close(self.0);
        }
    }
}

impl Event {
    fn open(config: u64) -> io::Result<Event> {
        let attr = Attr {
            kind: PERF_TYPE_HW_CACHE,
            size: std::mem::size_of::<Attr>() as u32,
            config,
            read_format: READ_FORMAT,
            flags: FLAGS,
            ..Attr::default()
        };
        // SAFETY: `attr` is a valid, fully initialised perf_event_attr of the size it declares; pid 0 and cpu -1 mean
        // "this thread, any CPU"; no group; the call only reads `attr`.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const Attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Event(fd as libc::c_int))
    }

    fn ioctl(&self, req: libc::c_ulong) {
        // SAFETY: a perf event descriptor we own; these requests take no argument.
        unsafe {
            libc::ioctl(self.0, req as _, 0);
        }
    }

    /// The count, scaled for multiplexing; `None` if the read failed or the counter never ran.
    fn read(&self) -> Option<u64> {
        let mut buf = [0u64; 3];
        // SAFETY: reads at most 24 bytes into a 24-byte buffer from a descriptor we own.
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), std::mem::size_of_val(&buf)) };
        if n != std::mem::size_of_val(&buf) as isize {
            return None;
        }
        let [value, enabled, running] = buf;
        if running == 0 {
            return if enabled == 0 { Some(0) } else { None };
        }
        Some((value as f64 * enabled as f64 / running as f64) as u64)
    }
}

/// The L1d and LLC read-miss counters of the calling thread.
pub struct Counters {
    l1d: Event,
    llc: Event,
}

/// Misses counted by one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Misses {
    pub l1d: u64,
    pub llc: u64,
}

impl Counters {
    /// Open both counters on the calling thread (disabled). The error says why (e.g. "No such file or directory"
    /// where the machine has no PMU).
    pub fn open() -> Result<Counters, String> {
        let config = |cache: u64| cache | (OP_READ << 8) | (RESULT_MISS << 16);
        let l1d = Event::open(config(CACHE_L1D)).map_err(|e| describe(&e))?;
        let llc = Event::open(config(CACHE_LL)).map_err(|e| describe(&e))?;
        Ok(Counters { l1d, llc })
    }

    /// Zero and start both counters.
    pub fn start(&self) {
        for e in [&self.l1d, &self.llc] {
            e.ioctl(IOC_RESET);
            e.ioctl(IOC_ENABLE);
        }
    }

    /// Stop both counters and read them.
    pub fn stop(&self) -> Option<Misses> {
        self.l1d.ioctl(IOC_DISABLE);
        self.llc.ioctl(IOC_DISABLE);
        Some(Misses {
            l1d: self.l1d.read()?,
            llc: self.llc.read()?,
        })
    }
}

fn describe(e: &io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            " (no hardware cache events: no PMU, e.g. in a VM)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            " (not permitted: see /proc/sys/kernel/perf_event_paranoid)"
        }
        Some(libc::ENOSYS) => " (perf_event_open not available)",
        _ => "",
    };
    format!("perf_event_open: {e}{hint}")
}

/// Whether the counters can be opened on this machine, and why not.
pub fn probe() -> Result<(), String> {
    Counters::open().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_has_the_kernels_ver5_size() {
        assert_eq!(std::mem::size_of::<Attr>(), 112);
    }

    #[test]
    fn counters_open_or_say_why_without_panicking() {
        match Counters::open() {
            Ok(c) => {
                c.start();
                let mut v = vec![0u64; 1 << 16];
                for i in 0..v.len() {
                    v[(i * 4099) % (1 << 16)] += i as u64;
                }
                std::hint::black_box(&v);
                let m = c.stop();
                eprintln!("cache counters supported: {m:?}");
                assert!(m.is_some());
            }
            Err(why) => {
                eprintln!("cache counters not supported here: {why}");
                assert!(why.starts_with("perf_event_open: "));
            }
        }
    }
}
