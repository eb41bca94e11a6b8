//! A whole trading day on the real `exchange serve`, compressed into
//! half a minute: a `[[schedule]]` (docs/schedule.md) whose five times are
//! a few seconds apart, in UTC, every day of the week, and a short
//! `tick_ms`. Before the pre-open orders are refused (`instrument_closed`);
//! in the opening call crossing orders rest without trading; at the open
//! the call uncrosses at one price (the trades route shows it, the
//! reporting store flags those trades `open`); continuous trading matches;
//! the closing call collects and the closing auction uncrosses (`close`);
//! after the close orders are refused again.
//!
//! Nothing here asserts on time: the test reads the phase the instrument
//! is in from how an order is answered (see [`probe`]) and waits for each
//! phase with generous deadlines. Each step is a function of its own, so
//! another (a volatility auction in continuous trading, seen on the
//! WebSocket `status` channel and FIX 35=f) can be added between them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use exchange_reporting::{Store, Target, SQLITE_FILE};
use exchange_testkit::{units, Account, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");
const SYMBOL: &str = "DAY-USD";
/// Units per whole (1e-8).
const U: u64 = 100_000_000;
/// Seconds after the configuration is written at which each of the five
/// times falls: the pre-open leaves the server time to start.
const OFFSETS: [u64; 5] = [12, 20, 28, 36, 42];
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

fn config(dir: &Path, times: &[u64; 5]) -> PathBuf {
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
price_collar_pct = "10"
reference_price = "100"
maker_fee_bps = 0
taker_fee_bps = 0

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
        let config = config(dir, &times);
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
    let traded = open.len() + 1;
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
