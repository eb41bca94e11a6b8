//! A replica whose disk fills raises the `nospace` alarm: `/health` and
//! `/ready` answer 503 naming it, `/metrics` and `/admin/status` show it,
//! writes are refused with `nospace`; once space returns the alarm clears
//! by itself and writes go on, with every acknowledged order in the state
//! exactly once. A leader whose disk fills hands leadership over, and the
//! cluster takes writes through the others meanwhile; a follower whose
//! disk fills waits, and catches up once space returns. A node stopped
//! while its disk is full stops without waiting for space.
//!
//! Each data directory is a small tmpfs of its own, filled with a filler
//! file: mounting needs root, so without it the tests print `SKIPPED`
//! (and fail in CI, where they must run).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use exchange_testkit::{
    leader_port, resting_order, small_disks, wait_until, Account, Client, ProxiedCluster, Server,
    SmallDisk,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// The mounts are global to the machine: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Each data directory's tmpfs: room for the journal's first segment,
/// and little more.
const DISK_MB: u64 = 16;

/// The node's alarms as `/admin/status` lists them.
fn alarms(api: &Client) -> Vec<String> {
    let status = api.admin("GET", "/admin/status", "").json();
    status["alarms"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Every place the alarm shows while it is up.
fn assert_alarm_shown(api: &Client) {
    for path in ["/health", "/ready"] {
        let answer = api.get(path);
        assert_eq!(answer.status, 503, "{path}: {}", answer.text());
        assert_eq!(answer.json()["alarms"][0], "nospace", "{path}");
    }
    assert_eq!(alarms(api), ["nospace"]);
    let metrics = api.admin("GET", "/metrics", "").text();
    assert!(
        metrics.contains("exchange_alarm{alarm=\"nospace\"} 1"),
        "{metrics}"
    );
}

fn assert_alarm_clear(api: &Client) {
    api.assert_healthy("space returned");
    assert_eq!(api.get("/ready").status, 200);
    assert!(alarms(api).is_empty());
    let metrics = api.admin("GET", "/metrics", "").text();
    assert!(
        metrics.contains("exchange_alarm{alarm=\"nospace\"} 0"),
        "{metrics}"
    );
}

/// What became of each order a writer sent, by client order id.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Acknowledged,
    /// Refused with `nospace`: never queued.
    NoSpace,
    /// Anything else (another refusal, a timeout): it may or may not be in.
    Unknown,
}

/// Places resting orders one after another until told to stop, through
/// whichever node `target` names, recording each outcome; the client order
/// ids start with `prefix`.
struct Writer {
    outcomes: Arc<Mutex<Vec<(String, Outcome)>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Writer {
    fn start(
        prefix: &str,
        account: &Account,
        target: impl Fn() -> Option<Client> + Send + 'static,
    ) -> Writer {
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, halt, account) = (outcomes.clone(), stop.clone(), account.clone());
        let prefix = prefix.to_owned();
        let thread = std::thread::spawn(move || {
            for n in 0..2_000 {
                if halt.load(Ordering::Acquire) {
                    return;
                }
                let Some(api) = target() else {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                };
                let id = format!("{prefix}{n}");
                let body = resting_order(n, &id);
                let outcome = match api.try_signed(&account, "POST", "/v1/orders", &body) {
                    Ok(r) if r.status == 201 => Outcome::Acknowledged,
                    Ok(r) if r.status == 503 && r.code() == "nospace" => Outcome::NoSpace,
                    _ => Outcome::Unknown,
                };
                if outcome != Outcome::Acknowledged {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                seen.lock().expect("outcomes").push((id, outcome));
            }
        });
        Writer {
            outcomes,
            stop,
            thread,
        }
    }

    fn count(&self, outcome: &Outcome) -> usize {
        let outcomes = self.outcomes.lock().expect("outcomes");
        outcomes.iter().filter(|(_, o)| o == outcome).count()
    }

    fn finish(self) -> Vec<(String, Outcome)> {
        self.stop.store(true, Ordering::Release);
        self.thread.join().expect("the writer");
        Arc::try_unwrap(self.outcomes)
            .expect("the writer is done")
            .into_inner()
            .expect("outcomes")
    }
}

/// Every acknowledged order is in the node's state once, no order refused
/// with `nospace` is, and none is there twice.
fn assert_orders_kept(api: &Client, account: &Account, outcomes: &[(String, Outcome)]) {
    let counts: BTreeMap<String, usize> = api.order_counts(account);
    for (id, outcome) in outcomes {
        let found = counts.get(id).copied().unwrap_or(0);
        match outcome {
            Outcome::Acknowledged => assert_eq!(found, 1, "acknowledged order {id}"),
            Outcome::NoSpace => assert_eq!(found, 0, "order {id} refused with nospace"),
            Outcome::Unknown => assert!(found <= 1, "order {id} twice"),
        }
    }
    assert!(
        counts.values().all(|&n| n == 1),
        "an order twice: {counts:?}"
    );
    let tally = |want: Outcome| outcomes.iter().filter(|(_, o)| *o == want).count();
    eprintln!(
        "orders: {} acknowledged, {} refused with nospace, {} unknown",
        tally(Outcome::Acknowledged),
        tally(Outcome::NoSpace),
        tally(Outcome::Unknown)
    );
}

/// A single node on a small disk, taking orders from a writer, whose disk
/// filled once `acks` were acknowledged: its alarm is up.
struct FullNode {
    tmp: tempfile::TempDir,
    data: PathBuf,
    disks: Vec<SmallDisk>,
    server: Server,
    account: Account,
    writer: Writer,
    filler: PathBuf,
}

/// `None` where no small disk can be made (see `small_disks`).
fn a_node_whose_disk_filled(acks: usize) -> Option<FullNode> {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = tmp.path().join("data");
    let disks = small_disks(std::slice::from_ref(&data), DISK_MB)?;
    let server = Server::start(EXCHANGE, &data);
    let api = server.api;
    let account = api.funded_account();
    let writer = Writer::start("w", &account, move || Some(api));
    wait_until("orders before the disk fills", || {
        writer.count(&Outcome::Acknowledged) >= acks
    });
    let filler = disks[0].fill().expect("fill the disk");
    wait_until("the nospace alarm", || api.get("/health").status == 503);
    Some(FullNode {
        tmp,
        data,
        disks,
        server,
        account,
        writer,
        filler,
    })
}

#[test]
fn a_full_disk_raises_nospace_and_the_alarm_clears_once_space_returns() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(FullNode {
        tmp: _tmp,
        data,
        disks,
        mut server,
        account,
        writer,
        filler,
    }) = a_node_whose_disk_filled(20)
    else {
        return;
    };
    let api = server.api;
    assert_alarm_shown(&api);
    let refused = api.signed(&account, "POST", "/v1/orders", &resting_order(1, "refused"));
    refused.expect_error(503, "nospace", "a write while the disk is full");
    let acknowledged = writer.count(&Outcome::Acknowledged);
    std::fs::remove_file(filler).expect("remove the filler");
    wait_until("the alarm to clear", || api.get("/health").status == 200);
    assert_alarm_clear(&api);
    wait_until("orders after space returned", || {
        writer.count(&Outcome::Acknowledged) >= acknowledged + 20
    });
    let mut outcomes = writer.finish();
    outcomes.push(("refused".into(), Outcome::NoSpace));
    assert!(outcomes.iter().any(|(_, o)| *o == Outcome::NoSpace));
    assert_orders_kept(&api, &account, &outcomes);
    // What is on disk says the same after a restart.
    server.kill();
    let server = Server::start(EXCHANGE, &data);
    assert_orders_kept(&server.api, &account, &outcomes);
    drop(server);
    drop(disks);
}

#[test]
fn a_node_stopped_while_its_disk_is_full_stops_and_keeps_what_it_acknowledged() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(FullNode {
        tmp: _tmp,
        data,
        disks,
        mut server,
        account,
        writer,
        filler,
    }) = a_node_whose_disk_filled(10)
    else {
        return;
    };
    // The stop does not wait for space (`stop_with` fails the test if the
    // process does not exit).
    server.stop_with(libc::SIGTERM);
    let outcomes = writer.finish();
    std::fs::remove_file(filler).expect("remove the filler");
    let server = Server::start(EXCHANGE, &data);
    server.api.assert_healthy("a restart with space");
    assert_orders_kept(&server.api, &account, &outcomes);
    drop(server);
    drop(disks);
}

