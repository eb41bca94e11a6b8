//! The store's tests, each run on SQLite and on PostgreSQL (see
//! [`crate::testing`]). Entries come from the real engine applying a
//! pseudo-random workload, so every event kind the core emits is covered.

use exchange_core::Engine;
use exchange_types::event;
use exchange_types::{Command, Event, EventKind};

use crate::ledger_tests::balance_changes;
use crate::report::{self, Format};
use crate::testing::fresh_postgres;
use crate::{EntryRecord, OrderFilter, Position, Store, StoreError, Target};

pub(crate) const DAY: u64 = 86_400_000_000_000;
/// 2026-11-28T00:00:00Z
pub(crate) const START: u64 = 1_795_824_000_000_000_000;

/// Runs `test` against a fresh SQLite file and a fresh PostgreSQL schema.
pub(crate) fn on_both(name: &str, test: impl Fn(&Target)) {
    let dir = tempfile::tempdir().expect("temp dir");
    test(&Target::Sqlite(dir.path().join("store.sqlite")));
    if let Some(target) = fresh_postgres(name) {
        test(&target);
    }
}

pub(crate) struct Entry {
    pub index: u64,
    pub ts: u64,
    pub command: &'static str,
    pub account: Option<u64>,
    pub events: Vec<Event>,
}

impl Entry {
    pub(crate) fn record(&self) -> EntryRecord<'_> {
        EntryRecord {
            index: self.index,
            ts: self.ts,
            command: self.command,
            account: self.account,
            events: &self.events,
        }
    }
}

/// A small deterministic generator (no dependency, same sequence on
/// every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

pub(crate) fn command_account(command: &Command) -> Option<u64> {
    match command {
        Command::Deposit(t) | Command::Withdraw(t) => Some(t.account),
        Command::Place(p) => Some(p.account),
        Command::Cancel(c) => Some(c.account),
        Command::Replace(r) => Some(r.account),
        Command::ReplaceStop(r) => Some(r.replace.account),
        Command::MassCancel(m) => Some(m.account),
        _ => None,
    }
}

/// Applies `lines` (replay format, without `ts`) one per entry, spread
/// over two days, and returns the entries with their events.
pub(crate) fn workload(commands: usize) -> (Vec<Entry>, Engine) {
    let mut lines = vec![
        concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5,"#,
            r#""hidden_min_notional":"1"}"#,
        )
        .to_string(),
        concat!(
            r#"{"cmd":"add_instrument","symbol":"ETH-USD","base":"ETH","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.001","maker_fee_bps":0,"taker_fee_bps":10,"#,
            r#""hidden_min_notional":"1"}"#,
        )
        .to_string(),
    ];
    for account in 1..=4 {
        for (asset, amount) in [("USD", "1000000"), ("BTC", "100"), ("ETH", "1000")] {
            lines.push(format!(
                r#"{{"cmd":"deposit","account":{account},"asset":"{asset}","amount":"{amount}"}}"#
            ));
        }
    }
    let mut rng = Lcg(42);
    for n in 0..commands {
        lines.push(random_line(&mut rng, n));
    }
    let mut engine = Engine::new();
    let step = 2 * DAY / lines.len() as u64;
    let entries = apply_lines(&mut engine, &lines, step);
    (entries, engine)
}

