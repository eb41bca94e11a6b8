//! Member risk controls: an account's pre-trade limits, its suspension and
//! its market-maker protection, and the operator commands that set them.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

/// Account 1 funded, account 2 funded and resting a sell at 100 (so the
/// last trade, once there is one, is at 100).
fn traded_at_100() -> Harness {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(1, "b", Side::Buy, "100", "0.5"));
    assert_eq!(trades(&events).len(), 1);
    h
}

#[test]
pub fn order_qty_over_limit() {
    let mut h = Harness::funded(2);
    h.run_checked(set_limits(1, Some("2"), None, None, None));
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "100", "2.0001")),
        R::OrderQtyOverLimit,
    );
    assert_rejected(
        &mut h,
        cmd(market(1, "m", Side::Sell, "3")),
        R::OrderQtyOverLimit,
    );
    let id = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "2"));
    // Raising the quantity above the limit is refused; lowering is not.
    assert_rejected(
        &mut h,
        replace_id(1, id, None, Some("2.5")),
        R::OrderQtyOverLimit,
    );
    assert!(replaced(&h.run_checked(replace_id(1, id, None, Some("1")))).is_some());
    // Other accounts are not limited.
    place_ok(&mut h, limit(2, "a", Side::Buy, "100", "50"));
}

#[test]
pub fn order_notional_over_limit() {
    let mut h = Harness::funded(2);
    h.run_checked(set_limits(1, None, Some("1000"), None, None));
    assert_rejected(
        &mut h,
        cmd(limit(1, "a", Side::Buy, "100", "10.0001")),
        R::OrderNotionalOverLimit,
    );
    // Before any trade a market order has no reference price to be valued
    // at, and an account with a notional limit cannot send one.
    assert_rejected(
        &mut h,
        cmd(market(1, "m", Side::Buy, "0.0001")),
        R::OrderNotionalOverLimit,
    );
    let id = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "10"));
    assert_rejected(
        &mut h,
        replace_id(1, id, Some("100.01"), None),
        R::OrderNotionalOverLimit,
    );
    // A lower price and a larger quantity with the same notional is fine.
    assert!(replaced(&h.run_checked(replace_id(1, id, Some("50"), Some("20")))).is_some());
}

#[test]
pub fn open_orders_over_limit() {
    let mut h = Harness::funded(2);
    h.run_checked(set_limits(1, None, None, Some(2), None));
    place_ok(&mut h, limit(1, "a", Side::Buy, "90", "1"));
    place_ok(&mut h, limit(1, "b", Side::Buy, "91", "1"));
    assert_rejected(
        &mut h,
        cmd(limit(1, "c", Side::Buy, "92", "1")),
        R::OpenOrdersOverLimit,
    );
    // An order that cannot rest does not count.
    let events = exec(&mut h, ioc(limit(1, "d", Side::Buy, "92", "1")));
    assert_eq!(reject_reason(&events), None);
    h.run_checked(cancel_client(1, "a"));
    place_ok(&mut h, limit(1, "c", Side::Buy, "92", "1"));
}

#[test]
pub fn price_outside_band() {
    // No reference price yet: the band cannot apply.
    let mut h = Harness::funded(2);
    h.run_checked(set_limits(1, None, None, None, Some(1000)));
    place_ok(&mut h, limit(1, "far", Side::Buy, "1", "1"));
    let mut h = traded_at_100();
    h.run_checked(set_limits(1, None, None, None, Some(1000)));
    assert_rejected(
        &mut h,
        cmd(limit(1, "hi", Side::Buy, "110.01", "1")),
        R::PriceOutsideBand,
    );
    assert_rejected(
        &mut h,
        cmd(limit(1, "lo", Side::Sell, "89.99", "1")),
        R::PriceOutsideBand,
    );
    let id = place_ok(&mut h, limit(1, "in", Side::Buy, "90", "1"));
    assert_rejected(
        &mut h,
        replace_id(1, id, Some("89.99"), None),
        R::PriceOutsideBand,
    );
    // A market order trades only inside the band: the sell resting at
    // 111 is out of its reach, the one at 110 is not.
    place_ok(&mut h, limit(2, "s2", Side::Sell, "111", "1"));
    place_ok(&mut h, limit(2, "s3", Side::Sell, "110", "1"));
    let events = exec(&mut h, market(1, "m", Side::Buy, "3"));
    let prices: Vec<u64> = trades(&events).iter().map(|t| t.0).collect();
    assert_eq!(prices, vec![units("100"), units("110")]);
}

