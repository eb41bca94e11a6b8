//! Session rules of the QuickFIX acceptance suite (FIX 4.4 server
//! definitions), each driven with the exact bytes a counterparty writes:
//! invalid tag numbers, repeating-group counts, a wrong BeginString, a
//! wrong BodyLength and a value in the wrong data format.

use super::test_support::{feed, logged_on, sent, T0};
use super::*;
use crate::frame::{checksum, SOH};

/// A whole message with `begin_string`, `|` for SOH in `fields` (MsgType
/// on), BodyLength and CheckSum computed.
fn sealed_as(begin_string: &str, fields: &str) -> Vec<u8> {
    let body = fields.replace('|', "\x01");
    let mut out = format!("8={begin_string}\x019={}\x01{body}", body.len()).into_bytes();
    let sum = checksum(&out);
    out.extend_from_slice(format!("10={sum:03}").as_bytes());
    out.push(SOH);
    out
}

/// A message from the client, header filled in up to SendingTime.
fn client(msg_type: &str, seq: u64, body: &str) -> Vec<u8> {
    let at = time::format(T0);
    sealed_as(
        "FIX.4.4",
        &format!("35={msg_type}|49=CLIENT|56=EX|34={seq}|52={at}|{body}"),
    )
}

/// The same message with its BodyLength moved by `delta` (CheckSum
/// recomputed so that only the length is wrong).
fn with_body_length_off_by(message: &[u8], delta: isize) -> Vec<u8> {
    let text = String::from_utf8(message.to_vec()).expect("ASCII");
    let (_, rest) = text.split_once("\x019=").expect("BodyLength");
    let (length, rest) = rest.split_once('\x01').expect("BodyLength ends");
    let body_len = length.parse::<usize>().expect("a number");
    let wrong = body_len.checked_add_signed(delta).expect("a length");
    let body = &rest[..body_len];
    let mut out = format!("8=FIX.4.4\x019={wrong}\x01{body}").into_bytes();
    let sum = checksum(&out);
    out.extend_from_slice(format!("10={sum:03}").as_bytes());
    out.push(SOH);
    out
}

/// The one Reject in `out`: (RefSeqNum, RefTagID, RefMsgType, reason).
fn the_reject(out: &[Action]) -> (Option<u64>, Option<String>, Option<String>, Option<u64>) {
    let answers = sent(out);
    assert_eq!(answers.len(), 1, "one answer: {out:?}");
    let reject = &answers[0];
    assert_eq!(reject.text(tags::MSG_TYPE), Some("3"), "{out:?}");
    (
        reject.uint(tags::REF_SEQ_NUM),
        reject.text(tags::REF_TAG_ID).map(str::to_string),
        reject.text(tags::REF_MSG_TYPE).map(str::to_string),
        reject.uint(tags::SESSION_REJECT_REASON),
    )
}

fn expected(
    seq: u64,
    tag: &str,
    msg_type: &str,
    reason: u64,
) -> (Option<u64>, Option<String>, Option<String>, Option<u64>) {
    (
        Some(seq),
        Some(tag.to_string()),
        Some(msg_type.to_string()),
        Some(reason),
    )
}

fn is_disconnected(out: &[Action]) -> bool {
    out.iter().any(|a| matches!(a, Action::Disconnect(_)))
}

#[test]
fn an_invalid_tag_number_is_rejected_naming_the_tag_even_zero() {
    let mut session = logged_on();
    for (seq, field, tag) in [
        (2, "999=HI|", "999"),
        (3, "0=HI|", "0"),
        (4, "5000=HI|", "5000"),
    ] {
        let out = feed(&mut session, &client("0", seq, field));
        assert_eq!(the_reject(&out), expected(seq, tag, "0", 0), "{field}");
        assert!(!is_disconnected(&out));
        assert_eq!(
            session.store().target,
            seq + 1,
            "a rejected message is counted"
        );
    }
}

const ORDER_HEAD: &str = "11=ID|21=1|40=1|54=1|38=200.00|55=INTC|";

