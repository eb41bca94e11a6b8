//! Instrument rules an operator changes after listing: minimum notional
//! (140), delisting (511) and rule changes that change nothing (512).

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn notional_below_minimum() {
    let spec = AddInstrument {
        min_notional: Some(dec("10")),
        ..btc_usd()
    };
    let mut h = funded_with(spec, 2);
    // 100 x 0.05 = 5 < 10, on either side.
    for side in [Side::Buy, Side::Sell] {
        assert_rejected(
            &mut h,
            cmd(limit(1, "small", side, "100", "0.05")),
            R::NotionalBelowMinimum,
        );
    }
    // Exactly the minimum is enough.
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "0.1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "100", "1"));
    // A replace is held to it too.
    assert_rejected(
        &mut h,
        replace(1, "b", None, Some("0.05")),
        R::NotionalBelowMinimum,
    );
    // A market order is held to it at the reference price: none yet, so
    // it passes (and trades 0.05 with order a at 100).
    let events = exec(&mut h, market(2, "m1", Side::Buy, "0.05"));
    assert_eq!(reject_reason(&events), None);
    assert_eq!(trades(&events).len(), 1);
    // Now the last trade (100) is the reference: 0.05 x 100 is too small.
    assert_rejected(
        &mut h,
        cmd(market(2, "m2", Side::Buy, "0.05")),
        R::NotionalBelowMinimum,
    );
}

#[test]
pub fn instrument_delisted() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let events = h.run_checked(Command::Delist {
        symbol: sym("BTC-USD"),
    });
    assert_eq!(reject_reason(&events), None);
    assert_rejected(
        &mut h,
        cmd(limit(2, "b", Side::Buy, "100", "1")),
        R::InstrumentDelisted,
    );
    assert_rejected(
        &mut h,
        cmd(market(2, "m", Side::Buy, "1")),
        R::InstrumentDelisted,
    );
    for command in [
        halt("BTC-USD"),
        Command::Resume {
            symbol: sym("BTC-USD"),
        },
        Command::Delist {
            symbol: sym("BTC-USD"),
        },
        set_rules(SetInstrumentRules {
            tick_size: Some(dec("1")),
            ..rules("BTC-USD")
        }),
        set_reference("BTC-USD", "100"),
    ] {
        assert_rejected(&mut h, command, R::InstrumentDelisted);
    }
}

#[test]
pub fn no_rule_change() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, set_rules(rules("BTC-USD")), R::NoRuleChange);
    // Invalid new rules are refused with the listing's own reasons.
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            lot_size: Some(dec("0.00000001")),
            ..rules("BTC-USD")
        }),
        R::InvalidInstrument,
    );
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            taker_fee_bps: Some(-1),
            ..rules("BTC-USD")
        }),
        R::InvalidFee,
    );
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            collar_bps: Some(10_001),
            ..rules("BTC-USD")
        }),
        R::InvalidCollar,
    );
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            tick_size: Some(dec("1")),
            ..rules("ETH-USD")
        }),
        R::UnknownInstrument,
    );
}

/// A listing with `band`, otherwise BTC-USD's rules, as ETH-USD.
fn banded(band: impl FnOnce(&mut AddInstrument)) -> Command {
    let mut listing = AddInstrument {
        symbol: sym("ETH-USD"),
        base: asset("ETH"),
        ..btc_usd()
    };
    band(&mut listing);
    Command::AddInstrument(Box::new(listing))
}

#[test]
pub fn invalid_volatility_band() {
    let mut h = Harness::funded(1);
    let listing = banded(|l| {
        l.static_band_bps = Some(10_001);
        l.volatility_auction_ns = Some(1);
    });
    assert_rejected(&mut h, listing, R::InvalidVolatilityBand);
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            dynamic_band_bps: Some(10_001),
            volatility_auction_ns: Some(1),
            ..rules("BTC-USD")
        }),
        R::InvalidVolatilityBand,
    );
}

#[test]
pub fn volatility_auction_required() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        banded(|l| l.static_band_bps = Some(500)),
        R::VolatilityAuctionRequired,
    );
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            dynamic_band_bps: Some(200),
            ..rules("BTC-USD")
        }),
        R::VolatilityAuctionRequired,
    );
}

#[test]
pub fn volatility_band_required() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        banded(|l| l.volatility_auction_ns = Some(60_000_000_000)),
        R::VolatilityBandRequired,
    );
    assert_rejected(
        &mut h,
        set_rules(SetInstrumentRules {
            volatility_auction_ns: Some(60_000_000_000),
            ..rules("BTC-USD")
        }),
        R::VolatilityBandRequired,
    );
}
