//! 13x: icebergs (display quantity) and market buys sized by funds.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn display_qty_not_allowed() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "m", Side::Sell, "100", "1"));
    let on_market = iceberg(market(1, "a", Side::Buy, "1"), "0.1");
    assert_rejected(&mut h, cmd(on_market), R::DisplayQtyNotAllowed);
    let on_ioc = iceberg(ioc(limit(1, "a", Side::Buy, "90", "1")), "0.1");
    assert_rejected(&mut h, cmd(on_ioc), R::DisplayQtyNotAllowed);
    let on_fok = iceberg(fok(limit(1, "a", Side::Buy, "90", "1")), "0.1");
    assert_rejected(&mut h, cmd(on_fok), R::DisplayQtyNotAllowed);
}

#[test]
pub fn invalid_display_qty() {
    let mut h = Harness::funded(1);
    for display in ["1", "2", "0.00005", "0"] {
        let place = iceberg(limit(1, "a", Side::Buy, "90", "1"), display);
        assert_rejected(&mut h, cmd(place), R::InvalidDisplayQty);
    }
    let mut h = funded_with(
        AddInstrument {
            min_qty: Some(dec("0.01")),
            ..btc_usd()
        },
        1,
    );
    let below_min = iceberg(limit(1, "a", Side::Buy, "90", "1"), "0.001");
    assert_rejected(&mut h, cmd(below_min), R::InvalidDisplayQty);
}

#[test]
pub fn funds_not_allowed() {
    let mut h = Harness::funded(1);
    let mut on_limit = limit(1, "a", Side::Buy, "90", "0");
    on_limit.ext = funds_buy(1, "a", "10").ext;
    assert_rejected(&mut h, cmd(on_limit), R::FundsNotAllowed);
    let on_sell = Place {
        side: Side::Sell,
        ..funds_buy(1, "a", "10")
    };
    assert_rejected(&mut h, cmd(on_sell), R::FundsNotAllowed);
}

#[test]
pub fn funds_with_qty() {
    let mut h = Harness::funded(1);
    let both = Place {
        qty: dec("1"),
        ..funds_buy(1, "a", "10")
    };
    assert_rejected(&mut h, cmd(both), R::FundsWithQty);
}

#[test]
pub fn invalid_funds() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, cmd(funds_buy(1, "a", "0")), R::InvalidFunds);
    assert_rejected(&mut h, cmd(funds_buy(1, "a", "-5")), R::InvalidFunds);
}

#[test]
fn funds_with_too_many_decimals_or_beyond_the_balance() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        cmd(funds_buy(1, "a", "1.000000000001")),
        R::TooManyDecimals,
    );
    assert_rejected(
        &mut h,
        cmd(funds_buy(1, "a", "1000000.01")),
        R::InsufficientFunds,
    );
}
