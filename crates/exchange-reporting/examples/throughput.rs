//! Writer throughput of the reporting store (BENCHMARKS.md, "Reporting").
//!
//! Applies a generated order flow to the real engine, then times writing
//! the entries to a store in batches, as the reporter does:
//!
//!     cargo run --release -p exchange-reporting --example throughput -- \
//!         [ENTRIES] [BATCH] [postgres://...]
//!
//! With a URL it writes into a fresh schema of that database (left there
//! afterwards). Without a URL it writes SQLite in a temporary directory (on the disk
//! that holds `TMPDIR`). `ACCOUNTS=N` in the environment spreads the flow
//! over N accounts instead of 100 (rows indexed by account then land all
//! over their indexes, as in a market with many participants). `FLOW=e2e`
//! replaces the default flow (four places to a cancel, most of them
//! crossing) with `exchange bench e2e`'s (see [`e2e_flow`]).

use std::time::Instant;

use exchange_core::Engine;
use exchange_reporting::{EntryRecord, Store, Target};
use exchange_types::{Event, EventKind};

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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let batch: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_024);
    let accounts: u64 = std::env::var("ACCOUNTS")
        .ok()
        .and_then(|a| a.parse().ok())
        .filter(|&a| a > 0)
        .unwrap_or(100);
    let dir = tempfile::tempdir().expect("temp dir");
    let target = match args.get(2) {
        // A schema of its own: a store that already holds the entries
        // would skip them all and time nothing.
        Some(url) => exchange_reporting::testing::fresh_schema(url, "throughput")
            .unwrap_or_else(|e| panic!("{url}: {e}")),
        None => Target::Sqlite(dir.path().join("throughput.sqlite")),
    };

    let lines = command_lines(entries, accounts);
    let applied = apply_all(&lines);
    let events: usize = applied.iter().map(|a| a.3.len()).sum();
    let count = |kind: &str| {
        applied
            .iter()
            .flat_map(|a| &a.3)
            .filter(|e| e.kind.name() == kind)
            .count()
    };
    let trades = count("trade");
    // Ledger rows: balance events that change a total (not holds).
    let mut totals = std::collections::HashMap::new();
    let ledger = applied
        .iter()
        .flat_map(|a| &a.3)
        .filter(|e| match &e.kind {
            EventKind::Balance(b) => {
                totals.insert((b.account, b.asset), b.total).unwrap_or(0) != b.total
            }
            _ => false,
        })
        .count();
    // Rows the store ends with: audit, orders, trades, fills, ledger.
    let rows = applied.len() + count("accepted") + 3 * trades + ledger;

    let (secs, cpu) = write_timed(&target, &applied, batch);
    println!(
        "{}: {} entries ({events} events, {trades} trades, {rows} rows = {:.2}/entry, \
         {ledger} in the ledger, {} balance events) in batches of {batch}: {:.2} s, \
         {:.0} entries/s, {:.0} events/s, {:.0} rows/s{cpu}",
        target.describe(),
        applied.len(),
        rows as f64 / applied.len() as f64,
        count("balance"),
        secs,
        applied.len() as f64 / secs,
        events as f64 / secs,
        rows as f64 / secs
    );
}

/// The listing, the deposits and the order flow, `entries` lines in all.
fn command_lines(entries: usize, accounts: u64) -> Vec<String> {
    let mut lines = vec![concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#,
    )
    .to_string()];
    for account in 1..=accounts {
        lines.push(format!(
            r#"{{"cmd":"deposit","account":{account},"asset":"USD","amount":"100000000"}}"#
        ));
        lines.push(format!(
            r#"{{"cmd":"deposit","account":{account},"asset":"BTC","amount":"100000"}}"#
        ));
    }
    let mut rng = Lcg(7);
    if std::env::var("FLOW").is_ok_and(|f| f == "e2e") {
        e2e_flow(&mut lines, entries, accounts, &mut rng);
    }
    while lines.len() < entries {
        let n = lines.len();
        let account = 1 + rng.next(accounts);
        let side = if rng.next(2) == 0 { "buy" } else { "sell" };
        lines.push(if rng.next(5) == 0 {
            format!(
                r#"{{"cmd":"cancel","account":{account},"client_order_id":"c{}"}}"#,
                n - 1 - rng.next(50.min(n as u64 - 1)) as usize
            )
        } else {
            format!(
                concat!(
                    r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                    r#""symbol":"BTC-USD","side":"{side}","price":"{}.{:02}","qty":"0.{:02}"}}"#,
                ),
                59_990 + rng.next(20),
                rng.next(100),
                1 + rng.next(99),
                account = account,
                n = n,
                side = side,
            )
        });
    }
    lines
}

