//! A whole cluster in one thread: seeded network (loss, delay, reordering,
//! duplication, partitions) and process crashes with restarts from the
//! replicas' own directories, over a toy state machine (a hash chain over
//! the applied payloads).
//!
//! Checked on every step: no two replicas ever hand over different entries
//! at one index; each replica hands over indices in order; no payload is
//! applied twice by one state machine; a proposal acknowledged to its
//! proposer carries the payload proposed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use exchange_replication::{
    is_snapshot, CommittedKind, Membership, Message, ReadyOutcome, ReplicaConfig, ReplicaNode,
    StorageOptions,
};

/// A small seeded generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True with probability `per_mille`/1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// The seed: `SIM_SEED` if set, else one derived from the clock. Printed
/// so that a failure can be replayed.
pub fn seed(name: &str) -> u64 {
    let seed = std::env::var("SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("{name}: seed {seed} (rerun with SIM_SEED={seed})");
    seed
}

pub fn steps(default: u64) -> u64 {
    std::env::var("SIM_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The toy state machine: a hash chain over applied payloads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toy {
    pub raft_index: u64,
    pub hash: u64,
    pub ids: BTreeSet<u64>,
}

fn mix(hash: u64, value: u64) -> u64 {
    let mut h = hash ^ value.wrapping_mul(0x1000_0000_01b3);
    h = h.wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    h ^ (h >> 17)
}

impl Toy {
    fn apply(&mut self, node: u64, index: u64, payload: &[u8]) {
        assert!(
            index > self.raft_index,
            "node {node}: index {index} handed over after {}",
            self.raft_index
        );
        self.raft_index = index;
        if payload.is_empty() {
            return;
        }
        let id = u64::from_le_bytes(payload.try_into().expect("8-byte payload"));
        assert!(
            self.ids.insert(id),
            "node {node}: payload {id} applied twice (index {index})"
        );
        self.hash = mix(self.hash, id);
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&self.raft_index.to_le_bytes());
        bytes.extend_from_slice(&self.hash.to_le_bytes());
        for id in &self.ids {
            bytes.extend_from_slice(&id.to_le_bytes());
        }
        bytes
    }

    fn restore(data: &[u8]) -> Toy {
        if data.is_empty() {
            return Toy::default();
        }
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("word"));
        Toy {
            raft_index: word(0),
            hash: word(8),
            ids: (16..data.len()).step_by(8).map(word).collect(),
        }
    }
}

pub struct Live {
    pub replica: ReplicaNode,
    pub toy: Toy,
    since_snapshot: u64,
}

struct InFlight {
    deliver_at: u64,
    order: u64,
    message: Message,
}

/// Network and crash behaviour of a run.
#[derive(Clone, Debug)]
pub struct Faults {
    pub loss: u64,
    pub duplicate: u64,
    pub max_delay: u64,
    pub crash: u64,
    pub restart: u64,
    pub partition: u64,
    pub heal: u64,
    pub propose: u64,
}

impl Faults {
    pub fn none() -> Faults {
        Faults {
            loss: 0,
            duplicate: 0,
            max_delay: 1,
            crash: 0,
            restart: 0,
            partition: 0,
            heal: 0,
            propose: 300,
        }
    }
    pub fn nemesis() -> Faults {
        Faults {
            loss: 50,
            duplicate: 10,
            max_delay: 4,
            crash: 4,
            restart: 40,
            partition: 4,
            heal: 30,
            propose: 300,
        }
    }
}

pub struct Cluster {
    pub root: PathBuf,
    pub ids: Vec<u64>,
    pub nodes: BTreeMap<u64, Option<Live>>,
    configs: BTreeMap<u64, ReplicaConfig>,
    network: Vec<InFlight>,
    pub rng: Rng,
    pub now: u64,
    order: u64,
    /// Partition: a node's side (nodes on different sides cannot talk).
    pub side: BTreeMap<u64, u8>,
    /// Every entry any replica handed over: index -> (term, payload).
    pub log: BTreeMap<u64, (u64, Vec<u8>)>,
    next_id: u64,
    /// Proposals in flight: (proposer, index, term) -> payload id.
    pending: BTreeMap<(u64, u64, u64), u64>,
    pub acked: BTreeSet<u64>,
    pub snapshot_every: u64,
    pub trace: Vec<(u64, u64, u64)>,
    pub faults: Faults,
}

