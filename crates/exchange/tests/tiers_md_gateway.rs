//! A tiered venue of real processes with two market-data gateways. Public
//! subscribers of BTC-USD's level2 and trades channels on both see the
//! same sequence numbers for the same events (the numbers are replicated
//! state). Market-data gateway 0 is killed with SIGKILL while trades
//! happen; its subscriber resubscribes on gateway 1 and nothing it missed
//! goes unnoticed: the level2 snapshot it gets on subscribing is the book
//! at its sequence, and the trades in the gap are at the REST recent
//! trades, each as the other subscriber saw it.
//!
//! A replica behind gateways (`[tiers] clients = false`) runs no
//! market-data service of its own unless it publishes the binary feed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use exchange_testkit::ws::{self, Socket};
use exchange_testkit::{limit, percentile, wait_until, Client, OnPanic, Server, TieredVenue};
use serde_json::{json, Value};
use tungstenite::Message;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const SYMBOL: &str = "BTC-USD";
const TRADES_BEFORE_KILL: usize = 20;
const TRADES_AFTER_RESUBSCRIBING: usize = 20;
/// Trades before subscriber 0 resubscribes, after its gateway died.
const MISSED_TRADES: usize = 5;

/// Everything a subscriber received, in order, shared with the test.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Value>>>);

impl Received {
    fn all(&self) -> Vec<Value> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    fn trades(&self) -> usize {
        self.all().iter().filter(|m| m["type"] == "trade").count()
    }
}

/// The next message, `None` once the socket closed or broke (its
/// gateway died).
fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => return serde_json::from_str(text.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// Subscribes to BTC-USD's level2 and trades on the gateway at `port`
/// and records what arrives on a thread of its own until `stop` or the
/// socket ends.
fn subscriber(port: u16, stop: Arc<AtomicBool>) -> (Received, std::thread::JoinHandle<()>) {
    let mut socket = ws::connect(&Client { port });
    for (id, channel) in [(1, "level2"), (2, "trades")] {
        ws::send(
            &mut socket,
            &json!({ "type": "subscribe", "channel": channel, "symbols": [SYMBOL],
                     "request_id": id }),
        );
    }
    let received = Received::default();
    let into = received.clone();
    let reading = std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            let Some(message) = next(&mut socket) else {
                return;
            };
            if let Ok(mut all) = into.0.lock() {
                all.push(message);
            }
        }
    });
    (received, reading)
}

/// A book by (side, price): quantity.
type Book = BTreeMap<(String, String), String>;

/// What one subscription saw: the book at each level2 sequence from its
/// snapshot on, and each trade by its sequence. Panics on a gap the
/// protocol does not announce (an update or trade out of sequence).
#[derive(Default)]
struct Seen {
    books: BTreeMap<u64, Book>,
    first_book: Option<u64>,
    trades: BTreeMap<u64, Value>,
}

fn seq(message: &Value) -> u64 {
    message["sequence"]
        .as_u64()
        .unwrap_or_else(|| panic!("a sequence in {message}"))
}

fn snapshot_book(message: &Value) -> Book {
    let mut book = Book::new();
    for (side, levels) in [("buy", "bids"), ("sell", "asks")] {
        for level in message[levels].as_array().expect("levels") {
            let key = (
                side.to_string(),
                level[0].as_str().expect("price").to_string(),
            );
            book.insert(key, level[1].as_str().expect("qty").to_string());
        }
    }
    book
}

