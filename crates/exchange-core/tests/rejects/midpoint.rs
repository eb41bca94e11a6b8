//! Midpoint orders: 170 the shape, 235 a call phase, 415 a full midpoint
//! book.

use exchange_types::limits::MAX_MIDPOINT_ORDERS_PER_INSTRUMENT;
use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn midpoint_not_allowed() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "other", Side::Sell, "200", "1"));
    let bid = midpoint(1, "a", Side::Buy, Some("100"), "1");
    let paired = Place {
        ext: Some(Box::new(PlaceExt {
            oco_with: Some(coid("other")),
            ..PlaceExt::default()
        })),
        ..bid.clone()
    };
    // At-open and at-close are refused outside their calls first, and
    // midpoint orders in any call (the edges' shape check names them).
    let orders = [fok(bid), paired];
    for order in orders {
        assert_rejected(&mut h, cmd(order), R::MidpointNotAllowed);
    }
}

#[test]
pub fn midpoint_in_call() {
    let mut h = Harness::funded(1);
    let called = h.run_checked(set_phase(Phase::ClosingCall));
    assert_eq!(phases(&called), [Phase::ClosingCall]);
    let order = midpoint(1, "a", Side::Buy, None, "1");
    assert_rejected(&mut h, cmd(order), R::MidpointInCall);
}

#[test]
pub fn too_many_midpoint_orders() {
    let mut h = Harness::funded(2);
    for n in 0..MAX_MIDPOINT_ORDERS_PER_INSTRUMENT {
        let order = midpoint(1, &format!("s{n}"), Side::Sell, Some("100"), "0.0001");
        assert_eq!(reject_reason(&h.run(cmd(order))), None);
    }
    h.engine.audit().expect("a full midpoint book is whole");
    let order = midpoint(2, "b", Side::Buy, Some("90"), "1");
    assert_rejected(&mut h, cmd(order), R::TooManyMidpointOrders);
    // An immediate one never rests, and is taken.
    let order = ioc(midpoint(2, "c", Side::Buy, Some("90"), "1"));
    assert_eq!(reject_reason(&h.run_checked(cmd(order))), None);
}
