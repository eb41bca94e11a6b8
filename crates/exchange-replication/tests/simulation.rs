//! Deterministic simulation of Raft clusters over the toy state machine
//! (see `exchange_replication::sim`). Every run prints its seed;
//! `SIM_SEED=N` replays one, `SIM_STEPS=N` runs longer.

use exchange_replication::sim::{seed, steps, Faults, Toy};
use exchange_replication::Membership;

type Cluster = exchange_replication::sim::Cluster<Toy>;

/// Every live replica's toy, for comparison.
fn toys(cluster: &Cluster) -> Vec<(u64, Toy)> {
    cluster
        .machines()
        .into_iter()
        .map(|(id, toy)| (id, toy.clone()))
        .collect()
}

/// Runs a nemesis of `size` nodes and checks the end state.
fn nemesis(name: &str, size: u64, default_steps: u64) {
    let seed = seed(name);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::new(dir.path(), size, seed, Faults::nemesis());
    for _ in 0..steps(default_steps) {
        cluster.step();
    }
    cluster.heal_and_converge(3_000);
    let toys = toys(&cluster);
    let (_, first) = &toys[0];
    for (id, toy) in &toys {
        assert_eq!(
            (toy.raft_index, toy.hash),
            (first.raft_index, first.hash),
            "seed {seed}: node {id} differs from node {}",
            toys[0].0
        );
        let missing: Vec<_> = cluster.acked.difference(&toy.ids).collect();
        assert!(
            missing.is_empty(),
            "seed {seed}: node {id} lacks acknowledged payloads {missing:?}"
        );
    }
    assert!(
        cluster.acked.len() > 20,
        "seed {seed}: only {} proposals acknowledged; the run proves little",
        cluster.acked.len()
    );
    eprintln!(
        "{name}: {} acknowledged, {} entries, final index {}",
        cluster.acked.len(),
        cluster.log.len(),
        first.raft_index
    );
}

#[test]
fn three_nodes_under_nemesis() {
    nemesis("three_nodes_under_nemesis", 3, 1_500);
}

#[test]
fn five_nodes_under_nemesis() {
    nemesis("five_nodes_under_nemesis", 5, 1_500);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let seed = seed("the_same_seed_gives_the_same_run");
    let run = || {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cluster = Cluster::new(dir.path(), 3, seed, Faults::nemesis());
        for _ in 0..400 {
            cluster.step();
        }
        (cluster.trace.clone(), cluster.acked.clone())
    };
    let (a, b) = (run(), run());
    assert!(!a.0.is_empty(), "seed {seed}: nothing committed");
    assert_eq!(a, b, "seed {seed}: two runs of one seed differ");
}

#[test]
fn a_lagging_node_catches_up_by_snapshot_after_compaction() {
    let seed = seed("a_lagging_node_catches_up_by_snapshot_after_compaction");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::new(dir.path(), 3, seed, Faults::none());
    for _ in 0..100 {
        cluster.step();
    }
    let leader = cluster.leader().expect("a leader");
    let lagging = cluster
        .ids
        .iter()
        .copied()
        .find(|id| *id != leader)
        .expect("a follower");
    let before = toys(&cluster);
    cluster.crash(lagging);
    for _ in 0..1_500 {
        cluster.step();
    }
    // The live replicas compacted their logs past where the lagging one
    // stopped, so only a snapshot can bring it back.
    let live_first = cluster
        .nodes
        .values()
        .filter_map(Option::as_ref)
        .map(|n| n.replica.snapshot_index().0)
        .min()
        .expect("live nodes");
    let stopped_at = before
        .iter()
        .find(|(id, _)| *id == lagging)
        .map(|(_, t)| t.raft_index)
        .expect("lagging state");
    assert!(
        live_first > stopped_at + 30,
        "seed {seed}: the log was not compacted past the lagging node \
         ({live_first} vs {stopped_at})"
    );
    let log_files = std::fs::read_dir(dir.path().join(format!("node-{leader}/log")))
        .expect("leader log")
        .count();
    assert!(
        log_files < 20,
        "seed {seed}: compaction kept {log_files} files"
    );
    cluster.start(lagging);
    cluster.heal_and_converge(2_000);
    let toys = toys(&cluster);
    assert!(
        toys.windows(2).all(|w| w[0].1 == w[1].1),
        "seed {seed}: {toys:?}"
    );
    let node = cluster.nodes[&lagging].as_ref().expect("live");
    assert!(
        node.replica.snapshot_index().0 > stopped_at,
        "seed {seed}: the lagging node did not install a snapshot"
    );
}

