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

#[tokio::test]
async fn the_reference_price_is_set_by_the_operator_only() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let path = "/admin/instruments/BTC-USD/reference_price";
    let anonymous = Request::post(path)
        .header("Content-Type", "application/json")
        .body(Body::from(json!({ "price": "50" }).to_string()))
        .expect("request");
    let refused = call(&app, anonymous).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.json);
    let as_trader = call(
        &app,
        signed(1, Method::POST, path, &json!({ "price": "50" }).to_string()),
    )
    .await;
    assert_eq!(
        as_trader.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        as_trader.json
    );

    for (body, status, code) in [
        (json!({ "price": "50.005" }), 422, "price_not_on_tick"),
        (json!({ "price": "0" }), 422, "invalid_price"),
        (json!({ "price": "fifty" }), 400, "invalid_decimal"),
        (json!({ "price": 50 }), 400, "invalid_type"),
        (json!({ "prize": "50" }), 400, "unknown_field"),
        (json!({}), 400, "missing_field"),
    ] {
        let bad = call(&app, admin(path, body.clone())).await;
        assert_eq!(bad.status.as_u16(), status, "{body}: {}", bad.json);
        assert_eq!(bad.json["code"], code, "{body}: {}", bad.json);
        assert!(bad.json["message"].is_string(), "{}", bad.json);
    }
    let unknown = call(
        &app,
        admin(
            "/admin/instruments/XRP-USD/reference_price",
            json!({ "price": "1" }),
        ),
    )
    .await;
    assert_eq!(
        unknown.json["code"], "unknown_instrument",
        "{}",
        unknown.json
    );

    let set = call(&app, admin(path, json!({ "price": "50.25" }))).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json);
    assert_eq!(
        set.json,
        json!({ "symbol": "BTC-USD", "reference_price": "50.25" })
    );
    let list = call(&app, get("/v1/instruments")).await;
    assert_eq!(list.json["instruments"][0]["reference_price"], "50.25");
    // The collar (10%) is around the new reference now.
    let outside = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("far", "60", "1")),
    )
    .await;
    assert_eq!(
        outside.json["code"], "price_outside_collar",
        "{}",
        outside.json
    );
}

#[tokio::test]
async fn an_instrument_is_listed_into_a_phase() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let spec = |symbol: &str, phase: &str| {
        json!({
            "symbol": symbol, "base": "SOL", "quote": "USD", "tick_size": "0.01",
            "lot_size": "0.01", "maker_fee_bps": 0, "taker_fee_bps": 0, "phase": phase
        })
    };
    let listed = call(
        &app,
        admin("/admin/instruments", spec("SOL-USD", "pre_open")),
    )
    .await;
    assert_eq!(listed.status, StatusCode::CREATED, "{}", listed.json);
    assert_eq!(listed.json["phase"], "pre_open");
    let refused = call(
        &app,
        admin("/admin/instruments", spec("SOL-EUR", "opening_auction")),
    )
    .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        refused.json["code"], "invalid_listing_phase",
        "{}",
        refused.json
    );
    let unknown = call(&app, admin("/admin/instruments", spec("SOL-GBP", "lunch"))).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.json);
}
