//! Re-deriving committed entries the reporter did not receive live (it
//! started behind the core, or its event receiver lagged).
//!
//! The core is deterministic, so replaying the committed Raft log from a
//! snapshot into a scratch [`ServerState`] gives exactly the events the
//! core published (the same code as `node::recover`). That needs a
//! snapshot at or before the reporter's position and the log after it: the
//! snapshot writer keeps both while `Metrics::retain_from_raft` says a
//! reader needs them.
//!
//! Only committed entries are read (the caller never asks past what the
//! core has applied), so a new leader truncating uncommitted entries never
//! changes what is read here. This is the one place that knows how
//! committed entries are found on disk.

use std::path::Path;

use exchange_journal::{reader, snapshots, JournalError};
use thiserror::Error;

use crate::node::{journal_dir, snapshot_dir};
use crate::replication::{decode_entry_payload, BatchError};
use crate::state::{Applied, ServerState, StateSnapshotError};

#[derive(Debug, Error)]
pub enum CatchUpError {
    #[error("journal: {0}")]
    Journal(#[from] JournalError),
    #[error("snapshot {index}: {source}")]
    Snapshot {
        index: u64,
        source: StateSnapshotError,
    },
    #[error("snapshot {index}: {reason}")]
    SnapshotFile { index: u64, reason: String },
    #[error("log entry {index}: {source}")]
    Batch { index: u64, source: BatchError },
    #[error(
        "entries after {after} cannot be re-derived: no snapshot at or before it and the log \
         starts at {journal_first} (the store must be rebuilt from a log that starts at 2)"
    )]
    Unreachable { after: u64, journal_first: u64 },
    #[error(
        "entries after {after} are not on this node: its oldest state is a snapshot at command \
         {command} (it joined by snapshot)"
    )]
    BeforeOldestState {
        after: u64,
        command: u64,
        event_seq: u64,
    },
    #[error("reporting store: {0}")]
    Store(#[from] exchange_reporting::StoreError),
}

/// Calls `each` with entries `after + 1 ..= through`, in order, as the
/// core applied them.
pub fn committed_entries(
    data_dir: &Path,
    after: u64,
    through: u64,
    mut each: impl FnMut(Applied) -> Result<(), CatchUpError>,
) -> Result<(), CatchUpError> {
    if through <= after {
        return Ok(());
    }
    let (raft_index, mut state) = starting_state(data_dir, after)?;
    let journal = journal_dir(data_dir);
    let start = raft_index + 1;
    if let Some(first) = reader::first_index(&journal)? {
        if first > start {
            return Err(CatchUpError::Unreachable {
                after,
                journal_first: first,
            });
        }
    }
    state.raft_index = raft_index;
    let walked = reader::for_each_committed(&journal, start, u64::MAX, |record| {
        let commands = decode_entry_payload(&record.payload).map_err(|source| {
            Walk::Failed(CatchUpError::Batch {
                index: record.index,
                source,
            })
        })?;
        for command in commands {
            let index = state.applied_index + 1;
            let mut applied = state.apply(index, &command);
            applied.raft_index = record.index;
            if index > after {
                each(applied).map_err(Walk::Failed)?;
            }
            if index >= through {
                return Err(Walk::Done);
            }
        }
        state.raft_index = record.index;
        Ok(())
    });
    match walked {
        Ok(()) | Err(Walk::Done) => Ok(()),
        Err(Walk::Failed(error)) => Err(error),
    }
}

/// How a walk over the log ends early: with everything asked for, or on
/// an error.
enum Walk {
    Done,
    Failed(CatchUpError),
}

impl From<JournalError> for Walk {
    fn from(error: JournalError) -> Self {
        Walk::Failed(CatchUpError::Journal(error))
    }
}

/// The newest snapshot whose state is at or before command `after`, with
/// its Raft index; the genesis (the empty state at Raft index 1) if none
/// is. A snapshot file is named by its Raft index, not by the commands it
/// holds, so candidates are restored newest first until one is early
/// enough.
fn starting_state(data_dir: &Path, after: u64) -> Result<(u64, ServerState), CatchUpError> {
    let dir = snapshot_dir(data_dir);
    let mut below = u64::MAX;
    let mut oldest = None;
    while let Some(file) = snapshots::load_at_or_before(&dir, below)? {
        let data = exchange_replication::snapshot_state(&file).map_err(|error| {
            CatchUpError::SnapshotFile {
                index: file.index,
                reason: error.to_string(),
            }
        })?;
        let state = if data.is_empty() {
            ServerState::new()
        } else {
            ServerState::restore(data).map_err(|source| CatchUpError::Snapshot {
                index: file.index,
                source,
            })?
        };
        if state.applied_index <= after {
            return Ok((file.index, state));
        }
        oldest = Some((state.applied_index, state.engine.last_seq()));
        match file.index.checked_sub(1) {
            Some(earlier) => below = earlier,
            None => break,
        }
    }
    // Nothing early enough on disk: the genesis, if the log still reaches
    // back to it; otherwise this node's history starts at its oldest
    // snapshot.
    let first = reader::first_index(&journal_dir(data_dir))?;
    match oldest {
        Some((command, event_seq)) if first.is_some_and(|first| first > 2) => {
            Err(CatchUpError::BeforeOldestState {
                after,
                command,
                event_seq,
            })
        }
        _ => Ok((1, ServerState::new())),
    }
}
