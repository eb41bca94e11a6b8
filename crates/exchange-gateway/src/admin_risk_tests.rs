//! Member risk controls through the router: limits, the kill switch and
//! market-maker protection, each a logged command answered with its effect.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};

use super::rest_client::*;
use super::test_support::funded_node;
use super::AppState;

fn admin_with(method: Method, path: &str, body: Option<Value>) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("Authorization", format!("Bearer {ADMIN}"))
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("request")
}

fn sell(id: &str, price: &str, qty: &str) -> String {
    format!(
        "{{\"symbol\":\"BTC-USD\",\"side\":\"sell\",\"price\":\"{price}\",\
         \"qty\":\"{qty}\",\"client_order_id\":\"{id}\"}}"
    )
}

#[tokio::test]
async fn suspend_cancels_open_orders_refuses_new_ones_and_reinstate_lifts_it() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for (id, price) in [("a", "101"), ("b", "102")] {
        let placed = call(
            &app,
            signed(2, Method::POST, "/v1/orders", &sell(id, price, "1")),
        )
        .await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    // Without the admin token the switch is not reachable.
    let anonymous = Request::post("/admin/accounts/2/suspend")
        .body(Body::empty())
        .expect("request");
    assert_eq!(call(&app, anonymous).await.status, StatusCode::UNAUTHORIZED);

    let suspended = call(&app, admin("/admin/accounts/2/suspend", json!({}))).await;
    assert_eq!(suspended.status, StatusCode::OK, "{}", suspended.json);
    assert_eq!(
        suspended.json,
        json!({ "account_id": 2, "status": "suspended", "canceled": 2 })
    );
    let open = call(&app, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(open.json["orders"].as_array().map(Vec::len), Some(0));
    let refused = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("c", "101", "1")),
    )
    .await;
    assert_eq!(
        (refused.status, refused.json["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("account_suspended"))
    );
    let again = call(&app, admin("/admin/accounts/2/suspend", json!({}))).await;
    assert_eq!(again.json["code"], "account_already_in_status");
    let unknown = call(&app, admin("/admin/accounts/77/suspend", json!({}))).await;
    assert_eq!(
        (unknown.status, unknown.json["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_account"))
    );

    let reinstated = call(&app, admin("/admin/accounts/2/reinstate", json!({}))).await;
    assert_eq!(reinstated.json["status"], "active", "{}", reinstated.json);
    let placed = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("c", "101", "1")),
    )
    .await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
}

#[tokio::test]
async fn risk_limits_are_set_enforced_and_cleared() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let set = call(
        &app,
        admin_with(
            Method::PUT,
            "/admin/accounts/2/risk-limits",
            Some(json!({ "max_order_qty": "1.5", "max_open_orders": 1, "price_band_pct": "5" })),
        ),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json);
    assert_eq!(
        set.json,
        json!({ "account_id": 2, "max_order_qty": "1.5", "max_order_notional": null,
                "max_open_orders": 1, "price_band_bps": 500 })
    );
    orders_beyond_the_limits_are_refused(&app).await;
    invalid_limits_are_refused(&app).await;
    let cleared = call(
        &app,
        admin_with(Method::DELETE, "/admin/accounts/2/risk-limits", None),
    )
    .await;
    assert_eq!(
        cleared.json["max_open_orders"],
        Value::Null,
        "{}",
        cleared.json
    );
    let now_ok = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("b", "104", "2")),
    )
    .await;
    assert_eq!(now_ok.status, StatusCode::CREATED, "{}", now_ok.json);
}

