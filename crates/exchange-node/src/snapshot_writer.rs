//! The snapshot writer: the node's snapshots written to disk on a thread
//! of their own.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Receiver, Sender};

use crate::metrics::Metrics;
use crate::replication::{RaftMeta, SnapshotDone};
use crate::state::StateCopy;

/// Writes snapshots on its own thread so the core never waits on a disk,
/// then tells the Raft thread, which compacts the log below the oldest
/// kept snapshot. Two are kept (the newer one might yet prove
/// unreadable), and also the newest at or below the floor a reader behind
/// the core needs (`Metrics::retain_from_raft`: the reporting service),
/// with the log after it; when no snapshot on disk is that old (the
/// reader is still before the first one), the whole log, since the reader
/// replays it from the genesis.
pub(crate) struct SnapshotWriter {
    queue: Option<Sender<(RaftMeta, StateCopy)>>,
    /// The queue's other end, to see whether the writer is busy.
    waiting: Receiver<(RaftMeta, StateCopy)>,
    thread: Option<JoinHandle<()>>,
}

/// Tells whether the writer would take a snapshot now, from another
/// thread than the one offering it (the core thread, before it copies its
/// state); it keeps nothing running.
pub(crate) struct SnapshotsIdle(Receiver<(RaftMeta, StateCopy)>);

impl SnapshotsIdle {
    /// No snapshot waits for the writer.
    pub(crate) fn idle(&self) -> bool {
        self.0.is_empty()
    }
}

/// Removes the snapshots no one needs, given the Raft index a reader
/// behind the core replays from (`floor`: 0 while it has not said, so
/// everything is kept; `u64::MAX` when there is no such reader), and
/// returns the Raft index the log must be kept from.
fn prune_for_reader(dir: &std::path::Path, floor: u64) -> u64 {
    if floor == 0 {
        return 0;
    }
    match exchange_journal::snapshots::prune(dir, 2, floor) {
        Ok(_) if floor == u64::MAX => u64::MAX,
        // The reader replays from the newest snapshot at or below its
        // floor, or from the genesis when there is none.
        Ok(kept) => kept
            .into_iter()
            .rev()
            .find(|&index| index <= floor)
            .unwrap_or(0),
        Err(error) => {
            tracing::warn!(%error, "removing old snapshots failed");
            0
        }
    }
}

impl SnapshotWriter {
    pub(crate) fn start(
        dir: std::path::PathBuf,
        written: Sender<SnapshotDone>,
        metrics: Arc<Metrics>,
    ) -> SnapshotWriter {
        let (tx, rx) = bounded::<(RaftMeta, StateCopy)>(1);
        let waiting = rx.clone();
        let thread = std::thread::Builder::new()
            .name("snapshots".into())
            .spawn(move || {
                while let Ok((meta, copy)) = rx.recv() {
                    // Nothing is written rather than a snapshot missing a
                    // section: the log still holds everything, so the node
                    // and its replicas go on as after a failed write.
                    let bytes = match copy.into_bytes() {
                        Ok(bytes) => bytes,
                        Err(error) => {
                            tracing::error!(%error, index = meta.index, "snapshot not written");
                            continue;
                        }
                    };
                    match exchange_replication::write_snapshot(
                        &dir,
                        meta.index,
                        meta.term,
                        &meta.conf,
                        &bytes,
                        usize::MAX,
                    ) {
                        Ok(path) => {
                            metrics.snapshots.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(
                                index = meta.index,
                                path = %path.display(),
                                "snapshot written"
                            );
                            let floor = metrics.retain_from_raft.load(Ordering::Acquire);
                            let keep_log_from = prune_for_reader(&dir, floor);
                            let _ = written.send(SnapshotDone {
                                meta,
                                keep_log_from,
                            });
                        }
                        Err(error) => {
                            tracing::warn!(
                                %error,
                                "snapshot failed; the log still holds everything"
                            )
                        }
                    }
                }
            })
            .expect("spawn snapshot thread");
        SnapshotWriter {
            queue: Some(tx),
            waiting,
            thread: Some(thread),
        }
    }

    pub(crate) fn idle_probe(&self) -> SnapshotsIdle {
        SnapshotsIdle(self.waiting.clone())
    }

    /// Hands the writer the copy `copy` makes, unless the previous one is
    /// still waiting for it (the next one will do).
    pub(crate) fn offer(&self, meta: RaftMeta, copy: impl FnOnce() -> StateCopy) {
        if let Some(queue) = self.queue.as_ref().filter(|queue| queue.is_empty()) {
            let _ = queue.try_send((meta, copy()));
        }
    }

    /// Writes a last snapshot and waits for the writer to finish.
    pub(crate) fn finish(mut self, meta: RaftMeta, copy: StateCopy) {
        if let Some(queue) = self.queue.take() {
            let _ = queue.send((meta, copy));
        }
        self.finish_without();
    }

    pub(crate) fn finish_without(mut self) {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
