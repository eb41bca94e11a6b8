//! 2xx: pre-trade risk: funds, the collar, halts, the fee account and
//! post-only.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn insufficient_funds() {
    let mut h = Harness::funded(0);
    h.run_checked(deposit(5, "USD", "100"));
    h.run_checked(deposit(6, "BTC", "1"));
    // 1 at 100 costs 100.05 with the fee; 1 at 99.95 costs 99.999975.
    assert_rejected(
        &mut h,
        cmd(limit(5, "a", Side::Buy, "100", "1")),
        R::InsufficientFunds,
    );
    place_ok(&mut h, limit(5, "a", Side::Buy, "99.95", "1"));
    assert_rejected(
        &mut h,
        cmd(limit(6, "s", Side::Sell, "101", "1.0001")),
        R::InsufficientFunds,
    );
    place_ok(&mut h, limit(6, "s", Side::Sell, "101", "1"));
    assert_rejected(
        &mut h,
        withdraw(6, "BTC", "0.00000001"),
        R::InsufficientFunds,
    );
    assert_rejected(
        &mut h,
        withdraw(5, "USD", "0.00002501"),
        R::InsufficientFunds,
    );
}

#[test]
pub fn insufficient_funds_in_an_asset_never_held_changes_nothing() {
    let mut h = Harness::funded(0);
    h.run_checked(deposit(6, "BTC", "1"));
    assert_rejected(
        &mut h,
        cmd(limit(6, "b", Side::Buy, "100", "1")),
        R::InsufficientFunds,
    );
    // The account's balance list must not grow an empty USD entry: that
    // would be state (it is in the snapshot) left by a refused command.
    assert_rejected(&mut h, withdraw(6, "USD", "1"), R::InsufficientFunds);
}

#[test]
pub fn price_outside_collar() {
    let mut h = funded_with(collared(1000, "100"), 1);
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "110.01", "1")),
        R::PriceOutsideCollar,
    );
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Sell, "89.99", "1")),
        R::PriceOutsideCollar,
    );
    place_ok(&mut h, limit(1, "a", Side::Sell, "110", "1"));
    place_ok(&mut h, limit(1, "b", Side::Buy, "90", "1"));
}

#[test]
pub fn collar_without_a_reference_applies_from_the_first_trade() {
    let spec = AddInstrument {
        collar_bps: Some(1000),
        ..btc_usd()
    };
    let mut h = funded_with(spec, 2);
    place_ok(&mut h, limit(1, "far", Side::Sell, "1000", "1"));
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        cmd(limit(1, "c", Side::Sell, "110.01", "1")),
        R::PriceOutsideCollar,
    );
}

#[test]
pub fn instrument_halted() {
    let mut h = Harness::funded(2);
    let resting = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    h.run_checked(halt("BTC-USD"));
    assert_rejected(
        &mut h,
        cmd(limit(2, "t", Side::Buy, "100", "1")),
        R::InstrumentHalted,
    );
    assert_rejected(
        &mut h,
        cmd(market(2, "m", Side::Buy, "1")),
        R::InstrumentHalted,
    );
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("0.5")),
        R::InstrumentHalted,
    );
    // Cancels still go through so that nobody is trapped in a halted book.
    let canceled = h.run_checked(cancel_client(1, "b"));
    assert_eq!(cancels(&canceled).len(), 1);
    h.run_checked(resume("BTC-USD"));
    let events = exec(&mut h, limit(2, "t", Side::Buy, "100", "1"));
    assert_eq!(trades(&events), [(units("100"), units("1"), resting, 3)]);
}

#[test]
pub fn fee_account_cannot_trade() {
    let mut h = Harness::funded(1);
    h.run_checked(deposit(0, "USD", "1000"));
    let place = limit(exchange_core::FEE_ACCOUNT, "f", Side::Buy, "100", "1");
    assert_rejected(&mut h, cmd(place), R::FeeAccountCannotTrade);
}

#[test]
pub fn post_only_would_take() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let p = post_only(limit(2, "p", Side::Buy, "100.01", "1"));
    assert_rejected(&mut h, cmd(p), R::PostOnlyWouldTake);
}
