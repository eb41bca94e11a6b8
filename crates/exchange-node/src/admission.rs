//! Which of a log's core commands were applied, without the engine: the
//! client sessions and the replay guard decide whether a wrapped command
//! is applied, and they depend on the wrapping entries alone. `exchange
//! log dump --core-only` replays them to print exactly the commands that
//! were applied, which `exchange replay` then reads: among them the
//! mass cancels the state issues for expired sessions' protected accounts.

use exchange_types::{Command, MassCancel, Stamped};

use crate::entry::LogEntry;
use crate::fix_links::FixLinks;
use crate::replay_guard::{ReplayGuard, NANOS_PER_MS};
use crate::sessions::liveness::deadline;
use crate::sessions::{Expired, Sessions};

/// The sessions and the guard of a log read from its start, advanced by
/// its entries as the state advances them ([`crate::state::ServerState`]).
#[derive(Default)]
pub struct Admission {
    sessions: Sessions,
    guard: ReplayGuard,
    fix_links: FixLinks,
    /// As the state's: no session expires before an entry later than it.
    expiry_due: u64,
}

impl Admission {
    pub fn new() -> Self {
        Admission::default()
    }

    /// Every core command `entry` applies, in order: the mass cancels the
    /// state issues for client sessions it finds expired (or, for an open,
    /// closed), then the entry's own command, if any. The next entry of the
    /// log each time.
    pub fn core_commands(&mut self, entry: &LogEntry) -> Vec<Stamped> {
        let ts = entry.ts();
        let mut commands = Vec::new();
        if ts > self.expiry_due {
            let (expired, next) = self.sessions.expire(ts);
            self.expiry_due = next;
            push_cancels(&mut commands, ts, &expired);
        }
        if let LogEntry::OpenSession {
            session,
            gateway,
            cancel_grace_ms,
            incarnation,
            ..
        } = entry
        {
            if let Ok(orphaned) =
                self.sessions
                    .open_at(*session, gateway, ts, *cancel_grace_ms, *incarnation)
            {
                if let Some(grace_ms) = cancel_grace_ms {
                    self.expiry_due = self.expiry_due.min(deadline(ts, *grace_ms));
                }
                push_cancels(&mut commands, ts, &orphaned);
            }
            return commands;
        }
        commands.extend(self.core_command(entry).cloned());
        commands
    }

    /// The core command `entry` applies, if it applies one; the next
    /// entry of the log each time. Sessions opened here never expire:
    /// [`Admission::core_commands`] reads a log with expiring sessions.
    pub fn core_command<'a>(&mut self, entry: &'a LogEntry) -> Option<&'a Stamped> {
        match entry {
            LogEntry::Core(stamped) => Some(stamped),
            LogEntry::OpenSession {
                session,
                gateway,
                incarnation,
                ..
            } => {
                // Refused or not, it applies no command.
                let _ = self
                    .sessions
                    .open_at(*session, gateway, 0, None, *incarnation);
                None
            }
            LogEntry::Sequenced {
                session,
                seq,
                entry,
            } => {
                self.sessions.touch(*session, entry.ts());
                self.sessions.admit(*session, *seq).ok()?;
                if let LogEntry::SessionProtect { account, on, .. } = &**entry {
                    let _ = self.sessions.protect(*session, *account, *on);
                    return None;
                }
                self.core_command(entry)
            }
            LogEntry::Guarded {
                fingerprint,
                forget_after_ms,
                entry,
            } => {
                let ts_ms = entry.ts() / NANOS_PER_MS;
                self.guard
                    .admit(*fingerprint, *forget_after_ms, ts_ms)
                    .ok()?;
                self.core_command(entry)
            }
            LogEntry::FixSequenced { link, seq, entry } => {
                if self.fix_links.admit(*link, *seq).refused() {
                    return None;
                }
                self.core_command(entry)
            }
            LogEntry::FixLogon {
                link,
                owner,
                reset,
                reserve,
                ..
            } => {
                // Only the inbound numbers decide admission; the index is
                // not needed for them.
                self.fix_links.logon(0, *link, *owner, *reset, *reserve);
                None
            }
            _ => None,
        }
    }
}

/// The state's mass cancels of `accounts` at `ts`, in its order.
fn push_cancels(commands: &mut Vec<Stamped>, ts: u64, accounts: &Expired) {
    commands.extend(accounts.iter().map(|account| Stamped {
        ts,
        command: Command::MassCancel(MassCancel {
            account: *account,
            symbol: None,
        }),
    }));
}
