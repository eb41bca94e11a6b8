//! `exchange serve` killed with SIGKILL in the middle of a concurrent load
//! loses nothing it acknowledged, applies nothing twice, and recovers to the
//! state a replay of its journal from scratch reaches.
//!
//! Several clients per account place resting and crossing orders, cancel
//! and replace, each recording every acknowledged answer and the one
//! command it had in flight when the process died.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::{
    copy_dir, limit, units, wait_until, Account, Client, OnPanic, Response, Rng, Server,
};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const ACCOUNTS: usize = 3;
const WORKERS_PER_ACCOUNT: usize = 2;
/// Keeps every account's orders within the 1,000 closed orders the server
/// remembers, so each acknowledged order can still be looked up.
const MAX_PLACES_PER_WORKER: usize = 200;
const LOAD_AT_LEAST: Duration = Duration::from_millis(1500);
const ACKS_AT_LEAST: usize = 150;
const BTC_PER_ACCOUNT: &str = "10000";
const USD_PER_ACCOUNT: &str = "100000000";

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Place {
        client_order_id: String,
        body: Value,
    },
    Cancel(u64),
    Replace(u64, Value),
    Read,
}

#[derive(Clone, Debug)]
struct Open {
    id: u64,
    side: String,
}

#[derive(Debug, Default)]
struct Report {
    account: usize,
    /// Every acknowledged order answer, in the order received.
    acks: Vec<Value>,
    /// Client order ids of acknowledged placements.
    placed: Vec<String>,
    in_flight: Option<Op>,
    failures: Vec<String>,
}

fn qty(rng: &mut Rng) -> String {
    format!("0.0{}", rng.below(5) + 1)
}

/// Resting prices never cross: bids below 60000, asks above.
fn resting_price(rng: &mut Rng, side: &str) -> String {
    let offset = rng.below(99) + 1;
    if side == "buy" {
        (60_000 - offset).to_string()
    } else {
        (60_000 + offset).to_string()
    }
}

fn next_op(rng: &mut Rng, open: &[Open], placed: usize, name: &str) -> Op {
    let roll = rng.below(100);
    let side = if rng.below(2) == 0 { "buy" } else { "sell" };
    let pick = |rng: &mut Rng| open[rng.below(open.len() as u64) as usize].clone();
    let can_place = placed < MAX_PLACES_PER_WORKER;
    if can_place && (open.len() < 2 || roll < 40) {
        let client_order_id = format!("{name}-{placed}");
        let body = json!({ "symbol": "BTC-USD", "side": side, "price": resting_price(rng, side),
                           "qty": qty(rng), "client_order_id": client_order_id });
        Op::Place {
            client_order_id,
            body,
        }
    } else if can_place && roll < 60 {
        let client_order_id = format!("{name}-{placed}");
        let price = if side == "buy" { "60150" } else { "59850" };
        let body = json!({ "symbol": "BTC-USD", "side": side, "price": price, "qty": qty(rng),
                           "tif": "ioc", "client_order_id": client_order_id });
        Op::Place {
            client_order_id,
            body,
        }
    } else if !open.is_empty() && roll < 80 {
        Op::Cancel(pick(rng).id)
    } else if !open.is_empty() {
        let order = pick(rng);
        // Only raise the quantity, so a replace never falls below what filled.
        let change = if rng.below(2) == 0 {
            json!({ "price": resting_price(rng, &order.side) })
        } else {
            json!({ "qty": format!("0.{}", rng.below(3) + 6) })
        };
        Op::Replace(order.id, change)
    } else {
        Op::Read
    }
}