#[test]
fn a_num_in_group_that_does_not_match_its_entries_is_rejected() {
    let mut session = logged_on();
    let at = time::format(T0);
    let trading_sessions = format!("{ORDER_HEAD}386=3|336=PRE-OPEN|336=AFTER-HOURS|60={at}|");
    let out = feed(&mut session, &client("D", 2, &trading_sessions));
    assert_eq!(the_reject(&out), expected(2, "386", "D", 16));
    let parties = format!("{ORDER_HEAD}60={at}|453=3|448=P1|447=D|452=3|448=P2|447=D|452=3|");
    let out = feed(&mut session, &client("D", 3, &parties));
    assert_eq!(the_reject(&out), expected(3, "453", "D", 16));
    // Counted right, the group is well formed but not one the gateway
    // takes: refused as a tag the message type does not accept here.
    let counted = format!("{ORDER_HEAD}386=2|336=PRE-OPEN|336=AFTER-HOURS|60={at}|");
    let out = feed(&mut session, &client("D", 4, &counted));
    assert_eq!(the_reject(&out), expected(4, "386", "D", 2));
    assert_eq!(session.store().target, 5);
}

#[test]
fn a_wrong_begin_string_after_logon_is_answered_with_logout_then_disconnect() {
    for begin_string in ["FIX.4.2", "FIX.4.1"] {
        let mut session = logged_on();
        let at = time::format(T0);
        let bytes = sealed_as(
            begin_string,
            &format!("35=1|49=CLIENT|56=EX|34=2|52={at}|112=id|"),
        );
        let out = feed(&mut session, &bytes);
        let answers = sent(&out);
        assert_eq!(answers.len(), 1, "{out:?}");
        assert_eq!(answers[0].text(tags::MSG_TYPE), Some("5"));
        let text = answers[0].text(tags::TEXT).unwrap_or_default();
        assert!(text.contains("BeginString"), "{text}");
        assert!(text.contains(begin_string), "{text}");
        assert!(
            matches!(out.last(), Some(Action::Disconnect(_))),
            "closed after the Logout: {out:?}"
        );
        assert!(!session.is_connected());
    }
}

#[test]
fn a_wrong_body_length_is_ignored_and_the_next_message_is_processed() {
    let mut session = logged_on();
    let at = time::format(T0);
    let order = format!("11=ID|21=3|40=1|54=1|55=INTC|60={at}|");
    let too_short = with_body_length_off_by(&client("D", 2, &order), -20);
    let out = feed(&mut session, &too_short);
    assert!(out.is_empty(), "no answer to a garbled message: {out:?}");
    assert_eq!(session.store().target, 2, "no sequence number consumed");
    let out = feed(&mut session, &client("D", 2, &order));
    assert!(
        matches!(out.as_slice(), [Action::Deliver(m)] if m.seq_num() == Some(2)),
        "{out:?}"
    );
    // Too long: the claimed end falls inside the next message, which is
    // found again by its BeginString.
    let mut stream = with_body_length_off_by(&client("D", 3, &order), 20);
    stream.extend(client("1", 3, "112=after|"));
    let out = feed(&mut session, &stream);
    let answers = sent(&out);
    assert_eq!(answers.len(), 1, "{out:?}");
    assert_eq!(
        (
            answers[0].text(tags::MSG_TYPE),
            answers[0].text(tags::TEST_REQ_ID)
        ),
        (Some("0"), Some("after"))
    );
    assert_eq!(session.store().target, 4);
    assert!(session.is_logged_on());
}

#[test]
fn a_value_in_the_wrong_format_is_a_session_reject_naming_the_tag() {
    let mut session = logged_on();
    let at = time::format(T0);
    let cases = [
        format!("11=c1|55=BTC-USD|54=1|60={at}|38=1|40=2|44=100|59=6|126=not-a-time|"),
        format!("11=c1|55=BTC-USD|54=1|60={at}|38=+200.00|40=2|44=100|"),
    ];
    for (seq, (body, tag)) in (2..).zip(cases.iter().zip(["126", "38"])) {
        let out = feed(&mut session, &client("D", seq, body));
        assert_eq!(the_reject(&out), expected(seq, tag, "D", 6), "{body}");
    }
    // A well-formed value reaches the application, which decides on it.
    let out = feed(
        &mut session,
        &client(
            "D",
            4,
            &format!("11=c1|55=BTC-USD|54=1|60={at}|38=1|40=2|44=100|59=6|126=20990101-00:00:00|"),
        ),
    );
    assert!(matches!(out.as_slice(), [Action::Deliver(_)]), "{out:?}");
}
