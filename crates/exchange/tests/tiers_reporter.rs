//! The reporting store written by a process of its own: three replicas
//! without a store (`--no-reporting`), an order-entry gateway and an
//! `exchange reporter` following the replicas' log stream. Orders that
//! cross are placed through the gateway while the reporter is killed with
//! SIGKILL and restarted; the store must end with exactly the orders and
//! trades placed, no command missing and none twice, and row for row what
//! a second reporter, never killed, writes from the same log. Run on
//! SQLite, and on PostgreSQL when `EXCHANGE_TEST_PG_URL` names a server.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use exchange_reporting::testing::fresh_postgres;
use exchange_reporting::{Dump, Store, Target};
use exchange_testkit::{limit, wait_until, Account, Client, OnPanic, TieredVenue};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Each pair is a resting sell and a buy that fills it: one trade.
const PAIRS: usize = 120;
/// Pairs placed before the reporter is killed...
const PAIRS_BEFORE_KILL: usize = 40;
/// ...and while it is down.
const PAIRS_WHILE_DOWN: usize = 30;

/// The tests share the machine's cores: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_reporter_killed_mid_load_writes_every_order_once_on_sqlite() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("temp dir");
    let venue_dir = tmp.path().join("venue");
    let stores = [
        Target::Sqlite(venue_dir.join("reporter-0").join("reporting.sqlite")),
        Target::Sqlite(venue_dir.join("reporter-1").join("reporting.sqlite")),
    ];
    killed_and_restarted(&venue_dir, [None, None], &stores);
}

#[test]
fn a_reporter_killed_mid_load_writes_every_order_once_on_postgres() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(first) = fresh_postgres("reporter_process_killed") else {
        return;
    };
    let Some(second) = fresh_postgres("reporter_process_reference") else {
        return;
    };
    let url = |target: &Target| match target {
        Target::Postgres(url) => Some(url.clone()),
        Target::Sqlite(_) => panic!("fresh_postgres gives a PostgreSQL target"),
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let urls = [url(&first), url(&second)];
    killed_and_restarted(&tmp.path().join("venue"), urls, &[first, second]);
}

/// Everything in `target`'s store, or `None` while it cannot be read yet
/// (the reporter has not created it).
fn dump(target: &Target) -> Option<Dump> {
    // A reader beside the writer: it neither creates nor migrates it.
    let mut store = Store::open_existing(target).ok()?;
    store.dump().ok()
}

