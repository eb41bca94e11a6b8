//! Market-to-limit orders, a minimum acceptable quantity and hidden orders
//! placed over REST through the router and a real node.

use axum::http::{Method, StatusCode};

use super::rest_client::*;
use super::test_support::funded_node;

#[tokio::test]
async fn market_to_limit_and_min_qty_orders_are_placed_over_rest() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for (id, price) in [("a1", "100"), ("a2", "101")] {
        let body = format!(r#"{{"symbol":"BTC-USD","side":"sell","price":"{price}","qty":"1","#)
            + &format!(r#""client_order_id":"{id}"}}"#);
        let placed = call(&app, signed(2, Method::POST, "/v1/orders", &body)).await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    // It takes the best offer's price, trades there only and rests the rest.
    let to_limit = r#"{"symbol":"BTC-USD","side":"buy","type":"market_to_limit","qty":"1.5"}"#;
    let placed = call(&app, signed(1, Method::POST, "/v1/orders", to_limit)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    assert_eq!(
        (
            placed.json["status"].as_str(),
            placed.json["price"].as_str(),
            placed.json["remaining_qty"].as_str()
        ),
        (Some("partially_filled"), Some("100"), Some("0.5")),
        "{}",
        placed.json
    );
    // The offer at 101 has 1, short of the minimum: the order ends whole.
    let short = concat!(
        r#"{"symbol":"BTC-USD","side":"buy","price":"101","qty":"2","tif":"ioc","#,
        r#""min_qty":"1.5"}"#
    );
    let ended = call(&app, signed(1, Method::POST, "/v1/orders", short)).await;
    assert_eq!(
        (ended.status, ended.json["status"].as_str()),
        (StatusCode::CREATED, Some("expired")),
        "{}",
        ended.json
    );
    assert_eq!(ended.json["filled_qty"], "0");
    // The minimum is echoed back, as FIX echoes MinQty.
    assert_eq!(ended.json["min_qty"], "1.5", "{}", ended.json);
    // Closed, the order is read from the reporting store, which keeps it.
    let id = ended.json["order_id"].as_u64().expect("order id");
    let stored = call(
        &app,
        signed(1, Method::GET, &format!("/v1/orders/{id}"), ""),
    )
    .await;
    assert_eq!(
        (
            stored.json["status"].as_str(),
            stored.json["min_qty"].as_str()
        ),
        (Some("expired"), Some("1.5")),
        "{}",
        stored.json
    );
    assert!(stored.json.get("hidden").is_none(), "{}", stored.json);
    let met = short.replace("1.5", "1");
    let filled = call(&app, signed(1, Method::POST, "/v1/orders", &met)).await;
    assert_eq!(filled.json["filled_qty"], "1", "{}", filled.json);
    // What the edge cannot read and what the core refuses.
    let unreadable = to_limit.replace(r#""qty":"1.5""#, r#""qty":"1","min_qty":"x""#);
    let refused = call(&app, signed(1, Method::POST, "/v1/orders", &unreadable)).await;
    assert_eq!(refused.json["code"], "invalid_decimal", "{}", refused.json);
    let empty_side = call(&app, signed(1, Method::POST, "/v1/orders", to_limit)).await;
    assert_eq!(
        (empty_side.status, empty_side.json["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("market_to_limit_no_opposite")
        ),
        "{}",
        empty_side.json
    );
}

#[tokio::test]
async fn a_hidden_order_is_placed_over_rest_and_never_shown_in_the_book() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let body = r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"10","hidden":true}"#;
    let placed = call(&app, signed(2, Method::POST, "/v1/orders", body)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    // Its owner sees the flag; the book shows nothing.
    assert_eq!(placed.json["hidden"], true, "{}", placed.json);
    let book = call(&app, get("/v1/markets/BTC-USD/book")).await;
    assert_eq!(book.json["asks"], serde_json::json!([]), "{}", book.json);
    // The listing publishes its minimum.
    let listed = call(&app, get("/v1/instruments")).await;
    let btc = &listed.json["instruments"][0];
    assert_eq!(btc["hidden_min_notional"], "1000", "{}", listed.json);
    let buy = r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1","tif":"ioc"}"#;
    let bought = call(&app, signed(1, Method::POST, "/v1/orders", buy)).await;
    assert_eq!(bought.json["filled_qty"], "1", "{}", bought.json);
    the_closed_hidden_order_is_read_from_the_store(&app, &placed.json).await;
    // 9.99 at 100 is worth less than the instrument's 1,000.
    let small = body.replace(r#""qty":"10""#, r#""qty":"9.99""#);
    let refused = call(&app, signed(2, Method::POST, "/v1/orders", &small)).await;
    assert_eq!(
        (refused.status, refused.json["code"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("hidden_below_minimum")
        ),
        "{}",
        refused.json
    );
    let immediate = body.replace(r#""hidden":true"#, r#""hidden":true,"tif":"ioc""#);
    let refused = call(&app, signed(2, Method::POST, "/v1/orders", &immediate)).await;
    assert_eq!(
        refused.json["code"], "hidden_not_allowed",
        "{}",
        refused.json
    );
}

/// Canceled, the hidden order is served from the reporting store, flag
/// and all, as it was while it was open.
async fn the_closed_hidden_order_is_read_from_the_store(
    app: &super::AppState,
    placed: &serde_json::Value,
) {
    let id = placed["order_id"].as_u64().expect("order id");
    let path = format!("/v1/orders/{id}");
    let open = call(app, signed(2, Method::GET, &path, "")).await;
    assert_eq!(open.json["hidden"], true, "{}", open.json);
    let canceled = call(app, signed(2, Method::DELETE, &path, "")).await;
    assert_eq!(canceled.json["status"], "canceled", "{}", canceled.json);
    let stored = call(app, signed(2, Method::GET, &path, "")).await;
    assert_eq!(
        (
            stored.json["status"].as_str(),
            stored.json["filled_qty"].as_str(),
            stored.json["hidden"].as_bool()
        ),
        (Some("canceled"), Some("1"), Some(true)),
        "{}",
        stored.json
    );
    assert!(stored.json.get("min_qty").is_none(), "{}", stored.json);
    let closed = call(app, signed(2, Method::GET, "/v1/orders?status=closed", "")).await;
    assert_eq!(closed.json["orders"][0], stored.json);
}

#[tokio::test]
async fn midpoint_orders_are_placed_over_rest_and_trade_at_the_midpoint() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let quotes = [
        (
            1,
            r#"{"symbol":"BTC-USD","side":"buy","price":"99","qty":"1"}"#,
        ),
        (
            2,
            r#"{"symbol":"BTC-USD","side":"sell","price":"101","qty":"1"}"#,
        ),
    ];
    for (account, body) in quotes {
        let placed = call(&app, signed(account, Method::POST, "/v1/orders", body)).await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    let sell = r#"{"symbol":"BTC-USD","side":"sell","type":"midpoint","price":"99.5","qty":"2"}"#;
    let resting = call(&app, signed(2, Method::POST, "/v1/orders", sell)).await;
    assert_eq!(resting.status, StatusCode::CREATED, "{}", resting.json);
    assert_eq!(resting.json["status"], "new", "{}", resting.json);
    // Not in the published book: the best ask is still the lit one.
    let book = call(&app, get("/v1/markets/BTC-USD/book")).await;
    assert_eq!(
        book.json["asks"].as_array().map(Vec::len),
        Some(1),
        "{}",
        book.json
    );
    let buy = r#"{"symbol":"BTC-USD","side":"buy","type":"midpoint","qty":"1","tif":"ioc"}"#;
    let bought = call(&app, signed(1, Method::POST, "/v1/orders", buy)).await;
    assert_eq!(
        (
            bought.json["status"].as_str(),
            bought.json["filled_qty"].as_str()
        ),
        (Some("filled"), Some("1")),
        "{}",
        bought.json
    );
    let fok = buy.replace("ioc", "fok");
    let refused = call(&app, signed(1, Method::POST, "/v1/orders", &fok)).await;
    assert_eq!(
        refused.json["code"], "midpoint_not_allowed",
        "{}",
        refused.json
    );
}
