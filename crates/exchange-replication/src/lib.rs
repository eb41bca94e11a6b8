//! Raft replication of the exchange's log.
//!
//! [`ReplicaNode`] wraps raft-rs's sans-I/O `RawNode` over [`DiskStorage`],
//! which keeps the Raft log in the exchange journal, the hard state in a
//! small atomically replaced file, and snapshots beside them. The owner
//! drives the node (ticks, peer messages, proposals) and moves its output:
//! messages to peers, committed payloads to the state machine. Payloads
//! are opaque here; the server puts a batch of commands in each.
//!
//! Invariants: an entry or vote is on disk before any message that
//! acknowledges it leaves (`handle_ready`); the state machine sees only
//! committed entries, in index order, each once per start; a snapshot is
//! durable before the log below it is deleted.

mod error;
mod node;
pub mod state_file;
mod storage;
pub mod transport;

pub use error::{ProposeError, ReplicationError};
pub use node::{
    decode_message, encode_message, is_snapshot, Committed, CommittedKind, Membership,
    ReadyOutcome, ReplicaConfig, ReplicaNode, ReplicaStatus, Role,
};
pub use raft;
pub use raft::eraftpb::ConfState;
pub use raft::eraftpb::Message;
pub use storage::{write_snapshot, DiskStorage, SnapshotData, StorageOptions, StorageRecovery};
