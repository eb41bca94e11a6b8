//! The reporting service: writes every committed entry to the reporting
//! store (`exchange-reporting`), off the hot path, and serves the history
//! reads of the REST API from it.
//!
//! Invariants:
//! - The core never waits on it: the reporter is a separate thread fed by
//!   the core's event broadcast, which drops messages for a receiver that
//!   falls behind rather than block. What it missed (or what was applied
//!   before it started) is re-derived from the committed Raft log
//!   ([`catch_up::committed_entries`]), so the store gets every entry.
//! - Exactly once: each batch of entries is one transaction that also
//!   moves the store's position; entries at or before it are skipped.
//! - The log and a snapshot at or before the store's position are kept
//!   (`Metrics::retain_from_raft`, the position as a Raft index) so
//!   catching up stays possible.
//! - Read-your-writes: a history read first learns the index the core has
//!   applied (a core query, so it includes every acknowledged command) and
//!   waits until the store has reached it ([`Reporting::wait_for`]).

pub mod catch_up;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use exchange_reporting::{EntryRecord, Store, StoreError, Target};
use std::fmt::Write;
use thiserror::Error;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};

use crate::metrics::Metrics;
use crate::sequencer::Handle;
use crate::state::Applied;
use catch_up::{committed_entries, CatchUpError};

#[derive(Debug, Error)]
pub enum ReadError {
    #[error("the reporting store has not caught up with the exchange yet")]
    Behind,
    #[error("reporting store: {0}")]
    Store(#[from] StoreError),
    #[error("the reporting read was cancelled")]
    Cancelled,
}

#[derive(Default)]
struct Stats {
    entries: AtomicU64,
    events: AtomicU64,
    batches: AtomicU64,
    caught_up: AtomicU64,
    errors: AtomicU64,
    commit_ns_total: AtomicU64,
}

struct Inner {
    target: Target,
    /// The store's position (last log index written), as committed.
    written: watch::Sender<u64>,
    stats: Stats,
    core: Arc<Metrics>,
    /// Idle read connections.
    readers: Mutex<Vec<Store>>,
    read_wait: Duration,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The PostgreSQL client blocks on its own runtime when closed,
        // which must not happen on an async worker thread.
        let idle = self
            .readers
            .get_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        if !idle.is_empty() {
            let _ = std::thread::Builder::new()
                .name("reporting-close".into())
                .spawn(move || drop(idle));
        }
    }
}

/// Runs `work` on a plain thread: the synchronous PostgreSQL client runs
/// its own runtime and must not be driven from inside tokio's.
fn off_runtime<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| match scope.spawn(work).join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// A cloneable way to the reporting service (for the HTTP handlers).
#[derive(Clone)]
pub struct Reporting {
    inner: Arc<Inner>,
}

/// The reporter thread; it stops once the pipeline has stopped and it has
/// written everything it published.
pub struct Reporter {
    thread: Option<JoinHandle<()>>,
}

