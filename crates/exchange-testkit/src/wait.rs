//! Waiting with a deadline, and stopping helper threads when a check fails.

use std::time::{Duration, Instant};

/// Longest any single wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Polls `done` until it holds, failing the test at `DEADLINE`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs its closure if dropped while the thread unwinds. A failed check
/// inside `std::thread::scope` must stop the scope's load threads, or the
/// scope waits for them forever instead of failing the test.
pub struct OnPanic<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnPanic<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}
