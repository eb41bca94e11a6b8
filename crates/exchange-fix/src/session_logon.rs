//! Logon. The credentials are checked before anything else the Logon
//! says, and a Logon refused before it proved them is answered outside the
//! session's numbering, so that a refusal tells a stranger nothing: not
//! whether the CompIDs name a session, nor that session's next outgoing
//! MsgSeqNum. A Logon with ResetSeqNumFlag during a session starts both
//! directions again at 1.

use super::{same_secret, Action, Phase, Session, HEARTBEAT_RANGE, NANOS_PER_SEC};
use crate::frame::{push_field, seal};
use crate::message::{Message, Outgoing};
use crate::spec;
use crate::store::Store;
use crate::tags::{self, msg};
use crate::time;

/// The refusal of a Logon whose CompIDs name no session or whose Password
/// is wrong: one text for both, so that it does not say which.
pub const CREDENTIALS_REFUSED: &str =
    "logon refused: unknown SenderCompID (49) and TargetCompID (56) or invalid Password (554)";
/// The refusal of a connection whose first message is not a Logon.
pub const NOT_A_LOGON: &str = "logon refused: the first message must be a Logon (35=A)";

/// A Logout outside any session's numbering (MsgSeqNum 1, nothing stored),
/// addressed back to the CompIDs `first` came from.
pub fn sessionless_logout(first: Option<&Message>, text: &str, now: u64) -> Vec<u8> {
    let usable = |v: Option<&str>| {
        v.filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic()))
            .map(str::to_string)
    };
    let ours = usable(first.and_then(|m| m.text(tags::TARGET_COMP_ID)))
        .unwrap_or_else(|| "EXCHANGE".into());
    let theirs = usable(first.and_then(|m| m.text(tags::SENDER_COMP_ID)))
        .unwrap_or_else(|| "UNKNOWN".into());
    let mut fields = Vec::new();
    push_field(&mut fields, tags::MSG_TYPE, b"5");
    push_field(&mut fields, tags::SENDER_COMP_ID, ours.as_bytes());
    push_field(&mut fields, tags::TARGET_COMP_ID, theirs.as_bytes());
    push_field(&mut fields, tags::MSG_SEQ_NUM, b"1");
    push_field(
        &mut fields,
        tags::SENDING_TIME,
        time::format(now).as_bytes(),
    );
    push_field(&mut fields, tags::TEXT, text.as_bytes());
    seal(&fields)
}

impl<S: Store> Session<S> {
    /// Whether `logon` names this session and carries its Password. Both
    /// are always compared, so the time taken does not say which failed.
    pub fn credentials_ok(&self, logon: &Message) -> bool {
        let ids = self.comp_ids_ok(logon);
        let password = logon.get(tags::PASSWORD).unwrap_or_default();
        let secret = same_secret(password, self.settings.password.as_bytes());
        ids & secret
    }

    /// Refuses a Logon that has not proved its credentials: the session's
    /// sequence numbers and store are left as they were.
    fn refuse_stranger(&mut self, now: u64, logon: &Message, text: &str, out: &mut Vec<Action>) {
        self.phase = Phase::Disconnected;
        out.push(Action::Send(sessionless_logout(Some(logon), text, now)));
        out.push(Action::Disconnect(text.to_string()));
    }

    /// A Logon's MsgSeqNum and HeartBtInt, or why it is refused whatever
    /// the session's numbers: what is checked before its numbers are.
    fn logon_fields(&self, now: u64, logon: &Message) -> Result<(u64, u64), String> {
        let Some(seq) = logon.seq_num() else {
            return Err("MsgSeqNum (34) is missing or not a number".into());
        };
        spec::validate(logon).map_err(|problem| problem.text)?;
        if !self.sending_time_ok(now, logon) {
            return Err("SendingTime (52) is too far from the exchange's clock".into());
        }
        if logon.uint(tags::ENCRYPT_METHOD) != Some(0) {
            return Err("EncryptMethod (98) must be 0 (none)".into());
        }
        let heartbeat = heartbeat_of(logon).ok_or(HEARTBEAT_INVALID)?;
        if logon.flag(tags::RESET_SEQ_NUM_FLAG) && seq != 1 {
            return Err(RESET_NEEDS_ONE.into());
        }
        Ok((seq, heartbeat))
    }

