//! The path every command takes: gateway → journal thread → core thread.
//!
//! The journal thread takes whatever commands have queued, stamps them with
//! the time, appends them to the log with one write and makes them durable
//! with one fsync (group commit: the batch is everything that arrived while
//! the previous fsync ran). Only then does it hand the batch to the core
//! thread, which applies each entry to the state, answers the waiting
//! gateway and publishes the events. The two threads overlap: the core
//! applies batch N while the journal syncs batch N+1.
//!
//! Every queue is bounded. A gateway that finds the submit queue full gets
//! `Overloaded` at once instead of waiting.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError, TrySendError};
use exchange_journal::snapshots::{self, Snapshot};
use exchange_journal::Journal;
use exchange_types::EventKind;
use thiserror::Error;
use tokio::sync::{broadcast, oneshot};

use crate::entry::LogEntry;
use crate::metrics::Metrics;
use crate::state::{Applied, ServerState, StateCopy};

/// Commands taken into one group commit at most.
pub const MAX_BATCH: usize = 4_096;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SubmitError {
    #[error("the exchange is overloaded; retry shortly")]
    Overloaded,
    #[error("the exchange is shutting down or its journal failed")]
    Stopped,
}

/// Where an entry's outcome goes, and since when its sender has waited
/// (the acknowledgement latency the status page reports).
struct Reply {
    tx: oneshot::Sender<Arc<Applied>>,
    since: Instant,
}

impl Reply {
    fn new(tx: oneshot::Sender<Arc<Applied>>) -> Option<Reply> {
        Some(Reply {
            tx,
            since: Instant::now(),
        })
    }
}
type Query = Box<dyn FnOnce(&ServerState) + Send>;

struct Submission {
    entry: LogEntry,
    reply: Option<Reply>,
}

enum CoreMsg {
    Batch(Vec<(u64, LogEntry, Option<Reply>)>),
    Query(Query),
}

/// Tunables of the pipeline.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    pub submit_queue: usize,
    pub core_queue: usize,
    pub events_buffer: usize,
    /// Take a snapshot after this many entries (0: never).
    pub snapshot_every: u64,
    pub snapshot_dir: std::path::PathBuf,
}

/// A cloneable way in to a running node.
#[derive(Clone)]
pub struct Handle {
    submit: Sender<Submission>,
    core: Sender<CoreMsg>,
    events: broadcast::Sender<Arc<Applied>>,
    pub metrics: Arc<Metrics>,
    failed: Arc<AtomicBool>,
}

/// Marks the pipeline failed if its thread unwinds or returns early, so
/// `/ready` stops claiming a node that can no longer sequence.
struct FailGuard {
    failed: Arc<AtomicBool>,
    clean: bool,
}

impl Drop for FailGuard {
    fn drop(&mut self) {
        if !self.clean || std::thread::panicking() {
            self.failed.store(true, Ordering::Release);
        }
    }
}

impl Handle {
    /// False once the journal or core thread has stopped on an error: the
    /// node can no longer accept commands.
    pub fn is_healthy(&self) -> bool {
        !self.failed.load(Ordering::Acquire)
    }

    /// Sequences an entry and waits until it is durable and applied.
    pub async fn submit(&self, entry: LogEntry) -> Result<Arc<Applied>, SubmitError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Submission {
            entry,
            reply: Reply::new(tx),
        })?;
        rx.await.map_err(|_| SubmitError::Stopped)
    }

    /// Queues an entry and returns at once with the receiver of its
    /// outcome. Entries queued by one caller are sequenced in the order of
    /// these calls, which is what keeps one connection's commands in order.
    pub fn enqueue_entry(
        &self,
        entry: LogEntry,
    ) -> Result<oneshot::Receiver<Arc<Applied>>, SubmitError> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(Submission {
            entry,
            reply: Reply::new(tx),
        })?;
        Ok(rx)
    }

    /// Sequences an entry without waiting for it (used for commands whose
    /// sender has gone, such as cancel-on-disconnect).
    pub fn submit_detached(&self, entry: LogEntry) -> Result<(), SubmitError> {
        self.enqueue(Submission { entry, reply: None })
    }

    fn enqueue(&self, submission: Submission) -> Result<(), SubmitError> {
        match self.submit.try_send(submission) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.metrics.overloaded.fetch_add(1, Ordering::Relaxed);
                Err(SubmitError::Overloaded)
            }
            Err(TrySendError::Disconnected(_)) => Err(SubmitError::Stopped),
        }
    }

    /// Runs `read` on the core thread, between batches, and returns what it
    /// returns: a consistent view that includes every acknowledged command.
    pub async fn query<R: Send + 'static>(
        &self,
        read: impl FnOnce(&ServerState) -> R + Send + 'static,
    ) -> Result<R, SubmitError> {
        let (tx, rx) = oneshot::channel();
        let job: Query = Box::new(move |state| {
            let _ = tx.send(read(state));
        });
        match self.core.try_send(CoreMsg::Query(job)) {
            Ok(()) => rx.await.map_err(|_| SubmitError::Stopped),
            Err(TrySendError::Full(_)) => {
                self.metrics.overloaded.fetch_add(1, Ordering::Relaxed);
                Err(SubmitError::Overloaded)
            }
            Err(TrySendError::Disconnected(_)) => Err(SubmitError::Stopped),
        }
    }

    /// Every applied entry with its events, in log order.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Applied>> {
        self.events.subscribe()
    }
}

