//! The log stream: the committed Raft log carried from any replica to
//! read-only mirrors of the state (order-entry and market-data gateways
//! in their own processes).
//!
//! A mirror applies the log with the same deterministic code as the core
//! ([`CoreState`]), so it holds the same accounts, keys, orders and
//! market-data sequence numbers without taking part in Raft. Every
//! replica can serve it ([`StreamServer`]); a mirror follows one replica
//! at a time and moves to another when that one fails ([`follow`]).
//!
//! The connection is a [`Channel`](exchange_replication::transport::channel)
//! of protocol `EXLOGS01`: only holders of the cluster key follow, and
//! every frame is authenticated. The follower asks to follow from the
//! first Raft index it lacks; the server answers with the newest snapshot
//! when its journal no longer holds that index (or the follower has
//! nothing and a snapshot exists), then the committed entries, read from
//! the journal's files up to what its core has applied, then more as the
//! core applies them, and heartbeats while there is nothing new.
//!
//! Retention: a follower pins nothing. The server reads the segment it
//! is in through an open file, so compaction under it is harmless; when
//! the entry it needs next is no longer in the journal, it sends the
//! newest snapshot and goes on after it. [`wire`] has the frames.

mod client;
mod server;
pub mod wire;

use std::time::Duration;

pub use client::{follow, Follower};
pub use server::StreamServer;

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::state::{Applied, StateSnapshotError};

/// The channel protocol (and its version) of the log stream.
pub const PROTOCOL: [u8; 8] = *b"EXLOGS01";
/// Followers one server serves at a time.
pub const MAX_FOLLOWERS: usize = 64;
/// The server sends a heartbeat after this long without entries.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A follower that reads nothing for this long is dropped by the server.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Entries' payload bytes per frame, about (a frame holds at least one
/// entry; a journal record is at most 4 MiB, under the channel's limit).
const BATCH_BYTES: usize = 1 << 20;
const SNAPSHOT_CHUNK: usize = 4 << 20;
/// Items waiting for the mirror to take them.
const ITEMS: usize = 64;
/// After every replica failed in turn, the follower waits this long.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What a follower hands over, in log order.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamItem {
    /// Replace the state by this snapshot, as of Raft entry `raft_index`
    /// (what [`CoreState::restore`] reads; empty: the empty state).
    Install {
        raft_index: u64,
        term: u64,
        data: Vec<u8>,
    },
    /// Committed entries, consecutive: (Raft index, term, commands). A
    /// membership or empty entry has no command but still counts.
    Entries(Vec<(u64, u64, Vec<LogEntry>)>),
}

impl StreamItem {
    /// Applies the item to a mirror's state as the core applies it, and
    /// returns the outcomes (those of the entries' commands; none for a
    /// snapshot).
    pub fn apply_to(&self, core: &mut CoreState) -> Result<Vec<Applied>, StateSnapshotError> {
        match self {
            StreamItem::Install {
                raft_index, data, ..
            } => {
                *core = if data.is_empty() {
                    CoreState::new()
                } else {
                    CoreState::restore(data)?
                };
                core.state.raft_index = *raft_index;
                Ok(Vec::new())
            }
            StreamItem::Entries(entries) => {
                let mut outcomes = Vec::new();
                for (raft_index, _, commands) in entries {
                    for command in commands {
                        let mut applied = core.apply(core.state.applied_index + 1, command);
                        applied.raft_index = *raft_index;
                        outcomes.push(applied);
                    }
                    core.state.raft_index = *raft_index;
                }
                Ok(outcomes)
            }
        }
    }
}
