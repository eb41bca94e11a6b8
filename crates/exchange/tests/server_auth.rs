//! `exchange serve` refuses every request it cannot attribute: missing or
//! wrong signatures, stale timestamps, unknown keys, another account's
//! orders, admin routes without the right token. Each refusal has the
//! documented status and code and changes nothing.

use exchange_testkit::{
    limit, sign, signature_headers, unix_now_ms, Account, Client, Server, ADMIN_TOKEN,
};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// What both accounts and the market look like, for before/after checks.
fn world(api: &Client, accounts: &[&Account]) -> Value {
    let views: Vec<Value> = accounts.iter().map(|a| api.account_view(a)).collect();
    let book = api.get("/v1/markets/BTC-USD/book").json();
    // The book's `sequence` counts events, and a command the core refuses
    // still emits its `rejected` event: only the levels must not move.
    json!({
        "accounts": views,
        "instruments": api.get("/v1/instruments").json(),
        "bids": book["bids"],
        "asks": book["asks"],
    })
}

#[test]
fn unsigned_and_badly_signed_requests_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();
    let bob = api.funded_account();
    let resting = api.place(&alice, &limit("buy", "59000", "0.5", "alice-1"));
    let before = world(&api, &[&alice, &bob]);

    let order = limit("buy", "59500", "0.1", "forged").to_string();
    let body = order.as_bytes();
    let good = signature_headers(&alice, unix_now_ms(), "POST", "/v1/orders", body);
    malformed_or_foreign_credentials_are_refused(&api, &alice, &bob, body, &good);
    a_signature_does_not_carry_over(&api, &alice, &order, &good, &resting);

    assert_eq!(
        world(&api, &[&alice, &bob]),
        before,
        "a refused request changed the state"
    );
}

