//! `exchange serve` over WebSocket: authentication, order entry with
//! request ids, the private stream, and cancel-on-disconnect.

use exchange_testkit::ws::{auth_message, authenticated, close_code, collect, connect, next, send};
use exchange_testkit::{limit, sign, unix_now_ms, wait_until, Account, Client, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn response_to(id: Value) -> impl Fn(&Value) -> bool {
    move |m| m["type"] == "response" && m["request_id"] == id
}

fn order_event(event: &'static str, client_order_id: &'static str) -> impl Fn(&Value) -> bool {
    move |m| m["type"] == "order" && m["event"] == event && m["client_order_id"] == client_order_id
}

fn place_message(
    request_id: Value,
    side: &str,
    price: &str,
    qty: &str,
    client_order_id: &str,
) -> Value {
    json!({ "type": "place", "request_id": request_id, "symbol": "BTC-USD", "side": side,
            "order_type": "limit", "price": price, "qty": qty, "client_order_id": client_order_id })
}

#[test]
fn bad_authentication_is_refused_and_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let alice = server.api.funded_account();

    let mut forged = auth_message(&alice, false);
    forged["signature"] = json!("0".repeat(64));
    let mut stale = auth_message(&alice, false);
    let old = unix_now_ms() - 120_000;
    stale["timestamp"] = json!(old.to_string());
    stale["signature"] = json!(sign(&alice.secret, &old.to_string(), "GET", "/v1/ws", b""));
    let cases = [
        (forged, "invalid_signature"),
        (stale, "stale_timestamp"),
        (json!({ "type": "ping" }), "auth_required"),
    ];
    for (first, code) in cases {
        let mut socket = connect(&server.api);
        send(&mut socket, &first);
        let answer = next(&mut socket).expect("an auth refusal");
        assert_eq!(
            (answer["type"].as_str(), answer["ok"].as_bool()),
            (Some("auth"), Some(false)),
            "{answer}"
        );
        assert_eq!(answer["code"], code, "{first}");
        assert_eq!(close_code(&mut socket), 1008, "after {code}");
    }
    // A plain GET on the WebSocket route is told what it needs.
    let plain = server.api.signed(&alice, "GET", "/v1/ws", "");
    assert_eq!(plain.status / 100, 4, "{}", plain.text());
    assert_eq!(plain.code(), "websocket_required");
    server.api.assert_healthy("refused sockets");
}

#[test]
fn orders_over_the_socket_get_answers_and_private_updates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let (alice, bob) = (api.funded_account(), api.funded_account());
    let mut socket = authenticated(&api, &alice, false);

    send(&mut socket, &json!({ "type": "ping", "request_id": "p" }));
    assert_eq!(
        next(&mut socket),
        Some(json!({ "type": "pong", "request_id": "p" }))
    );

    send(
        &mut socket,
        &place_message(json!(1), "buy", "59000", "0.3", "ws-1"),
    );
    let got = collect(
        &mut socket,
        &[&response_to(json!(1)), &order_event("accepted", "ws-1")],
    );
    let order = &got[0]["order"];
    assert_eq!(got[0]["ok"], true, "{}", got[0]);
    assert_eq!(
        (order["status"].as_str(), order["client_order_id"].as_str()),
        (Some("new"), Some("ws-1"))
    );
    let id = order["order_id"].as_u64().expect("order id");
    assert_eq!(got[1]["order_id"], id);
    assert_eq!(
        (got[1]["price"].as_str(), got[1]["qty"].as_str()),
        (Some("59000"), Some("0.3"))
    );

    a_rest_trade_fills_it(&api, &bob, &mut socket, id);

    a_refusal_is_a_response(&mut socket);

    pipelined_commands_are_sequenced_in_order(&mut socket);

    // REST sees what the socket did.
    let rest = api
        .signed(&alice, "GET", &format!("/v1/orders/{id}"), "")
        .json();
    assert_eq!(
        (rest["status"].as_str(), rest["filled_qty"].as_str()),
        (Some("partially_filled"), Some("0.1"))
    );
    send(&mut socket, &json!({ "type": "auth" }));
    let again = collect(&mut socket, &[&|m: &Value| m["type"] == "error"]);
    assert_eq!(again[0]["code"], "already_authenticated");
}

fn a_rest_trade_fills_it(
    api: &Client,
    bob: &Account,
    socket: &mut exchange_testkit::ws::Socket,
    id: u64,
) {
    // Another account's REST order trades against it: Alice hears the fill.
    let taker = api.place(
        bob,
        &json!({ "symbol": "BTC-USD", "side": "sell", "type": "market", "qty": "0.1" }),
    );
    assert_eq!(taker["status"], "filled", "{taker}");
    let fill = collect(
        socket,
        &[&|m: &Value| m["type"] == "fill" && m["order_id"] == id],
    );
    assert_eq!(
        (fill[0]["qty"].as_str(), fill[0]["liquidity"].as_str()),
        (Some("0.1"), Some("maker"))
    );
    assert_eq!(
        (fill[0]["price"].as_str(), fill[0]["side"].as_str()),
        (Some("59000"), Some("buy"))
    );
}

fn a_refusal_is_a_response(socket: &mut exchange_testkit::ws::Socket) {
    // Refusals come back as responses with the REST status.
    send(
        socket,
        &place_message(json!("bad"), "buy", "59000.001", "0.1", "ws-bad"),
    );
    let refused = collect(socket, &[&response_to(json!("bad"))]);
    assert_eq!(refused[0]["ok"], false);
    assert_eq!(
        (
            refused[0]["error"]["code"].as_str(),
            refused[0]["error"]["status"].as_u64()
        ),
        (Some("price_not_on_tick"), Some(422))
    );
}