impl Reporter {
    pub fn join(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How the reporter runs.
#[derive(Clone, Debug)]
pub struct ReporterConfig {
    pub target: Target,
    pub data_dir: PathBuf,
    pub max_batch: usize,
    /// How long a batch waits for more entries after its first.
    pub linger: Duration,
    pub read_wait: Duration,
    /// The reporter thread runs under the idle scheduling policy.
    pub background: bool,
    /// Recovery cut a damaged tail off this node's journal. A store ahead
    /// of the journal then holds entries the exchange has lost (they were
    /// durable, then damaged on disk), not another exchange's record.
    pub journal_tail_dropped: bool,
    /// This node is one replica of several. Recovery replays only the
    /// entries it knows committed, and a replica learns the rest of the
    /// commit index from the leader after it starts, so its store may
    /// legitimately hold entries its state has yet to reach again; they
    /// are skipped as they arrive. (A single voter's whole durable log is
    /// committed: its store can only be ahead as described above.)
    pub replica_of_many: bool,
}

/// A SQLite store that recorded entries its journal has since lost is
/// moved aside, kept as evidence, so a new one can be rebuilt from the
/// journal: rows of orders and trades that no longer exist must not be
/// served. A PostgreSQL store is left for the operator (an error).
fn set_aside(target: &Target, position: u64, journal: u64) -> Result<(), StoreError> {
    let Target::Sqlite(path) = target else {
        return Err(StoreError::Ahead {
            store: position,
            journal,
        });
    };
    let aside = path.with_extension(format!("sqlite.ahead-of-journal-{position}"));
    // SQLite's write-ahead log and index go with the database.
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", path.display()));
        if from.exists() {
            let to = PathBuf::from(format!("{}{suffix}", aside.display()));
            std::fs::rename(&from, &to)
                .map_err(|e| StoreError::Schema(format!("moving {} aside: {e}", from.display())))?;
        }
    }
    eprintln!(
        "reporting: WARNING: the store was at log entry {position} but the journal now ends at \
         {journal} (its damaged tail was dropped); the store was moved to {} and is rebuilt \
         from the journal",
        aside.display()
    );
    Ok(())
}

impl Reporting {
    /// Opens the store (creating or migrating it) and starts the reporter
    /// on `handle`'s events. Fails at once if the store cannot be opened.
    pub fn start(
        handle: &Handle,
        config: ReporterConfig,
    ) -> Result<(Reporting, Reporter), StoreError> {
        // Subscribe before anything else: every entry applied from now on
        // arrives live; everything before is re-derived.
        let events = handle.subscribe();
        let journal = handle.metrics.applied_index.load(Ordering::Acquire);
        let store = off_runtime(|| {
            let store = Store::open(&config.target)?;
            let position = store.position().log_index;
            // Every entry the store holds was durable before it was
            // applied, so it can only be ahead of this node's log if the
            // log lost a damaged tail since.
            if position > journal && config.journal_tail_dropped {
                drop(store);
                set_aside(&config.target, position, journal)?;
                return Store::open(&config.target);
            }
            if position > journal && !config.replica_of_many {
                return Err(StoreError::Ahead {
                    store: position,
                    journal,
                });
            }
            Ok(store)
        })?;
        let position = store.position().log_index;
        handle
            .metrics
            .retain_from
            .store(position, Ordering::Release);
        // Which snapshot replays to `position` is learnt from the first
        // entries written; until then every snapshot is kept.
        handle.metrics.retain_from_raft.store(0, Ordering::Release);
        let (written, _) = watch::channel(position);
        let inner = Arc::new(Inner {
            target: config.target.clone(),
            written,
            stats: Stats::default(),
            core: handle.metrics.clone(),
            readers: Mutex::new(Vec::new()),
            read_wait: config.read_wait,
        });
        let worker = Worker {
            store,
            target: config.target,
            data_dir: config.data_dir,
            max_batch: config.max_batch.max(1),
            linger: config.linger,
            inner: inner.clone(),
            replica_of_many: config.replica_of_many,
        };
        let background = config.background;
        let thread = std::thread::Builder::new()
            .name("reporter".into())
            .spawn(move || {
                if background {
                    crate::threads::background();
                }
                worker.run(events)
            })
            .map_err(|e| StoreError::Schema(format!("cannot start the reporter thread: {e}")))?;
        Ok((
            Reporting { inner },
            Reporter {
                thread: Some(thread),
            },
        ))
    }

    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// The last log index the store holds.
    pub fn written(&self) -> u64 {
        *self.inner.written.borrow()
    }

    /// Waits (up to the configured bound) until the store holds entry
    /// `index`; false if it did not get there in time.
    pub async fn wait_for(&self, index: u64) -> bool {
        self.wait_until(index, self.inner.read_wait).await
    }

    /// Waits up to `limit` until the store holds entry `index`.
    pub async fn wait_until(&self, index: u64, limit: Duration) -> bool {
        let mut written = self.inner.written.subscribe();
        let reached = tokio::time::timeout(limit, written.wait_for(|w| *w >= index))
            .await
            .is_ok_and(|r| r.is_ok());
        reached
    }

    /// Waits for the core's applied index as of now, then runs `read` on a
    /// store connection on a blocking thread.
    pub async fn read_after<R: Send + 'static>(
        &self,
        applied: u64,
        read: impl FnOnce(&mut Store) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, ReadError> {
        if !self.wait_for(applied).await {
            return Err(ReadError::Behind);
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().ok().and_then(|mut idle| idle.pop());
            let mut store = match pooled {
                Some(store) => store,
                None => Store::open(&inner.target)?,
            };
            let result = read(&mut store);
            // A failed connection is dropped, not pooled.
            if result.is_ok() {
                if let Ok(mut idle) = inner.readers.lock() {
                    if idle.len() < 8 {
                        idle.push(store);
                    }
                }
            }
            result.map_err(ReadError::from)
        })
        .await
        .map_err(|_| ReadError::Cancelled)?
    }

