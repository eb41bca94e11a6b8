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

mod alarm;
mod conf;
mod error;
mod node;
#[cfg(feature = "sim")]
pub mod sim;
mod snapshot_file;
pub mod state_file;
mod storage;
pub mod transport;
mod types;

pub use alarm::{is_no_space, DiskAlarm, WriteFaults};
pub use conf::{decode_message, encode_message, is_snapshot};
pub use error::{ProposeError, ReplicationError};
pub use node::{run_jobs, ReplicaConfig, ReplicaNode, SyncJob};
pub use raft;
pub use raft::eraftpb::ConfState;
pub use raft::eraftpb::Message;
pub use snapshot_file::{snapshot_state, write_snapshot};
pub use storage::{DiskStorage, SnapshotData, StorageOptions, StorageRecovery};
/// The first bytes of the Raft hard-state file: its format and version.
pub const RAFT_STATE_FORMAT: &[u8; 8] = state_file::MAGIC;
/// What the Raft transport's handshake opens with: the protocol's version.
pub const RAFT_PROTOCOL: [u8; 8] = transport::auth::MAGIC;
pub use types::{Committed, CommittedKind, Membership, ReadyOutcome, ReplicaStatus, Role};