/// One random order-flow command: mostly places (some off-tick, some
/// market, some hidden or with a minimum quantity), with cancels and
/// replaces of recent orders.
fn random_line(rng: &mut Lcg, n: usize) -> String {
    let account = 1 + rng.next(4);
    let symbol = if rng.next(3) == 0 {
        "ETH-USD"
    } else {
        "BTC-USD"
    };
    let side = if rng.next(2) == 0 { "buy" } else { "sell" };
    match rng.next(10) {
        0 => format!(
            r#"{{"cmd":"cancel","account":{account},"client_order_id":"c{}"}}"#,
            n.saturating_sub(1 + rng.next(20) as usize)
        ),
        1 => format!(
            concat!(
                r#"{{"cmd":"replace","account":{account},"client_order_id":"c{}","#,
                r#""new_client_order_id":"r{n}","price":"{}.00","qty":"0.5"}}"#,
            ),
            n.saturating_sub(1 + rng.next(10) as usize),
            95 + rng.next(10),
            account = account,
            n = n,
        ),
        // Off-tick: rejected.
        2 => format!(
            concat!(
                r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                r#""symbol":"{symbol}","side":"{side}","price":"100.001","qty":"1"}}"#,
            ),
            account = account,
            n = n,
            symbol = symbol,
            side = side,
        ),
        3 => format!(
            concat!(
                r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                r#""symbol":"{symbol}","side":"{side}","type":"market","qty":"0.3"}}"#,
            ),
            account = account,
            n = n,
            symbol = symbol,
            side = side,
        ),
        _ => limit_line(rng, n, account, symbol, side),
    }
}

/// A limit order. Every 11th resting one is hidden and every 29th has a
/// minimum quantity (from `n`, not the generator, whose sequence stays
/// that of the workload without them).
fn limit_line(rng: &mut Lcg, n: usize, account: u64, symbol: &str, side: &str) -> String {
    let (whole, cents) = (95 + rng.next(10), rng.next(100));
    let (qty, tenths) = (rng.next(3), 1 + rng.next(9));
    let tif = if rng.next(5) == 0 { "ioc" } else { "gtc" };
    let mut extra = String::new();
    if n % 11 == 3 && tif == "gtc" {
        extra.push_str(r#","hidden":true"#);
    }
    if n % 29 == 5 {
        extra.push_str(r#","min_qty":"0.1""#);
    }
    format!(
        concat!(
            r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
            r#""symbol":"{symbol}","side":"{side}","price":"{whole}.{cents:02}","#,
            r#""qty":"{qty}.{tenths}","tif":"{tif}"{extra}}}"#,
        ),
        account = account,
        n = n,
        symbol = symbol,
        side = side,
        whole = whole,
        cents = cents,
        qty = qty,
        tenths = tenths,
        tif = tif,
        extra = extra,
    )
}

/// One entry per command line, applied by `engine` in order; the `i`-th
/// is stamped `START + i * step`.
pub(crate) fn apply_lines(engine: &mut Engine, lines: &[impl AsRef<str>], step: u64) -> Vec<Entry> {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut stamped = exchange_codec::decode_command(line.as_ref()).expect("valid command");
            stamped.ts = START + i as u64 * step;
            let mut events = Vec::new();
            engine.apply(&stamped, &mut events);
            Entry {
                index: i as u64 + 1,
                ts: stamped.ts,
                command: stamped.command.name(),
                account: command_account(&stamped.command),
                events,
            }
        })
        .collect()
}

pub(crate) fn write_in_batches(store: &mut Store, entries: &[Entry], batch: usize) -> Position {
    let mut position = store.position();
    for chunk in entries.chunks(batch) {
        let records: Vec<EntryRecord<'_>> = chunk.iter().map(Entry::record).collect();
        position = store.write(&records).expect("write");
    }
    position
}

fn contents(store: &mut Store) -> crate::Dump {
    store.dump().expect("dump")
}

fn count(entries: &[Entry], kind: &str) -> usize {
    entries
        .iter()
        .flat_map(|e| &e.events)
        .filter(|e| e.kind.name() == kind)
        .count()
}

/// The ledger lists changes of a total, and nothing else: holds (most
/// balance events of a flow of orders) are left out.
fn assert_ledger_lists_changes_only(entries: &[Entry], all: &crate::Dump) {
    let changes = balance_changes(entries);
    let moved: Vec<(u64, i64)> = changes
        .iter()
        .filter(|c| c.delta != 0)
        .map(|c| (c.event.seq, c.delta))
        .collect();
    let holds = changes.len() - moved.len();
    assert!(holds > 100, "the workload holds ({holds})");
    let stored: Vec<(u64, i64)> = all.ledger.iter().map(|l| (l.seq, l.delta)).collect();
    assert_eq!(stored, moved);
}

