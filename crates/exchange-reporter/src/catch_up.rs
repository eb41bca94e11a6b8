//! Re-deriving committed entries the reporter did not receive live (it
//! started behind the core, or its event receiver lagged).
//!
//! The core is deterministic, so replaying the committed Raft log from a
//! snapshot into a scratch [`ServerState`] gives exactly the events the
//! core published (the same code as `exchange_node::recovery::recover`). That needs a
//! snapshot at or before the reporter's position and the log after it: the
//! snapshot writer keeps both while `Metrics::retain_from_raft` says a
//! reader needs them.
//!
//! Only committed entries are read (the caller never asks past what the
//! core has applied), so a new leader truncating uncommitted entries never
//! changes what is read here. The files are read through
//! `exchange_node::log_files`, which the log stream to mirrors shares.
//!
//! A reporter that lags twice would replay from the same snapshot twice
//! (with a snapshot every million commands, up to a million commands, a
//! couple of seconds, to recover a gap of a few thousand). The scratch
//! state a catch-up ends with is therefore kept ([`Scratch`]) and the next
//! catch-up starts from it when it is at or before the entries asked for
//! and newer than the snapshot it would otherwise restore. Any scratch
//! state is exactly the state after some command (the core is
//! deterministic), so starting from it gives the same events as starting
//! from a snapshot.

use std::path::Path;

use exchange_journal::JournalError;
use thiserror::Error;

use exchange_node::log_files::{self, LogFilesError};
use exchange_node::replication::{decode_entry_payload, BatchError};
use exchange_node::state::{Applied, ServerState, StateSnapshotError};

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
    #[error(
        "log entry {index} holds {commands} commands, but the kept scratch state has {taken} of \
         them (it is dropped: the next catch-up starts from a snapshot)"
    )]
    ScratchMismatch {
        index: u64,
        taken: usize,
        commands: usize,
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
    each: impl FnMut(Applied) -> Result<(), CatchUpError>,
) -> Result<(), CatchUpError> {
    committed_entries_from(data_dir, after, through, None, &mut None, each).map(|_| ())
}

/// The state a walk over the log ended with, to start the next one from.
pub struct Scratch {
    state: ServerState,
    /// The last log record whose commands are all in `state`.
    raft_index: u64,
    /// Commands of the record after it already in `state` (a walk stops
    /// at a command, which may be in the middle of a record).
    taken: usize,
}

impl Scratch {
    /// The last command the state holds.
    pub fn applied_index(&self) -> u64 {
        self.state.applied_index
    }
}

