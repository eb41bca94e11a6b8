//! The session fed raw bytes as a connection frames them: garbled input,
//! session-level rejects by the FIX table, and routing fields.

use super::test_support::*;
use super::*;
use crate::frame::next_frame;
use crate::store::MemoryStore;

/// Frames `bytes` as the connection does and hands every frame over.
fn feed(session: &mut Session<MemoryStore>, bytes: &[u8], out: &mut Vec<Action>) {
    let mut rest = bytes;
    while let Some((frame, used)) = next_frame(rest).expect("no fatal framing error") {
        rest = &rest[used..];
        session.on_frame(T0, frame, out);
    }
    assert!(rest.is_empty(), "unframed bytes left: {rest:?}");
}

fn client_bytes(fields: &str) -> Vec<u8> {
    seal(&fields.replace('|', "\x01").into_bytes())
}

#[test]
fn garbled_bytes_are_skipped_then_the_next_good_message_shows_the_gap() {
    let mut session = logged_on();
    let mut out = Vec::new();
    let sending_time = time::format(T0);
    let mut stream = Vec::new();
    // A wrong CheckSum.
    let mut bad_sum = client_bytes(&format!(
        "35=1|49=CLIENT|56=EX|34=2|52={sending_time}|112=a|"
    ));
    let n = bad_sum.len();
    bad_sum[n - 2] = if bad_sum[n - 2] == b'0' { b'1' } else { b'0' };
    stream.extend(bad_sum);
    // A BodyLength that does not lead to the trailer.
    let good = client_bytes(&format!(
        "35=1|49=CLIENT|56=EX|34=2|52={sending_time}|112=b|"
    ));
    let text = String::from_utf8(good).unwrap();
    let (head, rest) = text.split_once("\x019=").unwrap();
    let (length, body) = rest.split_once('\x01').unwrap();
    let short = length.parse::<usize>().unwrap() - 3;
    stream.extend(format!("{head}\x019={short}\x01{body}").into_bytes());
    // Noise between messages.
    stream.extend_from_slice(b"noise");
    // MsgType not the third field.
    stream.extend(client_bytes(&format!(
        "49=CLIENT|35=1|56=EX|34=2|52={sending_time}|112=c|"
    )));
    feed(&mut session, &stream, &mut out);
    assert!(out.is_empty(), "garbled messages get no answer: {out:?}");
    assert_eq!(session.store().target, 2);
    assert!(session.is_connected());
    // The next good message is numbered past them: a resend is asked for.
    feed(
        &mut session,
        &client_bytes(&format!(
            "35=1|49=CLIENT|56=EX|34=5|52={sending_time}|112=d|"
        )),
        &mut out,
    );
    let request = sent(&out);
    assert_eq!(types(&out), vec!["2"]);
    assert_eq!(request[0].uint(tags::BEGIN_SEQ_NO), Some(2));
    assert_eq!(request[0].uint(tags::END_SEQ_NO), Some(0));
}

#[test]
fn session_reject_reasons_follow_the_fix_table() {
    let at = time::format(T0);
    let order = format!("11=c1|55=BTC-USD|54=1|60={at}|38=1|40=2|");
    // (header after MsgType, body, RefTagID, SessionRejectReason)
    let cases: Vec<(String, String, Option<u64>, u64)> = vec![
        // Not a FIX tag at all: invalid tag number.
        (
            "49=CLIENT|56=EX".into(),
            format!("{order}9999=x|"),
            Some(9999),
            0,
        ),
        // A FIX tag, but not one of a NewOrderSingle.
        (
            "49=CLIENT|56=EX".into(),
            format!("{order}262=x|"),
            Some(262),
            2,
        ),
        // A required header field missing is not a CompID problem.
        ("49=CLIENT".into(), order.clone(), Some(56), 1),
        ("56=EX".into(), order.clone(), Some(49), 1),
        (
            "49=CLIENT|56=EX".into(),
            format!("11=|55=BTC-USD|54=1|60={at}|38=1|40=2|"),
            Some(11),
            4,
        ),
        (
            "49=CLIENT|56=EX".into(),
            "11=c1|55=BTC-USD|54=1|60=yesterday|38=1|40=2|".to_string(),
            Some(60),
            6,
        ),
        (
            "49=CLIENT|56=EX".into(),
            format!("{order}38=2|"),
            Some(38),
            13,
        ),
        (
            "49=CLIENT|56=EX".into(),
            format!("{order}43=N|"),
            Some(43),
            14,
        ),
    ];
    for (header, body, ref_tag, code) in cases {
        let mut session = logged_on();
        let mut out = Vec::new();
        let bytes = client_bytes(&format!("35=D|{header}|34=2|52={at}|{body}"));
        feed(&mut session, &bytes, &mut out);
        let answers = sent(&out);
        assert_eq!(types(&out), vec!["3"], "{header} {body}");
        assert_eq!(
            (
                answers[0].uint(tags::REF_TAG_ID),
                answers[0].uint(tags::SESSION_REJECT_REASON),
                answers[0].text(tags::REF_MSG_TYPE),
                answers[0].uint(tags::REF_SEQ_NUM),
            ),
            (ref_tag, Some(code), Some("D"), Some(2)),
            "{header} {body}"
        );
        assert!(disconnected(&out).is_none(), "{header} {body}");
        assert_eq!(session.store().target, 3, "a rejected message is counted");
    }
}

#[test]
fn location_routing_is_a_header_field_and_rejects_reverse_routing() {
    let at = time::format(T0);
    let mut session = logged_on();
    let mut out = Vec::new();
    let header = "115=DESK|116=SUB|144=NY|128=BROKER|129=TRADER|145=LDN";
    // Accepted in the header: a TestRequest with all six is answered.
    feed(
        &mut session,
        &client_bytes(&format!(
            "35=1|49=CLIENT|56=EX|34=2|52={at}|{header}|112=t|"
        )),
        &mut out,
    );
    assert_eq!(types(&out), vec!["0"]);
    // Rejected: the Reject carries each routing field reversed.
    let mut out = Vec::new();
    feed(
        &mut session,
        &client_bytes(&format!(
            "35=0|49=CLIENT|56=EX|34=3|52={at}|{header}|9999=x|"
        )),
        &mut out,
    );
    let reject = &sent(&out)[0];
    assert_eq!(reject.text(tags::MSG_TYPE), Some("3"));
    let routing = [128, 129, 145, 115, 116, 144].map(|tag| reject.text(tag));
    assert_eq!(
        routing,
        [
            Some("DESK"),
            Some("SUB"),
            Some("NY"),
            Some("BROKER"),
            Some("TRADER"),
            Some("LDN")
        ]
    );
}
