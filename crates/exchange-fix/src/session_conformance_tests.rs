//! FIX 4.4 Volume 2 rules the session follows, each driven with the raw
//! bytes a counterparty would write.

use super::test_support::{feed, sent, settings, SEC, T0};
use super::*;
use crate::frame::next_frame;
use crate::store::MemoryStore;

/// The bytes of a message from `sender` to `target`, `|` for SOH.
fn bytes_from(
    sender: &str,
    target: &str,
    msg_type: &str,
    seq: u64,
    header: &str,
    body: &str,
) -> Vec<u8> {
    let fields = format!(
        "35={msg_type}|49={sender}|56={target}|34={seq}|52={}|{header}{body}",
        time::format(T0)
    );
    seal(&fields.replace('|', "\x01").into_bytes())
}

fn client(msg_type: &str, seq: u64, body: &str) -> Vec<u8> {
    bytes_from("CLIENT", "EX", msg_type, seq, "", body)
}

fn summary(m: &Message) -> (String, Option<u64>) {
    (m.text(35).unwrap_or_default().to_string(), m.seq_num())
}

fn disconnected(out: &[Action]) -> bool {
    out.iter().any(|a| matches!(a, Action::Disconnect(_)))
}

const LOGON: &str = "98=0|108=30|554=pw|";

fn logged_on(store: MemoryStore) -> Session<MemoryStore> {
    let mut session = Session::new(settings(), store);
    session.connected(T0);
    let out = feed(&mut session, &client("A", 1, LOGON));
    assert!(out.contains(&Action::LoggedOn), "{out:?}");
    session
}

#[test]
fn a_reset_logon_during_the_session_restarts_both_sides_at_one() {
    let mut session = logged_on(MemoryStore::default());
    for seq in 2..=5 {
        feed(&mut session, &client("1", seq, &format!("112=t{seq}|")));
    }
    let mut store_before = session.store().sender;
    assert!(store_before > 4, "heartbeats were sent: {store_before}");
    session.store.messages.insert(3, b"old report".to_vec());
    let out = feed(&mut session, &client("A", 1, "98=0|108=20|554=pw|141=Y|"));
    let replies = sent(&out);
    assert_eq!(
        replies.iter().map(summary).collect::<Vec<_>>(),
        vec![("A".into(), Some(1))]
    );
    assert_eq!(
        (replies[0].text(141), replies[0].uint(108)),
        (Some("Y"), Some(20))
    );
    assert!(!disconnected(&out));
    assert!(session.is_logged_on());
    // The venue's log learns it before any command numbered from 2 again.
    assert!(out.contains(&Action::SequenceReset));
    assert_eq!((session.store().sender, session.store().target), (2, 2));
    assert!(session.store().messages.is_empty());
    // The numbering goes on from 2 both ways.
    let out = feed(&mut session, &client("1", 2, "112=after|"));
    let replies = sent(&out);
    assert_eq!(
        replies.iter().map(summary).collect::<Vec<_>>(),
        vec![("0".into(), Some(2))]
    );
    store_before = session.store().target;
    assert_eq!(store_before, 3);
}

#[test]
fn a_reset_logon_during_the_session_must_be_number_one_and_authenticated() {
    let mut session = logged_on(MemoryStore::default());
    let out = feed(&mut session, &client("A", 2, "98=0|108=30|554=pw|141=Y|"));
    assert!(disconnected(&out));
    let logout = sent(&out).pop().expect("a Logout");
    assert!(logout
        .text(58)
        .unwrap_or_default()
        .contains("MsgSeqNum (34) 1"));

    let mut session = logged_on(MemoryStore::default());
    let out = feed(&mut session, &client("A", 1, "98=0|108=30|554=nope|141=Y|"));
    assert!(disconnected(&out));
    assert_eq!(session.store().target, 2, "nothing was reset");
}

#[test]
fn a_reset_logon_after_a_disconnect_starts_at_one_on_both_sides() {
    let mut session = logged_on(MemoryStore::default());
    for seq in 2..=4 {
        feed(&mut session, &client("0", seq, ""));
    }
    session.send_app(
        T0,
        Outgoing::new("8").field(tags::TEXT, "report"),
        &mut Vec::new(),
    );
    session.disconnected();
    session.connected(T0);
    let out = feed(&mut session, &client("A", 1, "98=0|108=30|554=pw|141=Y|"));
    let replies = sent(&out);
    assert_eq!(
        replies.iter().map(summary).collect::<Vec<_>>(),
        vec![("A".into(), Some(1))]
    );
    assert_eq!(replies[0].text(141), Some("Y"));
    assert_eq!((session.store().sender, session.store().target), (2, 2));
    assert!(session.store().messages.is_empty());
}

#[test]
fn a_possible_duplicate_without_orig_sending_time_is_rejected() {
    let mut session = logged_on(MemoryStore::default());
    feed(&mut session, &client("0", 2, ""));
    let dup = bytes_from("CLIENT", "EX", "0", 2, "43=Y|", "");
    let out = feed(&mut session, &dup);
    let replies = sent(&out);
    assert_eq!(replies.len(), 1, "{replies:?}");
    let reject = &replies[0];
    assert_eq!(
        (
            reject.text(35),
            reject.text(373),
            reject.text(371),
            reject.text(45)
        ),
        (Some("3"), Some("1"), Some("122"), Some("2"))
    );
    assert!(!disconnected(&out));
    assert_eq!(session.store().target, 3, "a duplicate is not counted");
}

