//! `exchange serve` against the extreme values of every id and number a
//! route takes (0, 2^63 - 1, 2^63, 2^64 - 1, beyond, negatives, decimals):
//! each is answered 4xx with a JSON error body (404 where an id is in range
//! but names nothing), never 5xx, and none leaves the node unable to serve
//! history or to start again on its data directory.

use exchange_testkit::ws::{authenticated, collect, send};
use exchange_testkit::{limit, Account, Client, Response, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const MAX_ID: &str = "9223372036854775807";
const TWO_63: &str = "9223372036854775808";
const U64_MAX: &str = "18446744073709551615";
const BEYOND_U64: &str = "18446744073709551616";

/// Values of an id that the exchange takes (it may name nothing: 404).
const IN_RANGE_IDS: &[&str] = &["1", MAX_ID];
/// Values it refuses outright, 400.
const OUT_OF_RANGE_IDS: &[&str] = &[TWO_63, U64_MAX, BEYOND_U64];
/// Values that are no id at all, 400.
const NOT_IDS: &[&str] = &["-1", "-9223372036854775808", "1.5", "1e3", "0x10", "%20"];
/// Numbers for query parameters and numeric body fields.
const NUMBERS: &[&str] = &[
    "0", "1", MAX_ID, TWO_63, U64_MAX, BEYOND_U64, "-1", "1.5", "1e3",
];
/// Decimal strings for prices, quantities and amounts.
const DECIMALS: &[&str] = &[
    "0",
    "-1",
    "1e3",
    MAX_ID,
    TWO_63,
    U64_MAX,
    BEYOND_U64,
    "184467440737.09551616",
    "0.000000001",
    "NaN",
];

/// A refusal: 4xx with `{"code": ...}`, never a server error.
fn assert_refused(response: &Response, what: &str) -> u16 {
    assert!(
        (400..500).contains(&response.status),
        "{what}: {} {}",
        response.status,
        response.text()
    );
    let body: Value = serde_json::from_str(&response.text())
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", response.text()));
    assert!(body["code"].is_string(), "{what}: no code in {body}");
    response.status
}

/// An out-of-range id: 400 with the specific code.
fn assert_out_of_range(response: &Response, code: &str, what: &str) {
    assert_refused(response, what);
    response.expect_error(400, code, what);
}

/// Anything but a server error: 2xx is allowed where the value is valid.
fn assert_no_server_error(response: &Response, what: &str) {
    assert!(
        response.status < 500,
        "{what}: {} {}",
        response.status,
        response.text()
    );
}

fn order_routes(api: &Client, account: &Account, id: &str) -> Vec<(String, Response)> {
    let replace = json!({ "qty": "1" }).to_string();
    [
        ("DELETE", format!("/v1/orders/{id}"), String::new()),
        ("GET", format!("/v1/orders/{id}"), String::new()),
        ("POST", format!("/v1/orders/{id}/replace"), replace),
    ]
    .into_iter()
    .map(|(method, path, body)| {
        let response = api.signed(account, method, &path, &body);
        (format!("{method} {path}"), response)
    })
    .collect()
}

fn admin_account_routes(api: &Client, id: &str) -> Vec<(String, Response)> {
    let limits = json!({ "max_open_orders": 10 }).to_string();
    let mmp = json!({ "window_ms": 1000, "max_count": 5 }).to_string();
    let sub = json!({ "account_id": 1 }).to_string();
    let key = json!({ "scopes": ["read"] }).to_string();
    [
        ("POST", format!("/admin/accounts/{id}/keys"), key),
        ("GET", format!("/admin/accounts/{id}/keys"), String::new()),
        ("PUT", format!("/admin/accounts/{id}/risk-limits"), limits),
        (
            "DELETE",
            format!("/admin/accounts/{id}/risk-limits"),
            String::new(),
        ),
        (
            "POST",
            format!("/admin/accounts/{id}/suspend"),
            String::new(),
        ),
        (
            "POST",
            format!("/admin/accounts/{id}/reinstate"),
            String::new(),
        ),
        ("PUT", format!("/admin/accounts/{id}/mmp/BTC-USD"), mmp),
        (
            "DELETE",
            format!("/admin/accounts/{id}/mmp/BTC-USD"),
            String::new(),
        ),
        (
            "POST",
            format!("/admin/accounts/{id}/mmp/BTC-USD/reset"),
            String::new(),
        ),
        ("POST", format!("/admin/accounts/{id}/sub-accounts"), sub),
    ]
    .into_iter()
    .map(|(method, path, body)| {
        let response = api.admin(method, &path, &body);
        (format!("{method} {path}"), response)
    })
    .collect()
}

/// Body fields holding an account id, with `id` written as a JSON number.
fn account_bodies(
    api: &Client,
    account: &Account,
    owner: u64,
    id: &str,
) -> Vec<(String, Response)> {
    let deposit = format!(r#"{{"account_id":{id},"asset":"USD","amount":"1"}}"#);
    let sub = format!(r#"{{"account_id":{id}}}"#);
    let transfer = format!(r#"{{"to_account_id":{id},"asset":"USD","amount":"1"}}"#);
    vec![
        (
            format!("deposit {deposit}"),
            api.admin("POST", "/admin/deposits", &deposit),
        ),
        (
            format!("withdrawal {deposit}"),
            api.admin("POST", "/admin/withdrawals", &deposit),
        ),
        (
            format!("sub-account {sub}"),
            api.admin(
                "POST",
                &format!("/admin/accounts/{owner}/sub-accounts"),
                &sub,
            ),
        ),
        (
            format!("transfer {transfer}"),
            api.signed(account, "POST", "/v1/transfers", &transfer),
        ),
    ]
}

/// Order ids in paths: in range 404, beyond 400, not numbers 400.
fn order_ids(api: &Client, alice: &Account) {
    for id in IN_RANGE_IDS {
        for (what, response) in order_routes(api, alice, id) {
            response.expect_error(404, "unknown_order", &what);
        }
    }
    for id in OUT_OF_RANGE_IDS.iter().chain(&["0"]) {
        for (what, response) in order_routes(api, alice, id) {
            assert_out_of_range(&response, "order_id_out_of_range", &what);
        }
    }
    for id in NOT_IDS {
        for (what, response) in order_routes(api, alice, id) {
            assert_refused(&response, &what);
        }
    }
}

/// Account ids in admin paths and bodies.
fn account_ids(api: &Client, alice: &Account) {
    for id in ["0", "1", MAX_ID] {
        for (what, response) in admin_account_routes(api, id) {
            assert_no_server_error(&response, &what);
        }
        for (what, response) in account_bodies(api, alice, alice.id, id) {
            assert_no_server_error(&response, &what);
        }
    }
    for id in [TWO_63, U64_MAX, BEYOND_U64] {
        for (what, response) in admin_account_routes(api, id) {
            assert_out_of_range(&response, "account_id_out_of_range", &what);
        }
    }
    for id in [TWO_63, U64_MAX] {
        for (what, response) in account_bodies(api, alice, alice.id, id) {
            assert_out_of_range(&response, "account_id_out_of_range", &what);
        }
    }
    for id in ["-1", "1.5", BEYOND_U64, "\"7\""] {
        for (what, response) in account_bodies(api, alice, alice.id, id) {
            assert_refused(&response, &what);
        }
        for (what, response) in admin_account_routes(api, &id.replace('"', "")) {
            if id.contains('-') || id.contains('.') {
                assert_refused(&response, &what);
            }
        }
    }
}

/// Query parameters, order fields and amounts.
fn query_and_order_numbers(api: &Client, alice: &Account) {
    for n in NUMBERS {
        for path in [
            format!("/v1/fills?limit={n}"),
            format!("/v1/orders?status=closed&limit={n}"),
            format!("/v1/markets/BTC-USD/book?depth={n}"),
            format!("/v1/markets/BTC-USD/trades?limit={n}"),
            format!("/v1/markets/BTC-USD/candles?limit={n}"),
            format!("/v1/markets/BTC-USD/candles?start={n}&end={n}"),
        ] {
            let response = api.signed(alice, "GET", &path, "");
            assert_no_server_error(&response, &path);
            if response.status >= 400 {
                assert_refused(&response, &path);
            }
        }
        for field in ["expire_ts", "trailing_bps"] {
            let mut order = limit("buy", "1", "1", "x-num");
            order["type"] = json!("trailing_stop");
            order[field] = serde_json::from_str(n).unwrap_or(json!(n));
            let response = api.signed(alice, "POST", "/v1/orders", &order.to_string());
            assert_refused(&response, &format!("{field} = {n}"));
        }
    }
    for d in DECIMALS {
        for field in ["price", "qty"] {
            let mut order = limit("buy", "1", "1", "x-dec");
            order[field] = json!(d);
            let what = format!("order {field} = {d}");
            assert_refused(
                &api.signed(alice, "POST", "/v1/orders", &order.to_string()),
                &what,
            );
        }
        let transfer = json!({ "to_account_id": alice.id, "asset": "USD", "amount": d });
        let what = format!("transfer amount {d}");
        assert_refused(
            &api.signed(alice, "POST", "/v1/transfers", &transfer.to_string()),
            &what,
        );
        let withdrawal = json!({ "asset": "USD", "amount": d });
        let what = format!("withdrawal amount {d}");
        assert_no_server_error(
            &api.signed(alice, "POST", "/v1/withdrawals", &withdrawal.to_string()),
            &what,
        );
    }
}

/// Numbers and decimals of the admin risk controls.
fn admin_numbers(api: &Client, alice: &Account) {
    // Numbers and decimals of the admin risk controls, on a real account:
    // refused or taken, never a server error, and whatever is taken the
    // store records (history is still served below).
    let id = alice.id;
    for n in NUMBERS {
        let bodies = [
            (
                "PUT",
                "risk-limits",
                format!(r#"{{"max_open_orders":{n}}}"#),
            ),
            (
                "PUT",
                "mmp/BTC-USD",
                format!(r#"{{"window_ms":{n},"max_count":{n}}}"#),
            ),
        ];
        for (method, route, body) in bodies {
            let path = format!("/admin/accounts/{id}/{route}");
            let what = format!("{method} {path} {body}");
            assert_no_server_error(&api.admin(method, &path, &body), &what);
        }
    }
    for d in DECIMALS {
        let bodies = [
            ("risk-limits", json!({ "max_order_qty": d })),
            ("risk-limits", json!({ "max_order_notional": d })),
            ("risk-limits", json!({ "price_band_pct": d })),
            ("mmp/BTC-USD", json!({ "window_ms": 1000, "max_qty": d })),
        ];
        for (route, body) in bodies {
            let path = format!("/admin/accounts/{id}/{route}");
            let what = format!("PUT {path} {body}");
            assert_no_server_error(&api.admin("PUT", &path, &body.to_string()), &what);
        }
    }
    for route in ["risk-limits", "mmp/BTC-USD"] {
        let path = format!("/admin/accounts/{id}/{route}");
        let removed = api.admin("DELETE", &path, "");
        assert_eq!(removed.status, 200, "DELETE {path}: {}", removed.text());
    }
}

/// Key ids in paths.
fn key_ids(api: &Client, alice: &Account) {
    // Key ids are text: a number names no key.
    for n in NUMBERS {
        for (method, path) in [
            ("DELETE", format!("/v1/keys/{n}")),
            ("POST", format!("/v1/keys/{n}/rotate")),
        ] {
            let what = format!("{method} {path}");
            assert_refused(&api.signed(alice, method, &path, ""), &what);
        }
        for (method, path) in [
            ("DELETE", format!("/admin/keys/{n}")),
            ("POST", format!("/admin/keys/{n}/rotate")),
        ] {
            let what = format!("{method} {path}");
            assert_refused(&api.admin(method, &path, ""), &what);
        }
    }
}

/// Order ids in the WebSocket's order entry.
fn ws_ids(api: &Client, alice: &Account) {
    // The WebSocket's order entry takes the same ids.
    let mut socket = authenticated(api, alice, false);
    let ws_ids: Vec<(Value, Option<&str>)> = vec![
        (json!(1), None),
        (json!(9_223_372_036_854_775_807u64), None),
        (json!(0), Some("order_id_out_of_range")),
        (
            json!(9_223_372_036_854_775_808u64),
            Some("order_id_out_of_range"),
        ),
        (json!(u64::MAX), Some("order_id_out_of_range")),
        (json!(-1), None),
        (json!(1.5), None),
    ];
    for (n, (id, code)) in ws_ids.into_iter().enumerate() {
        for kind in ["cancel", "replace"] {
            let request_id = json!(format!("{kind}-{n}"));
            let mut message = json!({ "type": kind, "request_id": request_id, "order_id": id });
            if kind == "replace" {
                message["qty"] = json!("1");
            }
            send(&mut socket, &message);
            let answer = collect(&mut socket, &[&|m: &Value| m["request_id"] == request_id]);
            let error = &answer[0]["error"];
            let status = error["status"].as_u64().unwrap_or_default();
            assert!((400..500).contains(&status), "{message}: {}", answer[0]);
            if let Some(code) = code {
                assert_eq!(error["code"], code, "{message}");
            }
        }
    }
}

#[test]
fn every_route_refuses_ids_and_numbers_beyond_their_range() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();
    let before = api.account_view(&alice);

    order_ids(&api, &alice);
    account_ids(&api, &alice);
    query_and_order_numbers(&api, &alice);
    admin_numbers(&api, &alice);
    key_ids(&api, &alice);
    ws_ids(&api, &alice);

    // Nothing above changed the account, and the node still serves,
    // history included.
    assert_eq!(api.account_view(&alice), before);
    api.assert_healthy("extreme values");
    assert_history_served(&api, &alice, "extreme values");
}

/// The history reads a member makes: both must answer 200.
fn assert_history_served(api: &Client, account: &Account, after: &str) {
    for path in [
        "/v1/orders?status=closed",
        "/v1/fills",
        "/v1/orders?status=all",
    ] {
        let response = api.signed(account, "GET", path, "");
        assert_eq!(
            response.status,
            200,
            "{path} after {after}: {}",
            response.text()
        );
    }
}

#[test]
fn an_id_beyond_range_neither_wedges_history_nor_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let api = server.api;
    let alice = api.funded_account();
    let bob = api.funded_account();
    api.place(&alice, &limit("sell", "60000", "0.5", "a-1"));
    api.place(&bob, &limit("buy", "60000", "0.5", "b-1"));

    let mut answers = Vec::new();
    for id in [TWO_63, U64_MAX] {
        answers.push(api.signed(&alice, "DELETE", &format!("/v1/orders/{id}"), ""));
        answers.push(api.signed(
            &alice,
            "POST",
            &format!("/v1/orders/{id}/replace"),
            r#"{"qty":"1"}"#,
        ));
    }
    let mut socket = authenticated(&api, &alice, false);
    send(
        &mut socket,
        &json!({ "type": "cancel", "request_id": 1, "order_id": 9_223_372_036_854_775_808u64 }),
    );
    let ws_answer = collect(&mut socket, &[&|m: &Value| m["request_id"] == 1]);
    drop(socket);

    // The wedge first: history is served after the attempts...
    assert_history_served(&api, &alice, "ids beyond range");
    // ...which were refused at the edge.
    for answer in &answers {
        answer.expect_error(400, "order_id_out_of_range", "an order id >= 2^63");
    }
    assert_eq!(
        ws_answer[0]["error"]["code"], "order_id_out_of_range",
        "{}",
        ws_answer[0]
    );

    // A restart on the same data directory answers at once and serves
    // history and trading.
    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "stop: {status}");
    let server = Server::start(EXCHANGE, &data);
    let api = server.api;
    api.assert_healthy("restart");
    assert_history_served(&api, &alice, "restart");
    let fills = api.read(&alice, "/v1/fills");
    assert_eq!(fills["fills"].as_array().map(Vec::len), Some(1), "{fills}");
    api.place(&alice, &limit("sell", "61000", "0.1", "a-2"));
}

fn reporting_store(data: &std::path::Path) -> rusqlite::Connection {
    let store = rusqlite::Connection::open(data.join("reporting.sqlite")).expect("open the store");
    store
        .busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    store
}

#[test]
fn an_entry_the_store_cannot_write_is_skipped_recorded_and_alarmed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let api = server.api;
    let alice = api.funded_account();
    api.place(&alice, &limit("buy", "59000", "0.1", "a-1"));
    // The store refuses one kind of entry whatever is retried, as it
    // refused an id beyond its range before.
    reporting_store(&data)
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON audit WHEN NEW.command = 'mass_cancel' \
             BEGIN SELECT RAISE(ABORT, 'poisoned entry'); END;",
        )
        .expect("trigger");
    let canceled = api.signed(&alice, "DELETE", "/v1/orders?symbol=BTC-USD", "");
    assert_eq!(canceled.status, 200, "{}", canceled.text());
    let placed = api.place(&alice, &limit("buy", "59000", "0.2", "a-2"));
    let id = placed["order_id"].as_u64().expect("order id");
    let canceled = api.signed(&alice, "DELETE", &format!("/v1/orders/{id}"), "");
    assert_eq!(canceled.status, 200, "{}", canceled.text());

    // Skipped, not retried: history is served, and the entries after the
    // skipped one are in (a-2 closed). What the store lacks is the skipped
    // entry's effect: it never saw a-1 canceled.
    assert_history_served(&api, &alice, "an unwritable entry");
    let closed = api.read(&alice, "/v1/orders?status=closed");
    let names: Vec<&str> = closed["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .filter_map(|o| o["client_order_id"].as_str())
        .collect();
    assert_eq!(names, ["a-2"], "{closed}");
    assert_eq!(api.metric("exchange_reporting_dead_letters"), 1);
    let status = api.admin("GET", "/admin/status", "").json();
    assert_eq!(status["reporting_dead_letters"], 1, "{status}");
    let (index, error): (i64, String) = reporting_store(&data)
        .query_row("SELECT log_index, error FROM dead_letters", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .expect("the dead letter");
    assert!(
        index > 0 && error.contains("poisoned entry"),
        "{index} {error}"
    );

    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "stop: {status}");
    let server = Server::start(EXCHANGE, &data);
    server.api.assert_healthy("restart");
    assert_history_served(&server.api, &alice, "restart");
    assert_eq!(server.api.metric("exchange_reporting_dead_letters"), 1);
}

#[test]
fn a_store_that_cannot_catch_up_holds_up_neither_health_nor_trading() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let api = server.api;
    let alice = api.funded_account();
    let bob = api.funded_account();
    // Another writer holds the store: the reporter falls behind.
    let mut holder = reporting_store(&data);
    let lock = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .expect("hold the store's write lock");
    api.place(&alice, &limit("sell", "60000", "0.5", "a-1"));
    api.place(&bob, &limit("buy", "60000", "0.5", "b-1"));
    // Acknowledged, so in the journal: the store is behind it.
    server.kill();

    // Still locked: the restart must answer and trade all the same.
    let server = Server::start(EXCHANGE, &data);
    let api = server.api;
    api.assert_healthy("restart with the store locked");
    api.place(&alice, &limit("sell", "61000", "0.1", "a-2"));
    let behind = api.signed(&alice, "GET", "/v1/fills", "");
    behind.expect_error(503, "reporting_behind", "fills while the store is locked");

    // Released: the store catches up and history is served.
    drop(lock);
    exchange_testkit::wait_until("the store to catch up", || {
        api.signed(&alice, "GET", "/v1/fills", "").status == 200
    });
    let fills = api.read(&alice, "/v1/fills");
    assert_eq!(fills["fills"].as_array().map(Vec::len), Some(1), "{fills}");
}

#[test]
fn fix_refuses_an_order_id_beyond_range_and_names_in_range_ones() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let fix_port = exchange_testkit::free_port();
    let config = tmp.path().join("exchange.toml");
    std::fs::write(
        &config,
        format!(
            "[fix]\nlisten = \"127.0.0.1:{fix_port}\"\n\n[[fix.sessions]]\n\
             sender_comp_id = \"TRADER\"\npassword = \"pw-TRADER\"\naccount = 1\n"
        ),
    )
    .expect("write the config");
    let data = tmp.path().join("data");
    let mut server = Server::start_with(EXCHANGE, &data, Some(&config));
    let alice = server.api.funded_account();
    assert_eq!(alice.id, 1, "the session's account");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let fix_addr = std::net::SocketAddr::from(([127, 0, 0, 1], fix_port));
    runtime.block_on(async {
        let mut fix = exchange_testkit::fix::Client::logon(fix_addr, "TRADER").await;
        let now = exchange_fix::time::format(exchange_fix::time::now_ns());
        let cases = [
            (MAX_ID, "1"),
            (TWO_63, "99"),
            (U64_MAX, "99"),
            (BEYOND_U64, "99"),
        ];
        for (n, (id, reason)) in cases.into_iter().enumerate() {
            for (kind, extra) in [("F", ""), ("G", "40=2|38=1|44=60000|21=1|")] {
                let cl_ord_id = format!("x{kind}{n}");
                let body =
                    format!("37={id}|41=nothing|11={cl_ord_id}|55=BTC-USD|54=1|60={now}|{extra}");
                fix.send(kind, &body).await;
                let answer = fix
                    .recv_until(|m| m.text(35) == Some("9") && m.text(11) == Some(&cl_ord_id))
                    .await;
                assert_eq!(answer.text(102), Some(reason), "{kind} 37={id}");
            }
        }
    });

    assert_history_served(&server.api, &alice, "FIX ids beyond range");
    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "stop: {status}");
    let server = Server::start_with(EXCHANGE, &data, Some(&config));
    server.api.assert_healthy("restart");
    assert_history_served(&server.api, &alice, "restart");
}
