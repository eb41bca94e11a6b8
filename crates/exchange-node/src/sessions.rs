//! Client sessions: what lets an order-entry gateway that forwards
//! commands to the leader re-submit whatever was in flight when the
//! leader changed, with every command applied once (the Raft
//! dissertation's linearizable client sessions, §6.3).
//!
//! A gateway process incarnation opens a session under an id of its own
//! choosing (`LogEntry::OpenSession`), then sends each command wrapped
//! with the session and a sequence number (`LogEntry::Sequenced`), strictly
//! increasing on one ordered connection. A sequenced command is applied
//! iff its session is open and its number is above the session's last
//! applied one, which it then becomes: a re-submitted copy is a duplicate,
//! and gaps (commands refused before the log and never re-sent) are fine.
//!
//! Opening a session closes every other open session of the same gateway
//! name: a restarted gateway makes its previous incarnation's submissions
//! stale. A closed session is kept (as a bounded number of tombstones)
//! rather than forgotten, so that a late copy of its open cannot reopen it.
//!
//! A session opened with a grace time (`cancel_grace_ms`) is alive while
//! its gateway keeps writing: each of its sequenced entries, a keep-alive
//! among them, sets its last-alive time to the entry's timestamp (the
//! log's time, never a clock). Once an entry is applied with a time past
//! last-alive plus the grace, the session expires: it is closed, and the
//! accounts its gateway's client connections protected
//! (`LogEntry::SessionProtect`, cancel-on-disconnect) have their orders
//! cancelled by the state, as if their connections had dropped. A later
//! open of the same gateway name does the same at once for the sessions
//! it closes (see [`liveness`]). A gateway still running when its session
//! expired (cut off past its grace) sees it in the log and opens a new
//! one (the mirror's `renew`).
//!
//! The table is part of the replicated state; it depends on the session
//! entries alone, so `exchange log dump --core-only` replays it to print
//! exactly the commands that were applied.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::limits::{
    MAX_CLOSED_SESSIONS, MAX_GATEWAY_NAME_LEN, MAX_OPEN_SESSIONS, MAX_PROTECTED_ACCOUNTS,
};

#[path = "sessions_liveness.rs"]
pub mod liveness;
pub use liveness::Expired;

/// One session of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub gateway: String,
    /// The sequence number of its last applied command; 0 before any.
    pub last_seq: u64,
    /// Set when a later open of its gateway closed it: the table's closure
    /// count then, which orders the tombstones for eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<u64>,
    /// How long the session may be silent before it expires, in ms; none
    /// for a session that never expires (opened before keep-alives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_ms: Option<u64>,
    /// The time of its last entry (its open, then its sequenced entries),
    /// in the log's nanoseconds; only kept for a session with a grace.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub last_alive: u64,
    /// The accounts its client connections protect, with how many
    /// connections protect each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protected: BTreeMap<u64, u32>,
    /// Orders its gateway's incarnations (see [`Sessions::open_at`]);
    /// none for a session opened without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<u64>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Why a session entry changed nothing. Every replica decides alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionRefusal {
    /// The sequence number is not above the session's last applied one:
    /// a re-submitted copy of a command already applied (or refused).
    #[error("sequence number already seen (the session's last is {last_seq})")]
    Duplicate { last_seq: u64 },
    #[error("no session has this id")]
    UnknownSession,
    /// A later open of the same gateway name closed it.
    #[error("the session was closed by a later open of its gateway")]
    ClosedSession,
    #[error("too many open sessions")]
    TableFull,
    /// The id is another gateway's session (two gateways drew the same
    /// random id).
    #[error("the session id belongs to another gateway")]
    IdTaken,
    #[error("the gateway name is empty or longer than {MAX_GATEWAY_NAME_LEN} bytes")]
    GatewayName,
    #[error("the session protects {MAX_PROTECTED_ACCOUNTS} accounts already")]
    ProtectFull,
    /// A session entry (a keep-alive, a protection) outside a sequenced
    /// entry: it names no session.
    #[error("the entry belongs inside a sequenced entry")]
    NotSequenced,
    /// A later incarnation of the same gateway opened a session first:
    /// this open is a dead process's, arriving late.
    #[error("a later incarnation of the gateway has opened a session")]
    Superseded,
}

impl SessionRefusal {
    /// `Applied::command` for a sequenced entry refused for this reason.
    pub fn sequenced_command(self) -> &'static str {
        match self {
            SessionRefusal::Duplicate { .. } => "duplicate",
            _ => "stale_session",
        }
    }
}

/// The session table: ordered maps only, so that serialising it (the
/// snapshot, the state hash) and scanning it are the same on every node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sessions {
    sessions: BTreeMap<u64, Session>,
    /// Opens that closed sessions so far.
    #[serde(default)]
    closures: u64,
}