/// The running threads; dropping every [`Handle`] stops them.
pub struct Pipeline {
    pub handle: Handle,
    threads: Vec<JoinHandle<()>>,
}

impl Pipeline {
    /// Starts the journal and core threads over a recovered state and an
    /// open journal positioned after it.
    pub fn start(
        state: ServerState,
        journal: Journal,
        config: PipelineConfig,
        metrics: Arc<Metrics>,
    ) -> Pipeline {
        let (submit_tx, submit_rx) = bounded(config.submit_queue);
        let (core_tx, core_rx) = bounded(config.core_queue);
        let (events, _) = broadcast::channel(config.events_buffer);
        let failed = Arc::new(AtomicBool::new(false));
        let handle = Handle {
            submit: submit_tx,
            core: core_tx.clone(),
            events: events.clone(),
            metrics: metrics.clone(),
            failed: failed.clone(),
        };
        let journal_failed = failed.clone();
        let last_ts = state.engine_now();
        let journal_metrics = metrics.clone();
        // Log entries below this index are covered by a durable snapshot and
        // may be deleted; set by the snapshot writer, read by the journal.
        let purge_below = Arc::new(AtomicU64::new(0));
        let snapshots = SnapshotWriter::start(
            config.snapshot_dir.clone(),
            purge_below.clone(),
            metrics.clone(),
        );
        let journal_thread = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || {
                let mut guard = FailGuard {
                    failed: journal_failed,
                    clean: false,
                };
                guard.clean = journal_loop(
                    journal,
                    submit_rx,
                    core_tx,
                    last_ts,
                    journal_metrics,
                    purge_below,
                );
            })
            .expect("spawn journal thread");
        let core_thread = std::thread::Builder::new()
            .name("core".into())
            .spawn(move || {
                let mut guard = FailGuard {
                    failed,
                    clean: false,
                };
                core_loop(state, core_rx, events, config, metrics, snapshots);
                guard.clean = true;
            })
            .expect("spawn core thread");
        Pipeline {
            handle,
            threads: vec![journal_thread, core_thread],
        }
    }

    /// Waits for the threads after every handle is gone.
    pub fn join(self) {
        drop(self.handle);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

fn wall_clock_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Returns true on a clean stop (every handle dropped), false on a failure.
fn journal_loop(
    mut journal: Journal,
    submit: Receiver<Submission>,
    core: Sender<CoreMsg>,
    mut last_ts: u64,
    metrics: Arc<Metrics>,
    purge_below: Arc<AtomicU64>,
) -> bool {
    let mut purged_below = 0u64;
    let mut batch: Vec<Submission> = Vec::with_capacity(MAX_BATCH);
    let mut payloads: Vec<Vec<u8>> = Vec::with_capacity(MAX_BATCH);
    while let Ok(first) = submit.recv() {
        let covered = purge_below.load(Ordering::Acquire);
        if covered > purged_below {
            purged_below = covered;
            if let Err(error) = journal.purge_before(covered) {
                tracing::warn!(%error, "journal compaction failed; the log keeps its old segments");
            }
        }
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match submit.try_recv() {
                Ok(next) => batch.push(next),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        metrics
            .submit_queue_depth
            .store(submit.len() as u64, Ordering::Relaxed);
        // The log's clock never runs backwards, whatever the wall clock does.
        last_ts = last_ts.max(wall_clock_ns());
        payloads.clear();
        for submission in &mut batch {
            submission.entry.set_ts(last_ts);
            payloads.push(submission.entry.encode());
        }
        let first_index = match journal.append(0, &payloads) {
            Ok(index) => index,
            Err(error) => {
                tracing::error!(%error, "journal append failed; refusing further commands");
                return false;
            }
        };
        let started = Instant::now();
        if let Err(error) = journal.sync() {
            tracing::error!(%error, "journal fsync failed; refusing further commands");
            return false;
        }
        metrics.record_fsync(started.elapsed().as_nanos() as u64);
        metrics
            .durable_index
            .store(first_index + payloads.len() as u64 - 1, Ordering::Relaxed);
        metrics.batches.fetch_add(1, Ordering::Relaxed);
        let items = batch
            .drain(..)
            .enumerate()
            .map(|(offset, s)| (first_index + offset as u64, s.entry, s.reply))
            .collect();
        if core.send(CoreMsg::Batch(items)).is_err() {
            return false;
        }
        metrics
            .core_queue_depth
            .store(core.len() as u64, Ordering::Relaxed);
    }
    true
}

fn core_loop(
    mut state: ServerState,
    core: Receiver<CoreMsg>,
    events: broadcast::Sender<Arc<Applied>>,
    config: PipelineConfig,
    metrics: Arc<Metrics>,
    snapshots: SnapshotWriter,
) {
    let mut since_snapshot = 0u64;
    let mut done = Vec::with_capacity(PUBLISH_EVERY);
    while let Ok(message) = core.recv() {
        match message {
            CoreMsg::Query(read) => read(&state),
            CoreMsg::Batch(items) => {
                for (index, entry, reply) in items {
                    let applied = Arc::new(state.apply(index, &entry));
                    metrics.commands.fetch_add(1, Ordering::Relaxed);
                    metrics
                        .events
                        .fetch_add(applied.events.len() as u64, Ordering::Relaxed);
                    for event in &applied.events {
                        if let EventKind::Rejected { reason, .. } = &event.kind {
                            metrics.record_reject(reason.as_str());
                        }
                    }
                    done.push((applied, reply));
                    if done.len() == PUBLISH_EVERY {
                        publish(&mut done, &events, &metrics);
                    }
                    since_snapshot += 1;
                }
                publish(&mut done, &events, &metrics);
                metrics
                    .applied_index
                    .store(state.applied_index, Ordering::Relaxed);
                if config.snapshot_every > 0 && since_snapshot >= config.snapshot_every {
                    since_snapshot = 0;
                    // Copying the state is the only part on the core thread;
                    // serialising and the disk work happen on the writer's.
                    snapshots.offer(&state);
                }
            }
        }
    }
    // Leave a snapshot behind on a clean shutdown so the next start is fast.
    if since_snapshot > 0 && config.snapshot_every > 0 {
        snapshots.finish(&state);
    } else {
        snapshots.finish_without();
    }
}

/// Applied entries answered and published together. Waking a gateway
/// thread is a system call when it sleeps; after each entry it would
/// sleep again in between, so the answers of a few entries go together.
const PUBLISH_EVERY: usize = 64;

/// Answers the waiting gateways and publishes the entries, in log order.
fn publish(
    done: &mut Vec<(Arc<Applied>, Option<Reply>)>,
    events: &broadcast::Sender<Arc<Applied>>,
    metrics: &Metrics,
) {
    if done.is_empty() {
        return;
    }
    let now = Instant::now();
    let mut acks = [0u64; PUBLISH_EVERY];
    let (mut answered, commands) = (0, done.len() as u64);
    for (applied, reply) in done.drain(..) {
        if let Some(reply) = reply {
            let _ = reply.tx.send(applied.clone());
            if let Some(slot) = acks.get_mut(answered) {
                *slot = now.saturating_duration_since(reply.since).as_nanos() as u64;
                answered += 1;
            }
        }
        // No subscriber is fine; a lagging one loses messages and is told
        // so by its receiver.
        let _ = events.send(applied);
    }
    metrics
        .window
        .record_commands(now, commands, &acks[..answered]);
}

/// Writes snapshots on its own thread so the core never waits on a disk,
/// then lets the journal drop what the older of the two kept snapshots
/// covers (the newer one might yet prove unreadable).
struct SnapshotWriter {
    queue: Option<Sender<(u64, StateCopy)>>,
    thread: Option<JoinHandle<()>>,
}

impl SnapshotWriter {
    fn start(
        dir: std::path::PathBuf,
        purge_below: Arc<AtomicU64>,
        metrics: Arc<Metrics>,
    ) -> SnapshotWriter {
        let (tx, rx) = bounded::<(u64, StateCopy)>(1);
        let thread = std::thread::Builder::new()
            .name("snapshots".into())
            .spawn(move || {
                while let Ok((index, copy)) = rx.recv() {
                    let snapshot = Snapshot { index, term: 0, state: copy.into_bytes() };
                    match snapshots::save(&dir, &snapshot, usize::MAX) {
                        Ok(path) => {
                            metrics.snapshots.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(index, path = %path.display(), "snapshot written");
                            // A reader behind (the reporting service) keeps
                            // the snapshot and the log it replays from.
                            let floor = metrics.retain_from.load(Ordering::Acquire);
                            match snapshots::prune(&dir, 2, floor) {
                                Ok(kept) if kept.len() >= 2 && kept[0] <= floor => {
                                    purge_below.store(kept[0], Ordering::Release);
                                }
                                Ok(_) => {}
                                Err(error) => tracing::warn!(%error, "removing old snapshots failed"),
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, "snapshot failed; the journal still holds everything")
                        }
                    }
                }
            })
            .expect("spawn snapshot thread");
        SnapshotWriter {
            queue: Some(tx),
            thread: Some(thread),
        }
    }

    /// Hands a copy of the state to the writer, unless the previous one
    /// is still waiting for it (the next one will do).
    fn offer(&self, state: &ServerState) {
        if let Some(queue) = self.queue.as_ref().filter(|queue| queue.is_empty()) {
            let _ = queue.try_send((state.applied_index, state.copy()));
        }
    }

    /// Writes a last snapshot and waits for the writer to finish.
    fn finish(mut self, state: &ServerState) {
        if let Some(queue) = self.queue.take() {
            let _ = queue.send((state.applied_index, state.copy()));
        }
        self.finish_without();
    }

    fn finish_without(mut self) {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
