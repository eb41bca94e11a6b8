//! [`ReplicaNode`]: one Raft replica, driven by its owner.
//!
//! The owner calls [`ReplicaNode::tick`] on a clock, [`ReplicaNode::step`]
//! with every message from a peer, [`ReplicaNode::propose`] with payloads,
//! and after any of these [`ReplicaNode::handle_ready`], which does the
//! disk work in the order Raft's safety needs:
//!
//! 1. messages that need nothing durable (a leader's appends, sent while
//!    its own fsync runs) go out at once;
//! 2. a snapshot from the leader is installed;
//! 3. entries already committed are handed to the state machine, before
//!    the disk work below, which they need not wait for;
//! 4. new entries are written, a changed term or vote synced;
//! 5. the entries' sync is returned to the owner as a [`SyncJob`], to run
//!    on whichever thread it likes (a leader overlaps it with counting its
//!    followers' answers), and only once it is reported with
//!    [`ReplicaNode::synced`] do the messages that acknowledge them
//!    (append responses, votes) go out, and does Raft count this
//!    replica's copy or let it apply the entries.
//!
//! Nothing here reads a clock or a random source of its own: the election
//! timeout is drawn from a generator seeded by the owner, so a whole
//! cluster can run deterministically in one thread.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use exchange_journal::LogSync;

use raft::eraftpb::{ConfChange, ConfChangeType, ConfState, Entry, EntryType, Message};
use raft::{RawNode, SnapshotStatus, StateRole};

use crate::alarm::DiskAlarm;
use crate::conf::{apply_simple, membership_of, parse_conf_change};
use crate::error::{ProposeError, ReplicationError};
use crate::storage::{DiskStorage, SnapshotData, StorageOptions, StorageRecovery};
use crate::types::{Committed, CommittedKind, Membership, ReadyOutcome, ReplicaStatus};

/// A replica's settings.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    pub id: u64,
    /// The voters of a brand-new cluster (this node among them). Empty for
    /// a node that joins a running cluster: it waits for the leader.
    pub voters: Vec<u64>,
    /// Ticks without a leader before an election (randomised up to twice).
    pub election_tick: usize,
    pub heartbeat_tick: usize,
    pub max_size_per_msg: u64,
    pub max_inflight_msgs: usize,
    /// Seeds the election-timeout randomisation.
    pub seed: u64,
    pub storage: StorageOptions,
    /// How long a write that failed for lack of space waits before it is
    /// tried again (see [`DiskAlarm`]).
    pub nospace_retry: Duration,
}

impl ReplicaConfig {
    pub fn new(id: u64, voters: Vec<u64>) -> ReplicaConfig {
        ReplicaConfig {
            id,
            voters,
            election_tick: 10,
            heartbeat_tick: 2,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            seed: id,
            storage: StorageOptions::default(),
            nospace_retry: Duration::from_millis(500),
        }
    }
}

pub struct ReplicaNode {
    pub(crate) raw: RawNode<DiskStorage>,
    /// Readies whose sync job is out, with the messages that wait for it.
    unsynced: VecDeque<(u64, Vec<Message>)>,
    /// The last index handed to the state machine (an entry or a
    /// snapshot's).
    handed_over: u64,
    rng: u64,
    election_tick: usize,
    seen: (u64, StateRole),
    pub(crate) alarm: Arc<DiskAlarm>,
    pub(crate) nospace_retry: Duration,
}

/// A ready's entries still to be made durable (see
/// [`ReplicaNode::handle_ready`]).
#[derive(Debug)]
#[must_use = "the acknowledgements wait until the job is run and reported"]
pub struct SyncJob {
    number: u64,
    log: Option<LogSync>,
}

