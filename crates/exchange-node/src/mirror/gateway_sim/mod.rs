//! Order-entry gateways with client sessions against a simulated Raft
//! cluster, in one thread and seeded: the cluster of
//! `exchange_replication::sim` (message loss, delay, duplication,
//! partitions, replica crashes and restarts from disk) replicating the
//! node's own state, and gateways that are the real forwarder's parts
//! ([`gateway`]) over a simulated ingress: frames to a replica's ingress
//! are delayed, now and then for long (a stalled connection or relay),
//! keep their order on one connection, and are lost with the connection.
//! Gateways crash and restart (a new incarnation opens a new session; a
//! gateway crashes only once its session opened, see
//! `World::gateway_faults`), are cut off from the cluster past their
//! session's grace (the cluster expires the session and the gateway
//! renews it), and take sides in the cluster's partitions.
//!
//! Checked, for every seed: no client command is applied twice on any
//! replica (its client order id names it), also across restarts from
//! snapshots; every command a client heard applied is applied on every
//! replica exactly once, at the Raft index it heard; no command a client
//! heard refused, expired or unavailable is applied anywhere; a command
//! is applied only in the session it was sent in, and never after a
//! later session of its gateway opened (a restarted gateway's previous
//! incarnation's late copies are refused); replicas, and gateways'
//! mirrors, have the same state hash at the same index; once faults end
//! every waiting client is answered; and the run made progress.

mod checks;
mod gateway;
mod machine;
mod tests;
mod world;

use std::collections::{BTreeMap, BTreeSet};

use exchange_replication::sim::{Cluster, Machine, Rng};

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use gateway::{Conn, Gateway};
use machine::NodeMachine;

/// Log nanoseconds per tick (an election takes 10 to 20 ticks).
const TICK_NS: u64 = 10_000_000;
/// Chances per mille per tick, per gateway.
const SUBMIT: u64 = 250;
const GATEWAY_CRASH: u64 = 2;
const GATEWAY_RESTART: u64 = 30;
const ISOLATE: u64 = 1;
/// Chance per mille that a frame is held up for long.
const LATE_FRAME: u64 = 8;
/// Replicas' states are compared at every this many indices; mirrors'
/// at every `MIRROR_CHECK_EVERY`th (a multiple of it).
const DIGEST_EVERY: u64 = 16;
const MIRROR_CHECK_EVERY: u64 = 64;

/// What clients heard, and the sessions the gateways opened.
#[derive(Default)]
pub(super) struct Ledger {
    /// Command -> the session it was sent in.
    sent: BTreeMap<u64, u64>,
    /// Heard applied, at this Raft index.
    acked: BTreeMap<u64, u64>,
    /// Heard not applied (refused, expired, unavailable): never to be.
    refused: BTreeMap<u64, &'static str>,
    /// Sent by a gateway that crashed before the answer: either way.
    unknown: BTreeSet<u64>,
    /// Each gateway's sessions, in the order it opened them.
    sessions: BTreeMap<usize, Vec<u64>>,
    gateway_crashes: u64,
    renewals: u64,
    last_command: u64,
    last_session: u64,
}

impl Ledger {
    fn next_command(&mut self) -> u64 {
        self.last_command += 1;
        self.last_command
    }

    fn next_session(&mut self) -> u64 {
        self.last_session += 1;
        self.last_session
    }

    fn gateway_of(&self, session: u64) -> usize {
        self.sessions
            .iter()
            .find(|(_, list)| list.contains(&session))
            .map(|(gateway, _)| *gateway)
            .unwrap_or_else(|| panic!("session {session} is no gateway's"))
    }
}

/// A frame on its way to a replica's ingress.
struct Frame {
    at: u64,
    order: u64,
    node: u64,
    conn: u64,
    gateway: usize,
    entries: Vec<LogEntry>,
}

/// The gateways' connections to the replicas' ingress.
#[derive(Default)]
pub(super) struct Net {
    frames: Vec<Frame>,
    order: u64,
    last_conn: u64,
}

impl Net {
    fn connect(&mut self, gateway: usize, node: u64, now: u64) -> Conn {
        self.last_conn += 1;
        Conn {
            gateway,
            node,
            id: self.last_conn,
            last_at: now,
        }
    }

    /// What gateway `gateway` sent and the replicas have not taken yet
    /// arrives at `until` at the earliest: a replica's relay stalled
    /// while the gateway died, so that its frames arrive after its next
    /// incarnation's.
    fn hold_back(&mut self, gateway: usize, until: u64) {
        for frame in self.frames.iter_mut().filter(|f| f.gateway == gateway) {
            frame.at = frame.at.max(until);
        }
    }

    fn send(&mut self, now: u64, rng: &mut Rng, conn: &mut Conn, entries: Vec<LogEntry>) {
        let delay = if rng.chance(LATE_FRAME) {
            20 + rng.below(200)
        } else {
            1 + rng.below(4)
        };
        conn.last_at = conn.last_at.max(now + delay);
        self.order += 1;
        self.frames.push(Frame {
            at: conn.last_at,
            order: self.order,
            node: conn.node,
            conn: conn.id,
            gateway: conn.gateway,
            entries,
        });
    }
}

/// What a gateway's tick works with.
pub(super) struct Sim<'a> {
    cluster: &'a Cluster<NodeMachine>,
    rng: &'a mut Rng,
    net: &'a mut Net,
    ledger: &'a mut Ledger,
    now: u64,
}

impl Sim<'_> {
    /// The live replicas a gateway on `side` can reach.
    fn reachable(&self, side: u8, isolated_until: u64) -> Vec<u64> {
        reachable(self.cluster, side, isolated_until, self.now)
    }

    /// The most any of `reach` has applied.
    fn committed_reachable(&self, reach: &[u64]) -> u64 {
        reach
            .iter()
            .filter_map(|id| self.cluster.nodes.get(id)?.as_ref())
            .map(|live| live.machine.applied())
            .max()
            .unwrap_or(0)
    }

    /// A mirror's state is the replicas' at the same index.
    fn check_mirror(&self, index: u64, mirror: &CoreState) {
        if !index.is_multiple_of(MIRROR_CHECK_EVERY) {
            return;
        }
        if let Some(digest) = self.cluster.digests.get(&index) {
            let mine = mirror.state.state_hash().expect("the state hashes");
            assert_eq!(&mine, digest, "a mirror's state differs at index {index}");
        }
    }
}

fn reachable(cluster: &Cluster<NodeMachine>, side: u8, isolated_until: u64, now: u64) -> Vec<u64> {
    if now < isolated_until {
        return Vec::new();
    }
    cluster
        .nodes
        .iter()
        .filter(|(_, live)| live.is_some())
        .map(|(id, _)| *id)
        .filter(|id| cluster.side.is_empty() || cluster.side.get(id).copied().unwrap_or(0) == side)
        .collect()
}

/// What a run did, for the determinism check and the totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Report {
    pub(super) acked: usize,
    pub(super) refused: usize,
    pub(super) unknown: usize,
    pub(super) gateway_crashes: u64,
    pub(super) renewals: u64,
    /// Sequenced entries the replicas refused as stale, as duplicates.
    pub(super) stale: u64,
    pub(super) duplicates: u64,
    pub(super) last_index: u64,
    pub(super) trace_len: usize,
}

pub(super) struct World {
    cluster: Cluster<NodeMachine>,
    gateways: Vec<Gateway>,
    rng: Rng,
    net: Net,
    ledger: Ledger,
    partitioned: bool,
    /// Gateways crash before their session opened too (see
    /// `World::gateway_faults`).
    early_crashes: bool,
    _dir: tempfile::TempDir,
}
