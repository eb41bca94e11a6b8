//! Signed requests cannot be re-cut, and nobody without a key's secret can
//! spend its allowance: a captured request replayed with the boundary
//! between its path and its body moved is refused and changes nothing; a
//! body on a method that has none is refused before the signature is
//! checked; a flood of junk-signed requests naming another member's key
//! is charged to the flooding address, never to the key.

use std::net::Ipv4Addr;

use exchange_testkit::{
    build_request, limit, send_raw_from, signature_headers, unix_now_ms, Account, Client, Response,
    Server,
};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn start(dir: &std::path::Path, config: &str) -> Server {
    let path = dir.join("exchange.toml");
    std::fs::write(&path, config).expect("write the configuration");
    Server::start_with(EXCHANGE, &dir.join("data"), Some(&path))
}

/// The ids of `account`'s open orders.
fn open_ids(api: &Client, account: &Account) -> Vec<u64> {
    let open = api.read(account, "/v1/orders");
    let mut ids: Vec<u64> = open["orders"]
        .as_array()
        .expect("orders")
        .iter()
        .map(|o| o["order_id"].as_u64().expect("order_id"))
        .collect();
    ids.sort_unstable();
    ids
}

fn order_id(placed: &Value) -> u64 {
    placed["order_id"].as_u64().expect("order_id")
}

fn eth_buy(client_order_id: &str) -> Value {
    json!({ "symbol": "ETH-USD", "side": "buy", "type": "limit", "price": "2900.00",
            "qty": "0.01", "client_order_id": client_order_id })
}

/// Sends `headers` (captured from another request) with another path and
/// body, as someone who saw the request on the wire could.
fn resend(
    api: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Response {
    api.request(method, path, headers, body.as_bytes())
}

#[test]
fn a_captured_mass_cancel_replayed_with_its_query_as_the_body_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path(), "");
    let api = server.api;
    let alice = api.funded_account();
    api.place(&alice, &limit("buy", "59000", "0.1", "btc-1"));
    let eth = order_id(&api.place(&alice, &eth_buy("eth-1")));

    // Alice cancels her BTC-USD orders; the request is seen on the wire.
    let path = "/v1/orders?symbol=BTC-USD";
    let captured = signature_headers(&alice, unix_now_ms(), "DELETE", path, b"");
    let answer = resend(&api, "DELETE", path, &captured, "");
    assert_eq!(answer.status, 200, "alice's own cancel: {}", answer.text());
    assert_eq!(open_ids(&api, &alice), vec![eth]);

    // The same bytes, cut elsewhere: the query moved into the body would
    // cancel every symbol's orders.
    let replay = resend(&api, "DELETE", "/v1/orders", &captured, "?symbol=BTC-USD");
    assert!(
        matches!(replay.status, 400 | 401),
        "the re-cut replay must be refused: {} {}",
        replay.status,
        replay.text()
    );
    assert_eq!(
        open_ids(&api, &alice),
        vec![eth],
        "the ETH-USD order must still be open"
    );
    api.assert_healthy("the re-cut mass cancel");
}

#[test]
fn a_captured_cancel_replayed_with_a_digit_moved_into_the_body_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path(), "");
    let api = server.api;
    let alice = api.funded_account();
    // Orders until one's id is another's id with digits after it (1 and
    // 10, say): the request cancelling the longer can be re-cut into one
    // cancelling the shorter.
    let mut placed: Vec<u64> = Vec::new();
    let mut pair = None;
    for n in 0..40 {
        let id = order_id(&api.place(&alice, &limit("buy", "59000", "0.01", &format!("o-{n}"))));
        let text = id.to_string();
        pair = placed
            .iter()
            .find(|earlier| text.starts_with(&earlier.to_string()))
            .map(|&earlier| (earlier, id));
        placed.push(id);
        if pair.is_some() {
            break;
        }
    }
    let (short, long) = pair.expect("two ids, one a prefix of the other");
    let long_text = long.to_string();
    let tail = &long_text[short.to_string().len()..];

    let path = format!("/v1/orders/{long}");
    let captured = signature_headers(&alice, unix_now_ms(), "DELETE", &path, b"");
    let answer = resend(&api, "DELETE", &path, &captured, "");
    assert_eq!(answer.status, 200, "alice's own cancel: {}", answer.text());

    let replay = resend(
        &api,
        "DELETE",
        &format!("/v1/orders/{short}"),
        &captured,
        tail,
    );
    assert!(
        matches!(replay.status, 400 | 401),
        "the re-cut replay must be refused: {} {}",
        replay.status,
        replay.text()
    );
    let open = open_ids(&api, &alice);
    assert!(
        open.contains(&short),
        "order {short} must still be open: {open:?}"
    );
    assert!(!open.contains(&long), "order {long} was cancelled by alice");
    api.assert_healthy("the re-cut cancel");
}

