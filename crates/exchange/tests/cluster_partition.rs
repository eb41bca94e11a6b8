//! A network partition between real processes: every Raft link goes
//! through a fault-injecting TCP proxy in this test. The leader is cut off
//! from both followers: it takes no write (a write sent to it is never
//! acknowledged), the majority elects a new leader and goes on; after the
//! partition heals there is one history: every replica reaches the same
//! state, which holds every acknowledged order once and not the write the
//! cut-off leader took.

use std::collections::BTreeMap;

use exchange_testkit::{
    leader_among, limit, ready_leader, status, wait_until, Account, Client, Node, ProxiedCluster,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

#[test]
fn a_partitioned_leader_takes_no_write_and_one_history_survives() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = ProxiedCluster::start(EXCHANGE, tmp.path(), 3);
    let api = ready_leader(|| cluster.leader().map(|id| cluster.http[&id]));
    let old = cluster
        .http
        .iter()
        .find(|(_, &port)| port == api.port)
        .map(|(&id, _)| id)
        .expect("the leader's id");
    let account: Account = api.funded_account();
    let mut acked = Vec::new();
    place_ten(&api, &account, "before", 59_000, &mut acked);

    // Cut the leader off from both followers, both ways.
    cluster.isolate(old, true);
    let majority: Vec<_> = cluster
        .nodes
        .iter()
        .filter(|(id, _)| **id != old)
        .map(|(_, n)| n)
        .collect();
    // A write sent to the cut-off leader, in the background: it must not be
    // acknowledged (it waits for a majority it cannot reach, or is refused
    // once the leader steps down).
    let minority = std::thread::spawn({
        let account = account.clone();
        move || {
            api.try_signed(
                &account,
                "POST",
                "/v1/orders",
                &limit("sell", "61000", "0.01", "minority").to_string(),
            )
            .map(|r| r.status)
        }
    });
    let new_api = new_leader_among(&cluster, &majority, old);
    place_ten(&new_api, &account, "during", 59_100, &mut acked);
    // The old leader has stepped down (check-quorum): no writes there.
    wait_until("the cut-off node to stop leading", || {
        status(cluster.http[&old]).is_some_and(|s| s["role"] != "leader")
    });
    let refused = api.signed(
        &account,
        "POST",
        "/v1/orders",
        &limit("sell", "61001", "0.01", "minority-2").to_string(),
    );
    assert_eq!(refused.status, 503, "{}", refused.text());

    cluster.heal();
    let answer = minority.join().expect("minority writer");
    eprintln!("the write sent to the cut-off leader was answered {answer:?}");
    assert!(
        !matches!(answer, Ok(201)),
        "the cut-off leader acknowledged a write: {answer:?}"
    );
    wait_until("one history on every replica", || cluster.converged());
    for node in cluster.nodes.values() {
        let count = Client { port: node.http }.order_counts(&account);
        let expected: BTreeMap<String, usize> = acked.iter().map(|id| (id.clone(), 1)).collect();
        assert_eq!(count, expected, "orders on node at port {}", node.http);
    }
}

/// Ten resting buys a tick apart from `from_price`, each acknowledged.
fn place_ten(
    api: &Client,
    account: &Account,
    prefix: &str,
    from_price: i32,
    acked: &mut Vec<String>,
) {
    for n in 0..10 {
        let id = format!("{prefix}-{n}");
        api.place(
            account,
            &limit("buy", &(from_price + n).to_string(), "0.01", &id),
        );
        acked.push(id);
    }
}

fn new_leader_among(cluster: &ProxiedCluster, majority: &[&Node], old: u64) -> Client {
    let mut new = None;
    wait_until("a new leader on the majority side", || {
        new = leader_among(majority).filter(|id| *id != old);
        new.is_some()
    });
    Client {
        port: cluster.http[&new.expect("new leader")],
    }
}
