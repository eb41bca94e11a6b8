//! The session state machine, message by message, without sockets.

use super::test_support::*;
use super::*;
use crate::store::MemoryStore;

#[test]
fn logon_is_answered_and_counted() {
    let mut session = Session::new(settings(), MemoryStore::default());
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(T0, from_client("A", 1, T0, &logon_body("pw")), &mut out);
    let replies = sent(&out);
    assert_eq!(replies.len(), 1);
    let reply = &replies[0];
    assert_eq!(reply.text(tags::MSG_TYPE), Some("A"));
    assert_eq!(
        (reply.seq_num(), reply.uint(108), reply.uint(98)),
        (Some(1), Some(30), Some(0))
    );
    assert_eq!(
        (reply.text(49), reply.text(56)),
        (Some("EX"), Some("CLIENT"))
    );
    assert_eq!((session.store().sender, session.store().target), (2, 2));
    assert!(session.is_logged_on());
}

#[test]
fn wrong_password_gets_a_logout_with_a_reason() {
    let mut session = Session::new(settings(), MemoryStore::default());
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(T0, from_client("A", 1, T0, &logon_body("nope")), &mut out);
    assert_eq!(types(&out), vec!["5"]);
    let text = sent(&out)[0]
        .text(tags::TEXT)
        .unwrap_or_default()
        .to_string();
    assert!(text.contains("Password"), "{text}");
    assert!(disconnected(&out).is_some());
    // Neither the refused Logon nor our Logout, sent outside the
    // session's numbering, is counted.
    assert_eq!((session.store().sender, session.store().target), (1, 1));
    assert!(!session.is_logged_on());
}

#[test]
fn logon_refusals_name_the_cause() {
    let cases = [
        (
            from_client("D", 1, T0, "11=x|"),
            "first message must be a Logon",
        ),
        (
            from_client("A", 1, T0, "98=1|108=30|554=pw|"),
            "EncryptMethod",
        ),
        (from_client("A", 1, T0, "98=0|108=0|554=pw|"), "HeartBtInt"),
        (
            from_client("A", 1, T0 - 600 * SEC, &logon_body("pw")),
            "SendingTime",
        ),
        (
            from_client("A", 2, T0, "98=0|108=30|554=pw|141=Y|"),
            "ResetSeqNumFlag",
        ),
        (from_client("A", 1, T0, "98=0|554=pw|"), "108"),
    ];
    for (logon, expected) in cases {
        let mut session = Session::new(settings(), MemoryStore::default());
        session.connected(T0);
        let mut out = Vec::new();
        session.on_message(T0, logon, &mut out);
        let text = sent(&out)
            .first()
            .and_then(|m| m.text(tags::TEXT).map(str::to_string))
            .unwrap_or_default();
        assert!(text.contains(expected), "{expected}: {text}");
        assert!(disconnected(&out).is_some());
    }
}

#[test]
fn logon_with_a_gap_asks_for_a_resend_and_too_low_is_refused() {
    let store = MemoryStore {
        target: 5,
        ..MemoryStore::default()
    };
    let mut session = Session::new(settings(), store);
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(T0, from_client("A", 9, T0, &logon_body("pw")), &mut out);
    assert_eq!(types(&out), vec!["A", "2"]);
    let request = &sent(&out)[1];
    assert_eq!((request.uint(7), request.uint(16)), (Some(5), Some(0)));
    assert_eq!(session.store().target, 5);

    let store = MemoryStore {
        target: 5,
        ..MemoryStore::default()
    };
    let mut session = Session::new(settings(), store);
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(T0, from_client("A", 3, T0, &logon_body("pw")), &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(sent(&out)[0]
        .text(58)
        .unwrap_or_default()
        .contains("expecting 5 but received 3"));
}

#[test]
fn reset_seq_num_flag_starts_both_sides_at_one() {
    let mut store = MemoryStore {
        sender: 40,
        target: 30,
        ..MemoryStore::default()
    };
    store.messages.insert(39, b"old".to_vec());
    let mut session = Session::new(settings(), store);
    session.connected(T0);
    let mut out = Vec::new();
    session.on_message(
        T0,
        from_client("A", 1, T0, "98=0|108=30|554=pw|141=Y|"),
        &mut out,
    );
    let reply = &sent(&out)[0];
    assert_eq!((reply.seq_num(), reply.text(141)), (Some(1), Some("Y")));
    assert_eq!((session.store().sender, session.store().target), (2, 2));
    assert!(session.store().messages.is_empty());
    // The Logon's own entry in the log carries the reset.
    assert!(!out.contains(&Action::SequenceReset));
}

#[test]
fn test_request_gets_a_heartbeat_with_its_id() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(T0, from_client("1", 2, T0, "112=ping-7|"), &mut out);
    let replies = sent(&out);
    assert_eq!(types(&out), vec!["0"]);
    assert_eq!(replies[0].text(112), Some("ping-7"));
    assert_eq!(session.store().target, 3);
}

