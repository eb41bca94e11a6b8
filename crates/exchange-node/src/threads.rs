//! CPU scheduling of the server's threads.
//!
//! On a machine with few cores, an acknowledgement's latency is mostly
//! the time its threads (gateway worker, Raft, core, publisher) wait to
//! be scheduled after being woken. Linux's fair scheduler (EEVDF) lets a
//! running thread finish its slice (1.5 ms with two CPUs) before a woken
//! one of the same standing runs, so a woken Raft thread could wait
//! behind the reporting store's writer for as long. Two levers, both
//! per thread:
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
//! The idle policy arbitrates CPU time, not caches. A background thread
//! that streams through memory (the reporting store's SQLite pages and
//! log) empties the caches of whichever CPU it ran on, and the order
//! path's threads, which the scheduler moves between CPUs all the time,
//! then pay for it in latency: on the two-core benchmark machine a
//! reporter free to roam cost acknowledgements over a millisecond of p99,
//! a busy loop of the same priority a fraction of that. So a background
//! thread is also kept on one CPU ([`CpuPlacement`], `auto`: the last CPU
//! the process may use), and the other CPUs' caches stay the order
//! path's.
//!
//! All of it is best effort: a kernel that refuses (not Linux, too old, a
//! container without the right, a CPU outside the process's set) leaves
//! the default, with one warning.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use thiserror::Error;

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

/// Makes the calling thread a background one: the idle policy
/// (`SCHED_IDLE`), on the CPUs `placement` names.
pub fn background(placement: &CpuPlacement) {
    #[cfg(target_os = "linux")]
    {
        if let Err(error) = linux::idle_policy() {
            warn_once(
                "could not move a background thread to the idle policy",
                error,
            );
        }
        let pinned = linux::allowed_cpus().and_then(|allowed| match placement.resolve(&allowed) {
            Some(cpus) => linux::pin(&cpus),
            None => Ok(()),
        });
        if let Err(error) = pinned {
            warn_once("could not keep a background thread on its CPUs", error);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = placement;
}

/// The highest CPU number a placement may name: the kernel's default
/// `CPU_SETSIZE`.
pub const MAX_CPU: usize = 1_023;

/// Which CPUs a background thread may run on (`[reporting] cpus`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CpuPlacement {
    /// The last CPU the process may use, if it may use two or more; else
    /// anywhere (one CPU has no other to keep clean).
    #[default]
    Auto,
    /// Wherever the scheduler puts it.
    Any,
    /// These CPUs, ascending, without repeats.
    Cpus(Vec<usize>),
}

impl CpuPlacement {
    /// The CPUs to pin to, given the ones the process may use (ascending);
    /// `None`: leave the thread where it may already run.
    pub fn resolve(&self, allowed: &[usize]) -> Option<Vec<usize>> {
        match self {
            CpuPlacement::Auto if allowed.len() >= 2 => allowed.last().map(|cpu| vec![*cpu]),
            CpuPlacement::Auto | CpuPlacement::Any => None,
            CpuPlacement::Cpus(cpus) => Some(cpus.clone()),
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error(
        "{0:?} is not a CPU number (\"auto\", \"any\", or a list such as \"3\", \"2-3\" or \
             \"1,3\")"
    )]
    NotANumber(String),
    #[error("CPU {0} is above the largest CPU number, {MAX_CPU}")]
    TooHigh(usize),
    #[error("the CPU range {0}-{1} runs backwards")]
    Backwards(usize, usize),
    #[error("an empty CPU list (\"any\" lets the thread run anywhere)")]
    Empty,
}

impl FromStr for CpuPlacement {
    type Err = CpuListError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "auto" => return Ok(CpuPlacement::Auto),
            "any" => return Ok(CpuPlacement::Any),
            "" => return Err(CpuListError::Empty),
            _ => {}
        }
        let cpu = |part: &str| -> Result<usize, CpuListError> {
            let cpu: usize = part
                .trim()
                .parse()
                .map_err(|_| CpuListError::NotANumber(part.trim().to_string()))?;
            if cpu > MAX_CPU {
                return Err(CpuListError::TooHigh(cpu));
            }
            Ok(cpu)
        };
        let mut cpus = Vec::new();
        for part in text.split(',') {
            match part.split_once('-') {
                Some((first, last)) => {
                    let (first, last) = (cpu(first)?, cpu(last)?);
                    if last < first {
                        return Err(CpuListError::Backwards(first, last));
                    }
                    cpus.extend(first..=last);
                }
                None => cpus.push(cpu(part)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuPlacement::Cpus(cpus))
    }
}

impl TryFrom<String> for CpuPlacement {
    type Error = CpuListError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl fmt::Display for CpuPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuPlacement::Auto => f.write_str("auto"),
            CpuPlacement::Any => f.write_str("any"),
            CpuPlacement::Cpus(cpus) => {
                for (i, cpu) in cpus.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{cpu}")?;
                }
                Ok(())
            }
        }
    }
}

