//! A gateway's commands between its ingress and the committed log: sent
//! (or waiting to be), not yet seen committed.
//!
//! Invariant: `pending` holds, in sequence order, every command of this
//! session the forwarder took and the follower has not yet seen in the
//! log; each one's reply is answered exactly once, by the follower when it
//! sees it applied, or dropped (`unavailable` to the waiter) when the log
//! shows it never will be.

use std::collections::BTreeMap;

use crate::entry::LogEntry;
use crate::pipeline::Reply;

pub(crate) struct InFlight {
    pub(crate) session: u64,
    /// The session's opening, until the log shows it.
    pub(crate) opening: Option<LogEntry>,
    next_seq: u64,
    pending: BTreeMap<u64, Pending>,
}

pub(crate) struct Pending {
    /// The `Sequenced` entry as sent, to send again after a leader change.
    pub(crate) entry: LogEntry,
    pub(crate) reply: Option<Reply>,
}

impl InFlight {
    pub(crate) fn new(session: u64, gateway: &str, cancel_grace_ms: Option<u64>) -> InFlight {
        InFlight {
            session,
            opening: Some(LogEntry::OpenSession {
                ts: 0,
                session,
                gateway: gateway.to_string(),
                cancel_grace_ms,
            }),
            next_seq: 1,
            pending: BTreeMap::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Wraps `entry` in the session's next sequence number and keeps it
    /// with its reply; returns the entry to send.
    pub(crate) fn take(&mut self, entry: LogEntry, reply: Option<Reply>) -> LogEntry {
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
        let mut inflight = InFlight::new(9, "gw-a", Some(1_000));
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
}
