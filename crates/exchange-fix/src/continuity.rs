//! A session's continuity across the processes that serve FIX (replicas
//! and gateways): a counterparty whose process died logs on at another
//! one and continues its sequence numbers (docs/fix.md, "Continuity
//! across gateways").
//!
//! The numbers every process must agree on live in the replicated state
//! ([`exchange_node::fix_links`]): the counterparty's last MsgSeqNum
//! whose command was applied (each command carries its MsgSeqNum into the
//! log), and a bound on the outbound numbers, which the holder reserves
//! through the log before it sends them. A logon is written to the log,
//! and what it returns sets the numbers of the process it reached:
//! - the process that held the session before (or the first one): its
//!   own store is exact, and is kept (a reconnection, a restart);
//! - another process takes the session over: the next expected MsgSeqNum
//!   is the one after the last applied; outbound, every number below the
//!   reservation may have been sent by the predecessor, so the reports of
//!   the log's events since the predecessor's logon, which this process
//!   made and stored too, are stored again from the reservation on, and
//!   the Logon answer follows them. The
//!   counterparty sees the gap and asks for it: it gets a gap fill up to
//!   the reservation, then those reports with PossDupFlag (each with its
//!   original ExecID, so it drops those it has).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use exchange_node::fix_links::FixApplied;

use crate::store::StoreError;

/// Outbound numbers a holder reserves at a time.
pub const RESERVE_BLOCK: u64 = 1_000;
/// When fewer than this many reserved numbers remain, more are reserved.
pub const RESERVE_LOW: u64 = RESERVE_BLOCK / 2;

/// The link id of a session: FNV-1a over its CompIDs, the same in every
/// process (CompIDs hold no `|`, so the pair is unambiguous).
pub fn link_id(their_comp_id: &str, our_comp_id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = their_comp_id.bytes().chain(std::iter::once(b'|'));
    for byte in bytes.chain(our_comp_id.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// This process's id for a session store (`owner` in its directory),
/// made at random the first time and kept: a restarted process is the
/// same holder, a process on another data directory another one.
pub fn owner_id(dir: &Path) -> Result<u64, StoreError> {
    let path = dir.join("owner");
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            return u64::from_str_radix(text.trim(), 16)
                .ok()
                .filter(|id| *id != 0)
                .ok_or_else(|| StoreError::Corrupt {
                    path: path.clone(),
                    text,
                })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io(error)),
    }
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let id = u64::from_le_bytes(bytes).max(1);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(io)?;
    file.write_all(format!("{id:016x}\n").as_bytes())
        .map_err(io)?;
    Ok(id)
}

/// The numbers a logon applied in the log gives this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// This process held the session last (or nobody did): its store goes
    /// on, expecting at least `next_target`.
    Keep { next_target: u64 },
    /// Another process held it: expect `next_target`; store the kept
    /// reports from `first_redelivered` on, then send from after them.
    TakeOver {
        next_target: u64,
        first_redelivered: u64,
    },
    /// A reset (ResetSeqNumFlag): the session layer starts both directions
    /// at 1.
    Reset,
}

/// The plan for this process (`me`) from its own logon's outcome, given
/// its store's next expected MsgSeqNum.
pub fn plan(me: u64, local_target: u64, logon: &FixApplied, reset: bool) -> Option<Plan> {
    let FixApplied::Logon {
        previous_owner,
        last_in,
        out_from,
        ..
    } = logon
    else {
        return None;
    };
    if reset {
        return Some(Plan::Reset);
    }
    let next_target = last_in + 1;
    Some(if *previous_owner == me || *previous_owner == 0 {
        Plan::Keep {
            next_target: next_target.max(local_target),
        }
    } else {
        Plan::TakeOver {
            next_target,
            first_redelivered: *out_from,
        }
    })
}

/// What this process knows of its hold on the session's outbound numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hold {
    /// Numbers below this are reserved for this process, while it holds.
    pub reserved_to: u64,
    pub holding: bool,
    /// A reservation is on its way through the log.
    pub reserving: bool,
}

impl Hold {
    /// Whether to reserve more before sending `next_sender`.
    pub fn wants_more(&self, next_sender: u64) -> bool {
        self.holding
            && !self.reserving
            && next_sender.saturating_add(RESERVE_LOW) > self.reserved_to
    }