impl From<CpuPlacement> for String {
    fn from(placement: CpuPlacement) -> String {
        placement.to_string()
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

    /// The CPUs the calling thread may run on, ascending.
    pub fn allowed_cpus() -> Result<Vec<usize>, Error> {
        // SAFETY: an all-zero cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a cpu_set_t of the size passed; 0 is this thread.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            != 0
        {
            return Err(Error::last_os_error());
        }
        // SAFETY: CPU_ISSET reads a set the kernel filled, below its size.
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|cpu| unsafe { libc::CPU_ISSET(*cpu, &set) })
            .collect())
    }

    /// Keeps the calling thread on `cpus` (each at most `MAX_CPU`).
    pub fn pin(cpus: &[usize]) -> Result<(), Error> {
        // SAFETY: an all-zero cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for cpu in cpus.iter().filter(|cpu| **cpu <= super::MAX_CPU) {
            // SAFETY: `cpu` is below CPU_SETSIZE (MAX_CPU + 1).
            unsafe { libc::CPU_SET(*cpu, &mut set) };
        }
        // SAFETY: `set` is a cpu_set_t of the size passed; 0 is this thread.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } == 0
        {
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
            background(&CpuPlacement::Any);
            // SAFETY: reads this thread's own policy.
            unsafe { libc::sched_getscheduler(libc::gettid()) }
        })
        .join()
        .expect("thread");
        assert_eq!(policy, libc::SCHED_IDLE);
    }

    #[test]
    fn a_background_thread_stays_on_the_cpus_it_was_given() {
        let allowed = linux::allowed_cpus().expect("affinity");
        assert!(!allowed.is_empty());
        let last = *allowed.last().expect("a CPU");
        let given = CpuPlacement::Cpus(vec![last]);
        let after = std::thread::spawn(move || {
            background(&given);
            linux::allowed_cpus().expect("affinity")
        })
        .join()
        .expect("thread");
        assert_eq!(after, vec![last]);
        // The caller's own set is untouched: placement is per thread.
        assert_eq!(linux::allowed_cpus().expect("affinity"), allowed);
    }

    #[test]
    fn auto_keeps_a_background_thread_on_the_last_cpu_when_there_are_two() {
        let auto = CpuPlacement::Auto;
        assert_eq!(auto.resolve(&[0, 1]), Some(vec![1]));
        assert_eq!(auto.resolve(&[2, 5, 7]), Some(vec![7]));
        assert_eq!(auto.resolve(&[3]), None);
        assert_eq!(auto.resolve(&[]), None);
        assert_eq!(CpuPlacement::Any.resolve(&[0, 1]), None);
        assert_eq!(CpuPlacement::Cpus(vec![0]).resolve(&[0, 1]), Some(vec![0]));
    }

    #[test]
    fn cpu_lists_parse_as_taskset_writes_them() {
        let parse = |text: &str| text.parse::<CpuPlacement>();
        assert_eq!(parse("auto"), Ok(CpuPlacement::Auto));
        assert_eq!(parse("any"), Ok(CpuPlacement::Any));
        assert_eq!(parse("3"), Ok(CpuPlacement::Cpus(vec![3])));
        assert_eq!(parse("5,1-3, 2"), Ok(CpuPlacement::Cpus(vec![1, 2, 3, 5])));
        assert_eq!(parse(""), Err(CpuListError::Empty));
        assert_eq!(parse("x"), Err(CpuListError::NotANumber("x".into())));
        assert_eq!(parse("1,"), Err(CpuListError::NotANumber(String::new())));
        assert_eq!(parse("-1"), Err(CpuListError::NotANumber(String::new())));
        assert_eq!(parse("3-1"), Err(CpuListError::Backwards(3, 1)));
        assert_eq!(parse("1024"), Err(CpuListError::TooHigh(1024)));
        for text in ["auto", "any", "1,2,3,5"] {
            assert_eq!(parse(text).map(|p| p.to_string()), Ok(text.to_string()));
        }
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
