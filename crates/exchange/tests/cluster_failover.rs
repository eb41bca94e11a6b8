//! A three-node Raft cluster of real `exchange serve` processes, started
//! with `exchange cluster up`: the leader is killed with SIGKILL under load;
//! the load goes on against the new leader (clients retry with the same
//! client order id); the dead node is restarted and catches up. Every
//! acknowledged order is then present exactly once on every replica, and
//! every replica reaches the same state hash.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use exchange_testkit::{
    assert_success, leader_port, limit, process_alive, ready_leader, resting_order, wait_until,
    Account, CliCluster, Client, OnPanic, DEADLINE,
};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const NODES: u64 = 3;
const WORKERS: usize = 4;
const MAX_PLACES_PER_WORKER: usize = 150;
const ACKS_BEFORE_KILL: usize = 60;
const ACKS_AFTER_KILL: usize = 60;

#[derive(Default, Debug)]
struct Report {
    acked: Vec<String>,
    acked_after_kill: usize,
    failures: Vec<String>,
}

/// Places resting orders with unique client order ids against whichever
/// node leads, retrying each one with the same id until it is answered.
fn worker(
    ports: &[u16],
    leader: &AtomicU16,
    account: &Account,
    name: &str,
    stop: &AtomicBool,
    killed: &AtomicBool,
    total: &AtomicUsize,
) -> Report {
    let mut report = Report::default();
    for n in 0..MAX_PLACES_PER_WORKER {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let client_order_id = format!("{name}-{n}");
        let body = resting_order(n, &client_order_id);
        let started = Instant::now();
        loop {
            if started.elapsed() > DEADLINE {
                report
                    .failures
                    .push(format!("{client_order_id}: no answer within the deadline"));
                return report;
            }
            let port = leader.load(Ordering::SeqCst);
            let answer = Client { port }.try_signed(account, "POST", "/v1/orders", &body);
            match answer {
                Ok(response) if response.status == 201 => {
                    report.acked.push(client_order_id.clone());
                    if killed.load(Ordering::SeqCst) {
                        report.acked_after_kill += 1;
                    }
                    total.fetch_add(1, Ordering::SeqCst);
                    break;
                }
                // An earlier attempt committed after all: the order exists.
                Ok(response)
                    if response.status == 409 && response.code() == "duplicate_client_order_id" =>
                {
                    report.acked.push(client_order_id.clone());
                    break;
                }
                Ok(response) if response.status == 503 || response.status == 429 => {}
                Ok(response) => {
                    report.failures.push(format!(
                        "{client_order_id}: {} {}",
                        response.status,
                        response.text()
                    ));
                    return report;
                }
                Err(_) => {}
            }
            // Not leading, unreachable or busy: find the leader again.
            std::thread::sleep(Duration::from_millis(20));
            if let Some(port) = leader_port(ports) {
                leader.store(port, Ordering::SeqCst);
            }
        }
    }
    report
}

#[test]
fn killing_the_leader_under_load_loses_no_acknowledged_order() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = CliCluster::up(EXCHANGE, &tmp.path().join("cluster"), NODES, None);
    let leader_api = listed_leader(&cluster);
    let accounts: Vec<Account> = (0..WORKERS).map(|_| leader_api.funded_account()).collect();
    let status = cluster.status().expect("cluster status");
    let old_leader = status["leader"].as_u64().expect("a leader in the status");

    let leader = AtomicU16::new(leader_api.port);
    let (stop, killed, total) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicUsize::new(0),
    );
    let mut failover = Duration::ZERO;
    let reports: Vec<Report> = std::thread::scope(|scope| {
        let handles: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let (ports, leader, stop, killed, total) =
                    (&cluster.ports, &leader, &stop, &killed, &total);
                scope.spawn(move || {
                    worker(
                        ports,
                        leader,
                        account,
                        &format!("w{i}"),
                        stop,
                        killed,
                        total,
                    )
                })
            })
            .collect();
        let _stop_workers = OnPanic(|| stop.store(true, Ordering::SeqCst));
        wait_until("orders acknowledged before the kill", || {
            total.load(Ordering::SeqCst) >= ACKS_BEFORE_KILL
        });
        killed.store(true, Ordering::SeqCst);
        let at_kill = total.load(Ordering::SeqCst);
        let kill_time = Instant::now();
        cluster.kill(old_leader);
        wait_until("a new leader", || {
            leader_port(&cluster.ports).is_some_and(|p| p != leader_api.port)
        });
        failover = kill_time.elapsed();
        wait_until("orders acknowledged after the kill", || {
            total.load(Ordering::SeqCst) >= at_kill + ACKS_AFTER_KILL
        });
        stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .collect()
    });
    eprintln!("new leader seen {failover:?} after the kill (polling included)");
    let failures: Vec<&String> = reports.iter().flat_map(|r| &r.failures).collect();
    assert!(failures.is_empty(), "unexpected answers: {failures:#?}");
    assert!(
        reports.iter().map(|r| r.acked_after_kill).sum::<usize>() > 0,
        "the load did not continue after the failover"
    );

    cluster.restart_dead();
    every_replica_converges(&cluster);

    every_replica_holds_each_acked_order_once(&cluster, &accounts, &reports);
}

/// The leader, once it lists the configured instruments.
fn listed_leader(cluster: &CliCluster) -> Client {
    let mut port = None;
    wait_until("a leader", || {
        port = leader_port(&cluster.ports);
        port.is_some()
    });
    let leader_api = Client {
        port: port.expect("leader"),
    };
    // The leader lists the configured instruments once it leads.
    wait_until("the instruments listed", || {
        leader_api
            .try_request("GET", "/v1/instruments", &[], b"")
            .is_ok_and(|r| r.status == 200 && r.text().contains("BTC-USD"))
    });
    leader_api
}

