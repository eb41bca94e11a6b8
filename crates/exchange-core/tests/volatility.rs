//! Volatility interruptions: a trade outside the static or dynamic band
//! does not print; the instrument collects orders in a volatility auction
//! until its end time, extended once if the price is still outside the
//! static band, then uncrosses and trades continuously again.

use exchange_core::Engine;
use exchange_types::event::AuctionKind;
use exchange_types::*;
use proptest::prelude::*;

use exchange_testkit::engine::*;

const AUCTION_NS: u64 = 100;

/// BTC-USD with a reference price of 100 and the given bands.
fn listing(static_bps: u32, dynamic_bps: u32) -> AddInstrument {
    AddInstrument {
        reference_price: Some(dec("100")),
        static_band_bps: Some(static_bps),
        dynamic_band_bps: Some(dynamic_bps),
        volatility_auction_ns: Some(AUCTION_NS),
        ..btc_usd()
    }
}

fn prices(events: &[Event]) -> Vec<u64> {
    trades(events).iter().map(|t| t.0).collect()
}

/// A tick at `ts` (the harness's clock jumps there).
fn tick_at(h: &mut Harness, ts: u64) -> Vec<Event> {
    h.ts = ts - 1;
    h.run_checked(Command::Tick)
}

fn phase(h: &Harness) -> Phase {
    h.engine.instruments()[0].phase
}

#[test]
fn a_spike_beyond_the_dynamic_band_starts_an_auction_and_keeps_the_remainder() {
    let mut h = funded_with(listing(1_000, 200), 2);
    for (id, price) in [("a", "100"), ("b", "101"), ("c", "110")] {
        exec(&mut h, limit(2, id, Side::Sell, price, "1"));
    }
    let events = exec(&mut h, limit(1, "buy", Side::Buy, "110", "3"));
    // 100 and 101 are within 2% of the last price; 110 is not.
    assert_eq!(prices(&events), vec![units("100"), units("101")]);
    assert_eq!(phases(&events), vec![Phase::VolatilityAuction]);
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let book = h.engine.book(&sym("BTC-USD"), 5).expect("book");
    assert_eq!(book.bids, vec![(units("110"), units("1"))]);
    assert_eq!(book.asks, vec![(units("110"), units("1"))]);
    let started = h.ts;

    // Before the end nothing uncrosses.
    let events = tick_at(&mut h, started + AUCTION_NS - 1);
    assert!(trades(&events).is_empty());
    assert_eq!(phase(&h), Phase::VolatilityAuction);

    // At the end a tick uncrosses: 110 is inside the static band (90-110).
    let events = tick_at(&mut h, started + AUCTION_NS);
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Volatility, units("110"), units("1"))]
    );
    assert_eq!(prices(&events), vec![units("110")]);
    assert_eq!(phases(&events), vec![Phase::Continuous]);
    // The static band is centred on the auction price now.
    let view = &h.engine.instruments()[0];
    assert_eq!(view.static_reference_price, Some(units("110")));
}

#[test]
fn a_walk_of_small_trades_stops_at_the_static_band() {
    // Each step is 1% (inside the 2% dynamic band), but the static band
    // around 100 is 5%: it does not move with continuous trades.
    let mut h = funded_with(listing(500, 200), 2);
    for step in 1..=5u32 {
        let price = (100 + step).to_string();
        exec(
            &mut h,
            limit(2, &format!("s{step}"), Side::Sell, &price, "1"),
        );
        let events = exec(
            &mut h,
            limit(1, &format!("b{step}"), Side::Buy, &price, "1"),
        );
        assert_eq!(prices(&events), vec![units(&price)]);
    }
    exec(&mut h, limit(2, "s6", Side::Sell, "106", "1"));
    let events = exec(&mut h, limit(1, "b6", Side::Buy, "106", "1"));
    assert!(trades(&events).is_empty());
    assert_eq!(phases(&events), vec![Phase::VolatilityAuction]);
}

#[test]
fn a_price_still_outside_the_static_band_extends_the_auction_once() {
    let mut h = funded_with(listing(500, 200), 2);
    exec(&mut h, limit(2, "s", Side::Sell, "108", "1"));
    let events = exec(&mut h, limit(1, "b", Side::Buy, "108", "1"));
    assert!(trades(&events).is_empty());
    let started = h.ts;
    // 108 is outside 95-105: the call is extended, nothing is published
    // but the indicative that stays.
    let events = tick_at(&mut h, started + AUCTION_NS);
    assert!(trades(&events).is_empty());
    assert!(phases(&events).is_empty());
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let extended = h.ts;
    let events = tick_at(&mut h, extended + AUCTION_NS - 1);
    assert!(trades(&events).is_empty());
    // After the extension it uncrosses whatever the price.
    let events = tick_at(&mut h, extended + AUCTION_NS);
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Volatility, units("108"), units("1"))]
    );
    assert_eq!(phase(&h), Phase::Continuous);
}

