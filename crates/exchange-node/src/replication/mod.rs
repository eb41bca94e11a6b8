//! The Raft stage of the pipeline: gateway → **Raft thread** → core thread.
//!
//! The Raft thread owns the [`ReplicaNode`]. It takes whatever commands have
//! queued (up to [`MAX_BATCH`](crate::limits::MAX_BATCH)), stamps them with the time, and proposes
//! them as **one** Raft entry whose payload is the batch
//! ([`encode_batch`]). `handle_ready` writes it, replicates it, and hands
//! back committed entries; the sync it owes (one per batch or more: group
//! commit) runs on the `log-sync` thread on a leader with followers
//! ([`log_sync`]), inline otherwise;
//! only those go to the core thread, in log order, with the waiting
//! gateways' reply channels attached when this node proposed them and they
//! committed at the index *and term* it proposed them at. A proposal that
//! lost its place (leadership changed) is dropped: its waiter hears
//! `unavailable` and retries with the same client order id, which the
//! core's idempotency makes safe.
//!
//! A single node is a cluster of one voter and takes the same path; it
//! elects itself at start. On a follower, writes are refused at once with
//! [`SubmitError::NotLeader`] (see docs/replication.md).
//!
//! Invariant: the core applies an entry only after Raft reported it
//! committed, so every command a client was answered for is on a majority
//! of disks.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exchange_replication::transport::{AddrError, ClusterKey, PeerAddr};
use exchange_replication::{
    ConfState, DiskAlarm, Membership, ReplicaConfig, ReplicaNode, StorageOptions,
};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::sync::oneshot;

use crate::entry::{EntryError, LogEntry};

mod alarm;
mod log_sync;
mod raft_loop;
#[cfg(test)]
mod tests;

pub use alarm::NOSPACE;
pub(crate) use raft_loop::RaftLoop;

/// Where a replica runs and how fast it notices a dead leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSettings {
    pub node_id: u64,
    /// Raft addresses of every voter of a new cluster, this node included;
    /// empty for a single node. Names are resolved at each connection.
    pub peers: BTreeMap<u64, PeerAddr>,
    pub tick: Duration,
    pub election_ticks: usize,
    pub heartbeat_ticks: usize,
    /// A node added to a running cluster: it starts with no voters and
    /// waits for the leader (admin `POST /admin/replication/voters`).
    pub join: bool,
    /// Write journal segments full of zeros ahead of need (see
    /// `exchange_journal::JournalOptions`).
    pub preallocate_journal: bool,
    /// The secret every member holds: the Raft port talks to holders
    /// only. Needed whenever the node talks to peers at all.
    pub key: Option<ClusterKey>,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        ClusterSettings {
            node_id: 1,
            join: false,
            peers: BTreeMap::new(),
            tick: Duration::from_millis(50),
            election_ticks: 8,
            heartbeat_ticks: 2,
            preallocate_journal: true,
            key: None,
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ClusterError {
    #[error("peer {0:?} is not ID=HOST:PORT")]
    BadPeer(String),
    #[error("peer {item:?}: {source}")]
    BadAddress { item: String, source: AddrError },
    #[error("peer id {0} appears twice")]
    DuplicatePeer(u64),
    #[error("node id 0 is reserved")]
    ZeroId,
    #[error("node {0} is not in the peer list, which must give its own Raft address")]
    SelfMissing(u64),
    #[error(
        "timings: heartbeat ticks ({heartbeat}) must be below election ticks \
             ({election}), tick > 0"
    )]
    Timings { heartbeat: usize, election: usize },
    #[error("a joining node needs the peer list (its own Raft address and the others')")]
    JoinAlone,
    #[error(
        "a node with peers needs the cluster key: set `[cluster] key_file` (or \
         --cluster-key-file) to a file of 64 hex digits, mode 0600, the same on every node \
         (e.g. `openssl rand -hex 32 > cluster_key; chmod 600 cluster_key`)"
    )]
    NoKey,
    #[error("cluster key: {0}")]
    Key(String),
}

