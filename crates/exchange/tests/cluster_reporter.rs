//! `exchange cluster up --gateways 1 --reporters 1`: the nodes keep no
//! reporting store (their history routes answer 503), the reporter writes
//! it from their log stream, and the gateway serves history from it. A
//! reporter killed with SIGKILL is restarted by `up` on the directory and
//! the gateway's history then holds every fill once; `down` stops it with
//! the rest. A reporter that can only follow a node whose log starts after
//! a snapshot stops on the gap instead of writing a store with a hole; one
//! that can also follow a node that holds the whole log completes it.

use std::path::Path;
use std::time::Duration;

use exchange_reporting::{Store, Target};
use exchange_testkit::{
    assert_success, free_port, limit, process_alive, run_within, wait_until, Account, CliCluster,
    Client, Node,
};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Places `pairs` crossing pairs (`tag` names them): a trade each.
fn trade(gateway: &Client, maker: &Account, taker: &Account, tag: &str, pairs: usize) {
    for n in 0..pairs {
        gateway.place(
            maker,
            &limit("sell", "60000", "0.01", &format!("{tag}-s{n}")),
        );
        gateway.place(
            taker,
            &limit("buy", "60000", "0.01", &format!("{tag}-b{n}")),
        );
    }
}

/// The taker's fills as the gateway serves them from the store, once the
/// read answers.
fn fills(gateway: &Client, taker: &Account) -> Option<Vec<Value>> {
    let response = gateway
        .try_signed(taker, "GET", "/v1/fills?limit=1000", "")
        .ok()?;
    (response.status == 200).then(|| {
        response.json()["fills"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    })
}

fn reporter_status(cluster: &CliCluster, dir_arg: &str) -> Option<Value> {
    let out = cluster.exchange(&["cluster", "status", "--data-dir", dir_arg]);
    let status: Value = serde_json::from_slice(&out.stdout).ok()?;
    status["gateways"]
        .as_array()?
        .iter()
        .find(|row| row["role"] == "reporter")
        .cloned()
}

#[test]
fn a_local_venue_with_a_reporter_serves_history_from_its_store() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let dir_arg = dir.display().to_string();
    let cluster = CliCluster::up_tiered(EXCHANGE, &dir, 3, (1, 0, 1), None);
    let gateway = Client {
        port: cluster.gateway_port(1),
    };
    let (maker, taker) = (gateway.funded_account(), gateway.funded_account());
    trade(&gateway, &maker, &taker, "a", 3);
    wait_until("the gateway's history holds the first fills", || {
        fills(&gateway, &taker).is_some_and(|f| f.len() == 3)
    });
    // A node keeps no store: no history of its own.
    let node = Client {
        port: cluster.ports[0],
    };
    node.signed(&taker, "GET", "/v1/fills", "").expect_error(
        503,
        "reporting_disabled",
        "history on a node without a store",
    );
    wait_until("status lists the reporter, ready, at lag 0", || {
        reporter_status(&cluster, &dir_arg)
            .is_some_and(|row| row["ready"] == true && row["lag"] == 0)
    });

    let reporter: i32 = std::fs::read_to_string(dir.join("reporter-1").join("pid"))
        .ok()
        .and_then(|pid| pid.trim().parse().ok())
        .expect("the reporter's pid file");
    // SAFETY: SIGKILL to a reporter this test started.
    unsafe { libc::kill(reporter, libc::SIGKILL) };
    wait_until("the reporter gone", || !process_alive(reporter));
    trade(&gateway, &maker, &taker, "b", 3);
    let again = assert_success(
        &cluster.exchange(&["cluster", "up", "--data-dir", &dir_arg]),
        "cluster up (restart)",
    );
    assert!(
        again
            .lines()
            .any(|l| l.starts_with("reporter 1: ") && !l.contains("already running")),
        "{again}"
    );
    wait_until("the gateway's history holds every fill", || {
        fills(&gateway, &taker).is_some_and(|f| f.len() == 6)
    });
    let ids: std::collections::BTreeSet<u64> = fills(&gateway, &taker)
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f["trade_id"].as_u64())
        .collect();
    assert_eq!(ids.len(), 6, "each fill once: {ids:?}");

    let pids = cluster.gateway_pids();
    assert_eq!(pids.len(), 2, "the gateway's and the reporter's pid files");
    let down = assert_success(
        &run_within(
            EXCHANGE,
            &["cluster", "down", "--data-dir", &dir_arg],
            Duration::from_secs(120),
        ),
        "cluster down",
    );
    assert!(down.contains("reporter 1: stopped"), "{down}");
    assert!(pids.iter().all(|&pid| !process_alive(pid)), "{down}");
}

