//! API keys through the router over a real node: scopes, expiry, the
//! allow-list, revocation, rotation, the account's own key routes and
//! Ed25519 keys over REST and WebSocket.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use base64::Engine as _;
use ed25519_dalek::{Signer, SigningKey};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message as WsMessage;

use super::rest_client::*;
use super::test_support::{funded_node, TestNode};
use super::{router, AppState, Config};

const SELL: &str = r#"{"symbol":"BTC-USD","side":"sell","price":"105","qty":"0.1"}"#;

fn admin_request(method: Method, path: &str, body: Value) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("Authorization", format!("Bearer {ADMIN}"))
        .body(Body::from(if body.is_null() {
            String::new()
        } else {
            body.to_string()
        }))
        .expect("request")
}

/// A key for account `account` made through the admin route.
async fn new_key(app: &AppState, account: u64, request: Value) -> Value {
    let path = format!("/admin/accounts/{account}/keys");
    let made = call(app, admin_request(Method::POST, &path, request)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json);
    made.json
}

fn hmac(key: &Value, method: Method, path: &str, body: &str) -> Request<Body> {
    signed_with(
        key["api_key"].as_str().expect("key id"),
        key["api_secret"].as_str().expect("secret"),
        &now(),
        method,
        path,
        body,
    )
}

fn from(mut request: Request<Body>, peer: &str) -> Request<Body> {
    let addr: SocketAddr = peer.parse().expect("address");
    request.extensions_mut().insert(ConnectInfo(addr));
    request
}

fn code(reply: &Reply) -> (StatusCode, Option<&str>) {
    (reply.status, reply.json["code"].as_str())
}

#[tokio::test]
async fn each_route_needs_its_scope() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let reader = new_key(&app, 2, json!({ "scopes": ["read"], "label": "dashboard" })).await;
    assert_eq!(reader["scopes"], json!(["read"]));
    assert_eq!(reader["label"], "dashboard");
    assert_eq!(reader["type"], "hmac");

    let refused = call(&app, hmac(&reader, Method::POST, "/v1/orders", SELL)).await;
    assert_eq!(
        code(&refused),
        (StatusCode::FORBIDDEN, Some("insufficient_scope"))
    );
    assert!(
        refused.json["message"]
            .as_str()
            .is_some_and(|m| m.contains("`trade`")),
        "{}",
        refused.json
    );
    let balances = call(&app, hmac(&reader, Method::GET, "/v1/balances", "")).await;
    assert_eq!(balances.status, StatusCode::OK, "{}", balances.json);
    let cancel_all = call(&app, hmac(&reader, Method::DELETE, "/v1/orders", "")).await;
    assert_eq!(code(&cancel_all).1, Some("insufficient_scope"));

    let trader = new_key(&app, 2, json!({ "scopes": ["trade"] })).await;
    let placed = call(&app, hmac(&trader, Method::POST, "/v1/orders", SELL)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    let read = call(&app, hmac(&trader, Method::GET, "/v1/balances", "")).await;
    assert_eq!(code(&read).1, Some("insufficient_scope"));

    let withdrawal = r#"{"asset":"BTC","amount":"1"}"#;
    let refused = call(
        &app,
        hmac(&trader, Method::POST, "/v1/withdrawals", withdrawal),
    )
    .await;
    assert_eq!(code(&refused).1, Some("insufficient_scope"));
    // The account's first key has every scope.
    let done = call(&app, signed(2, Method::POST, "/v1/withdrawals", withdrawal)).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.json);
    assert_eq!(done.json["total"], "9");
}

#[tokio::test]
async fn an_expired_key_is_refused() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let key = new_key(&app, 1, json!({ "scopes": ["read"], "expires_in_secs": 1 })).await;
    let created = key["created_at"].as_u64().expect("created_at");
    assert_eq!(key["expires_at"].as_u64(), Some(created + 1_000_000_000));
    let before = call(&app, hmac(&key, Method::GET, "/v1/balances", "")).await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.json);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let after = call(&app, hmac(&key, Method::GET, "/v1/balances", "")).await;
    assert_eq!(
        code(&after),
        (StatusCode::UNAUTHORIZED, Some("key_expired"))
    );
}

