//! The reporter as a process of its own (`exchange reporter`): it follows
//! the committed log from any replica's log stream, as a gateway's mirror
//! does, applies it to a state of its own with the core's deterministic
//! code, and writes every entry's events to the reporting store. The
//! replicas then run without a store (`[reporting] enabled = false`).
//!
//! Exactly once and complete: the store's position (the last command it
//! holds) is where it resumes. The reporter keeps snapshots of its own
//! state in its data directory, each at or before the store's position,
//! and asks the stream for the Raft entries after the newest of them (or
//! from the genesis); commands at or before the position are applied to
//! the state and not written again. When the replicas' log no longer
//! holds what it asks for, the stream offers their newest snapshot: it is
//! taken if the store already holds every command it covers, and
//! otherwise the commands in between are gone from the venue. The
//! reporter then stops writing and reports the gap ([`Fault`]) rather
//! than leave a hole in the record.

mod run;
mod state;

use exchange_replication::transport::PeerAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use exchange_node::metrics::Metrics;
use exchange_node::prometheus::{Exposition, Value};
use exchange_replication::transport::ClusterKey;
use exchange_reporting::{Store, StoreError, Target};
use thiserror::Error;
use tokio::sync::watch;

use super::{off_runtime, Inner, Stats};
use crate::worker::Worker;

/// How the reporter process runs.
#[derive(Clone)]
pub struct RemoteConfig {
    pub target: Target,
    /// The reporter's own directory: its state snapshots.
    pub data_dir: PathBuf,
    /// The replicas' log-stream addresses; any one will do.
    pub stream: Vec<PeerAddr>,
    pub key: ClusterKey,
    /// This process's id in the stream's handshakes (for their logs).
    pub process_id: u64,
    pub max_batch: usize,
    pub linger: Duration,
    /// Commands between two snapshots of the reporter's state: a restart
    /// asks the replicas for the log from the newest one, so their log
    /// must still hold it (see docs/reporting.md, "A reporter of its own").
    pub state_every: u64,
    /// Ready while the store is at most this many Raft entries behind the
    /// replica followed.
    pub ready_lag: u64,
}

#[derive(Debug, Error)]
pub enum StartError {
    #[error("reporting store: {0}")]
    Store(#[from] StoreError),
    #[error("the reporter's state snapshot {index}: {reason}")]
    LocalState { index: u64, reason: String },
    #[error("cannot start the reporter thread: {0}")]
    Thread(std::io::Error),
}

/// Why the reporter stopped writing: the store cannot be completed from
/// what the replicas still hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The last command the store holds.
    pub store_position: u64,
    /// The last command in the snapshot the stream offered instead of the
    /// log (0 when the fault is not a gap).
    pub snapshot_command: u64,
    /// That snapshot's Raft index.
    pub snapshot_raft_index: u64,
    pub message: String,
}

impl Fault {
    /// Commands the store lacks and the replicas' log no longer holds.
    pub fn missing(&self) -> u64 {
        self.snapshot_command.saturating_sub(self.store_position)
    }
}

/// What the reporter thread shares with its [`RemoteReporter`].
#[derive(Default)]
struct Status {
    following: Mutex<Option<PeerAddr>>,
    /// The Raft index the replica followed had applied, as of its last
    /// frame (0 before the first).
    replica_applied: AtomicU64,
    /// The Raft index through which the store holds every command.
    written_raft: AtomicU64,
    fault: Mutex<Option<Fault>>,
    stop: AtomicBool,
}

/// How far along the reporter is, for `/health`, `/ready` and `/metrics`.
#[derive(Clone, Debug)]
pub struct View {
    pub following: Option<PeerAddr>,
    /// The last command in the store.
    pub position: u64,
    pub written_raft: u64,
    pub replica_applied: u64,
    /// Raft entries the replica has applied that the store lacks.
    pub lag_entries: u64,
    /// Wall-clock time since the log time of the last entry written, while
    /// entries are missing; 0 when none is (or the store is empty).
    pub lag_seconds_ns: u64,
    pub fault: Option<Fault>,
    pub ready: bool,
}

