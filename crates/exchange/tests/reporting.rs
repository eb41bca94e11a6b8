//! The reporting store under crashes: `exchange serve` is killed with
//! SIGKILL twice in the middle of a concurrent load (the reporter may be
//! anywhere in a batch), restarted each time, and at the end the store
//! must hold every committed entry exactly once: equal, row for row, to a
//! store written from a replay of the journal. Then `exchange report`
//! reads it in each format. Runs on SQLite and on PostgreSQL
//! (`EXCHANGE_TEST_PG_URL`; without it the PostgreSQL run says so loudly
//! and passes, unless CI=true).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use exchange_node::Applied;
use exchange_reporter::catch_up::committed_entries;
use exchange_reporter::entry_record;
use exchange_reporting::testing::fresh_postgres;
use exchange_reporting::{Dump, EntryRecord, Store, Target};
use exchange_testkit::{limit, run, wait_until, Account, Client, Rng, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WORKERS: usize = 4;

/// Places crossing orders, cancels some, sends some the core rejects,
/// until `stop` or until the server is gone. Counts acknowledged commands.
fn worker(api: Client, account: Account, seed: u64, stop: Arc<AtomicBool>, acks: Arc<AtomicUsize>) {
    let mut rng = Rng(seed);
    let mut resting: Vec<u64> = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let side = if rng.below(2) == 0 { "buy" } else { "sell" };
        let (method, path, body) = match rng.below(10) {
            0 if !resting.is_empty() => {
                let id = resting.swap_remove(rng.below(resting.len() as u64) as usize);
                ("DELETE", format!("/v1/orders/{id}"), String::new())
            }
            // Off the tick: the core rejects it, the audit records why.
            1 => (
                "POST",
                "/v1/orders".to_string(),
                json!({ "symbol": "BTC-USD", "side": side, "type": "limit", "price": "60000.001",
                        "qty": "0.01", "client_order_id": format!("bad-{seed}-{n}") })
                .to_string(),
            ),
            _ => {
                let price = format!("{}.{:02}", 59_995 + rng.below(10), rng.below(100));
                let qty = format!("0.0{}", 1 + rng.below(9));
                (
                    "POST",
                    "/v1/orders".to_string(),
                    json!({ "symbol": "BTC-USD", "side": side, "type": "limit", "price": price,
                            "qty": qty, "client_order_id": format!("w{seed}-{n}") })
                    .to_string(),
                )
            }
        };
        let Ok(response) = api.try_signed(&account, method, &path, &body) else {
            return; // killed
        };
        if response.status < 500 {
            acks.fetch_add(1, Ordering::Relaxed);
        }
        if response.status == 201 {
            let answer = response.json();
            if answer["status"] == "new" || answer["status"] == "partially_filled" {
                if let Some(id) = answer["order_id"].as_u64() {
                    resting.push(id);
                }
            }
        }
    }
}

/// Runs the load until at least `at_least` commands are acknowledged and
/// then SIGKILLs the server in the middle of it.
fn load_then_kill(server: &mut Server, accounts: &[Account], seed: u64, at_least: usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..WORKERS)
        .map(|i| {
            let (api, account) = (server.api, accounts[i % accounts.len()].clone());
            let (stop, acks) = (stop.clone(), acks.clone());
            std::thread::spawn(move || worker(api, account, seed * 100 + i as u64, stop, acks))
        })
        .collect();
    let started = Instant::now();
    wait_until("the load to get going", || {
        acks.load(Ordering::Relaxed) >= at_least && started.elapsed() > Duration::from_millis(500)
    });
    server.kill();
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("worker");
    }
}

