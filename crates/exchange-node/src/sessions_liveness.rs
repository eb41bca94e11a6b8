//! Sessions that expire: cancel-on-disconnect kept by the cluster when a
//! whole gateway dies.
//!
//! Only the log's time counts: a session's last-alive time is the
//! timestamp of its last entry, and it expires when an entry of any kind
//! is applied with a later time than last-alive plus its grace. The leader
//! writes a `tick` entry periodically, so an entry comes even without
//! traffic; every replica (and every mirror) expires the same sessions at
//! the same entry.

use std::collections::BTreeSet;

use exchange_types::AccountId;

use super::{SessionRefusal, Sessions, MAX_PROTECTED_ACCOUNTS};

/// Accounts whose orders the state cancels, each once, in account order.
pub type Expired = BTreeSet<AccountId>;

const NANOS_PER_MS: u64 = 1_000_000;

/// The last time (in the log's nanoseconds) a session last alive at
/// `last_alive` is still alive.
pub fn deadline(last_alive: u64, grace_ms: u64) -> u64 {
    last_alive.saturating_add(grace_ms.saturating_mul(NANOS_PER_MS))
}

impl Sessions {
    /// An entry of `session` at `ts`: the session was alive then. Every
    /// sequenced entry counts, a duplicate one too (its gateway re-sent
    /// it, so it lives).
    pub fn touch(&mut self, session: u64, ts: u64) {
        if let Some(s) = self.sessions.get_mut(&session) {
            if s.closed.is_none() && s.grace_ms.is_some() {
                s.last_alive = s.last_alive.max(ts);
            }
        }
    }

    /// A client connection of the session's gateway that asked for
    /// cancel-on-disconnect opened (`on`) or closed for `account`.
    /// Connections are counted: the account stays protected while any is
    /// open. Closing one that was not counted changes nothing.
    pub fn protect(
        &mut self,
        session: u64,
        account: AccountId,
        on: bool,
    ) -> Result<(), SessionRefusal> {
        let Some(s) = self.sessions.get_mut(&session) else {
            return Err(SessionRefusal::UnknownSession);
        };
        if s.closed.is_some() {
            return Err(SessionRefusal::ClosedSession);
        }
        let full = s.protected.len() >= MAX_PROTECTED_ACCOUNTS;
        match (s.protected.get_mut(&account), on) {
            (Some(count), true) => *count = count.saturating_add(1),
            (None, true) if full => return Err(SessionRefusal::ProtectFull),
            (None, true) => {
                s.protected.insert(account, 1);
            }
            (Some(count), false) if *count > 1 => *count -= 1,
            (Some(_), false) => {
                s.protected.remove(&account);
            }
            (None, false) => {}
        }
        Ok(())
    }

    /// Closes every open session silent past its grace at `ts`. Returns
    /// the accounts they protected, and the earliest time after which
    /// another session may expire (`u64::MAX`: none can). Scans the table:
    /// the caller only calls it once `ts` passed the time it last returned.
    pub fn expire(&mut self, ts: u64) -> (Expired, u64) {
        let mut expired = Expired::new();
        let mut next = u64::MAX;
        let mut any = false;
        let closure = self.closures;
        for s in self.sessions.values_mut() {
            let (None, Some(grace_ms)) = (s.closed, s.grace_ms) else {
                continue;
            };
            let until = deadline(s.last_alive, grace_ms);
            if ts > until {
                s.closed = Some(closure);
                any = true;
                expired.extend(std::mem::take(&mut s.protected).into_keys());
            } else {
                next = next.min(until);
            }
        }
        if any {
            self.closures += 1;
            self.evict_tombstones();
        }
        (expired, next)
    }
}
