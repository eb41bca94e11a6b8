//! 1xx: the command itself is malformed or names nothing that exists.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn unknown_instrument() {
    let mut h = Harness::funded(1);
    let xrp = on("XRP-USD", limit(1, "a", Side::Buy, "1", "1"));
    assert_rejected(&mut h, cmd(xrp), R::UnknownInstrument);
    assert_rejected(&mut h, halt("XRP-USD"), R::UnknownInstrument);
    assert_rejected(&mut h, resume("XRP-USD"), R::UnknownInstrument);
}

#[test]
pub fn unknown_account() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        cmd(limit(9, "a", Side::Sell, "100", "1")),
        R::UnknownAccount,
    );
    assert_rejected(&mut h, withdraw(9, "USD", "1"), R::UnknownAccount);
}

#[test]
pub fn price_required() {
    let mut h = Harness::funded(1);
    let place = Place {
        price: None,
        ..limit(1, "a", Side::Buy, "1", "1")
    };
    assert_rejected(&mut h, cmd(place), R::PriceRequired);
}

#[test]
pub fn price_not_allowed() {
    let mut h = Harness::funded(1);
    let place = Place {
        price: Some(dec("100")),
        ..market(1, "a", Side::Buy, "1")
    };
    assert_rejected(&mut h, cmd(place), R::PriceNotAllowed);
}

#[test]
pub fn invalid_price() {
    let mut h = Harness::funded(1);
    for price in ["0", "0.00", "-100", "-0.01"] {
        assert_rejected(
            &mut h,
            cmd(limit(1, "a", Side::Buy, price, "1")),
            R::InvalidPrice,
        );
    }
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(&mut h, replace(1, "a", Some("0"), None), R::InvalidPrice);
}

#[test]
pub fn price_not_on_tick() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "100.005", "1")),
        R::PriceNotOnTick,
    );
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        replace(1, "a", Some("99.999"), None),
        R::PriceNotOnTick,
    );
}

#[test]
pub fn invalid_quantity() {
    let mut h = Harness::funded(1);
    for qty in ["0", "0.0000", "-1"] {
        assert_rejected(
            &mut h,
            cmd(limit(1, "a", Side::Buy, "100", qty)),
            R::InvalidQuantity,
        );
    }
    assert_rejected(
        &mut h,
        cmd(market(1, "m", Side::Sell, "-0.5")),
        R::InvalidQuantity,
    );
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(&mut h, replace(1, "a", None, Some("0")), R::InvalidQuantity);
}

#[test]
pub fn quantity_not_on_lot() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "100", "0.00015")),
        R::QuantityNotOnLot,
    );
}

#[test]
pub fn too_many_decimals() {
    let mut h = Harness::funded(1);
    let price = limit(1, "a", Side::Buy, "100.000000001", "1");
    assert_rejected(&mut h, cmd(price), R::TooManyDecimals);
    let qty = limit(1, "a", Side::Buy, "100", "0.000000001");
    assert_rejected(&mut h, cmd(qty), R::TooManyDecimals);
    assert_rejected(&mut h, deposit(1, "USD", "0.000000001"), R::TooManyDecimals);
    // Trailing zeros are not decimals the exchange would have to drop.
    place_ok(
        &mut h,
        limit(1, "a", Side::Buy, "100.0000000000", "1.0000000000"),
    );
}

#[test]
pub fn quantity_below_minimum() {
    let mut h = funded_with(
        AddInstrument {
            min_qty: Some(dec("0.01")),
            ..btc_usd()
        },
        1,
    );
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "100", "0.0099")),
        R::QuantityBelowMinimum,
    );
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "0.01"));
}

#[test]
pub fn quantity_above_maximum() {
    let mut h = funded_with(
        AddInstrument {
            max_qty: Some(dec("10")),
            ..btc_usd()
        },
        1,
    );
    let big = limit(1, "a", Side::Sell, "100", "10.0001");
    assert_rejected(&mut h, cmd(big), R::QuantityAboveMaximum);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "10"));
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("10.0001")),
        R::QuantityAboveMaximum,
    );
}

#[test]
pub fn post_only_not_allowed() {
    let mut h = Harness::funded(1);
    let gtc = limit(1, "a", Side::Buy, "100", "1");
    assert_rejected(
        &mut h,
        cmd(post_only(ioc(gtc.clone()))),
        R::PostOnlyNotAllowed,
    );
    assert_rejected(&mut h, cmd(post_only(fok(gtc))), R::PostOnlyNotAllowed);
    let mkt = post_only(market(1, "m", Side::Buy, "1"));
    assert_rejected(&mut h, cmd(mkt), R::PostOnlyNotAllowed);
}

#[test]
pub fn invalid_amount() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, deposit(1, "USD", "0"), R::InvalidAmount);
    assert_rejected(&mut h, deposit(1, "USD", "-5"), R::InvalidAmount);
    assert_rejected(&mut h, withdraw(1, "USD", "0"), R::InvalidAmount);
    assert_rejected(&mut h, withdraw(1, "BTC", "-1"), R::InvalidAmount);
}

#[test]
pub fn unknown_asset() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, deposit(1, "DOGE", "1"), R::UnknownAsset);
    assert_rejected(&mut h, withdraw(1, "DOGE", "1"), R::UnknownAsset);
}

#[test]
pub fn nothing_to_replace() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(&mut h, replace(1, "a", None, None), R::NothingToReplace);
    assert_rejected(
        &mut h,
        replace(1, "a", Some("100.00"), Some("1.0")),
        R::NothingToReplace,
    );
    // The stop price a stop already has is no change either.
    let stop_limit = Place {
        order_type: OrderType::StopLimit,
        ext: Some(Box::new(PlaceExt {
            stop_price: Some(dec("105")),
            ..PlaceExt::default()
        })),
        ..limit(1, "sl", Side::Buy, "106", "1")
    };
    place_ok(&mut h, stop_limit);
    assert_rejected(&mut h, replace_stop(1, "sl", "105.0"), R::NothingToReplace);
}
