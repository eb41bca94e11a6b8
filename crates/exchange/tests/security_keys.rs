//! API key management on the real binary, held against escalation: a key
//! manages only keys it covers (scopes, allow-list, expiry), a key's
//! children inherit its restrictions, revocation, rotation and expiry close
//! the WebSockets opened with the key, and what a key is made of (label,
//! Ed25519 public key, allow-list entries) is checked at creation.

use std::net::Ipv4Addr;

use exchange_testkit::ws::{authenticated, next, Socket};
use exchange_testkit::{
    build_request, resting_order, send_raw_from, signature_headers, unix_now_ms, Account, Client,
    Response, Server,
};
use serde_json::{json, Value};

const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Another client machine, as the server sees it.
const ELSEWHERE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn account_from(id: u64, made: &Response) -> Account {
    let body = made.json();
    Account {
        id,
        key: body["api_key"].as_str().expect("api_key").to_owned(),
        secret: body["api_secret"].as_str().expect("api_secret").to_owned(),
    }
}

/// A key the operator makes for `account`.
fn admin_key(api: &Client, account: u64, request: Value) -> Account {
    let path = format!("/admin/accounts/{account}/keys");
    let made = api.admin("POST", &path, &request.to_string());
    assert_eq!(made.status, 201, "{}", made.text());
    account_from(account, &made)
}

/// A signed request sent from `source`.
fn signed_from(
    api: &Client,
    source: Ipv4Addr,
    key: &Account,
    method: &str,
    path: &str,
    body: &str,
) -> Response {
    let headers = signature_headers(key, unix_now_ms(), method, path, body.as_bytes());
    let request = build_request(method, path, &headers, body.as_bytes());
    send_raw_from(source, api.port, &request).expect("a signed request from another address")
}

