//! Answering a ResendRequest: stored application messages go out again
//! with PossDupFlag and their original SendingTime as OrigSendingTime;
//! everything else in the range (admin messages, anything not stored)
//! becomes a SequenceReset in gap-fill mode. The range is charged to the
//! session's message rate first (see `throttle`): a request the rate cannot
//! pay for is refused with a Reject, so that a few bytes cannot make the
//! gateway send the whole store again and again.

use super::{Action, Session};
use crate::message::{Message, Outgoing, Problem};
use crate::store::Store;
use crate::tags::{self, msg, session_reject as reason};
use crate::throttle::Throttle;
use crate::time;

impl<S: Store> Session<S> {
    /// The session with this message rate (by default, none).
    pub fn with_throttle(mut self, throttle: Throttle) -> Session<S> {
        self.throttle = throttle;
        self
    }

    /// The session's message rate, for the application's messages.
    pub fn throttle(&mut self) -> &mut Throttle {
        &mut self.throttle
    }

    fn gap_fill(&mut self, now: u64, seq: u64, new_seq: u64, out: &mut Vec<Action>) {
        let body = Outgoing::new(msg::SEQUENCE_RESET)
            .field(tags::GAP_FILL_FLAG, "Y")
            .field(tags::NEW_SEQ_NO, new_seq);
        let stamp = time::format(now);
        let bytes = self.encode(b"4", seq, now, Some(stamp.as_bytes()), &[], &body.body);
        self.transmit(now, bytes, out);
    }

    /// Resends stored application messages with PossDupFlag; everything
    /// else in the range (admin messages, anything not stored) becomes a
    /// gap fill.
    pub(super) fn answer_resend(&mut self, now: u64, request: &Message, out: &mut Vec<Action>) {
        let begin = request.uint(tags::BEGIN_SEQ_NO).unwrap_or(0);
        let last_sent = self.store.next_sender_seq().saturating_sub(1);
        let end = match request.uint(tags::END_SEQ_NO).unwrap_or(0) {
            0 => last_sent,
            end => end.min(last_sent),
        };
        if begin == 0 || begin > end {
            let problem = Problem::new(
                Some(tags::BEGIN_SEQ_NO),
                reason::VALUE_INCORRECT,
                format!("BeginSeqNo {begin} is outside the messages sent (1 to {last_sent})"),
            );
            return self.reject(now, request, &problem, out);
        }
        let count = end - begin + 1;
        if !self.throttle.take_resend(now, count) {
            // Not served: the counterparty asks again later, as after any
            // rejected ResendRequest.
            tracing::warn!(
                session = %self.settings.their_comp_id,
                begin,
                end,
                "refused a ResendRequest over the session's message rate"
            );
            let text = self.throttle.resend_refusal(count);
            let problem = Problem::new(None, reason::OTHER, text);
            return self.reject(now, request, &problem, out);
        }
        let mut next = begin;
        for (stored_seq, raw) in self.store.load(begin, end) {
            let stored = Message::parse(raw);
            let (Some(msg_type), Some(orig)) = (stored.msg_type(), stored.get(tags::SENDING_TIME))
            else {
                continue;
            };
            if stored_seq > next {
                self.gap_fill(now, next, stored_seq, out);
            }
            let body = body_of(&stored);
            let bytes = self.encode(msg_type, stored_seq, now, Some(orig), &[], &body);
            self.transmit(now, bytes, out);
            next = stored_seq + 1;
        }
        if next <= end {
            self.gap_fill(now, next, end + 1, out);
        }
    }
}

/// The fields of a stored message after its standard header, up to (not
/// including) CheckSum.
fn body_of(message: &Message) -> Vec<u8> {
    let mut body = Vec::with_capacity(message.raw().len());
    for (tag, value) in message.fields() {
        let header = matches!(
            tag,
            tags::BEGIN_STRING
                | tags::BODY_LENGTH
                | tags::MSG_TYPE
                | tags::SENDER_COMP_ID
                | tags::TARGET_COMP_ID
                | tags::MSG_SEQ_NUM
                | tags::SENDING_TIME
                | tags::POSS_DUP_FLAG
                | tags::ORIG_SENDING_TIME
                | tags::CHECK_SUM
        );
        if !header {
            crate::frame::push_field(&mut body, tag, value);
        }
    }
    body
}

impl<S: Store> Session<S> {
    /// The messages this store kept from its number `first` on, as they
    /// were sent (see `continuity`: what a takeover sends again).
    pub fn stored_from(&mut self, first: u64) -> Vec<Vec<u8>> {
        let last = self.store.next_sender_seq().saturating_sub(1);
        let stored = self.store.load(first.max(1), last);
        stored.into_iter().map(|(_, raw)| raw).collect()
    }

    /// Continues a session another process held (see `continuity`): the
    /// counterparty's next MsgSeqNum is `next_target`; our numbers below
    /// `first` may have been used, so the `kept` messages (from
    /// [`Session::stored_from`]) are stored again from `first` on, with
    /// their SendingTime, to be resent with PossDupFlag when asked for, and
    /// sending goes on after them.
    pub fn take_over(&mut self, next_target: u64, first: u64, kept: Vec<Vec<u8>>) {
        self.store.reset();
        self.store.set_next_target_seq(next_target);
        let mut seq = first.max(1);
        for raw in kept {
            let stored = Message::parse(raw);
            let made = stored.get(tags::SENDING_TIME).and_then(time::parse);
            let (Some(msg_type), Some(made)) = (stored.msg_type(), made) else {
                continue;
            };
            let body = body_of(&stored);
            let bytes = self.encode(msg_type, seq, made, None, &[], &body);
            self.store.save(seq, &bytes);
            seq += 1;
        }
        self.store.set_next_sender_seq(seq);
    }

    /// The venue applied the counterparty's messages up to
    /// `next_target - 1`: expect nothing older.
    pub fn expect_at_least(&mut self, next_target: u64) {
        if next_target > self.store.next_target_seq() {
            self.store.set_next_target_seq(next_target);
        }
    }
}