#[tokio::test]
async fn mmp_trips_and_the_account_resets_it_itself() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let set = call(
        &app,
        admin_with(
            Method::PUT,
            "/admin/accounts/2/mmp/BTC-USD",
            Some(json!({ "window_ms": 60000, "max_count": 1 })),
        ),
    )
    .await;
    assert_eq!(
        set.json,
        json!({ "account_id": 2, "symbol": "BTC-USD", "state": "set",
                "window_ms": 60000, "max_qty": null, "max_count": 1 })
    );
    for (id, price) in [("a", "100"), ("b", "101"), ("c", "102")] {
        let placed = call(
            &app,
            signed(2, Method::POST, "/v1/orders", &sell(id, price, "1")),
        )
        .await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    let take = concat!(
        r#"{"symbol":"BTC-USD","side":"buy","price":"101","qty":"2","#,
        r#""client_order_id":"t","tif":"ioc"}"#
    );
    let taken = call(&app, signed(1, Method::POST, "/v1/orders", take)).await;
    assert_eq!(taken.status, StatusCode::CREATED, "{}", taken.json);
    let open = call(&app, signed(2, Method::GET, "/v1/orders", "")).await;
    assert_eq!(
        open.json["orders"].as_array().map(Vec::len),
        Some(0),
        "{}",
        open.json
    );
    let refused = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("d", "101", "1")),
    )
    .await;
    assert_eq!(refused.json["code"], "mmp_tripped");
    let reset = call(&app, signed(2, Method::POST, "/v1/mmp/BTC-USD/reset", "")).await;
    assert_eq!(reset.json["state"], "reset", "{}", reset.json);
    let placed = call(
        &app,
        signed(2, Method::POST, "/v1/orders", &sell("d", "101", "1")),
    )
    .await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    let removed = call(
        &app,
        admin_with(Method::DELETE, "/admin/accounts/2/mmp/BTC-USD", None),
    )
    .await;
    assert_eq!(removed.json["state"], "removed", "{}", removed.json);
    let gone = call(
        &app,
        admin("/admin/accounts/2/mmp/BTC-USD/reset", json!({})),
    )
    .await;
    assert_eq!(gone.json["code"], "mmp_not_configured");
}

#[tokio::test]
async fn an_owner_links_a_sub_account_and_moves_funds_to_it_only() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let linked = call(
        &app,
        admin("/admin/accounts/1/sub-accounts", json!({ "account_id": 2 })),
    )
    .await;
    assert_eq!(linked.status, StatusCode::OK, "{}", linked.json);
    assert_eq!(linked.json, json!({ "owner": 1, "sub_account": 2 }));
    let body = r#"{"to_account_id":2,"asset":"USD","amount":"250"}"#;
    let moved = call(&app, signed(1, Method::POST, "/v1/transfers", body)).await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.json);
    assert_eq!(moved.json["balances"][1]["account_id"], 2);
    assert_eq!(moved.json["balances"][1]["available"], "250");
    // The sub-account can send it back; nobody can send to a stranger.
    let back = r#"{"to_account_id":1,"asset":"USD","amount":"50"}"#;
    let reply = call(&app, signed(2, Method::POST, "/v1/transfers", back)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.json);
    let stranger = r#"{"to_account_id":9,"asset":"USD","amount":"1"}"#;
    let refused = call(&app, signed(1, Method::POST, "/v1/transfers", stranger)).await;
    assert_eq!(
        refused.json["code"], "accounts_not_related",
        "{}",
        refused.json
    );
    let nested = call(
        &app,
        admin("/admin/accounts/2/sub-accounts", json!({ "account_id": 1 })),
    )
    .await;
    assert_eq!(nested.json["code"], "invalid_sub_account");
}

/// With at most 1.5 per order, one open order and a 5% band: each limit
/// refuses what exceeds it, and an order within all of them rests.
async fn orders_beyond_the_limits_are_refused(app: &AppState) {
    let big = call(
        app,
        signed(2, Method::POST, "/v1/orders", &sell("a", "101", "2")),
    )
    .await;
    assert_eq!(big.json["code"], "order_qty_over_limit");
    // The listing's reference (100) stands in for the last trade: 105.01
    // is outside a 5% band.
    let far = call(
        app,
        signed(2, Method::POST, "/v1/orders", &sell("a", "105.01", "1")),
    )
    .await;
    assert_eq!(far.json["code"], "price_outside_band");
    let ok = call(
        app,
        signed(2, Method::POST, "/v1/orders", &sell("a", "105", "1")),
    )
    .await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.json);
    let second = call(
        app,
        signed(2, Method::POST, "/v1/orders", &sell("b", "104", "1")),
    )
    .await;
    assert_eq!(second.json["code"], "open_orders_over_limit");
}

/// A band finer than a basis point and a zero order count are refused.
async fn invalid_limits_are_refused(app: &AppState) {
    let bad = call(
        app,
        admin_with(
            Method::PUT,
            "/admin/accounts/2/risk-limits",
            Some(json!({ "price_band_pct": "0.001" })),
        ),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.json);
    let zero = call(
        app,
        admin_with(
            Method::PUT,
            "/admin/accounts/2/risk-limits",
            Some(json!({ "max_open_orders": 0 })),
        ),
    )
    .await;
    assert_eq!(zero.json["code"], "invalid_risk_limits");
}
