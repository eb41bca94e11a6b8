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
//! - background threads (the reporting writer) run under `SCHED_IDLE`:
//!   any order-path thread that wakes preempts them at once (a lower nice
//!   value alone does not: the woken thread still waited for the tick,
//!   up to 4 ms, behind a writer in the middle of a batch), and they get
//!   only the cores' spare time when busy. Not none: the kernel's fair
//!   scheduler still gives an idle-policy thread a small share, so a
//!   saturated machine delays the store but does not stop it.
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

/// Makes the calling thread a background one (`SCHED_IDLE`).
pub fn background() {
    #[cfg(target_os = "linux")]
    if let Err(error) = linux::idle_policy() {
        warn_once(
            "could not move a background thread to the idle policy",
            error,
        );
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

    pub fn idle_policy() -> Result<(), Error> {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a valid sched_param for this thread's own id.
        if unsafe { libc::sched_setscheduler(tid() as libc::pid_t, libc::SCHED_IDLE, &param) } == 0
        {
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
    fn a_background_thread_runs_under_the_idle_policy() {
        let policy = std::thread::spawn(|| {
            background();
            // SAFETY: reads this thread's own policy.
            unsafe { libc::sched_getscheduler(libc::gettid()) }
        })
        .join()
        .expect("thread");
        assert_eq!(policy, libc::SCHED_IDLE);
    }

    #[test]
    fn a_latency_sensitive_thread_gets_the_short_slice_and_keeps_its_nice_value() {
        let (before, after, slice) = std::thread::spawn(|| {
            // SAFETY: raises this thread's own nice value.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 5) };
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