impl SyncJob {
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Whether running it syncs a file (a ready with nothing new to write
    /// still queues behind the jobs before it).
    pub fn syncs_a_file(&self) -> bool {
        self.log.is_some()
    }

    pub fn run(&self) -> Result<(), ReplicationError> {
        if let Some(log) = &self.log {
            log.run()?;
        }
        Ok(())
    }
}

/// Runs jobs handed out in this order with one `fdatasync` per file they
/// wrote (a sync covers every earlier write to its file), and returns the
/// number to report (`None` for no jobs).
pub fn run_jobs(jobs: &[SyncJob]) -> Result<Option<u64>, ReplicationError> {
    let mut files: Vec<&LogSync> = Vec::new();
    for log in jobs.iter().filter_map(|job| job.log.as_ref()) {
        if !files.iter().any(|known| known.same_file(log)) {
            files.push(log);
        }
    }
    for log in files {
        log.run()?;
    }
    Ok(jobs.last().map(|job| job.number))
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl ReplicaNode {
    /// Opens the replica's storage and starts Raft on it. Returns the
    /// snapshot the state machine starts from; the committed entries after
    /// it are then read with [`ReplicaNode::read_committed`] from
    /// `snapshot index + 1` up to [`ReplicaNode::applied`].
    pub fn open(
        log_dir: &Path,
        snapshot_dir: &Path,
        config: &ReplicaConfig,
    ) -> Result<(ReplicaNode, Option<SnapshotData>, StorageRecovery), ReplicationError> {
        if config.id == 0 {
            return Err(ReplicationError::Config("node id 0 is reserved".into()));
        }
        let (mut storage, snapshot, recovery) = DiskStorage::open(
            log_dir,
            snapshot_dir,
            &config.voters,
            config.storage.clone(),
        )?;
        let conf = storage.conf_state().clone();
        let last = storage.last_index_now();
        let mut commit = storage.hard_state().commit;
        if conf.voters == [config.id] && conf.learners.is_empty() && conf.voters_outgoing.is_empty()
        {
            // A single voter is its own majority: everything it made durable
            // is committed.
            commit = last;
        }
        let mut conf_now = conf;
        let mut changed_at = None;
        for index in storage.conf_entries_after(storage.conf_index()) {
            if index > commit {
                break;
            }
            for entry in storage.read(index, index, 1)? {
                if let Ok(change) = parse_conf_change(&entry) {
                    apply_simple(&mut conf_now, &change);
                    changed_at = Some(index);
                }
            }
        }
        if let Some(index) = changed_at {
            storage.set_conf_state(conf_now, index)?;
        }
        let mut hard = storage.hard_state().clone();
        hard.commit = commit;
        storage.set_hard_state(&hard)?;
        let raft_config = raft::Config {
            id: config.id,
            election_tick: config.election_tick,
            heartbeat_tick: config.heartbeat_tick,
            applied: commit,
            max_size_per_msg: config.max_size_per_msg,
            max_inflight_msgs: config.max_inflight_msgs,
            check_quorum: true,
            pre_vote: true,
            ..raft::Config::default()
        };
        raft_config.validate()?;
        let raw = RawNode::new(&raft_config, storage, &logger())?;
        let mut node = ReplicaNode {
            unsynced: VecDeque::new(),
            handed_over: commit,
            seen: (raw.raft.term, raw.raft.state),
            raw,
            rng: config.seed ^ 0x9e37_79b9_7f4a_7c15,
            election_tick: config.election_tick,
            alarm: DiskAlarm::new(),
            nospace_retry: config.nospace_retry,
        };
        node.draw_timeout();
        Ok((node, snapshot, recovery))
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: enough to spread election timeouts.
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn draw_timeout(&mut self) {
        let spread = self.election_tick as u64;
        let timeout = self.election_tick + (self.next_random() % spread) as usize;
        self.raw.raft.set_randomized_election_timeout(timeout);
        self.seen = (self.raw.raft.term, self.raw.raft.state);
    }

    /// Raft redraws its election timeout from its own random source when
    /// the term or role changes; replace it with one from ours.
    fn after_call(&mut self) {
        if self.seen != (self.raw.raft.term, self.raw.raft.state) {
            self.draw_timeout();
        }
    }

    pub fn id(&self) -> u64 {
        self.raw.raft.id
    }

    /// The `nospace` alarm this node raises while it waits for space.
    pub fn disk_alarm(&self) -> &Arc<DiskAlarm> {
        &self.alarm
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    pub fn leader(&self) -> Option<u64> {
        Some(self.raw.raft.leader_id).filter(|id| *id != 0)
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn commit_index(&self) -> u64 {
        self.raw.raft.raft_log.committed
    }

    /// Whether the commit index includes an entry of the current term. A
    /// new leader learns what was committed before it only then: until
    /// its first entry commits, its commit index may be behind.
    pub fn committed_in_current_term(&self) -> bool {
        self.raw.raft.commit_to_current_term()
    }

    /// The oldest log index still held (entries before it are in the
    /// snapshot).
    pub fn first_index(&self) -> u64 {
        self.raw.store().first()
    }

    /// Index of the last entry handed to the state machine.
    pub fn applied(&self) -> u64 {
        self.raw.raft.raft_log.applied
    }

    pub fn status(&self) -> ReplicaStatus {
        let raft = &self.raw.raft;
        let matched = if raft.state == StateRole::Leader {
            let mut all: Vec<(u64, u64)> = raft
                .prs()
                .iter()
                .map(|(id, pr)| (*id, pr.matched))
                .collect();
            all.sort_unstable();
            all
        } else {
            Vec::new()
        };
        ReplicaStatus {
            id: raft.id,
            role: raft.state.into(),
            term: raft.term,
            leader: self.leader(),
            commit_index: raft.raft_log.committed,
            applied_index: raft.raft_log.applied,
            last_index: raft.raft_log.last_index(),
            voters: {
                let mut voters = self.raw.store().conf_state().voters.clone();
                voters.sort_unstable();
                voters
            },
            matched,
        }
    }

    /// Advances the logical clock one tick.
    pub fn tick(&mut self) {
        self.raw.tick();
        self.after_call();
    }

    /// Starts an election now (tests and leadership hand-over).
    pub fn campaign(&mut self) -> Result<(), ReplicationError> {
        self.raw.campaign()?;
        self.after_call();
        Ok(())
    }

    /// Feeds a message from a peer. A message Raft refuses (from an
    /// unknown peer, say) is dropped with the error.
    pub fn step(&mut self, message: Message) -> Result<(), ReplicationError> {
        let result = self.raw.step(message);
        self.after_call();
        result.map_err(ReplicationError::from)
    }

    /// Proposes a payload; returns the index and term it will have if it
    /// commits. An entry at that index with another term means it lost.
    pub fn propose(&mut self, data: Vec<u8>) -> Result<(u64, u64), ProposeError> {
        if self.raw.raft.state != StateRole::Leader {
            return Err(ProposeError::NotLeader {
                leader: self.leader(),
            });
        }
        if data.len() + 1 > exchange_journal::MAX_PAYLOAD_BYTES {
            return Err(ProposeError::TooLarge(data.len()));
        }
        let result = self.raw.propose(Vec::new(), data);
        self.after_call();
        result.map_err(|_| ProposeError::Dropped)?;
        Ok((self.raw.raft.raft_log.last_index(), self.raw.raft.term))
    }

    /// Proposes a membership change (leader only; one at a time), with a
    /// context every replica sees when it commits.
    pub fn propose_membership(
        &mut self,
        change: Membership,
        context: Vec<u8>,
    ) -> Result<(), ProposeError> {
        if self.raw.raft.state != StateRole::Leader {
            return Err(ProposeError::NotLeader {
                leader: self.leader(),
            });
        }
        let mut cc = ConfChange::default();
        match change {
            Membership::AddVoter(id) => {
                cc.set_change_type(ConfChangeType::AddNode);
                cc.node_id = id;
            }
            Membership::RemoveVoter(id) => {
                cc.set_change_type(ConfChangeType::RemoveNode);
                cc.node_id = id;
            }
        }
        cc.context = context.into();
        let result = self.raw.propose_conf_change(Vec::new(), cc);
        self.after_call();
        result.map_err(|_| ProposeError::Dropped)
    }

    pub fn transfer_leader(&mut self, to: u64) {
        self.raw.transfer_leader(to);
        self.after_call();
    }

    pub fn report_unreachable(&mut self, id: u64) {
        self.raw.report_unreachable(id);
    }

    /// Tells Raft whether a snapshot message reached `id`; a lost one must
    /// be reported or the leader waits for it forever.
    pub fn report_snapshot(&mut self, id: u64, delivered: bool) {
        let status = if delivered {
            SnapshotStatus::Finish
        } else {
            SnapshotStatus::Failure
        };
        self.raw.report_snapshot(id, status);
    }

    pub fn has_ready(&self) -> bool {
        self.raw.has_ready()
    }

    /// Sends, writes and hands over what Raft has ready (see the module
    /// docs for the order). `send` is called with each outgoing message,
    /// `apply` with what the state machine applies next.
    ///
    /// New entries are written but not synced: the returned job syncs
    /// them, on whichever thread the owner likes, and the messages that
    /// acknowledge them wait in this node until the job is reported done
    /// with [`ReplicaNode::synced`]. Meanwhile the node goes on stepping
    /// messages and making readies (a leader counts a follower's answer
    /// while its own sync runs). Jobs must be run and reported in the order
    /// they are handed out. `None`: nothing to sync, and nothing waits.
    pub fn handle_ready(
        &mut self,
        send: &mut dyn FnMut(Message),
        apply: &mut dyn FnMut(&ReplicaNode, ReadyOutcome),
    ) -> Result<Option<SyncJob>, ReplicationError> {
        if !self.raw.has_ready() {
            return Ok(None);
        }
        let mut ready = self.raw.ready();
        for message in ready.take_messages() {
            send(message);
        }
        let mut outcome = ReadyOutcome::default();
        if !ready.snapshot().is_empty() {
            let snapshot = ready.snapshot().clone();
            self.durably(send, |store| store.apply_snapshot(&snapshot))?;
            outcome.snapshot = Some(SnapshotData {
                index: snapshot.get_metadata().index,
                term: snapshot.get_metadata().term,
                data: snapshot.data.to_vec(),
            });
        }
        // Committed entries are durable here already: Raft hands over only
        // what this replica persisted.
        let committed = ready.take_committed_entries();
        self.hand_over(committed, &mut outcome, send)?;
        if let Some(last) = outcome
            .committed
            .last()
            .map(|c| c.index)
            .or(outcome.snapshot.as_ref().map(|s| s.index))
        {
            self.handed_over = self.handed_over.max(last);
        }
        let log = self.durably(send, |store| store.append_unsynced(ready.entries()))?;
        if let Some(hard) = ready.hs() {
            self.durably(send, |store| store.set_hard_state(hard))?;
        }
        let acknowledgements = ready.take_persisted_messages();
        let number = ready.number();
        self.raw.advance_append_async(ready);
        self.after_call();
        let done = log.is_none() && self.unsynced.is_empty();
        if done {
            self.raw.on_persist_ready(number);
        }
        self.advance_applied();
        if !outcome.is_empty() {
            apply(self, outcome);
        }
        if done {
            for message in acknowledgements {
                send(message);
            }
            return Ok(None);
        }
        self.unsynced.push_back((number, acknowledgements));
        Ok(Some(SyncJob { number, log }))
    }

    /// Takes the report that every job up to `number` has run: Raft counts
    /// those entries as this replica's, and the messages that acknowledge
    /// them go out through `send`. What this made ready (entries committed
    /// by this replica's vote) comes from the next `handle_ready`.
    pub fn synced(&mut self, number: u64, send: &mut dyn FnMut(Message)) {
        self.raw.on_persist_ready(number);
        self.advance_applied();
        while self.unsynced.front().is_some_and(|(n, _)| *n <= number) {
            if let Some((_, messages)) = self.unsynced.pop_front() {
                for message in messages {
                    send(message);
                }
            }
        }
    }

    /// Tells Raft how far the state machine has been handed entries, as
    /// far as they are durable here: Raft refuses an applied index past its
    /// persisted one, which a snapshot's ready is until its job is reported.
    fn advance_applied(&mut self) {
        let log = &self.raw.raft.raft_log;
        let to = self.handed_over.min(log.persisted).min(log.committed);
        if to > log.applied {
            self.raw.advance_apply_to(to);
        }
    }

    /// Jobs handed out and not yet reported.
    pub fn unsynced_jobs(&self) -> usize {
        self.unsynced.len()
    }

    /// [`ReplicaNode::handle_ready`] with its sync run on this thread, then
    /// once more for what the sync made ready: one call does it all, for
    /// owners with nothing to overlap the disk with (tests, simulations).
    pub fn handle_ready_now(
        &mut self,
        send: &mut dyn FnMut(Message),
        apply: &mut dyn FnMut(&ReplicaNode, ReadyOutcome),
    ) -> Result<(), ReplicationError> {
        for _ in 0..2 {
            if let Some(job) = self.handle_ready(send, apply)? {
                job.run()?;
                self.synced(job.number(), send);
            }
        }
        Ok(())
    }

    fn hand_over(
        &mut self,
        entries: Vec<Entry>,
        outcome: &mut ReadyOutcome,
        send: &mut dyn FnMut(Message),
    ) -> Result<(), ReplicationError> {
        for entry in entries {
            let kind = match entry.get_entry_type() {
                EntryType::EntryNormal => CommittedKind::Normal(entry.data.to_vec()),
                _ => match parse_conf_change(&entry) {
                    Ok(change) => match self.raw.apply_conf_change(&change) {
                        Ok(conf) => {
                            self.durably(send, |store| {
                                store.set_conf_state(conf.clone(), entry.index)
                            })?;
                            CommittedKind::ConfChange {
                                conf,
                                change: membership_of(&change),
                                context: change.context.to_vec(),
                            }
                        }
                        Err(error) => CommittedKind::ConfChangeRefused(error.to_string()),
                    },
                    Err(error) => CommittedKind::ConfChangeRefused(error),
                },
            };
            outcome.committed.push(Committed {
                index: entry.index,
                term: entry.term,
                kind,
            });
        }
        Ok(())
    }

    /// Committed entries from `from` on, at most `max` of them: replay
    /// after a start, and readers of the committed log.
    pub fn read_committed(
        &self,
        from: u64,
        max: usize,
    ) -> Result<Vec<Committed>, ReplicationError> {
        let to = self.commit_index();
        let from = from.max(self.raw.store().first());
        let entries = self.raw.store().read(from, to, max)?;
        Ok(entries
            .into_iter()
            .map(|entry| {
                let kind = match entry.get_entry_type() {
                    EntryType::EntryNormal => CommittedKind::Normal(entry.data.to_vec()),
                    _ => match parse_conf_change(&entry) {
                        Ok(change) => CommittedKind::ConfChange {
                            conf: self.raw.store().conf_state().clone(),
                            change: membership_of(&change),
                            context: change.context.to_vec(),
                        },
                        Err(error) => CommittedKind::ConfChangeRefused(error),
                    },
                };
                Committed {
                    index: entry.index,
                    term: entry.term,
                    kind,
                }
            })
            .collect())
    }

    /// Saves the state machine's snapshot at `index` (applied by it) and
    /// compacts the log. False when the index is too old to snapshot.
    pub fn save_snapshot(&mut self, index: u64, data: &[u8]) -> Result<bool, ReplicationError> {
        if index > self.applied() {
            return Ok(false);
        }
        self.raw.mut_store().save_snapshot(index, data)
    }

    /// Takes note of a snapshot written with [`crate::write_snapshot`] (by
    /// another thread) and compacts the log.
    ///
    /// `keep_log_from`: the log from this Raft index on stays whatever the
    /// snapshots cover (a reader behind the state machine replays it from
    /// an older state: from the genesis when it is 0); `u64::MAX` when
    /// nothing reads the log but Raft.
    pub fn snapshot_written(
        &mut self,
        index: u64,
        term: u64,
        conf: &ConfState,
        keep_log_from: u64,
    ) -> Result<(), ReplicationError> {
        self.raw
            .mut_store()
            .snapshot_written(index, term, conf, keep_log_from)
    }

    /// The configuration as of the last entry handed over.
    pub fn conf_state(&self) -> &ConfState {
        self.raw.store().conf_state()
    }

    /// True when a follower needs a snapshot newer than the newest on disk
    /// (one that includes it as a member): the state machine should save
    /// one soon. Clears the request.
    pub fn take_snapshot_request(&self) -> bool {
        self.raw.store().take_snapshot_request()
    }

    /// Index and term of the newest snapshot on disk.
    pub fn snapshot_index(&self) -> (u64, u64) {
        self.raw.store().snapshot_index()
    }

    /// Writes the commit index (at a clean stop).
    pub fn flush(&mut self) -> Result<(), ReplicationError> {
        self.raw.mut_store().flush()
    }
}
