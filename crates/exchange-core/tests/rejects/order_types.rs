//! Market-to-limit orders and the minimum acceptable quantity: 16x the
//! quantity's shape, 227-229 what a phase or an empty book refuses.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn invalid_min_qty() {
    let mut h = Harness::funded(1);
    let bid = limit(1, "a", Side::Buy, "100", "1");
    for min_qty in ["0", "-1", "1.5", "0.00005"] {
        assert_rejected(
            &mut h,
            cmd(with_min_qty(bid.clone(), min_qty)),
            R::InvalidMinQty,
        );
    }
}

#[test]
pub fn min_qty_not_allowed() {
    let mut h = Harness::funded(1);
    let bid = limit(1, "a", Side::Buy, "100", "1");
    let mut stop = bid.clone();
    stop.order_type = OrderType::StopLimit;
    stop.ext = Some(Box::new(PlaceExt {
        stop_price: Some(dec("101")),
        ..PlaceExt::default()
    }));
    let orders = [post_only(bid), stop];
    for order in orders {
        assert_rejected(&mut h, cmd(with_min_qty(order, "0.5")), R::MinQtyNotAllowed);
    }
}

#[test]
pub fn min_qty_in_call() {
    let mut h = Harness::funded(1);
    h.run_checked(set_phase(Phase::Closed));
    let opened = h.run_checked(set_phase(Phase::PreOpen));
    assert_eq!(phases(&opened), [Phase::PreOpen]);
    let bid = with_min_qty(limit(1, "a", Side::Buy, "100", "1"), "0.5");
    assert_rejected(&mut h, cmd(bid), R::MinQtyInCall);
}

#[test]
pub fn market_to_limit_no_opposite() {
    let mut h = Harness::funded(1);
    // Its own side's orders give it no price.
    place_ok(&mut h, limit(1, "bid", Side::Buy, "99", "1"));
    let order = market_to_limit(1, "a", Side::Buy, "1");
    assert_rejected(&mut h, cmd(order), R::MarketToLimitNoOpposite);
}
