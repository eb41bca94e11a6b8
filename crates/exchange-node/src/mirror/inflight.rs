//! A gateway's commands between its ingress and the committed log: sent
//! (or waiting to be), not yet seen committed.
//!
//! Invariant: `pending` holds, in sequence order, every command of this
//! session the forwarder took and the follower has not yet seen in the
//! log; each one's reply is answered exactly once, by the follower when it
//! sees it applied, or dropped (`unavailable` to the waiter) when the log
//! shows it never will be.

use std::collections::BTreeMap;

use exchange_types::AccountId;

use crate::entry::LogEntry;
use crate::pipeline::Reply;

pub(crate) struct InFlight {
    pub(crate) session: u64,
    /// The session's opening, until the log shows it.
    pub(crate) opening: Option<LogEntry>,
    next_seq: u64,
    pending: BTreeMap<u64, Pending>,
    gateway: String,
    cancel_grace_ms: Option<u64>,
    /// The accounts the gateway's client connections protect, with how
    /// many connections protect each, as the gateway registered them: what
    /// a new session registers again.
    protected: BTreeMap<AccountId, u32>,
}

pub(crate) struct Pending {
    /// The `Sequenced` entry as sent, to send again after a leader change.
    pub(crate) entry: LogEntry,
    pub(crate) reply: Option<Reply>,
}

impl InFlight {
    /// A session's first state; `incarnation` must exceed every earlier
    /// session's of this gateway name (see [`super::new_incarnation`]).
    pub(crate) fn new(
        session: u64,
        gateway: &str,
        cancel_grace_ms: Option<u64>,
        incarnation: u64,
    ) -> InFlight {
        InFlight {
            session,
            opening: Some(LogEntry::OpenSession {
                ts: 0,
                session,
                gateway: gateway.to_string(),
                cancel_grace_ms,
                incarnation: Some(incarnation),
            }),
            next_seq: 1,
            pending: BTreeMap::new(),
            gateway: gateway.to_string(),
            cancel_grace_ms,
            protected: BTreeMap::new(),
        }
    }