fn pipelined_commands_are_sequenced_in_order(socket: &mut exchange_testkit::ws::Socket) {
    // Pipelined commands are sequenced in the order sent.
    send(
        socket,
        &place_message(json!(2), "buy", "58000", "0.1", "ws-2"),
    );
    send(
        socket,
        &place_message(json!(3), "buy", "58000", "0.1", "ws-3"),
    );
    let both = collect(socket, &[&response_to(json!(2)), &response_to(json!(3))]);
    let (second, third) = (&both[0]["order"]["order_id"], &both[1]["order"]["order_id"]);
    assert!(
        second.as_u64() < third.as_u64(),
        "pipelined places out of order: {second} then {third}"
    );

    send(
        socket,
        &json!({ "type": "cancel", "request_id": [4], "order_id": second }),
    );
    let canceled = collect(
        socket,
        &[&response_to(json!([4])), &order_event("canceled", "ws-2")],
    );
    assert_eq!(
        canceled[0]["order"]["status"], "canceled",
        "{}",
        canceled[0]
    );
    assert_eq!(canceled[1]["reason"], "requested");
    send(
        socket,
        &json!({ "type": "replace", "request_id": 5, "client_order_id": "ws-3", "qty": "0.05" }),
    );
    let replaced = collect(
        socket,
        &[&response_to(json!(5)), &order_event("replaced", "ws-3")],
    );
    assert_eq!(replaced[0]["order"]["qty"], "0.05", "{}", replaced[0]);
}

fn open_orders(api: &Client, account: &Account) -> Vec<Value> {
    let listed = api.read(account, "/v1/orders");
    listed["orders"].as_array().expect("orders").clone()
}

#[test]
fn cancel_on_disconnect_cancels_the_accounts_open_orders() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let (alice, bob) = (api.funded_account(), api.funded_account());
    let bobs = api.place(&bob, &limit("buy", "58500", "0.2", "bob-rest"));
    let rest_placed = api.place(&alice, &limit("sell", "61500", "0.2", "alice-rest"));

    enabled_by_message_then_closed(&api, &alice, &bob, &bobs);

    enabled_in_auth_then_lost(&api, &alice);

    without_it_orders_outlive_the_socket(&api, &alice, &bob, &rest_placed);
}

fn enabled_by_message_then_closed(api: &Client, alice: &Account, bob: &Account, bobs: &Value) {
    // Enabled by message after auth; the socket is closed politely.
    let mut socket = authenticated(api, alice, false);
    send(
        &mut socket,
        &json!({ "type": "cancel_on_disconnect", "enabled": true, "request_id": 7 }),
    );
    assert_eq!(
        next(&mut socket),
        Some(json!({ "type": "cancel_on_disconnect", "enabled": true, "request_id": 7 }))
    );
    send(
        &mut socket,
        &place_message(json!(1), "buy", "59000", "0.1", "cod-1"),
    );
    send(
        &mut socket,
        &place_message(json!(2), "sell", "61000", "0.1", "cod-2"),
    );
    collect(
        &mut socket,
        &[&response_to(json!(1)), &response_to(json!(2))],
    );
    assert_eq!(
        open_orders(api, alice).len(),
        3,
        "Alice's orders before the disconnect"
    );
    socket.close(None).expect("close");
    while next(&mut socket).is_some() {}
    wait_until("cancel-on-disconnect", || {
        open_orders(api, alice).is_empty()
    });
    let all = api.signed(alice, "GET", "/v1/orders?status=all", "").json();
    for order in all["orders"].as_array().expect("orders") {
        assert_eq!(order["status"], "canceled", "{order}");
    }
    assert_eq!(all["orders"].as_array().map(Vec::len), Some(3), "{all}");
    let bob_order = api
        .signed(bob, "GET", &format!("/v1/orders/{}", bobs["order_id"]), "")
        .json();
    assert_eq!(
        bob_order["status"], "new",
        "another account's order was canceled"
    );
}

fn enabled_in_auth_then_lost(api: &Client, alice: &Account) {
    // Enabled in `auth`; the connection is lost without a close frame.
    let mut socket = authenticated(api, alice, true);
    send(
        &mut socket,
        &place_message(json!(3), "buy", "59100", "0.1", "cod-3"),
    );
    collect(&mut socket, &[&response_to(json!(3))]);
    assert_eq!(open_orders(api, alice).len(), 1);
    drop(socket);
    wait_until("cancel-on-disconnect after a lost connection", || {
        open_orders(api, alice).is_empty()
    });
}

fn without_it_orders_outlive_the_socket(
    api: &Client,
    alice: &Account,
    bob: &Account,
    rest_placed: &Value,
) {
    // Without it, orders outlive the socket.
    let mut socket = authenticated(api, alice, false);
    send(
        &mut socket,
        &place_message(json!(4), "buy", "59200", "0.1", "keep"),
    );
    collect(&mut socket, &[&response_to(json!(4))]);
    drop(socket);
    // The gauge drops when the session has ended, after it would have
    // queued its mass cancel; Bob's later command is sequenced behind that.
    wait_until("the session to end", || {
        api.metric("exchange_ws_connections") == 0
    });
    api.place(bob, &limit("buy", "58000", "0.1", "canary"));
    let left = open_orders(api, alice);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["client_order_id"], "keep");
    assert_ne!(rest_placed["order_id"], left[0]["order_id"]);
}