fn key_listed(api: &Client, owner: &Account, key_id: &str) -> Value {
    let listed = api.read(owner, "/v1/keys");
    listed["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["api_key"] == key_id)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_key_manages_only_keys_it_covers() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let mover = admin_key(&api, owner.id, json!({ "scopes": ["transfer"] }));

    // The transfer-only key can neither take over nor remove the owner's key.
    let rotate = format!("/v1/keys/{}/rotate", owner.key);
    api.signed(&mover, "POST", &rotate, "").expect_error(
        403,
        "key_not_covered",
        "a narrower key rotating a wider one",
    );
    let revoke = format!("/v1/keys/{}", owner.key);
    api.signed(&mover, "DELETE", &revoke, "").expect_error(
        403,
        "key_not_covered",
        "a narrower key revoking a wider one",
    );
    api.signed(
        &mover,
        "POST",
        "/v1/keys",
        &json!({ "scopes": ["read"] }).to_string(),
    )
    .expect_error(
        403,
        "insufficient_scope",
        "a narrower key minting a wider one",
    );
    assert_eq!(api.signed(&owner, "GET", "/v1/balances", "").status, 200);

    // What it covers it manages: a key as narrow as itself, and itself.
    let sibling = admin_key(&api, owner.id, json!({ "scopes": ["transfer"] }));
    let rotated = api.signed(
        &mover,
        "POST",
        &format!("/v1/keys/{}/rotate", sibling.key),
        "",
    );
    assert_eq!(rotated.status, 201, "{}", rotated.text());
    let own = api.signed(
        &mover,
        "POST",
        &format!("/v1/keys/{}/rotate", mover.key),
        "",
    );
    assert_eq!(own.status, 201, "{}", own.text());
    let mover = account_from(owner.id, &own);

    // The wider key manages the narrower one.
    let revoked = api.signed(&owner, "DELETE", &format!("/v1/keys/{}", mover.key), "");
    assert_eq!(revoked.status, 200, "{}", revoked.text());

    // A key with an allow-list does not cover one usable from anywhere,
    // even of the same scopes.
    let bound = admin_key(
        &api,
        owner.id,
        json!({ "scopes": ["read", "trade", "transfer"], "allow": ["127.0.0.1"] }),
    );
    let free = admin_key(&api, owner.id, json!({ "scopes": ["read"] }));
    api.signed(&bound, "POST", &format!("/v1/keys/{}/rotate", free.key), "")
        .expect_error(403, "key_not_covered", "a bound key rotating a free one");
    assert_eq!(api.signed(&free, "GET", "/v1/balances", "").status, 200);
}

#[test]
fn a_restricted_key_mints_only_keys_as_restricted() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let parent = admin_key(
        &api,
        owner.id,
        json!({ "scopes": ["read", "trade", "transfer"], "allow": ["127.0.0.2"],
                "expires_in_secs": 30 }),
    );
    let parent_expiry = key_listed(&api, &owner, &parent.key)["expires_at"].clone();
    assert!(parent_expiry.is_u64(), "{parent_expiry}");

    // Asked for nothing, the child gets the parent's restrictions.
    let request = json!({ "scopes": ["read"] }).to_string();
    let made = signed_from(&api, ELSEWHERE, &parent, "POST", "/v1/keys", &request);
    assert_eq!(made.status, 201, "{}", made.text());
    let body = made.json();
    assert_eq!(body["allow"], json!(["127.0.0.2/32"]), "{body}");
    assert_eq!(body["expires_at"], parent_expiry, "{body}");
    let child = account_from(owner.id, &made);
    api.signed(&child, "GET", "/v1/balances", "").expect_error(
        403,
        "address_not_allowed",
        "the child of a bound key used from elsewhere",
    );
    let from_home = signed_from(&api, ELSEWHERE, &child, "GET", "/v1/balances", "");
    assert_eq!(from_home.status, 200, "{}", from_home.text());

    // Asked for more, it is refused, and nothing is made.
    let wider = [
        json!({ "scopes": ["read"], "allow": ["0.0.0.0/0"] }),
        json!({ "scopes": ["read"], "allow": ["127.0.0.0/24"] }),
        json!({ "scopes": ["read"], "expires_in_secs": 3600 }),
    ];
    let before = api.read(&owner, "/v1/keys")["keys"]
        .as_array()
        .map(Vec::len);
    for request in wider {
        let text = request.to_string();
        let refused = signed_from(&api, ELSEWHERE, &parent, "POST", "/v1/keys", &text);
        refused.expect_error(403, "key_not_covered", &text);
    }
    let after = api.read(&owner, "/v1/keys")["keys"]
        .as_array()
        .map(Vec::len);
    assert_eq!(before, after);

    // Narrower than the parent is fine.
    let narrower = json!({ "scopes": ["read"], "allow": ["127.0.0.2/32"], "expires_in_secs": 5 });
    let made = signed_from(
        &api,
        ELSEWHERE,
        &parent,
        "POST",
        "/v1/keys",
        &narrower.to_string(),
    );
    assert_eq!(made.status, 201, "{}", made.text());
}

/// Reads the socket until it closes; returns the error code it was told
/// and whether any private order message came before.
fn read_until_closed(socket: &mut Socket) -> (Option<String>, Vec<Value>) {
    let mut orders = Vec::new();
    let mut code = None;
    while let Some(message) = next(socket) {
        match message["type"].as_str() {
            Some("error") => code = message["code"].as_str().map(str::to_owned),
            Some("order" | "fill") => orders.push(message),
            _ => {}
        }
    }
    (code, orders)
}

