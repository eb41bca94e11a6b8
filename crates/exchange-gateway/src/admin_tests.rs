//! Admin and public routes, rate limiting and readiness, through the router.

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use super::auth::sign;
use super::rest_client::*;
use super::test_support::funded_node;
use super::AppState;
use exchange_node::limits::AUTH_FAILURE_BURST;

/// Failed authentications are charged to the address they came from: past
/// its budget that address gets 429 before its key is looked up or its body
/// read, while another address is served as before. Made-up keys are
/// answered 401, never reach the core and get no rate-limit bucket.
#[tokio::test]
async fn failed_authentications_are_limited_per_address() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let reads = || app.handle.metrics.reads.load(Ordering::Relaxed);
    let before = reads();
    let flooder = "192.0.2.1";
    // The budget refills slowly (a few tokens while this loop runs), so
    // the flood is refused from about the burst on.
    let mut answers = Vec::new();
    for i in 0..AUTH_FAILURE_BURST * 2 {
        let request = if i % 2 == 0 {
            let key = format!("made-up-{i}");
            signed_with(&key, "secret", &now(), Method::GET, "/v1/balances", "")
        } else {
            let mut forged = signed(1, Method::GET, "/v1/balances", "");
            forged
                .headers_mut()
                .insert("EX-ACCESS-SIGN", "00".repeat(32).parse().expect("header"));
            forged
        };
        let reply = call(&app, from(flooder, request)).await;
        answers.push((reply.status, reply.json["code"].as_str().map(str::to_owned)));
    }
    let budget = AUTH_FAILURE_BURST as usize;
    let first_limited = answers
        .iter()
        .position(|(status, _)| *status == StatusCode::TOO_MANY_REQUESTS)
        .expect("the flood was limited");
    assert!(
        (budget..budget + 10).contains(&first_limited),
        "{first_limited}: {answers:?}"
    );
    for (i, answer) in answers[..first_limited].iter().enumerate() {
        let code = if i % 2 == 0 {
            "invalid_api_key"
        } else {
            "invalid_signature"
        };
        assert_eq!(
            (answer.0, answer.1.as_deref()),
            (StatusCode::UNAUTHORIZED, Some(code)),
            "request {i}"
        );
    }
    let limited = answers
        .iter()
        .filter(|(status, code)| {
            *status == StatusCode::TOO_MANY_REQUESTS && code.as_deref() == Some("rate_limited")
        })
        .count();
    assert!(limited >= budget - 10, "{answers:?}");
    // Even a valid request from the flooding address waits: it is refused
    // before anything about it is known.
    let limited = call(
        &app,
        from(flooder, signed(1, Method::GET, "/v1/balances", "")),
    )
    .await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers.contains_key("retry-after"));
    assert_eq!(
        reads(),
        before,
        "a refused request cost the core thread a read"
    );
    // Another address is served.
    for _ in 0..3 {
        let reply = call(
            &app,
            from("192.0.2.2", signed(1, Method::GET, "/v1/balances", "")),
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK);
    }
    assert_eq!(reads(), before + 3);
    // Only the real key has a request bucket; the made-up ones have none.
    assert_eq!(app.limiter.keys(), 1);
}

