//! Instrument rules and delisting through the router, and the rules that
//! `GET /v1/instruments` publishes.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};

use super::rest_client::*;
use super::test_support::funded_node;

fn put(path: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(Method::PUT)
        .uri(path)
        .header("Authorization", format!("Bearer {ADMIN}"))
        .body(Body::from(body.to_string()))
        .expect("request")
}

fn sell(id: &str, price: &str, qty: &str) -> String {
    format!(
        "{{\"symbol\":\"BTC-USD\",\"side\":\"sell\",\"price\":\"{price}\",\
         \"qty\":\"{qty}\",\"client_order_id\":\"{id}\"}}"
    )
}

#[tokio::test]
async fn instruments_publish_every_rule() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let list = call(&app, get("/v1/instruments")).await;
    let btc = &list.json["instruments"][0];
    assert_eq!(btc["symbol"], "BTC-USD");
    assert_eq!(btc["tick_size"], "0.01");
    assert_eq!(btc["lot_size"], "0.0001");
    assert_eq!(btc["min_qty"], "0.0001");
    assert_eq!(btc["min_notional"], "0");
    assert_eq!(
        (&btc["maker_fee_bps"], &btc["taker_fee_bps"]),
        (&json!(-1), &json!(5))
    );
    assert_eq!(btc["collar_bps"], 1000);
    assert_eq!(btc["status"], "trading");
}

#[tokio::test]
async fn rule_changes_cancel_what_no_longer_fits_and_delisting_ends_trading() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for (id, price) in [("on", "100"), ("off", "100.05")] {
        let placed = call(
            &app,
            signed(2, Method::POST, "/v1/orders", &sell(id, price, "1")),
        )
        .await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    let changed = call(
        &app,
        put(
            "/admin/instruments/BTC-USD/rules",
            json!({ "tick_size": "0.1", "min_notional": "10", "taker_fee_bps": 7 }),
        ),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.json);
    assert_eq!(changed.json["tick_size"], "0.1");
    assert_eq!(changed.json["min_notional"], "10");
    assert_eq!(changed.json["taker_fee_bps"], 7);
    assert_eq!(changed.json["canceled"], 1);
    let list = call(&app, get("/v1/instruments")).await;
    assert_eq!(list.json["instruments"][0]["tick_size"], "0.1");
    assert_eq!(list.json["instruments"][0]["min_notional"], "10");
    let small = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("s", "100", "0.01")),
    )
    .await;
    assert_eq!(
        small.json["code"], "notional_below_minimum",
        "{}",
        small.json
    );

    let empty = call(&app, put("/admin/instruments/BTC-USD/rules", json!({}))).await;
    assert_eq!(empty.json["code"], "no_rule_change");
    let unknown_field = call(
        &app,
        put("/admin/instruments/BTC-USD/rules", json!({ "tick": "1" })),
    )
    .await;
    assert_eq!(unknown_field.status, StatusCode::BAD_REQUEST);

    let delisted = call(&app, admin("/admin/instruments/BTC-USD/delist", json!({}))).await;
    assert_eq!(delisted.status, StatusCode::OK, "{}", delisted.json);
    assert_eq!(delisted.json["status"], "delisted");
    assert_eq!(delisted.json["canceled"], 1);
    let list = call(&app, get("/v1/instruments")).await;
    assert_eq!(list.json["instruments"][0]["status"], "delisted");
    let refused = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("late", "100", "1")),
    )
    .await;
    assert_eq!(refused.json["code"], "instrument_delisted");
    let again = call(&app, admin("/admin/instruments/BTC-USD/delist", json!({}))).await;
    assert_eq!(again.json["code"], "instrument_delisted");
}

#[tokio::test]
async fn volatility_bands_are_set_and_published() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let refused = call(
        &app,
        put(
            "/admin/instruments/BTC-USD/rules",
            json!({ "static_band_pct": "5" }),
        ),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        refused.json["code"], "volatility_auction_required",
        "{}",
        refused.json
    );
    let changed = call(
        &app,
        put(
            "/admin/instruments/BTC-USD/rules",
            json!({
                "static_band_pct": "5",
                "dynamic_band_pct": "2",
                "volatility_auction_ns": 120_000_000_000u64
            }),
        ),
    )
    .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.json);
    assert_eq!(changed.json["static_band_bps"], 500);
    assert_eq!(changed.json["dynamic_band_bps"], 200);
    let list = call(&app, get("/v1/instruments")).await;
    let btc = &list.json["instruments"][0];
    assert_eq!(btc["static_band_bps"], 500);
    assert_eq!(btc["dynamic_band_bps"], 200);
    assert_eq!(btc["volatility_auction_ns"], 120_000_000_000u64);
}