/// The reporters' logs, for a failure's message.
fn reporter_logs(dir: &std::path::Path) {
    for index in 0..2 {
        let log = dir.join(format!("reporter-{index}.log"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        eprintln!("--- {}:", log.display());
        for line in tail.iter().rev() {
            eprintln!("{line}");
        }
    }
}

/// A metric of reporter at `port` (0 while it does not answer).
fn reporter_metric(port: u16, name: &str) -> u64 {
    let Ok(response) = (Client { port }).try_request("GET", "/metrics", &[], b"") else {
        return 0;
    };
    response
        .text()
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

fn ready(port: u16) -> bool {
    (Client { port })
        .try_request("GET", "/ready", &[], b"")
        .is_ok_and(|r| r.status == 200 && r.text().contains("\"ready\""))
}

/// Places `PAIRS` crossing pairs, counting them in `placed`; returns
/// the client order ids.
fn load(gateway: &Client, maker: &Account, taker: &Account, placed: &AtomicUsize) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..PAIRS {
        let (sell, buy) = (format!("s-{n}"), format!("b-{n}"));
        gateway.place(maker, &limit("sell", "60000", "0.01", &sell));
        let answer = gateway.place(taker, &limit("buy", "60000", "0.01", &buy));
        assert_eq!(answer["status"], "filled", "the buy of pair {n}: {answer}");
        ids.extend([sell, buy]);
        placed.fetch_add(1, Ordering::SeqCst);
    }
    ids
}

fn killed_and_restarted(dir: &std::path::Path, urls: [Option<String>; 2], stores: &[Target; 2]) {
    // The gateway reads history from the store the first reporter writes.
    let history = urls[0].clone().or_else(|| match &stores[0] {
        Target::Sqlite(path) => Some(format!("sqlite:{}", path.display())),
        Target::Postgres(url) => Some(url.clone()),
    });
    let mut venue = TieredVenue::start_without_replica_stores(EXCHANGE, dir, 3, 1, history);
    let _logs = OnPanic(|| reporter_logs(dir));
    venue.wait_leader();
    let gateway = venue.wait_gateway(venue.gateway_ports[0]);
    let [first_url, second_url] = urls;
    // Its state is kept every 50 commands: a restart resumes from it, and
    // the commands between it and the store's position are not written
    // again.
    let reporter = venue.add_reporter(first_url, &["--state-every", "50"]);
    let port = venue.reporter_port(reporter);
    let (maker, taker) = (gateway.funded_account(), gateway.funded_account());
    wait_until("the reporter writing", || {
        reporter_metric(port, "exchange_reporting_position") > 0
    });
    let placed = AtomicUsize::new(0);
    let ids = std::thread::scope(|scope| {
        let loader = scope.spawn(|| load(&gateway, &maker, &taker, &placed));
        wait_until("pairs placed before the kill", || {
            placed.load(Ordering::SeqCst) >= PAIRS_BEFORE_KILL
        });
        venue.kill_reporter(reporter);
        let at_kill = dump(&stores[0]).expect("the store after the kill");
        assert!(
            at_kill.orders.len() < 2 * PAIRS,
            "the reporter was killed before the load ended"
        );
        let down_from = placed.load(Ordering::SeqCst);
        wait_until("pairs placed while the reporter is down", || {
            placed.load(Ordering::SeqCst) >= down_from + PAIRS_WHILE_DOWN
        });
        venue.spawn_reporter(reporter);
        loader.join().expect("the load")
    });
    wait_until("the restarted reporter holds every order", || {
        ready(port) && dump(&stores[0]).is_some_and(|d| d.orders.len() >= 2 * PAIRS)
    });
    let killed = dump(&stores[0]).expect("the store");
    every_order_once(&killed, &ids);
    // The gateway serves the closed orders from it.
    let buys = gateway.order_counts(&taker);
    assert_eq!(buys.len(), PAIRS, "{buys:?}");
    assert!(buys.values().all(|&count| count == 1), "{buys:?}");
    same_as_a_reporter_never_killed(&mut venue, second_url, &stores[1], &killed);
}

/// Exactly the orders and trades placed, and one audit row for each
/// command from the first to the store's position.
fn every_order_once(dump: &Dump, ids: &[String]) {
    let placed: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let stored: Vec<&str> = dump
        .orders
        .iter()
        .map(|o| o.client_order_id.as_str())
        .collect();
    assert_eq!(stored.len(), ids.len(), "one row per order placed");
    assert_eq!(stored.iter().copied().collect::<BTreeSet<_>>(), placed);
    assert!(dump.orders.iter().all(|o| o.status == "filled"));
    assert_eq!(dump.trades.len(), PAIRS, "one trade per pair");
    let trade_ids: BTreeSet<u64> = dump.trades.iter().map(|t| t.trade_id).collect();
    assert_eq!(trade_ids.len(), PAIRS, "no trade twice");
    assert_eq!(dump.fills.len(), 2 * PAIRS, "two fills per trade");
    let audited: Vec<u64> = dump.audit.iter().map(|a| a.log_index).collect();
    let every: Vec<u64> = (1..=dump.position.log_index).collect();
    assert_eq!(audited, every, "each command once, none missing");
}

/// A second reporter, started after the load on an empty store, writes
/// the same rows from the log.
fn same_as_a_reporter_never_killed(
    venue: &mut TieredVenue,
    url: Option<String>,
    store: &Target,
    killed: &Dump,
) {
    let second = venue.add_reporter(url, &[]);
    let port = venue.reporter_port(second);
    // Read once ready: the reporter creates the store first.
    wait_until("the second reporter catches up", || {
        ready(port)
            && dump(store).is_some_and(|d| d.position.log_index >= killed.position.log_index)
    });
    let reference = dump(store).expect("the second store");
    assert_eq!(reference.orders, killed.orders);
    assert_eq!(reference.trades, killed.trades);
    assert_eq!(reference.fills, killed.fills);
    assert_eq!(reference.ledger, killed.ledger);
    assert_eq!(reference.balances, killed.balances);
    let upto = killed.position.log_index;
    let audit: Vec<_> = reference
        .audit
        .iter()
        .filter(|row| row.log_index <= upto)
        .cloned()
        .collect();
    assert_eq!(audit, killed.audit);
}
