//! FIX sessions' numbers in the replicated state, so that a counterparty
//! can log on at any process that serves FIX and continue where it was
//! (docs/fix.md, "Continuity across gateways").
//!
//! A FIX session (a SenderCompID/TargetCompID pair, named here by a `u64`
//! link id the FIX gateway derives from the pair) has three facts the
//! whole venue must agree on:
//! - the counterparty's last MsgSeqNum whose command the venue applied:
//!   each order-entry command a FIX session sends is carried in
//!   `LogEntry::FixSequenced` with its MsgSeqNum, applied iff that number
//!   is above the last one (a copy sent again, from the same process or
//!   another, is refused: nothing is applied twice);
//! - a bound on the outbound MsgSeqNums used: the process serving the
//!   session reserves numbers through the log (`LogEntry::FixLogon`, then
//!   `LogEntry::FixReserve`) before sending them, so a process taking the
//!   session over starts above every number its predecessor could have
//!   sent;
//! - which process (its store's `owner` id) holds the session, and since
//!   which log index (its last logon): the outbound messages of log
//!   events after that index are the ones a process taking over
//!   redelivers.
//!
//! Every replica and gateway applies the same entries, so each derives
//! the same numbers. The table is bounded by the number of configured
//! sessions (a link is only written by a process that serves it), and
//! held to [`MAX_FIX_LINKS`] all the same.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::limits::MAX_FIX_LINKS;

/// One FIX session's replicated numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixLink {
    /// The counterparty's last MsgSeqNum the venue applied a command of
    /// (its Logon's, 1, after a reset).
    pub last_in: u64,
    /// Outbound MsgSeqNums below this may have been sent: the first one
    /// not reserved yet.
    pub out_reserved: u64,
    /// The store id of the process that logged on last.
    pub owner: u64,
    /// The log index of that logon.
    pub logon_index: u64,
}

/// What a FIX entry did, for the process that wrote it and for every
/// other process that serves the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FixApplied {
    /// A logon: the session's numbers before it, and the outbound numbers
    /// `out_from..out_to` reserved for the new holder.
    Logon {
        link: u64,
        owner: u64,
        /// The holder before this logon (0: none yet).
        previous_owner: u64,
        last_in: u64,
        out_from: u64,
        out_to: u64,
    },
    /// More outbound numbers for the holder: up to `out_to` (excluded).
    Reserved { link: u64, owner: u64, out_to: u64 },
    /// A command the session's holder sent, with its MsgSeqNum `seq`.
    Sequenced { link: u64, seq: u64 },
    /// A command whose MsgSeqNum is not above the last applied one: a
    /// copy, not applied again.
    Duplicate { link: u64, seq: u64, last_in: u64 },
    /// The table is full: a new link's entry changed nothing.
    Full { link: u64 },
}

impl FixApplied {
    pub fn link(&self) -> u64 {
        match self {
            FixApplied::Logon { link, .. }
            | FixApplied::Reserved { link, .. }
            | FixApplied::Sequenced { link, .. }
            | FixApplied::Duplicate { link, .. }
            | FixApplied::Full { link } => *link,
        }
    }

    /// Nothing of the entry was applied.
    pub fn refused(&self) -> bool {
        matches!(self, FixApplied::Duplicate { .. } | FixApplied::Full { .. })
    }
}

/// Every FIX session's numbers, by link id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixLinks {
    links: BTreeMap<u64, FixLink>,
}

