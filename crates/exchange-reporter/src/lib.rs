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
mod reader;
pub mod remote;
#[cfg(test)]
mod tests;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use exchange_reporting::{Store, StoreError, Target};
use thiserror::Error;
use tokio::sync::watch;

use exchange_node::metrics::Metrics;
use exchange_node::prometheus::{Exposition, Value};
use exchange_node::Handle;
use worker::Worker;

/// An applied entry as the reporting store takes it.
pub fn entry_record(applied: &exchange_node::Applied) -> exchange_reporting::EntryRecord<'_> {
    exchange_reporting::EntryRecord {
        index: applied.index,
        ts: applied.ts,
        command: applied.command,
        account: applied.actor,
        events: &applied.events,
    }
}

/// How far the reporting store is behind the core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lag {
    /// Log entries applied by the core and not yet in the store.
    pub entries: u64,
    /// Log time between the last entry the core applied and the last one
    /// in the store: the difference of their timestamps, in nanoseconds.
    /// 0 when the store holds every applied entry, and while either time is
    /// unknown (the core has applied nothing since this process started,
    /// or the store is empty). Log time, not wall-clock time: an idle
    /// exchange does not age a backlog, and a backlog of entries applied
    /// within one millisecond is one millisecond behind however long the
    /// store takes to write them.
    pub seconds_ns: u64,
}

impl Lag {
    pub fn seconds(&self) -> f64 {
        self.seconds_ns as f64 / 1e9
    }
}

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
    /// Commands replayed into a scratch state to re-derive entries (those
    /// before the gap included).
    replayed: AtomicU64,
    errors: AtomicU64,
    /// Entries the core's broadcast dropped before this receiver read them
    /// (each re-derived from the journal).
    missed: AtomicU64,
    /// Entries the store could not write, skipped (over the store's life).
    dead_letters: AtomicU64,
    commit_ns_total: AtomicU64,
}

impl Stats {
    /// The counters on `/metrics`: name, help, value.
    fn counters(&self) -> [(&'static str, &'static str, &AtomicU64); 7] {
        [
            (
                "exchange_reporting_entries_total",
                "Log entries written to the reporting store by this process.",
                &self.entries,
            ),
            (
                "exchange_reporting_events_total",
                "Events written to the reporting store by this process.",
                &self.events,
            ),
            (
                "exchange_reporting_batches_total",
                "Reporting store transactions committed.",
                &self.batches,
            ),
            (
                "exchange_reporting_caught_up_entries_total",
                "Entries re-derived from the journal rather than received live.",
                &self.caught_up,
            ),
            (
                "exchange_reporting_replayed_commands_total",
                "Commands replayed from a snapshot or a kept scratch state to re-derive entries \
                 (those before the missing ones included).",
                &self.replayed,
            ),
            (
                "exchange_reporting_missed_entries_total",
                "Entries the core's event broadcast dropped before the reporter read them \
                 (it lagged), each re-derived from the journal.",
                &self.missed,
            ),
            (
                "exchange_reporting_errors_total",
                "Failed reporting store writes or catch-ups (each retried).",
                &self.errors,
            ),
        ]
    }
}

struct Inner {
    target: Target,
    /// The store's position (last log index written), as committed.
    written: watch::Sender<u64>,
    /// The timestamp (ns, log time) of the entry at that position; 0 while
    /// unknown (an empty store, before its first write).
    written_ts: AtomicU64,
    stats: Stats,
    core: Arc<Metrics>,
    /// Idle read connections.
    readers: Mutex<Vec<Store>>,
    read_wait: Duration,
    /// Another process writes the store: reads never create or migrate it.
    written_elsewhere: bool,
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
    /// The reporter thread runs under the idle scheduling policy...
    pub background: bool,
    /// ...on these CPUs.
    pub cpus: exchange_node::threads::CpuPlacement,
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
        // Off the runtime, as the opening (PostgreSQL).
        let (store, dead_letters, written_ts) = off_runtime(move || {
            let mut store = store;
            let count = store.dead_letter_count()?;
            let ts = store.position_ts()?;
            Ok::<_, StoreError>((store, count, ts.unwrap_or(0)))
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
            written_ts: AtomicU64::new(written_ts),
            stats: Stats {
                dead_letters: AtomicU64::new(dead_letters),
                ..Stats::default()
            },
            core: handle.metrics.clone(),
            readers: Mutex::new(Vec::new()),
            read_wait: config.read_wait,
            written_elsewhere: false,
        });
        let worker = Worker {
            store,
            target: config.target,
            data_dir: config.data_dir,
            max_batch: config.max_batch.max(1),
            linger: config.linger,
            inner: inner.clone(),
            replica_of_many: config.replica_of_many,
            background: config.background.then_some(config.cpus),
            scratch: None,
            lag_warned: None,
            missed_unreported: 0,
            position_raft: None,
        };
        let thread = std::thread::Builder::new()
            .name("reporter".into())
            .spawn(move || worker.run(events, journal))
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

    /// Log entries the store could not write and skipped (its
    /// `dead_letters` table): an alarm for the operator.
    pub fn dead_letters(&self) -> u64 {
        self.inner.stats.dead_letters.load(Ordering::Relaxed)
    }

    /// The last log index the store holds.
    pub fn written(&self) -> u64 {
        *self.inner.written.borrow()
    }

    /// How far the store is behind the core: see [`Lag`].
    pub fn lag(&self) -> Lag {
        let applied = self.inner.core.applied_index.load(Ordering::Relaxed);
        let entries = applied.saturating_sub(self.written());
        let seconds_ns = if entries == 0 {
            0
        } else {
            let applied_ts = self.inner.core.applied_ts.load(Ordering::Relaxed);
            let written_ts = self.inner.written_ts.load(Ordering::Relaxed);
            // Either time unknown: nothing to measure by (not "forever").
            if applied_ts == 0 || written_ts == 0 {
                0
            } else {
                applied_ts.saturating_sub(written_ts)
            }
        };
        Lag {
            entries,
            seconds_ns,
        }
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
                None if inner.written_elsewhere => Store::open_existing(&inner.target)?,
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

    /// Adds the reporting service's families to a `/metrics` page.
    pub fn write_metrics(&self, page: &mut Exposition) {
        let lag = self.lag();
        self.inner.write_store_metrics(page);
        page.gauge(
            "exchange_reporting_lag_entries",
            "Log entries applied by the core but not yet in the reporting store.",
            lag.entries,
        );
        page.gauge(
            "exchange_reporting_lag_seconds",
            "Log time between the last entry applied by the core and the last entry in the \
             reporting store (difference of their timestamps; 0 when none is missing or while \
             either time is unknown).",
            Value::NanosAsSeconds(lag.seconds_ns),
        );
    }
}

impl Inner {
    /// The store's families on a `/metrics` page: its position and this
    /// process's writing.
    fn write_store_metrics(&self, page: &mut Exposition) {
        let stats = &self.stats;
        let get = |v: &AtomicU64| v.load(Ordering::Relaxed);
        page.gauge(
            "exchange_reporting_position",
            "Last log index written to the reporting store.",
            *self.written.borrow(),
        );
        for (name, help, value) in stats.counters() {
            page.counter(name, help, get(value));
        }
        page.gauge(
            "exchange_reporting_dead_letters",
            "Log entries the reporting store could not write, skipped and kept in its \
             dead_letters table (alarm when above 0).",
            get(&stats.dead_letters),
        );
        page.counter(
            "exchange_reporting_commit_seconds_total",
            "Time spent writing and committing reporting batches.",
            Value::NanosAsSeconds(get(&stats.commit_ns_total)),
        );
    }
}