/// The running reporter: its thread writes the store until [`stop`].
///
/// [`stop`]: RemoteReporter::stop
pub struct RemoteReporter {
    inner: Arc<Inner>,
    status: Arc<Status>,
    ready_lag: u64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl RemoteReporter {
    /// Opens the store (creating or migrating it), finds the state to
    /// resume from, and starts following the log.
    pub fn start(config: RemoteConfig) -> Result<RemoteReporter, StartError> {
        let opened = off_runtime(|| {
            let mut store = Store::open(&config.target)?;
            let dead_letters = store.dead_letter_count()?;
            let ts = store.position_ts()?.unwrap_or(0);
            Ok::<_, StoreError>((store, dead_letters, ts))
        });
        let (store, dead_letters, written_ts) = opened?;
        let position = store.position().log_index;
        let (state, term) = state::starting_state(&config.data_dir, position)?;
        tracing::info!(
            position,
            from_raft_index = state.raft_index + 1,
            "reporter: the store holds commands through {position}"
        );
        let inner = shared(&config.target, position, written_ts, dead_letters);
        let worker = Worker::writer(store, &config, inner.clone());
        let status = Arc::new(Status::default());
        let remote = run::Remote::new(worker, state, term, status.clone(), &config);
        let thread = std::thread::Builder::new()
            .name("reporter".into())
            .spawn(move || remote.run())
            .map_err(StartError::Thread)?;
        Ok(RemoteReporter {
            inner,
            status,
            ready_lag: config.ready_lag,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Where the reporter is now.
    pub fn view(&self) -> View {
        let status = &self.status;
        let following = status
            .following
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let fault = status
            .fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let written_raft = status.written_raft.load(Ordering::Acquire);
        let replica_applied = status.replica_applied.load(Ordering::Acquire);
        let lag_entries = replica_applied.saturating_sub(written_raft);
        let written_ts = self.inner.written_ts.load(Ordering::Relaxed);
        let lag_seconds_ns = if lag_entries == 0 || written_ts == 0 {
            0
        } else {
            now_ns().saturating_sub(written_ts)
        };
        let ready = fault.is_none()
            && following.is_some()
            && replica_applied > 0
            && lag_entries <= self.ready_lag;
        View {
            following,
            position: *self.inner.written.borrow(),
            written_raft,
            replica_applied,
            lag_entries,
            lag_seconds_ns,
            fault,
            ready,
        }
    }

    /// The `/metrics` page.
    pub fn metrics(&self) -> String {
        let view = self.view();
        let mut page = Exposition::new();
        self.inner.write_store_metrics(&mut page);
        page.gauge(
            "exchange_reporter_lag_entries",
            "Raft log entries the replica followed has applied that the reporting store lacks.",
            view.lag_entries,
        );
        page.gauge(
            "exchange_reporter_lag_seconds",
            "Wall-clock time since the log time of the last entry in the store, while entries \
             are missing (0 when none is, or while the store is empty).",
            Value::NanosAsSeconds(view.lag_seconds_ns),
        );
        page.gauge(
            "exchange_reporter_replica_applied_raft_index",
            "The Raft index the replica followed had applied, as of its last frame.",
            view.replica_applied,
        );
        page.gauge(
            "exchange_reporter_written_raft_index",
            "The Raft index through which the reporting store holds every command.",
            view.written_raft,
        );
        page.gauge(
            "exchange_reporter_following",
            "1 while a replica streams its log to the reporter.",
            u64::from(view.following.is_some()),
        );
        page.gauge(
            "exchange_reporter_ready",
            "1 while the reporter is caught up within its bound and not stopped by a gap.",
            u64::from(view.ready),
        );
        page.gauge(
            "exchange_reporter_gap_entries",
            "Commands the store lacks that the replicas' log no longer holds: the reporter \
             stopped writing (alarm when above 0).",
            view.fault.as_ref().map_or(0, Fault::missing),
        );
        page.gauge(
            "exchange_reporter_fault",
            "1 when the reporter stopped writing (a gap, or a state it cannot read).",
            u64::from(view.fault.is_some()),
        );
        page.finish()
    }

    /// Stops following, writes what was received, snapshots the state, and
    /// waits for the thread.
    pub fn stop(&self) {
        self.status.stop.store(true, Ordering::Release);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for RemoteReporter {
    fn drop(&mut self) {
        self.status.stop.store(true, Ordering::Release);
    }
}

/// What the writer shares with the HTTP side: the store's position and
/// the writing's counters.
fn shared(target: &Target, position: u64, written_ts: u64, dead_letters: u64) -> Arc<Inner> {
    let (written, _) = watch::channel(position);
    Arc::new(Inner {
        target: target.clone(),
        written,
        written_ts: AtomicU64::new(written_ts),
        stats: Stats {
            dead_letters: AtomicU64::new(dead_letters),
            ..Stats::default()
        },
        // The reporter has no core of its own to measure the lag by.
        core: Arc::new(Metrics::default()),
        readers: Mutex::new(Vec::new()),
        read_wait: Duration::ZERO,
        written_elsewhere: false,
    })
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests;