fn follow(what: &str, messages: &[Value]) -> Seen {
    let mut seen = Seen::default();
    let mut book: Option<(u64, Book)> = None;
    for message in messages {
        match message["type"].as_str() {
            Some("snapshot") => {
                let at = seq(message);
                book = Some((at, snapshot_book(message)));
                seen.first_book.get_or_insert(at);
            }
            Some("update") => {
                let (at, levels) = book.as_mut().expect("a snapshot before updates");
                assert_eq!(
                    seq(message),
                    *at + 1,
                    "{what}: level2 update out of sequence"
                );
                *at += 1;
                for change in message["changes"].as_array().expect("changes") {
                    let field = |i: usize| change[i].as_str().expect("a change").to_string();
                    let key = (field(0), field(1));
                    match change[2].as_str() {
                        Some("0") => levels.remove(&key),
                        qty => levels.insert(key, qty.expect("qty").to_string()),
                    };
                }
            }
            Some("trade") => {
                let at = seq(message);
                if let Some((&last, _)) = seen.trades.last_key_value() {
                    assert_eq!(at, last + 1, "{what}: trade out of sequence");
                }
                seen.trades.insert(at, message.clone());
            }
            _ => continue,
        }
        if let Some((at, levels)) = &book {
            seen.books.insert(*at, levels.clone());
        }
    }
    seen
}

/// Crosses a resting sell with a buy through the gateway until `stop`:
/// one trade, two book changes each round.
/// Returns each order's latency.
fn trader(gateway: &Client, stop: &AtomicBool, trades: &AtomicUsize) -> Vec<Duration> {
    let (seller, buyer) = (gateway.funded_account(), gateway.funded_account());
    let mut latencies = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        for (account, side) in [(&seller, "sell"), (&buyer, "buy")] {
            let started = Instant::now();
            gateway.place(
                account,
                &limit(side, "60000", "0.01", &format!("{side}-{n}")),
            );
            latencies.push(started.elapsed());
        }
        trades.fetch_add(1, Ordering::SeqCst);
        n += 1;
    }
    latencies
}

#[test]
fn a_lost_market_data_gateway_leaves_no_unnoticed_gap() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut venue = TieredVenue::start(EXCHANGE, &tmp.path().join("venue"), 3, 1, 2);
    venue.wait_leader();
    let gateway = venue.wait_gateway(venue.gateway_ports[0]);
    let md_ports = venue.md_gateway_ports.clone();
    for &port in &md_ports {
        venue.wait_gateway(port);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (on_0, reading_0) = subscriber(md_ports[0], stop.clone());
    let (on_1, reading_1) = subscriber(md_ports[1], stop.clone());
    let traded = AtomicUsize::new(0);
    let started = Instant::now();
    let mut killed_after = Duration::ZERO;
    let mut latencies = Vec::new();
    let resubscribed = std::thread::scope(|scope| {
        let trading = scope.spawn(|| trader(&gateway, &stop, &traded));
        let _stop = OnPanic(|| stop.store(true, Ordering::SeqCst));
        wait_until("trades seen on both market-data gateways", || {
            on_0.trades() >= TRADES_BEFORE_KILL && on_1.trades() >= TRADES_BEFORE_KILL
        });
        venue.kill_md_gateway(0);
        killed_after = started.elapsed();
        reading_0.join().expect("subscriber 0");
        // Trades go on while nobody listens on gateway 0's behalf: the
        // resubscribed subscriber has a gap to account for.
        let at_kill = on_1.trades();
        wait_until("trades while subscriber 0 is away", || {
            on_1.trades() >= at_kill + MISSED_TRADES
        });
        let (again, reading) = subscriber(md_ports[1], stop.clone());
        wait_until("trades seen after resubscribing", || {
            again.trades() >= TRADES_AFTER_RESUBSCRIBING
        });
        stop.store(true, Ordering::SeqCst);
        latencies = trading.join().expect("trader");
        // Heartbeats end each reader's wait.
        reading.join().expect("resubscribed");
        again
    });
    reading_1.join().expect("subscriber 1");
    latencies.sort();
    eprintln!(
        "{} trades, market-data gateway 0 killed after {killed_after:?}; {} orders: p50 {:?}, \
         p99 {:?}, max {:?}",
        traded.load(Ordering::SeqCst),
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default()
    );
    check(&on_0.all(), &on_1.all(), &resubscribed.all(), md_ports[1]);
}