#[test]
fn revocation_rotation_and_expiry_close_the_keys_sockets() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let reader = |request: Value| admin_key(&api, owner.id, request);
    let revoked = reader(json!({ "scopes": ["read"] }));
    let rotated = reader(json!({ "scopes": ["read"] }));
    let expiring = reader(json!({ "scopes": ["read"], "expires_in_secs": 2 }));
    let mut owners_socket = authenticated(&api, &owner, false);
    let mut revoked_socket = authenticated(&api, &revoked, false);
    let mut rotated_socket = authenticated(&api, &rotated, false);
    let mut expiring_socket = authenticated(&api, &expiring, false);

    let gone = api.admin("DELETE", &format!("/admin/keys/{}", revoked.key), "");
    assert_eq!(gone.status, 200, "{}", gone.text());
    let renewed = api.admin("POST", &format!("/admin/keys/{}/rotate", rotated.key), "");
    assert_eq!(renewed.status, 201, "{}", renewed.text());
    // The account keeps trading: a socket left open would see it.
    let placed = api.signed(
        &owner,
        "POST",
        "/v1/orders",
        &resting_order(1, "after-revoke"),
    );
    assert_eq!(placed.status, 201, "{}", placed.text());

    let (code, orders) = read_until_closed(&mut revoked_socket);
    assert_eq!(code.as_deref(), Some("key_revoked"), "{orders:?}");
    assert!(orders.is_empty(), "a revoked key's socket got {orders:?}");
    let (code, orders) = read_until_closed(&mut rotated_socket);
    assert_eq!(code.as_deref(), Some("key_revoked"), "{orders:?}");
    assert!(orders.is_empty(), "a rotated key's socket got {orders:?}");
    // Expiry closes the socket by itself, whether or not anything is sent.
    let (code, _) = read_until_closed(&mut expiring_socket);
    assert_eq!(code.as_deref(), Some("key_expired"));

    // The owner's own socket is untouched and still served.
    let first = next(&mut owners_socket).expect("the owner's socket is open");
    assert_eq!(first["type"], "order", "{first}");
    assert_eq!(first["client_order_id"], "after-revoke", "{first}");
}

#[test]
fn labels_are_printable_text() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let refused = [
        "invoice\u{202E}fdp.exe",
        "a\u{2066}b",
        "zero\u{200B}width",
        "bell\u{7}",
        "new\nline",
        "soft\u{AD}hyphen",
        &"x".repeat(65),
    ];
    for label in refused {
        let request = json!({ "scopes": ["read"], "label": label }).to_string();
        api.signed(&owner, "POST", "/v1/keys", &request)
            .expect_error(400, "invalid_label", &format!("{label:?}"));
        let path = format!("/admin/accounts/{}/keys", owner.id);
        api.admin("POST", &path, &request).expect_error(
            400,
            "invalid_label",
            &format!("{label:?} (admin)"),
        );
    }
    for label in ["desk 1 — algo", "Zürich, 東京", "a-b_c.d (e)"] {
        let request = json!({ "scopes": ["read"], "label": label }).to_string();
        let made = api.signed(&owner, "POST", "/v1/keys", &request);
        assert_eq!(made.status, 201, "{label:?}: {}", made.text());
        assert_eq!(made.json()["label"], label);
    }
}

#[test]
fn small_order_ed25519_keys_are_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    // The identity, and a point of order 4 (y = 0).
    let identity = format!("01{}", "00".repeat(31));
    let order_four = "00".repeat(32);
    for public_key in [identity, order_four] {
        let request = json!({ "scopes": ["read"], "ed25519_public_key": public_key }).to_string();
        api.signed(&owner, "POST", "/v1/keys", &request)
            .expect_error(400, "weak_public_key", &public_key);
    }
    // A rotation to a small-order key is refused alike.
    let real = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let request = json!({ "scopes": ["read"], "ed25519_public_key": real }).to_string();
    let made = api.signed(&owner, "POST", "/v1/keys", &request);
    assert_eq!(made.status, 201, "{}", made.text());
    let key_id = made.json()["api_key"].as_str().expect("api_key").to_owned();
    let weak = json!({ "ed25519_public_key": format!("01{}", "00".repeat(31)) }).to_string();
    api.signed(&owner, "POST", &format!("/v1/keys/{key_id}/rotate"), &weak)
        .expect_error(400, "weak_public_key", "rotating to the identity");
}

#[test]
fn ipv4_mapped_allow_entries_match_ipv4_peers() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let path = format!("/admin/accounts/{}/keys", owner.id);
    let request =
        json!({ "scopes": ["read"], "allow": ["::ffff:127.0.0.2", "::ffff:10.0.0.0/104"] });
    let made = api.admin("POST", &path, &request.to_string());
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(
        made.json()["allow"],
        json!(["127.0.0.2/32", "10.0.0.0/8"]),
        "{}",
        made.text()
    );
    let key = account_from(owner.id, &made);
    let from_there = signed_from(&api, ELSEWHERE, &key, "GET", "/v1/balances", "");
    assert_eq!(from_there.status, 200, "{}", from_there.text());
    api.signed(&key, "GET", "/v1/balances", "").expect_error(
        403,
        "address_not_allowed",
        "from 127.0.0.1",
    );
}