/// As [`committed_entries`], starting from `scratch` when it is usable
/// (at or before `after`, newer than the snapshot that would be restored,
/// and the log still reaches back to it), and leaving in it the state the
/// walk ended with. Returns how many commands were replayed (those before
/// `after + 1` included: the cost of getting there).
///
/// `after_raft`, when known, is the Raft index of the log record holding
/// command `after`: a snapshot past it holds commands after `after`, so
/// it is not even read. Restoring a snapshot costs as much as the state
/// is large, and a reader far behind would otherwise restore every newer
/// snapshot, newest first, at each catch-up, only to find it too new.
pub fn committed_entries_from(
    data_dir: &Path,
    after: u64,
    through: u64,
    after_raft: Option<u64>,
    scratch: &mut Option<Scratch>,
    mut each: impl FnMut(Applied) -> Result<(), CatchUpError>,
) -> Result<u64, CatchUpError> {
    if through <= after {
        return Ok(0);
    }
    let first = log_files::first_raft_index(data_dir)?;
    // Only a state at or before `after`, whose next record is still in
    // the log, can be replayed from.
    let kept = scratch.take().filter(|kept| {
        kept.state.applied_index <= after && first.is_none_or(|first| first <= kept.raft_index + 1)
    });
    let restored = |(raft_index, state)| Scratch {
        state,
        raft_index,
        taken: 0,
    };
    let mut from = match kept {
        Some(kept) => match snapshot_at_or_before(data_dir, after, after_raft, kept.raft_index)? {
            Snapshots::Found(raft_index, state) => restored((raft_index, *state)),
            Snapshots::NotFound { .. } => kept,
        },
        None => restored(starting_state(data_dir, after, after_raft)?),
    };
    let start = from.raft_index + 1;
    if let Some(first) = first {
        if first > start {
            return Err(CatchUpError::Unreachable {
                after,
                journal_first: first,
            });
        }
    }
    from.state.raft_index = from.raft_index;
    let mut replayed = 0u64;
    let walked = log_files::for_each_committed(data_dir, start, u64::MAX, |record| {
        let commands = decode_entry_payload(&record.payload).map_err(|source| {
            Walk::Failed(CatchUpError::Batch {
                index: record.index,
                source,
            })
        })?;
        // Commands of a record the previous walk stopped inside of are in
        // the state already.
        let skip = std::mem::take(&mut from.taken);
        if skip > commands.len() {
            return Err(Walk::Failed(CatchUpError::ScratchMismatch {
                index: record.index,
                taken: skip,
                commands: commands.len(),
            }));
        }
        for (taken, command) in commands.iter().enumerate().skip(skip) {
            let index = from.state.applied_index + 1;
            let mut applied = from.state.apply(index, command);
            replayed += 1;
            applied.raft_index = record.index;
            if index > after {
                each(applied).map_err(Walk::Failed)?;
            }
            if index >= through {
                from.taken = taken + 1;
                return Err(Walk::Done);
            }
        }
        from.state.raft_index = record.index;
        from.raft_index = record.index;
        Ok(())
    });
    match walked {
        Ok(()) | Err(Walk::Done) => {
            *scratch = Some(from);
            Ok(replayed)
        }
        // The scratch state may be part-way through a record it failed on:
        // dropped (the next walk starts from a snapshot).
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

/// What the snapshots offer a walk that must start at or before command
/// `after`.
enum Snapshots {
    /// The newest snapshot whose state is early enough, with its Raft
    /// index.
    Found(u64, Box<ServerState>),
    /// None early enough (after Raft index `newer_than`, when given): the
    /// oldest state looked at, as its command and event sequence.
    NotFound { oldest: Option<(u64, u64)> },
}

/// The newest snapshot whose state is at or before command `after`. A
/// snapshot file is named by its Raft index, not by the commands it holds,
/// so candidates are restored newest first until one is early enough;
/// those at or before Raft index `newer_than` are not looked at (a kept
/// scratch state there is at least as new).
fn snapshot_at_or_before(
    data_dir: &Path,
    after: u64,
    after_raft: Option<u64>,
    newer_than: u64,
) -> Result<Snapshots, CatchUpError> {
    let mut below = after_raft.unwrap_or(u64::MAX);
    let mut oldest = None;
    while let Some(file) =
        log_files::snapshot_at_or_before(data_dir, below).map_err(|e| match e {
            LogFilesError::Journal(e) => CatchUpError::Journal(e),
            LogFilesError::Snapshot { index, reason } => {
                CatchUpError::SnapshotFile { index, reason }
            }
        })?
    {
        let file_index = file.raft_index;
        if file_index <= newer_than {
            break;
        }
        let state = if file.data.is_empty() {
            ServerState::new()
        } else {
            ServerState::restore(&file.data).map_err(|source| CatchUpError::Snapshot {
                index: file_index,
                source,
            })?
        };
        if state.applied_index <= after {
            return Ok(Snapshots::Found(file_index, Box::new(state)));
        }
        oldest = Some((state.applied_index, state.engine.last_seq()));
        match file_index.checked_sub(1) {
            Some(earlier) => below = earlier,
            None => break,
        }
    }
    Ok(Snapshots::NotFound { oldest })
}

/// The newest snapshot whose state is at or before command `after`, with
/// its Raft index; the genesis (the empty state at Raft index 1) if none
/// is.
fn starting_state(
    data_dir: &Path,
    after: u64,
    after_raft: Option<u64>,
) -> Result<(u64, ServerState), CatchUpError> {
    let oldest = match snapshot_at_or_before(data_dir, after, after_raft, 0)? {
        Snapshots::Found(index, state) => return Ok((index, *state)),
        // Every snapshot is past the record: looked at after all, for the
        // oldest state this node has (a replica that since installed its
        // leader's snapshot starts its history there).
        Snapshots::NotFound { .. } if after_raft.is_some() => {
            return starting_state(data_dir, after, None);
        }
        Snapshots::NotFound { oldest } => oldest,
    };
    // Nothing early enough on disk: the genesis, if the log still reaches
    // back to it; otherwise this node's history starts at its oldest
    // snapshot.
    let first = log_files::first_raft_index(data_dir)?;
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
