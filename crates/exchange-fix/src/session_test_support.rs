//! What the session's unit tests share: settings, messages from the
//! client and a look at what the session sent.

use super::*;
use crate::frame::next_frame;
use crate::store::MemoryStore;

pub(super) const T0: u64 = 1_700_000_000 * NANOS_PER_SEC;
pub(super) const SEC: u64 = NANOS_PER_SEC;

pub(super) fn settings() -> Settings {
    Settings {
        our_comp_id: "EX".into(),
        their_comp_id: "CLIENT".into(),
        password: "pw".into(),
        max_skew_ns: 120 * SEC,
        logout_timeout_ns: 2 * SEC,
    }
}

/// A message from the client, sent at `at`, with `body` (`|`-separated).
pub(super) fn from_client(msg_type: &str, seq: u64, at: u64, body: &str) -> Message {
    let fields = format!(
        "35={msg_type}|49=CLIENT|56=EX|34={seq}|52={}|{body}",
        time::format(at)
    );
    let raw = seal(&fields.replace('|', "\x01").into_bytes());
    Message::parse(raw)
}

/// A resent copy: PossDupFlag set, first sent at `orig`.
pub(super) fn resent_by_client(
    msg_type: &str,
    seq: u64,
    at: u64,
    orig: u64,
    body: &str,
) -> Message {
    let fields = format!(
        "35={msg_type}|49=CLIENT|56=EX|34={seq}|43=Y|52={}|122={}|{body}",
        time::format(at),
        time::format(orig)
    );
    Message::parse(seal(&fields.replace('|', "\x01").into_bytes()))
}

pub(super) fn sent(out: &[Action]) -> Vec<Message> {
    out.iter()
        .filter_map(|a| match a {
            Action::Send(bytes) => {
                // Everything the session writes must frame cleanly.
                let (frame, used) = next_frame(bytes).expect("frames").expect("complete");
                assert_eq!(used, bytes.len());
                match frame {
                    Frame::Message(raw) => Some(Message::parse(raw)),
                    Frame::Garbled { .. } => panic!("the session wrote a bad checksum"),
                }
            }
            _ => None,
        })
        .collect()
}

/// Frames `bytes` as the connection does and hands every frame over.
pub(super) fn feed(session: &mut Session<MemoryStore>, bytes: &[u8]) -> Vec<Action> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some((frame, used)) = next_frame(rest).expect("no fatal framing error") {
        rest = &rest[used..];
        session.on_frame(T0, frame, &mut out);
    }
    assert!(rest.is_empty(), "unframed bytes left: {rest:?}");
    out
}

pub(super) fn types(out: &[Action]) -> Vec<String> {
    sent(out)
        .iter()
        .map(|m| m.text(tags::MSG_TYPE).unwrap_or_default().to_string())
        .collect()
}

pub(super) fn disconnected(out: &[Action]) -> Option<String> {
    out.iter().find_map(|a| match a {
        Action::Disconnect(reason) => Some(reason.clone()),
        _ => None,
    })
}

pub(super) fn logon_body(password: &str) -> String {
    format!("98=0|108=30|554={password}|")
}

/// A session logged on at T0 with the client's Logon as seq 1.
pub(super) fn logged_on() -> Session<MemoryStore> {
    let mut session = Session::new(settings(), MemoryStore::default());
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(T0, from_client("A", 1, T0, &logon_body("pw")), &mut out);
    assert!(out.contains(&Action::LoggedOn), "{out:?}");
    session
}
