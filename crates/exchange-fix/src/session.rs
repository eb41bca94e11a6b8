//! The FIX session layer as a pure state machine: a message (or a clock
//! tick) in, messages to send and things to do out. No sockets, no tasks,
//! no clock: the caller passes the time, so every rule here is tested by
//! feeding it messages.
//!
//! It follows FIX 4.4 Volume 2: Logon first (credentials, HeartBtInt,
//! ResetSeqNumFlag), sequence numbers checked on every message (a gap asks
//! for a resend, a number too low without PossDupFlag ends the session),
//! ResendRequest answered from the store with PossDupFlag copies and gap
//! fills in place of admin messages, SequenceReset in both modes,
//! heartbeats and test requests from HeartBtInt, session-level Reject
//! naming the tag, Logout both ways, and a Logout then a disconnect for a
//! message with another BeginString than FIX.4.4.

use crate::frame::{is_fix44, seal, Frame, FrameError, BEGIN_STRING};
use crate::message::{answer_routing, Message, Outgoing, Problem};
use crate::spec;
use crate::store::Store;
use crate::tags::{self, msg, session_reject as reason};
use crate::throttle::Throttle;
use crate::time;

const NANOS_PER_SEC: u64 = 1_000_000_000;
/// HeartBtInt a counterparty may ask for, in seconds.
pub const HEARTBEAT_RANGE: std::ops::RangeInclusive<u64> = 1..=3_600;

#[derive(Clone, Debug)]
pub struct Settings {
    /// Our SenderCompID (the counterparty's TargetCompID).
    pub our_comp_id: String,
    /// The counterparty's SenderCompID.
    pub their_comp_id: String,
    pub password: String,
    /// Largest difference between a SendingTime and our clock.
    pub max_skew_ns: u64,
    /// How long we wait for the answer to our Logout.
    pub logout_timeout_ns: u64,
}

/// What the connection must do after an input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Write these bytes.
    Send(Vec<u8>),
    /// An application message, in sequence, validated, for the application.
    Deliver(Message),
    /// The Logon was accepted.
    LoggedOn,
    /// A Logon with ResetSeqNumFlag on a session already logged on reset
    /// both directions to 1 (the venue records it: see `continuity`).
    SequenceReset,
    /// Close the connection, for this reason (already logged out if possible).
    Disconnect(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Disconnected,
    AwaitingLogon,
    Active,
    LogoutSent { deadline: u64 },
}

pub struct Session<S: Store> {
    settings: Settings,
    store: S,
    phase: Phase,
    heartbeat_ns: u64,
    last_sent: u64,
    last_received: u64,
    test_request_pending: bool,
    /// An outstanding ResendRequest: the highest sequence number seen past
    /// the gap, and when we asked.
    resend: Option<(u64, u64)>,
    /// The session's message rate, which its resends are charged to too.
    throttle: Throttle,
}

fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    // Compared in constant time for the expected length.
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