/// Parses `1=HOST:PORT` items (the CLI's comma-separated list, split).
/// Only their syntax: a name is looked up at each connection, so one
/// that does not resolve yet is no error here.
pub fn parse_peers<S: AsRef<str>>(items: &[S]) -> Result<BTreeMap<u64, PeerAddr>, ClusterError> {
    let mut peers = BTreeMap::new();
    for item in items {
        let item = item.as_ref().trim();
        if item.is_empty() {
            continue;
        }
        let bad = || ClusterError::BadPeer(item.to_string());
        let (id, addr) = item.split_once('=').ok_or_else(bad)?;
        let id: u64 = id.trim().parse().map_err(|_| bad())?;
        if id == 0 {
            return Err(ClusterError::ZeroId);
        }
        let addr: PeerAddr = addr.parse().map_err(|source| ClusterError::BadAddress {
            item: item.to_string(),
            source,
        })?;
        if peers.insert(id, addr).is_some() {
            return Err(ClusterError::DuplicatePeer(id));
        }
    }
    Ok(peers)
}

impl ClusterSettings {
    pub fn validate(&self) -> Result<(), ClusterError> {
        if self.node_id == 0 {
            return Err(ClusterError::ZeroId);
        }
        if !self.peers.is_empty() && !self.peers.contains_key(&self.node_id) {
            return Err(ClusterError::SelfMissing(self.node_id));
        }
        if self.join && self.peers.is_empty() {
            return Err(ClusterError::JoinAlone);
        }
        if self.talks_to_peers() && self.key.is_none() {
            return Err(ClusterError::NoKey);
        }
        if self.heartbeat_ticks == 0
            || self.heartbeat_ticks >= self.election_ticks
            || self.tick.is_zero()
        {
            return Err(ClusterError::Timings {
                heartbeat: self.heartbeat_ticks,
                election: self.election_ticks,
            });
        }
        Ok(())
    }

    /// Whether this node runs the Raft transport: it has peers, or will.
    /// A single voter needs neither the transport nor a key.
    pub fn talks_to_peers(&self) -> bool {
        self.peers.len() > 1 || self.join
    }

    /// The voters of a new cluster; none for a joining node.
    pub fn voters(&self) -> Vec<u64> {
        if self.join {
            Vec::new()
        } else if self.peers.is_empty() {
            vec![self.node_id]
        } else {
            self.peers.keys().copied().collect()
        }
    }

    pub fn replica_config(&self) -> ReplicaConfig {
        let mut config = ReplicaConfig::new(self.node_id, self.voters());
        config.election_tick = self.election_ticks;
        config.heartbeat_tick = self.heartbeat_ticks;
        config.seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ self.node_id.rotate_left(32);
        let defaults = StorageOptions::default();
        config.storage = StorageOptions {
            preallocate_after: defaults
                .preallocate_after
                .filter(|_| self.preallocate_journal),
            ..defaults
        };
        config
    }

    /// The other voters' Raft addresses.
    pub fn others(&self) -> BTreeMap<u64, PeerAddr> {
        self.peers
            .iter()
            .filter(|(id, _)| **id != self.node_id)
            .map(|(id, addr)| (*id, addr.clone()))
            .collect()
    }
}

/// A node's replication state, readable from any thread (the admin status
/// route, `exchange cluster status`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationStatus {
    pub node_id: u64,
    /// `leader`, `follower`, `candidate` or `pre_candidate`.
    pub role: String,
    pub term: u64,
    pub leader_id: Option<u64>,
    /// Raft index known committed.
    pub commit_index: u64,
    /// Raft index the core has applied.
    pub applied_index: u64,
    /// Last Raft index in this node's log.
    pub last_index: u64,
    pub voters: Vec<u64>,
    /// On the leader: each voter's highest replicated index.
    pub matched: Vec<(u64, u64)>,
    /// On a gateway: the replica whose log stream it follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub following: Option<String>,
    /// Alarms up on this replica ([`NOSPACE`]); none when it is well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarms: Vec<String>,
}