/// The node at `port`, unless its alarm is up (it still says it leads
/// until its write goes through).
fn writable_leader(ports: &[u16]) -> Option<Client> {
    let well: Vec<u16> = ports
        .iter()
        .copied()
        .filter(|&port| {
            Client { port }
                .try_request("GET", "/health", &[], b"")
                .is_ok_and(|r| r.status == 200)
        })
        .collect();
    leader_port(&well).map(|port| Client { port })
}

#[test]
fn a_leader_whose_disk_fills_hands_over_and_the_cluster_takes_writes() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("temp dir");
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|id| tmp.path().join(format!("node-{id}")))
        .collect();
    let Some(disks) = small_disks(&dirs, DISK_MB) else {
        return;
    };
    let mut cluster = ProxiedCluster::start(EXCHANGE, tmp.path(), 3);
    let ports: Vec<u16> = cluster.http.values().copied().collect();
    let leader = exchange_testkit::ready_leader(|| leader_port(&ports));
    let old = cluster
        .http
        .iter()
        .find(|(_, port)| **port == leader.port)
        .map(|(id, _)| *id)
        .expect("the leader's id");
    let account = leader.funded_account();
    let before = Writer::start("a", &account, move || Some(leader));
    wait_until("orders before the disk fills", || {
        before.count(&Outcome::Acknowledged) >= 20
    });
    let mut outcomes = before.finish();
    let filler = disks[(old - 1) as usize].fill().expect("fill the disk");
    // Writes to the full leader until one finds no space: that one waits.
    let stuck = Writer::start("s", &account, move || Some(leader));
    wait_until("the nospace alarm", || leader.get("/health").status == 503);
    assert_alarm_shown(&leader);
    let targets = ports.clone();
    let after = Writer::start("b", &account, move || writable_leader(&targets));
    wait_until("writes through another leader", || {
        after.count(&Outcome::Acknowledged) >= 20
    });
    assert_eq!(leader.get("/health").status, 503, "the alarm is still up");
    std::fs::remove_file(filler).expect("remove the filler");
    wait_until("the alarm to clear", || leader.get("/health").status == 200);
    assert_alarm_clear(&leader);
    outcomes.extend(stuck.finish());
    outcomes.extend(after.finish());
    wait_until("the replicas to converge", || cluster.converged());
    for port in &ports {
        assert_orders_kept(&Client { port: *port }, &account, &outcomes);
    }
    cluster.nodes.clear();
    drop(disks);
}

