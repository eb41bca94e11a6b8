//! Hidden orders: 135 the order's shape, 141-142 the instrument's minimum.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn hidden_not_allowed() {
    let mut h = funded_with(with_hidden_minimum("1000"), 1);
    let bid = limit(1, "a", Side::Buy, "100", "20");
    let mut stop = bid.clone();
    stop.order_type = OrderType::StopLimit;
    stop.ext = Some(Box::new(PlaceExt {
        stop_price: Some(dec("101")),
        ..PlaceExt::default()
    }));
    let mut market = bid.clone();
    market.order_type = OrderType::Market;
    market.price = None;
    let refused = [
        ioc(bid.clone()),
        fok(bid.clone()),
        iceberg(bid.clone(), "1"),
        stop,
        market,
    ];
    for order in refused {
        assert_rejected(&mut h, cmd(hidden(order)), R::HiddenNotAllowed);
    }
}

#[test]
pub fn hidden_below_minimum() {
    let mut h = funded_with(with_hidden_minimum("1000"), 1);
    // 9.99 at 100 is worth 999 USD, one short of the minimum.
    let bid = hidden(limit(1, "a", Side::Buy, "100", "9.99"));
    assert_rejected(&mut h, cmd(bid), R::HiddenBelowMinimum);
    // Exactly the minimum is enough.
    place_ok(&mut h, hidden(limit(1, "b", Side::Buy, "100", "10")));
}

#[test]
pub fn hidden_not_offered() {
    let mut h = Harness::funded(1);
    let bid = hidden(limit(1, "a", Side::Buy, "100", "1000"));
    assert_rejected(&mut h, cmd(bid), R::HiddenNotOffered);
}
