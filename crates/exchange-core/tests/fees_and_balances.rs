//! Fees, reservations and transfers, with every amount worked out by hand.
//!
//! BTC-USD: tick 0.01, lot 0.0001, maker -1 bps (a rebate), taker 5 bps.
//! A fee is `notional * bps / 10000` in quote units (1e-8 USD), rounded
//! toward zero; account 0 collects the taker fee and pays the rebate.

use exchange_testkit::engine::*;
use exchange_types::*;

#[test]
fn taker_pays_the_fee_and_a_resting_seller_earns_the_rebate() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    let fill = &trade_fields(&events)[0];
    // 100 notional: 5 bps is 0.05, 1 bps is 0.01.
    assert_eq!((fill.maker_fee, fill.taker_fee), (-1_000_000, 5_000_000));
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("1000100.01"), units("1000100.01"))
    );
    assert_eq!(bal(&h, 1, "BTC"), (units("99"), units("99")));
    assert_eq!(bal(&h, 2, "USD"), (units("999899.95"), units("999899.95")));
    assert_eq!(bal(&h, 2, "BTC"), (units("101"), units("101")));
    assert_eq!(bal(&h, 0, "USD"), (units("0.04"), units("0.04")));
}

#[test]
fn resting_buyer_receives_the_rebate_and_its_unused_fee_reservation() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999899.95")));
    exec(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    assert_eq!(bal(&h, 1, "USD"), (units("999900.01"), units("999900.01")));
    assert_eq!(bal(&h, 1, "BTC"), (units("101"), units("101")));
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("1000099.95"), units("1000099.95"))
    );
    assert_eq!(bal(&h, 0, "USD"), (units("0.04"), units("0.04")));
}

#[test]
fn fees_round_toward_zero() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100.01", "0.0001"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "100.01", "0.0001"));
    // Notional 1,000,100 units: taker 500.05 -> 500, rebate 100.01 -> 100.
    let fill = &trade_fields(&events)[0];
    assert_eq!((fill.maker_fee, fill.taker_fee), (-100, 500));
    let million = units("1000000");
    assert_eq!(bal(&h, 1, "USD").0, million + 1_000_100 + 100);
    assert_eq!(
        bal(&h, 2, "USD"),
        (million - 1_000_600, million - 1_000_600)
    );
    assert_eq!(bal(&h, 0, "USD"), (400, 400));
}

#[test]
fn fee_account_collects_taker_fee_minus_rebate_over_many_trades() {
    let mut h = Harness::funded(3);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100.01", "0.0001"));
    let mut all = exec(&mut h, limit(3, "t", Side::Buy, "101", "1.0001"));
    all.extend(exec(&mut h, limit(1, "c", Side::Buy, "99", "2")));
    all.extend(exec(&mut h, market(2, "m", Side::Sell, "0.5")));
    let net: i64 = trade_fields(&all)
        .iter()
        .map(|t| t.maker_fee + t.taker_fee)
        .sum();
    // 0.04 on the 100 trade, 400 units on the tiny one, and on 0.5 at 99
    // (49.5): 0.02475 taker minus 0.00495 rebate.
    assert_eq!(net, 4_000_000 + 400 + 2_475_000 - 495_000);
    assert_eq!(bal(&h, 0, "USD"), (net as u64, net as u64));
}

#[test]
fn a_larger_maker_fee_is_reserved_by_a_taker_buy_and_the_unused_part_released() {
    let spec = AddInstrument {
        maker_fee_bps: 10,
        taker_fee_bps: 5,
        ..btc_usd()
    };
    let mut h = funded_with(spec, 2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    assert_eq!(
        balance_updates(&events)[0],
        (2, "USD".to_string(), units("1000000"), units("999899.9"))
    );
    assert_eq!(bal(&h, 2, "USD"), (units("999899.95"), units("999899.95")));
    assert_eq!(bal(&h, 1, "USD"), (units("1000099.9"), units("1000099.9")));
    assert_eq!(bal(&h, 0, "USD"), (units("0.15"), units("0.15")));
}

#[test]
fn zero_fee_instrument_reserves_and_charges_only_the_notional() {
    let spec = AddInstrument {
        maker_fee_bps: 0,
        taker_fee_bps: 0,
        ..btc_usd()
    };
    let mut h = funded_with(spec, 2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999900")));
    exec(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    assert_eq!(bal(&h, 2, "USD"), (units("1000100"), units("1000100")));
    assert_eq!(bal(&h, 0, "USD"), (0, 0));
}

#[test]
fn buy_filled_at_a_better_price_releases_the_difference() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "101", "1"));
    // Reserved at the limit: 101 + 0.0505.
    assert_eq!(
        balance_updates(&events)[0],
        (2, "USD".to_string(), units("1000000"), units("999898.9495"))
    );
    assert_eq!(bal(&h, 2, "USD"), (units("999899.95"), units("999899.95")));
}

#[test]
fn partially_filled_buy_keeps_exactly_what_its_remainder_needs() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Buy, "101", "2"));
    assert_eq!(
        open_order(&h, b).map(|o| o.reserved),
        Some(units("101.0505"))
    );
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("999899.95"), units("999798.8995"))
    );
}

#[test]
fn partially_filled_sell_keeps_the_base_of_its_remainder() {
    let mut h = Harness::funded(2);
    let s = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "b", Side::Buy, "100", "0.4"));
    assert_eq!(open_order(&h, s).map(|o| o.reserved), Some(units("0.6")));
    assert_eq!(bal(&h, 1, "BTC"), (units("99.6"), units("99")));
}