    /// Prometheus text for `/metrics`.
    pub fn render_metrics(&self) -> String {
        let stats = &self.inner.stats;
        let written = self.written();
        let applied = self.inner.core.applied_index.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        metric(
            "exchange_reporting_position",
            "gauge",
            "Last log index written to the reporting store.",
            written,
        );
        metric(
            "exchange_reporting_lag_entries",
            "gauge",
            "Log entries applied by the core but not yet in the reporting store.",
            applied.saturating_sub(written),
        );
        metric(
            "exchange_reporting_entries_total",
            "counter",
            "Log entries written to the reporting store by this process.",
            stats.entries.load(Ordering::Relaxed),
        );
        metric(
            "exchange_reporting_events_total",
            "counter",
            "Events written to the reporting store by this process.",
            stats.events.load(Ordering::Relaxed),
        );
        metric(
            "exchange_reporting_batches_total",
            "counter",
            "Reporting store transactions committed.",
            stats.batches.load(Ordering::Relaxed),
        );
        metric(
            "exchange_reporting_caught_up_entries_total",
            "counter",
            "Entries re-derived from the journal rather than received live.",
            stats.caught_up.load(Ordering::Relaxed),
        );
        metric(
            "exchange_reporting_errors_total",
            "counter",
            "Failed reporting store writes or catch-ups (each retried).",
            stats.errors.load(Ordering::Relaxed),
        );
        metric(
            "exchange_reporting_commit_nanoseconds_total",
            "counter",
            "Time spent writing and committing reporting batches.",
            stats.commit_ns_total.load(Ordering::Relaxed),
        );
        out
    }
}

/// How long the reporter waits for a live entry before it checks whether
/// the core has applied entries it never received.
const IDLE: Duration = Duration::from_millis(50);

/// The longest sleep of a batch's linger between looks at the channel (a
/// default linger is one sleep); at most this much more than a full batch
/// waits for its commit.
const LINGER_SLICE: Duration = Duration::from_millis(10);

struct Worker {
    store: Store,
    target: Target,
    data_dir: PathBuf,
    max_batch: usize,
    linger: Duration,
    inner: Arc<Inner>,
    /// See [`ReporterConfig::replica_of_many`].
    replica_of_many: bool,
}