fn worker(
    api: Client,
    account: &Account,
    index: usize,
    name: &str,
    killing: &AtomicBool,
    acked: &AtomicUsize,
) -> Report {
    let mut report = Report {
        account: index,
        ..Report::default()
    };
    let mut rng = Rng(name.bytes().fold(17, |h: u64, b| {
        h.wrapping_mul(31).wrapping_add(u64::from(b))
    }));
    let mut open: Vec<Open> = Vec::new();
    loop {
        let op = next_op(&mut rng, &open, report.placed.len(), name);
        let result = match &op {
            Op::Place { body, .. } => {
                api.try_signed(account, "POST", "/v1/orders", &body.to_string())
            }
            Op::Cancel(id) => api.try_signed(account, "DELETE", &format!("/v1/orders/{id}"), ""),
            Op::Replace(id, change) => api.try_signed(
                account,
                "POST",
                &format!("/v1/orders/{id}/replace"),
                &change.to_string(),
            ),
            Op::Read => api.try_signed(account, "GET", "/v1/balances", ""),
        };
        let response = match result {
            Ok(response) => response,
            Err(error) => {
                if killing.load(Ordering::SeqCst) {
                    report.in_flight = Some(op);
                } else {
                    report.failures.push(format!("{op:?}: {error}"));
                }
                return report;
            }
        };
        record_answer(&op, &response, &mut report, &mut open, acked);
    }
}

/// What an answer tells of the worker's orders, or a failure if the
/// protocol does not allow it.
fn record_answer(
    op: &Op,
    response: &Response,
    report: &mut Report,
    open: &mut Vec<Open>,
    acked: &AtomicUsize,
) {
    let target = match op {
        Op::Cancel(id) | Op::Replace(id, _) => Some(*id),
        _ => None,
    };
    match (op, response.status) {
        (Op::Read, 200) => {}
        (Op::Place { .. }, 201) | (Op::Cancel(_) | Op::Replace(..), 200) => {
            let body = response.json();
            let id = body["order_id"].as_u64().unwrap_or_default();
            let is_open = matches!(body["status"].as_str(), Some("new" | "partially_filled"));
            if let Op::Place {
                client_order_id,
                body: sent,
            } = op
            {
                report.placed.push(client_order_id.clone());
                if is_open {
                    open.push(Open {
                        id,
                        side: sent["side"].as_str().unwrap_or_default().to_owned(),
                    });
                }
            } else if !is_open {
                open.retain(|o| o.id != id);
            }
            report.acks.push(body);
            acked.fetch_add(1, Ordering::Relaxed);
        }
        // The order filled or was canceled by a trade before this
        // command reached it: a race the protocol answers this way.
        (Op::Cancel(_) | Op::Replace(..), 422) if response.code() == "order_not_open" => {
            open.retain(|o| Some(o.id) != target);
        }
        // A random replace may repeat the order's current price or
        // quantity; the core refuses it and nothing changes.
        (Op::Replace(..), 422) if response.code() == "nothing_to_replace" => {}
        (_, status) => report
            .failures
            .push(format!("{op:?}: {status} {}", response.text())),
    }
}

/// Runs the load until enough was acknowledged, then kills the server
/// while the workers are still sending.
fn load_and_kill(server: &mut Server, accounts: &[Account]) -> Vec<Report> {
    let killing = AtomicBool::new(false);
    let acked = AtomicUsize::new(0);
    let api = server.api;
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (index, account) in accounts.iter().enumerate() {
            for w in 0..WORKERS_PER_ACCOUNT {
                let (killing, acked) = (&killing, &acked);
                let name = format!("a{index}w{w}");
                handles
                    .push(scope.spawn(move || worker(api, account, index, &name, killing, acked)));
            }
        }
        // The workers stop when the server stops answering.
        let pid = server.pid();
        // SAFETY: kill(2) on the test's own child process.
        let _kill_server = OnPanic(move || unsafe {
            libc::kill(pid, libc::SIGKILL);
        });
        let start = Instant::now();
        // Load for a while, and long enough to have something to check.
        wait_until("acknowledged orders under load", || {
            start.elapsed() >= LOAD_AT_LEAST && acked.load(Ordering::Relaxed) >= ACKS_AT_LEAST
        });
        killing.store(true, Ordering::SeqCst);
        server.kill();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect()
    })
}

fn is_open(order: &Value) -> bool {
    matches!(order["status"].as_str(), Some("new" | "partially_filled"))
}