#[test]
fn a_body_on_a_method_that_has_none_is_refused_and_charged_to_its_address() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path(), "");
    let api = server.api;
    let alice = api.funded_account();
    let resting = order_id(&api.place(&alice, &limit("buy", "59000", "0.1", "rest")));

    // Correctly signed over the body, still refused: these methods carry none.
    for (method, path) in [
        ("GET", "/v1/balances".to_owned()),
        ("GET", "/v1/orders".to_owned()),
        ("DELETE", format!("/v1/orders/{resting}")),
        ("DELETE", "/v1/orders".to_owned()),
    ] {
        let body = "{}";
        let headers = signature_headers(&alice, unix_now_ms(), method, &path, body.as_bytes());
        resend(&api, method, &path, &headers, body).expect_error(
            400,
            "body_not_allowed",
            &format!("{method} {path} with a body"),
        );
    }
    assert_eq!(open_ids(&api, &alice), vec![resting]);

    // Each such refusal is charged to its address, which ends up refused
    // outright, while alice (another address) is still served.
    let flooder = Ipv4Addr::new(127, 0, 0, 5);
    let mut refused = None;
    for n in 0..120 {
        let headers = signature_headers(&alice, unix_now_ms(), "GET", "/v1/balances", b"x");
        let request = build_request("GET", "/v1/balances", &headers, b"x");
        let answer = send_raw_from(flooder, api.port, &request).expect("answer");
        if address_refused(&answer) {
            refused = Some(n);
            break;
        }
        answer.expect_error(400, "body_not_allowed", "a body on GET");
    }
    assert!(refused.is_some(), "the flooding address is never refused");
    assert_eq!(open_ids(&api, &alice), vec![resting]);
}

/// A request naming `victim`'s key with a junk signature and a declared
/// body far over the limit (its bytes never sent: the declaration is
/// enough to be refused).
fn junk_oversized(victim: &Account) -> Vec<u8> {
    format!(
        "POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         EX-ACCESS-KEY: {}\r\nEX-ACCESS-TIMESTAMP: {}\r\nEX-ACCESS-SIGN: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n",
        victim.key,
        unix_now_ms(),
        "00".repeat(32)
    )
    .into_bytes()
}

/// As [`junk_oversized`], with a small body: refused for its signature.
fn junk_signed(victim: &Account) -> Vec<u8> {
    let headers = [
        ("EX-ACCESS-KEY", victim.key.clone()),
        ("EX-ACCESS-TIMESTAMP", unix_now_ms().to_string()),
        ("EX-ACCESS-SIGN", "00".repeat(32)),
    ];
    build_request("POST", "/v1/orders", &headers, br#"{"symbol":"BTC-USD"}"#)
}

/// Whether `answer` refuses its source address (its budget of failures
/// spent), as opposed to anything else, a key's allowance included.
fn address_refused(answer: &Response) -> bool {
    answer.status == 429
        && answer.code() == "rate_limited"
        && answer.json()["message"]
            .as_str()
            .is_some_and(|m| m.contains("from this address"))
}

fn bob_is_served_from(bystander: Ipv4Addr, port: u16, bob: &Account, n: i32) {
    let order = limit("sell", "61000", "0.01", &format!("bob-{n}")).to_string();
    let headers = signature_headers(bob, unix_now_ms(), "POST", "/v1/orders", order.as_bytes());
    let request = build_request("POST", "/v1/orders", &headers, order.as_bytes());
    let placed = send_raw_from(bystander, port, &request).expect("bob's answer");
    assert_eq!(
        placed.status,
        201,
        "bob during the flood: {}",
        placed.text()
    );
}

fn oversized_bodies_alone_are_charged(port: u16, victim: &Account) {
    // Oversized bodies alone are charged as well.
    let second = Ipv4Addr::new(127, 0, 0, 4);
    let refused = (0..120).find(|_| {
        let answer = send_raw_from(second, port, &junk_oversized(victim)).expect("an answer");
        let as_address = address_refused(&answer);
        assert!(answer.status == 413 || as_address, "{}", answer.text());
        as_address
    });
    assert!(
        refused.is_some(),
        "oversized requests are never charged to their address"
    );
}

#[test]
fn junk_signed_floods_naming_a_key_are_charged_to_their_address_not_the_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A small allowance, so that draining it would take few requests.
    let server = start(
        dir.path(),
        "rate_limit_per_sec = 1\nrate_limit_burst = 10\n",
    );
    let api = server.api;
    let victim = api.funded_account();
    let bob = api.funded_account();
    let attacker = Ipv4Addr::new(127, 0, 0, 2);
    let bystander = Ipv4Addr::new(127, 0, 0, 3);

    let mut statuses = Vec::new();
    for n in 0..120 {
        let request = if n % 2 == 0 {
            junk_oversized(&victim)
        } else {
            junk_signed(&victim)
        };
        let answer = send_raw_from(attacker, api.port, &request).expect("an answer");
        statuses.push((answer.status, answer.code(), address_refused(&answer)));
        // Another member, from another address, is served throughout.
        if n % 30 == 0 {
            bob_is_served_from(bystander, api.port, &bob, n);
        }
    }
    assert_eq!(
        statuses[0],
        (413, "body_too_large".to_owned(), false),
        "the first oversized request"
    );
    assert_eq!(statuses[1], (401, "invalid_signature".to_owned(), false));
    // Refused for what it is, or as its address: never for the key's
    // allowance, which it never had the secret to spend.
    assert!(
        statuses.iter().all(|(status, _, as_address)| {
            matches!(status, 401 | 413) || (*status == 429 && *as_address)
        }),
        "{statuses:?}"
    );
    // Its budget (50 failures at once, 10 a second) runs out well within
    // the flood; once refused, a token that refills lets one more through.
    assert!(
        statuses.iter().any(|(_, _, as_address)| *as_address),
        "the flooding address must end up refused: {statuses:?}"
    );

    oversized_bodies_alone_are_charged(api.port, &victim);

    // The victim's key kept its whole allowance: its burst of orders goes
    // through, none refused with 429.
    for n in 0..8 {
        let order = limit("buy", "59000", "0.01", &format!("victim-{n}")).to_string();
        let answer = api.signed(&victim, "POST", "/v1/orders", &order);
        assert_eq!(
            answer.status,
            201,
            "the victim's order {n} after the flood: {}",
            answer.text()
        );
    }
    api.assert_healthy("the flood");
}
