//! Stop and iceberg orders on the real `exchange serve`: a stop placed
//! over signed REST is triggered by trades made over FIX sessions, its
//! account's WebSocket private stream gets the trigger and then the fill,
//! the FIX drop copy of the account gets both (ExecType L, then F), and
//! the reporting store the server writes has the stop with its stop price,
//! its trigger and its fill. An iceberg placed over REST shows only its
//! display quantity in the public book.

use std::path::{Path, PathBuf};
use std::time::Instant;

use exchange_fix::message::Message;
use exchange_reporting::{Store, Target, SQLITE_FILE};
use exchange_testkit::fix::Client as FixClient;
use exchange_testkit::{free_port, units, ws, Account, Server, DEADLINE};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");
const SYMBOL: &str = "STK-USD";
/// Units per whole (1e-8).
const U: u64 = 100_000_000;

/// FIX sessions: two order-entry sessions trading for accounts 2 and 3,
/// and a drop copy of account 1 (the stop's).
fn config(dir: &Path, fix_port: u16) -> PathBuf {
    let path = dir.join("exchange.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[fix]
listen = "127.0.0.1:{fix_port}"

[[fix.sessions]]
sender_comp_id = "SELLER"
password = "pw-SELLER"
account = 2

[[fix.sessions]]
sender_comp_id = "BUYER"
password = "pw-BUYER"
account = 3

[[fix.sessions]]
sender_comp_id = "DROPCOPY"
password = "pw-DROPCOPY"
drop_copy_accounts = [1]
"#
        ),
    )
    .expect("write the config");
    path
}

/// Lists the test's instrument through the admin API.
fn list_instrument(server: &Server) {
    let body = json!({ "symbol": SYMBOL, "base": "STK", "quote": "USD", "tick_size": "0.01",
                       "lot_size": "0.01", "price_collar_pct": "10", "reference_price": "100",
                       "maker_fee_bps": 0, "taker_fee_bps": 0 });
    let listed = server
        .api
        .admin("POST", "/admin/instruments", &body.to_string());
    assert_eq!(listed.status, 201, "{}", listed.text());
}

/// Accounts 1, 2 and 3 (the ids the FIX sessions name), funded.
fn accounts(server: &Server) -> Vec<Account> {
    (1..=3)
        .map(|id| {
            let account = server.api.create_account();
            assert_eq!(account.id, id, "accounts are numbered from 1");
            server.api.deposit(&account, "USD", "1000000");
            server.api.deposit(&account, "STK", "1000");
            account
        })
        .collect()
}

fn fix_order(cl_ord_id: &str, side: &str, qty: &str, price: &str) -> String {
    let now = exchange_fix::time::format(exchange_fix::time::now_ns());
    format!("11={cl_ord_id}|55={SYMBOL}|54={side}|38={qty}|40=2|44={price}|59=1|60={now}|")
}

fn is_report(message: &Message, cl_ord_id: &str, exec_type: &str) -> bool {
    message.text(35) == Some("8")
        && message.text(11) == Some(cl_ord_id)
        && message.text(150) == Some(exec_type)
}

/// Reads the private stream until `done` says enough; returns every
/// message of it seen.
fn read_until(socket: &mut ws::Socket, mut done: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
    let start = Instant::now();
    let mut seen = Vec::new();
    while !done(&seen) {
        assert!(
            start.elapsed() < DEADLINE,
            "the stream stopped at {seen:#?}"
        );
        let message = ws::next(socket).unwrap_or_else(|| panic!("socket closed after {seen:#?}"));
        seen.push(message);
    }
    seen
}

