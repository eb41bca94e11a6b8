//! A gateway that outlives its client session. Gateway 0 runs with the
//! shortest grace (2 s) and is cut off from every replica (ingress and log
//! stream) for longer, under load through both gateways: the cluster
//! expires its session and cancels the orders of the account its
//! WebSocket client protects. Once healed, the gateway sees the closure in
//! the log and opens a new session by itself, without a restart: what was
//! in flight in the old one is answered `503 session_expired` and never
//! applied (sent again with the same client order id, it is accepted);
//! its clients' connections stay up, new orders are acknowledged, and the
//! new session protects the WebSocket client's account again (killing the
//! gateway then cancels its new orders).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::ws::{authenticated, Socket};
use exchange_testkit::{
    each_process_holds_orders_as_expected, resting_order, wait_until, Account, Client, Expected,
    Link, OnPanic, TieredVenue, DEADLINE,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const GRACE_MS: &str = "2000";
const WORKERS: usize = 4;
const MAX_PLACES_PER_WORKER: usize = 400;
const ACKS_BEFORE_CUT: usize = 40;
/// Past the grace, with room for the leader's ticks: the session expires
/// while the gateway is cut off.
const CUT_FOR: Duration = Duration::from_secs(5);
const ACKS_ON_GATEWAY_0_AFTER_HEAL: usize = 40;

#[derive(Default, Debug)]
struct Report {
    acked: Vec<String>,
    /// Answered `503` (`session_expired` or `unavailable`): never applied.
    refused: Vec<String>,
    expired: usize,
    /// Answers that are neither.
    wrong: Vec<String>,
}

#[derive(Default)]
struct Run {
    stop: AtomicBool,
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
        let started = Instant::now();
        let answer = gateway.try_signed(
            account,
            "POST",
            "/v1/orders",
            &resting_order(n, &client_order_id),
        );
        match answer {
            Ok(response) if response.status == 201 => {
                report.acked.push(client_order_id);
                run.acked[gw].fetch_add(1, Ordering::SeqCst);
            }
            Ok(response) if response.status == 503 => {
                let code = response.json()["code"].as_str().map(str::to_string);
                report.expired += usize::from(code.as_deref() == Some("session_expired"));
                report.refused.push(client_order_id);
            }
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

/// Reads `socket` (answering the gateway's pings) until `stop`; gives it
/// back still open, or None if it closed before.
fn keep_reading(mut socket: Socket, stop: &AtomicBool) -> Option<Socket> {
    socket
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("read timeout");
    while !stop.load(Ordering::SeqCst) {
        match socket.read() {
            Ok(_) => {}
            Err(tungstenite::Error::Io(error))
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return None,
        }
    }
    Some(socket)
}

/// The number of `account`'s open orders on the process at `port`, if it
/// answers.
fn open_orders(port: u16, account: &Account) -> Option<usize> {
    let response = Client { port }
        .try_signed(account, "GET", "/v1/orders", "")
        .ok()?;
    if response.status != 200 {
        return None;
    }
    Some(response.json()["orders"].as_array()?.len())
}

fn place(gateway: &Client, account: &Account, n: usize, client_order_id: &str) -> u16 {
    let body = resting_order(n, client_order_id);
    gateway.signed(account, "POST", "/v1/orders", &body).status
}

/// Gateway 0's ingress links to every replica, and its log-stream links
/// when `stream`, cut (`on`) or healed.
fn cut_gateway_0(venue: &TieredVenue, stream: bool, on: bool) {
    for &id in venue.replicas.keys() {
        venue.cut_gateway(0, id, Link::Ingress, on);
        if stream {
            venue.cut_gateway(0, id, Link::Stream, on);
        }
    }
}

/// Accounts and what the test checks of them besides the workers'.
struct Probes {
    /// Its WebSocket connection to gateway 0 asked for cancel-on-disconnect.
    protected: Account,
    /// Places one order through gateway 0 while it is cut off.
    probe: Account,
    /// Whether gateway 0's log stream is cut too: it then sees its session
    /// closed only once healed, else while still cut off from the ingress.
    stream: bool,
}

/// Cuts gateway 0 off for longer than its grace while the workers run,
/// with an order placed meanwhile (which must come back
/// `session_expired`), heals, waits for gateway 0's clients to be
/// acknowledged again, and sends that order again.
fn cut_past_the_grace_and_heal(
    venue: &TieredVenue,
    gateway_0: &Client,
    probes: &Probes,
    run: &Run,
) {
    wait_until("orders acknowledged before the cut", || {
        run.acked
            .iter()
            .all(|n| n.load(Ordering::SeqCst) >= ACKS_BEFORE_CUT / 2)
    });
    let cut_at = Instant::now();
    cut_gateway_0(venue, probes.stream, true);
    let probe = std::thread::scope(|scope| {
        let probe = scope.spawn(|| {
            gateway_0
                .try_signed(
                    &probes.probe,
                    "POST",
                    "/v1/orders",
                    &resting_order(0, "probe-0"),
                )
                .map(|answer| (answer.status, answer.json()["code"].clone()))
        });
        let on_1 = run.acked[1].load(Ordering::SeqCst);
        wait_until("gateway 1's clients acknowledged during the cut", || {
            run.acked[1].load(Ordering::SeqCst) > on_1 && cut_at.elapsed() >= CUT_FOR
        });
        let at_heal = run.acked[0].load(Ordering::SeqCst);
        cut_gateway_0(venue, probes.stream, false);
        wait_until("gateway 0's clients acknowledged after the heal", || {
            run.acked[0].load(Ordering::SeqCst) >= at_heal + ACKS_ON_GATEWAY_0_AFTER_HEAL
        });
        probe.join().expect("probe")
    });
    let (status, code) = probe.expect("the probe's connection to gateway 0 stays up");
    assert_eq!(
        (status, code.as_str()),
        (503, Some("session_expired")),
        "an order sent while the gateway was cut off past its grace"
    );
    assert_eq!(
        place(gateway_0, &probes.probe, 0, "probe-0"),
        201,
        "sent again with the same client order id, it is accepted"
    );
}

/// The two tests share the machine's cores: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_gateway_cut_off_past_its_grace_opens_a_new_session_without_a_restart() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    outlive_the_session(true);
}

/// The same with the log stream up: the gateway sees the closure while
/// still cut off from the leader, answers what was in flight at once and
/// takes new orders into the new session until it reaches the leader.
#[test]
fn a_gateway_that_sees_its_session_expire_while_cut_off_renews_it() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    outlive_the_session(false);
}

fn outlive_the_session(stream: bool) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let args = ["--cancel-grace-ms", GRACE_MS];
    let mut venue =
        TieredVenue::start_proxied_with_gateway_args(EXCHANGE, &tmp.path().join("v"), 3, 2, &args);
    venue.wait_leader();
    let gateways: Vec<Client> = venue
        .gateway_ports
        .iter()
        .map(|&port| venue.wait_gateway(port))
        .collect();
    let accounts: Vec<Account> = (0..WORKERS)
        .map(|i| gateways[i % 2].funded_account())
        .collect();
    let probes = Probes {
        protected: gateways[0].funded_account(),
        probe: gateways[0].funded_account(),
        stream,
    };
    let socket = authenticated(&gateways[0], &probes.protected, true);
    for n in 0..2 {
        assert_eq!(
            place(&gateways[0], &probes.protected, n, &format!("p-{n}")),
            201
        );
    }
    let run = Run::default();
    let (reports, socket) = std::thread::scope(|scope| {
        let reading = scope.spawn(|| keep_reading(socket, &run.stop));
        let handles: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let (gateway, run) = (&gateways[i % 2], &run);
                scope.spawn(move || worker(gateway, i % 2, account, &format!("w{i}"), run))
            })
            .collect();
        let _stop_workers = OnPanic(|| run.stop.store(true, Ordering::SeqCst));
        cut_past_the_grace_and_heal(&venue, &gateways[0], &probes, &run);
        run.stop.store(true, Ordering::SeqCst);
        let reports: Vec<Report> = handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect();
        (reports, reading.join().expect("socket reader"))
    });
    // Kept open to the end: its closing would make the gateway cancel and
    // unprotect the account itself.
    let _socket = socket.expect("the WebSocket client's connection to gateway 0 stays up");
    check_orders(&venue, &accounts, &reports);
    check_protection(&mut venue, &gateways[0], &probes.protected);
}

