//! 4xx: the limits that keep every collection bounded. Some of these fill
//! a collection to its ceiling and take a second or more.

use exchange_types::limits::*;
use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn too_many_open_orders() {
    let mut h = Harness::funded(1);
    let mut out = Vec::new();
    for i in 0..MAX_OPEN_ORDERS_PER_ACCOUNT {
        out.clear();
        let place = limit(1, &format!("o{i}"), Side::Sell, "100", "0.0001");
        h.engine.apply(
            &Stamped {
                ts: 1,
                command: cmd(place),
            },
            &mut out,
        );
        assert_eq!(reject_reason(&out), None);
    }
    let one_more = limit(1, "x", Side::Sell, "100", "0.0001");
    assert_rejected(&mut h, cmd(one_more.clone()), R::TooManyOpenOrders);
    assert_rejected(
        &mut h,
        cmd(post_only(one_more.clone())),
        R::TooManyOpenOrders,
    );
    // Orders that can never rest do not count against the limit.
    place_ok(&mut h, ioc(one_more.clone()));
    h.run_checked(cancel_client(1, "o0"));
    place_ok(&mut h, one_more);
}

#[test]
pub fn too_many_price_levels() {
    let levels = MAX_PRICE_LEVELS_PER_SIDE as u64;
    let per_account = u64::from(MAX_OPEN_ORDERS_PER_ACCOUNT);
    let fresh = levels.div_ceil(per_account) + 1;
    let mut h = Harness::funded(fresh);
    let mut out = Vec::new();
    // Falling prices make each ask the new best level: the cheap end of
    // the book's level vector.
    for i in 0..levels {
        out.clear();
        let ticks = levels - i;
        let place = Place {
            price: Some(Dec::from_parts(ticks, 2)),
            ..limit(
                1 + i / per_account,
                &format!("o{i}"),
                Side::Sell,
                "1",
                "0.0001",
            )
        };
        h.engine.apply(
            &Stamped {
                ts: 1,
                command: cmd(place),
            },
            &mut out,
        );
        assert_eq!(reject_reason(&out), None);
    }
    let new_level = limit(fresh, "n", Side::Sell, "1000.01", "0.0001");
    assert_rejected(&mut h, cmd(new_level), R::TooManyPriceLevels);
    place_ok(&mut h, limit(fresh, "e", Side::Sell, "500", "0.0001"));
    assert_rejected(
        &mut h,
        replace(fresh, "e", Some("1000.01"), None),
        R::TooManyPriceLevels,
    );
}

#[test]
pub fn too_many_instruments() {
    let mut h = Harness::funded(0);
    for i in 1..MAX_INSTRUMENTS {
        let spec = AddInstrument {
            symbol: sym(&format!("I{i}")),
            ..btc_usd()
        };
        assert_eq!(reject_reason(&h.run(add(spec))), None);
    }
    let spec = AddInstrument {
        symbol: sym("ONE-MORE"),
        ..btc_usd()
    };
    assert_rejected(&mut h, add(spec), R::TooManyInstruments);
}

#[test]
pub fn too_many_accounts() {
    let mut h = Harness::funded(0);
    let mut out = Vec::new();
    // The fee account is the first of them.
    for account in 1..MAX_ACCOUNTS as u64 {
        out.clear();
        h.engine.apply(
            &Stamped {
                ts: 1,
                command: deposit(account, "USD", "1"),
            },
            &mut out,
        );
    }
    assert_eq!(reject_reason(&out), None);
    assert_rejected(
        &mut h,
        deposit(MAX_ACCOUNTS as u64, "USD", "1"),
        R::TooManyAccounts,
    );
    h.run_checked(deposit(1, "USD", "1"));
    assert_eq!(bal(&h, 1, "USD"), (units("2"), units("2")));
}

#[test]
pub fn amount_overflow() {
    let mut h = Harness::funded(0);
    // Every asset's supply is capped at i64::MAX units.
    h.run_checked(deposit(1, "BTC", "92233720368.54775807"));
    assert_rejected(&mut h, deposit(2, "BTC", "0.00000001"), R::AmountOverflow);
    assert_rejected(&mut h, deposit(2, "USD", "999999999999"), R::AmountOverflow);
    h.run_checked(deposit(3, "USD", "1000"));
    let price = limit(3, "a", Side::Buy, "999999999999", "1");
    assert_rejected(&mut h, cmd(price), R::AmountOverflow);
    let qty = limit(3, "a", Side::Buy, "1", "999999999999");
    assert_rejected(&mut h, cmd(qty), R::AmountOverflow);
    // Each value fits; their notional (9e20 units) does not.
    let notional = limit(3, "a", Side::Buy, "90000000000", "100");
    assert_rejected(&mut h, cmd(notional), R::AmountOverflow);
}
