//! The durable log under the exchange.
//!
//! Every command is appended here and made durable before the core applies
//! it and before any client hears about it. The log holds opaque payloads
//! with an index and a term, so the same files can back a single node or a
//! Raft replica; [`snapshots`] lets the log be compacted and a restart skip
//! most of the replay.

mod cursor;
mod error;
mod journal;
mod purge;
pub mod reader;
mod record;
mod scan;
pub mod snapshots;
mod spare;

pub use cursor::{CommittedCursor, Read as CursorRead};
pub use error::JournalError;
pub use journal::{
    Journal, JournalOptions, LogSync, Recovery, DEFAULT_PREALLOCATE_AFTER, DEFAULT_SEGMENT_BYTES,
};
pub use record::{Entry, MAX_PAYLOAD_BYTES};
pub use snapshots::Snapshot;

/// The first bytes of every journal segment: the segment format's name
/// and version. A binary that writes another refuses this one's files.
pub const JOURNAL_FORMAT: &[u8; 8] = journal::SEGMENT_MAGIC;
/// The first bytes of every snapshot file, as [`JOURNAL_FORMAT`].
pub const SNAPSHOT_FORMAT: &[u8; 8] = snapshots::MAGIC;
