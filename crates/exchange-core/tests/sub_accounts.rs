//! Sub-accounts and internal transfers: funds move within a family only,
//! the supply stays put, and the links survive a snapshot.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

#[test]
fn transfers_move_available_funds_within_a_family_and_keep_the_supply() {
    let mut h = Harness::funded(1);
    let events = h.run_checked(link_sub(1, 5));
    assert_eq!(
        events[0].kind,
        EventKind::SubAccountLinked(SubAccountLinked { owner: 1, sub: 5 })
    );
    h.run_checked(link_sub(1, 6));
    // A resting buy holds part of the owner's USD: only the rest moves.
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1000"));
    let (total, available) = bal(&h, 1, "USD");
    let too_much = format!("{}", Dec::new(available as i64 + 1, AMOUNT_SCALE as u8));
    let refused = h.run_checked(internal_transfer(1, 5, "USD", &too_much));
    assert_eq!(
        reject_reason(&refused),
        Some(RejectReason::InsufficientFunds)
    );
    let events = h.run_checked(internal_transfer(1, 5, "USD", "1000"));
    assert_eq!(
        balance_updates(&events),
        vec![
            (
                1,
                "USD".to_string(),
                total - units("1000"),
                available - units("1000")
            ),
            (5, "USD".to_string(), units("1000"), units("1000")),
        ]
    );
    // Sibling to sibling, and back to the owner.
    h.run_checked(internal_transfer(5, 6, "USD", "400"));
    h.run_checked(internal_transfer(6, 1, "USD", "100"));
    assert_eq!(bal(&h, 5, "USD"), (units("600"), units("600")));
    assert_eq!(bal(&h, 6, "USD"), (units("300"), units("300")));
    // The sub-account trades with what it was given.
    place_ok(&mut h, limit(5, "s", Side::Buy, "1", "100"));
}

#[test]
fn links_survive_a_snapshot_and_restoring_continues_the_same() {
    let mut h = Harness::funded(2);
    h.run_checked(link_sub(1, 2));
    h.run_checked(link_sub(1, 7));
    h.run_checked(set_limits(2, Some("1"), None, None, None));
    let snapshot = h.engine.snapshot();
    let mut restored = Engine::restore(&snapshot).expect("restore");
    assert_eq!(restored.snapshot(), snapshot);
    for command in [
        internal_transfer(2, 7, "BTC", "3"),
        link_sub(2, 3),
        link_sub(1, 3),
    ] {
        let stamped = Stamped { ts: 99, command };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut a);
        restored.apply(&stamped, &mut b);
        assert_eq!(a, b);
    }
    assert_eq!(h.engine.state_hash(), restored.state_hash());
    // A damaged link section is refused, not misread.
    let snapshot = h.engine.snapshot();
    for cut in 1..9 {
        assert!(Engine::restore(&snapshot[..snapshot.len() - cut]).is_err());
    }
}