impl Sessions {
    /// Nothing was ever opened: the snapshot leaves the table out, so the
    /// state hash of a log without sessions is what it was before them.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty() && self.closures == 0
    }

    pub fn get(&self, session: u64) -> Option<&Session> {
        self.sessions.get(&session)
    }

    /// The last applied sequence number of an open session.
    pub fn last_seq(&self, session: u64) -> Option<u64> {
        self.sessions
            .get(&session)
            .filter(|s| s.closed.is_none())
            .map(|s| s.last_seq)
    }

    /// Whether a session of `gateway` is open. Scans the table: asked
    /// only when a gateway's session closed.
    pub fn gateway_open(&self, gateway: &str) -> bool {
        self.sessions
            .values()
            .any(|s| s.closed.is_none() && s.gateway == gateway)
    }

    pub fn open_count(&self) -> usize {
        self.sessions
            .values()
            .filter(|s| s.closed.is_none())
            .count()
    }

    /// Opens `session` for `gateway`, closing the gateway's other open
    /// sessions. Opening a session that is open already is a re-submission
    /// and changes nothing. Scans the table: opens are rare. (A session
    /// without a grace: what the tests of the table alone need.)
    pub fn open(&mut self, session: u64, gateway: &str) -> Result<(), SessionRefusal> {
        self.open_at(session, gateway, 0, None, None).map(|_| ())
    }

    /// [`Sessions::open`] at the log's time `ts`, with the session's grace
    /// time; returns the accounts the sessions it closed protected, whose
    /// orders are to be cancelled (their gateway is gone).
    ///
    /// `incarnation` orders a gateway's opens: a process that crashed with
    /// its open still on the way could otherwise see it arrive after its
    /// successor's, open again and close the successor's session, and its
    /// own late commands would then be applied. An open below an
    /// incarnation the gateway's sessions (open or remembered closed)
    /// already carry is refused and changes nothing. Opens without one (as
    /// logged before incarnations) are never refused for it.
    pub fn open_at(
        &mut self,
        session: u64,
        gateway: &str,
        ts: u64,
        grace_ms: Option<u64>,
        incarnation: Option<u64>,
    ) -> Result<Expired, SessionRefusal> {
        if gateway.is_empty() || gateway.len() > MAX_GATEWAY_NAME_LEN {
            return Err(SessionRefusal::GatewayName);
        }
        if let Some(existing) = self.sessions.get(&session) {
            return if existing.gateway != gateway {
                Err(SessionRefusal::IdTaken)
            } else if existing.closed.is_some() {
                Err(SessionRefusal::ClosedSession)
            } else {
                Ok(Expired::new())
            };
        }
        if let Some(incarnation) = incarnation {
            let later = self
                .sessions
                .values()
                .any(|s| s.gateway == gateway && s.incarnation.is_some_and(|i| i > incarnation));
            if later {
                return Err(SessionRefusal::Superseded);
            }
        }
        let open = self.sessions.values().filter(|s| s.closed.is_none());
        let (mut all, mut same) = (0, 0);
        for s in open {
            all += 1;
            same += usize::from(s.gateway == gateway);
        }
        // Refused before anything changes: the gateway's old session stays.
        if all - same >= MAX_OPEN_SESSIONS {
            return Err(SessionRefusal::TableFull);
        }
        let mut orphaned = Expired::new();
        if same > 0 {
            let closure = self.closures;
            self.closures += 1;
            for s in self.sessions.values_mut() {
                if s.closed.is_none() && s.gateway == gateway {
                    s.closed = Some(closure);
                    orphaned.extend(std::mem::take(&mut s.protected).into_keys());
                }
            }
            self.evict_tombstones();
        }
        self.sessions.insert(
            session,
            Session {
                gateway: gateway.to_string(),
                last_seq: 0,
                closed: None,
                grace_ms,
                last_alive: if grace_ms.is_some() { ts } else { 0 },
                protected: BTreeMap::new(),
                incarnation,
            },
        );
        Ok(orphaned)
    }

    /// Admits sequence number `seq` of `session`: it becomes the session's
    /// last, and the command is to be applied.
    pub fn admit(&mut self, session: u64, seq: u64) -> Result<(), SessionRefusal> {
        let Some(entry) = self.sessions.get_mut(&session) else {
            return Err(SessionRefusal::UnknownSession);
        };
        if entry.closed.is_some() {
            return Err(SessionRefusal::ClosedSession);
        }
        if seq <= entry.last_seq {
            return Err(SessionRefusal::Duplicate {
                last_seq: entry.last_seq,
            });
        }
        entry.last_seq = seq;
        Ok(())
    }

    /// Forgets the oldest closed sessions beyond the bound (ties by id).
    fn evict_tombstones(&mut self) {
        let mut closed: Vec<(u64, u64)> = self
            .sessions
            .iter()
            .filter_map(|(id, s)| s.closed.map(|at| (at, *id)))
            .collect();
        if closed.len() <= MAX_CLOSED_SESSIONS {
            return;
        }
        closed.sort_unstable();
        for (_, id) in &closed[..closed.len() - MAX_CLOSED_SESSIONS] {
            self.sessions.remove(id);
        }
    }
}
