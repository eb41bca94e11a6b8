//! A tiered venue of real processes: three replicas and two order-entry
//! gateways. Gateway 0 is killed with SIGKILL under load; its clients
//! reconnect to gateway 1 and carry on. Every order gateway 0 acknowledged
//! before it died is on every replica exactly once (those whose answer the
//! kill cut off at most once). Gateway 0, restarted under the same name,
//! opens a new session, serves again, and its mirror of the state reaches
//! the replicas'.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::{
    each_process_holds_orders_as_expected, percentile, resting_order, wait_until, Account, Client,
    Expected, OnPanic, TieredVenue, DEADLINE,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WORKERS: usize = 4;
const MAX_PLACES_PER_WORKER: usize = 400;
const ACKS_BEFORE_KILL: usize = 80;
/// Acknowledgements on gateway 1 to clients that moved from gateway 0.
const ACKS_AFTER_MOVE: usize = 60;

#[derive(Default, Debug)]
struct Report {
    acked: Vec<String>,
    /// Acknowledged by gateway 0 before it died.
    acked_by_lost_gateway: usize,
    acked_after_move: usize,
    /// Orders whose answer the kill cut off: applied at most once.
    unknown: Vec<String>,
    /// Answers other than an acknowledgement, and errors on gateway 1.
    failures: Vec<String>,
    latencies: Vec<Duration>,
}

#[derive(Default)]
struct Run {
    stop: AtomicBool,
    total: AtomicUsize,
    moved_acks: AtomicUsize,
}

/// Places resting orders with unique client order ids through gateway
/// `first`; when its connection fails (the gateway died), moves to
/// gateway 1 for good.
fn worker(gateways: &[Client], first: usize, account: &Account, name: &str, run: &Run) -> Report {
    let mut report = Report::default();
    let mut at = first;
    for n in 0..MAX_PLACES_PER_WORKER {
        if run.stop.load(Ordering::SeqCst) {
            break;
        }
        let client_order_id = format!("{name}-{n}");
        let body = resting_order(n, &client_order_id);
        let started = Instant::now();
        let answer = gateways[at].try_signed(account, "POST", "/v1/orders", &body);
        report.latencies.push(started.elapsed());
        match answer {
            Ok(response) if response.status == 201 => {
                report.acked.push(client_order_id);
                run.total.fetch_add(1, Ordering::SeqCst);
                if at != first {
                    report.acked_after_move += 1;
                    run.moved_acks.fetch_add(1, Ordering::SeqCst);
                } else if at == 0 {
                    report.acked_by_lost_gateway += 1;
                }
            }
            Ok(response) => report.failures.push(format!(
                "{client_order_id} on gateway {at}: {} {}",
                response.status,
                response.text()
            )),
            Err(_) if at == 0 => {
                report.unknown.push(client_order_id);
                at = 1;
            }
            Err(error) => report.failures.push(format!(
                "{client_order_id} on gateway {at}: connection: {error}"
            )),
        }
        if started.elapsed() > DEADLINE {
            report
                .failures
                .push(format!("{name}: an answer took over the deadline"));
            break;
        }
    }
    report
}

fn report_latency(reports: &[Report]) {
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort();
    eprintln!(
        "{} orders across the loss of a gateway: p50 {:?}, p99 {:?}, max {:?}; {} acknowledged \
         by the lost gateway, {} cut off by the kill",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
        reports
            .iter()
            .map(|r| r.acked_by_lost_gateway)
            .sum::<usize>(),
        reports.iter().map(|r| r.unknown.len()).sum::<usize>(),
    );
}

/// Restarts gateway 0 under its name: it serves again (in a new session:
/// the previous one's numbers are behind it), and its mirror reaches the
/// replicas' state, the orders of its previous incarnation included.
fn restart_and_compare(venue: &mut TieredVenue, accounts: &[Account], reports: &[Report]) {
    venue.spawn_gateway(0);
    let restarted = venue.wait_gateway(venue.gateway_ports[0]);
    for (i, account) in accounts.iter().enumerate() {
        let body = resting_order(0, &format!("w{i}-restarted"));
        let answer = restarted.signed(account, "POST", "/v1/orders", &body);
        assert_eq!(
            answer.status,
            201,
            "the restarted gateway: {}",
            answer.text()
        );
    }
    let replica = Client {
        port: venue.replica_ports()[0],
    };
    for account in accounts {
        wait_until(
            "the restarted gateway's mirror reaches the replica's state",
            || {
                let on_gateway = restarted.read(account, "/v1/orders");
                on_gateway == replica.read(account, "/v1/orders")
                    && on_gateway.to_string().contains("-restarted")
            },
        );
    }
    let mut all_ports = venue.replica_ports();
    all_ports.extend(venue.gateway_ports.iter().copied());
    each_process_holds_orders_as_expected(&all_ports, accounts, &expected(reports));
}