#[test]
fn a_new_node_joins_by_snapshot_and_a_voter_is_removed() {
    let seed = seed("a_new_node_joins_by_snapshot_and_a_voter_is_removed");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::new(dir.path(), 3, seed, Faults::none());
    for _ in 0..600 {
        cluster.step();
    }
    cluster.add_empty(4);
    let mut added = false;
    for _ in 0..2_000 {
        if !added {
            if let Some(leader) = cluster.leader() {
                added = cluster.change(leader, Membership::AddVoter(4));
            }
        }
        cluster.step();
        let joined = cluster.nodes[&4]
            .as_ref()
            .is_some_and(|n| n.replica.status().voters.contains(&4) && n.machine.ids.len() > 100);
        if joined {
            break;
        }
    }
    let node = cluster.nodes[&4].as_ref().expect("live");
    assert!(
        node.replica.snapshot_index().0 > 0,
        "seed {seed}: no snapshot installed"
    );
    assert!(
        node.replica.status().voters.contains(&4),
        "seed {seed}: node 4 never became a voter: {:?}",
        node.replica.status()
    );
    // Remove a follower; the other three go on committing.
    let leader = cluster.leader().expect("a leader");
    let removed = cluster
        .ids
        .iter()
        .copied()
        .find(|id| *id != leader && *id != 4)
        .expect("one");
    assert!(cluster.change(leader, Membership::RemoveVoter(removed)));
    for _ in 0..300 {
        cluster.step();
    }
    cluster.crash(removed);
    cluster.nodes.remove(&removed);
    cluster.ids.retain(|id| *id != removed);
    let acked = cluster.acked.len();
    for _ in 0..300 {
        cluster.step();
    }
    assert!(
        cluster.acked.len() > acked,
        "seed {seed}: no progress without node {removed}"
    );
    cluster.heal_and_converge(2_000);
    let toys = toys(&cluster);
    assert_eq!(toys.len(), 3);
    assert!(
        toys.windows(2).all(|w| w[0].1 == w[1].1),
        "seed {seed}: {toys:?}"
    );
}

#[test]
fn every_replica_restarts_from_its_own_disk() {
    let seed = seed("every_replica_restarts_from_its_own_disk");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::new(dir.path(), 3, seed, Faults::none());
    for _ in 0..400 {
        cluster.step();
    }
    cluster.heal_and_converge(1_000);
    let before = toys(&cluster);
    for id in cluster.ids.clone() {
        cluster.crash(id);
    }
    for id in cluster.ids.clone() {
        cluster.start(id);
    }
    // The commit index is written lazily, so a replica may come back
    // behind; what it has is a prefix of what it had, and the new leader
    // brings everyone back to the same state.
    for ((id, after), (_, was)) in toys(&cluster).iter().zip(&before) {
        assert!(
            after.raft_index <= was.raft_index && after.ids.is_subset(&was.ids),
            "seed {seed}: node {id} came back with state it never had"
        );
    }
    cluster.heal_and_converge(1_000);
    for ((id, after), (_, was)) in toys(&cluster).iter().zip(&before) {
        assert_eq!(
            (after.hash, &after.ids),
            (was.hash, &was.ids),
            "seed {seed}: node {id} lost state in a full restart"
        );
    }
    cluster.faults = Faults::none();
    for _ in 0..300 {
        cluster.step();
    }
    cluster.heal_and_converge(1_000);
    assert!(toys(&cluster)[0].1.ids.len() > before[0].1.ids.len());
}

/// A reader behind the state machine (the reporting service) replays the
/// log from an older state than the newest snapshots: the log it needs is
/// kept, from the genesis when no snapshot is that old, and dropped once
/// nothing needs it.
#[test]
fn compaction_keeps_the_log_a_reader_still_needs() {
    let seed = seed("compaction_keeps_the_log_a_reader_still_needs");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::new(dir.path(), 1, seed, Faults::none());
    // Snapshots are written below as the node's writer thread writes them.
    cluster.snapshot_every = 0;
    for _ in 0..1_500 {
        cluster.step();
    }
    let snapshots = dir.path().join("node-1/snapshots");
    let live = cluster
        .nodes
        .get_mut(&1)
        .and_then(Option::as_mut)
        .expect("live");
    let replica = &mut live.replica;
    let (first, applied) = (replica.first_index(), replica.applied());
    assert!(applied > 300, "seed {seed}: {applied} entries applied");
    let conf = replica.conf_state().clone();
    let term = replica.term();
    let snapshot_at = |replica: &mut exchange_replication::ReplicaNode, index, keep| {
        exchange_replication::write_snapshot(&snapshots, index, term, &conf, b"state", 2)
            .expect("write a snapshot");
        replica
            .snapshot_written(index, term, &conf, keep)
            .expect("compaction");
        replica.first_index()
    };
    // A reader before every snapshot on disk replays from the genesis.
    assert_eq!(snapshot_at(replica, applied - 200, 0), first, "seed {seed}");
    assert_eq!(snapshot_at(replica, applied - 100, 0), first, "seed {seed}");
    // A reader whose floor is the older snapshot keeps the log after it.
    let kept_from = snapshot_at(replica, applied - 50, applied - 100);
    assert!(
        kept_from > first && kept_from <= applied - 100,
        "seed {seed}: the log starts at {kept_from}, the reader's snapshot is at {}",
        applied - 100
    );
    // No reader: the log goes down to the oldest snapshot kept (applied -
    // 50, the newer two are kept), as far as whole segments allow: the
    // journal drops segments, so the log may start a little before it,
    // never after it, and never before where the reader's floor kept it.
    let alone = snapshot_at(replica, applied, u64::MAX);
    assert!(
        kept_from <= alone && alone <= applied - 50,
        "seed {seed}: the log starts at {alone}, was kept from {kept_from}"
    );
}
