//! 12x, 31x and 41x: stop and if-touched orders and one-cancels-other
//! pairs.

use exchange_types::limits::{
    MAX_OPEN_ORDERS_PER_ACCOUNT, MAX_STOP_ORDERS_PER_SIDE, MAX_TRAILING_STOPS_PER_INSTRUMENT,
};
use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

fn ext(place: Place, f: impl FnOnce(&mut PlaceExt)) -> Place {
    let mut e = place.ext.clone().map(|b| *b).unwrap_or_default();
    f(&mut e);
    Place {
        ext: Some(Box::new(e)),
        ..place
    }
}

fn stop(account: u64, id: &str, side: Side, stop: &str) -> Place {
    ext(
        Place {
            order_type: OrderType::Stop,
            price: None,
            ..limit(account, id, side, "1", "0.0001")
        },
        |e| e.stop_price = Some(dec(stop)),
    )
}

fn trailing(account: u64, id: &str, t: Trailing) -> Place {
    ext(
        Place {
            order_type: OrderType::Stop,
            price: None,
            ..limit(account, id, Side::Sell, "1", "0.0001")
        },
        |e| e.trailing = Some(t),
    )
}

/// BTC-USD with a last price of 100.
fn traded() -> Harness {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    h
}

#[test]
pub fn stop_price_required() {
    let mut h = traded();
    let place = Place {
        order_type: OrderType::StopLimit,
        ..limit(1, "a", Side::Buy, "100", "1")
    };
    assert_rejected(&mut h, cmd(place), R::StopPriceRequired);
}

#[test]
pub fn stop_price_not_allowed() {
    let mut h = traded();
    let place = ext(limit(1, "a", Side::Buy, "100", "1"), |e| {
        e.stop_price = Some(dec("101"))
    });
    assert_rejected(&mut h, cmd(place), R::StopPriceNotAllowed);
    let place = ext(market(1, "a", Side::Sell, "1"), |e| {
        e.trailing = Some(Trailing::Bps(10))
    });
    assert_rejected(&mut h, cmd(place), R::StopPriceNotAllowed);
    // Nor may a replace give one to an order that is not a stop.
    place_ok(&mut h, limit(1, "l", Side::Buy, "90", "1"));
    assert_rejected(&mut h, replace_stop(1, "l", "95"), R::StopPriceNotAllowed);
}

#[test]
pub fn stop_would_trigger_immediately() {
    let mut h = traded();
    assert_rejected(
        &mut h,
        cmd(stop(1, "a", Side::Sell, "100")),
        R::StopWouldTriggerImmediately,
    );
    assert_rejected(
        &mut h,
        cmd(stop(1, "a", Side::Sell, "101")),
        R::StopWouldTriggerImmediately,
    );
    // A sell if-touched order is reached from below: at or under 100.
    let take_profit = ext(
        Place {
            order_type: OrderType::MarketIfTouched,
            price: None,
            ..limit(1, "tp", Side::Sell, "1", "0.0001")
        },
        |e| e.stop_price = Some(dec("99.5")),
    );
    assert_rejected(&mut h, cmd(take_profit), R::StopWouldTriggerImmediately);
    // A replace that moves a stop to where the price already is.
    place_ok(&mut h, stop(1, "st", Side::Sell, "90"));
    for to in ["100", "100.5"] {
        assert_rejected(
            &mut h,
            replace_stop(1, "st", to),
            R::StopWouldTriggerImmediately,
        );
    }
}

#[test]
pub fn stop_market_buy_needs_collar() {
    let mut h = traded();
    assert_rejected(
        &mut h,
        cmd(stop(1, "a", Side::Buy, "105")),
        R::StopMarketBuyNeedsCollar,
    );
}

#[test]
pub fn invalid_trailing() {
    let mut h = traded();
    for t in [
        Trailing::Bps(0),
        Trailing::Bps(10_000),
        Trailing::Amount(dec("0")),
        Trailing::Amount(dec("100")),
        Trailing::Amount(dec("0.001")),
    ] {
        assert_rejected(&mut h, cmd(trailing(1, "a", t)), R::InvalidTrailing);
    }
    // A trailing stop's stop price follows the last price: it is not set.
    place_ok(&mut h, trailing(1, "t", Trailing::Bps(100)));
    assert_rejected(&mut h, replace_stop(1, "t", "95"), R::InvalidTrailing);
}

