//! CPU scheduling of the server's threads.
//!
//! On a machine with few cores, an acknowledgement's latency is mostly
//! the time its threads (gateway worker, Raft, core) wait to be scheduled
//! after being woken. Linux's fair scheduler (EEVDF) lets a running thread
//! finish its slice (1.5 ms with two CPUs) before a woken one of the same
//! standing runs, so a woken Raft thread could wait behind the reporting
//! store's writer for as long. Two levers, both per thread:
//!
//! - the threads on the order path ask for a short slice: EEVDF lets a
//!   task with a shorter slice preempt on wake-up, and its work between
//!   two sleeps is short anyway;
//! - background threads (the reporting writer) run at a lower priority,
//!   so they get the cores' idle time rather than an equal share.
//!
//! Both are best effort: a kernel that refuses (not Linux, too old, a
//! container without the right) leaves the default, with one warning.

use std::sync::atomic::{AtomicBool, Ordering};

/// The slice the order path's threads ask for, in nanoseconds: the
/// shortest Linux accepts.
const SHORT_SLICE_NS: u64 = 100_000;

static WARNED: AtomicBool = AtomicBool::new(false);

fn warn_once(what: &str, error: std::io::Error) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(%error, "{what}; threads keep the default scheduling");
    }
}

/// Marks the calling thread as on the order path: a short scheduling
/// slice, so that it runs soon after it is woken.
pub fn latency_sensitive() {
    #[cfg(target_os = "linux")]
    if let Err(error) = linux::set_slice(SHORT_SLICE_NS) {
        warn_once("could not shorten the order path's scheduling slice", error);
    }
}

/// Lowers the calling thread's priority by `increment` nice steps (Linux
/// gives each thread its own nice value).
pub fn lower_priority(increment: u8) {
    if increment == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(error) = linux::renice(i32::from(increment)) {
        warn_once("could not lower a background thread's priority", error);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::Error;

    /// `struct sched_attr`, first version (48 bytes), from
    /// `include/uapi/linux/sched/types.h`.
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
    }

    fn current_nice(tid: libc::id_t) -> Result<i32, Error> {
        // -1 is a valid nice value: errno tells a failure apart.
        // SAFETY: errno is thread-local; getpriority reads this thread.
        unsafe { *libc::__errno_location() = 0 };
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
        let error = Error::last_os_error();
        match error.raw_os_error() {
            Some(0) | None => Ok(nice),
            Some(_) => Err(error),
        }
    }

    fn tid() -> libc::id_t {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() as libc::id_t }
    }

    pub fn set_slice(slice_ns: u64) -> Result<(), Error> {
        let tid = tid();
        let attr = SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            policy: libc::SCHED_OTHER as u32,
            flags: 0,
            // sched_setattr sets the nice value too: keep the current one.
            nice: current_nice(tid)?,
            priority: 0,
            runtime: slice_ns,
            deadline: 0,
            period: 0,
        };
        // SAFETY: `attr` is a valid sched_attr of the size it declares,
        // applied to this thread only.
        let result = unsafe {
            libc::syscall(
                libc::SYS_sched_setattr,
                tid as libc::c_long,
                &attr as *const SchedAttr,
                0 as libc::c_uint,
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(Error::last_os_error())
        }
    }

    pub fn renice(increment: i32) -> Result<(), Error> {
        let tid = tid();
        let wanted = (current_nice(tid)? + increment).min(19);
        // SAFETY: a plain system call on this thread's own id.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, wanted) } == 0 {
            Ok(())
        } else {
            Err(Error::last_os_error())
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_thread_runs_at_the_higher_nice_value() {
        let before = std::thread::spawn(linux_nice).join().expect("thread");
        let after = std::thread::spawn(|| {
            lower_priority(3);
            linux_nice()
        })
        .join()
        .expect("thread");
        assert_eq!(after, (before + 3).min(19));
    }

    #[test]
    fn a_latency_sensitive_thread_gets_the_short_slice_and_keeps_its_nice_value() {
        let (before, after, slice) = std::thread::spawn(|| {
            lower_priority(2);
            let before = linux_nice();
            latency_sensitive();
            (before, linux_nice(), slice_ns())
        })
        .join()
        .expect("thread");
        assert_eq!(before, after);
        // Kernels before 6.6 (EEVDF) do not show a slice.
        if let Some(slice) = slice {
            assert_eq!(slice, SHORT_SLICE_NS);
        }
    }

    fn slice_ns() -> Option<u64> {
        let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        sched
            .lines()
            .find(|line| line.starts_with("se.slice"))?
            .split(':')
            .nth(1)?
            .trim()
            .parse()
            .ok()
    }

    fn linux_nice() -> i32 {
        // SAFETY: reads this thread's own priority.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }
}
