//! The public channels as a client meets them on `/v1/ws`: a socket that
//! begins with `subscribe` needs no credentials and cannot trade; refusals
//! name the problem; tickers and candles follow trades; candles over REST.

use axum::body::Body;
use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tower::ServiceExt;

use crate::md_test_support::{app, drive, next_json, node, serve, submit, workload, Ws};

use crate::{router, AppState};
use exchange_marketdata_service::config::MarketDataConfig;
use exchange_marketdata_service::*;

async fn send(ws: &mut Ws, message: Value) {
    ws.send(WsMessage::text(message.to_string()))
        .await
        .expect("send");
}

/// The next message of `kind`, skipping others (heartbeats, updates).
async fn next_of(ws: &mut Ws, kind: &str) -> Value {
    loop {
        let message = next_json(ws).await.expect("socket open");
        if message["type"] == kind {
            return message;
        }
    }
}

async fn get_text(app: &AppState, path: &str) -> (u16, String) {
    let request = axum::http::Request::get(path)
        .header("Authorization", "Bearer t")
        .body(Body::empty())
        .expect("request");
    let response = router(app.clone())
        .oneshot(request)
        .await
        .expect("response");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn get(app: &AppState, path: &str) -> (u16, Value) {
    let (status, text) = get_text(app, path).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_socket_subscribes_without_credentials() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let config = MarketDataConfig {
        heartbeat_ms: 100,
        ..MarketDataConfig::default()
    };
    let service = start(handle.clone(), &config)
        .await
        .expect("market data starts");
    let app = app(&handle, &service);
    let addr = serve(app.clone()).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");

    subscribes_to_the_ticker(&mut ws).await;
    refuses_what_a_public_socket_cannot_do(&mut ws).await;
    subscribes_to_candles(&mut ws).await;
    ticker_and_candles_follow_trades(&mut ws, &handle).await;
    candles_over_rest(&app).await;

    send(
        &mut ws,
        json!({ "type": "unsubscribe", "channel": "ticker", "symbols": ["BTC-USD"] }),
    )
    .await;
    assert_eq!(next_of(&mut ws, "unsubscribed").await["channel"], "ticker");
    service.shutdown().await;
}

/// Without credentials: acknowledged, then the current ticker (no bid yet).
async fn subscribes_to_the_ticker(ws: &mut Ws) {
    send(
        ws,
        json!({ "type": "subscribe", "channel": "ticker", "symbols": ["BTC-USD"],
            "request_id": 7 }),
    )
    .await;
    let ack = next_json(ws).await.expect("ack");
    assert_eq!(
        ack,
        json!({ "type": "subscribed", "channel": "ticker", "symbols": ["BTC-USD"],
            "request_id": 7 })
    );
    let ticker = next_json(ws).await.expect("the current ticker");
    assert_eq!(
        (ticker["type"].as_str(), ticker["best_bid"].clone()),
        (Some("ticker"), Value::Null)
    );
}

/// Order entry and malformed subscriptions are refused, each naming why.
async fn refuses_what_a_public_socket_cannot_do(ws: &mut Ws) {
    let refusals = [
        (
            json!({ "type": "place", "request_id": 1, "symbol": "BTC-USD" }),
            "auth_required",
        ),
        (
            json!({ "type": "subscribe", "request_id": 2, "channel": "book",
                "symbols": ["BTC-USD"] }),
            "unsupported",
        ),
        (
            json!({ "type": "subscribe", "request_id": 3, "channel": "level2",
                "symbols": ["NOPE-USD"] }),
            "unknown_instrument",
        ),
        (
            json!({ "type": "subscribe", "request_id": 4, "channel": "level2", "symbols": [] }),
            "invalid_value",
        ),
        (
            json!({ "type": "subscribe", "request_id": 5, "channel": "trades",
                "symbols": ["BTC-USD"], "interval": "1m" }),
            "invalid_value",
        ),
        (
            json!({ "type": "subscribe", "request_id": 6, "channel": "level2" }),
            "missing_field",
        ),
    ];
    for (message, code) in refusals {
        let id = message["request_id"].clone();
        send(ws, message).await;
        let refusal = next_of(ws, "error").await;
        assert_eq!(
            (refusal["code"].as_str(), &refusal["request_id"]),
            (Some(code), &id),
            "{refusal}"
        );
    }
}

/// Candles of an interval; heartbeats carry the sequence.
async fn subscribes_to_candles(ws: &mut Ws) {
    send(
        ws,
        json!({ "type": "subscribe", "channel": "candles", "interval": "5m",
            "symbols": ["BTC-USD"] }),
    )
    .await;
    let ack = next_of(ws, "subscribed").await;
    assert_eq!(
        (ack["channel"].as_str(), ack["interval"].as_str()),
        (Some("candles"), Some("5m"))
    );
    let heartbeat = next_of(ws, "heartbeat").await;
    assert!(heartbeat["sequence"].is_u64(), "{heartbeat}");
}

/// After a workload, the ticker shows the core's best prices and a
/// candle of the subscribed interval has come.
async fn ticker_and_candles_follow_trades(ws: &mut Ws, handle: &exchange_node::Handle) {
    drive(handle, workload(400, 11)).await;
    let core = snapshot(handle).await.expect("state");
    let btc = &core.instruments[0];
    assert!(btc.sequences.trades > 0, "the workload traded");
    let (mut ticker, mut candle) = (Value::Null, Value::Null);
    while ticker["sequence"].as_u64() != Some(btc.sequences.book) {
        let message = next_json(ws).await.expect("socket open");
        match message["type"].as_str() {
            Some("ticker") => ticker = message,
            Some("candle") => candle = message,
            _ => {}
        }
    }
    let best = |levels: &[(u64, u64)]| levels.first().map(|l| exchange_types::format_units(l.0));
    assert_eq!(
        ticker["best_bid"].as_str().map(str::to_owned),
        best(&btc.book.bids)
    );
    assert_eq!(
        ticker["best_ask"].as_str().map(str::to_owned),
        best(&btc.book.asks)
    );
    assert!(
        ticker["last_price"].is_string() && ticker["volume_24h"] != "0",
        "{ticker}"
    );
    assert_eq!(
        (candle["interval"].as_str(), candle["symbol"].as_str()),
        (Some("5m"), Some("BTC-USD"))
    );
}

/// The REST candles of the traded instrument, its refusals, and the
/// subscriber counted in the metrics.
async fn candles_over_rest(app: &AppState) {
    let (status, candles) = get(app, "/v1/markets/BTC-USD/candles?interval=1m&limit=5").await;
    assert_eq!(status, 200, "{candles}");
    let list = candles["candles"].as_array().expect("candles");
    assert!(!list.is_empty() && list.len() <= 5);
    assert!(list
        .iter()
        .all(|c| c["trades"].as_u64().is_some_and(|t| t > 0)));
    let (status, none) = get(app, "/v1/markets/BTC-USD/candles?interval=1d&end=1").await;
    assert_eq!((status, none["candles"].clone()), (200, json!([])));
    assert_eq!(
        get(app, "/v1/markets/BTC-USD/candles?interval=2m").await.1["code"],
        "invalid_query"
    );
    assert_eq!(get(app, "/v1/markets/NOPE-USD/candles").await.0, 404);
    let (_, metrics) = get_text(app, "/metrics").await;
    assert!(
        metrics.contains("exchange_marketdata_subscribers 1"),
        "{metrics}"
    );
}

/// The status over REST and the `status` channel agree; instruments list
/// their phase; trades of an auction say which.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_route_and_channel_tell_the_phase_and_the_auction() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let service = start(handle.clone(), &MarketDataConfig::default())
        .await
        .expect("market data starts");
    let app = app(&handle, &service);
    let addr = serve(app.clone()).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");
    send(
        &mut ws,
        json!({ "type": "subscribe", "channel": "status", "symbols": ["BTC-USD"],
            "request_id": 1 }),
    )
    .await;
    assert_eq!(next_of(&mut ws, "subscribed").await["channel"], "status");
    let first = next_of(&mut ws, "status").await;
    assert_eq!(
        (first["phase"].as_str(), first["sequence"].as_u64()),
        (Some("continuous"), Some(0))
    );

    enter_the_closing_call_with_a_cross(&handle).await;
    let in_call = loop {
        let msg = next_of(&mut ws, "status").await;
        if !msg["indicative"].is_null() {
            break msg;
        }
    };
    assert_eq!(in_call["phase"], "closing_call");
    assert_eq!(in_call["indicative"]["imbalance_side"], "buy");
    assert_eq!(in_call["indicative"]["imbalance_qty"], "1");
    let (code, rest) = get(&app, "/v1/markets/BTC-USD/status").await;
    assert_eq!(code, 200);
    for field in ["symbol", "sequence", "phase", "indicative", "last_auction"] {
        assert_eq!(rest[field], in_call[field], "{field}: {rest} vs {in_call}");
    }
    assert!(rest.get("type").is_none());
    let (_, listed) = get(&app, "/v1/instruments").await;
    assert_eq!(listed["instruments"][0]["phase"], "closing_call");
    assert_eq!(listed["instruments"][1]["phase"], "continuous");

    submit(
        &handle,
        r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"closing_auction"}"#,
    )
    .await;
    let (_, after) = get(&app, "/v1/markets/BTC-USD/status").await;
    assert_eq!(after["phase"], "post_close");
    assert_eq!(after["indicative"], Value::Null);
    assert_eq!(after["last_auction"]["kind"], "close");
    assert_eq!(after["last_auction"]["volume"], "1");
    let (_, trades) = get(&app, "/v1/markets/BTC-USD/trades").await;
    assert_eq!(trades["trades"][0]["auction"], "close");
    let (_, other) = get(&app, "/v1/markets/ETH-USD/trades?limit=1").await;
    assert!(other["trades"]
        .as_array()
        .is_some_and(|t| t.iter().all(|t| t.get("auction").is_none())));
    let (missing, body) = get(&app, "/v1/markets/NOPE-USD/status").await;
    assert_eq!(
        (missing, body["code"].as_str()),
        (404, Some("unknown_instrument"))
    );
    service.shutdown().await;
}