    /// Continues in a new session, `session`, after the log showed the
    /// current one closed: none of its commands still pending was applied
    /// nor ever will be. Returns their replies; the new session opens
    /// first, then registers the protected accounts again (their client
    /// connections are still open).
    pub(crate) fn reopen(&mut self, session: u64, incarnation: u64) -> Vec<Reply> {
        let gateway = std::mem::take(&mut self.gateway);
        let grace = self.cancel_grace_ms;
        let protected = std::mem::take(&mut self.protected);
        let fresh = InFlight::new(session, &gateway, grace, incarnation);
        let old = std::mem::replace(self, fresh);
        for (account, connections) in protected {
            for _ in 0..connections {
                self.take(
                    LogEntry::SessionProtect {
                        ts: 0,
                        account,
                        on: true,
                    },
                    None,
                );
            }
        }
        old.pending.into_values().filter_map(|p| p.reply).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Wraps `entry` in the session's next sequence number and keeps it
    /// with its reply; returns the entry to send.
    pub(crate) fn take(&mut self, entry: LogEntry, reply: Option<Reply>) -> LogEntry {
        if let LogEntry::SessionProtect { account, on, .. } = &entry {
            self.count_protection(*account, *on);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let sequenced = LogEntry::Sequenced {
            session: self.session,
            seq,
            entry: Box::new(entry),
        };
        self.pending.insert(
            seq,
            Pending {
                entry: sequenced.clone(),
                reply,
            },
        );
        sequenced
    }

    /// Counts connections as the state does ([`crate::sessions`]).
    fn count_protection(&mut self, account: AccountId, on: bool) {
        match (self.protected.get_mut(&account), on) {
            (Some(count), true) => *count = count.saturating_add(1),
            (None, true) => {
                self.protected.insert(account, 1);
            }
            (Some(count), false) if *count > 1 => *count -= 1,
            (Some(_), false) => {
                self.protected.remove(&account);
            }
            (None, false) => {}
        }
    }

    /// Everything to send again to a new leader, in order.
    pub(crate) fn resend(&self) -> Vec<LogEntry> {
        self.opening
            .iter()
            .cloned()
            .chain(self.pending.values().map(|p| p.entry.clone()))
            .collect()
    }

    /// The leader refused these before its log: their waiters hear
    /// `unavailable`.
    pub(crate) fn refuse(&mut self, seqs: &[u64]) {
        for seq in seqs {
            self.pending.remove(seq);
        }
    }

    /// The reply for a committed entry, if it is one of this session's.
    /// Commands of the session before it that the log skipped never will
    /// be applied (a deposed leader dropped them while a later one got
    /// through): their waiters hear `unavailable`.
    pub(crate) fn committed(&mut self, entry: &LogEntry) -> Option<Reply> {
        match entry {
            // Before the session's open is in the log, no command of it
            // can be applied (the table refuses it, `unknown_session`),
            // and that is no answer: a frame sent after the open can reach
            // a new leader before it when the open's frame was refused by
            // the old one. The command stays pending, to be sent again
            // after the open.
            LogEntry::Sequenced { session, .. }
                if *session == self.session && self.opening.is_some() =>
            {
                None
            }
            LogEntry::Sequenced { session, seq, .. } if *session == self.session => {
                let later = self.pending.split_off(seq);
                self.pending = later;
                self.pending.remove(seq).and_then(|p| p.reply)
            }
            LogEntry::OpenSession { session, .. } if *session == self.session => {
                self.opening = None;
                None
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "inflight_prop_tests.rs"]
mod prop_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    fn account(ts: u64) -> LogEntry {
        LogEntry::CreateAccount {
            ts,
            api_key: format!("k{ts}"),
            legacy_secret: None,
        }
    }

    #[test]
    fn each_reply_is_answered_once_and_skipped_ones_are_dropped() {
        let mut inflight = InFlight::new(9, "gw-a", Some(1_000), 1);
        let mut waiters = Vec::new();
        let mut sent = Vec::new();
        for ts in 1..=4 {
            let (tx, rx) = oneshot::channel();
            sent.push(inflight.take(account(ts), Reply::new(tx)));
            waiters.push(rx);
        }
        assert_eq!(inflight.resend().len(), 5, "the opening and four commands");
        assert!(inflight
            .committed(&inflight.opening.clone().expect("open"))
            .is_none());
        assert_eq!(inflight.resend().len(), 4);
        // The log shows seq 2 but never seq 1: 1 is dropped, 2 answered.
        assert!(inflight.committed(&sent[1]).is_some());
        assert!(waiters[0].try_recv().is_err());
        assert_eq!(inflight.len(), 2);
        // A duplicate of 2 further on finds nothing to answer.
        assert!(inflight.committed(&sent[1]).is_none());
        // Another session's entry is not ours.
        let other = LogEntry::Sequenced {
            session: 10,
            seq: 3,
            entry: Box::new(account(3)),
        };
        assert!(inflight.committed(&other).is_none());
        assert_eq!(inflight.len(), 2);
        inflight.refuse(&[3]);
        assert_eq!(inflight.resend(), vec![sent[3].clone()]);
    }

    /// A command whose frame reached a new leader before its session's
    /// open (the open's frame was refused by the old one) is refused as
    /// of an unknown session; that is no answer, since it is sent again
    /// after the open and applied then.
    #[test]
    fn a_command_in_the_log_before_its_sessions_open_stays_pending() {
        let mut inflight = InFlight::new(9, "gw-a", Some(1_000), 1);
        let (tx, mut waiter) = oneshot::channel();
        let sent = inflight.take(account(1), Reply::new(tx));
        let open = inflight.opening.clone().expect("open");
        assert!(inflight.committed(&sent).is_none());
        assert!(waiter.try_recv().is_err(), "not answered");
        assert_eq!(inflight.resend(), vec![open.clone(), sent.clone()]);
        assert!(inflight.committed(&open).is_none());
        assert!(
            inflight.committed(&sent).is_some(),
            "the copy after the open"
        );
        assert_eq!(inflight.len(), 0);
    }

    fn protect(account: u64, on: bool) -> LogEntry {
        LogEntry::SessionProtect { ts: 0, account, on }
    }

    #[test]
    fn a_new_session_opens_then_registers_what_connections_still_protect() {
        let mut inflight = InFlight::new(9, "gw-a", Some(2_000), 1);
        let opening = inflight.opening.clone().expect("open");
        inflight.committed(&opening);
        let (applied_tx, _applied_rx) = oneshot::channel();
        let first = inflight.take(account(1), Reply::new(applied_tx));
        for entry in [protect(5, true), protect(5, true), protect(6, true)] {
            inflight.take(entry, None);
        }
        inflight.take(protect(5, false), None);
        inflight.take(protect(7, false), None);
        let (lost_tx, mut lost_rx) = oneshot::channel();
        let unapplied = inflight.take(account(2), Reply::new(lost_tx));
        assert!(
            inflight.committed(&first).is_some(),
            "in the log before the closure: the core thread answers it"
        );

        let replies = inflight.reopen(10, 2);
        assert_eq!(replies.len(), 1, "only the command never seen in the log");
        for reply in replies {
            reply
                .tx
                .send(crate::mirror::renew::expired())
                .expect("waiter");
        }
        let heard = lost_rx
            .try_recv()
            .expect("the unapplied command is answered");
        assert!(heard.refused_unapplied());

        let open = LogEntry::OpenSession {
            ts: 0,
            session: 10,
            gateway: "gw-a".into(),
            cancel_grace_ms: Some(2_000),
            incarnation: Some(2),
        };
        let registered = |account: u64, seq: u64| LogEntry::Sequenced {
            session: 10,
            seq,
            entry: Box::new(protect(account, true)),
        };
        assert_eq!(
            inflight.resend(),
            vec![open, registered(5, 1), registered(6, 2)],
            "one connection still protects 5, one 6; 7 was never protected"
        );
        assert!(
            inflight.committed(&unapplied).is_none(),
            "a late copy of the closed session's command answers nobody"
        );
        assert_eq!(inflight.len(), 2);
    }
}