/// Every acknowledged placement is there once, and nothing else but what
/// was in flight at the kill.
fn no_placement_lost_or_doubled(api: &Client, accounts: &[Account], reports: &[Report]) {
    for (index, account) in accounts.iter().enumerate() {
        let mine: Vec<&Report> = reports.iter().filter(|r| r.account == index).collect();
        let acked: BTreeSet<&str> = mine
            .iter()
            .flat_map(|r| r.placed.iter().map(String::as_str))
            .collect();
        let maybe: BTreeSet<&str> = mine
            .iter()
            .filter_map(|r| match &r.in_flight {
                Some(Op::Place {
                    client_order_id, ..
                }) => Some(client_order_id.as_str()),
                _ => None,
            })
            .collect();
        let listed = api.read(account, "/v1/orders?status=all");
        let orders = listed["orders"].as_array().expect("orders");
        let mut seen = BTreeSet::new();
        for order in orders {
            let client_order_id = order["client_order_id"].as_str().expect("client_order_id");
            assert!(
                seen.insert(client_order_id),
                "order {client_order_id} applied twice: {listed}"
            );
            assert!(
                acked.contains(client_order_id) || maybe.contains(client_order_id),
                "order {order} was never sent by account {index}'s clients"
            );
        }
        let missing: Vec<_> = acked.iter().filter(|c| !seen.contains(*c)).collect();
        assert!(
            missing.is_empty(),
            "acknowledged placements lost: {missing:?}"
        );
        assert!(orders.len() <= acked.len() + maybe.len());
    }
}

/// An order as recovered against its last acknowledgement; `in_flight`
/// if a command on it was unanswered at the kill.
fn check_recovered_order(id: u64, acked: &Value, now: &Value, in_flight: bool) {
    for field in [
        "client_order_id",
        "symbol",
        "side",
        "type",
        "tif",
        "created_ts",
    ] {
        assert_eq!(
            now[field], acked[field],
            "order {id} {field}: acked {acked}, recovered {now}"
        );
    }
    let (filled_then, filled_now) = (
        units(acked["filled_qty"].as_str().expect("filled")),
        units(now["filled_qty"].as_str().expect("filled")),
    );
    assert!(
        filled_now >= filled_then,
        "order {id} lost fills: acked {acked}, recovered {now}"
    );
    if in_flight {
        // The command in flight may or may not have been applied.
        return;
    }
    if !is_open(acked) {
        for field in ["status", "filled_qty", "qty", "price"] {
            assert_eq!(
                now[field], acked[field],
                "closed order {id} {field}: acked {acked}, recovered {now}"
            );
        }
        return;
    }
    // Open when acknowledged: only other accounts' trades may have
    // moved it since, and only forward.
    assert_eq!(
        (&now["price"], &now["qty"]),
        (&acked["price"], &acked["qty"]),
        "order {id}: acked {acked}, recovered {now}"
    );
    let qty = units(now["qty"].as_str().expect("qty"));
    let expected = match filled_now {
        0 => "new",
        f if f == qty => "filled",
        _ => "partially_filled",
    };
    assert_eq!(
        now["status"], expected,
        "order {id}: acked {acked}, recovered {now}"
    );
}

/// Orders: nothing acknowledged is lost or regressed, nothing is doubled,
/// nothing appears that no client sent.
fn check_orders(api: &Client, accounts: &[Account], reports: &[Report]) {
    no_placement_lost_or_doubled(api, accounts, reports);
    for report in reports {
        let account = &accounts[report.account];
        let in_flight_on = match &report.in_flight {
            Some(Op::Cancel(id) | Op::Replace(id, _)) => Some(*id),
            _ => None,
        };
        let mut last: HashMap<u64, &Value> = HashMap::new();
        for ack in &report.acks {
            last.insert(ack["order_id"].as_u64().expect("order_id"), ack);
        }
        for (id, acked) in last {
            let now = api.read(account, &format!("/v1/orders/{id}"));
            check_recovered_order(id, acked, &now, in_flight_on == Some(id));
        }
    }
}

