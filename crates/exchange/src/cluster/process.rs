//! The processes of a local cluster (nodes and gateways): whether one
//! runs, and stopping them (SIGTERM, then SIGKILL) without ever signalling
//! a reused pid.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The pid in the pid file of the node whose data directory is `data`.
pub(super) fn recorded_pid(data: &Path) -> Option<u32> {
    std::fs::read_to_string(exchange_node::pid_file(data))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The process's pid if it is running: the process its pid file names
/// exists, and (pids are reused) is an `exchange serve`, `gateway` or
/// `md-gateway` of that data directory.
pub(super) fn running(data: &Path) -> Option<u32> {
    recorded_pid(data).filter(|&pid| alive(pid) && serves(pid, data))
}

/// Whether process `pid` exists and has not exited: a killed process that
/// nobody has reaped yet still exists, as a zombie.
pub(super) fn alive(pid: u32) -> bool {
    let Ok(pid_t) = i32::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid_t, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false);
    exists && !zombie
}

/// Whether process `pid` runs `serve --data-dir DIR` (or `gateway`,
/// `md-gateway`, `reporter`) for the directory `data`, a relative DIR taken from the
/// process's working directory.
/// Without /proc there is nothing to check, and the pid has to do.
pub(super) fn serves(pid: u32, data: &Path) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let Ok(cmdline) = std::fs::read(proc.join("cmdline")) else {
        return false;
    };
    let args: Vec<&OsStr> = cmdline.split(|&b| b == 0).map(OsStr::from_bytes).collect();
    let ours = ["serve", "gateway", "md-gateway", "reporter"];
    if !args
        .iter()
        .skip(1)
        .any(|&arg| ours.iter().any(|&cmd| arg == cmd))
    {
        return false;
    }
    let Some(dir) = args
        .windows(2)
        .find(|pair| pair[0] == "--data-dir")
        .map(|pair| Path::new(pair[1]))
    else {
        return false;
    };
    let dir = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        match std::fs::read_link(proc.join("cwd")) {
            Ok(cwd) => cwd.join(dir),
            Err(_) => return false,
        }
    };
    match (dir.canonicalize(), data.canonicalize()) {
        (Ok(theirs), Ok(ours)) => theirs == ours,
        _ => false,
    }
}

/// How long `stop` waits for processes to exit after SIGTERM (a node
/// hands leadership over and flushes first), and then after SIGKILL
/// (immediate, unless the process is stuck in the kernel, e.g. on a hung
/// disk).
pub(super) const STOP_WAITS: (Duration, Duration) =
    (Duration::from_secs(30), Duration::from_secs(5));

/// How a process took `stop`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Stopped {
    /// Exited this long after SIGTERM.
    Exited(Duration),
    /// Outlasted the wait after SIGTERM; SIGKILL ended it.
    Killed,
    /// Still there after SIGKILL.
    Stuck,
}

/// Sends SIGTERM to every process, waits for them to exit, SIGKILLs those
/// still there after the first wait and waits the second. `is_ours(pid)`
/// says whether the process is still the one meant: a pid reused by
/// another process is neither signalled nor waited for.
pub(super) fn stop(
    pids: &[u32],
    is_ours: impl Fn(u32) -> bool,
    (term_wait, kill_wait): (Duration, Duration),
) -> Vec<Stopped> {
    let started = Instant::now();
    let signal = |pid: u32, signal: i32| {
        if let Ok(pid) = i32::try_from(pid) {
            // SAFETY: signals a process this tool started (is_ours).
            unsafe { libc::kill(pid, signal) };
        }
    };
    let mut outcomes: Vec<Option<Stopped>> = vec![None; pids.len()];
    let wait = |outcomes: &mut Vec<Option<Stopped>>, until: Instant, killed: bool| loop {
        for (outcome, &pid) in outcomes.iter_mut().zip(pids) {
            if outcome.is_none() && !is_ours(pid) {
                *outcome = Some(if killed {
                    Stopped::Killed
                } else {
                    Stopped::Exited(started.elapsed())
                });
            }
        }
        if outcomes.iter().all(Option::is_some) || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for &pid in pids {
        if is_ours(pid) {
            signal(pid, libc::SIGTERM);
        }
    }
    wait(&mut outcomes, started + term_wait, false);
    for (outcome, &pid) in outcomes.iter_mut().zip(pids) {
        if outcome.is_none() {
            if is_ours(pid) {
                signal(pid, libc::SIGKILL);
            } else {
                *outcome = Some(Stopped::Exited(started.elapsed()));
            }
        }
    }
    wait(&mut outcomes, Instant::now() + kill_wait, true);
    outcomes
        .into_iter()
        .map(|outcome| outcome.unwrap_or(Stopped::Stuck))
        .collect()
}

/// Prints how process `name` (`node 2`, `gateway 1`) stopped and, once
/// its process is gone, removes the pid file in its directory `data`.
pub(super) fn report_stop(name: &str, data: &Path, pid: u32, outcome: &Stopped) {
    match outcome {
        Stopped::Exited(after) => {
            println!(
                "{name}: stopped (pid {pid} exited {:.1} s after SIGTERM)",
                after.as_secs_f64()
            );
        }
        Stopped::Killed => println!(
            "{name}: killed (pid {pid} had not exited {} s after SIGTERM; SIGKILL)",
            STOP_WAITS.0.as_secs()
        ),
        Stopped::Stuck => {
            println!(
                "{name}: still running (pid {pid} {} s after SIGKILL; pid file kept)",
                STOP_WAITS.1.as_secs()
            );
            return;
        }
    }
    remove_pid_file(name, data);
}

pub(super) fn remove_pid_file(name: &str, data: &Path) {
    let path = exchange_node::pid_file(data);
    if let Err(error) = std::fs::remove_file(&path) {
        if error.kind() != std::io::ErrorKind::NotFound {
            eprintln!("{name}: cannot remove {}: {error}", path.display());
        }
    }
}

/// Starts `command` as the process whose data directory is `data`: its
/// output appended to `data/log`, its pid written to the pid file, in a
/// process group of its own so that a ctrl-c meant for `exchange cluster`
/// does not take the cluster down with it. Returns its pid.
pub(super) fn spawn(command: &mut std::process::Command, data: &Path) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt;
    std::fs::create_dir_all(data)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.join("log"))?;
    command
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    let child = command.spawn()?;
    std::fs::write(exchange_node::pid_file(data), child.id().to_string())?;
    Ok(child.id())
}
