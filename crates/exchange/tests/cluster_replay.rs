//! Replay across a cluster: every node runs a gateway with its own replay
//! guard, so what stops a request captured on one node from being sent to
//! another is that only the leader takes writes, and that a new leader
//! refuses writes signed before it led (the old leader may have taken
//! them). An unknown key is 401 on every node, leader or not, once the
//! node has caught up.

use exchange_testkit::{
    leader_port, signature_headers, unix_now_ms, wait_until, Account, CliCluster, Client,
};
use serde_json::json;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn open_orders(api: Client, account: &Account) -> usize {
    api.read(account, "/v1/orders")["orders"]
        .as_array()
        .map_or(0, Vec::len)
}

#[test]
fn a_write_captured_on_one_node_is_refused_by_every_other() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // A wide window, so what refuses the replay below is the guard and the
    // leadership rule, not the request's age.
    let config = tmp.path().join("exchange.toml");
    std::fs::write(&config, "recv_window_ms = 60000\n").expect("config");
    let cluster = CliCluster::up(EXCHANGE, &tmp.path().join("cluster"), 3, Some(&config));
    let leader = listed_leader(&cluster);
    let alice = leader.funded_account();
    let followers: Vec<Client> = cluster
        .ports
        .iter()
        .filter(|p| **p != leader.port)
        .map(|&port| Client { port })
        .collect();

    let order = json!({ "symbol": "BTC-USD", "side": "buy", "type": "limit",
                        "price": "59000", "qty": "0.01" })
    .to_string();
    // Two captured writes: one the leader took, sent again to followers;
    // one the leader took and only it saw, kept for the next leader (each
    // gateway remembers what it verified, so a follower that saw the first
    // would refuse it as a replay whatever the leadership rule).
    let capture = || {
        signature_headers(
            &alice,
            unix_now_ms(),
            "POST",
            "/v1/orders",
            order.as_bytes(),
        )
    };
    let (shown, kept) = (capture(), capture());
    let send = |api: Client, headers: &[(&str, String)]| {
        api.request("POST", "/v1/orders", headers, order.as_bytes())
    };
    assert_eq!(send(leader, &shown).status, 201);
    assert_eq!(send(leader, &kept).status, 201);
    send(leader, &shown).expect_error(401, "replayed_request", "again to the leader");
    for follower in &followers {
        send(*follower, &shown).expect_error(503, "not_leader", "to a follower");
        an_unknown_key_is_refused_by(*follower, &order);
    }

    let new_leader = new_leader_after_killing_the_old(&cluster, &followers);
    let refused = send(new_leader, &kept);
    refused.expect_error(401, "stale_timestamp", "to the new leader");
    assert!(
        refused.text().contains("became the leader"),
        "{}",
        refused.text()
    );
    // Fresh requests are served by the new leader, and each order was
    // placed once.
    wait_until("the new leader answers reads", || {
        new_leader
            .try_signed(&alice, "GET", "/v1/orders", "")
            .is_ok_and(|r| r.status == 200)
    });
    assert_eq!(open_orders(new_leader, &alice), 2);
}

/// The leader, once it lists the configured instruments.
fn listed_leader(cluster: &CliCluster) -> Client {
    let mut port = None;
    wait_until("a leader", || {
        port = leader_port(&cluster.ports);
        port.is_some()
    });
    let leader = Client {
        port: port.expect("leader"),
    };
    wait_until("the instruments listed", || {
        leader
            .try_request("GET", "/v1/instruments", &[], b"")
            .is_ok_and(|r| r.status == 200 && r.text().contains("BTC-USD"))
    });
    leader
}

fn an_unknown_key_is_refused_by(follower: Client, order: &str) {
    // A key no node knows: 401 on a follower too, never `not_leader`. A
    // follower still applying what was committed before it says "not yet"
    // (503 `catching_up`) instead, as it may lack a key the cluster has.
    let stranger = Account {
        id: 0,
        key: "0".repeat(32),
        secret: "s".into(),
    };
    let refusal = || {
        let headers = signature_headers(
            &stranger,
            unix_now_ms(),
            "POST",
            "/v1/orders",
            order.as_bytes(),
        );
        follower.request("POST", "/v1/orders", &headers, order.as_bytes())
    };
    wait_until("the follower has caught up", || {
        let answer = refusal();
        !(answer.status == 503 && answer.text().contains("catching_up"))
    });
    refusal().expect_error(401, "invalid_api_key", "an unknown key on a follower");
}

fn new_leader_after_killing_the_old(cluster: &CliCluster, followers: &[Client]) -> Client {
    let old_leader = cluster.status().expect("status")["leader"]
        .as_u64()
        .expect("a leader");
    cluster.kill(old_leader);
    let mut new_port = None;
    wait_until("a new leader", || {
        new_port = leader_port(&followers.iter().map(|c| c.port).collect::<Vec<_>>());
        new_port.is_some()
    });
    Client {
        port: new_port.expect("new leader"),
    }
}