#[test]
pub fn account_suspended() {
    let mut h = Harness::funded(2);
    let id = place_ok(&mut h, limit(1, "a", Side::Buy, "90", "1"));
    h.run_checked(suspend(1));
    assert_rejected(
        &mut h,
        cmd(limit(1, "b", Side::Buy, "90", "1")),
        R::AccountSuspended,
    );
    assert_rejected(&mut h, replace_id(1, id, Some("91"), None), R::OrderNotOpen);
    let reinstated = h.run_checked(reinstate(1));
    assert_eq!(reject_reason(&reinstated), None);
    let id = place_ok(&mut h, limit(1, "b", Side::Buy, "90", "1"));
    h.run_checked(suspend(1));
    h.run_checked(reinstate(1));
    place_ok(&mut h, limit(1, "c", Side::Buy, "90", "1"));
    assert!(open_order(&h, id).is_none());
}

#[test]
pub fn mmp_tripped() {
    let mut h = Harness::funded(2);
    h.run_checked(set_mmp(1, "BTC-USD", 1_000, None, Some(1)));
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    exec(&mut h, ioc(limit(2, "t", Side::Buy, "101", "2")));
    assert!(open_ids(&h).is_empty());
    assert_rejected(
        &mut h,
        cmd(limit(1, "c", Side::Sell, "100", "1")),
        R::MmpTripped,
    );
    h.run_checked(reset_mmp(1, "BTC-USD"));
    place_ok(&mut h, limit(1, "c", Side::Sell, "100", "1"));
}

#[test]
pub fn too_many_mmp_configs() {
    use exchange_types::limits::MAX_MMP_CONFIGS;
    // 64 instruments times 1,024 accounts fill the ceiling exactly.
    const INSTRUMENTS: usize = 64;
    const _: () = assert!(MAX_MMP_CONFIGS.is_multiple_of(INSTRUMENTS));
    let accounts = (MAX_MMP_CONFIGS / INSTRUMENTS) as u64;
    let mut h = Harness::new();
    for i in 0..INSTRUMENTS {
        let spec = AddInstrument {
            symbol: sym(&format!("C{i}-USD")),
            base: asset(&format!("C{i}")),
            ..btc_usd()
        };
        assert_eq!(reject_reason(&h.run(add(spec))), None);
    }
    for i in 0..INSTRUMENTS {
        let symbol = format!("C{i}-USD");
        for account in 1..=accounts {
            let events = h.run(set_mmp(account, &symbol, 10, None, Some(5)));
            assert_eq!(reject_reason(&events), None);
        }
    }
    assert_rejected(
        &mut h,
        set_mmp(accounts + 1, "C0-USD", 10, None, Some(5)),
        R::TooManyMmpConfigs,
    );
    // Reconfiguring an existing pair takes no new place.
    let events = h.run_checked(set_mmp(1, "C0-USD", 20, None, Some(5)));
    assert_eq!(reject_reason(&events), None);
}

#[test]
pub fn invalid_risk_limits() {
    let mut h = Harness::funded(1);
    for command in [
        set_limits(1, Some("0"), None, None, None),
        set_limits(1, None, Some("-1"), None, None),
        set_limits(1, None, None, Some(0), None),
        set_limits(1, None, None, Some(10_001), None),
        set_limits(1, None, None, None, Some(0)),
        set_limits(1, None, None, None, Some(10_001)),
    ] {
        assert_rejected(&mut h, command, R::InvalidRiskLimits);
    }
    assert_rejected(
        &mut h,
        set_limits(0, Some("1"), None, None, None),
        R::FeeAccountCannotTrade,
    );
}

#[test]
pub fn account_already_in_status() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, reinstate(1), R::AccountAlreadyInStatus);
    assert_rejected(&mut h, reinstate(42), R::UnknownAccount);
    h.run_checked(suspend(1));
    assert_rejected(&mut h, suspend(1), R::AccountAlreadyInStatus);
}

#[test]
pub fn invalid_mmp() {
    let mut h = Harness::funded(1);
    for command in [
        set_mmp(1, "BTC-USD", 0, Some("1"), None),
        set_mmp(1, "BTC-USD", 10, Some("0"), None),
        set_mmp(1, "BTC-USD", 10, None, Some(0)),
    ] {
        assert_rejected(&mut h, command, R::InvalidMmp);
    }
    assert_rejected(
        &mut h,
        set_mmp(1, "ETH-USD", 10, None, Some(1)),
        R::UnknownInstrument,
    );
}

#[test]
pub fn mmp_not_configured() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, reset_mmp(1, "BTC-USD"), R::MmpNotConfigured);
    assert_rejected(
        &mut h,
        set_mmp(1, "BTC-USD", 10, None, None),
        R::MmpNotConfigured,
    );
    h.run_checked(set_mmp(1, "BTC-USD", 10, None, Some(3)));
    let removed = h.run_checked(set_mmp(1, "BTC-USD", 10, None, None));
    assert_eq!(reject_reason(&removed), None);
    assert_rejected(&mut h, reset_mmp(1, "BTC-USD"), R::MmpNotConfigured);
}

