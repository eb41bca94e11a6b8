//! The Raft thread's loop: see the module docs of [`crate::replication`].

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{select, Receiver};
use exchange_replication::transport::{Feedback, PeerAddr, Transport};
use exchange_replication::{
    Committed, CommittedKind, ConfState, Membership, Message, ReadyOutcome, ReplicaNode,
    SnapshotData, SyncJob,
};

use super::log_sync::{self, Synced};
use super::{
    decode_batch, encode_batch, load_learned_peers, save_learned_peers, ClusterShared,
    MembershipError, RaftControl, RaftMeta, SnapshotDone,
};
use crate::entry::LogEntry;
use crate::limits::MAX_BATCH;
use crate::metrics::Metrics;
use crate::parked;
use crate::pipeline::{CommittedBatch, CoreMsg, Reply, Submission};

/// The channels the loop waits on, taken once at the start.
struct Inputs {
    submit: Receiver<Submission>,
    inbox: Receiver<Message>,
    synced: Receiver<Synced>,
    feedback: Receiver<Feedback>,
    snapshots_done: Receiver<SnapshotDone>,
    control: Receiver<RaftControl>,
}

struct Pending {
    term: u64,
    entries: Vec<LogEntry>,
    replies: Vec<Option<Reply>>,
}

pub(crate) struct RaftLoop {
    pub node: ReplicaNode,
    pub transport: Option<Transport>,
    pub inbox: Receiver<Message>,
    pub submit: Receiver<Submission>,
    pub core: parked::Sender<CoreMsg>,
    pub snapshots_done: Receiver<SnapshotDone>,
    pub control: Receiver<RaftControl>,
    /// Where learned peer addresses are kept.
    pub learned_peers: std::path::PathBuf,
    pub shared: Arc<ClusterShared>,
    pub metrics: Arc<Metrics>,
    pub tick: Duration,
    pub last_ts: u64,
}

/// What the loop keeps between iterations.
struct Progress {
    /// This node's proposals by index, until they commit or are overtaken.
    pending: BTreeMap<u64, Pending>,
    /// The configuration after the last entry handed to the core.
    conf: Arc<ConfState>,
    snapshot_asked: Option<Instant>,
    /// The log-sync thread's queue of sync jobs.
    sync_jobs: parked::Sender<SyncJob>,
}

