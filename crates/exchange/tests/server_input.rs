//! `exchange serve` against bad input: every malformed or unacceptable
//! request gets its documented status and code (docs/server.md, "Errors"),
//! changes nothing, and the server keeps serving.

use exchange_testkit::{limit, send_raw, signature_headers, unix_now_ms, Account, Client, Server};
use serde_json::json;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Posts `body` as an order and checks the refusal, then that the server
/// is still healthy.
fn refused_order(api: &Client, account: &Account, body: &str, status: u16, code: &str) {
    let response = api.signed(account, "POST", "/v1/orders", body);
    response.expect_error(status, code, body);
    api.assert_healthy(body);
}

/// Bodies a placement refuses before the core sees them, with the code
/// of each.
const MALFORMED_BODIES: &[(&str, &str)] = &[
    (r#"{"symbol":"BTC-USD","side":"buy""#, "malformed_json"),
    ("not json at all", "malformed_json"),
    (r#"["BTC-USD","buy"]"#, "malformed_json"),
    ("", "malformed_json"),
    (
        r#"{"symbol":1,"side":"buy","price":"60000","qty":"1"}"#,
        "invalid_type",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"1","post_only":"yes"}"#,
        "invalid_type",
    ),
    // A number where a decimal string belongs is refused, not rounded.
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":0.5}"#,
        "invalid_type",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":60000,"qty":"0.5"}"#,
        "invalid_type",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"1","pirce":"1"}"#,
        "unknown_field",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000"}"#,
        "missing_field",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"1","qty":"2"}"#,
        "duplicate_field",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"up","price":"60000","qty":"1"}"#,
        "invalid_value",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","tif":"forever","price":"60000","qty":"1"}"#,
        "invalid_value",
    ),
    (
        concat!(
            r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"1","#,
            r#""client_order_id":"has space"}"#
        ),
        "invalid_value",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"1e2"}"#,
        "invalid_decimal",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"six","qty":"1"}"#,
        "invalid_decimal",
    ),
    (
        r#"{"symbol":"BTC-USD","side":"buy","price":"60000","qty":"+1"}"#,
        "invalid_decimal",
    ),
];

fn path_and_query_errors(api: &Client, account: &Account) {
    // Path and query parameters are checked too.
    let bad_path = api.signed(account, "GET", "/v1/orders/not-a-number", "");
    bad_path.expect_error(400, "invalid_path", "non-numeric order id");
    let bad_query = api.signed(account, "GET", "/v1/orders?state=open", "");
    bad_query.expect_error(400, "invalid_query", "unknown query parameter");
    let bad_status = api.signed(account, "GET", "/v1/orders?status=sometimes", "");
    bad_status.expect_error(400, "invalid_query", "unknown status filter");
    api.get("/v1/nowhere")
        .expect_error(404, "not_found", "unknown route");
    api.request("PUT", "/v1/orders", &[], b"{}").expect_error(
        405,
        "method_not_allowed",
        "PUT /v1/orders",
    );
}

#[test]
fn malformed_requests_get_their_specific_400_codes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let account = api.funded_account();
    let before = api.account_view(&account);

    for (body, code) in MALFORMED_BODIES {
        refused_order(&api, &account, body, 400, code);
    }

    path_and_query_errors(&api, &account);
    api.assert_healthy("path and query errors");

    assert_eq!(
        api.account_view(&account),
        before,
        "refused requests changed the account"
    );
}

