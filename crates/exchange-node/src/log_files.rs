//! The committed log and the snapshots as they lie in a replica's data
//! directory, for the readers beside the replica that must not open its
//! journal (the reporter's catch-up, the log stream to mirrors).
//!
//! Only committed entries are read: a caller never asks past what the
//! core has applied (`Handle::applied_raft_index`), so a new leader
//! truncating uncommitted entries never changes what is read, and an
//! entry's record is whole on disk by then. Compaction may delete any
//! segment or snapshot a reader has not pinned (`Metrics::retain_from_raft`);
//! a reader finds out as an entry no longer in the journal, and starts
//! from a snapshot instead.

use std::path::Path;

use exchange_journal::{reader, snapshots, CommittedCursor, Entry, JournalError};
use thiserror::Error;

use crate::recovery::{journal_dir, snapshot_dir};

#[derive(Debug, Error)]
pub enum LogFilesError {
    #[error("journal: {0}")]
    Journal(#[from] JournalError),
    #[error("snapshot {index}: {reason}")]
    Snapshot { index: u64, reason: String },
}

/// A snapshot file's state-machine part: what [`crate::CoreState::restore`]
/// reads (empty: the empty state), as of Raft entry `raft_index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotState {
    pub raft_index: u64,
    pub term: u64,
    pub data: Vec<u8>,
}

/// The oldest Raft index the journal still holds, if it holds any.
pub fn first_raft_index(data_dir: &Path) -> Result<Option<u64>, JournalError> {
    reader::first_index(&journal_dir(data_dir))
}

/// Calls `each` with the committed entries `from..=through`, in order;
/// fails if any of them is no longer (or not yet) in the journal.
pub fn for_each_committed<E: From<JournalError>>(
    data_dir: &Path,
    from: u64,
    through: u64,
    each: impl FnMut(Entry) -> Result<(), E>,
) -> Result<(), E> {
    reader::for_each_committed(&journal_dir(data_dir), from, through, each)
}

/// A cursor over the committed entries from `next` on, for a reader that
/// follows the log as it grows (see [`CommittedCursor`]).
pub fn committed_cursor(data_dir: &Path, next: u64) -> CommittedCursor {
    CommittedCursor::new(&journal_dir(data_dir), next)
}

/// The newest snapshot at or before Raft index `raft_index` that
/// validates.
pub fn snapshot_at_or_before(
    data_dir: &Path,
    raft_index: u64,
) -> Result<Option<SnapshotState>, LogFilesError> {
    let Some(mut file) = snapshots::load_at_or_before(&snapshot_dir(data_dir), raft_index)? else {
        return Ok(None);
    };
    let data_len = exchange_replication::snapshot_state(&file)
        .map_err(|error| LogFilesError::Snapshot {
            index: file.index,
            reason: error.to_string(),
        })?
        .len();
    // The Raft metadata before the state is dropped in place: a snapshot
    // may be large, and is not copied for it.
    let metadata = file.state.len() - data_len;
    file.state.drain(..metadata);
    Ok(Some(SnapshotState {
        raft_index: file.index,
        term: file.term,
        data: file.state,
    }))
}

/// The newest snapshot that validates.
pub fn newest_snapshot(data_dir: &Path) -> Result<Option<SnapshotState>, LogFilesError> {
    snapshot_at_or_before(data_dir, u64::MAX)
}
