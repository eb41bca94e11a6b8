//! What a replica reports: its role and status, committed entries, the
//! outcome of a ready cycle, and the membership changes it accepts.

use raft::eraftpb::ConfState;
use raft::StateRole;

use crate::storage::SnapshotData;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Follower,
    PreCandidate,
    Candidate,
    Leader,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Follower => "follower",
            Role::PreCandidate => "pre_candidate",
            Role::Candidate => "candidate",
            Role::Leader => "leader",
        }
    }
}

impl From<StateRole> for Role {
    fn from(role: StateRole) -> Role {
        match role {
            StateRole::Follower => Role::Follower,
            StateRole::PreCandidate => Role::PreCandidate,
            StateRole::Candidate => Role::Candidate,
            StateRole::Leader => Role::Leader,
        }
    }
}

/// A replica's view of itself and, when leader, of its peers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaStatus {
    pub id: u64,
    pub role: Role,
    pub term: u64,
    pub leader: Option<u64>,
    pub commit_index: u64,
    pub applied_index: u64,
    pub last_index: u64,
    pub voters: Vec<u64>,
    /// Leader only: each peer's highest replicated index.
    pub matched: Vec<(u64, u64)>,
}

/// What a committed entry is to the state machine.
#[derive(Clone, Debug, PartialEq)]
pub enum CommittedKind {
    /// A proposal's payload; empty for the entry a new leader appends.
    Normal(Vec<u8>),
    /// A membership change took effect: the configuration after it, the
    /// change, and the context the proposer attached (the server puts the
    /// new node's Raft address there, so every replica learns it).
    ConfChange {
        conf: ConfState,
        change: Option<Membership>,
        context: Vec<u8>,
    },
    /// A membership change Raft refused (identically on every replica).
    ConfChangeRefused(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Committed {
    pub index: u64,
    pub term: u64,
    pub kind: CommittedKind,
}

/// What `ReplicaNode::handle_ready` gives the state machine at one time,
/// to be applied in this order.
#[derive(Debug, Default)]
pub struct ReadyOutcome {
    /// Replace the state with this snapshot first.
    pub snapshot: Option<SnapshotData>,
    pub committed: Vec<Committed>,
}

impl ReadyOutcome {
    pub fn is_empty(&self) -> bool {
        self.snapshot.is_none() && self.committed.is_empty()
    }
}

/// Membership changes an operator can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    AddVoter(u64),
    RemoveVoter(u64),
}
