//! The order types beyond plain limit and market orders, hidden orders,
//! minimum quantities and trades of auctions: their columns are written
//! from the events, follow the order's life (a stop's trigger, an expiry),
//! survive the writer reading an order back from the store, and read the
//! same on both backends.

use exchange_core::Engine;
use exchange_types::EventKind;

use crate::query::{OrderRow, TradeRow};
use crate::rows::{CachedOrder, ORDER_COLUMNS};
use crate::tests::{apply_lines, on_both, write_in_batches, Entry};
use crate::{Dump, Store, Target};

const NS: u64 = 1_000_000_000;
/// Units per whole (1e-8).
const U: u64 = 100_000_000;

fn setup() -> Vec<String> {
    let mut lines = vec![concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":0,"taker_fee_bps":0,"#,
        r#""hidden_min_notional":"100"}"#,
    )
    .to_string()];
    for account in 1..=3 {
        for (asset, amount) in [("USD", "1000000"), ("BTC", "100")] {
            lines.push(format!(
                r#"{{"cmd":"deposit","account":{account},"asset":"{asset}","amount":"{amount}"}}"#
            ));
        }
    }
    lines
}

fn place(account: u64, id: &str, rest: &str) -> String {
    format!(
        concat!(
            r#"{{"cmd":"place","account":{account},"client_order_id":"{id}","#,
            r#""symbol":"BTC-USD",{rest}}}"#,
        ),
        account = account,
        id = id,
        rest = rest,
    )
}

