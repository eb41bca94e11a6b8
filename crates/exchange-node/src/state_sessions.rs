//! The client-session entries' part of applying the log: opens, sequenced
//! entries, keep-alives and protections, and the expiry of sessions whose
//! gateway fell silent ([`crate::sessions`]).

use exchange_types::{Command, MassCancel, Stamped};

use super::{Applied, ServerState};
use crate::entry::LogEntry;
use crate::fix_links::FixApplied;
use crate::sessions::liveness::deadline;
use crate::sessions::{Expired, SessionRefusal};

impl ServerState {
    pub(super) fn apply_session_entry(
        &mut self,
        index: u64,
        entry: &LogEntry,
        applied: &mut Applied,
    ) {
        match entry {
            LogEntry::OpenSession {
                ts,
                session,
                gateway,
                cancel_grace_ms,
                incarnation,
            } => {
                applied.command = "open_session";
                match self
                    .sessions
                    .open_at(*session, gateway, *ts, *cancel_grace_ms, *incarnation)
                {
                    Ok(orphaned) => {
                        if let Some(grace_ms) = cancel_grace_ms {
                            self.expiry_due = self.expiry_due.min(deadline(*ts, *grace_ms));
                        }
                        // The gateway restarted: its old incarnation's
                        // connections are gone with it.
                        self.cancel_protected(&orphaned, applied);
                    }
                    Err(refusal) => applied.session_refusal = Some(refusal),
                }
            }
            LogEntry::Sequenced {
                session,
                seq,
                entry,
            } => {
                self.sessions.touch(*session, applied.ts);
                match self.sessions.admit(*session, *seq) {
                    Ok(()) => self.apply_admitted(index, *session, entry, applied),
                    Err(refusal) => {
                        applied.command = refusal.sequenced_command();
                        applied.session_refusal = Some(refusal);
                    }
                }
            }
            // Outside a session they name none.
            LogEntry::SessionAlive { .. } => {
                applied.command = "session_alive";
                applied.session_refusal = Some(SessionRefusal::NotSequenced);
            }
            LogEntry::SessionProtect { .. } => {
                applied.command = "session_protect";
                applied.session_refusal = Some(SessionRefusal::NotSequenced);
            }
            other => self.apply_entry(index, other, applied),
        }
    }

    /// A sequenced entry's inner entry, admitted in `session`.
    fn apply_admitted(
        &mut self,
        index: u64,
        session: u64,
        entry: &LogEntry,
        applied: &mut Applied,
    ) {
        match entry {
            // Its work was done by arriving.
            LogEntry::SessionAlive { .. } => applied.command = "session_alive",
            LogEntry::SessionProtect { account, on, .. } => {
                applied.command = "session_protect";
                applied.actor = Some(*account);
                applied.session_refusal = self.sessions.protect(session, *account, *on).err();
            }
            other => self.apply_entry(index, other, applied),
        }
    }

    /// A FIX session's logon, reservation or command
    /// ([`crate::fix_links`]).
    pub(super) fn apply_fix_entry(&mut self, index: u64, entry: &LogEntry, applied: &mut Applied) {
        let fix = match entry {
            LogEntry::FixLogon {
                link,
                owner,
                reset,
                reserve,
                ..
            } => {
                applied.command = "fix_logon";
                self.fix_links.logon(index, *link, *owner, *reset, *reserve)
            }
            LogEntry::FixReserve {
                link,
                owner,
                reserve,
                ..
            } => {
                applied.command = "fix_reserve";
                self.fix_links.reserve(*link, *owner, *reserve)
            }
            LogEntry::FixSequenced { link, seq, entry } => {
                let fix = self.fix_links.admit(*link, *seq);
                match fix {
                    FixApplied::Duplicate { .. } => applied.command = "fix_duplicate",
                    FixApplied::Full { .. } => applied.command = "fix_links_full",
                    _ => self.apply_entry(index, entry, applied),
                }
                fix
            }
            _ => return,
        };
        applied.fix = Some(fix);
    }

    /// Expires the sessions silent past their grace at the entry's time
    /// and cancels what they protected.
    pub(super) fn expire_sessions(&mut self, applied: &mut Applied) {
        let (expired, next) = self.sessions.expire(applied.ts);
        self.expiry_due = next;
        self.cancel_protected(&expired, applied);
    }

    /// Cancels every order of each account, as the gateway would have when
    /// the client connections dropped: ordinary mass cancels through the
    /// engine, in account order, at the entry's time. Their events come
    /// first in the entry's events.
    fn cancel_protected(&mut self, accounts: &Expired, applied: &mut Applied) {
        if accounts.is_empty() {
            return;
        }
        let before = applied.events.len();
        for account in accounts {
            let stamped = Stamped {
                ts: applied.ts,
                command: Command::MassCancel(MassCancel {
                    account: *account,
                    symbol: None,
                }),
            };
            self.engine.apply(&stamped, &mut applied.events);
        }
        self.market_sequences
            .record(applied.index, &applied.events[before..]);
        applied.expiry_events = applied.events.len();
    }
}
