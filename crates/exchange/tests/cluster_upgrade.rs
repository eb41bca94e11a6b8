//! `exchange cluster upgrade` replaces every process of a local tiered
//! venue (three replicas, a reporter, two gateways, a market-data
//! gateway) with
//! another binary while clients place orders through the gateways. The
//! replicas' turns cost the clients nothing but latency; during a
//! gateway's turn its clients find it gone before they send anything
//! (the connection is refused) and move to the other gateway. Every
//! acknowledged order is on every process exactly once, the upgrade ends
//! with one verdict, and every process then runs the new binary.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::load::{place_until_done, History};
use exchange_testkit::{
    each_process_holds_orders_as_expected, leader_port, percentile, resting_order, run_within,
    Account, CliCluster, Client, Expected,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WORKERS: usize = 4;

fn pid_exe(pid: i32) -> std::path::PathBuf {
    std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default()
}

/// Runs the upgrade to `next` while the workers place orders; their
/// reports and the upgrade's output.
fn upgrade_under_load(
    cluster: &CliCluster,
    accounts: &[Account],
    next: &std::path::Path,
) -> (std::process::Output, Vec<History>) {
    let gateways = [1, 2].map(|k| Client {
        port: cluster.gateway_port(k),
    });
    let done = AtomicBool::new(false);
    let dir_arg = cluster.dir.display().to_string();
    let next_arg = next.display().to_string();
    std::thread::scope(|scope| {
        let workers: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let (gateways, done) = (&gateways, &done);
                scope.spawn(move || {
                    place_until_done(
                        gateways,
                        i % 2,
                        account,
                        &format!("w{i}"),
                        (done, Duration::ZERO),
                    )
                })
            })
            .collect();
        // Some load before the first turn, some after the last.
        std::thread::sleep(Duration::from_secs(1));
        let upgrade = run_within(
            EXCHANGE,
            &[
                "cluster",
                "upgrade",
                "--data-dir",
                &dir_arg,
                "--binary",
                &next_arg,
                "--healthy-for-ms",
                "1500",
            ],
            Duration::from_secs(600),
        );
        std::thread::sleep(Duration::from_secs(1));
        done.store(true, Ordering::SeqCst);
        let reports = workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect();
        (upgrade, reports)
    })
}

#[test]
fn a_rolling_upgrade_under_load_loses_no_order_and_drops_no_client() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = CliCluster::up_tiered(EXCHANGE, &tmp.path().join("venue"), 3, (2, 1, 1), None);
    // The "new version": another file, so that each process shows which
    // binary it runs.
    let next = tmp.path().join("exchange-next");
    std::fs::copy(EXCHANGE, &next).expect("copy the binary");
    let accounts: Vec<Account> = (0..WORKERS)
        .map(|i| {
            Client {
                port: cluster.gateway_port(1 + u16::try_from(i % 2).expect("0 or 1")),
            }
            .funded_account()
        })
        .collect();
    let started = Instant::now();
    let (upgrade, reports) = upgrade_under_load(&cluster, &accounts, &next);
    let out = String::from_utf8_lossy(&upgrade.stdout).into_owned();
    let err = String::from_utf8_lossy(&upgrade.stderr).into_owned();
    assert!(upgrade.status.success(), "upgrade failed:\n{out}\n{err}");
    let verdict = out
        .lines()
        .find(|l| l.starts_with("upgrade done: 7 processes"))
        .unwrap_or_else(|| panic!("no verdict:\n{out}\n{err}"));

    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.errors).collect();
    assert!(failures.is_empty(), "clients saw errors: {failures:?}");
    let acked: usize = reports.iter().map(|r| r.acked.len()).sum();
    let moves: usize = reports.iter().map(|r| r.moves).sum();
    assert!(acked > 50, "too little load to tell: {acked} acknowledged");
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort_unstable();

    let expected: Vec<Expected<'_>> = reports
        .iter()
        .map(|r| Expected {
            acked: &r.acked,
            absent: &r.absent,
            at_most_once: &r.unknown,
        })
        .collect();
    let mut ports = cluster.ports.clone();
    ports.extend([cluster.gateway_port(1), cluster.gateway_port(2)]);
    each_process_holds_orders_as_expected(&ports, &accounts, &expected);
    every_process_runs(&cluster, &next);
    eprintln!(
        "{verdict}\n{acked} orders acknowledged, 0 lost, {moves} moves between gateways, \
         0 connections dropped, in {:.1} s; latency p50 {:?} p99 {:?} max {:?}",
        started.elapsed().as_secs_f64(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
    );
}

fn every_process_runs(cluster: &CliCluster, binary: &std::path::Path) {
    let mut pids: Vec<i32> = (1..=3).filter_map(|n| cluster.pid(n)).collect();
    pids.extend(cluster.gateway_pids());
    assert_eq!(pids.len(), 7, "a pid file per process");
    for pid in pids {
        assert_eq!(pid_exe(pid), binary, "pid {pid} runs the new binary");
    }
}

/// Writes an executable shell script at `path`.
fn script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("write a script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn an_upgrade_stops_with_its_reason_and_leaves_a_majority() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let cluster = CliCluster::up_tiered(EXCHANGE, &dir, 3, (1, 0, 0), None);
    let dir_arg = dir.display().to_string();
    let upgrade = |binary: &std::path::Path| {
        run_within(
            EXCHANGE,
            &[
                "cluster",
                "upgrade",
                "--data-dir",
                &dir_arg,
                "--binary",
                &binary.display().to_string(),
                "--healthy-for-ms",
                "500",
            ],
            Duration::from_secs(300),
        )
    };

    // A binary of other formats is refused before anything is touched.
    let other_formats = tmp.path().join("other-formats");
    script(
        &other_formats,
        r#"echo '{"version":"9.0.0","formats":{"journal":"EXJRNL02"}}'"#,
    );
    let refused = upgrade(&other_formats);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "a mixed-format upgrade went on");
    assert!(
        said.contains("not started") && said.contains("EXJRNL02"),
        "{said}"
    );

    // A binary that reads the same formats but cannot serve: the first
    // turn fails, the verdict names it, and the other two nodes lead on.
    let broken = tmp.path().join("broken");
    script(
        &broken,
        &format!("[ \"$1\" = version ] && exec {EXCHANGE} \"$@\"\necho broken >&2\nexit 3"),
    );
    let leader_before = leader_port(&cluster.ports);
    let stopped = upgrade(&broken);
    let out = String::from_utf8_lossy(&stopped.stdout);
    assert!(
        !stopped.status.success(),
        "a failed upgrade said it succeeded"
    );
    let verdict = out
        .lines()
        .find(|l| l.starts_with("upgrade stopped at node "))
        .unwrap_or_else(|| panic!("no verdict: {out}"));
    assert!(verdict.contains("exited during start-up"), "{verdict}");
    assert!(verdict.contains("(0 of 4 replaced"), "{verdict}");
    let gateway = Client {
        port: cluster.gateway_port(1),
    };
    let account = gateway.funded_account();
    let placed = gateway.signed(&account, "POST", "/v1/orders", &resting_order(1, "after"));
    assert_eq!(placed.status, 201, "{}", placed.text());
    assert_eq!(
        leader_port(&cluster.ports),
        leader_before,
        "a follower's turn moved the leader"
    );
    eprintln!("{verdict}");
}