#[test]
fn application_messages_are_delivered_in_sequence() {
    let mut session = logged_on();
    let mut out = Vec::new();
    let order = "11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=2|44=10|";
    session.on_message(T0, from_client("D", 2, T0, order), &mut out);
    assert!(
        matches!(&out[..], [Action::Deliver(m)] if m.text(11) == Some("c1")),
        "{out:?}"
    );
}

#[test]
fn a_gap_is_requested_once_then_filled_by_the_resend() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(T0, from_client("0", 5, T0, ""), &mut out);
    session.on_message(T0, from_client("0", 6, T0, ""), &mut out);
    assert_eq!(types(&out), vec!["2"], "one request for the whole gap");
    let request = &sent(&out)[0];
    assert_eq!((request.uint(7), request.uint(16)), (Some(2), Some(0)));
    assert_eq!(session.store().target, 2);
    // The counterparty gap-fills its admin messages and resends the order.
    out.clear();
    session.on_message(T0, from_client("4", 2, T0, "123=Y|36=4|"), &mut out);
    let order = "11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=2|44=10|";
    let dup = resent_by_client("D", 4, T0, T0 - SEC, order);
    session.on_message(T0, dup, &mut out);
    assert!(
        out.iter().any(|a| matches!(a, Action::Deliver(_))),
        "{out:?}"
    );
    assert_eq!(session.store().target, 5);
    assert!(session.resend.is_some(), "5 and 6 are still to come back");
    for seq in [5, 6] {
        session.on_message(T0, resent_by_client("0", seq, T0, T0, ""), &mut out);
    }
    assert_eq!(session.store().target, 7);
    assert!(session.resend.is_none());
}

#[test]
fn too_low_ends_the_session_unless_poss_dup() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(T0, resent_by_client("0", 1, T0, T0, ""), &mut out);
    assert!(out.is_empty(), "a duplicate is ignored: {out:?}");
    session.on_message(T0, from_client("0", 1, T0, ""), &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(disconnected(&out).unwrap_or_default().contains("too low"));
}

#[test]
fn sequence_reset_modes() {
    let mut session = logged_on();
    let mut out = Vec::new();
    // Reset mode ignores its own MsgSeqNum and moves forward.
    session.on_message(T0, from_client("4", 99, T0, "36=10|"), &mut out);
    assert!(out.is_empty());
    assert_eq!(session.store().target, 10);
    // ...but never backward.
    session.on_message(T0, from_client("4", 10, T0, "36=3|"), &mut out);
    let reject = &sent(&out)[0];
    assert_eq!(
        (reject.text(35), reject.uint(371), reject.uint(373)),
        (Some("3"), Some(36), Some(5))
    );
    assert_eq!(session.store().target, 10);
    // Gap fill mode obeys sequence numbers.
    out.clear();
    session.on_message(T0, from_client("4", 10, T0, "123=Y|36=15|"), &mut out);
    assert!(out.is_empty());
    assert_eq!(session.store().target, 15);
    session.on_message(T0, from_client("4", 15, T0, "123=Y|36=15|"), &mut out);
    assert_eq!(sent(&out)[0].uint(373), Some(5));
    assert_eq!(session.store().target, 16);
}