/// Shared between the Raft thread (writer), the core thread (applied
/// index) and readers.
#[derive(Default)]
pub struct ClusterShared {
    status: RwLock<ReplicationStatus>,
    leader: AtomicBool,
    leader_id: AtomicU64,
    /// Wall-clock milliseconds when this node last became leader (0: never).
    leader_since_ms: AtomicU64,
    pub(crate) raft_applied: AtomicU64,
    /// Threads waiting in [`ClusterShared::wait_raft_applied`]: the core
    /// thread wakes them only when there are any.
    applied_waiters: AtomicUsize,
    applied_lock: Mutex<()>,
    applied_changed: Condvar,
    /// The Raft index the core must have applied for this node's state to
    /// hold everything the cluster committed (as far as this node knows);
    /// `u64::MAX` while it knows no leader, and on a new leader whose first
    /// entry has not committed.
    complete_at: AtomicU64,
    /// Whether the core has been [`caught_up`](Self::caught_up) once since
    /// the process started or this node last became leader.
    settled: AtomicBool,
    urls: RwLock<BTreeMap<u64, String>>,
    /// On a mirror: what it is (`gateway`, `md-gateway`; empty on a
    /// replica) and the leader its forwarder sends to (0: none).
    mirror_role: RwLock<&'static str>,
    pub(crate) forwarding_to: Arc<AtomicU64>,
    /// A replica's `nospace` alarm (a mirror writes nothing and has none).
    disk: OnceLock<Arc<DiskAlarm>>,
}

impl ClusterShared {
    /// Records the Raft index the core has applied, and wakes the threads
    /// waiting for it (the log stream's).
    pub(crate) fn set_raft_applied(&self, index: u64) {
        self.raft_applied.store(index, Ordering::SeqCst);
        if self.applied_waiters.load(Ordering::SeqCst) > 0 {
            // Taken so that a waiter between its check and its wait is
            // not missed.
            drop(self.applied_lock.lock());
            self.applied_changed.notify_all();
        }
    }

    /// The Raft index the core has applied.
    pub fn raft_applied(&self) -> u64 {
        self.raft_applied.load(Ordering::Acquire)
    }

    /// Waits until the core has applied past Raft index `above`, or for
    /// `timeout`; returns the index applied then.
    pub fn wait_raft_applied(&self, above: u64, timeout: Duration) -> u64 {
        let deadline = std::time::Instant::now() + timeout;
        self.applied_waiters.fetch_add(1, Ordering::SeqCst);
        let Ok(mut guard) = self.applied_lock.lock() else {
            self.applied_waiters.fetch_sub(1, Ordering::SeqCst);
            return self.raft_applied();
        };
        loop {
            let applied = self.raft_applied.load(Ordering::SeqCst);
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if applied > above || left.is_zero() {
                drop(guard);
                self.applied_waiters.fetch_sub(1, Ordering::SeqCst);
                return applied;
            }
            guard = match self.applied_changed.wait_timeout(guard, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Makes this a mirror's: not caught up until the stream first says
    /// how far its replica is.
    pub(crate) fn set_mirror_role(&self, role: &'static str) {
        if let Ok(mut known) = self.mirror_role.write() {
            *known = role;
        }
        // Its role shows before the stream first answers.
        if let Ok(mut status) = self.status.write() {
            status.role = role.to_string();
        }
        self.complete_at.store(u64::MAX, Ordering::Release);
    }

    /// What this process is in a tiered venue: `replica`, or a mirror's
    /// role (`gateway`, `md-gateway`).
    pub fn tier(&self) -> &'static str {
        match self.mirror_role.read().map_or("", |role| *role) {
            "" => "replica",
            role => role,
        }
    }

    /// On a mirror, after each item of the stream: `followed` is the
    /// replica it reads, `replica_applied` the Raft index that replica had
    /// applied when it last said. The mirror is caught up once its core
    /// has applied that much.
    pub(crate) fn publish_mirror(&self, followed: Option<&PeerAddr>, replica_applied: u64) {
        let leader = self.forwarding_to.load(Ordering::Acquire);
        self.leader_id.store(leader, Ordering::Release);
        self.complete_at.store(replica_applied, Ordering::Release);
        let role = self.mirror_role.read().map_or("mirror", |role| *role);
        if let Ok(mut status) = self.status.write() {
            *status = ReplicationStatus {
                role: role.to_string(),
                following: followed.map(|addr| addr.to_string()),
                leader_id: Some(leader).filter(|id| *id != 0),
                commit_index: replica_applied,
                last_index: replica_applied,
                ..ReplicationStatus::default()
            };
        }
    }

    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::Acquire)
    }