fn assert_open_orders_agree(engine: &Engine, all: &crate::Dump) {
    let open: Vec<(u64, u64, u64)> = all
        .orders
        .iter()
        .filter(|o| o.status == "new" || o.status == "partially_filled")
        .map(|o| (o.order_id, o.qty, o.filled_qty))
        .collect();
    let mut live: Vec<(u64, u64, u64)> = engine
        .open_orders()
        .iter()
        .map(|o| (o.order_id, o.qty, o.filled_qty))
        .collect();
    live.sort_unstable();
    assert!(!live.is_empty());
    assert_eq!(open, live, "open orders agree with the engine");
}

/// The ledger ends at the engine's totals and `balances` holds the
/// engine's balances.
fn assert_balances_agree(engine: &Engine, all: &crate::Dump) {
    for account in 1..=4u64 {
        for asset in ["USD", "BTC", "ETH"] {
            let last = all
                .ledger
                .iter()
                .rev()
                .find(|l| l.account == account && l.asset == asset)
                .expect("a ledger row");
            let code = exchange_types::AssetCode::new(asset).expect("asset");
            let (total, available) = engine.balance(account, &code).expect("a balance");
            assert_eq!(last.total, total);
            let current = all
                .balances
                .iter()
                .find(|b| b.account == account && b.asset == asset)
                .expect("a balances row");
            assert_eq!((current.total, current.available), (total, available));
            let deltas: i64 = all
                .ledger
                .iter()
                .filter(|l| l.account == account && l.asset == asset)
                .map(|l| l.delta)
                .sum();
            assert_eq!(deltas, last.total as i64, "deltas add up to the balance");
        }
    }
}

#[test]
fn every_event_is_stored_once() {
    on_both("every_event_is_stored_once", |target| {
        let (entries, engine) = workload(600);
        let mut store = Store::open(target).expect("open");
        let position = write_in_batches(&mut store, &entries, 37);
        let last_seq = entries.iter().flat_map(|e| &e.events).map(|e| e.seq).max();
        assert_eq!(position.log_index, entries.len() as u64);
        assert_eq!(Some(position.event_seq), last_seq);

        let all = contents(&mut store);
        let trades = count(&entries, "trade");
        assert!(trades > 50, "the workload trades ({trades})");
        assert!(count(&entries, "rejected") > 10);
        assert_eq!(all.trades.len(), trades);
        assert_eq!(all.fills.len(), 2 * trades);
        assert_ledger_lists_changes_only(&entries, &all);
        assert!(all.ledger.iter().all(|l| l.cause != "cancel"));
        assert_eq!(all.orders.len(), count(&entries, "accepted"));
        let indices: Vec<u64> = all.audit.iter().map(|a| a.log_index).collect();
        assert_eq!(indices, (1..=entries.len() as u64).collect::<Vec<_>>());
        let rejected = all.audit.iter().filter(|a| a.outcome == "rejected").count();
        assert_eq!(rejected, count(&entries, "rejected"));
        assert!(all
            .audit
            .iter()
            .any(|a| a.reason.as_deref() == Some("price_not_on_tick") && a.reason_code.is_some()));

        // Open orders agree with the engine, the ledger ends at the
        // engine's totals and `balances` holds the engine's balances.
        assert_open_orders_agree(&engine, &all);
        assert_balances_agree(&engine, &all);
        crate::order_types_tests::assert_hidden_and_min_qty_kept(&entries, &all);
    });
}