/// The store a replay of the journal writes, from nothing.
fn replayed(data_dir: &Path, through: u64, scratch: &Path) -> Dump {
    let mut store = Store::open(&Target::Sqlite(scratch.join("replayed.sqlite"))).expect("scratch");
    let mut pending: Vec<Applied> = Vec::new();
    let flush = |pending: &mut Vec<Applied>, store: &mut Store| {
        let records: Vec<EntryRecord<'_>> = pending.iter().map(entry_record).collect();
        store.write(&records).expect("write the replay");
        pending.clear();
    };
    committed_entries(data_dir, 0, through, |applied| {
        pending.push(applied);
        if pending.len() == 500 {
            flush(&mut pending, &mut store);
        }
        Ok(())
    })
    .expect("replay the journal");
    flush(&mut pending, &mut store);
    store.dump().expect("dump")
}

/// Says how far behind the journal the store was found after a kill (it
/// varies from run to run: the kill lands anywhere in a batch).
fn report_restart(server: &Server) {
    let stderr = server.stderr();
    let store = stderr
        .lines()
        .find(|l| l.starts_with("reporting store: "))
        .unwrap_or("");
    eprintln!(
        "restart: journal at {}; {store}",
        server.recovery_number("applied index")
    );
}

/// Two crashes under load, then the comparison; returns the data
/// directory (kept alive by `dir`) and the final dump.
fn crash_twice(dir: &Path, target: &Target, config: Option<&Path>) -> (PathBuf, Dump) {
    let data = dir.join("data");
    let mut server = Server::start_with(EXCHANGE, &data, config);
    let accounts: Vec<Account> = (0..3).map(|_| server.api.funded_account()).collect();
    load_then_kill(&mut server, &accounts, 1, 150);

    let mut server = Server::start_with(EXCHANGE, &data, config);
    let applied = server.recovery_number("applied index");
    report_restart(&server);
    // Ready means the store caught up with what recovery applied.
    assert!(server.api.metric("exchange_reporting_position") >= applied);
    load_then_kill(&mut server, &accounts, 2, 100);

    let mut server = Server::start_with(EXCHANGE, &data, config);
    report_restart(&server);
    // Read-your-writes right after an order, through the store.
    let taker = &accounts[0];
    server
        .api
        .place(taker, &limit("sell", "59000", "0.01", "last-sell"));
    let fills = server.api.signed(taker, "GET", "/v1/fills?limit=5", "");
    assert_eq!(fills.status, 200, "{}", fills.text());
    let closed = server
        .api
        .signed(taker, "GET", "/v1/orders?status=closed", "");
    assert!(closed.json()["orders"]
        .as_array()
        .is_some_and(|o| !o.is_empty()));
    let last = server.api.metric("exchange_applied_index");
    wait_until("the store to reach the core", || {
        server.api.metric("exchange_reporting_position") >= last
    });
    assert_eq!(server.api.metric("exchange_reporting_lag_entries"), 0);
    server.stop_with(libc::SIGTERM);

    let dump = the_store_holds_what_a_replay_writes(target, &data, last, dir);
    (data, dump)
}

/// The store after the crashes: every entry and trade once, and the
/// same rows as a store written by replaying the journal.
fn the_store_holds_what_a_replay_writes(
    target: &Target,
    data: &Path,
    last: u64,
    dir: &Path,
) -> Dump {
    let dump = Store::open(target)
        .expect("open the store")
        .dump()
        .expect("dump");
    assert_eq!(dump.position.log_index, last, "the store holds every entry");
    let indices: Vec<u64> = dump.audit.iter().map(|a| a.log_index).collect();
    assert_eq!(
        indices,
        (1..=last).collect::<Vec<_>>(),
        "one audit row per entry, no gap"
    );
    let trade_ids: Vec<u64> = dump.trades.iter().map(|t| t.trade_id).collect();
    assert!(
        trade_ids.len() > 20,
        "the load traded ({})",
        trade_ids.len()
    );
    assert_eq!(
        trade_ids,
        (1..=trade_ids.len() as u64).collect::<Vec<_>>(),
        "every trade once"
    );
    assert_eq!(dump.fills.len(), 2 * dump.trades.len());
    assert!(dump
        .audit
        .iter()
        .any(|a| a.reason.as_deref() == Some("price_not_on_tick")));

    let reference = replayed(data, last, dir);
    assert_eq!(dump.position, reference.position);
    assert_eq!(dump.audit, reference.audit);
    assert_eq!(dump.trades, reference.trades);
    assert_eq!(dump.fills, reference.fills);
    assert_eq!(dump.orders, reference.orders);
    assert_eq!(dump.ledger, reference.ledger);
    assert_eq!(dump.balances, reference.balances);
    // The ledger lists changes of a total (deposits and trades here), not
    // the holds of orders placed and canceled.
    assert!(dump.ledger.iter().any(|l| l.cause == "deposit"));
    assert!(dump.ledger.iter().any(|l| l.cause == "place"));
    assert!(dump
        .ledger
        .iter()
        .all(|l| l.delta != 0 && l.cause != "cancel"));
    dump
}

