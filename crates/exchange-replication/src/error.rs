use std::path::PathBuf;

use exchange_journal::JournalError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ReplicationError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("raft state file {path} is corrupt: {reason}")]
    CorruptState { path: PathBuf, reason: String },
    #[error("log entry {index} is corrupt: {reason}")]
    CorruptEntry { index: u64, reason: String },
    #[error("snapshot {index} is corrupt: {reason}")]
    CorruptSnapshot { index: u64, reason: String },
    #[error(
        "the log starts at {log_first} but the snapshot ends at {snapshot}: entries are missing"
    )]
    Gap { snapshot: u64, log_first: u64 },
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    #[error("invalid cluster configuration: {0}")]
    Config(String),
}

/// Why a proposal was not taken.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ProposeError {
    #[error("this node is not the leader (leader: {leader:?})")]
    NotLeader { leader: Option<u64> },
    #[error(
        "the proposal was dropped (a leadership transfer or configuration change is in progress)"
    )]
    Dropped,
    #[error("the payload of {0} bytes exceeds the entry limit")]
    TooLarge(usize),
}

pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> ReplicationError {
    ReplicationError::Io {
        path: path.to_path_buf(),
        source,
    }
}
