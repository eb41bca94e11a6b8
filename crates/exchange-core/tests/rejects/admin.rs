//! 5xx: administration: listings and trading status.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn instrument_exists() {
    let mut h = Harness::funded(0);
    assert_rejected(&mut h, add(btc_usd()), R::InstrumentExists);
}

#[test]
pub fn invalid_instrument() {
    let mut h = Harness::funded(0);
    let new = || AddInstrument {
        symbol: sym("NEW-USD"),
        ..btc_usd()
    };
    let cases = [
        // A tick times a lot must be a whole number of quote units.
        AddInstrument {
            lot_size: dec("0.00000001"),
            ..new()
        },
        AddInstrument {
            tick_size: dec("0"),
            ..new()
        },
        AddInstrument {
            lot_size: dec("-0.0001"),
            ..new()
        },
        AddInstrument {
            min_qty: Some(dec("2")),
            max_qty: Some(dec("1")),
            ..new()
        },
        AddInstrument {
            min_qty: Some(dec("0.00015")),
            ..new()
        },
        AddInstrument {
            reference_price: Some(dec("100.005")),
            ..new()
        },
        AddInstrument {
            base: asset("USD"),
            ..new()
        },
    ];
    for spec in cases {
        assert_rejected(&mut h, add(spec), R::InvalidInstrument);
    }
}

#[test]
pub fn invalid_fee() {
    let mut h = Harness::funded(0);
    let new = |maker_fee_bps, taker_fee_bps| {
        add(AddInstrument {
            symbol: sym("NEW-USD"),
            maker_fee_bps,
            taker_fee_bps,
            ..btc_usd()
        })
    };
    // The rebate is paid out of the same trade's taker fee.
    assert_rejected(&mut h, new(-6, 5), R::InvalidFee);
    assert_rejected(&mut h, new(0, -1), R::InvalidFee);
    assert_rejected(&mut h, new(0, 10_001), R::InvalidFee);
    assert_rejected(&mut h, new(10_001, 0), R::InvalidFee);
    assert_eq!(reject_reason(&h.run_checked(new(-5, 5))), None);
}

#[test]
pub fn invalid_collar() {
    let mut h = Harness::funded(0);
    let new = |bps| {
        add(AddInstrument {
            symbol: sym("NEW-USD"),
            ..collared(bps, "100")
        })
    };
    assert_rejected(&mut h, new(10_001), R::InvalidCollar);
    assert_eq!(reject_reason(&h.run_checked(new(10_000))), None);
}

#[test]
pub fn already_in_status() {
    let mut h = Harness::funded(0);
    assert_rejected(&mut h, resume("BTC-USD"), R::AlreadyInStatus);
    h.run_checked(halt("BTC-USD"));
    assert_rejected(&mut h, halt("BTC-USD"), R::AlreadyInStatus);
}

#[test]
pub fn invalid_listing_phase() {
    let mut h = Harness::funded(0);
    for phase in [
        Phase::OpeningAuction,
        Phase::ClosingAuction,
        Phase::VolatilityAuction,
    ] {
        let spec = AddInstrument {
            symbol: sym("NEW-USD"),
            base: asset("NEW"),
            phase: Some(phase),
            ..btc_usd()
        };
        assert_rejected(&mut h, add(spec), R::InvalidListingPhase);
    }
}
