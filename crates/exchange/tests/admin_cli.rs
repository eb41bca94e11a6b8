//! `exchange admin` against a running `exchange serve`: the kill switch
//! and the other member risk controls from the command line, each
//! checked through the trading API.

use exchange_testkit::{assert_success, limit, run, Account, Server};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn admin(server: &Server, args: &[&str]) -> std::process::Output {
    let url = format!("http://127.0.0.1:{}", server.api.port);
    let mut all = vec!["admin", "--url", url.as_str()];
    all.extend_from_slice(args);
    run(EXCHANGE, &all, None)
}

fn json_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{stdout}: {e}"))
}

#[test]
fn the_kill_switch_from_the_command_line_cancels_refuses_and_reinstates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = &server.api;
    let alice = api.funded_account();
    let bob = api.funded_account();
    api.place(&alice, &limit("buy", "59000", "0.5", "a-1"));
    api.place(&alice, &limit("buy", "58000", "0.5", "a-2"));
    api.place(&bob, &limit("buy", "57000", "0.5", "b-1"));
    let id = alice.id.to_string();

    suspend_cancels_and_refuses(&server, &alice, &bob);

    let out = admin(&server, &["reinstate", "--account", &id]);
    assert_eq!(
        json_of(&assert_success(&out, "admin reinstate"))["status"],
        "active"
    );
    api.place(&alice, &limit("buy", "59000", "0.1", "a-3"));

    limits_hold_and_clear(&server, &alice);

    mmp_sets_and_resets(&server, &id);
}

/// Suspending cancels the account's orders and refuses new ones; a
/// second suspension is a failed run.
fn suspend_cancels_and_refuses(server: &Server, alice: &Account, bob: &Account) {
    let api = &server.api;
    let id = alice.id.to_string();
    let out = admin(server, &["suspend", "--account", &id]);
    let answer = json_of(&assert_success(&out, "admin suspend"));
    assert_eq!(answer["status"], "suspended");
    assert_eq!(answer["canceled"], 2);
    let open = api.read(alice, "/v1/orders");
    assert_eq!(open["orders"].as_array().map(Vec::len), Some(0), "{open}");
    // Others are untouched.
    let theirs = api.read(bob, "/v1/orders");
    assert_eq!(theirs["orders"].as_array().map(Vec::len), Some(1));
    let refused = api.signed(
        alice,
        "POST",
        "/v1/orders",
        &limit("buy", "59000", "0.1", "a-3").to_string(),
    );
    refused.expect_error(422, "account_suspended", "an order of a suspended account");

    // A refusal is a failed run that names the reason.
    let again = admin(server, &["suspend", "--account", &id]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("account_already_in_status"), "{stderr}");
}

fn limits_hold_and_clear(server: &Server, alice: &Account) {
    let api = &server.api;
    let id = alice.id.to_string();
    // Limits from the command line hold too, and clear.
    let out = admin(
        server,
        &["limits", "--account", &id, "--max-order-qty", "0.2"],
    );
    assert_eq!(
        json_of(&assert_success(&out, "admin limits"))["max_order_qty"],
        "0.2"
    );
    let big = api.signed(
        alice,
        "POST",
        "/v1/orders",
        &limit("buy", "59000", "0.3", "a-4").to_string(),
    );
    big.expect_error(422, "order_qty_over_limit", "an order above the limit");
    let out = admin(server, &["limits", "--account", &id, "--clear"]);
    assert_success(&out, "admin limits --clear");
    api.place(alice, &limit("buy", "59000", "0.3", "a-4"));
}

fn mmp_sets_and_resets(server: &Server, id: &str) {
    // Market-maker protection: set, then reset (nothing tripped: the
    // window restarts).
    let out = admin(
        server,
        &[
            "mmp",
            "--account",
            id,
            "--symbol",
            "BTC-USD",
            "--window-ms",
            "1000",
            "--max-count",
            "5",
        ],
    );
    assert_eq!(json_of(&assert_success(&out, "admin mmp"))["state"], "set");
    let out = admin(
        server,
        &["mmp-reset", "--account", id, "--symbol", "BTC-USD"],
    );
    assert_eq!(
        json_of(&assert_success(&out, "admin mmp-reset"))["state"],
        "reset"
    );
}

#[test]
fn instrument_rules_and_delisting_from_the_command_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = &server.api;
    let alice = api.funded_account();
    api.place(&alice, &limit("buy", "59000", "0.5", "a-1"));
    api.place(&alice, &limit("buy", "59000.01", "0.5", "a-2"));

    let out = admin(
        &server,
        &[
            "rules",
            "--symbol",
            "BTC-USD",
            "--tick-size",
            "1",
            "--min-notional",
            "100",
        ],
    );
    let answer = json_of(&assert_success(&out, "admin rules"));
    assert_eq!(answer["tick_size"], "1");
    assert_eq!(answer["min_notional"], "100");
    assert_eq!(answer["canceled"], 1, "{answer}");
    let open = api.read(&alice, "/v1/orders");
    assert_eq!(open["orders"].as_array().map(Vec::len), Some(1), "{open}");

    let out = admin(&server, &["delist", "--symbol", "BTC-USD"]);
    let answer = json_of(&assert_success(&out, "admin delist"));
    assert_eq!(answer["status"], "delisted");
    assert_eq!(answer["canceled"], 1);
    let again = admin(&server, &["delist", "--symbol", "BTC-USD"]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("instrument_delisted"), "{stderr}");
}
