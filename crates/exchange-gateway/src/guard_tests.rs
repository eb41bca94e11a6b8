//! The replicated replay guard: two gateways over one node, each with its
//! own local guard, stand for separate gateway processes. A signed write
//! accepted by one is refused by the other, which its local guard alone
//! would have let through.

use axum::http::{Method, Request, StatusCode};
use serde_json::Value;

use super::replay::{self, RequestGuard};
use super::rest_client::*;
use super::test_support::funded_node;
use super::translate;

const ORDER: &str =
    r#"{"symbol":"BTC-USD","side":"sell","price":"100.50","qty":"1","client_order_id":"g-1"}"#;

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

fn assert_replayed(reply: &Reply) {
    assert_eq!(
        (reply.status, reply.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("replayed_request")),
        "{}",
        reply.json
    );
}

fn usd_total(balances: &Value) -> Value {
    balances["balances"]
        .as_array()
        .and_then(|all| all.iter().find(|b| b["asset"] == "USD"))
        .map_or(Value::Null, |b| b["total"].clone())
}

#[tokio::test]
async fn a_write_replayed_at_another_gateway_is_refused_and_changes_nothing() {
    let node = funded_node().await;
    let (first, second) = (app(&node, |_| {}), app(&node, |_| {}));

    let order = signed(2, Method::POST, "/v1/orders", ORDER);
    let order_copy = copy(&order, ORDER);
    let placed = call(&first, order).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    assert_replayed(&call(&second, order_copy).await);
    let open = call(&first, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(open.json["orders"].as_array().map(Vec::len), Some(1));

    let body = r#"{"asset":"USD","amount":"10"}"#;
    let withdrawal = signed(1, Method::POST, "/v1/withdrawals", body);
    let withdrawal_copy = copy(&withdrawal, body);
    let taken = call(&first, withdrawal).await;
    assert_eq!(taken.status, StatusCode::OK, "{}", taken.json);
    let before = call(&first, signed(1, Method::GET, "/v1/balances", "")).await;
    assert_replayed(&call(&second, withdrawal_copy).await);
    let after = call(&second, signed(1, Method::GET, "/v1/balances", "")).await;
    assert_eq!(usd_total(&after.json), usd_total(&before.json));
    assert_eq!(usd_total(&after.json), "99990");

    // A cancel (a DELETE) too: the copy is the guard's, not the core's
    // "no such order".
    let cancel = signed(2, Method::DELETE, "/v1/orders/by-client-id/g-1", "");
    let cancel_copy = copy(&cancel, "");
    assert_eq!(call(&second, cancel).await.status, StatusCode::OK);
    assert_replayed(&call(&first, cancel_copy).await);
}

#[tokio::test]
async fn a_key_created_through_one_gateway_is_not_created_again_through_another() {
    let node = funded_node().await;
    let (first, second) = (app(&node, |_| {}), app(&node, |_| {}));
    let body = r#"{"scopes":["read"],"label":"once"}"#;
    let create = signed(1, Method::POST, "/v1/keys", body);
    let create_copy = copy(&create, body);
    assert_eq!(call(&first, create).await.status, StatusCode::CREATED);
    assert_replayed(&call(&second, create_copy).await);
    let listed = call(&second, signed(1, Method::GET, "/v1/keys", "")).await;
    let labels: Vec<&Value> = listed.json["keys"]
        .as_array()
        .map(|keys| keys.iter().map(|k| &k["label"]).collect())
        .unwrap_or_default();
    assert_eq!(labels.iter().filter(|l| **l == "once").count(), 1);
}

/// Reads do not go through the log: each gateway's own guard is all
/// that stands before a copy of one.
#[tokio::test]
async fn reads_are_guarded_by_each_gateway_alone() {
    let node = funded_node().await;
    let (first, second) = (app(&node, |_| {}), app(&node, |_| {}));
    let read = signed(1, Method::GET, "/v1/balances", "");
    let read_copy = copy(&read, "");
    let again = copy(&read, "");
    assert_eq!(call(&first, read).await.status, StatusCode::OK);
    assert_eq!(call(&second, read_copy).await.status, StatusCode::OK);
    assert_replayed(&call(&first, again).await);
}

/// The log's answers map to the local guard's: a copy is
/// `replayed_request`, a request whose window passed before the log took
/// it `stale_timestamp`; neither changes anything.
#[tokio::test]
async fn the_logs_refusals_are_answered_as_the_local_guards() {
    let node = funded_node().await;
    let handle = &node.pipeline.handle;
    let deposit = || {
        translate::entry(
            exchange_codec::decode_command(
                r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1"}"#,
            )
            .expect("command")
            .command,
        )
    };
    let now_ms = exchange_testkit::unix_now_ms();
    let guard = RequestGuard {
        fingerprint: 7,
        forget_after_ms: now_ms + 60_000,
    };
    let applied = replay::submit(handle, Some(guard), deposit())
        .await
        .expect("applied");
    assert_eq!(applied.command, "deposit");
    let again = replay::submit(handle, Some(guard), deposit())
        .await
        .expect_err("a copy");
    assert_eq!(
        (again.status, again.code),
        (StatusCode::UNAUTHORIZED, "replayed_request")
    );
    let passed = RequestGuard {
        fingerprint: 8,
        forget_after_ms: now_ms - 60_000,
    };
    let stale = replay::submit(handle, Some(passed), deposit())
        .await
        .expect_err("stale");
    assert_eq!(
        (stale.status, stale.code),
        (StatusCode::UNAUTHORIZED, "stale_timestamp")
    );
    let balances = handle.balances(1).await.expect("balances");
    let usd = balances
        .iter()
        .find(|b| b.asset.as_str() == "USD")
        .expect("USD");
    assert_eq!(
        usd.total,
        100_001 * exchange_types::UNITS_PER_WHOLE,
        "one deposit"
    );
}