/// Balances: never more held than owned, BTC conserved (fees are in USD),
/// USD at most what was deposited, and exactly the open sells hold BTC.
fn check_balances(api: &Client, accounts: &[Account]) {
    let mut btc_total = 0;
    let mut usd_total = 0;
    let mut asks_by_accounts = 0;
    for account in accounts {
        let balances = api.read(account, "/v1/balances");
        let mut held = BTreeMap::new();
        for row in balances["balances"].as_array().expect("balances") {
            let (total, available) = (
                units(row["total"].as_str().expect("total")),
                units(row["available"].as_str().expect("available")),
            );
            assert!(
                0 <= available && available <= total,
                "account {}: {row}",
                account.id
            );
            held.insert(
                row["asset"].as_str().expect("asset").to_owned(),
                (total, total - available),
            );
        }
        btc_total += held["BTC"].0;
        usd_total += held["USD"].0;
        let open = api.read(account, "/v1/orders?symbol=BTC-USD");
        let selling: i128 = open["orders"]
            .as_array()
            .expect("orders")
            .iter()
            .filter(|o| o["side"] == "sell")
            .map(|o| units(o["remaining_qty"].as_str().expect("remaining_qty")))
            .sum();
        assert_eq!(
            held["BTC"].1, selling,
            "account {}: BTC held vs open sells",
            account.id
        );
        asks_by_accounts += selling;
    }
    let n = accounts.len() as i128;
    assert_eq!(
        btc_total,
        n * units(BTC_PER_ACCOUNT),
        "BTC created or destroyed"
    );
    assert!(
        usd_total <= n * units(USD_PER_ACCOUNT),
        "USD created: {usd_total}"
    );
    let book = api.get("/v1/markets/BTC-USD/book?depth=1000").json();
    let on_book: i128 = book["asks"]
        .as_array()
        .expect("asks")
        .iter()
        .map(|l| units(l[1].as_str().expect("qty")))
        .sum();
    assert_eq!(
        on_book, asks_by_accounts,
        "the book's asks vs the accounts' open sells"
    );
}

fn write_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    // Frequent snapshots, so recovery after the crash starts from one
    // taken under load and the journal-only replay is a real comparison.
    std::fs::write(&path, "snapshot_every = 100\n").expect("write config");
    path
}

#[test]
fn sigkill_under_load_loses_no_acknowledged_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let config = write_config(dir.path());
    let mut server = Server::start_with(EXCHANGE, &data, Some(&config));
    let accounts: Vec<Account> = (0..ACCOUNTS)
        .map(|_| {
            let account = server.api.create_account();
            server.api.deposit(&account, "USD", USD_PER_ACCOUNT);
            server.api.deposit(&account, "BTC", BTC_PER_ACCOUNT);
            account
        })
        .collect();

    let reports = load_and_kill(&mut server, &accounts);
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    assert!(
        failures.is_empty(),
        "unexpected answers under load: {failures:#?}"
    );
    let acks: usize = reports.iter().map(|r| r.acks.len()).sum();
    let in_flight = reports.iter().filter(|r| r.in_flight.is_some()).count();
    eprintln!("load: {acks} acknowledged answers, {in_flight} commands in flight at the kill");

    // Copies of the crashed directory, before anything touches it again.
    let full = dir.path().join("full-copy");
    let journal_only = dir.path().join("journal-only");
    copy_dir(&data, &full);
    copy_dir(&data.join("journal"), &journal_only.join("journal"));
    // The API secrets are derived from the node's master key, not logged.
    std::fs::copy(data.join("master_key"), journal_only.join("master_key")).expect("master key");

    let restarted = Server::start_with(EXCHANGE, &data, Some(&config));
    let hash = restarted.recovery_hash();
    eprintln!(
        "{}",
        restarted
            .stderr()
            .lines()
            .filter(|l| l.starts_with("recovery"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    check_orders(&restarted.api, &accounts, &reports);
    check_balances(&restarted.api, &accounts);
    let after = restarted
        .api
        .place(&accounts[0], &limit("buy", "59000", "0.01", "after-crash"));
    assert_eq!(after["status"], "new");
    let applied = restarted.recovery_number("applied index");
    drop(restarted);

    let from_snapshot = Server::start_with(EXCHANGE, &full, Some(&config));
    assert!(
        from_snapshot
            .stderr()
            .contains("recovery: loaded snapshot at index"),
        "{}",
        from_snapshot.stderr()
    );
    let from_scratch = Server::start_with(EXCHANGE, &journal_only, Some(&config));
    assert_eq!(
        from_scratch.recovery_number("replayed"),
        applied,
        "{}",
        from_scratch.stderr()
    );
    assert_eq!(
        from_snapshot.recovery_hash(),
        hash,
        "snapshot + journal vs the restarted server"
    );
    assert_eq!(
        from_scratch.recovery_hash(),
        hash,
        "journal replayed from scratch vs the restarted server"
    );
}
