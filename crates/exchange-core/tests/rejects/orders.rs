//! 3xx: order management: client ids and which orders may be touched.

use exchange_types::limits::RECENTLY_CLOSED_CAPACITY;
use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn duplicate_client_order_id() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    let again = limit(1, "a", Side::Buy, "98", "1");
    assert_rejected(&mut h, cmd(again.clone()), R::DuplicateClientOrderId);
    assert_rejected(&mut h, cmd(ioc(again)), R::DuplicateClientOrderId);
    place_ok(&mut h, limit(2, "a", Side::Buy, "98", "1"));
}

#[test]
pub fn unknown_order() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    assert_rejected(&mut h, cancel_id(1, 999), R::UnknownOrder);
    assert_rejected(&mut h, cancel_id(1, 0), R::UnknownOrder);
    assert_rejected(&mut h, cancel_client(1, "never"), R::UnknownOrder);
    // Another account's order is indistinguishable from none.
    assert_rejected(&mut h, cancel_id(2, a), R::UnknownOrder);
    assert_rejected(&mut h, cancel_client(2, "a"), R::UnknownOrder);
    assert_rejected(&mut h, cancel_id(42, a), R::UnknownOrder);
    assert_rejected(
        &mut h,
        replace_id(1, 999, None, Some("0.5")),
        R::UnknownOrder,
    );
}

#[test]
pub fn order_not_open() {
    let mut h = Harness::funded(2);
    let canceled = place_ok(&mut h, limit(1, "c", Side::Buy, "99", "1"));
    h.run_checked(cancel_id(1, canceled));
    assert_rejected(&mut h, cancel_id(1, canceled), R::OrderNotOpen);
    assert_rejected(&mut h, cancel_client(1, "c"), R::OrderNotOpen);
    let filled = place_ok(&mut h, limit(1, "f", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "1"));
    assert_rejected(&mut h, cancel_id(1, filled), R::OrderNotOpen);
    assert_rejected(&mut h, cancel_client(1, "f"), R::OrderNotOpen);
    let expired = place_ok(&mut h, ioc(limit(1, "i", Side::Buy, "90", "1")));
    assert_rejected(&mut h, cancel_id(1, expired), R::OrderNotOpen);
    assert_rejected(&mut h, cancel_client(1, "i"), R::OrderNotOpen);
}

#[test]
pub fn replace_below_filled() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Sell, "100", "0.5"));
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("0.4999")),
        R::ReplaceBelowFilled,
    );
}

#[test]
pub fn closed_client_ids_are_remembered_for_the_last_capacity_closes_only() {
    let mut h = Harness::funded(1);
    let first = place_ok(&mut h, ioc(limit(1, "first", Side::Buy, "90", "1")));
    let mut out = Vec::new();
    let mut close_one = |h: &mut Harness, i: usize| {
        out.clear();
        let place = ioc(limit(1, &format!("o{i}"), Side::Buy, "90", "0.0001"));
        h.engine.apply(
            &Stamped {
                ts: 1,
                command: cmd(place),
            },
            &mut out,
        );
        assert_eq!(reject_reason(&out), None);
    };
    for i in 1..RECENTLY_CLOSED_CAPACITY {
        close_one(&mut h, i);
    }
    assert_rejected(&mut h, cancel_client(1, "first"), R::OrderNotOpen);
    close_one(&mut h, RECENTLY_CLOSED_CAPACITY);
    assert_rejected(&mut h, cancel_client(1, "first"), R::UnknownOrder);
    // Order ids are never forgotten: they are below the next id.
    assert_rejected(&mut h, cancel_id(1, first), R::OrderNotOpen);
}