fn wall_clock_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl RaftLoop {
    /// Runs until every handle is gone (true) or on a failure (false).
    pub fn run(mut self) -> bool {
        let Some((inputs, mut progress)) = self.start() else {
            return false;
        };
        let mut batch: Vec<Submission> = Vec::with_capacity(MAX_BATCH);
        let mut next_tick = Instant::now() + self.tick;
        self.shared.publish(&self.node);
        loop {
            // Work Raft has ready (after an election, say) is done first.
            let wait = if self.node.has_ready() {
                Duration::ZERO
            } else {
                next_tick.saturating_duration_since(Instant::now())
            };
            if let ControlFlow::Break(clean) =
                self.wait_for_input(&inputs, &mut progress, &mut batch, wait)
            {
                return clean;
            }
            if !self.drain_inputs(&inputs) {
                return false;
            }
            let mut role_may_change = false;
            if Instant::now() >= next_tick {
                self.node.tick();
                next_tick = Instant::now() + self.tick;
                role_may_change = true;
            }
            while batch.len() < MAX_BATCH {
                match inputs.submit.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let proposed = !batch.is_empty();
            if proposed {
                self.propose(&mut batch, &mut progress.pending);
            }
            if !self.ready(&mut progress, proposed) {
                return false;
            }
            if role_may_change || proposed || self.shared.is_leader() != self.node.is_leader() {
                self.shared.publish(&self.node);
            }
        }
    }

    /// Takes the channels the loop waits on and starts the log's sync
    /// thread; None when that thread could not start.
    fn start(&mut self) -> Option<(Inputs, Progress)> {
        let submit = self.submit.clone();
        // A lone voter has no transport, so nothing sends to its inbox: a
        // disconnected channel is always ready, and selecting on it would
        // spin this thread at a full core.
        let inbox = match &self.transport {
            Some(_) => self.inbox.clone(),
            None => crossbeam_channel::never(),
        };
        let snapshots_done = self.snapshots_done.clone();
        let control = self.control.clone();
        let feedback = match &self.transport {
            Some(transport) => transport.feedback().clone(),
            None => crossbeam_channel::never(),
        };
        let (sync_jobs, synced) = match log_sync::start(self.metrics.clone()) {
            Ok(started) => started,
            Err(error) => {
                tracing::error!(%error, "could not start the log's sync thread");
                return None;
            }
        };
        let progress = Progress {
            pending: BTreeMap::new(),
            conf: Arc::new(self.node.conf_state().clone()),
            snapshot_asked: None,
            sync_jobs,
        };
        let inputs = Inputs {
            submit,
            inbox,
            synced,
            feedback,
            snapshots_done,
            control,
        };
        Some((inputs, progress))
    }

    /// Waits up to `wait` for one input and takes it; breaks with the
    /// loop's result when the node stops (true once every handle is gone).
    fn wait_for_input(
        &mut self,
        inputs: &Inputs,
        progress: &mut Progress,
        batch: &mut Vec<Submission>,
        wait: Duration,
    ) -> ControlFlow<bool> {
        select! {
            recv(inputs.submit) -> submission => match submission {
                Ok(submission) => batch.push(submission),
                Err(_) => {
                    self.hand_over(progress, &inputs.inbox, &inputs.feedback, &inputs.synced);
                    self.wait_for_syncs(&inputs.synced);
                    if let Err(error) = self.node.flush() {
                        tracing::warn!(%error, "could not record the commit index at shutdown");
                    }
                    return ControlFlow::Break(true);
                }
            },
            recv(inputs.inbox) -> message => {
                if let Ok(message) = message {
                    let _ = self.node.step(message);
                }
            }
            recv(inputs.synced) -> report => {
                if !self.synced(report.ok()) {
                    return ControlFlow::Break(false);
                }
            }
            recv(inputs.feedback) -> report => {
                if let Ok(report) = report {
                    self.feedback(report);
                }
            }
            recv(inputs.snapshots_done) -> done => {
                if let Ok(done) = done {
                    self.snapshot_written(&done);
                }
            }
            recv(inputs.control) -> request => {
                if let Ok(request) = request {
                    self.control(request);
                }
            }
            default(wait) => {}
        }
        ControlFlow::Continue(())
    }

    /// Takes whatever else arrived meanwhile from peers, the sync thread
    /// and the transport; false when the node stops.
    fn drain_inputs(&mut self, inputs: &Inputs) -> bool {
        while let Ok(message) = inputs.inbox.try_recv() {
            let _ = self.node.step(message);
        }
        while let Ok(report) = inputs.synced.try_recv() {
            if !self.synced(Some(report)) {
                return false;
            }
        }
        while let Ok(report) = inputs.feedback.try_recv() {
            self.feedback(report);
        }
        true
    }

    /// The core wrote a snapshot: the log may drop what it covers.
    fn snapshot_written(&mut self, done: &SnapshotDone) {
        let meta = &done.meta;
        if let Err(error) =
            self.node
                .snapshot_written(meta.index, meta.term, &meta.conf, done.keep_log_from)
        {
            tracing::warn!(%error, "log compaction failed; the log keeps its old segments");
        }
    }

    /// Takes the sync thread's report; false when the disk failed or the
    /// thread is gone, which stops the node.
    fn synced(&mut self, report: Option<Synced>) -> bool {
        match report {
            Some(Ok(number)) => {
                let transport = &self.transport;
                self.node.synced(number, &mut |message| {
                    if let Some(transport) = transport {
                        transport.send(message);
                    }
                });
                true
            }
            Some(Err(error)) => {
                tracing::error!(%error, "the log's sync failed; refusing further commands");
                false
            }
            None => {
                tracing::error!("the log's sync thread is gone; refusing further commands");
                false
            }
        }
    }

    /// At a clean stop: the syncs handed out are waited for, so that what
    /// this node wrote is on disk and its answers go out.
    fn wait_for_syncs(&mut self, synced: &Receiver<Synced>) {
        while self.node.unsynced_jobs() > 0 {
            match synced.recv_timeout(Duration::from_secs(5)) {
                Ok(report) => {
                    if !self.synced(Some(report)) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }

    /// Runs one `handle_ready` and hands its outcome on; false on a
    /// failure that stops the node.
    fn ready(&mut self, progress: &mut Progress, proposed: bool) -> bool {
        let transport = &self.transport;
        let mut handoff = Handoff {
            progress: &mut *progress,
            core: &self.core,
            shared: &self.shared,
            metrics: &self.metrics,
            last_ts: &mut self.last_ts,
            learned: Vec::new(),
            failed: false,
        };
        let result = self.node.handle_ready(
            &mut |message| {
                if let Some(transport) = transport {
                    transport.send(message);
                }
            },
            &mut |node, outcome| handoff.deliver(node, outcome),
        );
        let Handoff {
            learned, failed, ..
        } = handoff;
        let job = match result {
            Ok(job) => job,
            Err(error) => {
                tracing::error!(%error, "raft storage failed; refusing further commands");
                return false;
            }
        };
        if failed {
            return false;
        }
        if let Some(job) = job {
            if !self.sync(job, progress) {
                return false;
            }
        }
        if proposed {
            self.metrics.batches.fetch_add(1, Ordering::Relaxed);
        }
        for (id, context) in learned {
            self.learn_peer(id, &context);
        }
        if self.node.take_snapshot_request()
            && progress
                .snapshot_asked
                .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
        {
            // At most once a second: the core copies its whole state.
            progress.snapshot_asked = Some(Instant::now());
            let _ = self.core.try_send(CoreMsg::SnapshotNow);
        }
        true
    }

    /// Makes a ready's entries durable; false when that failed.
    ///
    /// A leader with followers hands the sync to the log-sync thread and
    /// goes on counting their answers and proposing while it runs. Anyone
    /// else syncs here: a follower's answer then goes out as soon as the
    /// sync returns, without waking another thread, and all it could do
    /// meanwhile is take the leader's next append, which the next sync
    /// covers anyway; a lone voter has no answers to count, and the hand-off
    /// would only add a wake-up to each commit. A job queued before a
    /// change of role or membership keeps the queue's order.
    fn sync(&mut self, job: SyncJob, progress: &Progress) -> bool {
        let has_followers = self.node.is_leader() && progress.conf.voters.len() > 1;
        if has_followers || self.node.unsynced_jobs() > 1 {
            if progress.sync_jobs.send(job).is_err() {
                tracing::error!("the log's sync thread is gone; refusing further commands");
                return false;
            }
            return true;
        }
        let started = Instant::now();
        let report = job.run().map(|()| job.number());
        if job.syncs_a_file() {
            self.metrics
                .record_fsync(started.elapsed().as_nanos() as u64);
        }
        self.synced(Some(report))
    }

    /// On a clean stop, a leader hands leadership to its most up-to-date
    /// follower first, so the cluster does not wait an election timeout.
    fn hand_over(
        &mut self,
        progress: &mut Progress,
        inbox: &Receiver<Message>,
        feedback: &Receiver<Feedback>,
        synced: &Receiver<Synced>,
    ) {
        if !self.node.is_leader() || self.transport.is_none() {
            return;
        }
        let Some(target) = self.most_up_to_date_other_voter() else {
            return;
        };
        tracing::info!(target, "handing leadership over before stopping");
        self.node.transfer_leader(target);
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut next_tick = Instant::now() + self.tick;
        while self.node.is_leader() && Instant::now() < deadline {
            if !self.ready(progress, false) {
                return;
            }
            select! {
                recv(inbox) -> message => {
                    if let Ok(message) = message {
                        let _ = self.node.step(message);
                    }
                }
                recv(synced) -> report => {
                    if !self.synced(report.ok()) {
                        return;
                    }
                }
                default(next_tick.saturating_duration_since(Instant::now())) => {}
            }
            while let Ok(report) = feedback.try_recv() {
                self.feedback(report);
            }
            if Instant::now() >= next_tick {
                self.node.tick();
                next_tick = Instant::now() + self.tick;
            }
        }
        // The vote for the new leader, and anything else owed, goes out.
        let _ = self.ready(progress, false);
    }

    /// The voter other than this one that holds the most of the log: the
    /// one that can lead soonest.
    fn most_up_to_date_other_voter(&self) -> Option<u64> {
        let status = self.node.status();
        status
            .matched
            .iter()
            .filter(|(id, _)| *id != status.id && status.voters.contains(id))
            .max_by_key(|(_, matched)| *matched)
            .map(|&(id, _)| id)
    }

    /// An operator's request to hand leadership over (a rolling upgrade's
    /// turn at the leader): raft-rs's leadership transfer, which has the
    /// target campaign at once once it has the whole log.
    fn transfer_leader(&mut self, to: Option<u64>) -> Result<u64, MembershipError> {
        if !self.node.is_leader() {
            return Err(MembershipError::NotLeader {
                leader: self.node.leader(),
            });
        }
        if self.transport.is_none() {
            return Err(MembershipError::NoTransport);
        }
        let target = match to {
            Some(id) => {
                let status = self.node.status();
                if id == status.id || !status.voters.contains(&id) {
                    return Err(MembershipError::NotAVoter(id));
                }
                id
            }
            None => self
                .most_up_to_date_other_voter()
                .ok_or(MembershipError::NoOtherVoter)?,
        };
        tracing::info!(target, "handing leadership over on request");
        self.node.transfer_leader(target);
        Ok(target)
    }

    fn control(&mut self, request: RaftControl) {
        match request {
            RaftControl::TransferLeader { to, reply } => {
                let _ = reply.send(self.transfer_leader(to));
            }
            RaftControl::Membership {
                change,
                raft_addr,
                reply,
            } => {
                let result = if !self.node.is_leader() {
                    Err(MembershipError::NotLeader {
                        leader: self.node.leader(),
                    })
                } else if self.transport.is_none() {
                    Err(MembershipError::NoTransport)
                } else if matches!(change, Membership::AddVoter(_)) && raft_addr.is_none() {
                    Err(MembershipError::AddressMissing)
                } else {
                    let context = raft_addr
                        .map(|addr| addr.to_string().into_bytes())
                        .unwrap_or_default();
                    self.node
                        .propose_membership(change, context)
                        .map_err(|e| MembershipError::Refused(e.to_string()))
                };
                let _ = reply.send(result);
            }
        }
    }

    /// Every replica applies an added voter's address (the proposer put it
    /// in the change's context) so that whoever leads can reach it.
    fn learn_peer(&mut self, id: u64, context: &[u8]) {
        let Some(addr) = std::str::from_utf8(context)
            .ok()
            .and_then(|text| text.parse::<PeerAddr>().ok())
        else {
            return;
        };
        if id == self.node.id() {
            return;
        }
        if let Some(transport) = self.transport.as_mut() {
            if let Err(error) = transport.add_peer(id, addr.clone()) {
                tracing::warn!(%error, id, "could not start talking to an added node");
            }
        }
        let mut learned = load_learned_peers(&self.learned_peers);
        learned.insert(id, addr);
        if let Err(error) = save_learned_peers(&self.learned_peers, &learned) {
            tracing::warn!(%error, "could not record an added node's address");
        }
    }

    fn feedback(&mut self, report: Feedback) {
        match report {
            Feedback::Unreachable(id) => self.node.report_unreachable(id),
            Feedback::Snapshot { to, delivered } => self.node.report_snapshot(to, delivered),
        }
    }

    fn propose(&mut self, batch: &mut Vec<Submission>, pending: &mut BTreeMap<u64, Pending>) {
        self.metrics
            .submit_queue_depth
            .store(self.submit.len() as u64, Ordering::Relaxed);
        if !self.node.is_leader() {
            // Dropping the replies answers `unavailable`: the gateway
            // checked leadership a moment ago and it changed since.
            batch.clear();
            return;
        }
        // The log's clock never runs backwards, whatever the wall clock does.
        self.last_ts = self.last_ts.max(wall_clock_ns());
        let mut entries = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        for mut submission in batch.drain(..) {
            submission.entry.set_ts(self.last_ts);
            entries.push(submission.entry);
            replies.push(submission.reply);
        }
        let data = match encode_batch(&entries) {
            Ok(data) => data,
            // Nothing of the batch reaches the log, so no replica differs;
            // dropping the replies answers its commands `unavailable`.
            Err(error) => {
                tracing::error!(
                    %error,
                    "a batch did not serialise; its commands are answered unavailable"
                );
                return;
            }
        };
        match self.node.propose(data) {
            Ok((index, term)) => {
                pending.insert(
                    index,
                    Pending {
                        term,
                        entries,
                        replies,
                    },
                );
            }
            Err(error) => {
                tracing::warn!(%error, "proposal refused; its commands are answered unavailable");
            }
        }
    }
}

/// Hands what Raft committed to the core, from inside `handle_ready`.
struct Handoff<'a> {
    progress: &'a mut Progress,
    core: &'a parked::Sender<CoreMsg>,
    shared: &'a ClusterShared,
    metrics: &'a Metrics,
    last_ts: &'a mut u64,
    /// Voters added, with the proposer's context (their Raft address):
    /// the transport learns them once `handle_ready` is done with it.
    learned: Vec<(u64, Vec<u8>)>,
    /// The core is gone or an entry did not decode: the node stops.
    failed: bool,
}

impl Handoff<'_> {
    fn deliver(&mut self, node: &ReplicaNode, outcome: ReadyOutcome) {
        if self.failed {
            return;
        }
        // Before the core answers anyone: a status read after an
        // acknowledgement must not show an older commit index.
        self.shared.publish(node);
        if let Some(snapshot) = outcome.snapshot {
            if !self.install(node, snapshot) {
                self.failed = true;
                return;
            }
        }
        if outcome.committed.is_empty() {
            return;
        }
        let Some(batches) = self.committed_batches(outcome.committed) else {
            self.failed = true;
            return;
        };
        if self.core.send(CoreMsg::Entries(batches)).is_err() {
            self.failed = true;
            return;
        }
        self.metrics
            .core_queue_depth
            .store(self.core.len() as u64, Ordering::Relaxed);
    }

    /// Hands a snapshot Raft received to the core; false when the core is
    /// gone.
    fn install(&mut self, node: &ReplicaNode, snapshot: SnapshotData) -> bool {
        let Progress { pending, conf, .. } = &mut *self.progress;
        pending.retain(|index, _| *index > snapshot.index);
        *conf = Arc::new(node.conf_state().clone());
        let meta = RaftMeta {
            index: snapshot.index,
            term: snapshot.term,
            conf: conf.clone(),
        };
        self.core
            .send(CoreMsg::Install {
                meta,
                data: snapshot.data,
            })
            .is_ok()
    }

    /// The committed entries as the core takes them, with this node's
    /// replies where it proposed them; None when one does not decode.
    fn committed_batches(&mut self, committed: Vec<Committed>) -> Option<Vec<CommittedBatch>> {
        let Progress { pending, conf, .. } = &mut *self.progress;
        let mut batches = Vec::with_capacity(committed.len());
        for committed in committed {
            let items = match committed.kind {
                CommittedKind::Normal(data) => {
                    let mine = pending
                        .remove(&committed.index)
                        .filter(|p| p.term == committed.term);
                    match mine {
                        Some(p) => p.entries.into_iter().zip(p.replies).collect(),
                        None if data.is_empty() => Vec::new(),
                        None => match decode_batch(&data) {
                            Ok(entries) => entries.into_iter().map(|e| (e, None)).collect(),
                            Err(error) => {
                                tracing::error!(
                                    index = committed.index,
                                    %error,
                                    "a committed log entry does not decode; stopping"
                                );
                                return None;
                            }
                        },
                    }
                }
                CommittedKind::ConfChange {
                    conf: new_conf,
                    change,
                    context,
                } => {
                    *conf = Arc::new(new_conf);
                    if let Some(Membership::AddVoter(id)) = change {
                        self.learned.push((id, context));
                    }
                    Vec::new()
                }
                CommittedKind::ConfChangeRefused(_) => Vec::new(),
            };
            // Anything proposed below an index that committed without it
            // is lost.
            *pending = pending.split_off(&(committed.index + 1));
            if let Some(last) = items.iter().map(|(e, _): &(LogEntry, _)| e.ts()).max() {
                *self.last_ts = (*self.last_ts).max(last);
            }
            batches.push(CommittedBatch {
                meta: RaftMeta {
                    index: committed.index,
                    term: committed.term,
                    conf: conf.clone(),
                },
                items,
            });
        }
        Some(batches)
    }
}