/// The closing call, with a buy of 2 at 101 and a sell of 1 at 100: they
/// cross, leaving 1 to buy.
async fn enter_the_closing_call_with_a_cross(handle: &exchange_node::Handle) {
    for line in [
        r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"closing_call"}"#,
        concat!(
            r#"{"cmd":"place","account":1,"client_order_id":"p1","symbol":"BTC-USD","#,
            r#""side":"buy","type":"limit","price":"101","qty":"2"}"#
        ),
        concat!(
            r#"{"cmd":"place","account":2,"client_order_id":"p2","symbol":"BTC-USD","#,
            r#""side":"sell","type":"limit","price":"100","qty":"1"}"#
        ),
    ] {
        submit(handle, line).await;
    }
}

/// The reference price on the `status` channel: the listing's on
/// subscribing (an instrument listed after the service started
/// included), the operator's new one as a numbered update, and the REST
/// status route agreeing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_channel_tells_the_reference_price() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let service = start(handle.clone(), &MarketDataConfig::default())
        .await
        .expect("market data starts");
    let app = app(&handle, &service);
    let addr = serve(app.clone()).await;
    submit(
        &handle,
        concat!(
            r#"{"cmd":"add_instrument","symbol":"SAP-EUR","base":"SAP","quote":"EUR","#,
            r#""tick_size":"0.01","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
            r#""reference_price":"120.50"}"#
        ),
    )
    .await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");
    send(
        &mut ws,
        json!({ "type": "subscribe", "channel": "status", "symbols": ["SAP-EUR"],
            "request_id": 1 }),
    )
    .await;
    let first = next_of(&mut ws, "status").await;
    assert_eq!(
        (
            first["reference_price"].as_str(),
            first["sequence"].as_u64()
        ),
        (Some("120.5"), Some(0)),
        "{first}"
    );

    submit(
        &handle,
        r#"{"cmd":"set_reference_price","symbol":"SAP-EUR","price":"99.95"}"#,
    )
    .await;
    let update = next_of(&mut ws, "status").await;
    assert_eq!(
        (
            update["reference_price"].as_str(),
            update["sequence"].as_u64(),
            update["phase"].as_str()
        ),
        (Some("99.95"), Some(1), Some("continuous")),
        "{update}"
    );
    let (code, rest) = get(&app, "/v1/markets/SAP-EUR/status").await;
    assert_eq!(code, 200);
    for field in ["sequence", "phase", "reference_price"] {
        assert_eq!(rest[field], update[field], "{field}: {rest} vs {update}");
    }
    service.shutdown().await;
}
