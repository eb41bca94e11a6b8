//! A tiered venue of real processes: three replicas, two order-entry
//! gateways and a market-data gateway. Clients place orders through the
//! gateways only; the leader is killed with SIGKILL under that load. The
//! clients' connections never see the failover as an error: each order is
//! answered once, every acknowledged order is on every live replica and
//! gateway exactly once, and the latency across the failover is reported.

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
const ACKS_AFTER_KILL: usize = 80;

#[derive(Default, Debug)]
struct Report {
    acked: Vec<String>,
    acked_after_kill: usize,
    /// Answers other than the order's acknowledgement.
    failures: Vec<String>,
    latencies: Vec<Duration>,
}

/// Places resting orders with unique client order ids through one
/// gateway, over one keep-alive connection per request as the kit's
/// client makes them, never retrying: a leader change must cost latency,
/// not an error.
fn worker(gateway: &Client, account: &Account, name: &str, run: &Run) -> Report {
    let mut report = Report::default();
    for n in 0..MAX_PLACES_PER_WORKER {
        if run.stop.load(Ordering::SeqCst) {
            break;
        }
        let client_order_id = format!("{name}-{n}");
        let body = resting_order(n, &client_order_id);
        let started = Instant::now();
        let answer = gateway.try_signed(account, "POST", "/v1/orders", &body);
        report.latencies.push(started.elapsed());
        match answer {
            Ok(response) if response.status == 201 => {
                report.acked.push(client_order_id);
                if run.killed.load(Ordering::SeqCst) {
                    report.acked_after_kill += 1;
                }
                run.total.fetch_add(1, Ordering::SeqCst);
            }
            Ok(response) => report.failures.push(format!(
                "{client_order_id}: {} {}",
                response.status,
                response.text()
            )),
            Err(error) => report
                .failures
                .push(format!("{client_order_id}: connection: {error}")),
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

#[derive(Default)]
struct Run {
    stop: AtomicBool,
    killed: AtomicBool,
    total: AtomicUsize,
}

/// The two tests share the machine's cores: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn killing_the_leader_behind_the_gateways_costs_latency_not_errors() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut venue = TieredVenue::start(EXCHANGE, &tmp.path().join("venue"), 3, 2, 1);
    kill_the_leader_under_load(&mut venue);
}

/// The same with every process in a network namespace of its own, at an
/// address of its own, as a venue's machines are; skipped (and says so)
/// where namespaces cannot be made, as without root.
#[test]
fn killing_the_leader_with_every_process_at_its_own_address() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("temp dir");
    let venue = TieredVenue::start_in_namespaces(EXCHANGE, &tmp.path().join("venue"), 3, 2, 1);
    match venue {
        Ok(mut venue) => kill_the_leader_under_load(&mut venue),
        Err(why) => eprintln!("SKIPPED: no network namespaces here ({why})"),
    }
}

fn kill_the_leader_under_load(venue: &mut TieredVenue) {
    let old_leader = venue.wait_leader();
    let gateways: Vec<Client> = venue
        .gateway_ports
        .clone()
        .into_iter()
        .map(|port| venue.wait_gateway(port))
        .collect();
    let accounts: Vec<Account> = (0..WORKERS)
        .map(|i| gateways[i % gateways.len()].funded_account())
        .collect();
    let run = Run::default();
    let reports: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let (gateway, run) = (&gateways[i % gateways.len()], &run);
                scope.spawn(move || worker(gateway, account, &format!("w{i}"), run))
            })
            .collect();
        let _stop_workers = OnPanic(|| run.stop.store(true, Ordering::SeqCst));
        wait_until("orders acknowledged before the kill", || {
            run.total.load(Ordering::SeqCst) >= ACKS_BEFORE_KILL
        });
        run.killed.store(true, Ordering::SeqCst);
        let at_kill = run.total.load(Ordering::SeqCst);
        venue.kill_replica(old_leader);
        wait_until("orders acknowledged after the kill", || {
            run.total.load(Ordering::SeqCst) >= at_kill + ACKS_AFTER_KILL
        });
        run.stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort();
    eprintln!(
        "{} orders through the gateways across the failover: p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    assert!(
        failures.is_empty(),
        "answers other than acknowledgements: {failures:#?}"
    );
    assert!(
        reports.iter().map(|r| r.acked_after_kill).sum::<usize>() > 0,
        "the load did not continue after the failover"
    );
    let ports: Vec<u16> = venue
        .replica_ports()
        .into_iter()
        .chain(venue.gateway_ports.iter().copied())
        .collect();
    let expected: Vec<Expected> = reports
        .iter()
        .map(|r| Expected {
            acked: &r.acked,
            ..Expected::default()
        })
        .collect();
    each_process_holds_orders_as_expected(&ports, &accounts, &expected);
}