#[test]
fn a_lost_gateway_loses_no_acknowledged_order_and_comes_back_in_a_new_session() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut venue = TieredVenue::start(EXCHANGE, &tmp.path().join("venue"), 3, 2, 0);
    venue.wait_leader();
    let gateways: Vec<Client> = venue
        .gateway_ports
        .clone()
        .into_iter()
        .map(|port| venue.wait_gateway(port))
        .collect();
    let accounts: Vec<Account> = (0..WORKERS)
        .map(|i| gateways[i % 2].funded_account())
        .collect();
    let run = Run::default();
    let reports: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let (gateways, run) = (&gateways, &run);
                scope.spawn(move || worker(gateways, i % 2, account, &format!("w{i}"), run))
            })
            .collect();
        let _stop_workers = OnPanic(|| run.stop.store(true, Ordering::SeqCst));
        wait_until("orders acknowledged before the kill", || {
            run.total.load(Ordering::SeqCst) >= ACKS_BEFORE_KILL
        });
        venue.kill_gateway(0);
        wait_until("gateway 0's clients acknowledged on gateway 1", || {
            run.moved_acks.load(Ordering::SeqCst) >= ACKS_AFTER_MOVE
        });
        run.stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    report_latency(&reports);
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    assert!(
        failures.is_empty(),
        "answers other than acknowledgements: {failures:#?}"
    );
    for (i, report) in reports.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        assert!(
            report.acked_by_lost_gateway > 0,
            "worker {i} had nothing acknowledged"
        );
        assert!(report.acked_after_move > 0, "worker {i} did not carry on");
    }
    let replicas: Vec<u16> = venue.replica_ports();
    each_process_holds_orders_as_expected(&replicas, &accounts, &expected(&reports));

    restart_and_compare(&mut venue, &accounts, &reports);
    each_incarnation_opened_a_session_of_its_own(&mut venue);
}

/// The log of a replica (stopped, to read its journal whole) opened
/// gateway 0's session twice, under two ids, and gateway 1's once; the
/// restarted gateway's orders are in its new session.
fn each_incarnation_opened_a_session_of_its_own(venue: &mut TieredVenue) {
    let id = *venue.replicas.keys().next().expect("a replica");
    venue.kill_replica(id);
    let output = std::process::Command::new(EXCHANGE)
        .args(["log", "dump"])
        .arg(venue.dir.join(format!("replica-{id}")))
        .output()
        .expect("exchange log dump");
    assert!(output.status.success(), "log dump: {output:?}");
    let mut opened: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut restarted_in = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let entry: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let session = entry["session"].as_u64();
        match (entry["cmd"].as_str(), session) {
            (Some("open_session"), Some(session)) => {
                let gateway = entry["gateway"].as_str().unwrap_or_default().to_owned();
                opened.entry(gateway).or_default().push(session);
            }
            (Some("sequenced"), Some(session)) if line.contains("-restarted") => {
                restarted_in.push(session);
            }
            _ => {}
        }
    }
    let gw0 = opened.get("gw-0").cloned().unwrap_or_default();
    assert!(
        gw0.len() == 2 && gw0[0] != gw0[1],
        "gateway 0's two incarnations, two sessions: {opened:?}"
    );
    assert_eq!(opened.get("gw-1").map(Vec::len), Some(1), "{opened:?}");
    assert!(
        !restarted_in.is_empty() && restarted_in.iter().all(|s| *s == gw0[1]),
        "the restarted gateway's orders in its new session {}: {restarted_in:?}",
        gw0[1]
    );
}

/// Each worker's acknowledged orders, and those whose answer the kill cut
/// off.
fn expected(reports: &[Report]) -> Vec<Expected<'_>> {
    reports
        .iter()
        .map(|r| Expected {
            acked: &r.acked,
            at_most_once: &r.unknown,
            ..Expected::default()
        })
        .collect()
}