#[test]
fn a_failure_mid_batch_leaves_nothing_and_resuming_is_exact() {
    on_both("a_failure_mid_batch_leaves_nothing", |target| {
        let (entries, _) = workload(300);
        let reference = {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut store =
                Store::open(&Target::Sqlite(dir.path().join("r.sqlite"))).expect("open");
            write_in_batches(&mut store, &entries, 1_000);
            contents(&mut store)
        };
        let mut store = Store::open(target).expect("open");
        let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
        store.write(&records[..100]).expect("first batch");
        for cut in [1, 7, 50, 333] {
            store.fail_after_rows(cut);
            let failed = store.write(&records[100..250]);
            assert!(
                matches!(failed, Err(StoreError::Failpoint(_))),
                "{failed:?}"
            );
            assert_eq!(store.position().log_index, 100);
            // What a restarted process sees: only the committed batch.
            let mut reopened = Store::open(target).expect("reopen");
            assert_eq!(reopened.position().log_index, 100);
            assert_eq!(reopened.audit(0, u64::MAX).expect("audit").len(), 100);
        }
        let mut reopened = Store::open(target).expect("reopen");
        // Resume from the position with overlapping input, as a reporter
        // catching up from the journal does.
        write_in_batches(&mut reopened, &entries[50..], 64);
        assert_eq!(contents(&mut reopened), reference);
    });
}

#[test]
fn entries_already_in_are_skipped_and_gaps_refused() {
    on_both("entries_already_in_are_skipped", |target| {
        let (entries, _) = workload(80);
        let mut store = Store::open(target).expect("open");
        let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
        store.write(&records[..40]).expect("write");
        let before = contents(&mut store);
        assert_eq!(
            store.write(&records[10..40]).expect("no-op"),
            before.position
        );
        assert_eq!(contents(&mut store), before);
        let gap = store.write(&records[45..50]);
        assert!(
            matches!(
                gap,
                Err(StoreError::Gap {
                    position: 40,
                    got: 46
                })
            ),
            "{gap:?}"
        );
        assert_eq!(contents(&mut store), before);
    });
}

#[test]
fn candles_and_daily_summaries_add_up() {
    on_both("candles_and_daily_summaries", |target| {
        let (entries, _) = workload(500);
        let mut store = Store::open(target).expect("open");
        write_in_batches(&mut store, &entries, 100);
        assert_hourly_candles(&mut store);
        assert_daily_summaries(&mut store);
        // REST reads: newest first, filtered.
        assert_rest_reads(&mut store);
    });
}

/// The newest ten hourly candles of a window, each adding up the trades
/// inside it.
fn assert_hourly_candles(store: &mut Store) {
    let trades = store.trades(Some("BTC-USD"), 0, u64::MAX).expect("trades");
    let hour = 3_600_000_000_000u64;
    let candles = store
        .candles("BTC-USD", hour, START + 3 * hour, START + 30 * hour, 10)
        .expect("candles");
    assert_eq!(candles.len(), 10, "newest ten of the hours that traded");
    assert!(
        candles.windows(2).all(|w| w[0].start > w[1].start),
        "newest first"
    );
    for candle in &candles {
        let inside: Vec<_> = trades
            .iter()
            .filter(|t| t.ts / hour * hour == candle.start)
            .collect();
        assert!(candle.start >= START + 3 * hour && candle.start < START + 30 * hour);
        assert_eq!(candle.trades, inside.len() as u64);
        assert_eq!(candle.open, inside[0].price);
        assert_eq!(candle.close, inside[inside.len() - 1].price);
        assert_eq!(
            candle.high,
            inside.iter().map(|t| t.price).max().unwrap_or(0)
        );
        assert_eq!(
            candle.low,
            inside.iter().map(|t| t.price).min().unwrap_or(0)
        );
        assert_eq!(candle.volume, inside.iter().map(|t| t.qty).sum::<u64>());
    }
}