fn report(args: &[&str]) -> (bool, String, String) {
    let output = run(EXCHANGE, &[&["report"], args].concat(), None);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn daily_reports_count_every_trade_and_fill(data: &str, dump: &Dump) {
    let (ok, table, err) = report(&["daily-instruments", "--data-dir", data]);
    assert!(ok, "{err}");
    let mut lines = table.lines();
    assert!(lines
        .next()
        .is_some_and(|h| h.starts_with("date ") && h.contains("notional")));
    let rows: Vec<Vec<&str>> = lines
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.iter().all(|r| r[1] == "BTC-USD"), "{table}");
    let traded: usize = rows
        .iter()
        .map(|r| r[7].parse::<usize>().expect("trades"))
        .sum();
    assert_eq!(traded, dump.trades.len(), "trade counts of the days");

    let (ok, json, err) = report(&["daily-accounts", "--data-dir", data, "--format", "json"]);
    assert!(ok, "{err}");
    let days: Value = serde_json::from_str(&json).expect("JSON");
    let fills_counted: u64 = days
        .as_array()
        .map(|d| d.iter().filter_map(|d| d["fills"].as_u64()).sum())
        .unwrap_or(0);
    assert_eq!(fills_counted, dump.fills.len() as u64);
}

#[test]
fn sqlite_store_survives_kills_and_reports_read_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = Target::Sqlite(dir.path().join("data").join("reporting.sqlite"));
    let (data, dump) = crash_twice(dir.path(), &target, None);
    let data = data.to_str().expect("UTF-8 path");

    let (ok, csv, err) = report(&["trades", "--data-dir", data, "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(csv.lines().count(), dump.trades.len() + 1);
    assert!(csv.starts_with("trade_id,time,symbol,side,price,qty,notional,"));

    let (ok, json, err) = report(&[
        "fills",
        "--data-dir",
        data,
        "--account",
        "2",
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    let fills: Value = serde_json::from_str(&json).expect("JSON");
    let mine = dump.fills.iter().filter(|f| f.account == 2).count();
    assert_eq!(fills.as_array().map(Vec::len), Some(mine));
    assert!(fills
        .as_array()
        .is_some_and(|f| f.iter().all(|f| f["account"] == 2)));

    daily_reports_count_every_trade_and_fill(data, &dump);

    let (ok, csv, err) = report(&["audit", "--data-dir", data, "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(csv.lines().count(), dump.audit.len() + 1);

    let (ok, csv, err) = report(&[
        "ledger",
        "--data-dir",
        data,
        "--account",
        "2",
        "--format",
        "csv",
    ]);
    assert!(ok, "{err}");
    let mine = dump.ledger.iter().filter(|l| l.account == 2).count();
    assert!(mine > 1, "account 2's deposit and trades ({mine})");
    assert_eq!(csv.lines().count(), mine + 1);

    // A range with nothing in it, and bad input.
    let (ok, table, _) = report(&[
        "trades",
        "--data-dir",
        data,
        "--from",
        "2001-01-01",
        "--to",
        "2001-01-31",
    ]);
    assert!(ok);
    assert!(table.ends_with("(no rows)\n"));
    let (ok, _, err) = report(&["trades", "--data-dir", data, "--from", "2001-02-30"]);
    assert!(!ok && err.contains("--from"), "{err}");
    let (ok, _, err) = report(&["trades", "--data-dir", "/nonexistent/exchange-data"]);
    assert!(!ok && err.contains("no reporting store"), "{err}");
}

#[test]
fn postgres_store_survives_kills() {
    let Some(target) = fresh_postgres("postgres_store_survives_kills") else {
        return;
    };
    let Target::Postgres(url) = &target else {
        panic!("fresh_postgres gives a PostgreSQL target");
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("exchange.toml");
    std::fs::write(&config, format!("[reporting]\nurl = \"{url}\"\n")).expect("write config");
    let (data, dump) = crash_twice(dir.path(), &target, Some(&config));
    // Nothing went to SQLite.
    assert!(!data.join("reporting.sqlite").exists());
    let (ok, csv, err) = report(&["trades", "--reporting-url", url, "--format", "csv"]);
    assert!(ok, "{err}");
    assert_eq!(csv.lines().count(), dump.trades.len() + 1);
}

#[test]
fn a_store_ahead_of_the_journal_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = dir.path().join("first");
    let mut server = Server::start(EXCHANGE, &first);
    server.api.funded_account();
    server.stop_with(libc::SIGTERM);

    // A fresh data directory pointed at the first one's store: its journal
    // is empty, the store is not.
    let config = dir.path().join("exchange.toml");
    let store = first.join("reporting.sqlite");
    std::fs::write(
        &config,
        format!("[reporting]\nurl = \"sqlite:{}\"\n", store.display()),
    )
    .expect("write config");
    let refused = Server::try_start(EXCHANGE, &dir.path().join("second"), Some(&config));
    let Err((status, stderr)) = refused else {
        panic!("the server started on another exchange's store");
    };
    assert!(!status.success());
    assert!(
        stderr.contains("holds another exchange's record"),
        "{stderr}"
    );
}

/// `[reporting] enabled = false`: trading and live state as usual, no
/// store on disk, history reads refused with a specific answer.
#[test]
fn a_node_without_a_reporting_store_trades_and_refuses_history() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("exchange.toml");
    std::fs::write(&config, "[reporting]\nenabled = false\n").expect("write config");
    let data = dir.path().join("data");
    let mut server = Server::start_with(EXCHANGE, &data, Some(&config));
    let (buyer, seller) = (server.api.funded_account(), server.api.funded_account());
    let api = &server.api;
    api.place(&seller, &limit("sell", "60000", "0.01", "ask-1"));
    let taken = api.place(&buyer, &limit("buy", "60000", "0.01", "bid-1"));
    assert_eq!(taken["status"], "filled", "{taken}");
    for path in ["/v1/orders?status=open", "/v1/balances"] {
        let live = api.signed(&seller, "GET", path, "");
        assert_eq!(live.status, 200, "{path}: {}", live.text());
    }

    for path in ["/v1/fills", "/v1/orders?status=all"] {
        api.signed(&buyer, "GET", path, "")
            .expect_error(503, "reporting_disabled", path);
    }
    let candles = api.get("/v1/markets/BTC-USD/candles");
    assert_eq!(candles.status, 200, "{}", candles.text());
    let status = api.admin("GET", "/admin/status", "").json();
    assert!(status["reporting_lag"].is_null(), "{status}");
    server.stop_with(libc::SIGTERM);
    assert!(
        !data.join("reporting.sqlite").exists(),
        "no store was created"
    );

    // Turned on, the node builds its store from the journal.
    std::fs::write(&config, "[reporting]\nenabled = true\n").expect("write config");
    let server = Server::start_with(EXCHANGE, &data, Some(&config));
    let fills = server.api.read(&buyer, "/v1/fills");
    let fills = fills["fills"].as_array().expect("fills");
    assert_eq!(fills.len(), 1, "{fills:?}");
    assert_eq!(fills[0]["price"], "60000", "{fills:?}");
}