/// A reporter that can only follow a node whose log starts after a
/// snapshot (node 4 joined by one) cannot complete an empty store: it
/// writes nothing and reports the gap on `/health`, `/ready` and
/// `/metrics`.
#[test]
fn a_reporter_behind_a_compacted_log_reports_the_gap_and_writes_nothing() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let dir_arg = dir.display().to_string();
    let config = tmp.path().join("config.toml");
    // Frequent snapshots: the leader's log is compacted, and a node that
    // joins catches up by snapshot.
    std::fs::write(&config, "snapshot_every = 10\n").expect("config");
    let config_arg = config.display().to_string();
    let cluster = CliCluster::up_tiered(EXCHANGE, &dir, 3, (1, 0, 1), Some(&config));
    let gateway = Client {
        port: cluster.gateway_port(1),
    };
    let (maker, taker) = (gateway.funded_account(), gateway.funded_account());
    trade(&gateway, &maker, &taker, "a", 10);
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
    let node4 = dir.join("node-4");
    wait_until("node 4 installs a snapshot", || {
        std::fs::read_dir(node4.join("snapshots")).is_ok_and(|mut d| d.next().is_some())
    });

    let stream = |node: u16| format!("127.0.0.1:{}", cluster.base + 300 + node);
    let key = dir.join("cluster_key");
    let (late, port) = start_reporter(&key, &tmp.path().join("late"), &stream(4));
    let _late = late;
    let client = Client { port };
    wait_until("the reporter reports the gap", || {
        client
            .try_request("GET", "/health", &[], b"")
            .is_ok_and(|r| r.status == 503 && r.text().contains("gap"))
    });
    let ready = client.get("/ready");
    assert_eq!(ready.status, 503, "{}", ready.text());
    let health = client.get("/health").json();
    assert_eq!(health["fault"]["store_position"], 0, "{health}");
    let missing = health["fault"]["missing_commands"].as_u64().unwrap_or(0);
    assert!(missing > 0, "{health}");
    let metrics = client.get("/metrics").text();
    let metric = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    assert_eq!(metric("exchange_reporter_gap_entries"), Some(missing));
    assert_eq!(metric("exchange_reporter_fault"), Some(1));
    assert_eq!(metric("exchange_reporting_position"), Some(0), "{metrics}");

    // Node 4 only lacks what node 1 still holds: a reporter given both,
    // node 4 first, asks node 1 after node 4's snapshot, and completes
    // its store.
    let both = format!("{},{}", stream(4), stream(1));
    let (second, port) = start_reporter(&key, &tmp.path().join("second"), &both);
    let _second = second;
    let client = Client { port };
    wait_until("the second reporter ready", || {
        client
            .try_request("GET", "/ready", &[], b"")
            .is_ok_and(|r| r.status == 200)
    });
    let target = Target::Sqlite(tmp.path().join("second").join("reporting.sqlite"));
    let stored = Store::open_existing(&target)
        .and_then(|mut store| store.dump())
        .expect("the second reporter's store");
    let audited: Vec<u64> = stored.audit.iter().map(|row| row.log_index).collect();
    assert_eq!(audited, (1..=stored.position.log_index).collect::<Vec<_>>());
    assert_eq!(stored.trades.len(), 10, "every trade");
}

/// Starts `exchange reporter` on `data`, following `stream`; its process
/// (killed when dropped) and HTTP port.
fn start_reporter(key: &Path, data: &Path, stream: &str) -> (Node, u16) {
    let port = free_port();
    let child = std::process::Command::new(EXCHANGE)
        .args(["reporter", "--stream", stream, "--cluster-key-file"])
        .arg(key)
        .arg("--data-dir")
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start a reporter");
    (Node { child, http: port }, port)
}