impl<S: Store> Session<S> {
    pub fn new(settings: Settings, store: S) -> Session<S> {
        Session {
            settings,
            store,
            phase: Phase::Disconnected,
            heartbeat_ns: 30 * NANOS_PER_SEC,
            last_sent: 0,
            last_received: 0,
            test_request_pending: false,
            resend: None,
            throttle: Throttle::new(0, 1),
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn is_logged_on(&self) -> bool {
        matches!(self.phase, Phase::Active | Phase::LogoutSent { .. })
    }

    pub fn is_connected(&self) -> bool {
        self.phase != Phase::Disconnected
    }

    /// A connection for this session was accepted; the Logon comes next.
    pub fn connected(&mut self, now: u64) {
        self.phase = Phase::AwaitingLogon;
        self.last_received = now;
        self.last_sent = now;
        self.test_request_pending = false;
        self.resend = None;
    }

    /// The connection is gone; outgoing application messages are only
    /// stored until the next logon asks for them.
    pub fn disconnected(&mut self) {
        self.phase = Phase::Disconnected;
    }

    fn encode(
        &self,
        msg_type: &[u8],
        seq: u64,
        now: u64,
        orig_time: Option<&[u8]>,
        routing: &[u8],
        body: &[u8],
    ) -> Vec<u8> {
        let mut fields = Vec::with_capacity(body.len() + 96);
        crate::frame::push_field(&mut fields, tags::MSG_TYPE, msg_type);
        crate::frame::push_field(
            &mut fields,
            tags::SENDER_COMP_ID,
            self.settings.our_comp_id.as_bytes(),
        );
        crate::frame::push_field(
            &mut fields,
            tags::TARGET_COMP_ID,
            self.settings.their_comp_id.as_bytes(),
        );
        crate::frame::push_field(&mut fields, tags::MSG_SEQ_NUM, seq.to_string().as_bytes());
        crate::frame::push_field(
            &mut fields,
            tags::SENDING_TIME,
            time::format(now).as_bytes(),
        );
        if let Some(orig) = orig_time {
            crate::frame::push_field(&mut fields, tags::POSS_DUP_FLAG, b"Y");
            crate::frame::push_field(&mut fields, tags::ORIG_SENDING_TIME, orig);
        }
        fields.extend_from_slice(routing);
        fields.extend_from_slice(body);
        seal(&fields)
    }

    fn transmit(&mut self, now: u64, bytes: Vec<u8>, out: &mut Vec<Action>) {
        self.last_sent = now;
        out.push(Action::Send(bytes));
    }

    /// `message` encoded as the next outgoing sequence number (not yet
    /// counted: the caller decides whether it is stored).
    fn encode_next(&self, now: u64, message: &Outgoing) -> (u64, Vec<u8>) {
        let seq = self.store.next_sender_seq();
        let bytes = self.encode(
            message.msg_type.as_bytes(),
            seq,
            now,
            None,
            &message.routing,
            &message.body,
        );
        (seq, bytes)
    }

    /// Sends an admin message: sequenced, not stored (a resend gap-fills it).
    fn send_admin(&mut self, now: u64, message: Outgoing, out: &mut Vec<Action>) {
        if self.phase == Phase::Disconnected {
            return;
        }
        let (seq, bytes) = self.encode_next(now, &message);
        self.store.set_next_sender_seq(seq + 1);
        self.transmit(now, bytes, out);
    }

    /// Sequences and stores an application message; it is written out only
    /// while logged on, else it waits in the store for a resend request.
    pub fn send_app(&mut self, now: u64, message: Outgoing, out: &mut Vec<Action>) {
        let (seq, bytes) = self.encode_next(now, &message);
        self.store.save(seq, &bytes);
        self.store.set_next_sender_seq(seq + 1);
        if self.phase == Phase::Active {
            self.transmit(now, bytes, out);
        }
        self.check_store(now, out);
    }

    fn check_store(&mut self, now: u64, out: &mut Vec<Action>) {
        if let Some(failure) = self.store.failure() {
            if self.phase != Phase::Disconnected {
                self.logout_and_close(now, &format!("the session store failed: {failure}"), out);
            }
        }
    }

    /// Sends a Logout with `text` and closes at once.
    fn logout_and_close(&mut self, now: u64, text: &str, out: &mut Vec<Action>) {
        self.send_admin(now, Outgoing::new(msg::LOGOUT).field(tags::TEXT, text), out);
        self.phase = Phase::Disconnected;
        out.push(Action::Disconnect(text.to_string()));
    }

    /// Starts an orderly logout (shutdown); the connection closes when the
    /// counterparty answers or the timeout passes.
    pub fn logout(&mut self, now: u64, text: &str, out: &mut Vec<Action>) {
        match self.phase {
            Phase::Active => {
                self.send_admin(now, Outgoing::new(msg::LOGOUT).field(tags::TEXT, text), out);
                self.phase = Phase::LogoutSent {
                    deadline: now + self.settings.logout_timeout_ns,
                };
            }
            Phase::AwaitingLogon => {
                self.phase = Phase::Disconnected;
                out.push(Action::Disconnect(text.to_string()));
            }
            Phase::LogoutSent { .. } | Phase::Disconnected => {}
        }
    }

    /// The stream broke (see `FrameError`): say why and close.
    pub fn on_frame_error(&mut self, now: u64, error: &FrameError, out: &mut Vec<Action>) {
        self.logout_and_close(now, &error.to_string(), out);
    }

    pub fn on_frame(&mut self, now: u64, frame: Frame, out: &mut Vec<Action>) {
        match frame {
            Frame::Garbled { reason } => {
                tracing::warn!(
                    session = %self.settings.their_comp_id,
                    reason,
                    "ignored a garbled message; it is not counted"
                );
            }
            Frame::Message(raw) => self.on_message(now, Message::parse(raw), out),
        }
    }

    pub fn on_message(&mut self, now: u64, message: Message, out: &mut Vec<Action>) {
        self.last_received = now;
        self.test_request_pending = false;
        if !is_fix44(message.raw()) && self.is_connected() {
            // FIX 4.4 Volume 2: an invalid BeginString is answered with a
            // Logout and a disconnect; the message is not processed.
            let received =
                String::from_utf8_lossy(message.get(tags::BEGIN_STRING).unwrap_or_default())
                    .into_owned();
            let text =
                format!("Incorrect BeginString (8) {received:?}: this session is {BEGIN_STRING}");
            return self.logout_and_close(now, &text, out);
        }
        match self.phase {
            Phase::Disconnected => {}
            Phase::AwaitingLogon => self.on_logon(now, &message, out),
            Phase::Active | Phase::LogoutSent { .. } => self.on_active(now, message, out),
        }
        self.check_store(now, out);
    }

    fn sending_time_ok(&self, now: u64, message: &Message) -> bool {
        match message.get(tags::SENDING_TIME).and_then(time::parse) {
            Some(sent) => sent.abs_diff(now) <= self.settings.max_skew_ns,
            // A missing or malformed SendingTime is a validation reject.
            None => true,
        }
    }

    fn comp_ids_ok(&self, message: &Message) -> bool {
        message.get(tags::SENDER_COMP_ID) == Some(self.settings.their_comp_id.as_bytes())
            && message.get(tags::TARGET_COMP_ID) == Some(self.settings.our_comp_id.as_bytes())
    }

    /// Sends a session-level Reject of `message` (also used by the
    /// application for a value no FIX field allows).
    pub fn reject(
        &mut self,
        now: u64,
        message: &Message,
        problem: &Problem,
        out: &mut Vec<Action>,
    ) {
        let seq = message.seq_num().unwrap_or(0);
        let msg_type = message.msg_type();
        let mut reject = Outgoing::new(msg::REJECT)
            .routed(&answer_routing(message))
            .field(tags::REF_SEQ_NUM, seq);
        reject.push_opt(tags::REF_TAG_ID, problem.tag);
        if let Some(msg_type) = msg_type.filter(|t| !t.is_empty() && t.len() <= 3) {
            reject.push(tags::REF_MSG_TYPE, String::from_utf8_lossy(msg_type));
        }
        reject.push(tags::SESSION_REJECT_REASON, problem.reason);
        reject.push(tags::TEXT, &problem.text);
        self.send_admin(now, reject, out);
    }

    fn request_resend(&mut self, now: u64, expected: u64, seen: u64, out: &mut Vec<Action>) {
        // One request covers everything up to "infinity" (EndSeqNo 0); ask
        // again only if it seems lost.
        if let Some((until, asked_at)) = self.resend {
            self.resend = Some((until.max(seen), asked_at));
            if now.saturating_sub(asked_at) < 2 * self.heartbeat_ns {
                return;
            }
        }
        let request = Outgoing::new(msg::RESEND_REQUEST)
            .field(tags::BEGIN_SEQ_NO, expected)
            .field(tags::END_SEQ_NO, 0);
        self.send_admin(now, request, out);
        let until = self.resend.map_or(seen, |(until, _)| until.max(seen));
        self.resend = Some((until, now));
    }

    fn advance_target(&mut self, next: u64) {
        self.store.set_next_target_seq(next);
        if self.resend.is_some_and(|(until, _)| next > until) {
            self.resend = None;
        }
    }

    fn on_active(&mut self, now: u64, message: Message, out: &mut Vec<Action>) {
        let Some(seq) = message.seq_num() else {
            return self.logout_and_close(now, "MsgSeqNum (34) is missing or not a number", out);
        };
        let msg_type = message.msg_type().map(<[u8]>::to_vec);
        let msg_type = msg_type.as_deref();
        if self.header_refused(now, &message, out) {
            return;
        }
        if msg_type == Some(msg::LOGON.as_bytes()) && message.flag(tags::RESET_SEQ_NUM_FLAG) {
            // Its MsgSeqNum is 1 by definition: it restarts the numbering
            // rather than following it.
            return self.reset_in_session(now, &message, out);
        }
        let valid = spec::validate(&message);
        let gap_fill = message.flag(tags::GAP_FILL_FLAG);
        if msg_type == Some(msg::SEQUENCE_RESET.as_bytes()) && !gap_fill {
            // Reset mode ignores MsgSeqNum: it is how a counterparty
            // recovers from lost sequence numbers.
            return match valid {
                Err(problem) => self.reject(now, &message, &problem, out),
                Ok(()) => self.sequence_reset(now, &message, out),
            };
        }
        if msg_type == Some(msg::RESEND_REQUEST.as_bytes()) && valid.is_ok() {
            // Answered even when its own number shows a gap.
            self.answer_resend(now, &message, out);
        }
        let expected = self.store.next_target_seq();
        if seq > expected {
            if msg_type == Some(msg::LOGOUT.as_bytes()) {
                // The missing messages come back after the next logon.
                return self.answer_logout(now, out);
            }
            return self.request_resend(now, expected, seq, out);
        }
        if seq < expected {
            if message.flag(tags::POSS_DUP_FLAG) {
                return self.possible_duplicate(now, &message, out);
            }
            let text = format!("MsgSeqNum too low, expecting {expected} but received {seq}");
            return self.logout_and_close(now, &text, out);
        }
        let is_admin = msg_type.is_some_and(msg::is_admin);
        if matches!(self.phase, Phase::LogoutSent { .. }) && !is_admin {
            // Not counted: it comes back by resend on the next logon
            // instead of being lost during shutdown.
            return;
        }
        self.advance_target(seq + 1);
        if let Err(problem) = valid {
            return self.reject(now, &message, &problem, out);
        }
        if self.orig_sending_time_refused(now, &message, out) {
            return;
        }
        self.dispatch(now, seq, message, out);
    }

    /// Rejects a message whose CompIDs or SendingTime do not fit the
    /// session, and ends the session; returns whether it did.
    fn header_refused(&mut self, now: u64, message: &Message, out: &mut Vec<Action>) -> bool {
        // A missing CompID is a missing required header field, rejected by
        // validation later; only a present and wrong one is a CompID problem.
        let comp_ids_given = message.get(tags::SENDER_COMP_ID).is_some()
            && message.get(tags::TARGET_COMP_ID).is_some();
        if comp_ids_given && !self.comp_ids_ok(message) {
            let problem = Problem::new(
                Some(tags::SENDER_COMP_ID),
                reason::COMP_ID_PROBLEM,
                "CompID problem",
            );
            self.reject(now, message, &problem, out);
            self.logout_and_close(
                now,
                "SenderCompID (49) or TargetCompID (56) does not match the session",
                out,
            );
            return true;
        }
        if !self.sending_time_ok(now, message) {
            let problem = Problem::new(
                Some(tags::SENDING_TIME),
                reason::SENDING_TIME_ACCURACY,
                "SendingTime accuracy problem",
            );
            self.reject(now, message, &problem, out);
            self.logout_and_close(
                now,
                "SendingTime (52) is too far from the exchange's clock",
                out,
            );
            return true;
        }
        false
    }

    /// Rejects a copy whose OrigSendingTime is later than its SendingTime,
    /// and ends the session; returns whether it did.
    fn orig_sending_time_refused(
        &mut self,
        now: u64,
        message: &Message,
        out: &mut Vec<Action>,
    ) -> bool {
        if let (Some(orig), Some(sent)) = (
            message.get(tags::ORIG_SENDING_TIME).and_then(time::parse),
            message.get(tags::SENDING_TIME).and_then(time::parse),
        ) {
            if orig > sent {
                let problem = Problem::new(
                    Some(tags::ORIG_SENDING_TIME),
                    reason::SENDING_TIME_ACCURACY,
                    "OrigSendingTime (122) is later than SendingTime (52)",
                );
                // A copy claiming to predate itself: the counterparty's
                // clock or resend logic is broken, as with a bad SendingTime.
                self.reject(now, message, &problem, out);
                self.logout_and_close(
                    now,
                    "OrigSendingTime (122) is later than SendingTime (52)",
                    out,
                );
                return true;
            }
        }
        false
    }

    /// A message numbered below the expected one but marked as a possible
    /// duplicate: ignored, as already processed, once its OrigSendingTime
    /// shows it is a plausible copy.
    fn possible_duplicate(&mut self, now: u64, message: &Message, out: &mut Vec<Action>) {
        let orig = message.get(tags::ORIG_SENDING_TIME);
        let Some(orig) = orig else {
            let problem = Problem::new(
                Some(tags::ORIG_SENDING_TIME),
                reason::REQUIRED_TAG_MISSING,
                "OrigSendingTime (122) is required when PossDupFlag (43) is Y",
            );
            return self.reject(now, message, &problem, out);
        };
        let Some(orig) = time::parse(orig) else {
            let problem = Problem::new(
                Some(tags::ORIG_SENDING_TIME),
                reason::INCORRECT_DATA_FORMAT,
                "OrigSendingTime (122) is not a UTCTimestamp",
            );
            return self.reject(now, message, &problem, out);
        };
        let sent = message.get(tags::SENDING_TIME).and_then(time::parse);
        if sent.is_some_and(|sent| orig > sent) {
            let problem = Problem::new(
                Some(tags::ORIG_SENDING_TIME),
                reason::SENDING_TIME_ACCURACY,
                "OrigSendingTime (122) is later than SendingTime (52)",
            );
            self.reject(now, message, &problem, out);
            self.logout_and_close(
                now,
                "OrigSendingTime (122) is later than SendingTime (52)",
                out,
            );
        }
    }

    fn dispatch(&mut self, now: u64, seq: u64, message: Message, out: &mut Vec<Action>) {
        match message.msg_type().unwrap_or_default() {
            b"0" | b"2" => {}
            b"1" => {
                let id =
                    String::from_utf8_lossy(message.get(tags::TEST_REQ_ID).unwrap_or_default())
                        .into_owned();
                self.send_admin(
                    now,
                    Outgoing::new(msg::HEARTBEAT).field(tags::TEST_REQ_ID, id),
                    out,
                );
            }
            b"3" => tracing::warn!(
                session = %self.settings.their_comp_id,
                ref_seq = message.uint(tags::REF_SEQ_NUM),
                text = message.text(tags::TEXT).unwrap_or_default(),
                "the counterparty rejected one of our messages"
            ),
            b"4" => {
                let new_seq = message.uint(tags::NEW_SEQ_NO).unwrap_or(0);
                if new_seq > seq {
                    self.advance_target(new_seq);
                } else {
                    let problem = Problem::new(
                        Some(tags::NEW_SEQ_NO),
                        reason::VALUE_INCORRECT,
                        format!("NewSeqNo {new_seq} must be greater than MsgSeqNum {seq}"),
                    );
                    self.reject(now, &message, &problem, out);
                }
            }
            b"5" => match self.phase {
                Phase::LogoutSent { .. } => {
                    self.phase = Phase::Disconnected;
                    out.push(Action::Disconnect("logout acknowledged".into()));
                }
                _ => self.answer_logout(now, out),
            },
            b"A" => {
                self.logout_and_close(now, "Logon received on a session already logged on", out)
            }
            _ => out.push(Action::Deliver(message)),
        }
    }

    fn answer_logout(&mut self, now: u64, out: &mut Vec<Action>) {
        self.send_admin(now, Outgoing::new(msg::LOGOUT), out);
        self.phase = Phase::Disconnected;
        out.push(Action::Disconnect("the counterparty logged out".into()));
    }

    fn sequence_reset(&mut self, now: u64, message: &Message, out: &mut Vec<Action>) {
        let new_seq = message.uint(tags::NEW_SEQ_NO).unwrap_or(0);
        let expected = self.store.next_target_seq();
        if new_seq > expected {
            self.advance_target(new_seq);
        } else if new_seq < expected {
            let problem = Problem::new(
                Some(tags::NEW_SEQ_NO),
                reason::VALUE_INCORRECT,
                format!("NewSeqNo {new_seq} is below the expected MsgSeqNum {expected}"),
            );
            self.reject(now, message, &problem, out);
        }
    }

    pub fn on_tick(&mut self, now: u64, out: &mut Vec<Action>) {
        match self.phase {
            Phase::Active => {
                let silent = now.saturating_sub(self.last_received);
                if silent >= self.heartbeat_ns * 12 / 5 {
                    return self.logout_and_close(
                        now,
                        "no message from the counterparty within 2.4 × HeartBtInt",
                        out,
                    );
                }
                if silent >= self.heartbeat_ns * 6 / 5 && !self.test_request_pending {
                    let request = Outgoing::new(msg::TEST_REQUEST)
                        .field(tags::TEST_REQ_ID, format!("TEST-{now}"));
                    self.send_admin(now, request, out);
                    self.test_request_pending = true;
                }
                if now.saturating_sub(self.last_sent) >= self.heartbeat_ns {
                    self.send_admin(now, Outgoing::new(msg::HEARTBEAT), out);
                }
            }
            Phase::LogoutSent { deadline } if now >= deadline => {
                self.phase = Phase::Disconnected;
                out.push(Action::Disconnect(
                    "the counterparty did not answer our Logout".into(),
                ));
            }
            _ => {}
        }
    }
}

#[path = "session_logon.rs"]
mod logon;
pub use logon::{sessionless_logout, CREDENTIALS_REFUSED, NOT_A_LOGON};

#[path = "session_resend.rs"]
mod resend;

#[cfg(test)]
#[path = "session_test_support.rs"]
mod test_support;

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "session_wire_tests.rs"]
mod wire_tests;

#[cfg(test)]
#[path = "session_conformance_tests.rs"]
mod conformance_tests;

#[cfg(test)]
#[path = "session_acceptance_tests.rs"]
mod acceptance_tests;

#[cfg(test)]
#[path = "session_takeover_tests.rs"]
mod takeover_tests;
