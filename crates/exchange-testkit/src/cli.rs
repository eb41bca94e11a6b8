//! One-shot runs of the `exchange` binary's commands (`replay`, `report`,
//! `cluster ...`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::http::ADMIN_TOKEN;

/// Runs `bin args...` to completion with `stdin` as its input (none if
/// `None`) and the kit's admin token in the environment.
pub fn run(bin: impl AsRef<Path>, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(bin.as_ref())
        .args(args)
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("RUST_BACKTRACE", "0")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.as_ref().display()));
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        pipe.write_all(input.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait for the command")
}

/// As [`run`] without input, killing the command and failing the test
/// if it runs longer than `limit`. For commands that print little: the
/// output is read once the command has exited.
pub fn run_within(bin: impl AsRef<Path>, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(bin.as_ref())
        .args(args)
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", bin.as_ref().display()));
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("poll the command").is_none() {
        if Instant::now() > deadline {
            // Killing fails only if it has just exited; its output says.
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "{args:?} still running after {limit:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect output")
}

/// Asserts that a run succeeded, with its output in the message; returns
/// its stdout.
pub fn assert_success(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} ({}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Whether process `pid` exists and is not a zombie (cluster nodes outlive
/// the command that started them, so whoever adopts them reaps them,
/// possibly late).
pub fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    exists && !zombie
}

/// The pid in `DIR/node-N/pid`, the file `exchange cluster up` writes for
/// node `node`, if there is one.
pub fn node_pid(dir: &Path, node: u64) -> Option<i32> {
    std::fs::read_to_string(dir.join(format!("node-{node}/pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}