#[test]
fn an_immediate_order_is_not_kept_for_the_auction() {
    let mut h = funded_with(listing(1_000, 200), 2);
    exec(&mut h, limit(2, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "c", Side::Sell, "110", "1"));
    let events = exec(&mut h, market(1, "m", Side::Buy, "2"));
    assert_eq!(prices(&events), vec![units("100")]);
    assert_eq!(phases(&events), vec![Phase::VolatilityAuction]);
    assert!(names(&events).contains(&"expired"));
    let book = h.engine.book(&sym("BTC-USD"), 5).expect("book");
    assert!(book.bids.is_empty());
}

#[test]
fn a_fill_or_kill_that_would_cross_a_band_does_not_trade() {
    let mut h = funded_with(listing(1_000, 200), 2);
    exec(&mut h, limit(2, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "c", Side::Sell, "110", "1"));
    let fok = Place {
        tif: TimeInForce::Fok,
        ..limit(1, "f", Side::Buy, "110", "2")
    };
    let events = exec(&mut h, fok);
    assert!(trades(&events).is_empty());
    assert_eq!(phase(&h), Phase::Continuous);
}

#[test]
fn instruments_without_bands_trade_through() {
    let mut h = Harness::funded(2);
    exec(&mut h, limit(2, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "c", Side::Sell, "200", "1"));
    let events = exec(&mut h, limit(1, "b", Side::Buy, "200", "2"));
    assert_eq!(prices(&events), vec![units("100"), units("200")]);
    assert!(phases(&events).is_empty());
}

#[test]
fn a_restored_copy_continues_a_volatility_auction_exactly() {
    let mut h = funded_with(listing(500, 200), 3);
    exec(&mut h, limit(2, "s", Side::Sell, "108", "2"));
    exec(&mut h, limit(1, "b", Side::Buy, "108", "1"));
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    let started = h.ts;
    let rest = [
        (started + 1, cmd(limit(3, "x", Side::Buy, "107", "1"))),
        (started + AUCTION_NS, Command::Tick),
        (started + 150, cmd(limit(3, "y", Side::Sell, "104", "1"))),
        (started + 2 * AUCTION_NS + 10, Command::Tick),
        (
            started + 2 * AUCTION_NS + 11,
            cmd(limit(1, "z", Side::Buy, "120", "1")),
        ),
    ];
    for (ts, command) in rest {
        let stamped = Stamped { ts, command };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut a);
        restored.apply(&stamped, &mut b);
        assert_eq!(a, b);
        assert_eq!(h.engine.state_hash(), restored.state_hash());
        h.engine.audit().expect("audit");
        let copy = Engine::restore(&h.engine.snapshot()).expect("restores");
        assert_eq!(copy.state_hash(), h.engine.state_hash());
    }
    assert_eq!(phase(&h), Phase::Continuous);
}

#[test]
fn removing_the_bands_during_an_auction_lets_it_run_to_its_end() {
    let mut h = funded_with(listing(500, 200), 2);
    exec(&mut h, limit(2, "s", Side::Sell, "104", "1"));
    exec(&mut h, limit(1, "b", Side::Buy, "104", "1"));
    exec(&mut h, limit(2, "s2", Side::Sell, "110", "1"));
    exec(&mut h, limit(1, "b2", Side::Buy, "110", "1"));
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let started = h.ts;
    let events = h.run_checked(set_rules(SetInstrumentRules {
        static_band_bps: Some(0),
        dynamic_band_bps: Some(0),
        volatility_auction_ns: Some(0),
        ..rules("BTC-USD")
    }));
    assert_eq!(reject_reason(&events), None);
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    tick_at(&mut h, started + AUCTION_NS);
    assert_eq!(phase(&h), Phase::Continuous);
    assert_eq!(h.engine.instruments()[0].static_band_bps, 0);
}