#[test]
fn a_follower_whose_disk_fills_waits_and_catches_up() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("temp dir");
    let dirs: Vec<PathBuf> = (1..=3)
        .map(|id| tmp.path().join(format!("node-{id}")))
        .collect();
    let Some(disks) = small_disks(&dirs, DISK_MB) else {
        return;
    };
    let mut cluster = ProxiedCluster::start(EXCHANGE, tmp.path(), 3);
    let ports: Vec<u16> = cluster.http.values().copied().collect();
    let leader = exchange_testkit::ready_leader(|| leader_port(&ports));
    let (follower_id, follower) = cluster
        .http
        .iter()
        .find(|(_, port)| **port != leader.port)
        .map(|(id, port)| (*id, Client { port: *port }))
        .expect("a follower");
    let account = leader.funded_account();
    let writer = Writer::start("w", &account, move || Some(leader));
    wait_until("orders before the disk fills", || {
        writer.count(&Outcome::Acknowledged) >= 20
    });
    let filler = disks[(follower_id - 1) as usize]
        .fill()
        .expect("fill the disk");
    wait_until("the follower's nospace alarm", || {
        follower.get("/health").status == 503
    });
    assert_alarm_shown(&follower);
    // The leader and the other follower are a majority.
    let acknowledged = writer.count(&Outcome::Acknowledged);
    wait_until("writes while a follower waits for space", || {
        writer.count(&Outcome::Acknowledged) >= acknowledged + 20
    });
    leader.assert_healthy("a follower's disk filled");
    std::fs::remove_file(filler).expect("remove the filler");
    wait_until("the alarm to clear", || {
        follower.get("/health").status == 200
    });
    assert_alarm_clear(&follower);
    let outcomes = writer.finish();
    wait_until("the replicas to converge", || cluster.converged());
    for port in &ports {
        assert_orders_kept(&Client { port: *port }, &account, &outcomes);
    }
    cluster.nodes.clear();
    drop(disks);
}
