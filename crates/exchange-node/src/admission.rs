//! Which of a log's core commands were applied, without the engine: the
//! client sessions and the replay guard decide whether a wrapped command
//! is applied, and they depend on the wrapping entries alone. `exchange
//! log dump --core-only` replays them to print exactly the commands that
//! were applied, which `exchange replay` then reads.

use exchange_types::Stamped;

use crate::entry::LogEntry;
use crate::replay_guard::{ReplayGuard, NANOS_PER_MS};
use crate::sessions::Sessions;

/// The sessions and the guard of a log read from its start, advanced by
/// its entries as the state advances them ([`crate::state::ServerState`]).
#[derive(Default)]
pub struct Admission {
    sessions: Sessions,
    guard: ReplayGuard,
}

impl Admission {
    pub fn new() -> Self {
        Admission::default()
    }

    /// The core command `entry` applies, if it applies one; the next
    /// entry of the log each time.
    pub fn core_command<'a>(&mut self, entry: &'a LogEntry) -> Option<&'a Stamped> {
        match entry {
            LogEntry::Core(stamped) => Some(stamped),
            LogEntry::OpenSession {
                session, gateway, ..
            } => {
                // Refused or not, it applies no command.
                let _ = self.sessions.open(*session, gateway);
                None
            }
            LogEntry::Sequenced {
                session,
                seq,
                entry,
            } => {
                self.sessions.admit(*session, *seq).ok()?;
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
            _ => None,
        }
    }
}
