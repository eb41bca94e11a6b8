//! One-shot runs of the `exchange` binary's commands (`replay`, `report`,
//! `cluster ...`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

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

/// Asserts that a run succeeded, with its output in the message.
pub fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
