//! The messages between the gateways, the Raft thread and the core thread.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::entry::LogEntry;
use crate::reads::Read;
use crate::replication::RaftMeta;
use crate::state::Applied;

/// Where an entry's outcome goes, and since when its sender has waited
/// (the acknowledgement latency the status page reports).
pub(crate) struct Reply {
    pub(crate) tx: oneshot::Sender<Arc<Applied>>,
    pub(crate) since: Instant,
}

impl Reply {
    pub(crate) fn new(tx: oneshot::Sender<Arc<Applied>>) -> Option<Reply> {
        Some(Reply {
            tx,
            since: Instant::now(),
        })
    }
}

pub(crate) struct Submission {
    pub entry: LogEntry,
    pub reply: Option<Reply>,
}

/// One committed Raft entry's commands, with the replies of those this
/// node proposed.
pub(crate) struct CommittedBatch {
    pub meta: RaftMeta,
    pub items: Vec<(LogEntry, Option<Reply>)>,
}

pub(crate) enum CoreMsg {
    Entries(Vec<CommittedBatch>),
    /// Replace the state with a snapshot from the leader (empty data: the
    /// empty state).
    Install {
        meta: RaftMeta,
        data: Vec<u8>,
    },
    /// A follower needs a snapshot newer than the newest on disk.
    SnapshotNow,
    /// A named read, answered between batches.
    Read(Read),
}
