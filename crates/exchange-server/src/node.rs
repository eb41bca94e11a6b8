//! Starting a node: recover the state from the newest snapshot and the
//! journal behind it, then start the pipeline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use exchange_journal::{snapshots, Journal, JournalError, DEFAULT_SEGMENT_BYTES};
use thiserror::Error;

use crate::entry::{EntryError, LogEntry};
use crate::metrics::Metrics;
use crate::sequencer::{Pipeline, PipelineConfig};
use crate::state::{ServerState, StateSnapshotError};

#[derive(Debug, Error)]
pub enum RecoveryError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("snapshot {path}: {source}")]
    Snapshot {
        path: PathBuf,
        source: StateSnapshotError,
    },
    #[error("log entry {index}: {source}")]
    Entry { index: u64, source: EntryError },
    #[error("the journal starts at {journal_first} but the snapshot ends at {snapshot}: entries are missing")]
    Gap { snapshot: u64, journal_first: u64 },
}

/// What recovery found, for the operator.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    pub snapshot_index: Option<u64>,
    pub invalid_snapshots: Vec<PathBuf>,
    pub replayed: u64,
    pub truncated_bytes: u64,
    pub truncated_reason: Option<String>,
    pub applied_index: u64,
    pub state_hash: String,
}

pub fn journal_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("journal")
}

pub fn snapshot_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

/// Rebuilds the state from `data_dir` and leaves the journal open after it.
pub fn recover(data_dir: &Path) -> Result<(ServerState, Journal, RecoveryReport), RecoveryError> {
    let mut report = RecoveryReport::default();
    let (snapshot, invalid) = snapshots::load_latest(&snapshot_dir(data_dir))?;
    report.invalid_snapshots = invalid;
    let mut state = match snapshot {
        Some(snapshot) => {
            report.snapshot_index = Some(snapshot.index);
            let path = snapshot_dir(data_dir);
            ServerState::restore(&snapshot.state)
                .map_err(|source| RecoveryError::Snapshot { path, source })?
        }
        None => ServerState::new(),
    };
    let (mut journal, recovery) = Journal::open(&journal_dir(data_dir), 1, DEFAULT_SEGMENT_BYTES)?;
    report.truncated_bytes = recovery.truncated_bytes;
    report.truncated_reason = recovery.truncated_reason;
    if journal.next_index() <= state.applied_index {
        // The journal ends inside what the snapshot already covers (its
        // damaged tail was durable and is in the snapshot): continue the
        // log right after the snapshot so indices stay dense.
        journal.reset(state.applied_index + 1)?;
    }
    let mut next = state.applied_index + 1;
    if journal.first_index() > next && journal.next_index() > journal.first_index() {
        return Err(RecoveryError::Gap {
            snapshot: state.applied_index,
            journal_first: journal.first_index(),
        });
    }
    while next < journal.next_index() {
        let entries = journal.read(next, 10_000)?;
        if entries.is_empty() {
            break;
        }
        for entry in entries {
            let decoded =
                LogEntry::decode(&entry.payload).map_err(|source| RecoveryError::Entry {
                    index: entry.index,
                    source,
                })?;
            state.apply(entry.index, &decoded);
            next = entry.index + 1;
            report.replayed += 1;
        }
    }
    report.applied_index = state.applied_index;
    report.state_hash = state.state_hash();
    Ok((state, journal, report))
}

/// Recovers and starts the pipeline.
pub fn start(
    data_dir: &Path,
    mut config: PipelineConfig,
) -> Result<(Pipeline, RecoveryReport), RecoveryError> {
    let (state, journal, report) = recover(data_dir)?;
    config.snapshot_dir = snapshot_dir(data_dir);
    let metrics = Arc::new(Metrics::default());
    metrics
        .applied_index
        .store(state.applied_index, std::sync::atomic::Ordering::Relaxed);
    metrics
        .durable_index
        .store(state.applied_index, std::sync::atomic::Ordering::Relaxed);
    Ok((Pipeline::start(state, journal, config, metrics), report))
}
