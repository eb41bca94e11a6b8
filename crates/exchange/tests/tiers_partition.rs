//! A tiered venue of real processes whose gateways reach the replicas
//! through fault-injecting proxies. Under load through both gateways,
//! gateway 0's ingress link to the leader is cut while its other links
//! stay up: the other replicas still answer it, naming the leader it
//! cannot reach, so it keeps looking (pausing between rounds) and takes
//! its clients' orders into flight. Its clients see latency; gateway 1's
//! see nothing. Once healed, everything in flight is applied exactly once
//! and gateway 0's clients are acknowledged again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::{
    each_process_holds_orders_as_expected, percentile, resting_order, wait_until, Account, Client,
    Expected, Link, OnPanic, TieredVenue, DEADLINE,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WORKERS: usize = 4;
const MAX_PLACES_PER_WORKER: usize = 400;
const ACKS_BEFORE_CUT: usize = 60;
/// Gateway 1's clients go on while gateway 0 is cut off...
const ACKS_ON_GATEWAY_1_DURING_CUT: usize = 60;
/// ...for at least this long, past the forwarder's own timers.
const CUT_FOR: Duration = Duration::from_secs(3);
const ACKS_ON_GATEWAY_0_AFTER_HEAL: usize = 40;

#[derive(Default, Debug)]
struct Report {
    acked: Vec<String>,
    acked_after_heal: usize,
    /// Orders answered `503`: never applied, by the venue's contract.
    unavailable: Vec<String>,
    /// Answers that are neither an acknowledgement nor a `503`.
    wrong: Vec<String>,
    latencies: Vec<Duration>,
}

#[derive(Default)]
struct Run {
    stop: AtomicBool,
    healed: AtomicBool,
    /// Acknowledgements, by gateway.
    acked: [AtomicUsize; 2],
}

/// Places resting orders with unique client order ids through gateway
/// `gw`, never retrying.
fn worker(gateway: &Client, gw: usize, account: &Account, name: &str, run: &Run) -> Report {
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
                if run.healed.load(Ordering::SeqCst) {
                    report.acked_after_heal += 1;
                }
                run.acked[gw].fetch_add(1, Ordering::SeqCst);
            }
            Ok(response) if response.status == 503 => report.unavailable.push(client_order_id),
            Ok(response) => report.wrong.push(format!(
                "{client_order_id}: {} {}",
                response.status,
                response.text()
            )),
            Err(error) => report
                .wrong
                .push(format!("{client_order_id}: connection: {error}")),
        }
        if started.elapsed() > DEADLINE {
            report
                .wrong
                .push(format!("{name}: an answer took over the deadline"));
            break;
        }
    }
    report
}

