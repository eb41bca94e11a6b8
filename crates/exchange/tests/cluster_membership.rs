//! Membership changes on a cluster of real processes: `exchange cluster
//! add` starts an empty node that the leader adds as a voter and that
//! catches up by snapshot (the leader's log is compacted); `exchange
//! cluster remove` takes a founding node out; the cluster goes on, and the
//! replicas agree on every order.

use std::collections::BTreeMap;

use exchange_testkit::{
    assert_success, converged, leader_port, limit, ready_leader, status, wait_until, Account,
    CliCluster, Client,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

#[test]
fn a_node_joins_by_snapshot_and_a_founder_leaves() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("cluster");
    let config = tmp.path().join("config.toml");
    // Frequent snapshots, so the leader's log is compacted and the new node
    // can only catch up by snapshot.
    std::fs::write(&config, "snapshot_every = 10\n").expect("config");
    let cluster = CliCluster::up(EXCHANGE, &dir, 3, Some(&config));
    let dir_arg = dir.display().to_string();
    let config_arg = config.display().to_string();
    let founders = cluster.ports.clone();
    let api = ready_leader(|| leader_port(&founders));
    let account: Account = api.funded_account();
    let mut placed = Vec::new();
    for n in 0..30 {
        let id = format!("before-{n}");
        api.place(
            &account,
            &limit("buy", &(59_000 + n).to_string(), "0.01", &id),
        );
        placed.push(id);
    }

    assert_success(
        &cluster.exchange(&[
            "cluster",
            "add",
            "--data-dir",
            &dir_arg,
            "--config",
            &config_arg,
        ]),
        "cluster add",
    );
    let all: Vec<u16> = (1..=4).map(|n| cluster.port(n)).collect();
    wait_until("four replicas in agreement", || converged(&all));
    let installed = std::fs::read_dir(dir.join("node-4/snapshots"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(installed > 0, "node 4 caught up without a snapshot");
    wait_until("node 4 to see itself a voter", || {
        status(cluster.port(4)).is_some_and(|s| s["voters"] == serde_json::json!([1, 2, 3, 4]))
    });

    assert_success(
        &cluster.exchange(&["cluster", "remove", "--data-dir", &dir_arg, "--id", "1"]),
        "cluster remove",
    );
    let rest: Vec<u16> = (2..=4).map(|n| cluster.port(n)).collect();
    let mut port = None;
    wait_until("a leader among the remaining nodes", || {
        port = leader_port(&rest);
        port.is_some()
    });
    let api = Client {
        port: port.expect("leader"),
    };
    for n in 0..10 {
        let id = format!("after-{n}");
        api.place(
            &account,
            &limit("sell", &(61_000 + n).to_string(), "0.01", &id),
        );
        placed.push(id);
    }
    wait_until("three replicas in agreement", || converged(&rest));
    for &port in &rest {
        let count = Client { port }.order_counts(&account);
        let expected: BTreeMap<String, usize> = placed.iter().map(|id| (id.clone(), 1)).collect();
        assert_eq!(count, expected, "orders on the node at port {port}");
    }
}