    /// Another process's logon, or a reservation's outcome: returns false
    /// when this process no longer holds the session.
    pub fn on_applied(&mut self, me: u64, fix: &FixApplied) -> bool {
        match *fix {
            FixApplied::Logon { owner, out_to, .. } if owner == me => {
                self.reserved_to = out_to;
                self.holding = true;
            }
            FixApplied::Logon { .. } => self.holding = false,
            FixApplied::Reserved { owner, out_to, .. } => {
                if owner == me {
                    self.reserved_to = out_to;
                    self.reserving = false;
                } else {
                    self.holding = false;
                }
            }
            _ => {}
        }
        self.holding
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logon(owner: u64, previous_owner: u64, last_in: u64, out_from: u64) -> FixApplied {
        FixApplied::Logon {
            link: 1,
            owner,
            previous_owner,
            last_in,
            out_from,
            out_to: out_from + RESERVE_BLOCK,
        }
    }

    #[test]
    fn link_ids_are_stable_and_tell_pairs_apart() {
        // Every process derives the same id: it is part of the log.
        assert_eq!(link_id("BANK1", "EXCHANGE"), link_id("BANK1", "EXCHANGE"));
        assert_eq!(link_id("BANK1", "EXCHANGE"), 0xf538_39b8_885d_dd1b);
        assert_ne!(link_id("BANK1", "EXCHANGE"), link_id("EXCHANGE", "BANK1"));
        assert_ne!(link_id("AB", "C"), link_id("A", "BC"));
    }

    #[test]
    fn the_last_holder_keeps_its_store_and_another_takes_over() {
        // Reconnecting where it was: the store's numbers are exact.
        assert_eq!(
            plan(7, 12, &logon(7, 7, 9, 1_001), false),
            Some(Plan::Keep { next_target: 12 })
        );
        // The first logon ever recorded: the store is all there is.
        assert_eq!(
            plan(7, 3, &logon(7, 0, 0, 1), false),
            Some(Plan::Keep { next_target: 3 })
        );
        // A store behind the log (restored from an older copy) catches up.
        assert_eq!(
            plan(7, 3, &logon(7, 7, 9, 1_001), false),
            Some(Plan::Keep { next_target: 10 })
        );
        // Another process held it: the log's numbers, whatever the store says.
        assert_eq!(
            plan(7, 40, &logon(7, 5, 9, 2_001), false),
            Some(Plan::TakeOver {
                next_target: 10,
                first_redelivered: 2_001
            })
        );
        assert_eq!(plan(7, 40, &logon(7, 5, 9, 2_001), true), Some(Plan::Reset));
        let not_a_logon = FixApplied::Sequenced { link: 1, seq: 3 };
        assert_eq!(plan(7, 40, &not_a_logon, false), None);
    }

    #[test]
    fn a_holder_reserves_ahead_and_learns_when_it_lost_the_session() {
        let mut hold = Hold::default();
        assert!(!hold.wants_more(1), "nothing to reserve before holding");
        assert!(hold.on_applied(7, &logon(7, 0, 0, 1)));
        assert_eq!(hold.reserved_to, 1 + RESERVE_BLOCK);
        assert!(!hold.wants_more(1));
        assert!(hold.wants_more(2 + RESERVE_BLOCK - RESERVE_LOW));
        hold.reserving = true;
        assert!(!hold.wants_more(RESERVE_BLOCK), "one reservation at a time");
        let more = FixApplied::Reserved {
            link: 1,
            owner: 7,
            out_to: 1 + 2 * RESERVE_BLOCK,
        };
        assert!(hold.on_applied(7, &more));
        assert!(!hold.reserving);
        assert!(!hold.wants_more(RESERVE_BLOCK));
        // Another process logged on: this one holds nothing any more.
        assert!(!hold.on_applied(7, &logon(8, 7, 3, 1 + 2 * RESERVE_BLOCK)));
        assert!(!hold.wants_more(RESERVE_BLOCK * 10));
    }

    #[test]
    fn the_owner_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let id = owner_id(dir.path()).expect("owner");
        assert_ne!(id, 0);
        assert_eq!(owner_id(dir.path()).expect("again"), id);
        std::fs::write(dir.path().join("owner"), "zz\n").expect("write");
        assert!(matches!(
            owner_id(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