/// A command's time, name, account and events, as the store takes them.
type AppliedEntry = (u64, &'static str, Option<u64>, Vec<Event>);

/// Applies every line to a fresh engine, one millisecond apart.
fn apply_all(lines: &[String]) -> Vec<AppliedEntry> {
    let mut engine = Engine::new();
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut stamped = exchange_codec::decode_command(line).expect("valid command");
            stamped.ts = 1_800_000_000_000_000_000 + i as u64 * 1_000_000;
            let mut events = Vec::new();
            engine.apply(&stamped, &mut events);
            (stamped.ts, stamped.command.name(), None, events)
        })
        .collect()
}

/// Writes the entries in batches of `batch`; the seconds it took and, where
/// known, the thread's CPU time.
fn write_timed(target: &Target, applied: &[AppliedEntry], batch: usize) -> (f64, String) {
    let mut store = Store::open(target).expect("open the store");
    let cpu_before = thread_cpu_ns();
    let started = Instant::now();
    for (chunk_index, chunk) in applied.chunks(batch).enumerate() {
        let records: Vec<EntryRecord<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(i, (ts, command, account, events))| EntryRecord {
                index: (chunk_index * batch + i + 1) as u64,
                ts: *ts,
                command,
                account: *account,
                events,
            })
            .collect();
        store.write(&records).expect("write");
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = match (cpu_before, thread_cpu_ns()) {
        (Some(before), Some(after)) => format!(
            ", CPU {:.2} s = {:.2} µs/entry",
            (after - before) as f64 / 1e9,
            (after - before) as f64 / 1e3 / applied.len() as f64
        ),
        _ => String::new(),
    };
    (secs, cpu)
}

/// `FLOW=e2e`: the order mix of `exchange bench e2e` (its `flow.rs`), one
/// stream per account: resting limit orders 1 to 10 ticks from the mid
/// (buys below, sells above), a cancel of the account's oldest once it
/// has 16 resting, and one order in ten an IOC 20 ticks through the mid.
/// About 45% places, 45% cancels and 10% IOCs, few of which trade, so most
/// balance events are holds (the default flow crosses far more often).
fn e2e_flow(lines: &mut Vec<String>, entries: usize, accounts: u64, rng: &mut Lcg) {
    let mut resting = vec![std::collections::VecDeque::new(); accounts as usize + 1];
    let mid = 6_000_000i64; // 60,000.00 in ticks of 0.01
    while lines.len() < entries {
        let n = lines.len();
        let account = 1 + rng.next(accounts);
        let mine = &mut resting[account as usize];
        let buy = rng.next(2) == 0;
        let side = if buy { "buy" } else { "sell" };
        let (ticks, lots, tif) = if rng.next(100) < 10 {
            (if buy { 20 } else { -20 }, 50 + rng.next(150), "ioc")
        } else if mine.len() >= 16 {
            let oldest: usize = mine.pop_front().unwrap_or_default();
            lines.push(format!(
                r#"{{"cmd":"cancel","account":{account},"client_order_id":"c{oldest}"}}"#
            ));
            continue;
        } else {
            let away = 1 + rng.next(9) as i64;
            mine.push_back(n);
            (if buy { -away } else { away }, 100 + rng.next(400), "gtc")
        };
        let price = mid + ticks;
        lines.push(format!(
            concat!(
                r#"{{"cmd":"place","account":{account},"client_order_id":"c{n}","#,
                r#""symbol":"BTC-USD","side":"{side}","price":"{}.{:02}","qty":"0.{lots:04}","#,
                r#""tif":"{tif}"}}"#,
            ),
            price / 100,
            price % 100,
            account = account,
            n = n,
            side = side,
            lots = lots,
            tif = tif,
        ));
    }
}

/// CPU time of this thread (Linux; user and system), which does all the
/// writing: SQLite runs in it, and with PostgreSQL the server's own CPU
/// is not counted.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}