/// Per-instrument and per-account days add up to the trades and fills.
fn assert_daily_summaries(store: &mut Store) {
    let days = store.instrument_days(0, u64::MAX).expect("days");
    let all_trades = store.trades(None, 0, u64::MAX).expect("trades");
    assert_eq!(
        days.iter().map(|d| d.trades).sum::<u64>(),
        all_trades.len() as u64
    );
    assert_eq!(
        days.iter().map(|d| d.notional).sum::<u64>(),
        all_trades.iter().map(|t| t.notional).sum::<u64>()
    );
    assert!(days.iter().any(|d| d.day == START) && days.iter().any(|d| d.day == START + DAY));
    // One day only.
    let first = store.instrument_days(START, START + DAY).expect("days");
    assert!(first.iter().all(|d| d.day == START) && !first.is_empty());

    let accounts = store.account_days(None, 0, u64::MAX).expect("accounts");
    let fills = store.fills(None, 0, u64::MAX).expect("fills");
    assert_eq!(
        accounts.iter().map(|a| a.fills).sum::<u64>(),
        fills.len() as u64
    );
    assert_eq!(
        accounts.iter().map(|a| a.fees).sum::<i64>(),
        fills.iter().map(|f| f.fee).sum::<i64>()
    );
    let two = store.account_days(Some(2), 0, u64::MAX).expect("account 2");
    assert!(!two.is_empty() && two.iter().all(|a| a.account == 2));
}

fn assert_rest_reads(store: &mut Store) {
    let recent = store.recent_fills(3, Some("ETH-USD"), 5).expect("fills");
    assert!(
        recent.len() <= 5
            && recent
                .iter()
                .all(|f| f.account == 3 && f.symbol == "ETH-USD")
    );
    assert!(recent.windows(2).all(|w| w[0].trade_id >= w[1].trade_id));
    let closed = store
        .orders(1, OrderFilter::Closed, None, 1_000)
        .expect("closed");
    assert!(closed
        .iter()
        .all(|o| ["filled", "canceled", "expired"].contains(&o.status.as_str())));
    let open = store
        .orders(1, OrderFilter::Open, None, 1_000)
        .expect("open");
    let all = store.orders(1, OrderFilter::All, None, 1_000).expect("all");
    assert_eq!(open.len() + closed.len(), all.len());
    let one = store.order(all[0].order_id).expect("order");
    assert_eq!(one.as_ref(), Some(&all[0]));
    assert_eq!(store.order(999_999).expect("none"), None);
}

#[test]
fn reports_render_as_table_csv_and_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&Target::Sqlite(dir.path().join("s.sqlite"))).expect("open");
    let (entries, _) = workload(200);
    write_in_batches(&mut store, &entries, 50);
    let trades = store.trades(None, 0, u64::MAX).expect("trades");
    let table = report::trades(&trades);

    let csv = table.render(Format::Csv);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(concat!(
            "trade_id,time,symbol,side,price,qty,notional,maker_order_id,taker_order_id,",
            "maker_account,taker_account,maker_fee,taker_fee,auction",
        ))
    );
    let first: Vec<&str> = lines.next().expect("a row").split(',').collect();
    assert_eq!(first[0], trades[0].trade_id.to_string());
    assert!(first[1].starts_with("2026-11-28T") && first[1].ends_with('Z'));
    assert_eq!(first[4], exchange_types::format_units(trades[0].price));
    assert_eq!(csv.lines().count(), trades.len() + 1);

    let json: serde_json::Value = serde_json::from_str(&table.render(Format::Json)).expect("JSON");
    assert_eq!(json.as_array().map(Vec::len), Some(trades.len()));
    assert_eq!(json[0]["trade_id"], trades[0].trade_id);
    assert_eq!(
        json[0]["price"],
        exchange_types::format_units(trades[0].price)
    );
    assert_eq!(json[0]["symbol"], trades[0].symbol);

    let text = table.render(Format::Table);
    let mut rows = text.lines();
    assert!(rows.next().expect("header").starts_with("trade_id  time"));
    assert!(rows.next().expect("rule").starts_with("--------  ----"));
    assert_eq!(text.lines().count(), trades.len() + 2);

    let days = report::instrument_days(&store.instrument_days(0, u64::MAX).expect("days"));
    assert!(days
        .render(Format::Csv)
        .lines()
        .nth(1)
        .expect("row")
        .starts_with("2026-11-28,"));
    let empty = report::fills(&[]);
    assert!(empty.render(Format::Table).ends_with("(no rows)\n"));
    assert_eq!(empty.render(Format::Json).trim(), "[]");
    // A comma inside a value is quoted in CSV.
    let quoted = report::Table {
        columns: vec!["a"],
        rows: vec![vec![report::Cell::Text("x,\"y\"".into())]],
    };
    assert_eq!(quoted.render(Format::Csv), "a\n\"x,\"\"y\"\"\"\n");
}

