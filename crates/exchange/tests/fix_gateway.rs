//! The FIX gateway of the real `exchange serve` binary against independent
//! counterparties: the Python suite in tests/fix/ drives QuickFIX (a
//! complete FIX engine) and raw simplefix messages.
//!
//! The suite needs Python 3 with `quickfix` and `simplefix`
//! (`pip install -r tests/fix/requirements.txt`; `.ci/run` installs them).
//! In CI (`CI=true`) a missing counterparty fails the test: passing without
//! it would prove nothing. On a newcomer's machine it prints a loud warning
//! and the FIX suite is skipped, so `cargo test --workspace` works anywhere.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn fix_conformance_suite_against_quickfix_and_simplefix() {
    let suite = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fix");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import quickfix, simplefix"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} ({e}): the FIX suite needs Python 3"));
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !probe.status.success() && !in_ci {
        eprintln!(
            "\n!!!!! FIX CONFORMANCE SUITE NOT RUN: python3 lacks quickfix/simplefix.\n\
             !!!!! Install them with: pip install -r tests/fix/requirements.txt\n"
        );
        return;
    }
    assert!(
        probe.status.success(),
        "the FIX suite needs quickfix and simplefix: pip install -r tests/fix/requirements.txt\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let output = Command::new(&python)
        .args(["-m", "unittest", "discover", "-v", "-p", "test_*.py", "-s"])
        .arg(&suite)
        .current_dir(&suite)
        .env("EXCHANGE_BIN", env!("CARGO_BIN_EXE_exchange"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the FIX suite");
    let report = String::from_utf8_lossy(&output.stderr);
    println!("{report}");
    assert!(output.status.success(), "the FIX suite failed:\n{report}");
    let ran: usize = report
        .lines()
        .find_map(|line| line.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        ran >= 15,
        "the FIX suite ran {ran} tests; expected all of them:\n{report}"
    );
}
