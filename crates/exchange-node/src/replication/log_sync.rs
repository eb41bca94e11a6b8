//! The log's sync thread: runs the Raft thread's sync jobs
//! ([`exchange_replication::SyncJob`]) in the order they come, every job
//! that queued meanwhile with one `fdatasync` per file, and reports the
//! newest one done.
//!
//! Why a thread of its own: a sync takes 100-400 µs on the benchmark
//! machine's disk. Run inline, it held the Raft thread for most of each
//! cycle under load, and a follower's answer or a new batch arriving
//! meanwhile waited for it. The leader now counts a follower's answer and
//! proposes the next batch while its own sync runs; Raft's rules still
//! hold, since the replica counts its own copy, and acknowledges anything,
//! only once the job is reported (see `ReplicaNode::handle_ready`).

use crate::limits::LOG_SYNC_QUEUE;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{unbounded, Receiver, Sender};
use exchange_replication::{run_jobs, ReplicationError, SyncJob};

use crate::metrics::Metrics;
use crate::parked;

/// What the thread reports: every job up to this number is durable, or
/// the disk failed (the thread stops).
pub(crate) type Synced = Result<u64, ReplicationError>;

pub(crate) fn start(
    metrics: Arc<Metrics>,
) -> std::io::Result<(parked::Sender<SyncJob>, Receiver<Synced>)> {
    let (jobs_tx, jobs) = parked::bounded(LOG_SYNC_QUEUE);
    let (done, done_rx) = unbounded();
    std::thread::Builder::new()
        .name("log-sync".into())
        .spawn(move || {
            crate::threads::latency_sensitive();
            run(&jobs, &done, &metrics);
        })?;
    Ok((jobs_tx, done_rx))
}

fn run(jobs: &parked::Receiver<SyncJob>, done: &Sender<Synced>, metrics: &Metrics) {
    let mut batch = Vec::new();
    while let Ok(first) = jobs.recv() {
        batch.push(first);
        while let Ok(next) = jobs.try_recv() {
            batch.push(next);
        }
        let started = Instant::now();
        let result = run_jobs(&batch);
        if batch.iter().any(SyncJob::syncs_a_file) {
            metrics.record_fsync(started.elapsed().as_nanos() as u64);
        }
        batch.clear();
        let report = match result {
            Ok(Some(number)) => Ok(number),
            Ok(None) => continue,
            Err(error) => Err(error),
        };
        let failed = report.is_err();
        if done.send(report).is_err() || failed {
            return;
        }
    }
}