#[test]
fn resend_request_resends_application_messages_and_gap_fills_the_rest() {
    let mut session = logged_on();
    let mut out = Vec::new();
    for id in ["a", "b"] {
        session.send_app(T0, Outgoing::new("8").field(11, id), &mut out);
    }
    session.on_message(T0, from_client("1", 2, T0, "112=x|"), &mut out);
    session.send_app(T0, Outgoing::new("8").field(11, "c"), &mut out);
    // Sent: 1 Logon, 2 and 3 reports, 4 heartbeat, 5 report.
    out.clear();
    let later = T0 + 5 * SEC;
    session.on_message(later, from_client("2", 3, later, "7=1|16=0|"), &mut out);
    let resent = sent(&out);
    type Summary = (String, Option<u64>, Option<u64>, Option<String>);
    let summary: Vec<Summary> = resent
        .iter()
        .map(|m| {
            (
                m.text(35).unwrap_or_default().to_string(),
                m.seq_num(),
                m.uint(36),
                m.text(11).map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("4".into(), Some(1), Some(2), None),
            ("8".into(), Some(2), None, Some("a".into())),
            ("8".into(), Some(3), None, Some("b".into())),
            ("4".into(), Some(4), Some(5), None),
            ("8".into(), Some(5), None, Some("c".into())),
        ]
    );
    for message in &resent {
        assert_eq!(message.text(43), Some("Y"));
        assert!(message.get(122).is_some());
        assert_eq!(spec::validate(message).map_err(|p| p.text), Ok(()));
    }
    assert_eq!(
        resent[1].text(122).map(str::to_string),
        Some(time::format(T0))
    );
    assert_eq!(
        resent[1].text(52).map(str::to_string),
        Some(time::format(later))
    );
    assert_eq!(session.store().sender, 6, "a resend takes no new numbers");
}

#[test]
fn invalid_messages_get_a_reject_naming_the_tag_and_are_counted() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(
        T0,
        from_client(
            "D",
            2,
            T0,
            "11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|",
        ),
        &mut out,
    );
    let reject = &sent(&out)[0];
    assert_eq!(
        (
            reject.text(35),
            reject.uint(45),
            reject.uint(371),
            reject.text(372),
            reject.uint(373)
        ),
        (Some("3"), Some(2), Some(40), Some("D"), Some(1))
    );
    assert_eq!(session.store().target, 3);
    assert!(disconnected(&out).is_none());
}

#[test]
fn comp_id_and_sending_time_problems_end_the_session() {
    let mut session = logged_on();
    let mut out = Vec::new();
    let fields = format!("35=0|49=OTHER|56=EX|34=2|52={}|", time::format(T0));
    session.on_message(
        T0,
        Message::parse(seal(&fields.replace('|', "\x01").into_bytes())),
        &mut out,
    );
    assert_eq!(types(&out), vec!["3", "5"]);
    assert_eq!(sent(&out)[0].uint(373), Some(9));
    assert!(disconnected(&out).is_some());

    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(T0, from_client("0", 2, T0 - 300 * SEC, ""), &mut out);
    assert_eq!(types(&out), vec!["3", "5"]);
    assert_eq!(sent(&out)[0].uint(373), Some(10));
}

#[test]
fn timers_send_heartbeats_then_test_requests_then_give_up() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_tick(T0 + 10 * SEC, &mut out);
    assert!(out.is_empty());
    session.on_tick(T0 + 30 * SEC, &mut out);
    assert_eq!(types(&out), vec!["0"]);
    out.clear();
    session.on_tick(T0 + 36 * SEC, &mut out);
    assert_eq!(types(&out), vec!["1"]);
    out.clear();
    session.on_tick(T0 + 40 * SEC, &mut out);
    assert!(out.is_empty(), "one test request at a time: {out:?}");
    session.on_tick(T0 + 72 * SEC, &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(disconnected(&out).is_some());
}

