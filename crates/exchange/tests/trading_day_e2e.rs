//! A whole trading day on the real `exchange serve`, compressed into
//! half a minute: a `[[schedule]]` (docs/schedule.md) whose five times are
//! a few seconds apart, in UTC, every day of the week, and a short
//! `tick_ms`. Before the pre-open orders are refused (`instrument_closed`);
//! in the opening call crossing orders rest without trading; at the open
//! the call uncrosses at one price (the trades route shows it, the
//! reporting store flags those trades `open`); continuous trading matches;
//! a buy far above the last price would trade outside the volatility band,
//! so the instrument enters a volatility auction instead (seen on the
//! WebSocket `status` channel and in a FIX SecurityStatus), which
//! uncrosses by itself when its time is up (`volatility`); the closing
//! call collects and the closing auction uncrosses (`close`); after the
//! close orders are refused again.
//!
//! Nothing here asserts on time: the test reads the phase the instrument
//! is in from how an order is answered (see [`probe`]) and waits for each
//! phase with generous deadlines. Each step is a function of its own.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use exchange_fix::message::Message;
use exchange_reporting::{Store, Target, SQLITE_FILE};
use exchange_testkit::fix::Client as FixClient;
use exchange_testkit::{free_port, units, ws, Account, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");
const SYMBOL: &str = "DAY-USD";
/// Units per whole (1e-8).
const U: u64 = 100_000_000;
/// Seconds after the configuration is written at which each of the five
/// times falls: the pre-open leaves the server time to start, continuous
/// trading room for a volatility auction and its extension.
const OFFSETS: [u64; 5] = [12, 20, 50, 58, 64];
/// The volatility auction's call, as configured (3 s).
const VOLATILITY_AUCTION_NS: u64 = 3_000_000_000;
/// Longest wait for one phase: past its scheduled time, however slow the
/// machine.
const PHASE_WAIT: Duration = Duration::from_secs(90);

/// Where an instrument is, as an order entry tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// `instrument_closed`.
    Closed,
    /// `immediate_in_call`: the opening or the closing call.
    Call,
    /// An immediate-or-cancel order was taken: continuous trading.
    Continuous,
    /// `cancels_only`: an auction or the post-close.
    CancelsOnly,
}

