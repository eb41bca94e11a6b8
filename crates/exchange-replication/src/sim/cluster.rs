//! The simulated cluster (see the module's documentation).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{options, Faults, Machine, Rng};
use crate::{
    is_snapshot, CommittedKind, Membership, Message, ReadyOutcome, ReplicaConfig, ReplicaNode,
};

pub struct Live<M> {
    pub replica: ReplicaNode,
    pub machine: M,
    since_snapshot: u64,
}

struct InFlight {
    deliver_at: u64,
    order: u64,
    message: Message,
}

pub struct Cluster<M: Machine> {
    pub root: PathBuf,
    pub ids: Vec<u64>,
    pub nodes: BTreeMap<u64, Option<Live<M>>>,
    configs: BTreeMap<u64, ReplicaConfig>,
    network: Vec<InFlight>,
    pub rng: Rng,
    pub now: u64,
    order: u64,
    /// Partition: a node's side (nodes on different sides cannot talk).
    pub side: BTreeMap<u64, u8>,
    /// Every entry any replica handed over: index -> (term, payload; none
    /// for a membership change).
    pub log: BTreeMap<u64, (u64, Option<Vec<u8>>)>,
    /// The digest of the first state machine that applied each index
    /// checked (every `digest_every`th).
    pub digests: BTreeMap<u64, M::Digest>,
    /// Which indices' digests are compared (0: none).
    pub digest_every: u64,
    next_id: u64,
    /// Proposals in flight: (proposer, index, term) -> payload id.
    pending: BTreeMap<(u64, u64, u64), u64>,
    pub acked: BTreeSet<u64>,
    pub snapshot_every: u64,
    pub trace: Vec<(u64, u64, u64)>,
    pub faults: Faults,
}

impl<M: Machine> Cluster<M> {
    pub fn new(root: &Path, size: u64, seed: u64, faults: Faults) -> Cluster<M> {
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
            digests: BTreeMap::new(),
            digest_every: 1,
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
        let mut machine = match snapshot {
            Some(snapshot) => M::restore(snapshot.index, &snapshot.data),
            // The genesis snapshot: the empty state as of index 1.
            None => M::empty(replica.snapshot_index().0),
        };
        let mut next = machine.applied() + 1;
        while next <= replica.applied() {
            let batch = replica.read_committed(next, 64).expect("read committed");
            assert!(
                !batch.is_empty(),
                "node {id}: committed entries missing from {next}"
            );
            for committed in batch {
                self.check_agreement(id, committed.index, committed.term, &committed.kind);
                machine.apply(id, committed.index, payload(&committed.kind));
                check_digest(&mut self.digests, self.digest_every, id, &machine);
                next = committed.index + 1;
            }
        }
        self.nodes.insert(
            id,
            Some(Live {
                replica,
                machine,
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
        let payload = payload(kind).map(<[u8]>::to_vec);
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

    /// Whether the partition lets `a` and `b` talk (gateways a driver
    /// simulates may take sides too).
    pub fn can_talk(&self, a: u64, b: u64) -> bool {
        self.side.get(&a).copied().unwrap_or(0) == self.side.get(&b).copied().unwrap_or(0)
    }

    pub fn propose(&mut self, id: u64) -> bool {
        let payload_id = self.next_id;
        let Some(Some(live)) = self.nodes.get_mut(&id) else {
            return false;
        };
        match live.replica.propose(M::proposal(payload_id)) {
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
            live.machine = M::restore(snapshot.index, &snapshot.data);
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
            live.machine
                .apply(id, committed.index, payload(&committed.kind));
            live.since_snapshot += 1;
            if let Some(payload_id) = self.pending.remove(&key) {
                assert_eq!(
                    payload(&committed.kind),
                    Some(M::proposal(payload_id).as_slice()),
                    "node {id}: acknowledged entry {} carries another payload",
                    committed.index
                );
                self.acked.insert(payload_id);
            }
            let live = self.nodes.get(&id).and_then(Option::as_ref).expect("live");
            check_digest(&mut self.digests, self.digest_every, id, &live.machine);
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
            let index = live.machine.applied();
            let data = live.machine.snapshot();
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
            .map(|(id, n)| {
                format!(
                    "{id}: {:?} machine@{}",
                    n.replica.status(),
                    n.machine.applied()
                )
            })
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
                .is_some_and(|n| {
                    n.machine.applied() == commit && n.replica.commit_index() == commit
                })
        })
    }

    /// Every live replica's state machine, for comparison.
    pub fn machines(&self) -> Vec<(u64, &M)> {
        self.nodes
            .iter()
            .filter_map(|(id, n)| n.as_ref().map(|n| (*id, &n.machine)))
            .collect()
    }
}

impl<M: Machine> Cluster<M> {
    /// Proposes `payload` on node `id` as the server's Raft thread does;
    /// its fate is for the caller to learn from the log.
    pub fn propose_payload(&mut self, id: u64, payload: Vec<u8>) -> Option<(u64, u64)> {
        let live = self.nodes.get_mut(&id)?.as_mut()?;
        live.replica.propose(payload).ok()
    }
}

/// Replicas that applied the same index have the same digest there.
fn check_digest<M: Machine>(
    digests: &mut BTreeMap<u64, M::Digest>,
    every: u64,
    id: u64,
    machine: &M,
) {
    let index = machine.applied();
    if every == 0 || !index.is_multiple_of(every) {
        return;
    }
    let digest = machine.digest();
    match digests.get(&index) {
        Some(first) => assert!(
            *first == digest,
            "node {id}: state at index {index} is {digest:?}, another replica's was {first:?}"
        ),
        None => {
            digests.insert(index, digest);
        }
    }
}

/// What the state machine is handed for a committed entry.
fn payload(kind: &CommittedKind) -> Option<&[u8]> {
    match kind {
        CommittedKind::Normal(data) => Some(data),
        _ => None,
    }
}