impl Worker {
    fn run(mut self, mut events: broadcast::Receiver<Arc<Applied>>) {
        // Only to wait for the next entry with a timeout.
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        else {
            tracing::error!(
                "the reporter cannot start its timer; the reporting store stays behind"
            );
            return;
        };
        let mut batch: Vec<Arc<Applied>> = Vec::with_capacity(self.max_batch);
        loop {
            let next = runtime.block_on(async { tokio::time::timeout(IDLE, events.recv()).await });
            match next {
                Ok(Ok(first)) => batch.push(first),
                Ok(Err(RecvError::Lagged(missed))) => {
                    tracing::warn!(
                        missed,
                        "reporter fell behind the core; catching up from the journal"
                    );
                    continue;
                }
                Ok(Err(RecvError::Closed)) => break,
                // Idle: whatever the core applied and we did not receive
                // (applied before we subscribed, or lost to a lag with
                // nothing after it) comes from the journal.
                Err(_) => {
                    let applied = self.inner.core.applied_index.load(Ordering::Acquire);
                    if applied > self.store.position().log_index {
                        self.retry(&events, |worker| worker.catch_up(applied));
                    }
                    continue;
                }
            }
            // Take what else is waiting, and what arrives within the
            // linger: one transaction for all of it. A transaction writes
            // every page it touches, so a few large ones cost far less than
            // many small ones. The linger is slept through in short slices
            // rather than waiting on the channel: a receiver waiting on it
            // is woken by every publication (the core publishes entries in
            // bursts), a system call on the core thread each time, and the
            // entries are only written at the end anyway. The slices bound
            // how much can queue meanwhile, far below the channel's room,
            // however long the linger.
            let deadline = Instant::now() + self.linger;
            let mut closed = false;
            while batch.len() < self.max_batch {
                let next = match events.try_recv() {
                    Ok(next) => Ok(next),
                    Err(TryRecvError::Empty) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::sleep(left.min(LINGER_SLICE));
                        continue;
                    }
                    Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
                    Err(TryRecvError::Closed) => Err(RecvError::Closed),
                };
                match next {
                    Ok(next) => batch.push(next),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(
                            missed,
                            "reporter fell behind the core; catching up from the journal"
                        );
                    }
                    Err(RecvError::Closed) => {
                        closed = true;
                        break;
                    }
                }
            }
            self.retry(&events, |worker| worker.write_live(&batch));
            batch.clear();
            if closed {
                break;
            }
        }
    }

    /// Runs `step` until it succeeds, reconnecting in between with a
    /// growing pause: a store that is down delays the record, never loses
    /// it, and never slows the core. Once the node is stopping it gives up
    /// after a few tries: the next start catches up from the journal.
    fn retry(
        &mut self,
        events: &broadcast::Receiver<Arc<Applied>>,
        mut step: impl FnMut(&mut Worker) -> Result<(), CatchUpError>,
    ) {
        let mut pause = Duration::from_millis(50);
        let mut failed_while_stopping = 0;
        loop {
            match step(self) {
                Ok(()) => return,
                Err(error) => {
                    self.inner.stats.errors.fetch_add(1, Ordering::Relaxed);
                    if events.is_closed() {
                        failed_while_stopping += 1;
                        if failed_while_stopping >= 3 {
                            tracing::error!(%error, "reporting store unavailable at shutdown; the next start catches up from the journal");
                            return;
                        }
                    }
                    tracing::error!(%error, retry_in_ms = pause.as_millis() as u64, "reporting store write failed");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(5));
                    match Store::open(&self.target) {
                        Ok(store) => self.store = store,
                        Err(error) => tracing::error!(%error, "reporting store reconnect failed"),
                    }
                }
            }
        }
    }

    /// Writes a batch received live, first re-deriving any entries between
    /// the store's position and it.
    fn write_live(&mut self, batch: &[Arc<Applied>]) -> Result<(), CatchUpError> {
        let Some(first) = batch.first() else {
            return Ok(());
        };
        if first.index > self.store.position().log_index + 1 {
            self.catch_up(first.index - 1)?;
        }
        self.write(batch.iter().map(|a| &**a), false)
    }

    /// Brings the store up to `through` from the journal.
    fn catch_up(&mut self, through: u64) -> Result<(), CatchUpError> {
        let after = self.store.position().log_index;
        if through <= after {
            return Ok(());
        }
        let started = Instant::now();
        let mut pending: Vec<Applied> = Vec::with_capacity(self.max_batch.min(1_024));
        let data_dir = self.data_dir.clone();
        let mut read = |worker: &mut Worker, after: u64| {
            committed_entries(&data_dir, after, through, |applied| {
                pending.push(applied);
                if pending.len() >= worker.max_batch.min(1_024) {
                    worker.write(pending.iter(), true)?;
                    pending.clear();
                }
                Ok(())
            })
        };
        match read(self, after) {
            // A replica that joined by snapshot never had what came
            // before it: its store's history starts there.
            Err(CatchUpError::BeforeOldestState {
                command, event_seq, ..
            }) if self.replica_of_many => {
                tracing::warn!(
                    from = after + 1,
                    through = command,
                    "entries before this replica's first snapshot are not on it; its reporting \
                     store starts after them"
                );
                let skipped = self.store.skip_to(command, event_seq)?;
                self.inner.written.send_replace(skipped.log_index);
                read(self, skipped.log_index)?;
            }
            other => other?,
        }
        self.write(pending.iter(), true)?;
        tracing::info!(
            from = after + 1,
            through,
            ms = started.elapsed().as_millis() as u64,
            "reporting store caught up from the journal"
        );
        Ok(())
    }

    /// Writes one batch; `from_journal` counts it as caught up.
    fn write<'a>(
        &mut self,
        entries: impl Iterator<Item = &'a Applied>,
        from_journal: bool,
    ) -> Result<(), CatchUpError> {
        let mut raft_index = None;
        let records: Vec<EntryRecord<'_>> = entries
            .inspect(|a| raft_index = Some(a.raft_index))
            .map(|a| EntryRecord {
                index: a.index,
                ts: a.ts,
                command: a.command,
                account: a.actor,
                events: &a.events,
            })
            .collect();
        if records.is_empty() {
            return Ok(());
        }
        let before = self.store.position().log_index;
        let started = Instant::now();
        let position = self.store.write(&records)?;
        let stats = &self.inner.stats;
        stats
            .commit_ns_total
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if position.log_index > before {
            let fresh = records.iter().filter(|r| r.index > before);
            let events: usize = fresh.map(|r| r.events.len()).sum();
            stats
                .entries
                .fetch_add(position.log_index - before, Ordering::Relaxed);
            stats.events.fetch_add(events as u64, Ordering::Relaxed);
            if from_journal {
                stats
                    .caught_up
                    .fetch_add(position.log_index - before, Ordering::Relaxed);
            }
            stats.batches.fetch_add(1, Ordering::Relaxed);
            self.inner
                .core
                .retain_from
                .store(position.log_index, Ordering::Release);
            // A snapshot before the last entry's Raft entry replays to
            // it. Index 1 is the virtual genesis snapshot, never on disk:
            // a reader that far back needs the whole log (floor 0).
            let base = raft_index.map(|index| index.saturating_sub(1));
            if let Some(base) = base.filter(|&base| base > 1) {
                self.inner
                    .core
                    .retain_from_raft
                    .store(base, Ordering::Release);
            }
            self.inner.written.send_replace(position.log_index);
        }
        Ok(())
    }
}