fn report_latency(what: &str, reports: &[&Report]) {
    let mut latencies: Vec<Duration> = reports.iter().flat_map(|r| r.latencies.clone()).collect();
    latencies.sort();
    eprintln!(
        "{} orders {what}: p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
}

/// The links of gateway 0 a test cuts: its ingress link to the leader,
/// and, when `stream`, its log-stream link to the replica it follows.
fn links_to_cut(venue: &TieredVenue, leader: u64, stream: bool) -> Vec<(u64, Link)> {
    let mut links = vec![(leader, Link::Ingress)];
    if stream {
        let followed = venue
            .replicas
            .keys()
            .copied()
            .find(|&id| venue.gateway_proxy(0, id, Link::Stream).connections() > 0)
            .expect("gateway 0 follows a replica's log");
        links.push((followed, Link::Stream));
    }
    links
}

/// Cuts gateway 0 from the leader's ingress (and from the log it follows
/// when `stream`) while the workers run, holds the cut until gateway 1
/// made progress, heals it, and waits for gateway 0's clients to be
/// acknowledged again.
fn cut_and_heal(venue: &TieredVenue, leader: u64, stream: bool, run: &Run) {
    wait_until("orders acknowledged before the cut", || {
        run.acked
            .iter()
            .all(|n| n.load(Ordering::SeqCst) >= ACKS_BEFORE_CUT / 2)
    });
    let links = links_to_cut(venue, leader, stream);
    let ingress = venue.gateway_proxy(0, leader, Link::Ingress);
    let attempts_before = ingress.connections();
    let on_1 = run.acked[1].load(Ordering::SeqCst);
    let on_0 = run.acked[0].load(Ordering::SeqCst);
    let cut_at = Instant::now();
    for &(id, link) in &links {
        venue.cut_gateway(0, id, link, true);
    }
    wait_until("gateway 1's clients acknowledged during the cut", || {
        run.acked[1].load(Ordering::SeqCst) >= on_1 + ACKS_ON_GATEWAY_1_DURING_CUT
            && cut_at.elapsed() >= CUT_FOR
    });
    let cut_for = cut_at.elapsed();
    let attempts = ingress.connections() - attempts_before;
    eprintln!(
        "cut {links:?} for {cut_for:?}: gateway 0 tried the leader {attempts} times; \
         acknowledged meanwhile: {} on gateway 0, {} on gateway 1",
        run.acked[0].load(Ordering::SeqCst) - on_0,
        run.acked[1].load(Ordering::SeqCst) - on_1,
    );
    run.healed.store(true, Ordering::SeqCst);
    let at_heal = run.acked[0].load(Ordering::SeqCst);
    for &(id, link) in &links {
        venue.cut_gateway(0, id, link, false);
    }
    wait_until("gateway 0's clients acknowledged after the heal", || {
        run.acked[0].load(Ordering::SeqCst) >= at_heal + ACKS_ON_GATEWAY_0_AFTER_HEAL
    });
}

/// The two tests share the machine's cores: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_gateway_cut_off_from_the_leader_delays_its_clients_and_loses_nothing() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    cut_off_under_load(false);
}

/// The same with the gateway's log stream cut too (from the replica it
/// follows): it follows another replica's log meanwhile.
#[test]
fn a_gateway_cut_off_from_the_leaders_ingress_and_log_stream_loses_nothing() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    cut_off_under_load(true);
}

fn cut_off_under_load(stream: bool) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let venue = TieredVenue::start_proxied(EXCHANGE, &tmp.path().join("venue"), 3, 2, 0);
    let leader = venue.wait_leader();
    let gateways: Vec<Client> = venue
        .gateway_ports
        .iter()
        .map(|&port| venue.wait_gateway(port))
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
                let (gateway, run) = (&gateways[i % 2], &run);
                scope.spawn(move || worker(gateway, i % 2, account, &format!("w{i}"), run))
            })
            .collect();
        let _stop_workers = OnPanic(|| run.stop.store(true, Ordering::SeqCst));
        cut_and_heal(&venue, leader, stream, &run);
        run.stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    let of_gateway = |gw: usize| -> Vec<&Report> { reports.iter().skip(gw).step_by(2).collect() };
    report_latency("through gateway 0 (cut off, then healed)", &of_gateway(0));
    report_latency("through gateway 1", &of_gateway(1));
    let wrong: Vec<&String> = reports.iter().flat_map(|r| &r.wrong).collect();
    assert!(wrong.is_empty(), "answers neither 201 nor 503: {wrong:#?}");
    for report in of_gateway(1) {
        assert!(
            report.unavailable.is_empty(),
            "gateway 1's clients must not notice gateway 0's cut: {:?}",
            report.unavailable
        );
    }
    assert!(
        of_gateway(0)
            .iter()
            .map(|r| r.acked_after_heal)
            .sum::<usize>()
            > 0,
        "gateway 0's clients were not acknowledged after the heal"
    );
    let unavailable: usize = reports.iter().map(|r| r.unavailable.len()).sum();
    eprintln!("{unavailable} orders answered 503");
    let ports: Vec<u16> = venue
        .replica_ports()
        .into_iter()
        .chain(venue.gateway_ports.iter().copied())
        .collect();
    let expected: Vec<Expected> = reports
        .iter()
        .map(|r| Expected {
            acked: &r.acked,
            absent: &r.unavailable,
            ..Expected::default()
        })
        .collect();
    each_process_holds_orders_as_expected(&ports, &accounts, &expected);
}