pub fn options() -> StorageOptions {
    StorageOptions {
        // Crashes here are process crashes: the page cache survives them.
        fsync: false,
        segment_bytes: 2_048,
        // No spare-writing threads in a deterministic simulation.
        preallocate_after: None,
        keep_snapshots: 2,
        faults: Default::default(),
    }
}

impl Cluster {
    pub fn new(root: &Path, size: u64, seed: u64, faults: Faults) -> Cluster {
        let ids: Vec<u64> = (1..=size).collect();
        let mut cluster = Cluster {
            root: root.to_path_buf(),
            ids: ids.clone(),
            nodes: BTreeMap::new(),
            configs: BTreeMap::new(),
            network: Vec::new(),
            rng: Rng::new(seed),
            now: 0,
            order: 0,
            side: BTreeMap::new(),
            log: BTreeMap::new(),
            next_id: 1,
            pending: BTreeMap::new(),
            acked: BTreeSet::new(),
            snapshot_every: 25,
            trace: Vec::new(),
            faults,
        };
        for id in ids.clone() {
            let mut config = ReplicaConfig::new(id, ids.clone());
            config.seed = seed ^ id.wrapping_mul(0x51_7cc1_b727_220a);
            config.storage = options();
            cluster.configs.insert(id, config);
            cluster.start(id);
        }
        cluster
    }

    fn dirs(&self, id: u64) -> (PathBuf, PathBuf) {
        let base = self.root.join(format!("node-{id}"));
        (base.join("log"), base.join("snapshots"))
    }

    /// Starts (or restarts) a node from its directories: the state machine
    /// is its snapshot plus the committed entries after it.
    pub fn start(&mut self, id: u64) {
        let (log, snaps) = self.dirs(id);
        let config = self.configs[&id].clone();
        let (replica, snapshot, _) =
            ReplicaNode::open(&log, &snaps, &config).expect("open replica");
        let mut toy = match snapshot {
            Some(snapshot) => {
                let toy = Toy::restore(&snapshot.data);
                assert!(toy.raft_index <= snapshot.index);
                Toy {
                    raft_index: snapshot.index,
                    ..toy
                }
            }
            // The genesis snapshot: the empty state as of index 1.
            None => Toy {
                raft_index: replica.snapshot_index().0,
                ..Toy::default()
            },
        };
        let mut next = toy.raft_index + 1;
        while next <= replica.applied() {
            let batch = replica.read_committed(next, 64).expect("read committed");
            assert!(
                !batch.is_empty(),
                "node {id}: committed entries missing from {next}"
            );
            for committed in batch {
                self.check_agreement(id, committed.index, committed.term, &committed.kind);
                if let CommittedKind::Normal(data) = &committed.kind {
                    toy.apply(id, committed.index, data);
                } else {
                    toy.raft_index = committed.index;
                }
                next = committed.index + 1;
            }
        }
        self.nodes.insert(
            id,
            Some(Live {
                replica,
                toy,
                since_snapshot: 0,
            }),
        );
    }

    /// Adds an empty node that joins as a voter once the leader adds it.
    pub fn add_empty(&mut self, id: u64) {
        let mut config = ReplicaConfig::new(id, Vec::new());
        config.seed = self.rng.next();
        config.storage = options();
        self.configs.insert(id, config);
        self.ids.push(id);
        self.start(id);
    }

    pub fn crash(&mut self, id: u64) {
        self.nodes.insert(id, None);
        // Its proposals' fate is unknown to anyone who would acknowledge.
        self.pending.retain(|(proposer, _, _), _| *proposer != id);
    }

    pub fn is_live(&self, id: u64) -> bool {
        self.nodes.get(&id).is_some_and(Option::is_some)
    }

