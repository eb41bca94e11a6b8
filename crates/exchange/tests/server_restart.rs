//! `exchange serve` stopped gracefully (SIGTERM, SIGINT) writes a snapshot
//! and comes back with exactly the state it had: orders, fills, balances,
//! books, credentials and the state hash.

use std::path::Path;

use exchange_testkit::{copy_dir, limit, Account, Client, Server};
use serde_json::{json, Value};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Everything observable through the API, for the accounts given.
fn observable(api: &Client, accounts: &[Account]) -> Value {
    let views: Vec<Value> = accounts.iter().map(|a| api.account_view(a)).collect();
    let mut markets = Vec::new();
    for symbol in ["BTC-USD", "ETH-USD"] {
        markets.push(api.get(&format!("/v1/markets/{symbol}/book")).json());
        markets.push(api.get(&format!("/v1/markets/{symbol}/trades")).json());
    }
    json!({ "accounts": views, "markets": markets,
            "instruments": api.get("/v1/instruments").json() })
}

/// Some of every kind of state: resting and filled orders, a partial
/// fill, a cancel, both kinds of replace, a market order, a halt.
fn trade(api: &Client) -> Vec<Account> {
    let (alice, bob, carol) = (
        api.funded_account(),
        api.funded_account(),
        api.funded_account(),
    );
    let a1 = api.place(&alice, &limit("buy", "59990", "0.5", "a1"));
    api.place(&alice, &limit("buy", "59980", "0.3", "a2"));
    let a3 = api.place(&alice, &limit("buy", "59970", "0.2", "a3"));
    let b1 = api.place(&bob, &limit("sell", "59990", "0.2", "b1"));
    assert_eq!(b1["status"], "filled", "{b1}");
    api.place(&bob, &limit("sell", "60100", "1", "b2"));
    let market = json!({ "symbol": "BTC-USD", "side": "sell", "type": "market", "qty": "0.2" });
    let c1 = api.place(&carol, &market);
    assert_eq!(c1["status"], "filled", "{c1}");
    let canceled = api.signed(
        &alice,
        "DELETE",
        &format!("/v1/orders/{}", a3["order_id"]),
        "",
    );
    assert_eq!(canceled.status, 200, "{}", canceled.text());
    for (order, change) in [
        (&a1, json!({ "qty": "0.45" })),
        (
            &a1,
            json!({ "price": "59950", "new_client_order_id": "a1b" }),
        ),
    ] {
        let path = format!("/v1/orders/{}/replace", order["order_id"]);
        let replaced = api.signed(&alice, "POST", &path, &change.to_string());
        assert_eq!(replaced.status, 200, "{change}: {}", replaced.text());
    }
    api.place(
        &carol,
        &json!({ "symbol": "ETH-USD", "side": "buy", "price": "2990", "qty": "2",
                 "client_order_id": "c-eth" }),
    );
    let halted = api.admin("POST", "/admin/instruments/ETH-USD/halt", "");
    assert_eq!(
        halted.json(),
        json!({ "symbol": "ETH-USD", "status": "halted" })
    );
    vec![alice, bob, carol]
}

fn a_full_replay_reaches_the_same_state(
    dir: &Path,
    data: &Path,
    accounts: &[Account],
    before: &Value,
    restarted: &Server,
    hash: &str,
) {
    // The snapshot is an optimisation only: replaying the whole journal
    // from nothing reaches the same state.
    let replay_dir = dir.join("journal-only");
    copy_dir(&data.join("journal"), &replay_dir.join("journal"));
    // The API secrets are derived from the node's master key, not logged.
    std::fs::copy(data.join("master_key"), replay_dir.join("master_key")).expect("master key");
    let replayed = Server::start(EXCHANGE, &replay_dir);
    assert_eq!(
        replayed.recovery_hash(),
        hash,
        "snapshot and full replay disagree"
    );
    assert_eq!(
        replayed.recovery_number("replayed"),
        restarted.recovery_number("applied index")
    );
    assert_eq!(
        observable(&replayed.api, accounts),
        *before,
        "full replay serves another state"
    );
    drop(replayed);
}

#[test]
fn graceful_restarts_keep_the_state_exactly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let accounts = trade(&server.api);
    let before = observable(&server.api, &accounts);

    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "SIGTERM: {status}\n{}", server.stderr());
    assert!(
        server.stderr().contains("shutting down"),
        "{}",
        server.stderr()
    );
    let snapshots: Vec<_> = std::fs::read_dir(data.join("snapshots"))
        .expect("a snapshot directory")
        .collect();
    assert_eq!(snapshots.len(), 1, "one snapshot after a clean stop");

    let mut restarted = Server::start(EXCHANGE, &data);
    let stderr = restarted.stderr();
    assert!(
        stderr.contains("recovery: loaded snapshot at index"),
        "{stderr}"
    );
    assert_eq!(restarted.recovery_number("replayed"), 0, "{stderr}");
    assert!(!stderr.contains("WARNING"), "{stderr}");
    let hash = restarted.recovery_hash();
    assert_eq!(
        observable(&restarted.api, &accounts),
        before,
        "state changed across SIGTERM"
    );

    a_full_replay_reaches_the_same_state(dir.path(), &data, &accounts, &before, &restarted, &hash);

    // SIGINT is as graceful, and a restart with nothing new is a no-op.
    let status = restarted.stop_with(libc::SIGINT);
    assert!(status.success(), "SIGINT: {status}\n{}", restarted.stderr());
    let again = Server::start(EXCHANGE, &data);
    assert_eq!(
        again.recovery_hash(),
        hash,
        "a second restart changed the state"
    );
    assert_eq!(
        observable(&again.api, &accounts),
        before,
        "state changed across SIGINT"
    );

    // It carries on where it stopped: ids continue, halts hold.
    let last_id = before["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|a| a["orders"]["orders"].as_array().into_iter().flatten())
        .filter_map(|o| o["order_id"].as_u64())
        .max()
        .expect("orders were placed");
    let next = again
        .api
        .place(&accounts[0], &limit("buy", "59000", "0.1", "after-restart"));
    assert_eq!(next["order_id"].as_u64(), Some(last_id + 1), "{next}");
    assert_eq!(again.api.create_account().id, accounts[2].id + 1);
    let eth =
        json!({ "symbol": "ETH-USD", "side": "buy", "price": "3000", "qty": "1" }).to_string();
    let refused = again.api.signed(&accounts[0], "POST", "/v1/orders", &eth);
    refused.expect_error(422, "instrument_halted", "ETH-USD after restart");
}