#[test]
pub fn accounts_not_related() {
    let mut h = Harness::funded(3);
    h.run_checked(link_sub(1, 2));
    // Unrelated, to itself, to an account the core has never seen.
    for command in [
        internal_transfer(1, 3, "USD", "1"),
        internal_transfer(3, 2, "USD", "1"),
        internal_transfer(1, 1, "USD", "1"),
        internal_transfer(1, 42, "USD", "1"),
    ] {
        assert_rejected(&mut h, command, R::AccountsNotRelated);
    }
    assert_rejected(
        &mut h,
        internal_transfer(2, 1, "USD", "1000000.00000001"),
        R::InsufficientFunds,
    );
    assert_rejected(&mut h, internal_transfer(2, 1, "XRP", "1"), R::UnknownAsset);
    assert_rejected(
        &mut h,
        internal_transfer(2, 1, "USD", "0"),
        R::InvalidAmount,
    );
}

/// The kill switch holds the account's funds where it is: a suspended
/// account cannot pass them to a sub-account, its owner or a sibling to
/// trade there. Funds may still come in, and leave by a withdrawal.
#[test]
pub fn transfer_from_suspended() {
    let mut h = Harness::funded(1);
    h.run_checked(link_sub(1, 5));
    h.run_checked(link_sub(1, 6));
    h.run_checked(internal_transfer(1, 6, "USD", "10"));
    h.run_checked(suspend(1));
    assert_rejected(
        &mut h,
        internal_transfer(1, 5, "USD", "1000"),
        R::TransferFromSuspended,
    );
    assert_rejected(
        &mut h,
        internal_transfer(1, 6, "BTC", "1"),
        R::TransferFromSuspended,
    );
    // The sub-account holds nothing of the owner's to trade with.
    assert_rejected(
        &mut h,
        cmd(limit(5, "b", Side::Buy, "1", "1")),
        R::InsufficientFunds,
    );
    // A sibling's funds move to the suspended owner, and the owner may
    // withdraw.
    let events = h.run_checked(internal_transfer(6, 1, "USD", "10"));
    assert_eq!(reject_reason(&events), None);
    let events = h.run_checked(withdraw(1, "USD", "1"));
    assert_eq!(reject_reason(&events), None);
    // A suspended sub-account cannot pass its funds up either.
    h.run_checked(reinstate(1));
    h.run_checked(internal_transfer(1, 5, "USD", "1000"));
    h.run_checked(suspend(5));
    assert_rejected(
        &mut h,
        internal_transfer(5, 1, "USD", "1000"),
        R::TransferFromSuspended,
    );
    assert_rejected(
        &mut h,
        internal_transfer(5, 6, "USD", "1"),
        R::TransferFromSuspended,
    );
    h.run_checked(reinstate(5));
    let events = h.run_checked(internal_transfer(5, 1, "USD", "1000"));
    assert_eq!(reject_reason(&events), None);
}

/// The fee account places no orders; suspending it would record a kill
/// switch that does nothing. Refused, and nothing changes.
#[test]
pub fn fee_account_not_suspendable() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    // A trade puts fees in the fee account: it then has balances.
    let events = exec(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    assert_eq!(trades(&events).len(), 1);
    assert_rejected(&mut h, suspend(0), R::FeeAccountNotSuspendable);
    // Still not suspended: reinstating it has nothing to lift.
    assert_rejected(&mut h, reinstate(0), R::AccountAlreadyInStatus);
}

#[test]
pub fn too_many_sub_accounts() {
    use exchange_types::limits::MAX_SUB_ACCOUNTS;
    let mut h = Harness::funded(0);
    for sub in 0..u64::from(MAX_SUB_ACCOUNTS) {
        let events = h.run(link_sub(1, 100 + sub));
        assert_eq!(reject_reason(&events), None);
    }
    assert_rejected(&mut h, link_sub(1, 99), R::TooManySubAccounts);
}

#[test]
pub fn invalid_sub_account() {
    let mut h = Harness::funded(4);
    h.run_checked(link_sub(1, 2));
    for command in [
        link_sub(1, 1),
        link_sub(0, 3),
        link_sub(3, 0),
        // Already someone's sub-account, or an owner itself.
        link_sub(3, 2),
        link_sub(3, 1),
        // A sub-account cannot own.
        link_sub(2, 4),
    ] {
        assert_rejected(&mut h, command, R::InvalidSubAccount);
    }
}
