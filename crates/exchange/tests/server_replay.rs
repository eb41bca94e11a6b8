//! A captured request is useless: `exchange serve` accepts each signed
//! request once (REST and the WebSocket `auth` message), and an address
//! that keeps failing authentication is refused before any work while
//! other addresses are served.

use std::net::Ipv4Addr;

use exchange_testkit::ws::{auth_message, connect, next, send};
use exchange_testkit::{build_request, send_raw_from, signature_headers, unix_now_ms, Server};
use serde_json::json;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

#[test]
fn a_replayed_order_places_nothing_and_a_replayed_auth_opens_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();

    // No client order id: the server makes one per request, so nothing
    // but the replay guard tells a copy from a new order.
    let order = json!({ "symbol": "BTC-USD", "side": "buy", "type": "limit",
                        "price": "59000", "qty": "0.01" })
    .to_string();
    let headers = signature_headers(
        &alice,
        unix_now_ms(),
        "POST",
        "/v1/orders",
        order.as_bytes(),
    );
    let placed = api.request("POST", "/v1/orders", &headers, order.as_bytes());
    assert_eq!(placed.status, 201, "{}", placed.text());
    for attempt in 0..3 {
        api.request("POST", "/v1/orders", &headers, order.as_bytes())
            .expect_error(401, "replayed_request", &format!("replay {attempt}"));
    }
    let open = api.read(&alice, "/v1/orders");
    assert_eq!(
        open["orders"].as_array().map(Vec::len),
        Some(1),
        "the replays placed orders: {open}"
    );

    let captured = auth_message(&alice, false);
    let mut genuine = connect(&api);
    send(&mut genuine, &captured);
    assert_eq!(
        next(&mut genuine).expect("auth answer"),
        json!({ "type": "auth", "ok": true, "account_id": alice.id })
    );
    let mut copy = connect(&api);
    send(&mut copy, &captured);
    let refused = next(&mut copy).expect("auth answer");
    assert_eq!(
        (refused["ok"].as_bool(), refused["code"].as_str()),
        (Some(false), Some("replayed_request")),
        "{refused}"
    );
}

#[test]
fn a_flood_of_bad_requests_is_limited_to_its_address() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let alice = api.funded_account();
    let flooder = Ipv4Addr::new(127, 0, 0, 2);
    let member = Ipv4Addr::new(127, 0, 0, 3);
    let send = |from: Ipv4Addr, headers: &[(&str, String)]| {
        let request = build_request("GET", "/v1/balances", headers, b"");
        send_raw_from(from, api.port, &request).expect("request")
    };

    let mut statuses = Vec::new();
    for i in 0..120 {
        let mut headers = signature_headers(&alice, unix_now_ms(), "GET", "/v1/balances", b"");
        if i % 2 == 0 {
            headers[0].1 = format!("{i:032x}");
        } else {
            headers[1].1 = "0".repeat(64);
        }
        let answer = send(flooder, &headers);
        if answer.status == 401 {
            let expected = if i % 2 == 0 {
                "invalid_api_key"
            } else {
                "invalid_signature"
            };
            assert_eq!(answer.code(), expected, "request {i}");
        }
        statuses.push(answer.status);
    }
    let first_limited = statuses
        .iter()
        .position(|s| *s == 429)
        .unwrap_or_else(|| panic!("the flood was never limited: {statuses:?}"));
    assert!(first_limited >= 50, "limited too early: {statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    // Its own valid requests wait too, while another address is served.
    // On a slow machine the flood above may have taken long enough for
    // the allowance to refill: spend it again first, then ask at once.
    let mut bad = signature_headers(&alice, unix_now_ms(), "GET", "/v1/balances", b"");
    bad[1].1 = "0".repeat(64);
    let spent = (0..200).any(|_| send(flooder, &bad).status == 429);
    assert!(spent, "the flood was never limited again");
    let headers = signature_headers(&alice, unix_now_ms(), "GET", "/v1/balances", b"");
    send(flooder, &headers).expect_error(429, "rate_limited", "the flooder's valid request");
    for _ in 0..5 {
        let headers = signature_headers(&alice, unix_now_ms(), "GET", "/v1/balances", b"");
        let answer = send(member, &headers);
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
}
