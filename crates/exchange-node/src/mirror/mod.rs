//! A mirror: a process that holds the state without Raft, by applying the
//! committed log of any replica with the same deterministic code (an
//! order-entry gateway, a market-data gateway).
//!
//! Its [`Handle`](crate::Handle) works as a replica's does: reads are
//! answered by its own core thread, events are published on the same
//! broadcast, credentials are checked against its own copy. A gateway's
//! submissions go to the leader through the ingress ([`forwarder`]) and
//! are answered when its core thread applies them from the log
//! ([`follow`]): the answer a client gets is the one every replica
//! computed, after the command was durable on a majority. A market-data
//! gateway takes no submissions.

pub(crate) mod follow;
pub(crate) mod forwarder;
#[cfg(test)]
mod gateway_sim;
pub(crate) mod inflight;
pub(crate) mod renew;

use std::collections::BTreeMap;

use exchange_replication::transport::{ClusterKey, PeerAddr};

/// What a mirror is for.
#[derive(Clone, Debug)]
pub enum MirrorRole {
    /// Order entry: forwards its clients' commands to the leader's
    /// ingress. `name` identifies the gateway across restarts: a restarted
    /// gateway's session replaces its previous one, whose late submissions
    /// are then refused as stale.
    /// `cancel_grace_ms`: its session's grace (see [`crate::sessions`]).
    Gateway {
        name: String,
        ingress: BTreeMap<u64, PeerAddr>,
        cancel_grace_ms: u64,
    },
    /// Market data only: takes no submissions.
    MarketData,
}

/// Where a mirror gets the log and sends commands.
#[derive(Clone, Debug)]
pub struct MirrorSettings {
    /// This process's id on the cluster's channels (for their logs).
    pub process_id: u64,
    pub role: MirrorRole,
    /// The replicas' log-stream addresses; any one will do. Names are
    /// resolved at each connection attempt.
    pub stream: Vec<PeerAddr>,
    pub key: ClusterKey,
}

impl MirrorRole {
    pub fn as_str(&self) -> &'static str {
        match self {
            MirrorRole::Gateway { .. } => "gateway",
            MirrorRole::MarketData => "md-gateway",
        }
    }
}

/// The incarnation of a session this process opens: its wall clock in ns,
/// and above every one it gave before, so that a renewal made within one
/// clock tick (or after the clock stepped back) still orders after the
/// session it replaces. A restarted gateway orders after its predecessor
/// unless the host's clock stepped back across the restart by more than
/// the time between the two opens; docs/deploy.md says so.
pub(crate) fn new_incarnation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let previous = LAST.fetch_max(now, Ordering::Relaxed);
    if previous >= now {
        LAST.fetch_add(1, Ordering::Relaxed) + 1
    } else {
        now
    }
}

/// A fresh session id for this gateway incarnation (never 0).
pub(crate) fn new_session_id() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    u64::from_le_bytes(bytes).max(1)
}