#[test]
fn cancel_releases_the_whole_reservation() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    place_ok(&mut h, limit(1, "s", Side::Sell, "101", "2"));
    let events = h.run_checked(cancel_client(1, "b"));
    assert_eq!(
        balance_updates(&events),
        [(1, "USD".to_string(), units("1000000"), units("1000000"))]
    );
    h.run_checked(cancel_client(1, "s"));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("100")));
}

#[test]
fn market_buy_reserves_what_the_book_would_cost() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let events = exec(&mut h, market(2, "m", Side::Buy, "1.5"));
    // 100 + 50.5 notional plus 5 bps of it (0.07525).
    assert_eq!(
        balance_updates(&events)[0],
        (
            2,
            "USD".to_string(),
            units("1000000"),
            units("999849.42475")
        )
    );
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("999849.42475"), units("999849.42475"))
    );
    assert_eq!(bal(&h, 2, "BTC"), (units("101.5"), units("101.5")));
}

#[test]
fn market_buy_reserves_and_trades_only_up_to_the_collar() {
    let mut h = funded_with(collared(1000, "100"), 3);
    place_ok(&mut h, limit(1, "a", Side::Sell, "105", "1"));
    // A trade at 105 widens the band to [94.50, 115.50] ...
    exec(&mut h, limit(2, "b", Side::Buy, "105", "0.5"));
    place_ok(&mut h, limit(1, "c", Side::Sell, "115", "1"));
    // ... and one at 100 narrows it back to [90, 110].
    place_ok(&mut h, limit(1, "d", Side::Buy, "100", "0.1"));
    exec(&mut h, limit(2, "e", Side::Sell, "100", "0.1"));
    let events = exec(&mut h, market(3, "m", Side::Buy, "2"));
    // Only 0.5 at 105 lies within the band: 52.5 + 0.02625.
    assert_eq!(
        balance_updates(&events)[0],
        (
            3,
            "USD".to_string(),
            units("1000000"),
            units("999947.47375")
        )
    );
    assert_eq!(trades(&events), [(units("105"), units("0.5"), 1, 6)]);
    assert_eq!(expiries(&events), [(6, units("1.5"), units("0.5"))]);
    assert_eq!(book(&h).asks, [(units("115"), units("1"))]);
    assert_eq!(
        bal(&h, 3, "USD"),
        (units("999947.47375"), units("999947.47375"))
    );
}

#[test]
fn market_buy_that_cannot_pay_for_the_whole_walk_is_rejected() {
    let mut h = Harness::funded(1);
    h.run_checked(deposit(7, "USD", "50"));
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    assert_rejected(
        &mut h,
        cmd(market(7, "m", Side::Buy, "1")),
        RejectReason::InsufficientFunds,
    );
    // 0.4 costs 40 + 0.02.
    let events = exec(&mut h, market(7, "m", Side::Buy, "0.4"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(bal(&h, 7, "USD"), (units("9.98"), units("9.98")));
}

#[test]
fn withdraw_is_limited_by_available_not_total() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        withdraw(1, "USD", "999900"),
        RejectReason::InsufficientFunds,
    );
    let events = h.run_checked(withdraw(1, "USD", "999899.95"));
    assert_eq!(
        balance_updates(&events),
        [(1, "USD".to_string(), units("100.05"), 0)]
    );
}

#[test]
fn withdraw_lowers_total_and_available() {
    let mut h = Harness::funded(1);
    h.run_checked(withdraw(1, "BTC", "0.00000001"));
    assert_eq!(
        bal(&h, 1, "BTC"),
        (units("99.99999999"), units("99.99999999"))
    );
}

#[test]
fn deposit_creates_the_account_and_credits_total_and_available() {
    let mut h = Harness::funded(0);
    let events = h.run_checked(deposit(9, "USD", "12.5"));
    assert_eq!(
        balance_updates(&events),
        [(9, "USD".to_string(), units("12.5"), units("12.5"))]
    );
    h.run_checked(deposit(9, "USD", "0.5"));
    assert_eq!(bal(&h, 9, "USD"), (units("13"), units("13")));
    assert_eq!(bal(&h, 9, "BTC"), (0, 0));
}

#[test]
fn fee_account_can_withdraw_its_fees_but_no_more() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        withdraw(0, "USD", "0.05"),
        RejectReason::InsufficientFunds,
    );
    h.run_checked(withdraw(0, "USD", "0.04"));
    assert_eq!(bal(&h, 0, "USD"), (0, 0));
}

#[test]
fn trading_conserves_every_assets_total() {
    let mut h = Harness::funded(3);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100.37", "0.7"));
    place_ok(&mut h, limit(2, "b", Side::Buy, "99.13", "1.3"));
    exec(&mut h, market(3, "m", Side::Buy, "0.5"));
    exec(&mut h, limit(3, "s", Side::Sell, "99", "2"));
    exec(&mut h, limit(1, "c", Side::Buy, "101", "0.9"));
    let sum = |code: &str| -> u64 {
        h.engine
            .balances()
            .iter()
            .filter(|b| b.asset.as_str() == code)
            .map(|b| b.total)
            .sum()
    };
    assert_eq!(sum("USD"), units("3000000"));
    assert_eq!(sum("BTC"), units("300"));
}