/// Wherever both subscriptions saw a sequence number, they saw the same
/// book or trade; and they shared some.
fn both_told_the_same(before: &Seen, other: &Seen) {
    let mut shared = 0;
    for (at, book) in &before.books {
        if let Some(same) = other.books.get(at) {
            assert_eq!(
                book, same,
                "the book at sequence {at} differs between md-gateways"
            );
            shared += 1;
        }
    }
    for (at, trade) in &before.trades {
        if let Some(same) = other.trades.get(at) {
            assert_eq!(trade, same, "trade {at} differs between md-gateways");
            shared += 1;
        }
    }
    assert!(
        shared > 0,
        "the two subscriptions shared no sequence number"
    );
}

/// The trades `missed` are among the REST recent trades on the gateway
/// at `port`, as `other` was told them.
fn recoverable_from_recent_trades(other: &Seen, missed: std::ops::Range<u64>, port: u16) {
    let recent = Client { port }.get(&format!("/v1/markets/{SYMBOL}/trades"));
    assert_eq!(recent.status, 200, "recent trades: {}", recent.text());
    let recent = recent.json();
    let listed = recent["trades"]
        .as_array()
        .or(recent.as_array())
        .cloned()
        .expect("a list of trades");
    for missed in missed {
        let told = other
            .trades
            .get(&missed)
            .unwrap_or_else(|| panic!("trade {missed} never told on md-gateway 1"));
        let same = |t: &Value| {
            ["trade_id", "price", "qty", "side"]
                .iter()
                .all(|field| t[*field] == told[*field])
        };
        assert!(
            listed.iter().any(same),
            "trade {missed} ({told}) missed and not among the recent trades"
        );
    }
}

/// Both gateways told the same events under the same numbers, and the
/// resubscribed subscriber can account for everything it missed.
fn check(before: &[Value], other: &[Value], after: &[Value], port: u16) {
    let before = follow("md-gateway 0", before);
    let other = follow("md-gateway 1", other);
    let after = follow("md-gateway 1, resubscribed", after);
    both_told_the_same(&before, &other);
    let last_book = *before.books.keys().last().expect("level2 before the kill");
    let resumed = after
        .first_book
        .expect("a level2 snapshot on resubscribing");
    assert!(
        resumed >= last_book,
        "the snapshot went back: {resumed} < {last_book}"
    );
    assert_eq!(
        after.books.get(&resumed),
        other.books.get(&resumed),
        "the snapshot on resubscribing is not the book at its sequence"
    );
    let last_trade = *before.trades.keys().last().expect("trades before the kill");
    let first_after = *after
        .trades
        .keys()
        .next()
        .expect("trades after resubscribing");
    assert!(
        first_after > last_trade + 1 && resumed > last_book,
        "trades went on before resubscribing, yet no gap: trades {last_trade} then \
         {first_after}, level2 {last_book} then {resumed}"
    );
    recoverable_from_recent_trades(&other, last_trade + 1..first_after, port);
    eprintln!(
        "level2: last {last_book} before the kill, snapshot at {resumed} after; trades: last \
         {last_trade} before, {first_after} first after ({} recovered from REST)",
        first_after.saturating_sub(last_trade + 1)
    );
}

/// Whether `server`'s `/metrics` carries the market-data service's
/// families.
fn runs_market_data(server: &Server) -> bool {
    let page = server.api.admin("GET", "/metrics", "").text();
    assert!(page.contains("exchange_commands_total"), "{page}");
    page.lines()
        .any(|line| line.starts_with("exchange_marketdata_applied_index "))
}

#[test]
fn a_replica_behind_gateways_runs_market_data_only_for_the_feed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let behind = "[tiers]\nclients = false\n";
    let feed = "[marketdata]\nretransmit_listen = \"127.0.0.1:0\"\n";
    for (name, config, expected) in [
        ("serving", "", true),
        ("behind", behind, false),
        ("behind-with-feed", &format!("{behind}{feed}"), true),
    ] {
        let path = tmp.path().join(format!("{name}.toml"));
        std::fs::write(&path, config).expect("config file");
        let server = Server::start_with(EXCHANGE, &tmp.path().join(name), Some(&path));
        assert_eq!(runs_market_data(&server), expected, "{name}");
        server.api.assert_healthy(name);
    }
}
