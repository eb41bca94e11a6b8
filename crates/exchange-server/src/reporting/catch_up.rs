//! Re-deriving committed entries the reporter did not receive live (it
//! started behind the core, or its event receiver lagged).
//!
//! The core is deterministic, so replaying the journal from a snapshot
//! into a scratch [`ServerState`] gives exactly the events the core
//! published (the same code as `node::recover`). That needs a snapshot at
//! or before the reporter's position and the journal after it: the
//! snapshot writer keeps both while `Metrics::retain_from` says a reader
//! needs them.
//!
//! This is the one place that knows how committed entries are found, so a
//! different log (a Raft log) only has to replace [`committed_entries`].

use std::path::Path;

use exchange_journal::{reader, snapshots, JournalError};
use thiserror::Error;

use crate::entry::{EntryError, LogEntry};
use crate::node::{journal_dir, snapshot_dir};
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
    #[error("log entry {index}: {source}")]
    Entry { index: u64, source: EntryError },
    #[error(
        "entries after {after} cannot be re-derived: no snapshot at or before it and the journal \
         starts at {journal_first} (the store must be rebuilt from a journal that starts at 1)"
    )]
    Unreachable { after: u64, journal_first: u64 },
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
    let mut state = match snapshots::load_at_or_before(&snapshot_dir(data_dir), after)? {
        Some(snapshot) => {
            ServerState::restore(&snapshot.state).map_err(|source| CatchUpError::Snapshot {
                index: snapshot.index,
                source,
            })?
        }
        None => ServerState::new(),
    };
    let journal = journal_dir(data_dir);
    let start = state.applied_index + 1;
    if let Some(first) = reader::first_index(&journal)? {
        if first > start {
            return Err(CatchUpError::Unreachable {
                after,
                journal_first: first,
            });
        }
    }
    reader::for_each_committed(&journal, start, through, |entry| {
        let decoded = LogEntry::decode(&entry.payload).map_err(|source| CatchUpError::Entry {
            index: entry.index,
            source,
        })?;
        let applied = state.apply(entry.index, &decoded);
        if entry.index > after {
            each(applied)?;
        }
        Ok(())
    })
}
