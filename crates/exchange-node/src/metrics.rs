//! Counters and histograms the node exposes at `/metrics` (Prometheus text
//! format). Updated by the sequencer threads with relaxed atomics or short
//! critical sections; read by the HTTP layer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use exchange_replication::transport::AuthCounters;
use hdrhistogram::Histogram;

use crate::metrics_window::RecentWindow;
use crate::prometheus::{Exposition, Kind};

pub struct Metrics {
    pub commands: AtomicU64,
    pub batches: AtomicU64,
    pub events: AtomicU64,
    pub overloaded: AtomicU64,
    pub submit_queue_depth: AtomicU64,
    pub core_queue_depth: AtomicU64,
    pub applied_index: AtomicU64,
    /// The timestamp (ns since the Unix epoch, log time) of the last entry
    /// the core applied since this process started; 0 before the first.
    pub applied_ts: AtomicU64,
    pub snapshots: AtomicU64,
    /// Named reads sent to the core thread (`crate::reads`).
    pub reads: AtomicU64,
    /// The position, as a command index, of a reader behind the core (the
    /// reporting service); `u64::MAX` when there is no such reader.
    /// Retention goes by [`Metrics::retain_from_raft`], since snapshots and
    /// log segments are named by Raft index.
    pub retain_from: AtomicU64,
    /// That reader's floor as a Raft index: the newest snapshot at or below
    /// it, and the log after it, are kept. 0 while the reader has not told
    /// it yet (everything is kept); `u64::MAX` when there is no such reader.
    pub retain_from_raft: AtomicU64,
    fsync_ns: Mutex<Histogram<u64>>,
    /// The last minute, second by second, for `/admin/status`.
    pub window: RecentWindow,
    rejects: Mutex<BTreeMap<&'static str, u64>>,
    /// The Raft transport's refusals, once a transport runs (not on a
    /// single node).
    pub raft_transport: OnceLock<Arc<AuthCounters>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            commands: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            events: AtomicU64::new(0),
            overloaded: AtomicU64::new(0),
            submit_queue_depth: AtomicU64::new(0),
            core_queue_depth: AtomicU64::new(0),
            applied_index: AtomicU64::new(0),
            applied_ts: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            retain_from: AtomicU64::new(u64::MAX),
            retain_from_raft: AtomicU64::new(u64::MAX),
            fsync_ns: Mutex::new(
                Histogram::new_with_bounds(1_000, 60_000_000_000, 3).expect("static bounds"),
            ),
            window: RecentWindow::default(),
            rejects: Mutex::new(BTreeMap::new()),
            raft_transport: OnceLock::new(),
        }
    }
}

/// Upper bounds (seconds) of the fsync latency buckets.
const FSYNC_BUCKETS: [f64; 10] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1.0,
];

impl Metrics {
    pub fn record_fsync(&self, nanos: u64) {
        if let Ok(mut h) = self.fsync_ns.lock() {
            h.saturating_record(nanos.max(1_000));
        }
        self.window.record_fsync(std::time::Instant::now(), nanos);
    }

    pub fn record_reject(&self, reason: &'static str) {
        if let Ok(mut r) = self.rejects.lock() {
            *r.entry(reason).or_default() += 1;
        }
    }

    /// `(p50, p99, max)` fsync latency in nanoseconds.
    pub fn fsync_percentiles(&self) -> (u64, u64, u64) {
        self.fsync_ns
            .lock()
            .map(|h| (h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max()))
            .unwrap_or_default()
    }

    pub fn rejects(&self) -> BTreeMap<&'static str, u64> {
        self.rejects.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Adds the node's families to a `/metrics` page.
    pub fn write_metrics(&self, page: &mut Exposition) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let counters = [
            (
                "exchange_commands_total",
                "Log entries applied.",
                &self.commands,
            ),
            (
                "exchange_batches_total",
                "Group commits (one fsync each).",
                &self.batches,
            ),
            (
                "exchange_events_total",
                "Events emitted by the core.",
                &self.events,
            ),
            (
                "exchange_overloaded_total",
                "Requests refused because a queue was full.",
                &self.overloaded,
            ),
            (
                "exchange_snapshots_total",
                "Snapshots written.",
                &self.snapshots,
            ),
            (
                "exchange_core_reads_total",
                "Reads answered by the core thread between batches.",
                &self.reads,
            ),
        ];
        for (name, help, value) in counters {
            page.counter(name, help, get(value));
        }
        let gauges = [
            (
                "exchange_submit_queue_depth",
                "Commands waiting for the journal.",
                &self.submit_queue_depth,
            ),
            (
                "exchange_core_queue_depth",
                "Batches waiting for the core.",
                &self.core_queue_depth,
            ),
            (
                "exchange_applied_index",
                "Last log index applied.",
                &self.applied_index,
            ),
        ];
        for (name, help, value) in gauges {
            page.gauge(name, help, get(value));
        }
        let mut rejects = page.family(
            "exchange_rejects_total",
            Kind::Counter,
            "Rejected commands by reason.",
        );
        for (reason, count) in self.rejects() {
            rejects.sample(&[("reason", reason)], count);
        }
        self.write_fsync(page);
        self.write_raft_transport(page);
    }

    fn write_raft_transport(&self, page: &mut Exposition) {
        let Some(counters) = self.raft_transport.get() else {
            return;
        };
        page.counter(
            "exchange_raft_handshakes_refused_total",
            "Connections to or from the Raft port refused in the handshake \
             (no cluster key, a wrong one, a timeout, too many waiting).",
            counters.handshakes_refused.load(Ordering::Relaxed),
        );
        page.counter(
            "exchange_raft_bad_frames_total",
            "Raft connections closed for a frame that failed its MAC.",
            counters.bad_frames.load(Ordering::Relaxed),
        );
    }

    fn write_fsync(&self, page: &mut Exposition) {
        if let Ok(h) = self.fsync_ns.lock() {
            let buckets =
                FSYNC_BUCKETS.map(|bound| (bound, h.count_between(0, (bound * 1e9) as u64)));
            let sum_secs = h.mean() * h.len() as f64 / 1e9;
            page.histogram(
                "exchange_fsync_seconds",
                "Journal fsync latency.",
                buckets,
                h.len(),
                sum_secs,
            );
        }
    }
}
