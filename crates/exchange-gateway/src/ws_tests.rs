//! The WebSocket gateway over a real socket and a real node.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::auth::sign;
use super::test_support::{funded_node, funded_node_with, keys, TestNode};
use super::translate;
use super::*;

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn serve(node: &TestNode) -> (AppState, SocketAddr) {
    let app = AppState::new(
        node.pipeline.handle.clone(),
        Config::default(),
        crate::config::GatewayConfig::default(),
        "t".into(),
        Arc::new(AtomicBool::new(true)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let served = router(app.clone());
    tokio::spawn(async move { axum::serve(listener, served).await });
    (app, addr)
}

fn auth_message(account: usize, extra: Value) -> String {
    let (key, secret) = keys()[account - 1].clone();
    let timestamp: u64 = super::rest_client::now().parse().expect("digits");
    let signature = sign(&secret, &timestamp.to_string(), "GET", "/v1/ws", b"");
    let mut message =
        json!({ "type": "auth", "key": key, "timestamp": timestamp, "signature": signature });
    if let (Some(message), Value::Object(extra)) = (message.as_object_mut(), extra) {
        message.extend(extra);
    }
    message.to_string()
}

async fn connect(addr: SocketAddr) -> Client {
    let (client, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");
    client
}

async fn send(client: &mut Client, message: Value) {
    client
        .send(WsMessage::text(message.to_string()))
        .await
        .expect("send");
}

/// The next JSON message, or `None` once the server has closed.
async fn next(client: &mut Client) -> Option<Value> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), client.next())
            .await
            .expect("a message in time");
        match message {
            Some(Ok(WsMessage::Text(text))) => return serde_json::from_str(text.as_str()).ok(),
            Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => continue,
        }
    }
}

async fn authenticated(addr: SocketAddr, account: usize, extra: Value) -> Client {
    let mut client = connect(addr).await;
    client
        .send(WsMessage::text(auth_message(account, extra)))
        .await
        .expect("send auth");
    let reply = next(&mut client).await.expect("auth reply");
    assert_eq!(
        reply,
        json!({ "type": "auth", "ok": true, "account_id": account })
    );
    client
}

/// Messages of one `type` among those read.
fn of_type<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter().filter(|m| m["type"] == kind).collect()
}

/// Reads until `done` holds for everything read; returns it all.
async fn read_until(client: &mut Client, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    while !done(&seen) {
        seen.push(next(client).await.expect("socket open"));
    }
    seen
}

/// Reads until the next message of type `kind` and returns it.
async fn next_of(client: &mut Client, kind: &str) -> Value {
    let seen = read_until(client, |seen| !of_type(seen, kind).is_empty()).await;
    seen.into_iter().find(|m| m["type"] == kind).expect("found")
}

#[tokio::test]
async fn pipelined_orders_are_sequenced_in_order_and_streamed() {
    let node = funded_node().await;
    let (_, addr) = serve(&node).await;
    let mut client = authenticated(addr, 2, json!({})).await;
    let place = json!({ "type": "place", "request_id": "r1", "symbol": "BTC-USD", "side": "sell",
                        "order_type": "limit", "price": "105", "qty": "1",
                        "client_order_id": "w-1" });
    send(&mut client, place).await;
    // Sent before the place is answered: must still be applied after it.
    send(
        &mut client,
        json!({ "type": "cancel", "request_id": 2, "client_order_id": "w-1" }),
    )
    .await;
    let seen = read_until(&mut client, |s| {
        of_type(s, "response").len() == 2 && of_type(s, "order").len() == 2
    })
    .await;
    let responses = of_type(&seen, "response");
    let placed = responses
        .iter()
        .find(|m| m["request_id"] == "r1")
        .expect("place answered");
    assert_eq!(
        (
            placed["ok"].as_bool(),
            placed["order"]["client_order_id"].as_str()
        ),
        (Some(true), Some("w-1"))
    );
    let canceled = responses
        .iter()
        .find(|m| m["request_id"] == 2)
        .expect("cancel answered");
    assert_eq!(
        (
            canceled["ok"].as_bool(),
            canceled["order"]["status"].as_str()
        ),
        (Some(true), Some("canceled"))
    );
    let events: Vec<&str> = of_type(&seen, "order")
        .iter()
        .filter_map(|m| m["event"].as_str())
        .collect();
    assert_eq!(events, ["accepted", "canceled"]);

    refusals_answer_on_their_request_id(&mut client).await;
}