/// Missing, malformed, stale, unknown or mismatched credentials on an
/// otherwise good signed placement.
fn malformed_or_foreign_credentials_are_refused(
    api: &Client,
    alice: &Account,
    bob: &Account,
    body: &[u8],
    good: &[(&'static str, String)],
) {
    let without = |skip: &str| -> Vec<(&str, String)> {
        good.iter().filter(|(n, _)| *n != skip).cloned().collect()
    };
    let with = |name: &str, value: String| -> Vec<(&str, String)> {
        good.iter()
            .map(|(n, v)| (*n, if *n == name { value.clone() } else { v.clone() }))
            .collect()
    };
    let post = |headers: &[(&str, String)]| api.request("POST", "/v1/orders", headers, body);

    for header in ["EX-ACCESS-KEY", "EX-ACCESS-TIMESTAMP", "EX-ACCESS-SIGN"] {
        post(&without(header)).expect_error(
            401,
            "missing_credentials",
            &format!("without {header}"),
        );
    }
    post(&[]).expect_error(401, "missing_credentials", "no headers at all");
    post(&with("EX-ACCESS-TIMESTAMP", "soon".into())).expect_error(
        401,
        "invalid_timestamp",
        "a word",
    );
    post(&with("EX-ACCESS-TIMESTAMP", "1.5e9".into())).expect_error(
        401,
        "invalid_timestamp",
        "an exponent",
    );

    // Correctly signed but too old or too far ahead (window: 5 s back, 1 s ahead).
    for (what, ts) in [
        ("stale", unix_now_ms() - 120_000),
        ("future", unix_now_ms() + 120_000),
    ] {
        let headers = signature_headers(alice, ts, "POST", "/v1/orders", body);
        post(&headers).expect_error(401, "stale_timestamp", what);
    }

    post(&with("EX-ACCESS-KEY", "0".repeat(32))).expect_error(
        401,
        "invalid_api_key",
        "unknown key",
    );
    post(&with("EX-ACCESS-SIGN", "0".repeat(64))).expect_error(
        401,
        "invalid_signature",
        "zero signature",
    );
    post(&with("EX-ACCESS-SIGN", "not hex".into())).expect_error(
        401,
        "invalid_signature",
        "non-hex signature",
    );
    // Bob's key with a signature made with Alice's secret.
    post(&with("EX-ACCESS-KEY", bob.key.clone())).expect_error(
        401,
        "invalid_signature",
        "key/secret mismatch",
    );
}

/// A valid signature does not carry over to another body, path or method.
fn a_signature_does_not_carry_over(
    api: &Client,
    alice: &Account,
    order: &str,
    good: &[(&'static str, String)],
    resting: &Value,
) {
    let with = |name: &str, value: String| -> Vec<(&str, String)> {
        good.iter()
            .map(|(n, v)| (*n, if *n == name { value.clone() } else { v.clone() }))
            .collect()
    };
    let tampered = order.replace("0.1", "0.2");
    api.request("POST", "/v1/orders", good, tampered.as_bytes())
        .expect_error(401, "invalid_signature", "body changed after signing");
    let ts = good
        .iter()
        .find(|(n, _)| *n == "EX-ACCESS-TIMESTAMP")
        .map(|(_, v)| v.clone())
        .expect("timestamp");
    let signed_for_get = sign(&alice.secret, &ts, "GET", "/v1/orders", b"");
    let replayed = with("EX-ACCESS-SIGN", signed_for_get);
    api.request("GET", "/v1/orders?status=all", &replayed, b"")
        .expect_error(401, "invalid_signature", "signature of another path");
    api.request("DELETE", "/v1/orders", &replayed, b"")
        .expect_error(401, "invalid_signature", "signature of another method");
    let unsigned_cancel = api.request(
        "DELETE",
        &format!("/v1/orders/{}", resting["order_id"]),
        &[],
        b"",
    );
    unsigned_cancel.expect_error(401, "missing_credentials", "unsigned cancel");
}

#[test]
fn another_accounts_orders_look_like_orders_that_do_not_exist() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();
    let bob = api.funded_account();
    let resting = api.place(&alice, &limit("sell", "61000", "0.5", "alice-ask"));
    let id = resting["order_id"].as_u64().expect("order id");
    let before = world(&api, &[&alice, &bob]);

    let missing = api.signed(&bob, "GET", "/v1/orders/999999", "");
    missing.expect_error(404, "unknown_order", "an order that does not exist");
    let cases = [
        ("GET", format!("/v1/orders/{id}"), String::new()),
        ("DELETE", format!("/v1/orders/{id}"), String::new()),
        (
            "DELETE",
            "/v1/orders/by-client-id/alice-ask".to_owned(),
            String::new(),
        ),
        (
            "POST",
            format!("/v1/orders/{id}/replace"),
            json!({ "price": "60500" }).to_string(),
        ),
    ];
    for (method, path, body) in &cases {
        let response = api.signed(&bob, method, path, body);
        response.expect_error(404, "unknown_order", &format!("Bob: {method} {path}"));
        assert_eq!(
            response.body, missing.body,
            "{method} {path} answers unlike a missing order"
        );
    }
    // Bob's own lists do not show Alice's order, and his mass cancel
    // leaves it alone.
    let listed = api.read(&bob, "/v1/orders?status=all");
    assert_eq!(listed["orders"], json!([]));
    let mass = api.signed(&bob, "DELETE", "/v1/orders", "");
    assert_eq!(
        (mass.status, mass.json()),
        (200, json!({ "canceled": [] })),
        "Bob's mass cancel"
    );

    assert_eq!(
        world(&api, &[&alice, &bob]),
        before,
        "Bob changed Alice's order"
    );
    let still = api
        .signed(&alice, "GET", &format!("/v1/orders/{id}"), "")
        .json();
    assert_eq!(
        (still["status"].as_str(), still["remaining_qty"].as_str()),
        (Some("new"), Some("0.5"))
    );
}

#[test]
fn admin_routes_need_the_right_bearer_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();
    let before = world(&api, &[&alice]);

    let deposit = json!({ "account_id": alice.id, "asset": "USD", "amount": "1000" }).to_string();
    let routes = [
        ("/admin/accounts", String::new()),
        ("/admin/deposits", deposit.clone()),
        ("/admin/withdrawals", deposit),
        ("/admin/instruments/BTC-USD/halt", String::new()),
    ];
    let wrong_tokens = [
        format!("Bearer {ADMIN_TOKEN}x"),
        format!("Bearer {}", &ADMIN_TOKEN[..ADMIN_TOKEN.len() - 1]),
        "Bearer ".to_owned(),
        ADMIN_TOKEN.to_owned(),
        format!("Basic {ADMIN_TOKEN}"),
    ];
    for (path, body) in &routes {
        let none = api.request("POST", path, &[], body.as_bytes());
        none.expect_error(401, "missing_token", &format!("{path} without a token"));
        for token in &wrong_tokens {
            let wrong = api.request(
                "POST",
                path,
                &[("Authorization", token.clone())],
                body.as_bytes(),
            );
            wrong.expect_error(401, "invalid_token", &format!("{path} with {token:?}"));
        }
        // An API signature is no admin credential.
        let signed = api.signed(&alice, "POST", path, body);
        signed.expect_error(
            401,
            "missing_token",
            &format!("{path} signed by an account"),
        );
    }

    assert_eq!(
        world(&api, &[&alice]),
        before,
        "a refused admin call changed the state"
    );
    // No refused call created an account: the next one is Alice's successor.
    let next = api.create_account();
    assert_eq!(
        next.id,
        alice.id + 1,
        "a refused create_account consumed an account id"
    );
    let instruments = api.get("/v1/instruments").json();
    let btc = instruments["instruments"]
        .as_array()
        .expect("instruments")
        .iter()
        .find(|i| i["symbol"] == "BTC-USD");
    assert_eq!(
        btc.map(|i| i["status"].clone()),
        Some(json!("trading")),
        "BTC-USD was halted"
    );
}