fn every_replica_converges(cluster: &CliCluster) {
    let mut last = Value::Null;
    wait_until("every replica at the same index and state hash", || {
        let Some(status) = cluster.status() else {
            return false;
        };
        let nodes = status["nodes"].as_array().cloned().unwrap_or_default();
        let commit = status["commit_index"].as_u64();
        let hashes: BTreeSet<String> = nodes
            .iter()
            .filter_map(|n| n["state_hash"].as_str().map(str::to_owned))
            .collect();
        let done = nodes.len() == NODES as usize
            && nodes
                .iter()
                .all(|n| n["applied_index"].as_u64() == commit && n["lag"] == 0)
            && hashes.len() == 1;
        last = status;
        done
    });
    eprintln!("converged: {last}");
}

fn every_replica_holds_each_acked_order_once(
    cluster: &CliCluster,
    accounts: &[Account],
    reports: &[Report],
) {
    // Every replica serves the orders from its own applied state.
    for &port in &cluster.ports {
        let api = Client { port };
        for (i, (account, report)) in accounts.iter().zip(reports).enumerate() {
            let count = api.order_counts(account);
            for id in &report.acked {
                assert_eq!(
                    count.get(id).copied(),
                    Some(1),
                    "node on port {port}: acknowledged order {id} of worker {i} \
                     must be there exactly once"
                );
            }
            let prefix = format!("w{i}-");
            assert!(
                count.keys().all(|id| id.starts_with(&prefix)),
                "node on port {port}: an order no client sent: {count:?}"
            );
        }
    }
}

/// Waits for a leader that lists the instruments, then rests one buy
/// order there for a new funded account.
fn order_on_the_leader(cluster: &CliCluster, client_order_id: &str) -> (Client, Account, Value) {
    let api = ready_leader(|| leader_port(&cluster.ports));
    let account = api.funded_account();
    let placed = api.place(&account, &limit("buy", "59000", "0.01", client_order_id));
    (api, account, placed)
}

/// SIGTERM to the leader: before it stops it hands leadership to a
/// follower (no election timeout to wait out), and its last orders are on
/// the new leader.
#[test]
fn a_leader_stopped_gracefully_hands_leadership_over() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = CliCluster::up(EXCHANGE, &tmp.path().join("cluster"), NODES, None);
    let (api, account, placed) = order_on_the_leader(&cluster, "before-stop");
    let old = cluster.status().expect("status")["leader"]
        .as_u64()
        .expect("leader id");
    let pid = cluster.pid(old).expect("leader pid");
    // SAFETY: SIGTERM to a process this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let started = Instant::now();
    wait_until("a new leader", || {
        leader_port(&cluster.ports).is_some_and(|p| p != api.port)
    });
    eprintln!("new leader after {:?}", started.elapsed());
    let log = cluster.dir.join(format!("node-{old}/log"));
    wait_until("the old leader to exit", || !process_alive(pid));
    let text = std::fs::read_to_string(&log).expect("old leader's log");
    assert!(
        text.contains("handing leadership over before stopping"),
        "no hand-over in the log:\n{text}"
    );
    let new_api = Client {
        port: leader_port(&cluster.ports).expect("new leader"),
    };
    let order = new_api.signed(
        &account,
        "GET",
        &format!("/v1/orders/{}", placed["order_id"]),
        "",
    );
    assert_eq!(order.status, 200, "{}", order.text());
}

#[test]
fn cluster_down_then_up_at_once_recovers_every_node() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cluster = CliCluster::up(EXCHANGE, &tmp.path().join("cluster"), NODES, None);
    // The gateway command's name as a client order id: every follower and
    // every restart's replay must read it as the order it is.
    let (_, account, placed) = order_on_the_leader(&cluster, "create_account");
    let dir = cluster.dir.display().to_string();
    // Read before `down`, which removes the pid files of stopped nodes.
    let pids: Vec<i32> = (1..=NODES)
        .map(|node| cluster.pid(node).expect("pid file"))
        .collect();
    assert_success(
        &cluster.exchange(&["cluster", "down", "--data-dir", &dir]),
        "cluster down",
    );
    for (node, pid) in (1..=NODES).zip(pids) {
        assert!(
            cluster.pid(node).is_none(),
            "node {node}'s pid file outlived cluster down"
        );
        // `down` returned: every node has exited (or is an unreaped zombie).
        assert!(
            !process_alive(pid),
            "node {node} (pid {pid}) still runs after cluster down"
        );
    }
    // No pause: the ports and files must already be free.
    cluster.restart_dead();
    wait_until("a leader after the restart", || {
        leader_port(&cluster.ports).is_some()
    });
    for &port in &cluster.ports {
        let api = Client { port };
        wait_until("every restarted node ready", || {
            api.try_request("GET", "/ready", &[], b"")
                .is_ok_and(|r| r.status == 200)
        });
        let mut order = None;
        wait_until("the order on every restarted node", || {
            let answer = api.signed(
                &account,
                "GET",
                &format!("/v1/orders/{}", placed["order_id"]),
                "",
            );
            let found = answer.status == 200;
            order = Some(answer);
            found
        });
        let order = order.expect("answer").json();
        assert_eq!(order["client_order_id"], "create_account");
        assert_eq!(order["status"], placed["status"]);
    }
}
