//! The REST gateway end to end over a real node, through the router.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use super::rest_client::*;
use super::test_support::funded_node;
use super::AppState;

#[tokio::test]
async fn signed_order_lifecycle() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let id = place_a_resting_sell(&app).await;
    take_part_of_it(&app).await;
    replace_then_cancel(&app, id).await;
    closed_orders_from_the_store(&app, id).await;
    candles_from_the_store(&app).await;
    let mass = call(
        &app,
        signed(2, Method::DELETE, "/v1/orders?symbol=BTC-USD", ""),
    )
    .await;
    assert_eq!(
        (mass.status, mass.json.clone()),
        (StatusCode::OK, json!({ "canceled": [] }))
    );
}

/// Account 2 places a sell that rests; only account 2 sees it. Returns its id.
async fn place_a_resting_sell(app: &AppState) -> u64 {
    let body =
        r#"{"symbol":"BTC-USD","side":"sell","price":"100.50","qty":"2","client_order_id":"s-1"}"#;
    let placed = call(app, signed(2, Method::POST, "/v1/orders", body)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    assert_eq!(
        (
            placed.json["status"].as_str(),
            placed.json["price"].as_str()
        ),
        (Some("new"), Some("100.5"))
    );
    let id = placed.json["order_id"].as_u64().expect("order id");

    let mine = call(app, signed(2, Method::GET, &format!("/v1/orders/{id}"), "")).await;
    assert_eq!(
        (mine.status, mine.json["client_order_id"].as_str()),
        (StatusCode::OK, Some("s-1"))
    );
    let theirs = call(app, signed(1, Method::GET, &format!("/v1/orders/{id}"), "")).await;
    assert_eq!(
        (theirs.status, theirs.json["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_order"))
    );
    id
}

/// Account 1's market buy takes half a unit: the maker's order, fill and
/// balances show it.
async fn take_part_of_it(app: &AppState) {
    let take = r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"0.5"}"#;
    let taken = call(app, signed(1, Method::POST, "/v1/orders", take)).await;
    assert_eq!(
        (taken.status, taken.json["status"].as_str()),
        (StatusCode::CREATED, Some("filled"))
    );
    assert_eq!(taken.json["fills"][0]["price"], "100.5");

    let open = call(
        app,
        signed(2, Method::GET, "/v1/orders?status=open&symbol=BTC-USD", ""),
    )
    .await;
    assert_eq!(open.json["orders"][0]["filled_qty"], "0.5");
    assert_eq!(open.json["orders"][0]["status"], "partially_filled");
    let fills = call(app, signed(2, Method::GET, "/v1/fills?limit=10", "")).await;
    assert_eq!(fills.json["fills"][0]["liquidity"], "maker");
    let balances = call(app, signed(2, Method::GET, "/v1/balances", "")).await;
    let btc = balances.json["balances"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["asset"] == "BTC"))
        .cloned();
    assert_eq!(
        btc,
        Some(json!({ "asset": "BTC", "total": "9.5", "available": "8" }))
    );
}

