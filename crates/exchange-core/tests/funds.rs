//! Market buys sized by funds: at most the funds are spent, fees included,
//! in whole lots, and the rest is released when the order ends.

use exchange_testkit::engine::*;
use exchange_types::*;

fn accepted(events: &[Event]) -> Option<event::Accepted> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted(a) => Some(a.clone()),
        _ => None,
    })
}

#[test]
fn a_funds_buy_spends_at_most_its_funds_and_releases_the_rest() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let before = bal(&h, 2, "USD");
    let events = exec(&mut h, funds_buy(2, "f", "150"));
    let trades = trade_fields(&events);
    assert_eq!(trades.len(), 2);
    assert_eq!(trades[0].qty, units("1"));
    let spent: u64 = trades
        .iter()
        .map(|t| t.price * t.qty / units("1") + t.taker_fee.unsigned_abs())
        .sum();
    let after = bal(&h, 2, "USD");
    // Nothing stays reserved, and what left the account is what the trades cost.
    assert_eq!(after.0, after.1);
    assert_eq!(before.0 - after.0, spent);
    assert!(spent <= units("150"));
    // Less than one more lot at 101 (0.0101 and its fee) is left over.
    assert!(units("150") - spent < units("0.0102"));
    let a = accepted(&events).unwrap();
    assert_eq!(a.qty, trades.iter().map(|t| t.qty).sum::<u64>());
    assert_eq!(a.ext.and_then(|x| x.funds), Some(units("150")));
    assert_eq!(trades[1].taker_leaves_qty, 0);
}

#[test]
fn funds_are_reserved_exactly_while_the_order_trades() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "10"));
    let events = exec(&mut h, funds_buy(2, "f", "50"));
    let reserved: Vec<u64> = balance_updates(&events)
        .iter()
        .filter(|(account, code, _, _)| *account == 2 && code == "USD")
        .map(|(_, _, total, available)| total - available)
        .collect();
    assert_eq!(reserved.first(), Some(&units("50")));
    assert_eq!(reserved.last(), Some(&0));
    // 50 buys 0.4997 BTC at 100 with the 5 bps taker fee: 49.97 + 0.024985.
    assert_eq!(trades(&events)[0].1, units("0.4997"));
}

#[test]
fn a_funds_buy_against_an_empty_book_expires_and_holds_nothing() {
    let mut h = Harness::funded(1);
    let events = exec(&mut h, funds_buy(1, "f", "10"));
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn a_funds_buy_takes_hidden_iceberg_quantity() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let events = exec(&mut h, funds_buy(2, "f", "300.15"));
    let filled: u64 = trades(&events).iter().map(|t| t.1).sum();
    assert_eq!(filled, units("3"));
    assert_eq!(bal(&h, 2, "USD").0, units("1000000") - units("300.15"));
}

#[test]
fn a_funds_buy_stops_short_of_its_own_order() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let own = place_ok(&mut h, limit(2, "own", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "c", Side::Sell, "100", "1"));
    let events = exec(&mut h, funds_buy(2, "f", "1000"));
    assert_eq!(trades(&events).len(), 1);
    // Never reached, so not canceled by self-trade prevention either.
    assert!(open_order(&h, own).is_some());
    let usd = bal(&h, 2, "USD");
    assert_eq!(usd.0, usd.1, "nothing stays reserved");
}
