//! What third-party tools see of the running binary, checked with those
//! tools:
//!
//! - `GET /openapi.json` validates (openapi-spec-validator), and every
//!   route's answers match it (schemathesis, signing private routes): the
//!   Python suite in tests/api/.
//! - `GET /metrics` passes `promtool check metrics` (Prometheus's own
//!   checker: HELP on every metric, base units).
//! - The binary feed, idle, heartbeats once per `heartbeat_ms`, as
//!   docs/marketdata.md promises a MoldUDP64 receiver.
//!
//! The tools come from PyPI (`pip install -r tests/api/requirements.txt`)
//! and Debian (`apt-get install prometheus` for promtool); `.ci/run`
//! installs them. In CI (`CI=true`) a missing one fails the test; elsewhere
//! it prints a loud warning and skips, so `cargo test --workspace` works on
//! any machine.

use std::io::Write;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use exchange_testkit::{limit, Server, ADMIN_TOKEN};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Held by the tests that load the machine (schemathesis) or measure
/// timing (the feed's heartbeats), so neither runs beside the other.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// `Some(why)` when a tool is missing: a failure in CI, a loud skip
/// elsewhere.
fn skip_without(missing: Option<String>, what: &str, install: &str) -> bool {
    let Some(missing) = missing else {
        return false;
    };
    assert!(!in_ci(), "{what} cannot run in CI: {missing}");
    eprintln!("\n!!!!! {what} NOT RUN: {missing}\n!!!!! Install: {install}\n");
    true
}