    /// Whether `logon` is a Logon with the credentials that nothing but
    /// the session's numbers could refuse: one worth recording in the log
    /// (see `continuity`) before the session takes it.
    pub fn logon_acceptable(&self, now: u64, logon: &Message) -> bool {
        logon.msg_type() == Some(msg::LOGON.as_bytes())
            && self.credentials_ok(logon)
            && self.logon_fields(now, logon).is_ok()
    }

    pub(super) fn on_logon(&mut self, now: u64, logon: &Message, out: &mut Vec<Action>) {
        if logon.msg_type() != Some(msg::LOGON.as_bytes()) {
            return self.refuse_stranger(now, logon, NOT_A_LOGON, out);
        }
        if !self.credentials_ok(logon) {
            return self.refuse_stranger(now, logon, CREDENTIALS_REFUSED, out);
        }
        let (seq, heartbeat) = match self.logon_fields(now, logon) {
            Ok(fields) => fields,
            Err(text) => return self.logout_and_close(now, &format!("logon refused: {text}"), out),
        };
        let refuse = |session: &mut Self, text: &str, out: &mut Vec<Action>| {
            session.logout_and_close(now, &format!("logon refused: {text}"), out)
        };
        // `logon_fields` refused a reset numbered other than 1.
        let reset = logon.flag(tags::RESET_SEQ_NUM_FLAG);
        if reset {
            self.store.reset();
        }
        let expected = self.store.next_target_seq();
        if seq < expected {
            return refuse(
                self,
                &format!("MsgSeqNum too low, expecting {expected} but received {seq}"),
                out,
            );
        }
        self.heartbeat_ns = heartbeat * NANOS_PER_SEC;
        self.phase = Phase::Active;
        self.send_admin(now, logon_reply(heartbeat, reset), out);
        out.push(Action::LoggedOn);
        if seq > expected {
            self.request_resend(now, expected, seq, out);
        } else {
            self.store.set_next_target_seq(seq + 1);
        }
    }

    /// A Logon with ResetSeqNumFlag on a session already logged on: both
    /// directions start again at 1, the answer being our message 1 and
    /// the Logon the counterparty's. Anything else about it ends the
    /// session, as a second Logon does.
    pub(super) fn reset_in_session(&mut self, now: u64, logon: &Message, out: &mut Vec<Action>) {
        let problem = if logon.seq_num() != Some(1) {
            Some(RESET_NEEDS_ONE.to_string())
        } else if !self.credentials_ok(logon) {
            Some(CREDENTIALS_REFUSED.to_string())
        } else {
            spec::validate(logon).err().map(|p| p.text)
        };
        let heartbeat = heartbeat_of(logon);
        let (problem, heartbeat) = match (problem, heartbeat) {
            (None, Some(heartbeat)) => (None, heartbeat),
            (Some(problem), _) => (Some(problem), 0),
            (None, None) => (Some(HEARTBEAT_INVALID.to_string()), 0),
        };
        if let Some(problem) = problem {
            return self.logout_and_close(now, &format!("sequence reset refused: {problem}"), out);
        }
        self.store.reset();
        self.resend = None;
        // The phase stays: a reset during our own logout does not undo it.
        self.heartbeat_ns = heartbeat * NANOS_PER_SEC;
        self.send_admin(now, logon_reply(heartbeat, true), out);
        self.store.set_next_target_seq(2);
        out.push(Action::SequenceReset);
    }
}

const HEARTBEAT_INVALID: &str = "HeartBtInt (108) must be between 1 and 3600 seconds";
const RESET_NEEDS_ONE: &str = "ResetSeqNumFlag (141) needs MsgSeqNum (34) 1";

fn heartbeat_of(logon: &Message) -> Option<u64> {
    logon
        .uint(tags::HEART_BT_INT)
        .filter(|h| HEARTBEAT_RANGE.contains(h))
}

fn logon_reply(heartbeat: u64, reset: bool) -> Outgoing {
    let mut reply = Outgoing::new(msg::LOGON)
        .field(tags::ENCRYPT_METHOD, 0)
        .field(tags::HEART_BT_INT, heartbeat);
    if reset {
        reply.push(tags::RESET_SEQ_NUM_FLAG, "Y");
    }
    reply
}