/// Refusals come back on the same request id, with the REST error shape.
async fn refusals_answer_on_their_request_id(client: &mut Client) {
    send(
        client,
        json!({ "type": "place", "request_id": 3, "symbol": "BTC-USD", "side": "sell",
            "price": "105.001", "qty": "1" }),
    )
    .await;
    let refused = next_of(client, "response").await;
    assert_eq!(refused["ok"], false);
    assert_eq!(
        (
            refused["error"]["code"].as_str(),
            refused["error"]["status"].as_u64()
        ),
        (Some("price_not_on_tick"), Some(422))
    );
    send(
        client,
        json!({ "type": "place", "request_id": 4, "symbol": "BTC-USD", "side": "sell", "qty": 1 }),
    )
    .await;
    let malformed = next_of(client, "response").await;
    assert_eq!(
        (
            malformed["request_id"].as_u64(),
            malformed["error"]["code"].as_str()
        ),
        (Some(4), Some("invalid_type"))
    );
}

#[tokio::test]
async fn fills_from_other_connections_reach_the_owner() {
    let node = funded_node().await;
    let (app, addr) = serve(&node).await;
    let mut maker = authenticated(addr, 2, json!({})).await;
    let ask = r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"1"}"#;
    translate::execute(
        &app.handle,
        translate::place(2, error::parse_json(ask.as_bytes()).expect("json")).expect("place"),
    )
    .await
    .expect("rests");
    let bid = r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"0.25"}"#;
    translate::execute(
        &app.handle,
        translate::place(1, error::parse_json(bid.as_bytes()).expect("json")).expect("place"),
    )
    .await
    .expect("trades");
    let seen = read_until(&mut maker, |s| !of_type(s, "fill").is_empty()).await;
    let fill = of_type(&seen, "fill")[0];
    assert_eq!(
        (
            fill["qty"].as_str(),
            fill["liquidity"].as_str(),
            fill["side"].as_str()
        ),
        (Some("0.25"), Some("maker"), Some("sell"))
    );
    // Nothing of account 1's own order reached account 2.
    assert!(
        seen.iter()
            .all(|m| m["event"] != "accepted" || m["side"] == "sell"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn control_messages_and_bad_auth() {
    let node = funded_node().await;
    let (_, addr) = serve(&node).await;
    let mut client = authenticated(addr, 1, json!({})).await;
    send(
        &mut client,
        json!({ "type": "subscribe", "request_id": 9, "channel": "book" }),
    )
    .await;
    assert_eq!(
        next(&mut client)
            .await
            .map(|m| (m["code"].clone(), m["request_id"].clone())),
        Some((json!("unsupported"), json!(9)))
    );
    send(&mut client, json!({ "type": "ping" })).await;
    assert_eq!(
        next(&mut client).await.map(|m| m["type"].clone()),
        Some(json!("pong"))
    );
    send(&mut client, json!({ "type": "teleport" })).await;
    assert_eq!(
        next(&mut client).await.map(|m| m["code"].clone()),
        Some(json!("unknown_type"))
    );
    client
        .send(WsMessage::text("not json"))
        .await
        .expect("send");
    assert_eq!(
        next(&mut client).await.map(|m| m["code"].clone()),
        Some(json!("malformed_json"))
    );

    let mut forged = connect(addr).await;
    let bad = auth_message(1, json!({})).replace("\"signature\":\"", "\"signature\":\"00");
    forged.send(WsMessage::text(bad)).await.expect("send");
    let refused = next(&mut forged).await.expect("refusal");
    assert_eq!(
        (refused["ok"].as_bool(), refused["code"].as_str()),
        (Some(false), Some("invalid_signature"))
    );
    assert_eq!(next(&mut forged).await, None, "closed after a failed auth");

    let mut eager = connect(addr).await;
    send(&mut eager, json!({ "type": "place", "symbol": "BTC-USD" })).await;
    assert_eq!(
        next(&mut eager).await.map(|m| m["code"].clone()),
        Some(json!("auth_required"))
    );
    assert_eq!(next(&mut eager).await, None);
}

async fn open_orders(app: &AppState, account: u64) -> usize {
    app.handle
        .orders(exchange_node::OrderQuery::Open {
            accounts: vec![account],
            symbol: None,
        })
        .await
        .expect("read")
        .orders
        .len()
}

#[tokio::test]
async fn cancel_on_disconnect_cancels_only_when_asked() {
    let node = funded_node().await;
    let (app, addr) = serve(&node).await;
    for (account, extra) in [(2, json!({})), (1, json!({ "cancel_on_disconnect": true }))] {
        let mut client = authenticated(addr, account, extra).await;
        let side = if account == 1 { "buy" } else { "sell" };
        let price = if account == 1 { "95" } else { "105" };
        send(
            &mut client,
            json!({ "type": "place", "request_id": 1, "symbol": "BTC-USD", "side": side,
                "price": price, "qty": "1" }),
        )
        .await;
        let answer = next_of(&mut client, "response").await;
        assert_eq!(answer["ok"], true, "{answer}");
        client.close(None).await.expect("close");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while open_orders(&app, 1).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "account 1's order outlived its socket"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(open_orders(&app, 2).await, 1, "account 2 did not opt in");

    // The separate message turns it on (and off) for a live socket.
    let mut client = authenticated(addr, 2, json!({})).await;
    send(
        &mut client,
        json!({ "type": "cancel_on_disconnect", "enabled": true, "request_id": "c" }),
    )
    .await;
    assert_eq!(
        next(&mut client).await,
        Some(json!({ "type": "cancel_on_disconnect", "enabled": true, "request_id": "c" }))
    );
    drop(client);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while open_orders(&app, 2).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "account 2's order outlived its socket"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_lagging_socket_is_told_and_closed() {
    let node = funded_node_with(2).await;
    let (app, addr) = serve(&node).await;
    let mut client = authenticated(addr, 1, json!({})).await;
    let target = app.handle.metrics.applied_index.load(Ordering::Relaxed) + 20;
    for _ in 0..20 {
        let command = translate::mass_cancel(1, None).expect("command");
        app.handle
            .submit_detached(translate::entry(command))
            .expect("queued");
    }
    // Hold this single-threaded runtime so the session cannot read while
    // the core publishes twenty entries into a buffer of two.
    while app.handle.metrics.applied_index.load(Ordering::Relaxed) < target {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut last = None;
    while let Some(message) = next(&mut client).await {
        last = Some(message);
    }
    assert_eq!(
        last.map(|m| m["code"].clone()),
        Some(json!("slow_consumer"))
    );
}

/// A captured `auth` message opens one socket, not a second.
#[tokio::test]
async fn a_replayed_auth_message_opens_no_second_socket() {
    let node = funded_node().await;
    let (_, addr) = serve(&node).await;
    let captured = auth_message(1, json!({}));
    let mut first = connect(addr).await;
    first
        .send(WsMessage::text(captured.clone()))
        .await
        .expect("send auth");
    assert_eq!(
        next(&mut first).await.expect("auth reply"),
        json!({ "type": "auth", "ok": true, "account_id": 1 })
    );
    let mut second = connect(addr).await;
    second
        .send(WsMessage::text(captured))
        .await
        .expect("send auth");
    let refused = next(&mut second).await.expect("auth reply");
    assert_eq!(
        (refused["ok"].as_bool(), refused["code"].as_str()),
        (Some(false), Some("replayed_request")),
        "{refused}"
    );
    // The genuine socket still works.
    send(&mut first, json!({ "type": "ping" })).await;
    assert_eq!(next_of(&mut first, "pong").await["type"], "pong");
}

#[tokio::test]
async fn market_to_limit_and_min_qty_orders_are_placed_over_websocket() {
    let node = funded_node().await;
    let (_, addr) = serve(&node).await;
    let mut seller = authenticated(addr, 2, json!({})).await;
    send(
        &mut seller,
        json!({ "type": "place", "request_id": 1, "symbol": "BTC-USD", "side": "sell",
                "price": "100", "qty": "2" }),
    )
    .await;
    assert_eq!(next_of(&mut seller, "response").await["ok"], true);
    let mut buyer = authenticated(addr, 1, json!({})).await;
    // The fast path reads the type; the minimum goes the general way.
    send(
        &mut buyer,
        json!({ "type": "place", "request_id": 2, "symbol": "BTC-USD", "side": "buy",
                "order_type": "market_to_limit", "qty": "1" }),
    )
    .await;
    let placed = next_of(&mut buyer, "response").await;
    assert_eq!(
        (&placed["order"]["price"], &placed["order"]["status"]),
        (&json!("100"), &json!("filled")),
        "{placed}"
    );
    send(
        &mut buyer,
        json!({ "type": "place", "request_id": 3, "symbol": "BTC-USD", "side": "buy",
                "order_type": "limit", "price": "100", "qty": "2", "min_qty": "1.5" }),
    )
    .await;
    let ended = next_of(&mut buyer, "response").await;
    assert_eq!(
        (&ended["order"]["status"], &ended["order"]["filled_qty"]),
        (&json!("expired"), &json!("0")),
        "{ended}"
    );
}