    /// When this node last became leader, in Unix milliseconds (0 if it
    /// never has). A signed write timestamped earlier may have been taken
    /// by the previous leader, whose replay guard this node does not share.
    pub fn leader_since_ms(&self) -> u64 {
        self.leader_since_ms.load(Ordering::Acquire)
    }

    pub fn leader_id(&self) -> Option<u64> {
        Some(self.leader_id.load(Ordering::Acquire)).filter(|id| *id != 0)
    }

    /// Whether the core has applied every entry this node knows to be
    /// committed. A node restarted from disk replays only up to the commit
    /// index it had saved, and learns the rest from the leader (or, as a
    /// new leader, once its first entry commits): until then its state may
    /// lack an account the cluster already created.
    pub fn caught_up(&self) -> bool {
        self.raft_applied.load(Ordering::Acquire) >= self.complete_at.load(Ordering::Acquire)
    }

    /// Whether a key missing from this node's state is unknown to the
    /// cluster (`true`) or may be one this node has not applied yet. Unlike
    /// [`caught_up`](Self::caught_up), which under load is false whenever a
    /// commit is ahead of the core, this stays true once the node has caught
    /// up, until it becomes leader again: a restarted node or a new leader
    /// says "not yet" until it holds what was committed before it, and a
    /// busy one does not say it for keys that never existed.
    pub fn settled(&self) -> bool {
        if self.settled.load(Ordering::Acquire) {
            return true;
        }
        let now = self.caught_up();
        if now {
            self.settled.store(true, Ordering::Release);
        }
        now
    }

    pub(crate) fn set_urls(&self, urls: BTreeMap<u64, String>) {
        if let Ok(mut known) = self.urls.write() {
            *known = urls;
        }
    }

    pub fn urls(&self) -> BTreeMap<u64, String> {
        self.urls.read().map(|u| u.clone()).unwrap_or_default()
    }

    pub fn leader_url(&self, id: u64) -> Option<String> {
        self.urls
            .read()
            .ok()
            .and_then(|urls| urls.get(&id).cloned())
    }

    pub fn status(&self) -> ReplicationStatus {
        let mut status = self.status.read().map(|s| s.clone()).unwrap_or_default();
        status.applied_index = self.raft_applied.load(Ordering::Acquire);
        status.alarms = self.alarms();
        status
    }

    pub(crate) fn publish(&self, node: &ReplicaNode) {
        let replica = node.status();
        let is_leader = node.is_leader();
        // A node that knows no leader cannot tell what the cluster
        // committed: a restarted one holds only the commit index it saved,
        // which may be behind. A new leader knows once its first entry
        // commits. Stored before `settled` is cleared, so that no reader
        // latches it again from the old mark.
        let complete_at =
            if node.leader().is_none() || (is_leader && !node.committed_in_current_term()) {
                u64::MAX
            } else {
                replica.commit_index
            };
        self.complete_at.store(complete_at, Ordering::Release);
        if is_leader && !self.leader.load(Ordering::Acquire) {
            self.settled.store(false, Ordering::Release);
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            self.leader_since_ms.store(now_ms, Ordering::Release);
        }
        self.leader.store(is_leader, Ordering::Release);
        self.leader_id
            .store(node.leader().unwrap_or(0), Ordering::Release);
        if let Ok(mut status) = self.status.write() {
            *status = ReplicationStatus {
                node_id: replica.id,
                role: replica.role.as_str().to_string(),
                term: replica.term,
                leader_id: replica.leader,
                commit_index: replica.commit_index,
                applied_index: 0,
                last_index: replica.last_index,
                voters: replica.voters,
                matched: replica.matched,
                following: None,
                alarms: Vec::new(),
            };
        }
    }
}

/// A Raft entry's position and the configuration in force after it: what
/// a snapshot taken right after applying it records.
#[derive(Clone, Debug)]
pub struct RaftMeta {
    pub index: u64,
    pub term: u64,
    pub conf: Arc<ConfState>,
}