#[test]
fn a_possible_duplicate_sent_before_it_was_first_sent_is_rejected_then_logged_out() {
    let mut session = logged_on(MemoryStore::default());
    feed(&mut session, &client("0", 2, ""));
    let later = time::format(T0 + 5 * SEC);
    let dup = bytes_from("CLIENT", "EX", "0", 2, &format!("43=Y|122={later}|"), "");
    let out = feed(&mut session, &dup);
    let replies = sent(&out);
    let kinds: Vec<_> = replies
        .iter()
        .map(|m| m.text(35).unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds, vec!["3", "5"]);
    assert_eq!(
        (replies[0].text(373), replies[0].text(371)),
        (Some("10"), Some("122"))
    );
    assert!(disconnected(&out));
}

#[test]
fn an_in_sequence_copy_sent_before_it_was_first_sent_is_rejected_then_logged_out() {
    let mut session = logged_on(MemoryStore::default());
    let later = time::format(T0 + 5 * SEC);
    let copy = bytes_from("CLIENT", "EX", "0", 2, &format!("43=Y|122={later}|"), "");
    let out = feed(&mut session, &copy);
    let replies = sent(&out);
    let kinds: Vec<_> = replies
        .iter()
        .map(|m| m.text(35).unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds, vec!["3", "5"]);
    assert_eq!(
        (replies[0].text(373), replies[0].text(371)),
        (Some("10"), Some("122"))
    );
    assert!(disconnected(&out));
}

#[test]
fn a_plausible_possible_duplicate_is_ignored() {
    let mut session = logged_on(MemoryStore::default());
    feed(&mut session, &client("0", 2, ""));
    let earlier = time::format(T0 - 5 * SEC);
    let dup = bytes_from("CLIENT", "EX", "0", 2, &format!("43=Y|122={earlier}|"), "");
    let out = feed(&mut session, &dup);
    assert!(out.is_empty(), "{out:?}");
}

/// Every way a stranger can be refused, and what the session keeps.
#[test]
fn a_refused_logon_neither_uses_nor_shows_the_outgoing_number() {
    let store = MemoryStore {
        sender: 57,
        target: 31,
        ..MemoryStore::default()
    };
    let mut session = Session::new(settings(), store);
    let strangers = [
        client("A", 31, "98=0|108=30|554=wrong|"),
        client("A", 31, "98=0|108=30|"),
        bytes_from("CLIENT", "OTHER", "A", 31, "", LOGON),
        bytes_from("SOMEONE", "EX", "A", 31, "", LOGON),
        client("A", 1, "98=0|108=30|554=wrong|141=Y|"),
    ];
    let mut answers = Vec::new();
    for logon in strangers {
        session.connected(T0);
        let out = feed(&mut session, &logon);
        assert!(disconnected(&out));
        let replies = sent(&out);
        assert_eq!(replies.len(), 1);
        let logout = &replies[0];
        assert_eq!((logout.text(35), logout.seq_num()), (Some("5"), Some(1)));
        answers.push(logout.text(58).unwrap_or_default().to_string());
        assert_eq!((session.store().sender, session.store().target), (57, 31));
    }
    assert!(
        answers.iter().all(|a| a == CREDENTIALS_REFUSED),
        "{answers:?}"
    );
    // The counterparty with the credentials carries on where it was.
    session.connected(T0);
    let out = feed(&mut session, &client("A", 31, LOGON));
    assert_eq!(sent(&out)[0].seq_num(), Some(57));
}

#[test]
fn a_resend_of_messages_no_longer_kept_is_a_gap_fill() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = crate::store::FileStore::open_retaining(dir.path(), 2).expect("a store");
    let mut session = Session::new(settings(), store);
    session.connected(T0);
    let mut out = Vec::new();
    session.on_frame(
        T0,
        next_frame(&client("A", 1, LOGON))
            .ok()
            .flatten()
            .expect("a frame")
            .0,
        &mut out,
    );
    for n in 0..5 {
        let report = Outgoing::new("8").field(tags::TEXT, format!("report {n}"));
        session.send_app(T0, report, &mut out);
    }
    // Our Logon was 1, the reports 2 to 6; only 5 and 6 are kept.
    let mut out = Vec::new();
    let request = client("2", 2, "7=1|16=0|");
    let (frame, _) = next_frame(&request).ok().flatten().expect("a frame");
    session.on_frame(T0, frame, &mut out);
    let answers = sent(&out);
    let seen: Vec<_> = answers
        .iter()
        .map(|m| {
            (
                m.text(35).unwrap_or_default().to_string(),
                m.seq_num(),
                m.uint(36),
                m.text(58).map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("4".to_string(), Some(1), Some(5), None),
            ("8".to_string(), Some(5), None, Some("report 3".to_string())),
            ("8".to_string(), Some(6), None, Some("report 4".to_string())),
        ]
    );
    assert_eq!(answers[0].text(123), Some("Y"));
}
