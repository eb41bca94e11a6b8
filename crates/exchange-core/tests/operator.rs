//! Market operations' actions on an instrument: listing it straight into a
//! phase, and setting its reference price (docs/market-model.md,
//! "Operator actions"). Every command runs with `Engine::audit` after it.

use exchange_core::Engine;
use exchange_types::event::{AuctionKind, ReferencePrice};
use exchange_types::*;

use exchange_testkit::engine::*;

const AUCTION_NS: u64 = 100;

/// BTC-USD with a reference price of 100, listed in `phase`.
fn listed_in(phase: Option<Phase>) -> AddInstrument {
    AddInstrument {
        reference_price: Some(dec("100")),
        phase,
        ..btc_usd()
    }
}

/// BTC-USD with a reference price of 100 and the given bands.
fn banded(static_bps: u32, dynamic_bps: u32) -> AddInstrument {
    AddInstrument {
        static_band_bps: Some(static_bps),
        dynamic_band_bps: Some(dynamic_bps),
        volatility_auction_ns: Some(AUCTION_NS),
        ..listed_in(None)
    }
}

fn view(h: &Harness) -> exchange_core::InstrumentView {
    h.engine.instruments().remove(0)
}

fn reference_events(events: &[Event]) -> Vec<ReferencePrice> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ReferencePrice(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn set_ok(h: &mut Harness, price: &str) -> Vec<Event> {
    let events = h.run_checked(set_reference("BTC-USD", price));
    assert_eq!(reject_reason(&events), None, "{events:?}");
    events
}

#[test]
fn a_listing_without_a_phase_is_continuous_as_before() {
    let mut h = Harness::new();
    let events = h.run_checked(add(listed_in(None)));
    assert_eq!(names(&events), ["instrument_added", "instrument_rules"]);
    assert_eq!(view(&h).phase, Phase::Continuous);
}

#[test]
fn an_instrument_is_listed_straight_into_each_phase_a_day_rests_in() {
    for phase in [
        Phase::Closed,
        Phase::PreOpen,
        Phase::Continuous,
        Phase::ClosingCall,
        Phase::PostClose,
        Phase::Halted,
    ] {
        let mut h = Harness::new();
        let events = h.run_checked(add(listed_in(Some(phase))));
        assert_eq!(reject_reason(&events), None, "{phase:?}");
        assert_eq!(view(&h).phase, phase);
        let expected: &[&str] = if phase == Phase::Continuous {
            &["instrument_added", "instrument_rules"]
        } else {
            &["instrument_added", "phase", "instrument_rules"]
        };
        assert_eq!(names(&events), expected, "{phase:?}");
        let status = match phase {
            Phase::Halted => TradingStatus::Halted,
            _ => TradingStatus::Trading,
        };
        assert_eq!(view(&h).status, status);
        let rules_status = events.iter().find_map(|e| match &e.kind {
            EventKind::InstrumentRules(r) => Some(r.status),
            _ => None,
        });
        assert_eq!(
            rules_status,
            Some(status),
            "the rules say the listing's status"
        );
    }
}

#[test]
fn a_listing_in_a_closed_phase_refuses_orders_until_it_opens() {
    let mut h = funded_with(listed_in(Some(Phase::Closed)), 2);
    assert_rejected(
        &mut h,
        cmd(limit(1, "b", Side::Buy, "100", "1")),
        RejectReason::InstrumentClosed,
    );
    h.run_checked(set_phase(Phase::Continuous));
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
}

#[test]
fn a_listing_in_pre_open_collects_orders_and_opens_with_an_auction() {
    let mut h = funded_with(listed_in(Some(Phase::PreOpen)), 2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "101", "1"));
    let events = exec(&mut h, limit(2, "s", Side::Sell, "99", "1"));
    assert!(trades(&events).is_empty(), "nothing matches in the call");
    let events = h.run_checked(set_phase(Phase::Continuous));
    // Balanced at every price from 99 to 101: the limit nearest the
    // reference (100) is 99 and 101 equally; the higher wins.
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Open, units("101"), units("1"))]
    );
}