struct Day {
    server: Server,
    fix_port: u16,
    buyer: Account,
    seller: Account,
    /// The five times, seconds since the Unix epoch.
    times: [u64; 5],
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

fn hh_mm_ss(unix: u64) -> String {
    let of_day = unix % 86_400;
    format!(
        "{:02}:{:02}:{:02}",
        of_day / 3_600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// The five times from now, all on one UTC day: a schedule's times must
/// be strictly increasing within the day, so near midnight this waits
/// for the next day to begin.
fn day_times() -> [u64; 5] {
    let margin = OFFSETS[4] + 30;
    let now = unix_secs();
    let of_day = now % 86_400;
    if of_day + margin >= 86_400 {
        let wait = 86_400 - of_day + 1;
        eprintln!("waiting {wait} s for midnight UTC: a day's times cannot wrap");
        std::thread::sleep(Duration::from_secs(wait));
    }
    let now = unix_secs();
    OFFSETS.map(|offset| now + offset)
}

fn config(dir: &Path, times: &[u64; 5], fix_port: u16) -> PathBuf {
    let [pre_open, open, closing_call, close, closed] = times.map(hh_mm_ss);
    let path = dir.join("exchange.toml");
    std::fs::write(
        &path,
        format!(
            r#"
tick_ms = 200

[[instruments]]
symbol = "{SYMBOL}"
base = "DAY"
quote = "USD"
tick_size = "0.01"
lot_size = "0.01"
price_collar_pct = "20"
reference_price = "100"
maker_fee_bps = 0
taker_fee_bps = 0
static_band_pct = "5"
dynamic_band_pct = "3"
volatility_auction_ns = {VOLATILITY_AUCTION_NS}

[fix]
listen = "127.0.0.1:{fix_port}"

[[fix.sessions]]
sender_comp_id = "WATCHER"
password = "pw-WATCHER"
account = 1

[[schedule]]
name = "compressed"
symbols = ["{SYMBOL}"]
time_zone = "UTC"
trading_days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
pre_open = "{pre_open}"
open = "{open}"
closing_call = "{closing_call}"
close = "{close}"
closed = "{closed}"
"#
        ),
    )
    .expect("write the config");
    path
}

fn order(side: &str, price: &str, qty: &str, tif: &str) -> Value {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    json!({ "symbol": SYMBOL, "side": side, "type": "limit", "price": price, "qty": qty,
            "tif": tif, "client_order_id": format!("d{n}") })
}

impl Day {
    fn start(dir: &Path) -> Day {
        let times = day_times();
        let fix_port = free_port();
        let config = config(dir, &times, fix_port);
        let server = Server::start_with(EXCHANGE, &dir.join("data"), Some(&config));
        let funded = || {
            let account = server.api.create_account();
            server.api.deposit(&account, "USD", "1000000");
            server.api.deposit(&account, "DAY", "1000");
            account
        };
        let (buyer, seller) = (funded(), funded());
        Day {
            server,
            fix_port,
            buyer,
            seller,
            times,
        }
    }

    fn post(&self, account: &Account, order: &Value) -> exchange_testkit::Response {
        self.server
            .api
            .signed(account, "POST", "/v1/orders", &order.to_string())
    }

    /// The phase, from an immediate-or-cancel buy far below any ask: taken
    /// (and expired, trading nothing) in continuous trading only.
    fn probe(&self) -> Seen {
        let response = self.post(&self.buyer, &order("buy", "95", "0.01", "ioc"));
        match (response.status, response.code().as_str()) {
            (201, _) => {
                assert_eq!(filled(&response.json()), 0, "{}", response.text());
                Seen::Continuous
            }
            (_, "instrument_closed") => Seen::Closed,
            (_, "immediate_in_call") => Seen::Call,
            (_, "cancels_only") => Seen::CancelsOnly,
            _ => panic!("the probe got {}", response.text()),
        }
    }

    fn wait_for(&self, wanted: Seen, what: &str) {
        let start = Instant::now();
        loop {
            let seen = self.probe();
            if seen == wanted {
                return;
            }
            assert!(
                start.elapsed() < PHASE_WAIT,
                "{what}: still {seen:?} at {} (times {:?})",
                hh_mm_ss(unix_secs()),
                self.times.map(hh_mm_ss)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The instrument's trades, oldest first, from the public route.
    fn trades(&self) -> Vec<Value> {
        let response = self
            .server
            .api
            .get(&format!("/v1/markets/{SYMBOL}/trades?limit=1000"));
        assert_eq!(response.status, 200, "{}", response.text());
        let mut trades = response.json()["trades"]
            .as_array()
            .expect("trades")
            .clone();
        trades.sort_by_key(|t| t["trade_id"].as_u64());
        trades
    }

    /// Waits until the trades after the first `from` add up to at least
    /// `volume`; returns those trades.
    fn wait_for_volume(&self, from: usize, volume: &str, what: &str) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let trades = self.trades().split_off(from.min(self.trades().len()));
            let total: i128 = trades
                .iter()
                .map(|t| units(t["qty"].as_str().expect("qty")))
                .sum();
            if total >= units(volume) {
                return trades;
            }
            assert!(start.elapsed() < PHASE_WAIT, "{what}: trades {trades:#?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Places orders that all must rest untouched (a call phase).
    fn place_resting(&self, orders: &[(&Account, Value)]) {
        for (account, order) in orders {
            let placed = self.server.api.place(account, order);
            assert_eq!(
                (placed["status"].as_str(), filled(&placed)),
                (Some("new"), 0),
                "{placed}"
            );
        }
    }
}

fn filled(order: &Value) -> i128 {
    units(order["filled_qty"].as_str().expect("filled_qty"))
}

/// Trades of one auction: one price, and the volume expected.
fn assert_uncrossed(trades: &[Value], price: &str, volume: &str) {
    assert!(!trades.is_empty());
    for trade in trades {
        assert_eq!(
            units(trade["price"].as_str().expect("price")),
            units(price),
            "{trades:#?}"
        );
    }
    let total: i128 = trades
        .iter()
        .map(|t| units(t["qty"].as_str().expect("qty")))
        .sum();
    assert_eq!(total, units(volume), "{trades:#?}");
}

/// Before the pre-open: closed, orders refused.
fn before_pre_open(day: &Day) {
    day.wait_for(Seen::Closed, "closed before the pre-open");
    day.post(&day.buyer, &order("buy", "100", "1", "gtc"))
        .expect_error(422, "instrument_closed", "an order before the pre-open");
}

/// The opening call: crossing orders rest, nothing trades.
fn opening_call(day: &Day) {
    day.wait_for(Seen::Call, "the opening call");
    day.place_resting(&[
        (&day.buyer, order("buy", "101", "1", "gtc")),
        (&day.buyer, order("buy", "100", "1", "day")),
        (&day.seller, order("sell", "99", "1.5", "gtc")),
        (&day.seller, order("sell", "100", "0.5", "at_open")),
    ]);
    assert_eq!(day.probe(), Seen::Call, "still in the call");
    assert!(day.trades().is_empty(), "nothing trades in the call");
}

/// The open: the call uncrosses at 100 (most volume: 2), then
/// continuous trading. Returns the auction's trades.
fn opening_auction(day: &Day) -> Vec<Value> {
    let trades = day.wait_for_volume(0, "2", "the opening auction");
    assert_uncrossed(&trades, "100", "2");
    day.wait_for(Seen::Continuous, "continuous trading after the open");
    assert_eq!(day.trades().len(), trades.len(), "the probe traded nothing");
    trades
}

/// Continuous trading: a crossing order trades at once.
fn continuous_trading(day: &Day, traded: usize) -> Value {
    day.place_resting(&[(&day.seller, order("sell", "102", "0.3", "gtc"))]);
    let taken = day
        .server
        .api
        .place(&day.buyer, &order("buy", "102", "0.3", "gtc"));
    assert_eq!(taken["status"], "filled", "{taken}");
    let trades = day.wait_for_volume(traded, "0.3", "the continuous trade");
    assert_eq!(trades.len(), 1, "{trades:#?}");
    let last = trades[0].clone();
    assert_eq!(units(last["price"].as_str().expect("price")), units("102"));
    last
}

/// Reads `status` messages of the public socket until one satisfies
/// `wanted`.
fn status_until(socket: &mut ws::Socket, wanted: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < PHASE_WAIT, "no such status message");
        let message = ws::next(socket).expect("the status socket closed");
        if message["type"] == "status" && wanted(&message) {
            return message;
        }
    }
}

fn is_security_status(message: &Message, trading_status: &str) -> bool {
    message.text(35) == Some("f") && message.text(326) == Some(trading_status)
}

/// A buy far above the last trade (102) would print outside the dynamic
/// band (3%): it rests instead, and the instrument enters a volatility
/// auction, which the `status` channel and a FIX SecurityStatus show. Its
/// indicative price (110) is outside the static band around the opening
/// price (100, 5%), so the call is extended once; then it uncrosses at 110
/// by itself, with no order sent, and continuous trading resumes. Returns
/// the auction's trades.
fn volatility_interruption(day: &Day, traded: usize) -> Vec<Value> {
    let mut socket = ws::connect(&day.server.api);
    ws::send(
        &mut socket,
        &json!({"type": "subscribe", "channel": "status", "symbols": [SYMBOL]}),
    );
    let current = status_until(&mut socket, |_| true);
    assert_eq!(current["phase"], "continuous", "{current}");
    assert_eq!(current["last_auction"]["kind"], "open", "{current}");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fix_addr = std::net::SocketAddr::from(([127, 0, 0, 1], day.fix_port));
    let mut watcher = runtime.block_on(FixClient::logon(fix_addr, "WATCHER"));
    let subscribed = runtime.block_on(async {
        watcher
            .send("e", &format!("324=vol-1|55={SYMBOL}|263=1|"))
            .await;
        watcher.recv_until(|m| m.text(35) == Some("f")).await
    });
    assert_eq!(
        (subscribed.text(326), subscribed.text(625)),
        (Some("17"), Some("3")),
        "ready to trade, continuous: {subscribed:?}"
    );

    day.place_resting(&[(&day.seller, order("sell", "110", "0.5", "gtc"))]);
    let spike = day
        .server
        .api
        .place(&day.buyer, &order("buy", "110", "0.5", "gtc"));
    assert_eq!(
        (spike["status"].as_str(), filled(&spike)),
        (Some("new"), 0),
        "the spike does not print: {spike}"
    );

    let interrupted = status_until(&mut socket, |m| m["phase"] == "volatility_auction");
    let indicative = status_until(&mut socket, |m| !m["indicative"].is_null());
    assert_eq!(
        (
            units(indicative["indicative"]["price"].as_str().expect("price")),
            units(indicative["indicative"]["volume"].as_str().expect("volume")),
        ),
        (units("110"), units("0.5")),
        "{indicative}"
    );
    let fix_interrupted = runtime.block_on(watcher.recv_until(|m| is_security_status(m, "21")));
    assert_eq!(
        (fix_interrupted.text(625), fix_interrupted.text(325)),
        (Some("6"), Some("Y")),
        "intraday auction, unsolicited: {fix_interrupted:?}"
    );
    assert_eq!(day.probe(), Seen::Call, "nothing trades in the call");

    // No order is needed to end the call: the leader's idle ticks carry
    // the time, and the auction uncrosses once its (extended) call is over.
    let auction = day.wait_for_volume(traded, "0.5", "the volatility auction");
    assert_uncrossed(&auction, "110", "0.5");
    let resumed = status_until(&mut socket, |m| m["phase"] == "continuous");
    assert_eq!(resumed["last_auction"]["kind"], "volatility", "{resumed}");
    let (start, end) = (
        interrupted["ts"].as_u64().expect("ts"),
        resumed["ts"].as_u64().expect("ts"),
    );
    assert!(
        end >= start + 2 * VOLATILITY_AUCTION_NS,
        "the call ran its length twice (extended once): {interrupted} .. {resumed}"
    );
    let fix_resumed = runtime.block_on(watcher.recv_until(|m| is_security_status(m, "17")));
    assert_eq!(fix_resumed.text(625), Some("3"), "{fix_resumed:?}");
    assert_eq!(day.probe(), Seen::Continuous);
    auction
}

/// The closing call collects crossing orders without trading.
fn closing_call(day: &Day, traded: usize) {
    day.wait_for(Seen::Call, "the closing call");
    day.place_resting(&[
        (&day.buyer, order("buy", "103", "1", "at_close")),
        (&day.seller, order("sell", "101", "0.4", "gtc")),
        (&day.seller, order("sell", "102", "0.6", "gtc")),
    ]);
    assert_eq!(day.probe(), Seen::Call, "still in the call");
    assert_eq!(day.trades().len(), traded, "nothing trades in the call");
}

/// The close: the call uncrosses at one price, volume 1. Returns the
/// auction's trades.
fn closing_auction(day: &Day, traded: usize) -> Vec<Value> {
    let close = day.wait_for_volume(traded, "1", "the closing auction");
    let price = close[0]["price"].as_str().expect("price").to_string();
    assert_uncrossed(&close, &price, "1");
    assert!(
        [units("102"), units("103")].contains(&units(&price)),
        "between the best ask in and the bid: {price}"
    );
    close
}

/// After the close: orders refused again.
fn after_close(day: &Day) {
    day.wait_for(Seen::Closed, "closed after the close");
    day.post(&day.seller, &order("sell", "100", "1", "gtc"))
        .expect_error(422, "instrument_closed", "an order after the close");
}

#[test]
fn a_compressed_trading_day_runs_its_phases_and_auctions() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut day = Day::start(tmp.path());

    before_pre_open(&day);
    opening_call(&day);
    let open = opening_auction(&day);
    let continuous = continuous_trading(&day, open.len());
    let volatility = volatility_interruption(&day, open.len() + 1);
    let traded = open.len() + 1 + volatility.len();
    closing_call(&day, traded);
    let close = closing_auction(&day, traded);
    after_close(&day);

    // The reporting store flags each auction's trades with its kind.
    let last = day.server.api.metric("exchange_applied_index");
    exchange_testkit::wait_until("the store to reach the core", || {
        day.server.api.metric("exchange_reporting_position") >= last
    });
    day.server.stop_with(libc::SIGTERM);
    let data = day.server.data_dir.clone();
    let mut store = Store::open(&Target::Sqlite(data.join(SQLITE_FILE))).expect("the store");
    let stored = store.trades(Some(SYMBOL), 0, u64::MAX).expect("trades");
    let flagged = |trades: &[Value], kind: Option<&str>| -> Vec<(u64, Option<String>)> {
        trades
            .iter()
            .map(|t| {
                (
                    t["trade_id"].as_u64().expect("id"),
                    kind.map(str::to_string),
                )
            })
            .collect()
    };
    let mut expected = flagged(&open, Some("open"));
    expected.extend(flagged(std::slice::from_ref(&continuous), None));
    expected.extend(flagged(&volatility, Some("volatility")));
    expected.extend(flagged(&close, Some("close")));
    let got: Vec<(u64, Option<String>)> = stored
        .iter()
        .map(|t| (t.trade_id, t.auction.clone()))
        .collect();
    assert_eq!(got, expected);
    assert!(stored
        .iter()
        .filter(|t| t.auction.as_deref() == Some("open"))
        .all(|t| t.price == 100 * U));
}