#[test]
fn a_stop_placed_over_rest_triggers_on_fix_trades_and_is_reported_everywhere() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let fix_port = free_port();
    let config = config(tmp.path(), fix_port);
    let data = tmp.path().join("data");
    let mut server = Server::start_with(EXCHANGE, &data, Some(&config));
    list_instrument(&server);
    let accounts = accounts(&server);
    let owner = &accounts[0];

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fix_addr = std::net::SocketAddr::from(([127, 0, 0, 1], fix_port));
    let (mut seller, mut buyer, mut drop_copy) = runtime.block_on(async {
        (
            FixClient::logon(fix_addr, "SELLER").await,
            FixClient::logon(fix_addr, "BUYER").await,
            FixClient::logon(fix_addr, "DROPCOPY").await,
        )
    });
    let mut socket = ws::authenticated(&server.api, owner, false);

    // The stop: sell 1 once the last trade is at 98 or below.
    let stop = server.api.place(
        owner,
        &json!({ "symbol": SYMBOL, "side": "sell", "type": "stop", "stop_price": "98",
                 "qty": "1", "client_order_id": "stop-1" }),
    );
    let stop_id = stop["order_id"].as_u64().expect("order_id");
    assert_eq!(stop["status"], "new", "{stop}");

    fix_trades_trigger_the_stop(&runtime, &mut buyer, &mut seller);

    the_stream_shows_the_trigger_then_the_fill(&mut socket, stop_id);

    the_drop_copy_reports_the_stop(&runtime, &mut drop_copy);

    the_history_routes_show_the_stop(&server, owner, stop_id);

    an_iceberg_shows_its_display_quantity_only(&server, owner);

    // The store, once the server has written everything and stopped.
    let last = server.api.metric("exchange_applied_index");
    exchange_testkit::wait_until("the store to reach the core", || {
        server.api.metric("exchange_reporting_position") >= last
    });
    server.stop_with(libc::SIGTERM);
    the_store_holds_the_stop_and_the_iceberg(&data, owner.id, stop_id);

    // `exchange report orders` lists them with those columns.
    report_orders_lists_the_stop_and_the_iceberg(&data);
}

/// Over FIX: a bid at 97 for the stop to sell into, then two orders
/// crossing at 98.
fn fix_trades_trigger_the_stop(
    runtime: &tokio::runtime::Runtime,
    buyer: &mut FixClient,
    seller: &mut FixClient,
) {
    runtime.block_on(async {
        buyer.send("D", &fix_order("bid-97", "1", "2", "97")).await;
        buyer.recv_until(|m| is_report(m, "bid-97", "0")).await;
        seller
            .send("D", &fix_order("ask-98", "2", "0.5", "98"))
            .await;
        seller.recv_until(|m| is_report(m, "ask-98", "0")).await;
        buyer
            .send("D", &fix_order("buy-98", "1", "0.5", "98"))
            .await;
        let filled = buyer.recv_until(|m| is_report(m, "buy-98", "F")).await;
        assert_eq!(filled.text(31), Some("98"));
        // The bid at 97 is then hit by the triggered stop.
        let hit = buyer.recv_until(|m| is_report(m, "bid-97", "F")).await;
        assert_eq!((hit.text(31), hit.text(32)), (Some("97"), Some("1")));
    });
}

fn the_stream_shows_the_trigger_then_the_fill(socket: &mut ws::Socket, stop_id: u64) {
    // The stop's account sees the trigger, then the stop's fill.
    let stream = read_until(socket, |seen| {
        seen.iter()
            .any(|m| m["type"] == "fill" && m["order_id"] == stop_id)
    });
    let position = |wanted: &dyn Fn(&Value) -> bool| {
        stream
            .iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("missing in {stream:#?}"))
    };
    let accepted = position(&|m| m["event"] == "accepted" && m["order_id"] == stop_id);
    let triggered = position(&|m| m["event"] == "triggered" && m["order_id"] == stop_id);
    let fill = position(&|m| m["type"] == "fill" && m["order_id"] == stop_id);
    assert!(accepted < triggered && triggered < fill, "{stream:#?}");
    assert_eq!(stream[accepted]["stop_price"], "98");
    assert_eq!(
        (
            &stream[triggered]["stop_price"],
            &stream[triggered]["last_price"]
        ),
        (&json!("98"), &json!("98"))
    );
    assert_eq!(
        units(stream[fill]["price"].as_str().expect("price")),
        units("97")
    );
    assert_eq!(
        units(stream[fill]["qty"].as_str().expect("qty")),
        units("1")
    );
}

fn the_drop_copy_reports_the_stop(runtime: &tokio::runtime::Runtime, drop_copy: &mut FixClient) {
    // The drop copy of the account: acceptance with StopPx, trigger, fill.
    runtime.block_on(async {
        let new = drop_copy.recv_until(|m| is_report(m, "stop-1", "0")).await;
        assert_eq!(new.text(99), Some("98"));
        let trigger = drop_copy.recv_until(|m| is_report(m, "stop-1", "L")).await;
        assert_eq!(
            (trigger.text(99), trigger.text(39)),
            (Some("98"), Some("0"))
        );
        let fill = drop_copy.recv_until(|m| is_report(m, "stop-1", "F")).await;
        assert_eq!((fill.text(31), fill.text(39)), (Some("97"), Some("2")));
    });
}