#[test]
fn set_reference_price_is_refused_for_what_it_cannot_set() {
    let mut h = Harness::funded(1);
    assert_rejected(
        &mut h,
        set_reference("ETH-USD", "100"),
        RejectReason::UnknownInstrument,
    );
    assert_rejected(
        &mut h,
        set_reference("BTC-USD", "100.005"),
        RejectReason::PriceNotOnTick,
    );
    assert_rejected(
        &mut h,
        set_reference("BTC-USD", "0"),
        RejectReason::InvalidPrice,
    );
    assert_rejected(
        &mut h,
        set_reference("BTC-USD", "-1"),
        RejectReason::InvalidPrice,
    );
    assert_rejected(
        &mut h,
        set_reference("BTC-USD", "1.0000000000001"),
        RejectReason::TooManyDecimals,
    );
    assert_rejected(
        &mut h,
        set_reference("BTC-USD", "99999999999999999"),
        RejectReason::AmountOverflow,
    );
}

#[test]
fn the_new_reference_is_reported_and_is_the_instruments_reference() {
    let mut h = funded_with(banded(1_000, 0), 1);
    let events = set_ok(&mut h, "50.5");
    assert_eq!(
        reference_events(&events),
        vec![ReferencePrice {
            symbol: sym("BTC-USD"),
            price: units("50.5"),
        }]
    );
    assert_eq!(names(&events), ["reference_price"]);
    let v = view(&h);
    assert_eq!(v.reference_price, Some(units("50.5")));
    assert_eq!(v.static_reference_price, Some(units("50.5")));
}

#[test]
fn a_lower_reference_moves_the_static_band_with_it() {
    // Static band 10% around 100: 90-110. After a 2:1 split the operator
    // sets 50: the band is 45-55.
    let trade_at = |set: Option<&str>, price: &str| {
        let mut h = funded_with(banded(1_000, 0), 2);
        if let Some(reference) = set {
            set_ok(&mut h, reference);
        }
        place_ok(&mut h, limit(2, "s", Side::Sell, price, "1"));
        let events = exec(&mut h, limit(1, "b", Side::Buy, price, "1"));
        (trades(&events).len(), view(&h).phase)
    };
    // Before the change 52 is outside the band and interrupts; after it,
    // it prints.
    assert_eq!(trade_at(None, "52"), (0, Phase::VolatilityAuction));
    assert_eq!(trade_at(Some("50"), "52"), (1, Phase::Continuous));
    // And 105, inside the old band, now interrupts instead of printing.
    assert_eq!(trade_at(None, "105"), (1, Phase::Continuous));
    assert_eq!(trade_at(Some("50"), "105"), (0, Phase::VolatilityAuction));
}