impl FixLinks {
    /// Nothing was ever written: the snapshot leaves the table out, so a
    /// state without FIX hashes as it did before the table.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    pub fn get(&self, link: u64) -> Option<&FixLink> {
        self.links.get(&link)
    }

    fn entry(&mut self, link: u64) -> Option<&mut FixLink> {
        if !self.links.contains_key(&link) && self.links.len() >= MAX_FIX_LINKS {
            return None;
        }
        Some(self.links.entry(link).or_default())
    }

    /// A logon of `link` by `owner` at log index `index`; `reset`: it
    /// carried ResetSeqNumFlag, so both directions start again at 1 (the
    /// Logon is the counterparty's 1, the answer the first reserved
    /// number, 1).
    pub fn logon(
        &mut self,
        index: u64,
        link: u64,
        owner: u64,
        reset: bool,
        reserve: u64,
    ) -> FixApplied {
        let Some(entry) = self.entry(link) else {
            return FixApplied::Full { link };
        };
        if reset {
            entry.last_in = 1;
            entry.out_reserved = 1;
        }
        let previous_owner = entry.owner;
        let out_from = entry.out_reserved.max(1);
        let out_to = out_from.saturating_add(reserve);
        entry.out_reserved = out_to;
        entry.owner = owner;
        entry.logon_index = index;
        FixApplied::Logon {
            link,
            owner,
            previous_owner,
            last_in: entry.last_in,
            out_from,
            out_to,
        }
    }

    /// `reserve` more outbound numbers for `owner`, which must hold the
    /// link (a late reservation of a process that lost it reserves
    /// nothing, and says so with `out_to` unchanged).
    pub fn reserve(&mut self, link: u64, owner: u64, reserve: u64) -> FixApplied {
        let Some(entry) = self.entry(link) else {
            return FixApplied::Full { link };
        };
        if entry.owner == owner {
            entry.out_reserved = entry.out_reserved.max(1).saturating_add(reserve);
        }
        FixApplied::Reserved {
            link,
            owner: entry.owner,
            out_to: entry.out_reserved,
        }
    }

    /// A command of `link` sent as the counterparty's MsgSeqNum `seq`:
    /// applied iff `seq` is above the last applied one, which it becomes.
    pub fn admit(&mut self, link: u64, seq: u64) -> FixApplied {
        let Some(entry) = self.entry(link) else {
            return FixApplied::Full { link };
        };
        if seq <= entry.last_in {
            return FixApplied::Duplicate {
                link,
                seq,
                last_in: entry.last_in,
            };
        }
        entry.last_in = seq;
        FixApplied::Sequenced { link, seq }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logon_reserves_numbers_above_every_earlier_reservation() {
        let mut links = FixLinks::default();
        let first = links.logon(10, 7, 1, false, 100);
        assert_eq!(
            first,
            FixApplied::Logon {
                link: 7,
                owner: 1,
                previous_owner: 0,
                last_in: 0,
                out_from: 1,
                out_to: 101,
            }
        );
        assert_eq!(
            links.reserve(7, 1, 50),
            FixApplied::Reserved {
                link: 7,
                owner: 1,
                out_to: 151
            }
        );
        assert_eq!(links.admit(7, 5), FixApplied::Sequenced { link: 7, seq: 5 });
        // Another process takes the session over: it starts above all of
        // its predecessor's numbers, and learns where the inbound ones are.
        let second = links.logon(20, 7, 2, false, 100);
        assert_eq!(
            second,
            FixApplied::Logon {
                link: 7,
                owner: 2,
                previous_owner: 1,
                last_in: 5,
                out_from: 151,
                out_to: 251,
            }
        );
        // The old holder's late reservation reserves nothing.
        assert_eq!(
            links.reserve(7, 1, 1_000),
            FixApplied::Reserved {
                link: 7,
                owner: 2,
                out_to: 251
            }
        );
        assert_eq!(links.get(7).map(|l| l.logon_index), Some(20));
    }

    #[test]
    fn a_copy_of_an_applied_message_is_refused_from_anywhere() {
        let mut links = FixLinks::default();
        links.logon(1, 7, 1, false, 10);
        assert!(!links.admit(7, 3).refused());
        assert_eq!(
            links.admit(7, 3),
            FixApplied::Duplicate {
                link: 7,
                seq: 3,
                last_in: 3
            }
        );
        assert!(links.admit(7, 2).refused());
        // Gaps are fine: messages that were no command took their numbers.
        assert!(!links.admit(7, 9).refused());
        // Another link has numbers of its own.
        assert!(!links.admit(8, 3).refused());
    }

    #[test]
    fn a_reset_starts_both_directions_again() {
        let mut links = FixLinks::default();
        links.logon(1, 7, 1, false, 10);
        links.admit(7, 40);
        let reset = links.logon(2, 7, 2, true, 10);
        assert_eq!(
            reset,
            FixApplied::Logon {
                link: 7,
                owner: 2,
                previous_owner: 1,
                last_in: 1,
                out_from: 1,
                out_to: 11,
            }
        );
        assert!(!links.admit(7, 2).refused());
    }

    #[test]
    fn the_table_is_bounded() {
        let mut links = FixLinks::default();
        for link in 0..MAX_FIX_LINKS as u64 {
            assert!(!links.admit(link, 1).refused());
        }
        let full = MAX_FIX_LINKS as u64;
        assert_eq!(links.admit(full, 1), FixApplied::Full { link: full });
        assert_eq!(
            links.logon(1, full, 1, false, 1),
            FixApplied::Full { link: full }
        );
        // Known links go on.
        assert!(!links.admit(0, 2).refused());
    }
}