/// Stops (one triggered, one not), a trailing stop, an iceberg, a
/// funds-sized buy, good-till-date (expiring), day and one-cancels-other
/// orders. Entries one second apart.
fn order_types() -> Vec<Entry> {
    let mut lines = setup();
    let gtd_expiry = crate::tests::START + (lines.len() as u64 + 12) * NS;
    lines.extend([
        place(
            1,
            "stop",
            r#""side":"sell","type":"stop","stop_price":"95","qty":"1""#,
        ),
        place(
            1,
            "stoplim",
            r#""side":"sell","type":"stop_limit","stop_price":"80","price":"79","qty":"1""#,
        ),
        place(
            2,
            "ice",
            r#""side":"buy","price":"90","qty":"5","display_qty":"1""#,
        ),
        place(
            2,
            "gtd",
            &format!(r#""side":"buy","price":"10","qty":"1","tif":"gtd","expire_ts":{gtd_expiry}"#),
        ),
        place(
            2,
            "day",
            r#""side":"buy","price":"11","qty":"1","tif":"day""#,
        ),
        place(2, "oco-a", r#""side":"buy","price":"12","qty":"1""#),
        place(
            2,
            "oco-b",
            concat!(
                r#""side":"buy","type":"stop_limit","stop_price":"150","price":"151","qty":"1","#,
                r#""oco_with":"oco-a""#,
            ),
        ),
        // Trades at 100 then 94: the sell stop at 95 triggers and sells
        // into the iceberg at 90.
        place(3, "s100", r#""side":"sell","price":"100","qty":"0.1""#),
        place(2, "b100", r#""side":"buy","price":"100","qty":"0.1""#),
        // A trailing stop needs a last price to trail from.
        place(
            1,
            "trail",
            r#""side":"sell","type":"stop","trailing_amount":"50","qty":"0.5""#,
        ),
        place(3, "s94", r#""side":"sell","price":"94","qty":"0.1""#),
        place(2, "b94", r#""side":"buy","price":"94","qty":"0.1""#),
        place(3, "funds", r#""side":"buy","type":"market","funds":"50""#),
    ]);
    // Past the good-till-date order's expiry.
    for _ in 0..3 {
        lines.push(r#"{"cmd":"tick"}"#.to_string());
    }
    apply_lines(&mut Engine::new(), &lines, NS)
}

fn order(orders: &[OrderRow], id: &str) -> OrderRow {
    orders
        .iter()
        .find(|o| o.client_order_id == id)
        .unwrap_or_else(|| panic!("order {id} in {orders:#?}"))
        .clone()
}

fn event_ts(entries: &[Entry], kind: &str, client_order_id: &str) -> u64 {
    entries
        .iter()
        .flat_map(|e| &e.events)
        .find(|e| {
            let id = match &e.kind {
                EventKind::Triggered(t) => t.client_order_id,
                EventKind::Expired(x) => x.client_order_id,
                _ => return false,
            };
            e.kind.name() == kind && id.as_str() == client_order_id
        })
        .unwrap_or_else(|| panic!("a {kind} event of {client_order_id}"))
        .ts
}

#[test]
fn order_rows_carry_the_rarer_fields_and_the_stop_trigger() {
    on_both("order_rows_carry_the_rarer_fields", |target| {
        let entries = order_types();
        let rejected = entries
            .iter()
            .flat_map(|e| &e.events)
            .filter(|e| matches!(e.kind, EventKind::Rejected(_)))
            .count();
        assert_eq!(rejected, 0, "every order of the workload is accepted");
        let mut store = Store::open(target).expect("open");
        write_in_batches(&mut store, &entries, 4);
        let orders = store.all_orders().expect("orders");

        assert_stop_orders(&orders, &entries);
        assert_other_order_types(&orders, &entries);
    });
}

/// Stops carry their stop price, and the one triggered when and where it
/// was.
fn assert_stop_orders(orders: &[OrderRow], entries: &[Entry]) {
    let stop = order(orders, "stop");
    assert_eq!(
        (stop.order_type.as_str(), stop.stop_price, stop.price),
        ("stop", Some(95 * U), None)
    );
    assert_eq!(stop.triggered_price, Some(95 * U));
    assert_eq!(
        stop.triggered_ts,
        Some(event_ts(entries, "triggered", "stop"))
    );
    assert_eq!((stop.status.as_str(), stop.filled_qty), ("filled", U));

    let stop_limit = order(orders, "stoplim");
    assert_eq!(
        (
            stop_limit.order_type.as_str(),
            stop_limit.stop_price,
            stop_limit.price
        ),
        ("stop_limit", Some(80 * U), Some(79 * U))
    );
    assert_eq!(
        (stop_limit.triggered_ts, stop_limit.triggered_price),
        (None, None),
        "not reached"
    );
    assert_eq!(stop_limit.status, "new");

    let trail = order(orders, "trail");
    assert_eq!(
        (
            trail.trailing_amount,
            trail.trailing_bps,
            trail.triggered_ts
        ),
        (Some(50 * U), None, None)
    );
}

/// Icebergs, funds-sized, good-till-date, day and one-cancels-other orders
/// carry their own fields, and a plain order has none of them.
fn assert_other_order_types(orders: &[OrderRow], entries: &[Entry]) {
    let ice = order(orders, "ice");
    assert_eq!((ice.display_qty, ice.qty), (Some(U), 5 * U));
    assert_eq!(ice.filled_qty, U, "the triggered stop sold into it");

    let funds = order(orders, "funds");
    assert_eq!(
        (funds.order_type.as_str(), funds.funds),
        ("market", Some(50 * U))
    );

    let gtd = order(orders, "gtd");
    assert_eq!(gtd.tif, "gtd");
    assert!(gtd.expire_ts.is_some());
    assert_eq!(gtd.status, "expired");
    assert_eq!(gtd.updated_ts, event_ts(entries, "expired", "gtd"));

    let day = order(orders, "day");
    assert_eq!((day.tif.as_str(), day.expire_ts), ("day", None));
    assert_eq!(order(orders, "oco-a").oco_with, None);
    let oco_b = order(orders, "oco-b");
    assert_eq!(
        (oco_b.oco_with.as_deref(), oco_b.stop_price),
        (Some("oco-a"), Some(150 * U))
    );

    // A plain order has none of it.
    let plain = order(orders, "s100");
    assert_eq!(
        (
            plain.stop_price,
            plain.display_qty,
            plain.funds,
            plain.expire_ts,
            plain.triggered_ts
        ),
        (None, None, None, None, None)
    );
}

/// The writer reads an open order back from the store when its cache was
/// dropped (a new process): orders of every time in force and an
/// untriggered stop must come back as they were, and writing on gives the
/// rows writing in one go gives.
#[test]
fn orders_read_back_from_the_store_carry_on_exactly() {
    on_both("orders_read_back_carry_on", |target| {
        let entries = order_types();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut whole =
            Store::open(&Target::Sqlite(dir.path().join("whole.sqlite"))).expect("open");
        write_in_batches(&mut whole, &entries, 1_000);

        // Stopped after the orders are placed, before any trade.
        let split = entries
            .iter()
            .position(|e| e.events.iter().any(|ev| ev.kind.name() == "trade"))
            .expect("a trade");
        {
            let mut first = Store::open(target).expect("open");
            write_in_batches(&mut first, &entries[..split], 3);
        }
        let mut resumed = Store::open(target).expect("reopen");
        write_in_batches(&mut resumed, &entries[split..], 2);
        assert_eq!(resumed.dump().expect("dump"), whole.dump().expect("dump"));
    });
}

fn auction_day() -> Vec<Entry> {
    let mut lines = setup();
    let phase = |p: &str| format!(r#"{{"cmd":"set_phase","symbol":"BTC-USD","phase":"{p}"}}"#);
    lines.extend([
        // Continuous: one plain trade.
        place(1, "c-s", r#""side":"sell","price":"100","qty":"1""#),
        place(2, "c-b", r#""side":"buy","price":"100","qty":"1""#),
        phase("closing_call"),
        place(1, "cc-s1", r#""side":"sell","price":"101","qty":"1""#),
        place(3, "cc-s2", r#""side":"sell","price":"102","qty":"1""#),
        place(
            2,
            "cc-b",
            r#""side":"buy","price":"105","qty":"1.5","tif":"at_close""#,
        ),
        phase("closing_auction"),
        phase("closed"),
        phase("pre_open"),
        place(1, "po-s", r#""side":"sell","price":"99","qty":"2""#),
        place(2, "po-b1", r#""side":"buy","price":"100","qty":"1""#),
        place(
            3,
            "po-b2",
            r#""side":"buy","price":"101","qty":"0.5","tif":"at_open""#,
        ),
        phase("opening_auction"),
        // Continuous again: the rest of po-s trades without a flag.
        place(3, "after", r#""side":"buy","price":"99","qty":"0.5""#),
    ]);
    apply_lines(&mut Engine::new(), &lines, NS)
}

fn flags(trades: &[TradeRow]) -> Vec<(Option<&str>, u64, u64)> {
    trades
        .iter()
        .map(|t| (t.auction.as_deref(), t.price, t.qty))
        .collect()
}

#[test]
fn trades_of_an_auction_are_flagged_with_its_kind() {
    on_both("trades_of_an_auction_are_flagged", |target| {
        let entries = auction_day();
        let auctions = entries
            .iter()
            .flat_map(|e| &e.events)
            .filter(|e| e.kind.name() == "auction")
            .count();
        assert_eq!(auctions, 2, "both calls uncross");
        for batch in [1, 5, 1_000] {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = Target::Sqlite(dir.path().join("store.sqlite"));
            let target = if batch == 1 { target } else { &path };
            let mut store = Store::open(target).expect("open");
            write_in_batches(&mut store, &entries, batch);
            let trades = store.trades(None, 0, u64::MAX).expect("trades");
            let half = U / 2;
            assert_eq!(
                flags(&trades),
                vec![
                    (None, 100 * U, U),
                    // The closing auction uncrosses at one price.
                    (Some("close"), 102 * U, U),
                    (Some("close"), 102 * U, half),
                    (Some("open"), 99 * U, half),
                    (Some("open"), 99 * U, U),
                    (None, 99 * U, half),
                ],
                "batches of {batch}"
            );
            let table = crate::report::trades(&trades).to_csv();
            assert!(
                table.lines().nth(2).is_some_and(|l| l.ends_with(",close")),
                "{table}"
            );
            assert!(
                table.lines().nth(1).is_some_and(|l| l.ends_with(',')),
                "{table}"
            );
        }
    });
}

#[test]
fn the_orders_report_lists_the_rarer_columns_and_filters() {
    on_both("the_orders_report", |target| {
        let entries = order_types();
        let mut store = Store::open(target).expect("open");
        write_in_batches(&mut store, &entries, 1_000);
        let all = store
            .orders_placed(None, None, 0, u64::MAX)
            .expect("orders");
        assert_eq!(all, store.all_orders().expect("orders"));
        let mine = store
            .orders_placed(Some(1), Some("BTC-USD"), 0, u64::MAX)
            .expect("orders");
        let ids: Vec<&str> = mine.iter().map(|o| o.client_order_id.as_str()).collect();
        assert_eq!(ids, ["stop", "stoplim", "trail"]);
        assert!(store
            .orders_placed(Some(1), Some("ETH-USD"), 0, u64::MAX)
            .expect("orders")
            .is_empty());
        let stop_ts = mine[0].created_ts;
        let later = store
            .orders_placed(Some(1), None, stop_ts + 1, u64::MAX)
            .expect("orders");
        assert_eq!(later.len(), 2, "the range is by creation time");

        let json: serde_json::Value =
            serde_json::from_str(&crate::report::orders(&mine).to_json()).expect("JSON");
        let stop = &json[0];
        assert_eq!(
            (
                &stop["type"],
                &stop["stop_price"],
                &stop["triggered_price"],
                &stop["price"]
            ),
            (
                &serde_json::json!("stop"),
                &serde_json::json!("95"),
                &serde_json::json!("95"),
                &serde_json::Value::Null
            )
        );
        assert!(stop["triggered_time"].is_string());
        assert_eq!(json[2]["trailing_amount"], "50");
        assert!(json[1]["triggered_time"].is_null());
    });
}

/// Every order's row has the hidden flag and minimum quantity it was
/// accepted with, and the workload has orders of both.
pub(crate) fn assert_hidden_and_min_qty_kept(entries: &[Entry], all: &Dump) {
    let accepted: Vec<(u64, bool, Option<u64>)> = entries
        .iter()
        .flat_map(|e| &e.events)
        .filter_map(|e| match &e.kind {
            EventKind::Accepted(a) => {
                let ext = a.ext.as_deref();
                Some((
                    a.order_id,
                    ext.is_some_and(|x| x.hidden),
                    ext.and_then(|x| x.min_qty),
                ))
            }
            _ => None,
        })
        .collect();
    let stored: Vec<(u64, bool, Option<u64>)> = all
        .orders
        .iter()
        .map(|o| (o.order_id, o.hidden, o.min_qty))
        .collect();
    assert_eq!(stored, accepted);
    let hidden = stored.iter().filter(|o| o.1).count();
    let minimum = stored.iter().filter(|o| o.2.is_some()).count();
    assert!(
        hidden > 5 && minimum > 5,
        "hidden {hidden}, minimum {minimum}"
    );
}

/// A hidden order, one whose minimum was met (it rests) and one whose
/// minimum was not (it expires at once), then, after a restart, trades
/// and a cancel that make the writer read the first two back from the
/// store. Entries one second apart; the entries after the split are
/// returned second.
fn hidden_and_minimum() -> (Vec<Entry>, usize) {
    let mut lines = setup();
    lines.extend([
        place(3, "s1", r#""side":"sell","price":"100","qty":"1""#),
        place(
            2,
            "minq",
            r#""side":"buy","price":"100","qty":"2","min_qty":"0.5""#,
        ),
        place(
            1,
            "hid",
            r#""side":"sell","price":"200","qty":"1","hidden":true"#,
        ),
        place(
            2,
            "minx",
            r#""side":"buy","price":"13","qty":"2","min_qty":"1""#,
        ),
    ]);
    let split = lines.len();
    lines.extend([
        place(3, "b200", r#""side":"buy","price":"200","qty":"0.4""#),
        r#"{"cmd":"cancel","account":2,"client_order_id":"minq"}"#.to_string(),
    ]);
    (apply_lines(&mut Engine::new(), &lines, NS), split)
}

#[test]
fn hidden_orders_and_minimum_quantities_are_kept_and_read_back() {
    on_both("hidden_and_min_qty_kept", |target| {
        let (entries, split) = hidden_and_minimum();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut whole =
            Store::open(&Target::Sqlite(dir.path().join("whole.sqlite"))).expect("open");
        write_in_batches(&mut whole, &entries, 1_000);
        {
            let mut first = Store::open(target).expect("open");
            write_in_batches(&mut first, &entries[..split], 2);
        }
        let mut resumed = Store::open(target).expect("reopen");
        let cached = resumed
            .conn
            .rows(
                &format!("SELECT {ORDER_COLUMNS} FROM orders ORDER BY order_id"),
                &[],
                CachedOrder::read,
            )
            .expect("the writer's read-back");
        let facts: Vec<(bool, Option<u64>)> = cached
            .iter()
            .map(|o| {
                let extra = o.extra.as_deref().cloned().unwrap_or_default();
                (extra.hidden, extra.min_qty)
            })
            .collect();
        assert_eq!(
            facts,
            [
                (false, None),
                (false, Some(U / 2)),
                (true, None),
                (false, Some(U))
            ]
        );
        write_in_batches(&mut resumed, &entries[split..], 2);
        let dump = resumed.dump().expect("dump");
        assert_eq!(dump, whole.dump().expect("dump"));
        assert_hidden_and_min_qty_rows(&dump.orders);
        let json: serde_json::Value =
            serde_json::from_str(&crate::report::orders(&dump.orders).to_json()).expect("JSON");
        let by_id = |id: &str| {
            json.as_array()
                .and_then(|rows| rows.iter().find(|r| r["client_order_id"] == id))
                .cloned()
                .unwrap_or_else(|| panic!("{id} in {json}"))
        };
        assert_eq!(
            (&by_id("hid")["hidden"], &by_id("minq")["min_qty"]),
            (&serde_json::json!(true), &serde_json::json!("0.5"))
        );
        assert_eq!(
            (&by_id("s1")["hidden"], &by_id("s1")["min_qty"]),
            (&serde_json::json!(false), &serde_json::Value::Null)
        );
    });
}

/// The rows of [`hidden_and_minimum`] once every entry is written.
fn assert_hidden_and_min_qty_rows(orders: &[OrderRow]) {
    let row = |id: &str| {
        let o = order(orders, id);
        (o.hidden, o.min_qty, o.status, o.filled_qty)
    };
    let status = String::from;
    assert_eq!(row("s1"), (false, None, status("filled"), U));
    assert_eq!(
        row("minq"),
        (false, Some(U / 2), status("canceled"), U),
        "the minimum met on entry, the rest rested"
    );
    assert_eq!(
        row("hid"),
        (true, None, status("partially_filled"), 4 * U / 10)
    );
    assert_eq!(
        row("minx"),
        (false, Some(U), status("expired"), 0),
        "short of its minimum"
    );
    assert_eq!(row("b200"), (false, None, status("filled"), 4 * U / 10));
}