#[test]
fn the_dynamic_band_follows_the_new_reference_until_the_next_trade() {
    // Dynamic band 2% around the last trade, 100.
    let mut h = funded_with(banded(0, 200), 2);
    place_ok(&mut h, limit(2, "s0", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(1, "b0", Side::Buy, "100", "1"));
    assert_eq!(trades(&events).len(), 1);
    set_ok(&mut h, "50");
    place_ok(&mut h, limit(2, "s1", Side::Sell, "50.5", "1"));
    let events = exec(&mut h, limit(1, "b1", Side::Buy, "50.5", "1"));
    assert_eq!(trades(&events).len(), 1, "50.5 is within 2% of 50");
    assert_eq!(view(&h).phase, Phase::Continuous);
    // The trade is the last price now: 52 is beyond 2% of 50.5.
    place_ok(&mut h, limit(2, "s2", Side::Sell, "52", "1"));
    let events = exec(&mut h, limit(1, "b2", Side::Buy, "52", "1"));
    assert!(trades(&events).is_empty());
    assert_eq!(view(&h).phase, Phase::VolatilityAuction);
}

#[test]
fn the_collar_is_around_the_new_reference() {
    let spec = AddInstrument {
        collar_bps: Some(1_000),
        ..listed_in(None)
    };
    let mut h = funded_with(spec, 1);
    place_ok(&mut h, limit(1, "before", Side::Buy, "95", "1"));
    set_ok(&mut h, "50");
    assert_rejected(
        &mut h,
        cmd(limit(1, "after", Side::Buy, "95", "1")),
        RejectReason::PriceOutsideCollar,
    );
    place_ok(&mut h, limit(1, "within", Side::Buy, "54", "1"));
}

#[test]
fn a_new_reference_during_a_call_changes_the_auction_price() {
    // Buy 1 @ 12 and sell 1 @ 8 execute 1 at every price between with no
    // surplus: the limit nearest the reference is the auction price
    // (Xetra's rule): 8 with the reference at 9, 12 with it at 11.
    let spec = AddInstrument {
        reference_price: Some(dec("9")),
        ..listed_in(Some(Phase::PreOpen))
    };
    let mut h = funded_with(spec, 2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "12", "1"));
    place_ok(&mut h, limit(2, "s", Side::Sell, "8", "1"));
    let indicative = |h: &Harness| h.engine.indicative(&sym("BTC-USD")).map(|i| i.price);
    assert_eq!(indicative(&h), Some(Some(units("8"))));
    let events = set_ok(&mut h, "11");
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Indicative(i) if i.price == Some(units("12"))
        )),
        "the call publishes the new indicative price: {events:?}"
    );
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Open, units("12"), units("1"))]
    );
}

#[test]
fn a_new_reference_is_allowed_in_every_phase_but_delisted() {
    for phase in [
        Phase::Closed,
        Phase::PreOpen,
        Phase::ClosingCall,
        Phase::PostClose,
        Phase::Halted,
    ] {
        let mut h = funded_with(listed_in(Some(phase)), 1);
        set_ok(&mut h, "42");
        assert_eq!(view(&h).reference_price, Some(units("42")), "{phase:?}");
    }
    let mut h = funded_with(banded(1_000, 0), 2);
    place_ok(&mut h, limit(2, "s", Side::Sell, "150", "1"));
    exec(&mut h, limit(1, "b", Side::Buy, "150", "1"));
    assert_eq!(view(&h).phase, Phase::VolatilityAuction);
    // Re-centred on 150 during the interruption, the indicative price is
    // inside the band at the end: the call uncrosses, not extended.
    set_ok(&mut h, "150");
    h.ts += AUCTION_NS;
    let events = h.run_checked(Command::Tick);
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Volatility, units("150"), units("1"))]
    );
}

#[test]
fn a_restored_copy_keeps_the_reference_and_the_listing_phase() {
    let mut h = funded_with(banded(1_000, 0), 2);
    h.run_checked(add(AddInstrument {
        symbol: sym("ETH-USD"),
        base: asset("ETH"),
        phase: Some(Phase::PreOpen),
        ..btc_usd()
    }));
    let before = h.engine.state_hash();
    set_ok(&mut h, "50");
    assert_ne!(
        h.engine.state_hash(),
        before,
        "the hash covers the reference"
    );
    let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    assert_eq!(restored.instruments(), h.engine.instruments());
    assert_eq!(restored.instruments()[1].phase, Phase::PreOpen);
    // Both go on the same way: 52 prints inside the new band.
    for command in [
        cmd(limit(2, "s", Side::Sell, "52", "1")),
        cmd(limit(1, "b", Side::Buy, "52", "1")),
    ] {
        h.ts += 1;
        let stamped = Stamped { ts: h.ts, command };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut a);
        restored.apply(&stamped, &mut b);
        assert_eq!(a, b);
        assert_eq!(h.engine.state_hash(), restored.state_hash());
        restored.audit().expect("invariants hold");
    }
    assert_eq!(view(&h).reference_price, Some(units("52")));
}
