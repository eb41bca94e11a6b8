//! Replay: a captured signed request, sent again (as it was or cut
//! elsewhere), is refused and changes nothing, and spends nothing of its
//! key's allowance; refusals are charged to their address.

use axum::http::{Method, Request, StatusCode};

use super::rest_client::*;
use super::test_support::{funded_node, keys};

const ORDER: &str =
    r#"{"symbol":"BTC-USD","side":"sell","price":"100.50","qty":"1","client_order_id":"r-1"}"#;

fn open_orders(reply: &Reply) -> usize {
    reply.json["orders"].as_array().map_or(0, Vec::len)
}

/// The same request with the same headers and body, as a captured copy.
fn copy(request: &Request<axum::body::Body>, body: &str) -> Request<axum::body::Body> {
    let mut builder = Request::builder()
        .method(request.method().clone())
        .uri(request.uri().clone());
    for (name, value) in request.headers() {
        builder = builder.header(name, value);
    }
    builder
        .body(axum::body::Body::from(body.to_owned()))
        .expect("request")
}

#[tokio::test]
async fn a_replayed_order_is_refused_and_places_nothing() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let original = signed(2, Method::POST, "/v1/orders", ORDER);
    let replay = copy(&original, ORDER);
    let mut shouted = copy(&original, ORDER);
    let upper = shouted.headers()["EX-ACCESS-SIGN"]
        .to_str()
        .expect("ascii")
        .to_uppercase();
    shouted
        .headers_mut()
        .insert("EX-ACCESS-SIGN", upper.parse().expect("header"));

    let placed = call(&app, original).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    for again in [replay, shouted] {
        let refused = call(&app, again).await;
        assert_eq!(
            (refused.status, refused.json["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("replayed_request")),
            "{}",
            refused.json
        );
    }
    let open = call(&app, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(open_orders(&open), 1, "{}", open.json);
    // A fresh signature of the same order is a new request (refused by
    // the core for its client order id, not by the guard).
    let again = call(&app, signed(2, Method::POST, "/v1/orders", ORDER)).await;
    assert_eq!(again.json["code"], "duplicate_client_order_id");
}

#[tokio::test]
async fn a_read_is_accepted_once_too() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let original = signed(1, Method::GET, "/v1/balances", "");
    let replay = copy(&original, "");
    assert_eq!(call(&app, original).await.status, StatusCode::OK);
    assert_eq!(call(&app, replay).await.json["code"], "replayed_request");
}

/// A request signed before this gateway started may have been accepted by
/// the node's previous run, whose memory of it is gone.
#[tokio::test]
async fn a_request_signed_before_the_node_started_is_stale() {
    let node = funded_node().await;
    // The wall clock itself: the signing clock `now()` may run ahead of it
    // when many tests sign at once.
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let app = app(&node, |_| {});
    let early = signed_at(2, &before.to_string(), Method::POST, "/v1/orders", ORDER);
    let refused = call(&app, early).await;
    assert_eq!(
        (refused.status, refused.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("stale_timestamp")),
        "{}",
        refused.json
    );
    let open = call(&app, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(open_orders(&open), 0);
}

#[tokio::test]
async fn the_receive_window_is_the_configured_one() {
    let node = funded_node().await;
    let wide = app(&node, |c| c.recv_window_ms = 60_000);
    let old: u64 = now().parse::<u64>().expect("digits") - 30_000;
    // Within 60 s, but before the gateway started: refused as such, not as
    // outside the window.
    let reply = call(
        &wide,
        signed_at(1, &old.to_string(), Method::GET, "/v1/balances", ""),
    )
    .await;
    assert_eq!(reply.json["code"], "stale_timestamp");
    assert!(
        reply.json["message"]
            .as_str()
            .is_some_and(|m| m.contains("before this node started")),
        "{}",
        reply.json
    );
    let narrow = app(&node, |_| {});
    let reply = call(
        &narrow,
        signed_at(1, &old.to_string(), Method::GET, "/v1/balances", ""),
    )
    .await;
    assert!(
        reply.json["message"]
            .as_str()
            .is_some_and(|m| m.contains("more than 5000 ms before")),
        "{}",
        reply.json
    );
}

/// A captured cancel, cut elsewhere (a digit of the path moved into the
/// body), is refused for its body before its signature is looked at.
#[tokio::test]
async fn a_request_cut_elsewhere_is_refused() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let original = signed(2, Method::DELETE, "/v1/orders/12", "");
    let mut recut = copy(&original, "2");
    *recut.uri_mut() = "/v1/orders/1".parse().expect("uri");
    let refused = call(&app, recut).await;
    assert_eq!(
        (refused.status, refused.json["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("body_not_allowed")),
        "{}",
        refused.json
    );
}

/// Requests naming a key with a bad signature (or too big a body) are
/// charged to their address; the key's allowance is spent only by requests
/// that verified, so its holder is still served.
#[tokio::test]
async fn refusals_naming_a_key_spend_its_address_not_its_allowance() {
    let node = funded_node().await;
    let app = app(&node, |c| {
        c.rate_limit_per_sec = 1;
        c.rate_limit_burst = 3;
        c.max_body_bytes = 64;
    });
    let (key, _) = keys()[0].clone();
    let mut last = None;
    for n in 0..60 {
        let body = if n % 2 == 0 {
            "x".repeat(100)
        } else {
            String::new()
        };
        let junk = signed_with(
            key,
            "not the secret",
            &now(),
            Method::POST,
            "/v1/orders",
            &body,
        );
        last = Some(call(&app, from("192.0.2.9", junk)).await);
    }
    let last = last.expect("answers");
    assert_eq!(
        (last.status, last.json["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited")),
        "{}",
        last.json
    );
    for _ in 0..3 {
        let reply = call(
            &app,
            from("192.0.2.1", signed(1, Method::GET, "/v1/balances", "")),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    }
    // And the allowance still holds for its own key.
    let limited = call(
        &app,
        from("192.0.2.1", signed(1, Method::GET, "/v1/balances", "")),
    )
    .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
}

/// A replay of a captured request spends nothing of its key's allowance.
#[tokio::test]
async fn replays_spend_no_allowance() {
    let node = funded_node().await;
    let app = app(&node, |c| {
        c.rate_limit_per_sec = 1;
        c.rate_limit_burst = 2;
    });
    let original = signed(1, Method::GET, "/v1/balances", "");
    let copies: Vec<_> = (0..5).map(|_| copy(&original, "")).collect();
    assert_eq!(call(&app, original).await.status, StatusCode::OK);
    for replay in copies {
        let refused = call(&app, from("192.0.2.7", replay)).await;
        assert_eq!(refused.json["code"], "replayed_request");
    }
    let reply = call(&app, signed(1, Method::GET, "/v1/balances", "")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
}