/// An unknown key is 401 however the node stands: not 503, which would
/// tell a prober to come back.
#[tokio::test]
async fn an_unknown_key_is_always_401() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for method in [Method::GET, Method::POST, Method::DELETE] {
        let request = signed_with("nobody", "secret", &now(), method.clone(), "/v1/orders", "");
        let reply = call(&app, request).await;
        assert_eq!(
            (reply.status, reply.json["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("invalid_api_key")),
            "{method}"
        );
    }
}

#[tokio::test]
async fn rate_limit_and_readiness() {
    let node = funded_node().await;
    let app = app(&node, |c| {
        c.rate_limit_per_sec = 1;
        c.rate_limit_burst = 2;
    });
    for _ in 0..2 {
        assert_eq!(
            call(&app, signed(1, Method::GET, "/v1/balances", ""))
                .await
                .status,
            StatusCode::OK
        );
    }
    let limited = call(&app, signed(1, Method::GET, "/v1/balances", "")).await;
    assert_eq!(
        (limited.status, limited.json["code"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("rate_limited"))
    );
    assert_eq!(
        limited
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    // Each key has its own allowance.
    assert_eq!(
        call(&app, signed(2, Method::GET, "/v1/balances", ""))
            .await
            .status,
        StatusCode::OK
    );

    app.ready.store(false, Ordering::Release);
    let starting = call(&app, get("/v1/instruments")).await;
    assert_eq!(
        (starting.status, starting.json["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("not_ready"))
    );
    assert!(starting.headers.contains_key("retry-after"));
    assert_eq!(call(&app, get("/health")).await.status, StatusCode::OK);
    let metrics = call(&app, admin_get("/metrics")).await;
    let text = metrics.json.as_str().unwrap_or_default().to_owned();
    assert!(
        text.contains("exchange_http_responses_total{status=\"429\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("exchange_commands_total "),
        "the sequencer's metrics come first: {text}"
    );
}

#[tokio::test]
async fn admin_and_public_routes() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let created = call(&app, admin("/admin/accounts", json!({}))).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(created.json["account_id"], 3);
    let (key, secret) = (
        created.json["api_key"].as_str().unwrap_or(""),
        created.json["api_secret"].as_str().unwrap_or(""),
    );
    assert!(key.len() >= 32 && secret.len() >= 64);
    deposit_and_withdraw_for_the_new_account(&app).await;

    // The new key signs at once.
    let timestamp = now();
    let request = Request::get("/v1/balances")
        .header("EX-ACCESS-KEY", key)
        .header("EX-ACCESS-TIMESTAMP", &timestamp)
        .header(
            "EX-ACCESS-SIGN",
            sign(secret, &timestamp, "GET", "/v1/balances", b""),
        )
        .body(Body::empty())
        .expect("request");
    assert_eq!(call(&app, request).await.json["account_id"], 3);

    list_halt_and_resume_an_instrument(&app).await;
    public_book_and_trades(&app).await;
    let doc = call(&app, admin_get("/openapi.json")).await;
    assert_eq!(doc.json["openapi"], "3.0.3");
}

/// Account 3 (just created) is credited, refused an overdraft, then debited;
/// an account that does not exist cannot be credited.
async fn deposit_and_withdraw_for_the_new_account(app: &AppState) {
    let deposit = call(
        app,
        admin(
            "/admin/deposits",
            json!({ "account_id": 3, "asset": "USD", "amount": "250.5" }),
        ),
    )
    .await;
    assert_eq!(
        (deposit.status, deposit.json["available"].as_str()),
        (StatusCode::OK, Some("250.5"))
    );
    let nobody = call(
        app,
        admin(
            "/admin/deposits",
            json!({ "account_id": 4, "asset": "USD", "amount": "1" }),
        ),
    )
    .await;
    assert_eq!(
        (nobody.status, nobody.json["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_account"))
    );
    let overdraw = call(
        app,
        admin(
            "/admin/withdrawals",
            json!({ "account_id": 3, "asset": "USD", "amount": "300" }),
        ),
    )
    .await;
    assert_eq!(
        (overdraw.status, overdraw.json["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("insufficient_funds"))
    );
    let withdraw = call(
        app,
        admin(
            "/admin/withdrawals",
            json!({ "account_id": 3, "asset": "USD", "amount": "50" }),
        ),
    )
    .await;
    assert_eq!(withdraw.json["total"], "200.5");
}

/// ETH-USD is listed once (not twice), halted and resumed.
async fn list_halt_and_resume_an_instrument(app: &AppState) {
    let spec = json!({ "symbol": "ETH-USD", "base": "ETH", "quote": "USD", "tick_size": "0.01",
                       "lot_size": "0.001", "maker_fee_bps": 0, "taker_fee_bps": 10 });
    let mut unknown_rule = spec.clone();
    unknown_rule["reference_price_rule"] = json!("midpoint");
    let refused = call(app, admin("/admin/instruments", unknown_rule)).await;
    assert_eq!(
        (refused.status, refused.json["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_value"))
    );
    let listed = call(app, admin("/admin/instruments", spec.clone())).await;
    assert_eq!(
        (listed.status, listed.json["tick_size"].as_str()),
        (StatusCode::CREATED, Some("0.01"))
    );
    // A listing that names no rule through the admin route takes Xetra's.
    assert_eq!(listed.json["reference_price_rule"], "limit_nearest");
    let twice = call(app, admin("/admin/instruments", spec)).await;
    assert_eq!(
        (twice.status, twice.json["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("instrument_exists"))
    );
    let halted = call(app, admin("/admin/instruments/ETH-USD/halt", json!({}))).await;
    assert_eq!(
        halted.json,
        json!({ "symbol": "ETH-USD", "status": "halted" })
    );
    let resumed = call(app, admin("/admin/instruments/ETH-USD/resume", json!({}))).await;
    assert_eq!(resumed.json["status"], "trading");
}

/// The instruments, book and trades, without credentials; unknown or
/// malformed symbols are unknown instruments.
async fn public_book_and_trades(app: &AppState) {
    let list = call(app, get("/v1/instruments")).await;
    assert_eq!(list.json["instruments"].as_array().map(Vec::len), Some(2));
    for (price, qty) in [("99", "1"), ("98", "2"), ("97", "3")] {
        let body =
            format!(r#"{{"symbol":"BTC-USD","side":"buy","price":"{price}","qty":"{qty}"}}"#);
        assert_eq!(
            call(app, signed(1, Method::POST, "/v1/orders", &body))
                .await
                .status,
            StatusCode::CREATED
        );
    }
    let book = call(app, get("/v1/markets/BTC-USD/book?depth=2")).await;
    assert_eq!(book.json["bids"], json!([["99", "1"], ["98", "2"]]));
    assert_eq!(book.json["asks"], json!([]));
    assert!(book.json["sequence"].as_u64().is_some_and(|s| s > 0));
    let sell = r#"{"symbol":"BTC-USD","side":"sell","type":"market","qty":"1.5"}"#;
    assert_eq!(
        call(app, signed(2, Method::POST, "/v1/orders", sell))
            .await
            .status,
        StatusCode::CREATED
    );
    let trades = call(app, get("/v1/markets/BTC-USD/trades?limit=1")).await;
    assert_eq!(trades.json["trades"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        (
            trades.json["trades"][0]["price"].as_str(),
            trades.json["trades"][0]["side"].as_str()
        ),
        (Some("98"), Some("sell"))
    );
    for path in [
        "/v1/markets/NOPE-USD/book",
        "/v1/markets/NOPE-USD/trades",
        "/v1/markets/THIS-SYMBOL-IS-TOO-LONG/book",
    ] {
        let unknown = call(app, get(path)).await;
        assert_eq!(
            (unknown.status, unknown.json["code"].as_str()),
            (StatusCode::NOT_FOUND, Some("unknown_instrument"))
        );
    }
}

/// `/metrics` and `/openapi.json` need the admin token unless the operator
/// opens them; the separate metrics router never asks for it.
#[tokio::test]
async fn metrics_and_the_api_document_need_the_admin_token_by_default() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    for path in ["/metrics", "/openapi.json"] {
        let anonymous = call(&app, get(path)).await;
        assert_eq!(
            (anonymous.status, anonymous.json["code"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("missing_token")),
            "{path}"
        );
        let mut wrong = get(path);
        wrong
            .headers_mut()
            .insert("authorization", "Bearer wrong".parse().expect("header"));
        assert_eq!(
            call(&app, wrong).await.json["code"].as_str(),
            Some("invalid_token")
        );
        assert_eq!(call(&app, admin_get(path)).await.status, StatusCode::OK);
    }
    let open = app_open_metrics(&node);
    assert_eq!(call(&open, get("/metrics")).await.status, StatusCode::OK);
    let scrape = tower::ServiceExt::oneshot(super::metrics_router(app.clone()), get("/metrics"))
        .await
        .expect("response");
    assert_eq!(scrape.status(), StatusCode::OK);
    let other = tower::ServiceExt::oneshot(super::metrics_router(app), get("/v1/balances"))
        .await
        .expect("response");
    assert_eq!(other.status(), StatusCode::NOT_FOUND);
}

fn app_open_metrics(node: &super::test_support::TestNode) -> super::AppState {
    app(node, |c| c.http.metrics_auth = false)
}