/// Why `python` cannot import `modules`, if it cannot.
fn missing_python_modules(python: &str, modules: &str) -> Option<String> {
    match Command::new(python)
        .args(["-c", &format!("import {modules}")])
        .output()
    {
        Ok(probe) if probe.status.success() => None,
        Ok(probe) => Some(format!(
            "{python} cannot import {modules}: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        )),
        Err(error) => Some(format!("cannot run {python}: {error}")),
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn openapi_document_validates_and_every_answer_matches_it() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let missing = missing_python_modules(&python, "openapi_spec_validator, schemathesis");
    if skip_without(
        missing,
        "OPENAPI AND SCHEMATHESIS CHECKS",
        "pip install -r tests/api/requirements.txt",
    ) {
        return;
    }
    let _alone = heavy();
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let account = api.funded_account();
    // Something to find: a resting order, and a fill between two accounts.
    api.place(&account, &limit("buy", "59000", "0.5", "resting"));
    let other = api.funded_account();
    api.place(&other, &limit("sell", "59000", "0.1", "crossing"));
    // A narrower key: its refusals must be documented too.
    let read_only = api.admin(
        "POST",
        &format!("/admin/accounts/{}/keys", account.id),
        r#"{"scopes": ["read"], "label": "read only"}"#,
    );
    assert_eq!(read_only.status, 201, "read-only key: {}", read_only.text());
    let read_only = read_only.json();
    let field = |name: &str| read_only[name].as_str().expect(name).to_owned();

    let output = Command::new(&python)
        .arg("check_api.py")
        .current_dir(repo_root().join("tests/api"))
        .env("EXCHANGE_URL", format!("http://127.0.0.1:{}", api.port))
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("EXCHANGE_API_KEY", &account.key)
        .env("EXCHANGE_API_SECRET", &account.secret)
        .env("EXCHANGE_READ_API_KEY", field("api_key"))
        .env("EXCHANGE_READ_API_SECRET", field("api_secret"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run tests/api/check_api.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}\n{stderr}");
    assert!(
        output.status.success(),
        "the published API does not match its document:\n{stdout}\n{stderr}\nserver log:\n{}",
        server.stderr()
    );
    assert!(
        stdout.contains("openapi.json validates") && stdout.contains("signed requests accepted"),
        "the suite skipped a step:\n{stdout}"
    );
    // schemathesis's summary names the operations it tested.
    assert!(
        stdout.matches("API Operations:").count() == 2 && !stdout.contains("No tests were run"),
        "schemathesis did not test both keys' routes:\n{stdout}"
    );
}

/// `/metrics` after some trading, with the binary feed and the reporting
/// store running, so every family has a value.
fn scrape_metrics() -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let receiver = UdpSocket::bind("127.0.0.1:0").expect("feed receiver");
    let config = dir.path().join("exchange.toml");
    std::fs::write(
        &config,
        format!(
            "[marketdata]\nfeed_targets = [\"{}\"]\n",
            receiver.local_addr().expect("receiver address")
        ),
    )
    .expect("write the config");
    let server = Server::start_with(EXCHANGE, &dir.path().join("data"), Some(&config));
    let api = server.api;
    let (maker, taker) = (api.funded_account(), api.funded_account());
    api.place(&maker, &limit("sell", "60000", "1", "ask"));
    api.place(&taker, &limit("buy", "60000", "0.25", "lift"));
    // A history read waits for the reporting store: its counters have moved.
    api.read(&taker, "/v1/fills");
    let metrics = api.admin("GET", "/metrics", "");
    assert_eq!(metrics.status, 200, "{}", metrics.text());
    (metrics.text(), server.stderr())
}

#[test]
fn metrics_pass_promtool_check() {
    let promtool = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into());
    let missing = match Command::new(&promtool).arg("--version").output() {
        Ok(probe) if probe.status.success() => None,
        Ok(probe) => Some(format!("{promtool} --version failed: {:?}", probe.status)),
        Err(error) => Some(format!("cannot run {promtool}: {error}")),
    };
    if skip_without(
        missing,
        "PROMTOOL METRICS CHECK",
        "apt-get install prometheus",
    ) {
        return;
    }
    let (text, log) = scrape_metrics();
    for family in [
        "exchange_commands_total",
        "exchange_marketdata_subscribers",
        "exchange_feed_packets_total",
        "exchange_reporting_commit_seconds_total",
    ] {
        assert!(
            text.contains(&format!("# HELP {family} ")),
            "{family} has no HELP:\n{text}"
        );
    }
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    check
        .stdin
        .take()
        .expect("promtool stdin")
        .write_all(text.as_bytes())
        .expect("pipe /metrics to promtool");
    let verdict = check.wait_with_output().expect("promtool's verdict");
    let findings = format!(
        "{}{}",
        String::from_utf8_lossy(&verdict.stdout),
        String::from_utf8_lossy(&verdict.stderr)
    );
    assert!(
        verdict.status.success() && findings.trim().is_empty(),
        "promtool check metrics found problems:\n{findings}\n/metrics:\n{text}\nserver log:\n{log}"
    );
}

/// MoldUDP64's message count: 0 for a heartbeat.
fn message_count(packet: &[u8]) -> Option<u16> {
    let count = packet.get(18..20)?;
    Some(u16::from_be_bytes([count[0], count[1]]))
}

#[test]
fn idle_binary_feed_heartbeats_once_per_interval() {
    const HEARTBEAT_MS: u64 = 200;
    // Scheduling on a busy machine, not protocol slack: without the fix a
    // gap reaches twice the interval.
    const TOLERANCE_MS: u64 = 100;
    let _alone = heavy();
    let dir = tempfile::tempdir().expect("temp dir");
    let receiver = UdpSocket::bind("127.0.0.1:0").expect("feed receiver");
    receiver
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("receive timeout");
    let config = dir.path().join("exchange.toml");
    std::fs::write(
        &config,
        format!(
            "[marketdata]\nfeed_targets = [\"{}\"]\nheartbeat_ms = {HEARTBEAT_MS}\n",
            receiver.local_addr().expect("receiver address")
        ),
    )
    .expect("write the config");
    let server = Server::start_with(EXCHANGE, &dir.path().join("data"), Some(&config));

    let mut packet = [0u8; 2048];
    let mut arrivals = Vec::new();
    let listen = Instant::now();
    while listen.elapsed() < Duration::from_secs(5) {
        let (len, _) = receiver
            .recv_from(&mut packet)
            .unwrap_or_else(|e| panic!("no feed packet for 5 s: {e}\n{}", server.stderr()));
        assert_eq!(
            message_count(&packet[..len]),
            Some(0),
            "an idle feed sends heartbeats only"
        );
        arrivals.push(Instant::now());
    }
    let gaps: Vec<u64> = arrivals
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_millis() as u64)
        .collect();
    assert!(gaps.len() >= 10, "too few heartbeats in 5 s: {gaps:?}");
    let longest = gaps.iter().copied().max().unwrap_or(0);
    assert!(
        longest <= HEARTBEAT_MS + TOLERANCE_MS,
        "an idle feed went {longest} ms without a heartbeat \
         (heartbeat_ms = {HEARTBEAT_MS}); gaps: {gaps:?}"
    );
}
