//! The ingress: how an order-entry gateway that holds no Raft state hands
//! its commands to the leader.
//!
//! A gateway process keeps one connection to the replica it believes
//! leads, over a cluster-key [`Channel`](exchange_replication::transport::channel::Channel)
//! (protocol `EXINGR01`). Every command it sends is a
//! [`LogEntry::Sequenced`](crate::LogEntry) of its client session: the
//! replicated state applies each `(session, seq)` once (see
//! [`crate::state`], "client sessions"), so re-sending everything in
//! flight after a leader change can never apply a command twice. The
//! answers do not come back this way: the gateway follows the committed
//! log ([`crate::stream`]) and applies it to its own mirror of the state,
//! where it finds its commands and their outcomes. What does come back is
//! what never reached the log: `NotLeader` (then the connection closes)
//! and the commands the leader's queue refused.
//!
//! Frames (the channel's payloads, integers little-endian):
//!
//! ```text
//! gateway -> replica   SUBMIT    = 1, batch (crate::replication::encode_batch)
//!                      HEARTBEAT = 0
//! replica -> gateway   READY     = 3, node_id u64          (this replica leads)
//!                      NOT_LEADER= 1, leader u64 (0: none known)
//!                      REFUSED   = 2, why u8, session u64, count u32, seq u64 * count
//!                      HEARTBEAT = 0
//! ```

pub mod server;
pub mod wire;

pub use server::IngressServer;
pub use wire::{Downstream, Refusal, Upstream, WireError};

/// Names the protocol in the channel's handshake.
pub const PROTOCOL: [u8; 8] = *b"EXINGR01";