/// Every acknowledged order is on every process once; every one answered
/// `503` on none.
fn check_orders(venue: &TieredVenue, accounts: &[Account], reports: &[Report]) {
    let wrong: Vec<&String> = reports.iter().flat_map(|r| &r.wrong).collect();
    assert!(wrong.is_empty(), "answers neither 201 nor 503: {wrong:#?}");
    let expired: usize = reports.iter().map(|r| r.expired).sum();
    let refused: usize = reports.iter().map(|r| r.refused.len()).sum();
    eprintln!("{refused} orders answered 503, {expired} of them session_expired");
    for report in reports.iter().skip(1).step_by(2) {
        assert!(
            report.refused.is_empty(),
            "gateway 1's clients must not notice gateway 0's cut: {:?}",
            report.refused
        );
    }
    let ports: Vec<u16> = venue
        .replica_ports()
        .into_iter()
        .chain(venue.gateway_ports.iter().copied())
        .collect();
    let expected: Vec<Expected> = reports
        .iter()
        .map(|r| Expected {
            acked: &r.acked,
            absent: &r.refused,
            ..Expected::default()
        })
        .collect();
    each_process_holds_orders_as_expected(&ports, accounts, &expected);
}

/// The expiry cancelled the protected account's orders; the new session
/// protects it again: once gateway 0 dies, the cluster cancels the order
/// placed after the renewal too.
fn check_protection(venue: &mut TieredVenue, gateway_0: &Client, protected: &Account) {
    for port in venue.replica_ports() {
        wait_until("the expiry cancelled the protected orders", || {
            open_orders(port, protected) == Some(0)
        });
    }
    assert_eq!(place(gateway_0, protected, 2, "p-2"), 201);
    for port in venue.replica_ports() {
        wait_until(
            "every replica holds the order placed after the renewal",
            || open_orders(port, protected) == Some(1),
        );
    }
    venue.kill_gateway(0);
    for port in venue.replica_ports() {
        wait_until("the new session's protection cancelled it", || {
            open_orders(port, protected) == Some(0)
        });
    }
}