fn the_history_routes_show_the_stop(server: &Server, owner: &Account, stop_id: u64) {
    // The history routes, read from the reporting store.
    let fills = server.api.read(owner, "/v1/fills?limit=10");
    let fills = fills["fills"].as_array().expect("fills").clone();
    assert!(
        fills.iter().any(|f| f["order_id"] == stop_id
            && units(f["price"].as_str().unwrap_or("0")) == units("97")),
        "{fills:#?}"
    );
    let closed = server.api.read(owner, "/v1/orders?status=closed");
    let listed = closed["orders"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["order_id"] == stop_id).cloned())
        .unwrap_or_else(|| panic!("the stop among closed orders: {closed}"));
    assert_eq!(listed["status"], "filled", "{listed}");
    assert_eq!(
        (&listed["stop_price"], &listed["triggered_price"]),
        (&json!("98"), &json!("98")),
        "{listed}"
    );
    assert!(listed["triggered_ts"].as_u64().is_some(), "{listed}");
}

fn an_iceberg_shows_its_display_quantity_only(server: &Server, owner: &Account) {
    // An iceberg shows its display quantity only.
    server.api.place(
        owner,
        &json!({ "symbol": SYMBOL, "side": "buy", "price": "90", "qty": "5",
                 "display_qty": "0.5", "client_order_id": "ice-1" }),
    );
    let book = server.api.get(&format!("/v1/markets/{SYMBOL}/book"));
    assert_eq!(book.status, 200, "{}", book.text());
    let book = book.json();
    let level = book["bids"]
        .as_array()
        .and_then(|bids| {
            bids.iter()
                .find(|l| units(l[0].as_str().unwrap_or("0")) == units("90"))
                .cloned()
        })
        .unwrap_or_else(|| panic!("a bid at 90: {book}"));
    assert_eq!(
        units(level[1].as_str().expect("qty")),
        units("0.5"),
        "{book}"
    );

    let open = server.api.read(owner, "/v1/orders");
    let iceberg = open["orders"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["client_order_id"] == "ice-1").cloned())
        .unwrap_or_else(|| panic!("the iceberg among open orders: {open}"));
    assert_eq!(
        (&iceberg["display_qty"], iceberg.get("stop_price")),
        (&json!("0.5"), None),
        "{iceberg}"
    );
}

fn the_store_holds_the_stop_and_the_iceberg(data: &Path, owner: u64, stop_id: u64) {
    let mut store = Store::open(&Target::Sqlite(data.join(SQLITE_FILE))).expect("the store");
    let row = store.order(stop_id).expect("read").expect("the stop's row");
    assert_eq!(
        (row.order_type.as_str(), row.status.as_str(), row.stop_price),
        ("stop", "filled", Some(98 * U))
    );
    assert_eq!((row.filled_qty, row.triggered_price), (U, Some(98 * U)));
    assert!(row.triggered_ts.is_some_and(|ts| ts >= row.created_ts));
    let store_fills = store.fills(Some(owner), 0, u64::MAX).expect("fills");
    assert!(
        store_fills
            .iter()
            .any(|f| f.order_id == stop_id && f.price == 97 * U && f.qty == U),
        "{store_fills:#?}"
    );
    let orders = store.all_orders().expect("orders");
    let iceberg = orders
        .iter()
        .find(|o| o.client_order_id == "ice-1")
        .expect("the iceberg's row");
    assert_eq!((iceberg.display_qty, iceberg.qty), (Some(U / 2), 5 * U));
    drop(store);
}

fn report_orders_lists_the_stop_and_the_iceberg(data: &Path) {
    let data_arg = data.to_str().expect("a UTF-8 path");
    let out = exchange_testkit::run(
        EXCHANGE,
        &[
            "report",
            "orders",
            "--data-dir",
            data_arg,
            "--account",
            "1",
            "--format",
            "json",
        ],
        None,
    );
    let listed: Value =
        serde_json::from_str(&exchange_testkit::assert_success(&out, "report")).expect("JSON rows");
    let rows = listed.as_array().expect("rows");
    let row = |id: &str| {
        rows.iter()
            .find(|r| r["client_order_id"] == id)
            .unwrap_or_else(|| panic!("{id} in {listed:#}"))
    };
    let stop = row("stop-1");
    assert_eq!(
        (
            &stop["type"],
            &stop["stop_price"],
            &stop["triggered_price"],
            &stop["status"]
        ),
        (&json!("stop"), &json!("98"), &json!("98"), &json!("filled"))
    );
    assert!(stop["triggered_time"].is_string(), "{stop}");
    let iceberg = row("ice-1");
    assert_eq!(
        (&iceberg["display_qty"], &iceberg["stop_price"]),
        (&json!("0.5"), &Value::Null)
    );
}