    pub fn leader(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| n.as_ref().map(|n| (id, n)))
            .filter(|(_, n)| n.replica.is_leader())
            .max_by_key(|(_, n)| n.replica.term())
            .map(|(id, _)| *id)
    }

    fn check_agreement(&mut self, id: u64, index: u64, term: u64, kind: &CommittedKind) {
        let payload = match kind {
            CommittedKind::Normal(data) => data.clone(),
            _ => b"conf".to_vec(),
        };
        match self.log.get(&index) {
            Some((t, p)) => assert!(
                *t == term && *p == payload,
                "divergence at index {index}: node {id} has term {term}, another had term {t}"
            ),
            None => {
                self.log.insert(index, (term, payload));
            }
        }
    }

    fn can_talk(&self, a: u64, b: u64) -> bool {
        self.side.get(&a).copied().unwrap_or(0) == self.side.get(&b).copied().unwrap_or(0)
    }

    pub fn propose(&mut self, id: u64) -> bool {
        let payload_id = self.next_id;
        let Some(Some(live)) = self.nodes.get_mut(&id) else {
            return false;
        };
        match live.replica.propose(payload_id.to_le_bytes().to_vec()) {
            Ok((index, term)) => {
                self.next_id += 1;
                self.pending.insert((id, index, term), payload_id);
                true
            }
            Err(_) => false,
        }
    }

    pub fn change(&mut self, id: u64, change: Membership) -> bool {
        match self.nodes.get_mut(&id) {
            Some(Some(live)) => live.replica.propose_membership(change, Vec::new()).is_ok(),
            _ => false,
        }
    }

    /// One tick of the whole cluster.
    pub fn step(&mut self) {
        self.now += 1;
        self.inject_faults();
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in &ids {
            if let Some(Some(live)) = self.nodes.get_mut(id) {
                live.replica.tick();
            }
        }
        if self.rng.chance(self.faults.propose) {
            if let Some(leader) = self.leader() {
                let count = 1 + self.rng.below(3);
                for _ in 0..count {
                    self.propose(leader);
                }
            }
        }
        self.deliver();
        for id in &ids {
            self.drain(*id);
        }
    }

    fn inject_faults(&mut self) {
        let ids = self.ids.clone();
        for id in ids {
            if self.is_live(id) {
                if self.rng.chance(self.faults.crash) {
                    self.crash(id);
                }
            } else if self.nodes.contains_key(&id) && self.rng.chance(self.faults.restart) {
                self.start(id);
            }
        }
        if self.side.is_empty() {
            if self.rng.chance(self.faults.partition) {
                for id in self.ids.clone() {
                    let side = (self.rng.below(2)) as u8;
                    self.side.insert(id, side);
                }
            }
        } else if self.rng.chance(self.faults.heal) {
            self.side.clear();
        }
    }

    fn deliver(&mut self) {
        let now = self.now;
        let (due, later): (Vec<InFlight>, Vec<InFlight>) =
            self.network.drain(..).partition(|m| m.deliver_at <= now);
        self.network = later;
        let mut due = due;
        due.sort_by_key(|m| (m.deliver_at, m.order));
        for flight in due {
            let message = flight.message;
            let (from, to) = (message.from, message.to);
            let snapshot = is_snapshot(&message);
            let lost = !self.can_talk(from, to) || !self.is_live(to);
            if lost {
                if snapshot {
                    if let Some(Some(sender)) = self.nodes.get_mut(&from) {
                        sender.replica.report_snapshot(to, false);
                    }
                }
                continue;
            }
            if let Some(Some(live)) = self.nodes.get_mut(&to) {
                // Refused messages (from a removed peer, say) are dropped.
                let _ = live.replica.step(message);
            }
            if snapshot {
                if let Some(Some(sender)) = self.nodes.get_mut(&from) {
                    sender.replica.report_snapshot(to, true);
                }
            }
        }
    }

    /// Runs a node's ready loop until it has nothing left.
    fn drain(&mut self, id: u64) {
        for _ in 0..8 {
            let mut out = Vec::new();
            let mut outcomes = Vec::new();
            {
                let Some(Some(live)) = self.nodes.get_mut(&id) else {
                    return;
                };
                if !live.replica.has_ready() {
                    return;
                }
                live.replica
                    .handle_ready_now(&mut |m| out.push(m), &mut |_, o| outcomes.push(o))
                    .expect("handle ready");
            }
            for message in out {
                self.send(message);
            }
            for outcome in outcomes {
                self.apply_outcome(id, outcome);
            }
            self.snapshot_when_due(id);
        }
    }

    /// Checks and applies what one `handle_ready` committed on a node.
    fn apply_outcome(&mut self, id: u64, outcome: ReadyOutcome) {
        if let Some(snapshot) = outcome.snapshot {
            let live = self
                .nodes
                .get_mut(&id)
                .and_then(Option::as_mut)
                .expect("live");
            let toy = Toy::restore(&snapshot.data);
            live.toy = Toy {
                raft_index: snapshot.index,
                ..toy
            };
        }
        for committed in outcome.committed {
            self.check_agreement(id, committed.index, committed.term, &committed.kind);
            self.trace.push((id, committed.index, committed.term));
            let key = (id, committed.index, committed.term);
            let live = self
                .nodes
                .get_mut(&id)
                .and_then(Option::as_mut)
                .expect("live");
            match &committed.kind {
                CommittedKind::Normal(data) => {
                    live.toy.apply(id, committed.index, data);
                    if let Some(payload_id) = self.pending.remove(&key) {
                        assert_eq!(
                            data.as_slice(),
                            payload_id.to_le_bytes(),
                            "node {id}: acknowledged entry {} carries another payload",
                            committed.index
                        );
                        self.acked.insert(payload_id);
                    }
                }
                _ => live.toy.raft_index = committed.index,
            }
            live.since_snapshot += 1;
        }
    }

    /// Snapshots a node whose snapshot is due, and forgets its lost
    /// proposals.
    fn snapshot_when_due(&mut self, id: u64) {
        let every = self.snapshot_every;
        let live = self
            .nodes
            .get_mut(&id)
            .and_then(Option::as_mut)
            .expect("live");
        if every > 0 && live.since_snapshot >= every {
            live.since_snapshot = 0;
            let index = live.toy.raft_index;
            let data = live.toy.snapshot();
            live.replica
                .save_snapshot(index, &data)
                .expect("save snapshot");
        }
        // Proposals overtaken by another term at their index are lost.
        let applied = live.replica.applied();
        self.pending
            .retain(|(proposer, index, _), _| *proposer != id || *index > applied);
    }

    fn send(&mut self, message: Message) {
        let copies = if self.rng.chance(self.faults.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            if self.rng.chance(self.faults.loss) {
                if is_snapshot(&message) {
                    let (from, to) = (message.from, message.to);
                    if let Some(Some(sender)) = self.nodes.get_mut(&from) {
                        sender.replica.report_snapshot(to, false);
                    }
                }
                continue;
            }
            self.order += 1;
            let delay = 1 + self.rng.below(self.faults.max_delay);
            self.network.push(InFlight {
                deliver_at: self.now + delay,
                order: self.order,
                message: message.clone(),
            });
        }
    }

    /// Ends every fault, restarts every crashed node and runs until all
    /// replicas applied the same log, or panics after `limit` ticks.
    pub fn heal_and_converge(&mut self, limit: u64) {
        self.side.clear();
        self.faults = Faults {
            propose: 0,
            ..Faults::none()
        };
        for id in self.ids.clone() {
            if !self.is_live(id) {
                self.start(id);
            }
        }
        for _ in 0..limit {
            self.step();
            if self.converged() {
                return;
            }
        }
        let states: Vec<String> = self
            .nodes
            .iter()
            .filter_map(|(id, n)| n.as_ref().map(|n| (id, n)))
            .map(|(id, n)| format!("{id}: {:?} toy@{}", n.replica.status(), n.toy.raft_index))
            .collect();
        panic!("no convergence after {limit} ticks:\n{}", states.join("\n"));
    }

    fn converged(&self) -> bool {
        let Some(leader) = self.leader() else {
            return false;
        };
        let lead = self.nodes[&leader].as_ref().expect("live leader");
        // Everything in the leader's log, including the entry it appended
        // on election, must be committed: until then a restarted replica
        // may still be behind on what was committed before.
        let commit = lead.replica.commit_index();
        let status = lead.replica.status();
        if status.last_index != commit {
            return false;
        }
        let members = status.voters;
        members.iter().all(|id| {
            self.nodes
                .get(id)
                .and_then(Option::as_ref)
                .is_some_and(|n| n.toy.raft_index == commit && n.replica.commit_index() == commit)
        })
    }

    /// Every live replica's state machine, for comparison.
    pub fn toys(&self) -> Vec<(u64, Toy)> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| n.as_ref().map(|n| (*id, n.toy.clone())))
            .collect()
    }
}
