//! The runner's part in a session's continuity across the processes that
//! serve FIX ([`crate::continuity`]): its Logon goes through the log
//! before the session layer sees it, its commands carry their MsgSeqNums
//! into the log, and it reserves outbound numbers ahead of sending them.

use std::sync::Arc;

use exchange_node::fix_links::FixApplied;
use exchange_node::{Applied, LogEntry};
use tokio::sync::oneshot;
use tokio::sync::oneshot::error::TryRecvError;

use super::Runner;
use crate::continuity::{self, Plan, RESERVE_BLOCK};
use crate::message::Message;
use crate::session::Action;
use crate::store::Store;
use crate::tags;
use crate::time::now_ns;

/// A Logon waiting for its logon entry to be applied.
pub(super) struct LoggingOn {
    logon: Message,
    reset: bool,
    /// Until the log has answered: then the entry's broadcast, in log
    /// order, finishes the logon.
    reply: Option<oneshot::Receiver<Arc<Applied>>>,
}

impl Runner {
    /// A connection's first message: a Logon with the session's
    /// credentials is written to the log first, and handled when the log
    /// applies it. Given back when it is not (anything else, or a log that
    /// takes nothing here: the session then goes on from its own store).
    pub(super) fn log_logon(&mut self, first: Message) -> Option<Message> {
        // A Logon the session would refuse anyway takes nothing from the
        // process holding the session.
        if !self.session.logon_acceptable(now_ns(), &first) {
            return Some(first);
        }
        let reset = first.flag(tags::RESET_SEQ_NUM_FLAG) && first.seq_num() == Some(1);
        let entry = LogEntry::FixLogon {
            ts: 0,
            link: self.link,
            owner: self.owner,
            reset,
            reserve: RESERVE_BLOCK + self.kept(),
        };
        match self.handle.enqueue_entry(entry) {
            Ok(reply) => {
                self.logging_on = Some(LoggingOn {
                    logon: first,
                    reset,
                    reply: Some(reply),
                });
                None
            }
            Err(error) => {
                tracing::warn!(
                    session = %self.name,
                    %error,
                    "FIX logon not recorded in the log; the session goes on from this \
                     process's store"
                );
                Some(first)
            }
        }
    }

    /// The logon entry will not be applied (the log refused or lost it):
    /// the Logon is handled from this process's store alone.
    pub(super) fn check_logon(&mut self, actions: &mut Vec<Action>) {
        let Some(reply) = self.logging_on.as_mut().and_then(|l| l.reply.as_mut()) else {
            return;
        };
        let failed = match reply.try_recv() {
            Ok(applied) => {
                let failed = !matches!(applied.fix, Some(FixApplied::Logon { .. }));
                if let Some(logging) = self.logging_on.as_mut() {
                    logging.reply = None;
                }
                failed
            }
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Closed) => true,
        };
        if failed {
            self.logon_unrecorded(actions);
        }
    }

    pub(super) fn logon_unrecorded(&mut self, actions: &mut Vec<Action>) {
        if let Some(logging) = self.logging_on.take() {
            tracing::warn!(
                session = %self.name,
                "FIX logon not applied by the log; the session goes on from this process's store"
            );
            self.session.on_message(now_ns(), logging.logon, actions);
            self.resume_reading = true;
        }
    }

    /// A FIX entry of this session applied (in log order): a logon, here
    /// or elsewhere, or a reservation.
    pub(super) fn on_fix(&mut self, fix: &FixApplied, actions: &mut Vec<Action>) {
        let was_holding = self.hold.holding;
        let holding = self.hold.on_applied(self.owner, fix);
        let FixApplied::Logon { owner, .. } = fix else {
            return;
        };
        // What came before a logon is the new holder's past.
        let next = self.session.store().next_sender_seq();
        let past = std::mem::replace(&mut self.since, next);
        if *owner == self.owner {
            if let Some(logging) = self.logging_on.take() {
                self.finish_logon(logging, fix, past, actions);
                self.since = self.session.store().next_sender_seq();
            }
        } else if was_holding && !holding && self.session.is_logged_on() {
            // A connection still logging on here waits for its own logon
            // entry, which comes later in the log and takes the session
            // back.
            tracing::info!(session = %self.name, "FIX session logged on at another process");
            let text = "the session logged on at another gateway";
            self.session.logout(now_ns(), text, actions);
        }
    }

    fn finish_logon(
        &mut self,
        logging: LoggingOn,
        fix: &FixApplied,
        past: u64,
        actions: &mut Vec<Action>,
    ) {
        let local_target = self.session.store().next_target_seq();
        match continuity::plan(self.owner, local_target, fix, logging.reset) {
            Some(Plan::Keep { next_target }) => self.session.expect_at_least(next_target),
            Some(Plan::TakeOver {
                next_target,
                first_redelivered,
            }) => {
                let kept = self.session.stored_from(past);
                tracing::info!(
                    session = %self.name,
                    next_target,
                    first_redelivered,
                    redelivered = kept.len(),
                    "FIX session taken over from another process"
                );
                self.session.take_over(next_target, first_redelivered, kept);
            }
            Some(Plan::Reset) | None => {}
        }
        self.session.on_message(now_ns(), logging.logon, actions);
        self.resume_reading = true;
    }

    /// The counterparty reset both directions without logging out: the
    /// log learns it before any command numbered from 1 again, which it
    /// would otherwise refuse as a copy.
    pub(super) fn record_reset(&mut self) {
        let entry = LogEntry::FixLogon {
            ts: 0,
            link: self.link,
            owner: self.owner,
            reset: true,
            reserve: RESERVE_BLOCK,
        };
        if let Err(error) = self.handle.submit_detached(entry) {
            tracing::warn!(
                session = %self.name,
                %error,
                "FIX sequence reset not recorded in the log"
            );
        }
    }

    /// How many reports this process stored since the session's latest
    /// logon: what it would send again if it took the session over.
    fn kept(&self) -> u64 {
        self.session
            .store()
            .next_sender_seq()
            .saturating_sub(self.since)
    }

    /// Reserves more outbound numbers when this process holds the session
    /// and its reservation runs low.
    pub(super) fn reserve_if_low(&mut self) {
        if !self.hold.wants_more(self.session.store().next_sender_seq()) {
            return;
        }
        let entry = LogEntry::FixReserve {
            ts: 0,
            link: self.link,
            owner: self.owner,
            reserve: RESERVE_BLOCK,
        };
        match self.handle.submit_detached(entry) {
            Ok(()) => self.hold.reserving = true,
            Err(error) => {
                // Said once: this process reserves again after its next
                // logon is recorded.
                self.hold.holding = false;
                tracing::warn!(
                    session = %self.name,
                    %error,
                    "FIX outbound numbers could not be reserved"
                );
            }
        }
    }

    /// `entry`, a command of the counterparty's message numbered `seq`,
    /// carried with its number.
    pub(super) fn numbered(&self, seq: Option<u64>, entry: LogEntry) -> LogEntry {
        match seq {
            Some(seq) => LogEntry::FixSequenced {
                link: self.link,
                seq,
                entry: Box::new(entry),
            },
            None => entry,
        }
    }
}