#[tokio::test]
async fn a_key_with_an_allow_list_works_only_from_its_addresses() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let allow = json!(["10.1.0.0/16", "2001:db8::/32", "127.0.0.1"]);
    let key = new_key(&app, 1, json!({ "scopes": ["read"], "allow": allow })).await;
    assert_eq!(
        key["allow"],
        json!(["10.1.0.0/16", "2001:db8::/32", "127.0.0.1/32"])
    );
    for peer in [
        "10.1.2.3:5000",
        "[2001:db8::7]:5000",
        "[::ffff:127.0.0.1]:80",
    ] {
        let ok = call(
            &app,
            from(hmac(&key, Method::GET, "/v1/balances", ""), peer),
        )
        .await;
        assert_eq!(ok.status, StatusCode::OK, "{peer}: {}", ok.json);
    }
    for peer in ["10.2.0.1:5000", "[2001:db9::1]:5000"] {
        let refused = call(
            &app,
            from(hmac(&key, Method::GET, "/v1/balances", ""), peer),
        )
        .await;
        assert_eq!(
            code(&refused),
            (StatusCode::FORBIDDEN, Some("address_not_allowed")),
            "{peer}"
        );
    }
    // No address known: refused rather than guessed.
    let unknown = call(&app, hmac(&key, Method::GET, "/v1/balances", "")).await;
    assert_eq!(code(&unknown).1, Some("address_not_allowed"));
    let bad = call(
        &app,
        admin_request(
            Method::POST,
            "/admin/accounts/1/keys",
            json!({ "scopes": ["read"], "allow": ["10.0.0.0/40"] }),
        ),
    )
    .await;
    assert_eq!(code(&bad), (StatusCode::BAD_REQUEST, Some("invalid_value")));
}

#[tokio::test]
async fn revoked_and_rotated_keys_stop_working_at_once() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let key = new_key(
        &app,
        1,
        json!({ "scopes": ["read", "trade"], "label": "bot" }),
    )
    .await;
    let id = key["api_key"].as_str().expect("id").to_string();

    let rotated = rotate_with_the_label_and_scopes(&app, &key, &id).await;
    let listed = call(
        &app,
        admin_request(Method::GET, "/admin/accounts/1/keys", Value::Null),
    )
    .await;
    let keys = listed.json["keys"].as_array().expect("keys").clone();
    assert_eq!(keys.len(), 2, "{}", listed.json);
    assert!(keys.iter().all(|k| k.get("api_secret").is_none()));

    let new_id = rotated.json["api_key"].as_str().expect("id");
    let revoke = admin_request(
        Method::DELETE,
        &format!("/admin/keys/{new_id}"),
        Value::Null,
    );
    let revoked = call(&app, revoke).await;
    assert_eq!(
        revoked.json,
        json!({ "api_key": new_id, "account_id": 1, "revoked": true })
    );
    let gone = call(&app, hmac(&rotated.json, Method::GET, "/v1/balances", "")).await;
    assert_eq!(code(&gone).1, Some("invalid_api_key"));
    let again = admin_request(
        Method::DELETE,
        &format!("/admin/keys/{new_id}"),
        Value::Null,
    );
    let again = call(&app, again).await;
    assert_eq!(
        code(&again),
        (StatusCode::NOT_FOUND, Some("unknown_api_key"))
    );
    over_long_key_ids_never_reach_the_log(&app, &node).await;
}

#[tokio::test]
async fn an_account_manages_its_own_keys_with_the_transfer_scope() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let body = r#"{"scopes":["read"],"label":"mine"}"#;
    let made = call(&app, signed(1, Method::POST, "/v1/keys", body)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.json);
    assert_eq!(made.json["account_id"], 1);

    // A read-only key lists but cannot create, nor escalate.
    let listed = call(&app, hmac(&made.json, Method::GET, "/v1/keys", "")).await;
    assert_eq!(listed.json["keys"].as_array().map(Vec::len), Some(2));
    let refused = call(&app, hmac(&made.json, Method::POST, "/v1/keys", body)).await;
    assert_eq!(code(&refused).1, Some("insufficient_scope"));
    let mover = new_key(&app, 1, json!({ "scopes": ["transfer"] })).await;
    let escalate = r#"{"scopes":["trade"]}"#;
    let refused = call(&app, hmac(&mover, Method::POST, "/v1/keys", escalate)).await;
    assert_eq!(
        code(&refused),
        (StatusCode::FORBIDDEN, Some("insufficient_scope"))
    );

    // Another account's key is as good as unknown.
    let id = made.json["api_key"].as_str().expect("id");
    let theirs = call(
        &app,
        signed(2, Method::DELETE, &format!("/v1/keys/{id}"), ""),
    )
    .await;
    assert_eq!(
        code(&theirs),
        (StatusCode::NOT_FOUND, Some("unknown_api_key"))
    );
    let rotated = call(
        &app,
        signed(1, Method::POST, &format!("/v1/keys/{id}/rotate"), ""),
    )
    .await;
    assert_eq!(rotated.status, StatusCode::CREATED, "{}", rotated.json);
    let new_id = rotated.json["api_key"].as_str().expect("id");
    let revoked = call(
        &app,
        signed(1, Method::DELETE, &format!("/v1/keys/{new_id}"), ""),
    )
    .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.json);
    let gone = call(&app, hmac(&rotated.json, Method::GET, "/v1/keys", "")).await;
    assert_eq!(code(&gone).1, Some("invalid_api_key"));
}