#[test]
pub fn trailing_not_allowed() {
    let mut h = traded();
    let touched = |order_type, price: Option<&str>, f: fn(&mut PlaceExt)| {
        let p = Place {
            order_type,
            price: price.map(dec),
            ..limit(1, "a", Side::Sell, "1", "0.0001")
        };
        cmd(ext(p, f))
    };
    let cases = [
        touched(OrderType::MarketIfTouched, None, |e| {
            e.trailing = Some(Trailing::Bps(100));
        }),
        touched(OrderType::LimitIfTouched, Some("104"), |e| {
            e.trailing = Some(Trailing::Amount(dec("2")));
        }),
        touched(OrderType::LimitIfTouched, Some("104"), |e| {
            (e.stop_price, e.trailing) = (Some(dec("105")), Some(Trailing::Bps(100)));
        }),
    ];
    for command in cases {
        assert_rejected(&mut h, command, R::TrailingNotAllowed);
    }
}

#[test]
pub fn trailing_needs_last_price() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        cmd(trailing(1, "a", Trailing::Bps(100))),
        R::TrailingNeedsLastPrice,
    );
}

#[test]
pub fn stop_price_not_on_tick() {
    let mut h = traded();
    for price in ["90.001", "0", "-5"] {
        assert_rejected(
            &mut h,
            cmd(stop(1, "a", Side::Sell, price)),
            R::StopPriceNotOnTick,
        );
    }
    place_ok(&mut h, stop(1, "st", Side::Sell, "90"));
    for price in ["90.001", "0", "-5"] {
        assert_rejected(&mut h, replace_stop(1, "st", price), R::StopPriceNotOnTick);
    }
}

#[test]
pub fn oco_order_not_found() {
    let mut h = traded();
    let place = ext(stop(1, "a", Side::Sell, "90"), |e| {
        e.oco_with = Some(coid("none"))
    });
    assert_rejected(&mut h, cmd(place), R::OcoOrderNotFound);
    // Another account's order is not this one's to pair with.
    place_ok(&mut h, limit(2, "theirs", Side::Sell, "110", "1"));
    let place = ext(stop(1, "a", Side::Sell, "90"), |e| {
        e.oco_with = Some(coid("theirs"))
    });
    assert_rejected(&mut h, cmd(place), R::OcoOrderNotFound);
}

#[test]
pub fn oco_already_linked() {
    let mut h = traded();
    place_ok(&mut h, limit(1, "tp", Side::Sell, "110", "1"));
    let pair = |id: &str, at: &str| {
        ext(stop(1, id, Side::Sell, at), |e| {
            e.oco_with = Some(coid("tp"))
        })
    };
    place_ok(&mut h, pair("sl", "90"));
    assert_rejected(&mut h, cmd(pair("x", "80")), R::OcoAlreadyLinked);
}

#[test]
pub fn too_many_stop_orders() {
    let per_account = MAX_OPEN_ORDERS_PER_ACCOUNT as usize;
    let accounts = MAX_STOP_ORDERS_PER_SIDE.div_ceil(per_account) as u64 + 1;
    let mut h = Harness::funded(accounts);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    let mut out = Vec::new();
    for i in 0..MAX_STOP_ORDERS_PER_SIDE {
        out.clear();
        let account = 1 + (i / per_account) as u64;
        h.engine.apply(
            &Stamped {
                ts: h.ts,
                command: cmd(stop(account, &format!("o{i}"), Side::Sell, "90")),
            },
            &mut out,
        );
        assert_eq!(reject_reason(&out), None);
    }
    assert_rejected(
        &mut h,
        cmd(stop(accounts, "n", Side::Sell, "90")),
        R::TooManyStopOrders,
    );
}

#[test]
pub fn too_many_trailing_stops() {
    let mut h = traded();
    let mut out = Vec::new();
    for i in 0..MAX_TRAILING_STOPS_PER_INSTRUMENT {
        out.clear();
        h.engine.apply(
            &Stamped {
                ts: h.ts,
                command: cmd(trailing(1, &format!("t{i}"), Trailing::Bps(100))),
            },
            &mut out,
        );
        assert_eq!(reject_reason(&out), None);
    }
    assert_rejected(
        &mut h,
        cmd(trailing(2, "n", Trailing::Bps(100))),
        R::TooManyTrailingStops,
    );
}