#[test]
fn targets_resolve_and_hide_passwords() {
    let dir = std::path::Path::new("/data");
    assert_eq!(
        Target::resolve(None, dir).expect("default"),
        Target::Sqlite(dir.join(crate::SQLITE_FILE))
    );
    assert_eq!(
        Target::resolve(Some("sqlite:/tmp/x.db"), dir).expect("sqlite"),
        Target::Sqlite("/tmp/x.db".into())
    );
    let pg = Target::resolve(Some("postgres://u:secret@h:5432/db"), dir).expect("pg");
    assert_eq!(pg.describe(), "postgres://u@h:5432/db");
    let pg = Target::resolve(Some("postgres://h/db?password=secret"), dir).expect("pg");
    assert_eq!(pg.describe(), "postgres://h/db");
    assert!(matches!(
        Target::resolve(Some("mysql://x"), dir),
        Err(StoreError::BadUrl(_))
    ));
    assert!(Target::resolve(Some("sqlite:"), dir).is_err());
}

#[test]
fn event_kinds_not_stored_still_get_an_audit_row() {
    // Book and status events are market data: the audit row records the
    // entry, nothing else is written.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&Target::Sqlite(dir.path().join("s.sqlite"))).expect("open");
    let symbol = exchange_types::Symbol::new("BTC-USD").expect("symbol");
    let events = vec![Event {
        seq: 1,
        ts: 5,
        kind: EventKind::Status(event::Status {
            symbol,
            status: exchange_types::TradingStatus::Halted,
        }),
    }];
    store
        .write(&[EntryRecord {
            index: 1,
            ts: 5,
            command: "halt",
            account: None,
            events: &events,
        }])
        .expect("write");
    let audit = store.audit(0, u64::MAX).expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].symbol.as_deref(), Some("BTC-USD"));
    assert_eq!(audit[0].outcome, "accepted");
    assert!(store.trades(None, 0, u64::MAX).expect("trades").is_empty());
}

#[test]
fn member_risk_entries_get_an_audit_row_with_their_account_and_symbol() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&Target::Sqlite(dir.path().join("s.sqlite"))).expect("open");
    let symbol = exchange_types::Symbol::new("BTC-USD").expect("symbol");
    let tripped = vec![Event {
        seq: 1,
        ts: 5,
        kind: EventKind::Mmp(event::Mmp {
            account: 7,
            symbol,
            state: exchange_types::MmpState::Reset,
        }),
    }];
    let suspended = vec![Event {
        seq: 2,
        ts: 6,
        kind: EventKind::AccountStatus(event::AccountStatus {
            account: 7,
            suspended: true,
            canceled: 0,
        }),
    }];
    store
        .write(&[
            EntryRecord {
                index: 1,
                ts: 5,
                command: "reset_mmp",
                account: Some(7),
                events: &tripped,
            },
            EntryRecord {
                index: 2,
                ts: 6,
                command: "suspend",
                account: Some(7),
                events: &suspended,
            },
        ])
        .expect("write");
    let audit = store.audit(0, u64::MAX).expect("audit");
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].command, "reset_mmp");
    assert_eq!(audit[0].symbol.as_deref(), Some("BTC-USD"));
    assert_eq!(audit[1].command, "suspend");
    assert_eq!(audit[1].account, Some(7));
    assert_eq!(audit[1].outcome, "accepted");
}
