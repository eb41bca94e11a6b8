//! A randomized nemesis over a three-node cluster of real processes: each
//! round kills a node (SIGKILL, restarted later), cuts a node off, or cuts
//! the leader off, at random moments, while clients keep placing orders
//! against whoever leads (retrying with the same client order id). After
//! each round the faults end and the invariants are checked: every replica
//! reaches one state hash, and holds every acknowledged order exactly once
//! and no order nobody sent.
//!
//! `NEMESIS_SEED=N` replays a run; `NEMESIS_ROUNDS=N` (default 3) makes it
//! longer (`NEMESIS_ROUNDS=50` for a soak).

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use exchange_testkit::{
    leader_port, ready_leader, resting_order, unix_now_ms, wait_until, Account, Client, OnPanic,
    ProxiedCluster, Rng, DEADLINE,
};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WRITERS: usize = 2;
const MAX_PER_WRITER: usize = 2_000;
/// Pause between a writer's orders: a load that lasts a long soak.
const PACE: Duration = Duration::from_millis(15);

struct Shared {
    ports: Vec<u16>,
    leader: AtomicU16,
    stop: AtomicBool,
    paused: AtomicBool,
    busy: AtomicUsize,
    acked: Mutex<Vec<Vec<String>>>,
    failures: Mutex<Vec<String>>,
}

/// Places resting orders against the leader until stopped, pausing between
/// orders when asked; each order is retried with its id until answered.
fn writer(shared: &Shared, index: usize, account: &Account) {
    for n in 0..MAX_PER_WRITER {
        while shared.paused.load(Ordering::SeqCst) && !shared.stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        shared.busy.fetch_add(1, Ordering::SeqCst);
        let id = format!("w{index}-{n}");
        let body = resting_order(n, &id);
        let started = Instant::now();
        loop {
            let port = shared.leader.load(Ordering::SeqCst);
            let answer = Client { port }.try_signed(account, "POST", "/v1/orders", &body);
            match answer {
                Ok(r) if r.status == 201 => break,
                Ok(r) if r.status == 409 && r.code() == "duplicate_client_order_id" => break,
                Ok(r) if r.status == 503 || r.status == 429 => {}
                Ok(r) => {
                    if let Ok(mut f) = shared.failures.lock() {
                        f.push(format!("{id}: {} {}", r.status, r.text()));
                    }
                    shared.busy.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                Err(_) => {}
            }
            if started.elapsed() > DEADLINE {
                if let Ok(mut f) = shared.failures.lock() {
                    f.push(format!("{id}: unanswered within the deadline"));
                }
                shared.busy.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
            if let Some(port) = leader_port(&shared.ports) {
                shared.leader.store(port, Ordering::SeqCst);
            }
        }
        if let Ok(mut acked) = shared.acked.lock() {
            acked[index].push(id);
        }
        shared.busy.fetch_sub(1, Ordering::SeqCst);
        std::thread::sleep(PACE);
    }
}

/// After a random pause, one random fault held for a random time: a
/// node killed, a node isolated, or the leader isolated.
fn inject_a_fault(cluster: &mut ProxiedCluster, rng: &mut Rng, round: u64) {
    std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
    let victim = 1 + rng.below(3);
    let fault = rng.below(3);
    let hold = Duration::from_millis(200 + rng.below(1_300));
    match fault {
        0 => {
            eprintln!("round {round}: kill -9 node {victim} for {hold:?}");
            cluster.kill(victim);
            std::thread::sleep(hold);
            cluster.spawn(victim);
        }
        1 => {
            eprintln!("round {round}: isolate node {victim} for {hold:?}");
            cluster.isolate(victim, true);
            std::thread::sleep(hold);
            cluster.heal();
        }
        _ => {
            let leader = cluster.leader().unwrap_or(victim);
            eprintln!("round {round}: isolate the leader (node {leader}) for {hold:?}");
            cluster.isolate(leader, true);
            std::thread::sleep(hold);
            cluster.heal();
        }
    }
}

fn every_acked_order_once_everywhere(
    cluster: &ProxiedCluster,
    shared: &Shared,
    accounts: &[Account],
    seed: u64,
    round: u64,
) {
    let acked = shared.acked.lock().map(|a| a.clone()).unwrap_or_default();
    for node in cluster.nodes.values() {
        for (index, account) in accounts.iter().enumerate() {
            let count = Client { port: node.http }.order_counts(account);
            for id in &acked[index] {
                assert_eq!(
                    count.get(id),
                    Some(&1),
                    "seed {seed} round {round}: acknowledged order {id} on node at port {}",
                    node.http
                );
            }
            let prefix = format!("w{index}-");
            assert!(
                count.keys().all(|id| id.starts_with(&prefix)) && count.values().all(|c| *c == 1),
                "seed {seed} round {round}: unexpected orders {count:?}"
            );
        }
    }
}

#[test]
fn nemesis_rounds_keep_every_acknowledged_order_and_one_history() {
    let seed = std::env::var("NEMESIS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64 ^ unix_now_ms());
    let rounds: u64 = std::env::var("NEMESIS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    eprintln!("nemesis: seed {seed}, {rounds} rounds (NEMESIS_SEED={seed} replays the faults)");
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut cluster = ProxiedCluster::start(EXCHANGE, tmp.path(), 3);
    let ports: Vec<u16> = cluster.ids.iter().map(|id| cluster.http[id]).collect();
    let api = ready_leader(|| leader_port(&ports));
    let accounts: Vec<Account> = (0..WRITERS).map(|_| api.funded_account()).collect();
    let shared = Shared {
        ports: ports.clone(),
        leader: AtomicU16::new(api.port),
        stop: AtomicBool::new(false),
        paused: AtomicBool::new(false),
        busy: AtomicUsize::new(0),
        acked: Mutex::new(vec![Vec::new(); WRITERS]),
        failures: Mutex::new(Vec::new()),
    };
    std::thread::scope(|scope| {
        for (index, account) in accounts.iter().enumerate() {
            let shared = &shared;
            scope.spawn(move || writer(shared, index, account));
        }
        let _stop_writers = OnPanic(|| shared.stop.store(true, Ordering::SeqCst));
        for round in 0..rounds {
            inject_a_fault(&mut cluster, &mut rng, round);
            // Quiesce the clients, then check.
            shared.paused.store(true, Ordering::SeqCst);
            wait_until("the clients between orders", || {
                shared.busy.load(Ordering::SeqCst) == 0
            });
            wait_until("one history on every replica", || cluster.converged());
            every_acked_order_once_everywhere(&cluster, &shared, &accounts, seed, round);
            shared.paused.store(false, Ordering::SeqCst);
        }
        shared.stop.store(true, Ordering::SeqCst);
    });
    let failures = shared
        .failures
        .lock()
        .map(|f| f.clone())
        .unwrap_or_default();
    assert!(failures.is_empty(), "seed {seed}: {failures:#?}");
    let total: usize = shared
        .acked
        .lock()
        .map(|a| a.iter().map(Vec::len).sum())
        .unwrap_or(0);
    eprintln!("nemesis: {total} orders acknowledged over {rounds} rounds");
    assert!(total > 0, "seed {seed}: nothing was acknowledged");
}