fn ed25519_request(
    key_id: &str,
    signing: &SigningKey,
    method: Method,
    path: &str,
    body: &str,
    base64: bool,
) -> Request<Body> {
    let timestamp = now();
    let message = format!("{timestamp}\n{}\n{path}\n{body}", method.as_str());
    let signature = signing.sign(message.as_bytes()).to_bytes();
    let signature = if base64 {
        base64::engine::general_purpose::STANDARD.encode(signature)
    } else {
        hex::encode(signature)
    };
    Request::builder()
        .method(method)
        .uri(path)
        .header("EX-ACCESS-KEY", key_id)
        .header("EX-ACCESS-TIMESTAMP", timestamp)
        .header("EX-ACCESS-SIGN", signature)
        .body(Body::from(body.to_owned()))
        .expect("request")
}

#[tokio::test]
async fn ed25519_keys_sign_rest_requests() {
    let node = funded_node().await;
    let app = app(&node, |_| {});
    let signing = SigningKey::from_bytes(&[9; 32]);
    let public =
        base64::engine::general_purpose::STANDARD.encode(signing.verifying_key().as_bytes());
    let key = new_key(
        &app,
        2,
        json!({ "scopes": ["read", "trade"], "ed25519_public_key": public }),
    )
    .await;
    assert_eq!(key["type"], "ed25519");
    assert!(key.get("api_secret").is_none(), "{key}");
    assert_eq!(
        key["ed25519_public_key"],
        hex::encode(signing.verifying_key().as_bytes())
    );
    let id = key["api_key"].as_str().expect("id");
    for base64 in [false, true] {
        let placed = call(
            &app,
            ed25519_request(id, &signing, Method::POST, "/v1/orders", SELL, base64),
        )
        .await;
        assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.json);
    }
    let other = SigningKey::from_bytes(&[10; 32]);
    let forged = call(
        &app,
        ed25519_request(id, &other, Method::GET, "/v1/balances", "", false),
    )
    .await;
    assert_eq!(
        code(&forged),
        (StatusCode::UNAUTHORIZED, Some("invalid_signature"))
    );
    let not_a_point = call(
        &app,
        admin_request(
            Method::POST,
            "/admin/accounts/2/keys",
            json!({ "scopes": ["read"], "ed25519_public_key": "00".repeat(31) }),
        ),
    )
    .await;
    assert_eq!(
        code(&not_a_point),
        (StatusCode::BAD_REQUEST, Some("invalid_value"))
    );
}

async fn serve_with_addresses(node: &TestNode) -> SocketAddr {
    let app = AppState::new(
        node.pipeline.handle.clone(),
        Config::default(),
        crate::config::GatewayConfig::default(),
        ADMIN.into(),
        Arc::new(AtomicBool::new(true)),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let served = router(app).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, served).await });
    addr
}

async fn ws_reply(addr: SocketAddr, auth: Value, then: Option<Value>) -> Vec<Value> {
    let (mut client, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/v1/ws"))
        .await
        .expect("connect");
    client
        .send(WsMessage::text(auth.to_string()))
        .await
        .expect("send");
    if let Some(then) = then {
        client
            .send(WsMessage::text(then.to_string()))
            .await
            .expect("send");
    }
    let mut seen: Vec<Value> = Vec::new();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(2), client.next()).await
    {
        match message {
            WsMessage::Text(text) => seen.push(serde_json::from_str(text.as_str()).expect("json")),
            WsMessage::Close(_) => break,
            _ => {}
        }
        if seen
            .iter()
            .any(|m| m["type"] == "error" || m["ok"] == false)
        {
            break;
        }
    }
    seen
}