/// A syntactically valid body whose enum field (`side`, `type`, `tif`,
/// `stp`) holds a number or a boolean is a wrong type, not malformed JSON.
#[test]
fn wrong_type_in_an_enum_field_is_invalid_type() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let account = api.funded_account();
    let cases = [
        r#"{"symbol":"BTC-USD","side":1,"price":"60000","qty":"1"}"#,
        r#"{"symbol":"BTC-USD","side":"buy","type":true,"price":"60000","qty":"1"}"#,
        r#"{"symbol":"BTC-USD","side":"buy","tif":5,"price":"60000","qty":"1"}"#,
    ];
    // Every case is tried before failing, so the report names them all.
    let mut wrong = Vec::new();
    for body in cases {
        let response = api.signed(&account, "POST", "/v1/orders", body);
        if (response.status, response.code().as_str()) != (400, "invalid_type") {
            wrong.push(format!("{body} -> {} {}", response.status, response.text()));
        }
        api.assert_healthy(body);
    }
    assert!(
        wrong.is_empty(),
        "expected 400 invalid_type:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn values_the_core_refuses_get_422_with_its_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let account = api.funded_account();
    let before = api.account_view(&account);

    let order = |symbol: &str, price: &str, qty: &str| {
        json!({ "symbol": symbol, "side": "buy", "price": price, "qty": qty }).to_string()
    };
    let cases = [
        (order("XXX-USD", "60000", "0.01"), "unknown_instrument"),
        (order("BTC-USD", "60000.001", "0.01"), "price_not_on_tick"),
        (order("BTC-USD", "60000", "0.00001"), "quantity_not_on_lot"),
        (order("BTC-USD", "60000", "-1"), "invalid_quantity"),
        (order("BTC-USD", "60000", "0"), "invalid_quantity"),
        (order("BTC-USD", "-60000", "0.01"), "invalid_price"),
        (order("BTC-USD", "90000", "0.01"), "price_outside_collar"),
        (order("BTC-USD", "60000", "100000"), "insufficient_funds"),
    ];
    for (body, code) in &cases {
        refused_order(&api, &account, body, 422, code);
    }
    let market_with_price =
        json!({ "symbol": "BTC-USD", "side": "buy", "type": "market", "price": "1", "qty": "1" });
    refused_order(
        &api,
        &account,
        &market_with_price.to_string(),
        422,
        "price_not_allowed",
    );

    // Admin routes refuse bad amounts and unknown accounts the same way.
    let deposit = |account_id: u64, amount: &str| {
        let body =
            json!({ "account_id": account_id, "asset": "USD", "amount": amount }).to_string();
        api.admin("POST", "/admin/deposits", &body)
    };
    deposit(999, "10").expect_error(404, "unknown_account", "deposit to an unknown account");
    deposit(account.id, "-10").expect_error(422, "invalid_amount", "negative deposit");
    deposit(account.id, "ten").expect_error(400, "invalid_decimal", "deposit of a word");
    let withdraw =
        json!({ "account_id": account.id, "asset": "USD", "amount": "1000000000" }).to_string();
    api.admin("POST", "/admin/withdrawals", &withdraw)
        .expect_error(422, "insufficient_funds", "overdraft");
    api.assert_healthy("admin refusals");

    assert_eq!(
        api.account_view(&account),
        before,
        "refused orders changed the account"
    );
    // The refusals did not wedge anything: a good order still goes in.
    let placed = api.place(&account, &limit("buy", "59000", "0.01", "after-refusals"));
    assert_eq!(placed["status"], "new");
}

#[test]
fn bodies_over_the_limit_are_413_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let account = api.funded_account();

    // A syntactically valid order padded past max_body_bytes (16 KiB).
    let padding = " ".repeat(20 * 1024);
    let huge =
        format!(r#"{{"symbol":"BTC-USD","side":"buy","price":"59000","qty":"0.01"{padding}}}"#);
    let response = api.signed(&account, "POST", "/v1/orders", &huge);
    response.expect_error(413, "body_too_large", "a 20 KiB order");
    api.assert_healthy("a declared oversized body");

    // Without a Content-Length the server must count as it reads.
    let headers = signature_headers(
        &account,
        unix_now_ms(),
        "POST",
        "/v1/orders",
        huge.as_bytes(),
    );
    let mut request =
        String::from("POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (name, value) in &headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    for chunk in huge.as_bytes().chunks(4096) {
        request.push_str(&format!(
            "{:x}\r\n{}\r\n",
            chunk.len(),
            String::from_utf8_lossy(chunk)
        ));
    }
    request.push_str("0\r\n\r\n");
    let chunked = send_raw(api.port, request.as_bytes()).expect("chunked request");
    chunked.expect_error(413, "body_too_large", "a 20 KiB chunked order");
    api.assert_healthy("a chunked oversized body");

    let admin_huge = format!(
        r#"{{"account_id":{},"asset":"USD","amount":"1"{padding}}}"#,
        account.id
    );
    api.admin("POST", "/admin/deposits", &admin_huge)
        .expect_error(413, "body_too_large", "a 20 KiB deposit");
    api.assert_healthy("an oversized admin body");

    let open = api.signed(&account, "GET", "/v1/orders?status=all", "");
    assert_eq!(
        open.json()["orders"],
        json!([]),
        "an oversized order was placed"
    );
    let placed = api.place(&account, &limit("buy", "59000", "0.01", "small"));
    assert_eq!(placed["client_order_id"], "small");
}
