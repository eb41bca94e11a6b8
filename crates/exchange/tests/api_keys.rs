//! API keys on the real binary: a read-only key cannot trade; no API
//! secret reaches the journal or a snapshot, and keys still verify after a
//! restart; on a three-node cluster a key made on the leader verifies on
//! every node, and once revoked is refused by every node.

use std::path::Path;

use exchange_testkit::{
    leader_port, ready_leader, resting_order, wait_until, Account, CliCluster, Client, Server,
};
use serde_json::{json, Value};

const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn new_key(api: &Client, account: u64, request: Value) -> Account {
    let path = format!("/admin/accounts/{account}/keys");
    let made = api.admin("POST", &path, &request.to_string());
    assert_eq!(made.status, 201, "{}", made.text());
    let body = made.json();
    Account {
        id: account,
        key: body["api_key"].as_str().expect("api_key").to_owned(),
        secret: body["api_secret"].as_str().expect("api_secret").to_owned(),
    }
}

/// Every file under `dir` (the master key's own file aside), as bytes.
fn stored_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n != "master_key") {
                let bytes = std::fs::read(&path).expect("read file");
                files.push((path.display().to_string(), bytes));
            }
        }
    }
    files
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn keys_are_scoped_and_no_secret_is_stored() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let owner = server.api.funded_account();
    let reader = new_key(&server.api, owner.id, json!({ "scopes": ["read"] }));

    let order = resting_order(1, "keys-1");
    let refused = server.api.signed(&reader, "POST", "/v1/orders", &order);
    refused.expect_error(
        403,
        "insufficient_scope",
        "a read-only key placing an order",
    );
    assert_eq!(
        server.api.signed(&reader, "GET", "/v1/balances", "").status,
        200
    );
    let placed = server.api.signed(&owner, "POST", "/v1/orders", &order);
    assert_eq!(placed.status, 201, "{}", placed.text());

    // A clean stop leaves a snapshot behind as well as the journal.
    server.stop_with(libc::SIGTERM);
    let files = stored_files(&data);
    assert!(
        files.iter().any(|(path, _)| path.contains("snapshot")),
        "no snapshot among {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, bytes) in &files {
        for account in [&owner, &reader] {
            assert!(!holds(bytes, &account.secret), "{path} holds an API secret");
        }
    }

    let server = Server::start(EXCHANGE, &data);
    for account in [&owner, &reader] {
        assert_eq!(
            server.api.signed(account, "GET", "/v1/balances", "").status,
            200
        );
    }
    server
        .api
        .signed(&reader, "POST", "/v1/orders", &resting_order(2, "keys-2"))
        .expect_error(403, "insufficient_scope", "after the restart");
}

#[test]
fn a_revoked_key_stops_working_on_every_node() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = CliCluster::up(EXCHANGE, &tmp.path().join("cluster"), 3, None);
    let leader = ready_leader(|| leader_port(&cluster.ports));
    let owner = leader.create_account();
    let key = new_key(
        &leader,
        owner.id,
        json!({ "scopes": ["read"], "label": "replicated" }),
    );
    let nodes: Vec<Client> = cluster.ports.iter().map(|&port| Client { port }).collect();

    // Created on the leader, verified by every node: they share the master
    // key `cluster up` gave them.
    for node in &nodes {
        wait_until("the key works on every node", || {
            node.try_signed(&key, "GET", "/v1/balances", "")
                .is_ok_and(|r| r.status == 200)
        });
    }

    let revoked = leader.admin("DELETE", &format!("/admin/keys/{}", key.key), "");
    assert_eq!(revoked.status, 200, "{}", revoked.text());
    // Refused by the leader at once, and by each follower once it applies
    // the revocation.
    leader.signed(&key, "GET", "/v1/balances", "").expect_error(
        401,
        "invalid_api_key",
        "the leader, after revoking",
    );
    for node in &nodes {
        wait_until("every node refuses the revoked key", || {
            node.try_signed(&key, "GET", "/v1/balances", "")
                .is_ok_and(|r| r.status == 401 && r.code() == "invalid_api_key")
        });
    }
    // The account's first key was untouched.
    for node in &nodes {
        assert_eq!(node.signed(&owner, "GET", "/v1/balances", "").status, 200);
    }
}

/// A master key file others may read, or that is not a key, stops the
/// server before it serves anything, saying why.
#[test]
fn a_bad_master_key_file_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("key");
    std::fs::write(&file, "ab".repeat(32)).expect("write key");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let data = tmp.path().join("data").display().to_string();
    let file_arg = file.display().to_string();
    let args = [
        "serve",
        "--data-dir",
        &data,
        "--listen",
        "127.0.0.1:0",
        "--master-key-file",
        &file_arg,
    ];
    let out = exchange_testkit::run_within(EXCHANGE, &args, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("master key") && stderr.contains("0600"),
        "{stderr}"
    );

    std::fs::write(&file, "not a key").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = exchange_testkit::run_within(EXCHANGE, &args, std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("64 hex digits"), "{stderr}");
}

/// `exchange keys` drives the admin key routes: a read-only key it creates
/// reads but cannot trade, is listed without its secret, and once revoked
/// is refused.
#[test]
fn the_keys_command_creates_lists_and_revokes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &tmp.path().join("data"));
    let owner = server.api.funded_account();
    let url = format!("http://127.0.0.1:{}", server.api.port);
    let id = owner.id.to_string();
    let keys = |args: &[&str]| {
        let out = exchange_testkit::run(EXCHANGE, args, None);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.code(), stdout, stderr)
    };
    let (status, stdout, stderr) = keys(&[
        "keys",
        "create",
        "--url",
        &url,
        "--account",
        &id,
        "--scopes",
        "read",
        "--label",
        "cli",
    ]);
    assert_eq!(status, Some(0), "{stderr}");
    let made: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(made["scopes"], json!(["read"]));
    let reader = Account {
        id: owner.id,
        key: made["api_key"].as_str().expect("api_key").to_owned(),
        secret: made["api_secret"].as_str().expect("api_secret").to_owned(),
    };
    assert_eq!(
        server.api.signed(&reader, "GET", "/v1/balances", "").status,
        200
    );
    server
        .api
        .signed(&reader, "POST", "/v1/orders", &resting_order(3, "cli-1"))
        .expect_error(403, "insufficient_scope", "a key the CLI made read-only");

    let (status, stdout, _) = keys(&["keys", "list", "--url", &url, "--account", &id]);
    assert_eq!(status, Some(0));
    let listed: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(listed["keys"].as_array().map(Vec::len), Some(2));
    assert!(!stdout.contains(&reader.secret) && !stdout.contains(&owner.secret));

    let (status, _, stderr) = keys(&["keys", "revoke", "--url", &url, &reader.key]);
    assert_eq!(status, Some(0), "{stderr}");
    server
        .api
        .signed(&reader, "GET", "/v1/balances", "")
        .expect_error(401, "invalid_api_key", "a key the CLI revoked");
    let (status, _, stderr) = keys(&["keys", "revoke", "--url", &url, &reader.key]);
    assert_eq!(status, Some(1));
    assert!(stderr.contains("unknown_api_key"), "{stderr}");
    let (status, _, stderr) = keys(&[
        "keys",
        "create",
        "--url",
        &url,
        "--account",
        &id,
        "--scopes",
        "fly",
    ]);
    assert_eq!(status, Some(1));
    assert!(stderr.contains("unknown scope"), "{stderr}");
}