#[tokio::test]
async fn websockets_take_ed25519_keys_and_hold_keys_to_scope_and_address() {
    let node = funded_node().await;
    let addr = serve_with_addresses(&node).await;
    let app = app(&node, |_| {});
    let signing = SigningKey::from_bytes(&[5; 32]);
    let public = hex::encode(signing.verifying_key().as_bytes());
    let reader = new_key(
        &app,
        2,
        json!({ "scopes": ["read"], "ed25519_public_key": public }),
    )
    .await;
    let timestamp: u64 = now().parse().expect("now");
    // Each socket signs at another second: no two auth messages are alike.
    let auth_at = |ago: u64| {
        let at = timestamp - ago;
        let signature = signing.sign(format!("{at}\nGET\n/v1/ws\n").as_bytes());
        json!({ "type": "auth", "key": reader["api_key"], "timestamp": at,
                "signature": hex::encode(signature.to_bytes()) })
    };
    let place = json!({ "type": "place", "request_id": "p", "symbol": "BTC-USD", "side": "sell",
                        "order_type": "limit", "price": "105", "qty": "0.1" });
    let seen = ws_reply(addr, auth_at(0), Some(place)).await;
    assert_eq!(
        seen[0],
        json!({ "type": "auth", "ok": true, "account_id": 2 })
    );
    let refusal = seen
        .iter()
        .find(|m| m["error"]["code"] == "insufficient_scope");
    assert!(refusal.is_some(), "{seen:?}");
    // Cancelling the account's orders on disconnect is trading too.
    let mut with_cancel = auth_at(1);
    with_cancel["cancel_on_disconnect"] = json!(true);
    let seen = ws_reply(addr, with_cancel, None).await;
    assert_eq!(seen[0]["code"], "insufficient_scope", "{seen:?}");
    let setting = json!({ "type": "cancel_on_disconnect", "enabled": true });
    let seen = ws_reply(addr, auth_at(2), Some(setting)).await;
    assert_eq!(seen[1]["code"], "insufficient_scope", "{seen:?}");

    let fenced = new_key(
        &app,
        2,
        json!({ "scopes": ["read"], "allow": ["10.0.0.0/8"] }),
    )
    .await;
    let secret = fenced["api_secret"].as_str().expect("secret");
    let signature = super::auth::sign(secret, &timestamp.to_string(), "GET", "/v1/ws", b"");
    let auth = json!({ "type": "auth", "key": fenced["api_key"], "timestamp": timestamp,
                       "signature": signature });
    let seen = ws_reply(addr, auth, None).await;
    assert_eq!(seen[0]["code"], "address_not_allowed", "{seen:?}");
}

/// The rotated key keeps the label and scopes under a new id and secret;
/// the old key stops working at once. Returns the rotated key.
async fn rotate_with_the_label_and_scopes(app: &AppState, key: &Value, id: &str) -> Reply {
    let rotated = call(
        app,
        admin_request(
            Method::POST,
            &format!("/admin/keys/{id}/rotate"),
            Value::Null,
        ),
    )
    .await;
    assert_eq!(rotated.status, StatusCode::CREATED, "{}", rotated.json);
    assert_ne!(rotated.json["api_key"], key["api_key"]);
    assert_ne!(rotated.json["api_secret"], key["api_secret"]);
    assert_eq!(rotated.json["label"], "bot");
    assert_eq!(rotated.json["scopes"], json!(["read", "trade"]));
    let old = call(app, hmac(key, Method::GET, "/v1/balances", "")).await;
    assert_eq!(
        code(&old),
        (StatusCode::UNAUTHORIZED, Some("invalid_api_key"))
    );
    let new = call(app, hmac(&rotated.json, Method::GET, "/v1/balances", "")).await;
    assert_eq!(new.status, StatusCode::OK);

    // A rotation's body is held to the body limit like any other.
    let huge = json!({ "ed25519_public_key": "a".repeat(20_000) });
    let refused = call(
        app,
        admin_request(Method::POST, &format!("/admin/keys/{id}/rotate"), huge),
    )
    .await;
    assert_eq!(
        code(&refused),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("body_too_large"))
    );
    rotated
}

/// An id longer than any key's is unknown to revocation and rotation
/// alike, and never reaches the log.
async fn over_long_key_ids_never_reach_the_log(app: &AppState, node: &TestNode) {
    let long = "k".repeat(2_000);
    let position = || async { node.pipeline.handle.position().await.expect("position") };
    let before = position().await;
    for (method, path) in [
        (Method::DELETE, format!("/admin/keys/{long}")),
        (Method::POST, format!("/admin/keys/{long}/rotate")),
    ] {
        let refused = call(app, admin_request(method, &path, Value::Null)).await;
        assert_eq!(
            code(&refused),
            (StatusCode::NOT_FOUND, Some("unknown_api_key"))
        );
    }
    assert_eq!(position().await, before);
}
