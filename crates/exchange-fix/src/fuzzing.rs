//! Arbitrary bytes through every layer that reads input, with the
//! invariants that must hold whatever arrives: nothing panics, every
//! message the session writes frames cleanly with a correct CheckSum, and
//! the expected incoming sequence number never moves backwards.
//!
//! Shared by the cargo-fuzz target (`fuzz/`), the regression corpus test
//! and the property tests, so all three exercise the same code.

use crate::frame::{next_frame, seal, Frame, SOH};
use crate::inbound::{self, Role};
use crate::message::Message;
use crate::session::{Action, Session, Settings};
use crate::spec;
use crate::store::{MemoryStore, Store};
use crate::time;

const NOW: u64 = 1_700_000_000_000_000_000;

fn settings() -> Settings {
    Settings {
        our_comp_id: "EX".into(),
        their_comp_id: "CLIENT".into(),
        password: "pw".into(),
        max_skew_ns: u64::MAX,
        logout_timeout_ns: 1_000_000_000,
    }
}

/// A session logged on with the client's Logon as number 1.
fn logged_on() -> Session<MemoryStore> {
    let mut session = Session::new(settings(), MemoryStore::default());
    session.connected(NOW);
    let logon = format!(
        "35=A\x0149=CLIENT\x0156=EX\x0134=1\x0152={}\x0198=0\x01108=30\x01554=pw\x01",
        time::format(NOW)
    );
    let mut out = Vec::new();
    session.on_message(NOW, Message::parse(seal(logon.as_bytes())), &mut out);
    assert!(
        out.contains(&Action::LoggedOn),
        "the fuzz session must start logged on"
    );
    session
}

/// Everything the session asked to write must be a well-formed message.
fn check_output(actions: &[Action]) {
    for action in actions {
        if let Action::Send(bytes) = action {
            match next_frame(bytes) {
                Ok(Some((Frame::Message(raw), used))) => {
                    assert_eq!(used, bytes.len(), "one message per write");
                    let message = Message::parse(raw);
                    assert!(
                        message.problem().is_none(),
                        "the session wrote a malformed field"
                    );
                }
                other => panic!("the session wrote an unframeable message: {other:?}"),
            }
        }
    }
}

fn drive(session: &mut Session<MemoryStore>, frame: Frame, out: &mut Vec<Action>) {
    let before = session.store().next_target_seq();
    session.on_frame(NOW, frame, out);
    // Once logged on, the expected number only moves forward.
    assert!(
        session.store().next_target_seq() >= before,
        "the expected MsgSeqNum went backwards"
    );
    for action in out.iter() {
        if let Action::Deliver(message) = action {
            assert!(
                spec::validate(message).is_ok(),
                "the session delivered an invalid message"
            );
            let _ = inbound::translate(message, &Role::Trading { account: 1 }, NOW);
            let _ = inbound::translate(message, &Role::DropCopy { accounts: vec![1] }, NOW);
        }
    }
}

/// `data` as the bytes of a connection: framed, parsed, validated and fed
/// to a logged-on session, the way the acceptor does.
pub fn exercise_stream(data: &[u8]) {
    let mut session = logged_on();
    let mut out = Vec::new();
    let mut rest = data;
    while session.is_connected() {
        match next_frame(rest) {
            Ok(Some((frame, used))) => {
                rest = &rest[used..];
                drive(&mut session, frame, &mut out);
            }
            Ok(None) => break,
            Err(error) => {
                session.on_frame_error(NOW, &error, &mut out);
                break;
            }
        }
    }
    session.on_tick(NOW + 100_000_000_000, &mut out);
    check_output(&out);
}

/// `data` as a message body (everything after BodyLength), sealed with a
/// correct BodyLength and CheckSum so it reaches the session layer.
pub fn exercise_body(data: &[u8]) {
    let mut body = data.to_vec();
    if body.last() != Some(&SOH) {
        body.push(SOH);
    }
    let sealed = seal(&body);
    let (frame, used) = match next_frame(&sealed) {
        Ok(Some(found)) => found,
        // Longer than a message may be: refused at the framing layer.
        Err(_) => return,
        Ok(None) => panic!("a sealed message must frame"),
    };
    assert_eq!(used, sealed.len());
    let mut session = logged_on();
    let mut out = Vec::new();
    drive(&mut session, frame, &mut out);
    check_output(&out);
}

/// Both of the above.
pub fn exercise(data: &[u8]) {
    exercise_stream(data);
    exercise_body(data);
}