#[test]
fn logout_both_ways() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_message(T0, from_client("5", 2, T0, ""), &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(disconnected(&out).is_some());

    let mut session = logged_on();
    let mut out = Vec::new();
    session.logout(T0, "shutting down", &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(disconnected(&out).is_none());
    out.clear();
    session.on_message(T0, from_client("5", 2, T0, ""), &mut out);
    assert_eq!(out, vec![Action::Disconnect("logout acknowledged".into())]);

    let mut session = logged_on();
    let mut out = Vec::new();
    session.logout(T0, "bye", &mut out);
    out.clear();
    session.on_tick(T0 + 3 * SEC, &mut out);
    assert!(disconnected(&out).is_some());
}

#[test]
fn reports_made_while_disconnected_wait_for_the_resend() {
    let mut session = logged_on();
    session.disconnected();
    let mut out = Vec::new();
    session.send_app(T0, Outgoing::new("8").field(11, "while-away"), &mut out);
    assert!(out.is_empty());
    session.connected(T0);
    session.on_message(T0, from_client("A", 2, T0, &logon_body("pw")), &mut out);
    // Our Logon is number 3; the client expects 2 and asks.
    assert_eq!(sent(&out)[0].seq_num(), Some(3));
    out.clear();
    session.on_message(T0, from_client("2", 3, T0, "7=2|16=0|"), &mut out);
    let resent = sent(&out);
    assert_eq!(resent[0].text(11), Some("while-away"));
    assert_eq!(resent[0].seq_num(), Some(2));
}

#[test]
fn garbled_frames_are_ignored_and_not_counted() {
    let mut session = logged_on();
    let mut out = Vec::new();
    session.on_frame(
        T0,
        Frame::Garbled {
            reason: "CheckSum (10) does not match",
        },
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(session.store().target, 2);
    session.on_frame_error(T0, &FrameError::TooLarge, &mut out);
    assert_eq!(types(&out), vec!["5"]);
    assert!(sent(&out)[0]
        .text(58)
        .unwrap_or_default()
        .contains("longer than"));
}

#[test]
fn secrets_compare_exactly() {
    assert!(same_secret(b"abc", b"abc"));
    assert!(!same_secret(b"abd", b"abc"));
    assert!(!same_secret(b"ab", b"abc"));
    assert!(!same_secret(b"abcd", b"abc"));
    assert!(!same_secret(b"", b"abc"));
}

#[test]
fn resend_requests_are_charged_to_the_message_rate() {
    let mut session = logged_on().with_throttle(crate::throttle::Throttle::new(10, 20));
    let mut out = Vec::new();
    for i in 0..30 {
        session.send_app(T0, Outgoing::new("8").field(11, i), &mut out);
    }
    // Sent: 1 Logon, 2 to 31 reports. A full bucket serves the whole
    // history, even past the burst; the excess is owed.
    out.clear();
    let whole = "7=1|16=0|";
    session.on_message(T0, from_client("2", 2, T0, whole), &mut out);
    let served = sent(&out);
    assert_eq!(
        served.iter().filter(|m| m.text(35) == Some("8")).count(),
        30
    );
    // Asking again at once is refused, FIX-style, and resends nothing.
    for seq in 3..6 {
        out.clear();
        session.on_message(T0, from_client("2", seq, T0, whole), &mut out);
        let answer = sent(&out);
        assert_eq!(answer.len(), 1, "{:?}", types(&out));
        let reject = &answer[0];
        assert_eq!(
            (
                reject.text(35),
                reject.uint(45),
                reject.text(372),
                reject.uint(373)
            ),
            (Some("3"), Some(seq), Some("2"), Some(99))
        );
        assert!(reject.text(58).is_some_and(|t| t.starts_with("throttled:")));
        assert!(disconnected(&out).is_none());
    }
    assert_eq!(
        session.store().next_target_seq(),
        6,
        "the requests are counted"
    );
    // Application messages pay the same debt.
    let verdict = session.throttle().take(T0 + SEC);
    assert_eq!(verdict, crate::throttle::Verdict::Refuse);
    // Once the rate has repaid it, an ordinary gap is served in full.
    let later = T0 + 4 * SEC;
    out.clear();
    session.on_message(later, from_client("2", 6, later, "7=12|16=31|"), &mut out);
    let resent = sent(&out);
    let seqs: Vec<Option<u64>> = resent.iter().map(Message::seq_num).collect();
    assert_eq!(seqs, (12..=31).map(Some).collect::<Vec<_>>());
}
