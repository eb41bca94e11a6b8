//! Membership changes on a cluster of real processes: `exchange cluster
//! add` starts an empty node that the leader adds as a voter and that
//! catches up by snapshot (the leader's log is compacted); `exchange
//! cluster remove` takes a founding node out; the cluster goes on, and the
//! replicas agree on every order.

mod cluster_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use cluster_support::status;
use serde_json::Value;
use support::{limit, wait_until, Account, Client, ADMIN_TOKEN};

fn exchange(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_exchange"))
        .args(args)
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run exchange")
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ports_free(base: u16) -> bool {
    (1..=4u16)
        .flat_map(|n| [base + n, base + 100 + n])
        .all(|port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
}

/// Kills every node of the directory's cluster when dropped.
struct Nodes<'a>(&'a Path);

impl Drop for Nodes<'_> {
    fn drop(&mut self) {
        for id in 1..=4 {
            let pid = std::fs::read_to_string(self.0.join(format!("node-{id}/pid")))
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok());
            if let Some(pid) = pid {
                // SAFETY: SIGKILL to a process this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

fn leader(ports: &[u16]) -> Option<u16> {
    ports
        .iter()
        .copied()
        .find(|&p| status(p).is_some_and(|s| s["role"] == "leader"))
}

/// Every listed replica at the leader's commit index with one state hash.
fn converged(ports: &[u16]) -> bool {
    let statuses: Vec<Value> = ports.iter().filter_map(|&p| status(p)).collect();
    let Some(lead) = statuses.iter().find(|s| s["role"] == "leader") else {
        return false;
    };
    let hashes: BTreeSet<String> = statuses
        .iter()
        .filter_map(|s| s["state_hash"].as_str().map(str::to_owned))
        .collect();
    statuses.len() == ports.len()
        && hashes.len() == 1
        && statuses
            .iter()
            .all(|s| s["applied_index"] == lead["commit_index"])
}

#[test]
fn a_node_joins_by_snapshot_and_a_founder_leaves() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("cluster");
    let config = tmp.path().join("config.toml");
    // Frequent snapshots, so the leader's log is compacted and the new node
    // can only catch up by snapshot.
    std::fs::write(&config, "snapshot_every = 10\n").expect("config");
    let seed = std::process::id() as u64 ^ support::unix_now();
    let base = (0..20u64)
        .map(|i| 20_000 + ((seed.wrapping_mul(7907) + i * 1_009) % 30_000) as u16)
        .find(|&b| ports_free(b))
        .expect("free ports");
    let _nodes = Nodes(&dir);
    let dir_arg = dir.display().to_string();
    let config_arg = config.display().to_string();
    ok(
        &exchange(&[
            "cluster",
            "up",
            "--nodes",
            "3",
            "--data-dir",
            &dir_arg,
            "--port-base",
            &base.to_string(),
            "--config",
            &config_arg,
        ]),
        "cluster up",
    );
    let founders: Vec<u16> = (1..=3).map(|n| base + n).collect();
    let api = support::ready_leader(|| leader(&founders));
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

    ok(
        &exchange(&[
            "cluster",
            "add",
            "--data-dir",
            &dir_arg,
            "--config",
            &config_arg,
        ]),
        "cluster add",
    );
    let all: Vec<u16> = (1..=4).map(|n| base + n).collect();
    wait_until("four replicas in agreement", || converged(&all));
    let installed = std::fs::read_dir(dir.join("node-4/snapshots"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(installed > 0, "node 4 caught up without a snapshot");
    wait_until("node 4 to see itself a voter", || {
        status(base + 4).is_some_and(|s| s["voters"] == serde_json::json!([1, 2, 3, 4]))
    });

    ok(
        &exchange(&["cluster", "remove", "--data-dir", &dir_arg, "--id", "1"]),
        "cluster remove",
    );
    let rest: Vec<u16> = (2..=4).map(|n| base + n).collect();
    let mut port = None;
    wait_until("a leader among the remaining nodes", || {
        port = leader(&rest);
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