/// Random order flow against a banded listing, with ticks that move the
/// clock past auction ends.
fn flow() -> impl Strategy<Value = Vec<(u64, Command)>> {
    let order = (
        1u64..=3,
        any::<bool>(),
        prop_oneof![Just(None), (90u64..=115).prop_map(Some)],
        1u64..4,
    )
        .prop_map(|(account, buy, price, qty)| {
            let side = if buy { Side::Buy } else { Side::Sell };
            let qty = qty.to_string();
            match price {
                Some(p) => cmd(limit(account, "x", side, &p.to_string(), &qty)),
                None => cmd(market(account, "x", side, &qty)),
            }
        });
    let command = prop_oneof![
        6 => order,
        1 => Just(Command::Tick),
    ];
    prop::collection::vec((1u64..60, command), 1..120)
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// The audit stays clean, a copy restored at any point goes on with the
    /// same events, and no continuous trade prints outside the static band
    /// (around the last auction price, or the reference before any) or the
    /// dynamic band (around the last trade).
    #[test]
    fn continuous_trades_stay_inside_the_bands(steps in flow(), restore_at in 0usize..120) {
        let (static_bps, dynamic_bps) = (800u64, 300u64);
        let mut h = funded_with(listing(static_bps as u32, dynamic_bps as u32), 3);
        let mut ts = h.ts;
        let mut copy: Option<Engine> = None;
        let (mut static_ref, mut last) = (units("100"), units("100"));
        let mut in_auction = false;
        let within = |price: u64, centre: u64, bps: u64| {
            let width = centre * bps / 10_000;
            price + width >= centre && price <= centre + width
        };
        for (index, (gap, command)) in steps.into_iter().enumerate() {
            // Client order ids repeat: make each unique.
            let command = match command {
                Command::Place(mut p) => {
                    p.client_order_id = coid(&format!("o{index}"));
                    Command::Place(p)
                }
                other => other,
            };
            if index == restore_at {
                copy = Some(Engine::restore(&h.engine.snapshot()).expect("restores"));
            }
            ts += gap;
            let stamped = Stamped { ts, command };
            let mut out = Vec::new();
            h.engine.apply(&stamped, &mut out);
            if let Err(v) = h.engine.audit() {
                return Err(TestCaseError::fail(v));
            }
            if let Some(copy) = copy.as_mut() {
                let mut again = Vec::new();
                copy.apply(&stamped, &mut again);
                prop_assert_eq!(&out, &again);
            }
            for event in &out {
                match &event.kind {
                    EventKind::Auction(a) => {
                        in_auction = true;
                        static_ref = a.price;
                    }
                    EventKind::Phase(_) => in_auction = false,
                    EventKind::Trade(t) => {
                        if !in_auction {
                            prop_assert!(
                                within(t.price, static_ref, static_bps),
                                "trade at {} outside the static band around {}",
                                t.price,
                                static_ref
                            );
                            prop_assert!(
                                within(t.price, last, dynamic_bps),
                                "trade at {} outside the dynamic band around {}",
                                t.price,
                                last
                            );
                        }
                        last = t.price;
                    }
                    _ => {}
                }
            }
        }
        if let Some(copy) = copy {
            prop_assert_eq!(copy.state_hash(), h.engine.state_hash());
        }
    }
}

#[test]
fn an_operator_volatility_call_is_timed_by_the_listed_length_and_a_halt_ends_it() {
    let mut h = funded_with(listing(500, 200), 2);
    let set = |phase| Command::SetPhase {
        symbol: sym("BTC-USD"),
        phase,
    };
    h.run_checked(set(Phase::VolatilityAuction));
    let started = h.ts;
    exec(&mut h, limit(2, "s", Side::Sell, "101", "1"));
    exec(&mut h, limit(1, "b", Side::Buy, "101", "1"));
    let events = tick_at(&mut h, started + AUCTION_NS);
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Volatility, units("101"), units("1"))]
    );
    assert_eq!(phase(&h), Phase::Continuous);

    // Halted out of a volatility call: the call's end no longer applies,
    // and resuming reopens through its own auction.
    h.run_checked(set(Phase::VolatilityAuction));
    let started = h.ts;
    h.run_checked(set(Phase::Halted));
    let events = tick_at(&mut h, started + 10 * AUCTION_NS);
    assert!(phases(&events).is_empty());
    assert_eq!(phase(&h), Phase::Halted);
}

#[test]
fn a_rule_change_during_a_call_keeps_the_phase() {
    let mut h = funded_with(listing(500, 200), 2);
    exec(&mut h, limit(2, "s", Side::Sell, "108", "1"));
    exec(&mut h, limit(1, "b", Side::Buy, "108", "1"));
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let events = h.run_checked(set_rules(SetInstrumentRules {
        maker_fee_bps: Some(0),
        static_band_bps: Some(1_000),
        ..rules("BTC-USD")
    }));
    assert_eq!(reject_reason(&events), None);
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    // The static band is now 90-110: 108 uncrosses at the end, unextended.
    let end = h.ts + AUCTION_NS;
    let events = tick_at(&mut h, end);
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Volatility, units("108"), units("1"))]
    );
}

#[test]
fn a_closing_call_due_during_a_volatility_call_takes_its_book() {
    let mut h = funded_with(listing(500, 200), 2);
    exec(&mut h, limit(2, "s", Side::Sell, "108", "1"));
    exec(&mut h, limit(1, "b", Side::Buy, "108", "1"));
    let started = h.ts;
    let events = h.run_checked(Command::SetPhase {
        symbol: sym("BTC-USD"),
        phase: Phase::ClosingCall,
    });
    assert!(auctions(&events).is_empty());
    assert_eq!(phases(&events), vec![Phase::ClosingCall]);
    // The volatility call's end passes without an uncross.
    let events = tick_at(&mut h, started + 3 * AUCTION_NS);
    assert!(trades(&events).is_empty());
    let events = h.run_checked(Command::SetPhase {
        symbol: sym("BTC-USD"),
        phase: Phase::ClosingAuction,
    });
    assert_eq!(
        auctions(&events),
        vec![(AuctionKind::Close, units("108"), units("1"))]
    );
}
