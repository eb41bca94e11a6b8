//! `exchange cluster up --gateways N --md-gateways M` starts a tiered
//! venue: an order placed through a gateway reaches the replicas,
//! `cluster status` lists every node and gateway with its lag, `up` on the
//! directory restarts a dead gateway, and `down` stops every process.

use std::time::Duration;

use exchange_testkit::{
    assert_success, process_alive, resting_order, run_within, wait_until, CliCluster, Client,
};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Whether `status` lists three nodes and the venue's three gateways, each
/// ready, following a node, and with nothing committed left to apply.
fn every_process_listed_and_caught_up(status: &Value) -> bool {
    let nodes = status["nodes"].as_array().cloned().unwrap_or_default();
    let gateways = status["gateways"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = gateways.iter().filter_map(|g| g["role"].as_str()).collect();
    nodes.len() == 3
        && nodes.iter().all(|n| n["lag"] == 0)
        && roles == ["gateway", "gateway", "md-gateway"]
        && gateways
            .iter()
            .all(|g| g["ready"] == true && g["lag"] == 0 && g["following_node"].as_u64().is_some())
}

#[test]
fn a_tiered_venue_takes_orders_through_its_gateways_and_goes_down_whole() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let dir_arg = dir.display().to_string();
    let cluster = CliCluster::up_tiered(EXCHANGE, &dir, 3, (2, 1, 0), None);
    let node_pids: Vec<i32> = (1..=3).filter_map(|n| cluster.pid(n)).collect();
    assert_eq!(node_pids.len(), 3, "a pid file per node");
    assert_eq!(cluster.gateway_pids().len(), 3, "a pid file per gateway");

    an_order_through_a_gateway_reaches_a_replica(&cluster);
    // A gateway has no Raft state of its own to report.
    let own = Client {
        port: cluster.gateway_port(1),
    }
    .admin("GET", "/admin/replication", "")
    .json();
    assert_eq!(own["role"], "gateway", "{own}");
    assert!(
        own.get("term").is_none() && own.get("voters").is_none(),
        "{own}"
    );
    let mut last = Value::Null;
    wait_until("status: 3 nodes and 3 ready gateways at lag 0", || {
        let out = cluster.exchange(&["cluster", "status", "--data-dir", &dir_arg]);
        last = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        every_process_listed_and_caught_up(&last)
    });
    eprintln!("{last:#}");
    up_restarts_a_dead_gateway(&cluster, &dir_arg);

    let mut every_pid = node_pids;
    every_pid.extend(cluster.gateway_pids());
    let down = assert_success(
        &run_within(
            EXCHANGE,
            &["cluster", "down", "--data-dir", &dir_arg],
            Duration::from_secs(120),
        ),
        "cluster down",
    );
    let still: Vec<i32> = every_pid
        .iter()
        .copied()
        .filter(|&p| process_alive(p))
        .collect();
    assert!(still.is_empty(), "alive after down: {still:?}\n{down}");
    for name in [
        "node-1",
        "node-2",
        "node-3",
        "gateway-1",
        "gateway-2",
        "md-gateway-1",
    ] {
        assert!(
            !dir.join(name).join("pid").exists(),
            "{name}'s pid file is left"
        );
    }
    assert!(down.contains("md-gateway 1: stopped"), "{down}");
}

/// An order placed through gateway 2 with a signed request is on replica 3.
fn an_order_through_a_gateway_reaches_a_replica(cluster: &CliCluster) {
    let gateway = Client {
        port: cluster.gateway_port(2),
    };
    let account = gateway.funded_account();
    let placed = gateway.signed(&account, "POST", "/v1/orders", &resting_order(0, "via-gw"));
    assert_eq!(
        placed.status,
        201,
        "order through a gateway: {}",
        placed.text()
    );
    let replica = Client {
        port: cluster.ports[2],
    };
    wait_until("the gateway's order on replica 3", || {
        replica
            .try_signed(&account, "GET", "/v1/orders", "")
            .is_ok_and(|r| r.status == 200 && r.text().contains("via-gw"))
    });
}

/// `up` on the directory restarts a killed gateway, leaves the others, and
/// names each process's URL.
fn up_restarts_a_dead_gateway(cluster: &CliCluster, dir_arg: &str) {
    let dead = cluster.gateway_pids()[1];
    // SAFETY: SIGKILL to a gateway this test started.
    unsafe { libc::kill(dead, libc::SIGKILL) };
    wait_until("gateway 2 gone", || !process_alive(dead));
    let again = assert_success(
        &cluster.exchange(&["cluster", "up", "--data-dir", dir_arg]),
        "cluster up (restart)",
    );
    let line = |name: &str, port: u16| {
        let prefix = format!("{name}: http://127.0.0.1:{port} (pid ");
        again
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for {name} on {port}: {again}"))
            .to_string()
    };
    assert!(line("gateway 1", cluster.gateway_port(1)).ends_with("already running)"));
    assert!(!line("gateway 2", cluster.gateway_port(2)).contains("already running"));
    assert!(line("md-gateway 1", cluster.gateway_port(1) + 100).ends_with("already running)"));
    let restarted = cluster.gateway_pids()[1];
    assert!(
        restarted != dead && process_alive(restarted),
        "gateway 2 restarted"
    );
}
