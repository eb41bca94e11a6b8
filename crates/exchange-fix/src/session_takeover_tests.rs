//! A session taken over from another process (`Session::take_over`): the
//! counterparty's numbers continue, ours start at the reservation after
//! the reports this process stored since the latest logon, and its
//! ResendRequest gets gap fills around those reports, resent with
//! PossDupFlag and their first SendingTime.

use proptest::prelude::*;

use super::test_support::*;
use super::*;
use crate::store::MemoryStore;

fn report(cl_ord_id: &str, exec_id: &str) -> Outgoing {
    Outgoing::new("8")
        .field(tags::CL_ORD_ID, cl_ord_id)
        .field(tags::EXEC_ID, exec_id)
}

/// A session of this process taking over at `first` with `kept` reports
/// it made (at T0 + n s) since the session's latest logon, whose
/// counterparty logs on with `logon_seq`.
fn taken_over(
    next_target: u64,
    first: u64,
    kept: usize,
    logon_seq: u64,
) -> (Session<MemoryStore>, Vec<Action>) {
    let mut session = Session::new(settings(), MemoryStore::default());
    // Made before the latest logon: the predecessor's business, not sent
    // again.
    let mut ignored = Vec::new();
    session.send_app(T0, report("old", "0-0"), &mut ignored);
    let since = session.store().next_sender_seq();
    for n in 0..kept {
        let made = T0 + n as u64 * SEC;
        let report = report(&format!("c{n}"), &format!("{n}-1"));
        session.send_app(made, report, &mut ignored);
    }
    assert!(ignored.is_empty(), "nothing is written while disconnected");
    let kept = session.stored_from(since);
    session.take_over(next_target, first, kept);
    session.connected(T0);
    let mut out = Vec::new();
    let logon = from_client("A", logon_seq, T0, &logon_body("pw"));
    session.on_message(T0, logon, &mut out);
    (session, out)
}

/// Runs a ResendRequest from `begin` to the end and checks the answer
/// covers `begin` up to the Logon answer, each number once, in order;
/// returns the resent reports' ClOrdIDs.
fn resend_from(session: &mut Session<MemoryStore>, begin: u64, seq: u64) -> Vec<String> {
    let logon_answer = session.store().next_sender_seq() - 1;
    let mut out = Vec::new();
    let request = from_client("2", seq, T0, &format!("7={begin}|16=0|"));
    session.on_message(T0 + SEC, request, &mut out);
    let mut expected = begin;
    let mut resent = Vec::new();
    for message in sent(&out) {
        assert_eq!(message.seq_num(), Some(expected));
        match message.text(tags::MSG_TYPE) {
            Some("4") => {
                assert_eq!(message.text(tags::GAP_FILL_FLAG), Some("Y"));
                let new_seq = message.uint(tags::NEW_SEQ_NO).expect("NewSeqNo");
                assert!(new_seq > expected);
                expected = new_seq;
            }
            Some("8") => {
                assert_eq!(message.text(tags::POSS_DUP_FLAG), Some("Y"));
                // Its first SendingTime: when the kept report was made.
                let made = time::format(T0 + resent.len() as u64 * SEC);
                assert_eq!(message.get(tags::ORIG_SENDING_TIME), Some(made.as_bytes()));
                resent.push(
                    message
                        .text(tags::CL_ORD_ID)
                        .unwrap_or_default()
                        .to_string(),
                );
                expected += 1;
            }
            other => panic!("{other:?} in a resend"),
        }
    }
    assert_eq!(expected, logon_answer + 1, "the answer reaches our Logon");
    resent
}

#[test]
fn the_counterparty_continues_and_gets_the_kept_reports_again() {
    let (mut session, out) = taken_over(8, 1_001, 3, 8);
    assert!(out.contains(&Action::LoggedOn), "{out:?}");
    let answer = &sent(&out)[0];
    assert_eq!(answer.text(tags::MSG_TYPE), Some("A"));
    assert_eq!(answer.seq_num(), Some(1_004), "after the kept reports");
    assert_eq!(
        session.store().next_target_seq(),
        9,
        "its Logon was expected"
    );
    // It had read up to 41 from the process that died.
    let resent = resend_from(&mut session, 42, 9);
    assert_eq!(resent, ["c0", "c1", "c2"]);
}

#[test]
fn a_logon_above_the_venue_s_last_number_asks_for_the_rest() {
    // The dead process took 8 to 10 without the log (say heartbeats).
    let (session, out) = taken_over(8, 1_001, 0, 11);
    assert_eq!(types(&out), ["A", "2"]);
    let request = &sent(&out)[1];
    assert_eq!(request.uint(tags::BEGIN_SEQ_NO), Some(8));
    assert_eq!(session.store().next_sender_seq(), 1_003);
}

#[test]
fn the_last_number_applied_is_the_least_expected() {
    let mut session = logged_on();
    session.expect_at_least(1);
    assert_eq!(session.store().next_target_seq(), 2);
    session.expect_at_least(7);
    assert_eq!(session.store().next_target_seq(), 7);
}

proptest! {
    /// Whatever the counterparty read (`begin`), the reservation and the
    /// reports kept, the resend covers every number from its first
    /// missing one to our Logon once, and carries every kept report.
    #[test]
    fn every_number_is_covered_once(
        read in 1u64..2_000,
        above in 0u64..2_000,
        kept in 0usize..20,
    ) {
        let first = read + above + 1;
        let (mut session, _) = taken_over(5, first, kept, 5);
        let resent = resend_from(&mut session, read + 1, 6);
        let expected: Vec<String> = (0..kept).map(|n| format!("c{n}")).collect();
        prop_assert_eq!(resent, expected);
    }
}

#[test]
fn only_a_logon_the_session_would_take_is_worth_recording() {
    let session = Session::new(settings(), MemoryStore::default());
    let good = from_client("A", 5, T0, &logon_body("pw"));
    assert!(session.logon_acceptable(T0, &good));
    let refused = [
        from_client("A", 5, T0, &logon_body("wrong")),
        from_client("0", 5, T0, ""),
        from_client("A", 5, T0, "98=0|108=0|554=pw|"),
        from_client("A", 5, T0, "98=1|108=30|554=pw|"),
        from_client("A", 5, T0, "98=0|108=30|554=pw|141=Y|"),
        from_client("A", 5, T0 + 600 * SEC, &logon_body("pw")),
    ];
    for logon in refused {
        assert!(!session.logon_acceptable(T0, &logon), "{logon:?}");
    }
}