/// A snapshot the writer thread put on disk, and how much of the log a
/// reader behind the core still needs: Raft compacts below the snapshot,
/// but never from `keep_log_from` on.
#[derive(Clone, Debug)]
pub struct SnapshotDone {
    pub meta: RaftMeta,
    pub keep_log_from: u64,
}

/// The payload of one Raft entry: `u32` count, then each command as a
/// `u32` length and the log entry's encoding ([`LogEntry::encode`]).
pub fn encode_batch(entries: &[LogEntry]) -> Result<Vec<u8>, EntryError> {
    let mut out = Vec::with_capacity(4 + entries.len() * 160);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for entry in entries {
        // Written in place, its length filled in after: no buffer of its
        // own for each command on the Raft thread (commands, and the
        // sequenced and guarded ones gateways forward, are nearly all).
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        entry.encode_into(&mut out)?;
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
    Ok(out)
}

#[derive(Debug, Error)]
pub enum BatchError {
    #[error("batch is truncated")]
    Truncated,
    #[error("batch has {0} bytes after its last command")]
    Trailing(usize),
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error("empty record payload")]
    Empty,
}

/// Decodes a journal record's payload as stored by the replica (one type
/// byte, then the entry's data) into its commands. Membership changes and
/// the empty entries new leaders append hold none. For readers of the log
/// outside the pipeline.
pub fn decode_entry_payload(payload: &[u8]) -> Result<Vec<LogEntry>, BatchError> {
    match payload.split_first() {
        None => Err(BatchError::Empty),
        Some((0, data)) if !data.is_empty() => decode_batch(data),
        Some(_) => Ok(Vec::new()),
    }
}

pub fn decode_batch(bytes: &[u8]) -> Result<Vec<LogEntry>, BatchError> {
    let word = |at: usize| -> Result<usize, BatchError> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or(BatchError::Truncated)
    };
    let count = word(0)?;
    let mut at = 4;
    // A count cannot claim more commands than there are bytes for.
    let mut entries = Vec::with_capacity(count.min(bytes.len() / 4));
    for _ in 0..count {
        let len = word(at)?;
        at += 4;
        let body = bytes.get(at..at + len).ok_or(BatchError::Truncated)?;
        entries.push(LogEntry::decode(body)?);
        at += len;
    }
    if at != bytes.len() {
        return Err(BatchError::Trailing(bytes.len() - at));
    }
    Ok(entries)
}

/// Why a membership change was not proposed.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MembershipError {
    #[error("this node is not the leader (leader: {leader:?})")]
    NotLeader { leader: Option<u64> },
    #[error("this node runs without a Raft transport (a single node started without --peers)")]
    NoTransport,
    #[error("adding a voter needs its Raft address")]
    AddressMissing,
    #[error("refused: {0}")]
    Refused(String),
    #[error("the node is shutting down")]
    Stopped,
    #[error("node {0} is not another voter of this cluster")]
    NotAVoter(u64),
    #[error("no other voter to hand leadership to")]
    NoOtherVoter,
}

/// Requests to the Raft thread from the gateways.
pub(crate) enum RaftControl {
    Membership {
        change: Membership,
        raft_addr: Option<PeerAddr>,
        reply: oneshot::Sender<Result<(), MembershipError>>,
    },
    /// Hands leadership to voter `to`, or to the most up-to-date other
    /// voter; answers with the voter it goes to.
    TransferLeader {
        to: Option<u64>,
        reply: oneshot::Sender<Result<u64, MembershipError>>,
    },
}

/// Raft addresses learned from committed membership changes, kept in the
/// data directory so a restarted node still reaches nodes added after its
/// `--peers` list was written. One `ID=HOST:PORT` per line, as given: a
/// name stays a name, looked up again at each connection.
pub fn load_learned_peers(path: &std::path::Path) -> BTreeMap<u64, PeerAddr> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            let lines: Vec<&str> = text.lines().collect();
            parse_peers(&lines).ok()
        })
        .unwrap_or_default()
}

pub(crate) fn save_learned_peers(
    path: &std::path::Path,
    peers: &BTreeMap<u64, PeerAddr>,
) -> std::io::Result<()> {
    let text: String = peers
        .iter()
        .map(|(id, addr)| format!("{id}={addr}\n"))
        .collect();
    let temp = path.with_extension("tmp");
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}
