//! Why a command was not taken: the answers a gateway turns into HTTP
//! statuses, FIX rejects and WebSocket errors.

use thiserror::Error;

use crate::state::Applied;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SubmitError {
    #[error("the exchange is overloaded; retry shortly")]
    Overloaded,
    /// Nothing was applied: the node stops, its journal failed, or (at a
    /// gateway) the command lost its place in the log to a leader change.
    #[error(
        "not applied: the node is stopping or its journal failed, or the command lost its \
         place in a leader change; retry with the same client order id"
    )]
    Stopped,
    #[error(
        "this node is not the leader; send writes to the leader ({})",
        describe_leader(*leader, leader_url.as_deref())
    )]
    NotLeader {
        leader: Option<u64>,
        leader_url: Option<String>,
    },
    #[error(
        "this replica's disk is full (alarm nospace): it takes no writes until space is \
         freed; send writes to another replica"
    )]
    NoSpace,
    /// The gateway's session with the cluster expired (the gateway was cut
    /// off from the leader for longer than its grace) before the command
    /// was applied: nothing of it was, and it never will be. The gateway
    /// continues in a new session; sending the command again is safe.
    #[error(
        "the gateway's session with the exchange expired before this command reached its log; \
         nothing of it was applied; send it again (with the same client order id)"
    )]
    SessionExpired,
}

impl SubmitError {
    /// A gateway's command that its session refused: the session was
    /// closed (expired) before the command reached the log, so nothing of
    /// it was applied. (A duplicate never reaches a waiter: the first copy
    /// in the log answers it.)
    pub fn unapplied(applied: &Applied) -> Option<SubmitError> {
        match applied.session_refusal {
            None | Some(crate::sessions::SessionRefusal::Duplicate { .. }) => None,
            Some(_) => Some(SubmitError::SessionExpired),
        }
    }
}

fn describe_leader(leader: Option<u64>, url: Option<&str>) -> String {
    match (leader, url) {
        (Some(id), Some(url)) => format!("node {id} at {url}"),
        (Some(id), None) => format!("node {id}"),
        _ => "unknown: an election is under way; retry shortly".into(),
    }
}