/// The rest of the order is replaced, canceled by its new client id, and
/// cannot be canceled again.
async fn replace_then_cancel(app: &AppState, id: u64) {
    let replace = r#"{"price":"101","new_client_order_id":"s-2"}"#;
    let replaced = call(
        app,
        signed(
            2,
            Method::POST,
            &format!("/v1/orders/{id}/replace"),
            replace,
        ),
    )
    .await;
    assert_eq!(
        (replaced.status, replaced.json["client_order_id"].as_str()),
        (StatusCode::OK, Some("s-2"))
    );
    let canceled = call(
        app,
        signed(2, Method::DELETE, "/v1/orders/by-client-id/s-2", ""),
    )
    .await;
    assert_eq!(
        (canceled.status, canceled.json["status"].as_str()),
        (StatusCode::OK, Some("canceled"))
    );
    let again = call(
        app,
        signed(2, Method::DELETE, &format!("/v1/orders/{id}"), ""),
    )
    .await;
    assert_eq!(
        (again.status, again.json["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("order_not_open"))
    );
    let all = call(app, signed(2, Method::GET, "/v1/orders?status=all", "")).await;
    assert_eq!(all.json["orders"].as_array().map(Vec::len), Some(1));
}

/// Closed orders and fills of both sides, as the reporting store has them.
async fn closed_orders_from_the_store(app: &AppState, id: u64) {
    // Closed orders come from the reporting store, right after the cancel.
    let closed = call(app, signed(2, Method::GET, "/v1/orders?status=closed", "")).await;
    assert_eq!(closed.json["orders"][0]["status"], "canceled");
    assert_eq!(closed.json["orders"][0]["client_order_id"], "s-2");
    assert_eq!(closed.json["orders"][0]["filled_qty"], "0.5");
    let open = call(app, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(open.json["orders"], json!([]));
    let gone = call(app, signed(2, Method::GET, &format!("/v1/orders/{id}"), "")).await;
    assert_eq!(
        (gone.status, gone.json["status"].as_str()),
        (StatusCode::OK, Some("canceled"))
    );
    assert_eq!(gone.json, closed.json["orders"][0]);
    let not_theirs = call(app, signed(1, Method::GET, &format!("/v1/orders/{id}"), "")).await;
    assert_eq!(not_theirs.status, StatusCode::NOT_FOUND);
    // Account 1's market buy filled at once: closed, never open.
    let taker = call(app, signed(1, Method::GET, "/v1/orders?status=closed", "")).await;
    assert_eq!(taker.json["orders"][0]["status"], "filled");
    let taker_fills = call(app, signed(1, Method::GET, "/v1/fills", "")).await;
    assert_eq!(taker_fills.json["fills"][0]["liquidity"], "taker");
    assert_eq!(taker_fills.json["fills"][0]["qty"], "0.5");
}

/// Candles from the store: the one trade.
async fn candles_from_the_store(app: &AppState) {
    let candles = call(app, get("/v1/markets/BTC-USD/candles?interval=1h")).await;
    assert_eq!(candles.status, StatusCode::OK, "{}", candles.json);
    assert_eq!(candles.json["interval"], "1h");
    let candle = &candles.json["candles"][0];
    assert_eq!(
        (
            &candle["open"],
            &candle["close"],
            &candle["volume"],
            &candle["trades"]
        ),
        (&json!("100.5"), &json!("100.5"), &json!("0.5"), &json!(1))
    );
    assert_eq!(candles.json["candles"].as_array().map(Vec::len), Some(1));
    let none = call(app, get("/v1/markets/BTC-USD/candles?end=1")).await;
    assert_eq!(none.json["candles"], json!([]));
    let unknown = call(app, get("/v1/markets/NOPE-USD/candles")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_credentials_are_refused() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let unsigned = call(&app, get("/v1/balances")).await;
    assert_eq!(
        (unsigned.status, unsigned.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("missing_credentials"))
    );

    let mut forged = signed(1, Method::GET, "/v1/balances", "");
    forged
        .headers_mut()
        .insert("EX-ACCESS-SIGN", "00".repeat(32).parse().expect("header"));
    assert_eq!(call(&app, forged).await.json["code"], "invalid_signature");

    // The signature covers the query string.
    let mut moved = signed(1, Method::GET, "/v1/orders?status=open", "");
    *moved.uri_mut() = "/v1/orders?status=all".parse().expect("uri");
    assert_eq!(call(&app, moved).await.json["code"], "invalid_signature");

    let mut stranger = signed(1, Method::GET, "/v1/balances", "");
    stranger
        .headers_mut()
        .insert("EX-ACCESS-KEY", "nobody".parse().expect("header"));
    assert_eq!(call(&app, stranger).await.json["code"], "invalid_api_key");

    let old = (SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
        - 3_600_000)
        .to_string();
    let stale = call(&app, signed_at(1, &old, Method::GET, "/v1/balances", "")).await;
    assert_eq!(
        (stale.status, stale.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("stale_timestamp"))
    );

    let no_token = call(
        &app,
        Request::post("/admin/accounts")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(
        (no_token.status, no_token.json["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("missing_token"))
    );
    let wrong = Request::post("/admin/accounts")
        .header("Authorization", "Bearer nope")
        .body(Body::empty());
    assert_eq!(
        call(&app, wrong.expect("request")).await.json["code"],
        "invalid_token"
    );
    // A trading key is not an admin token.
    let as_trader = call(&app, signed(1, Method::POST, "/admin/accounts", "")).await;
    assert_eq!(as_trader.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn malformed_requests_get_json_errors() {
    let node = funded_node().await;
    let app = app(&node, |c| c.max_body_bytes = 256);
    order_bodies_refused_by_code(&app).await;
    let big = format!(r#"{{"symbol":"{}"}}"#, "x".repeat(300));
    let too_big = call(&app, signed(1, Method::POST, "/v1/orders", &big)).await;
    assert_eq!(
        (too_big.status, too_big.json["code"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("body_too_large"))
    );
    let path = call(&app, signed(1, Method::GET, "/v1/orders/abc", "")).await;
    assert_eq!(
        (path.status, path.json["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_path"))
    );
    let query = call(&app, signed(1, Method::GET, "/v1/orders?status=gone", "")).await;
    assert_eq!(
        (query.status, query.json["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_query"))
    );
    let missing = call(&app, get("/v2/nothing")).await;
    assert_eq!(
        (missing.status, missing.json["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    let method = call(
        &app,
        Request::put("/v1/orders")
            .body(Body::empty())
            .expect("request"),
    )
    .await;
    assert_eq!(
        (method.status, method.json["code"].as_str()),
        (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed"))
    );
}

/// Order bodies refused, each with its code and a message.
async fn order_bodies_refused_by_code(app: &AppState) {
    let cases = [
        ("{\"symbol\":", StatusCode::BAD_REQUEST, "malformed_json"),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":"1","colour":"red"}"#,
            StatusCode::BAD_REQUEST,
            "unknown_field",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":1}"#,
            StatusCode::BAD_REQUEST,
            "invalid_type",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":"1,5"}"#,
            StatusCode::BAD_REQUEST,
            "invalid_decimal",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":"1","price":"100.001"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "price_not_on_tick",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":"100000","price":"100"}"#,
            StatusCode::UNPROCESSABLE_ENTITY,
            "insufficient_funds",
        ),
    ];
    for (body, status, code) in cases {
        let reply = call(app, signed(1, Method::POST, "/v1/orders", body)).await;
        assert_eq!(
            (reply.status, reply.json["code"].as_str()),
            (status, Some(code)),
            "{body}"
        );
        assert!(reply.json["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
}
