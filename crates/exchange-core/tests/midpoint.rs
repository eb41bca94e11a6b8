//! Midpoint orders: a midpoint book of their own per instrument, matched
//! at the lit book's midpoint, never displayed, with a minimum acceptable
//! quantity that holds on every execution (`docs/market-model.md`,
//! "Midpoint orders"). Every command runs with the engine's audit.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

/// BTC-USD with whole lots of one unit (as shares), accounts 1..=n funded
/// with 1,000,000 USD and 100,100 BTC; account 9 quotes the lit book.
fn market(accounts: u64) -> Harness {
    let spec = AddInstrument {
        lot_size: dec("1"),
        ..btc_usd()
    };
    let mut h = funded_with(spec, accounts.max(9));
    for account in 1..=accounts.max(9) {
        h.run_checked(deposit(account, "BTC", "100000"));
    }
    h
}

/// Quotes `bid` / `ask` on the lit book from account 9.
fn quote(h: &mut Harness, bid: &str, ask: &str) {
    place_ok(h, limit(9, &format!("b{bid}"), Side::Buy, bid, "1"));
    place_ok(h, limit(9, &format!("a{ask}"), Side::Sell, ask, "1"));
}

/// The Xetra MidPoint presentation's example "Matching of MidPoint Orders
/// under consideration of MAQ" (Deutsche Börse, Xetra MidPoint,
/// section 3): spread 17.20 - 17.24; sell 1 (10,000, limit 17.18, 9:01)
/// and sell 2 (12,000, limit 17.21, MAQ 11,000, 9:02) rest; buy 3 (10,000,
/// limit 17.26) arrives and trades 10,000 at 17.22 with sell 1, as sell 2's
/// minimum cannot be met by 10,000.
#[test]
fn the_xetra_midpoint_example_with_a_minimum_acceptable_quantity() {
    for sell_2_limit in [Some("17.21"), None] {
        let mut h = market(3);
        quote(&mut h, "17.20", "17.24");
        let one = place_ok(&mut h, midpoint(1, "1", Side::Sell, Some("17.18"), "10000"));
        let two = with_min_qty(midpoint(2, "2", Side::Sell, sell_2_limit, "12000"), "11000");
        let two = place_ok(&mut h, two);
        let events = exec(&mut h, midpoint(3, "3", Side::Buy, Some("17.26"), "10000"));
        let three = order_id(&events).unwrap();
        // Unlimited, sell 2 ranks first here, and is passed over all the
        // same: its minimum holds while it rests.
        assert_eq!(
            trades(&events),
            [(units("17.22"), units("10000"), one, three)]
        );
        assert!(open_order(&h, one).is_none() && open_order(&h, three).is_none());
        assert_eq!(open_order(&h, two).map(|o| o.filled_qty), Some(0));
        // Nothing of it reached the lit book's market data.
        assert!(book_updates(&events).is_empty());
        assert_eq!(book(&h).bids, [(units("17.20"), units("1"))]);
    }
}

/// Nasdaq's Midpoint Peg (Nasdaq Equity Trader, "Order Types and
/// Modifiers", Midpoint Peg): priced at the midpoint of the best bid and
/// offer, 10.00 x 10.10 giving 10.05, and not displayed.
#[test]
fn a_resting_midpoint_order_trades_at_the_midpoint_of_the_quotes() {
    let mut h = market(2);
    quote(&mut h, "10.00", "10.10");
    let buy = place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "300"));
    let events = exec(&mut h, midpoint(2, "s", Side::Sell, Some("10.05"), "100"));
    let sell = order_id(&events).unwrap();
    assert_eq!(trades(&events), [(units("10.05"), units("100"), buy, sell)]);
    let trade = &trade_fields(&events)[0];
    assert_eq!(trade.aggressor_side, Side::Sell);
    assert!(trade.midpoint, "a midpoint trade says so");
    // A lit trade does not.
    let lit = exec(&mut h, limit(2, "lit", Side::Sell, "10.00", "1"));
    assert!(trade_fields(&lit).iter().all(|t| !t.midpoint));
    assert_eq!(trade_fields(&lit).len(), 1);
    assert_eq!(
        open_order(&h, buy).map(|o| o.filled_qty),
        Some(units("100"))
    );
    // The buyer, the maker, paid 1,005 USD and its fee (a 1 bp rebate).
    let notional = units("1005") as i64;
    assert!(trade.maker_fee < 0);
    let (total, _) = bal(&h, 1, "USD");
    assert_eq!(
        total as i64,
        units("1000000") as i64 - notional - trade.maker_fee
    );
}

#[test]
fn a_move_of_the_quotes_reprices_and_triggers_a_match() {
    let mut h = market(2);
    quote(&mut h, "99.00", "100.00");
    let buy = place_ok(&mut h, midpoint(1, "b", Side::Buy, Some("100.10"), "5"));
    let sell = place_ok(&mut h, midpoint(2, "s", Side::Sell, Some("100.05"), "5"));
    // Midpoint 99.50 is below the sell's limit: nothing trades.
    assert_eq!(open_order(&h, sell).map(|o| o.filled_qty), Some(0));
    // New lit quotes move the midpoint to 100.10: both limits are met,
    // and the trade is reported with the plain limit order that moved it.
    // With one side of the lit book empty there is no midpoint.
    h.run_checked(cancel_client(9, "a100.00"));
    let events = exec(&mut h, limit(9, "b2", Side::Buy, "100.00", "1"));
    assert_eq!(trades(&events), []);
    let events = exec(&mut h, limit(9, "a2", Side::Sell, "100.20", "1"));
    // Sell entered later: it is the taker.
    assert_eq!(trades(&events), [(units("100.10"), units("5"), buy, sell)]);
    assert!(open_ids(&h).iter().all(|id| *id != buy && *id != sell));
}

/// The engine skips matching while the midpoint is out of the book's
/// reach (no pair can trade there); a move of one tick into it must trade.
#[test]
fn quotes_moving_outside_and_then_into_the_books_reach() {
    let mut h = market(2);
    quote(&mut h, "100.06", "100.10");
    // Midpoint 100.08: the buy's limit is below it, the sell reaches it.
    let buy = place_ok(&mut h, midpoint(1, "b", Side::Buy, Some("100.04"), "5"));
    let sell = place_ok(&mut h, midpoint(2, "s", Side::Sell, Some("100.02"), "5"));
    let lower_bid = |h: &mut Harness, from: &str, to: &str| {
        place_ok(h, limit(9, &format!("b{to}"), Side::Buy, to, "1"));
        h.run_checked(cancel_client(9, &format!("b{from}")))
    };
    // 100.07, then 100.05: still above the buy's limit.
    for (from, to) in [("100.06", "100.04"), ("100.04", "100.00")] {
        let events = lower_bid(&mut h, from, to);
        assert_eq!(trades(&events), [], "midpoint above 100.04 from {to}");
    }
    // Midpoint 100.04: the buy's limit is reached, one tick past the range.
    let events = lower_bid(&mut h, "100.00", "99.98");
    assert_eq!(trades(&events), [(units("100.04"), units("5"), buy, sell)]);
}

#[test]
fn an_order_whose_limit_the_midpoint_does_not_reach_does_not_trade() {
    let mut h = market(2);
    quote(&mut h, "99.00", "100.00");
    let buy = place_ok(&mut h, midpoint(1, "b", Side::Buy, Some("99.49"), "5"));
    let events = exec(&mut h, midpoint(2, "s", Side::Sell, None, "5"));
    let sell = order_id(&events).unwrap();
    assert_eq!(trades(&events), []);
    // One tick more reaches 99.50; the new limit sent the buy to the back,
    // so it entered last and takes.
    let events = h.run_checked(replace(1, "b", Some("99.50"), None));
    assert_eq!(trades(&events), [(units("99.50"), units("5"), sell, buy)]);
}

#[test]
fn a_midpoint_between_two_ticks_waits_for_the_next_quote() {
    let mut h = market(2);
    quote(&mut h, "99.00", "99.01");
    place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "5"));
    let events = exec(&mut h, midpoint(2, "s", Side::Sell, None, "5"));
    assert_eq!(trades(&events), []);
    h.run_checked(cancel_client(9, "a99.01"));
    let events = exec(&mut h, limit(9, "a2", Side::Sell, "99.02", "1"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(trades(&events)[0].0, units("99.01"));
}

#[test]
fn the_minimum_acceptable_quantity_holds_on_every_execution() {
    let mut h = market(4);
    quote(&mut h, "99.00", "100.00");
    let buy = place_ok(
        &mut h,
        with_min_qty(midpoint(1, "b", Side::Buy, None, "10"), "5"),
    );
    // Too small a contra does not trade with it, and rests.
    let small = exec(&mut h, midpoint(2, "s", Side::Sell, None, "3"));
    assert_eq!(trades(&small), []);
    let events = exec(&mut h, midpoint(3, "t", Side::Sell, None, "6"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(trades(&events)[0].1, units("6"));
    // Four left, below the minimum: the minimum asks for the remainder,
    // which the resting sell of 3 still cannot give.
    assert_eq!(open_order(&h, buy).map(|o| o.filled_qty), Some(units("6")));
    let events = exec(&mut h, midpoint(4, "u", Side::Sell, None, "4"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(trades(&events)[0].1, units("4"));
    assert!(open_order(&h, buy).is_none());
}

/// A trade changes what its two orders can still do: a sell whose
/// remainder fell below its minimum now trades with a buy it passed
/// over, and a buy whose remainder fell with a sell it passed over, in
/// priority order, within the same command.
#[test]
fn a_trade_that_shrinks_an_order_lets_it_meet_an_order_passed_over() {
    let mut h = market(3);
    quote(&mut h, "99.00", "100.00");
    let sell = place_ok(
        &mut h,
        with_min_qty(midpoint(1, "s", Side::Sell, None, "10"), "5"),
    );
    let small = place_ok(&mut h, midpoint(2, "b1", Side::Buy, None, "3"));
    let events = exec(&mut h, midpoint(3, "b2", Side::Buy, Some("99.60"), "8"));
    let big = order_id(&events).unwrap();
    let mid = units("99.50");
    assert_eq!(
        trades(&events),
        [(mid, units("8"), sell, big), (mid, units("2"), sell, small)]
    );

    let mut h = market(3);
    quote(&mut h, "99.00", "100.00");
    let buy = place_ok(
        &mut h,
        with_min_qty(midpoint(1, "b", Side::Buy, None, "10"), "6"),
    );
    let passed = place_ok(&mut h, midpoint(2, "s1", Side::Sell, None, "5"));
    let events = exec(&mut h, midpoint(3, "s2", Side::Sell, None, "7"));
    let met = order_id(&events).unwrap();
    assert_eq!(
        trades(&events),
        [(mid, units("7"), buy, met), (mid, units("3"), buy, passed)]
    );
}

#[test]
fn self_trade_prevention_applies_between_midpoint_orders() {
    let mut h = market(1);
    quote(&mut h, "99.00", "100.00");
    let older = place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "5"));
    let events = exec(&mut h, midpoint(1, "s", Side::Sell, None, "5"));
    let newer = order_id(&events).unwrap();
    assert_eq!(trades(&events), []);
    // Cancel-newest, the taker's mode: the newer order goes.
    assert_eq!(
        cancels(&events),
        [(newer, CancelReason::SelfTrade, units("5"), 0, 0)]
    );
    assert!(open_order(&h, older).is_some());
    let both = with_stp(
        midpoint(1, "s2", Side::Sell, None, "2"),
        SelfTradePrevention::Decrement,
    );
    let events = exec(&mut h, both);
    let decremented: Vec<_> = cancels(&events).iter().map(|c| (c.0, c.2)).collect();
    assert_eq!(
        decremented,
        [
            (order_id(&events).unwrap(), units("2")),
            (older, units("2"))
        ]
    );
    assert_eq!(open_order(&h, older).map(|o| o.qty), Some(units("3")));
}

#[test]
fn an_immediate_midpoint_order_expires_what_does_not_trade() {
    let mut h = market(2);
    quote(&mut h, "99.00", "100.00");
    place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "2"));
    let events = exec(&mut h, ioc(midpoint(2, "s", Side::Sell, None, "5")));
    let sell = order_id(&events).unwrap();
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(expiries(&events), [(sell, units("3"), units("2"))]);
    let fok = fok(midpoint(2, "f", Side::Sell, None, "5"));
    assert_rejected(&mut h, cmd(fok), RejectReason::MidpointNotAllowed);
}

#[test]
fn midpoint_orders_take_no_part_in_calls_and_day_ones_expire_at_the_close() {
    let mut h = market(3);
    quote(&mut h, "99.00", "100.00");
    let day = with_tif(
        midpoint(1, "d", Side::Buy, None, "5"),
        TimeInForce::Day,
        None,
    );
    let day = place_ok(&mut h, day);
    let gtc = place_ok(&mut h, midpoint(2, "g", Side::Buy, Some("99.50"), "5"));
    h.run_checked(set_phase(Phase::ClosingCall));
    let refused = midpoint(3, "s", Side::Sell, None, "5");
    assert_rejected(&mut h, cmd(refused), RejectReason::MidpointInCall);
    let events = h.run_checked(set_phase(Phase::PostClose));
    assert_eq!(expiries(&events), [(day, units("5"), 0)]);
    assert!(open_order(&h, gtc).is_some());
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::Continuous));
    // The quotes uncrossed nothing and stand: the kept order trades again.
    let events = exec(&mut h, midpoint(3, "s", Side::Sell, None, "5"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(trades(&events)[0].2, gtc);
}

#[test]
fn replace_and_cancel_keep_the_midpoint_book_and_reservations_whole() {
    let mut h = market(3);
    quote(&mut h, "99.00", "100.00");
    let first = place_ok(&mut h, midpoint(1, "a", Side::Buy, Some("99.60"), "5"));
    let second = place_ok(&mut h, midpoint(2, "b", Side::Buy, Some("99.60"), "5"));
    // A larger quantity sends the first to the back.
    h.run_checked(replace(1, "a", None, Some("6")));
    let events = exec(&mut h, midpoint(3, "s", Side::Sell, None, "5"));
    assert_eq!(trades(&events)[0].2, second);
    let canceled = h.run_checked(cancel_client(1, "a"));
    assert_eq!(
        cancels(&canceled),
        [(first, CancelReason::Requested, units("6"), 0, 0)]
    );
    assert_eq!(bal(&h, 1, "USD").0, bal(&h, 1, "USD").1);
    let lowered = h.run_checked(replace(1, "a", None, Some("1")));
    assert_eq!(reject_reason(&lowered), Some(RejectReason::OrderNotOpen));
}

#[test]
fn a_snapshot_taken_mid_stream_continues_as_the_live_engine() {
    let mut h = market(4);
    quote(&mut h, "99.00", "100.00");
    place_ok(
        &mut h,
        with_min_qty(midpoint(1, "a", Side::Buy, None, "10"), "4"),
    );
    place_ok(&mut h, midpoint(2, "b", Side::Buy, Some("99.70"), "3"));
    place_ok(&mut h, midpoint(3, "c", Side::Sell, Some("99.90"), "2"));
    let bytes = h.engine.snapshot();
    let restored = Engine::restore(&bytes).expect("the snapshot restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    let mut twin = Harness {
        engine: restored,
        ts: h.ts,
    };
    let rest = [
        cmd(limit(9, "x", Side::Buy, "99.80", "1")),
        cmd(midpoint(4, "d", Side::Sell, None, "6")),
        replace(2, "b", Some("99.90"), None),
        cmd(midpoint(4, "e", Side::Sell, None, "3")),
        cancel_client(1, "a"),
    ];
    let mut traded = 0;
    for command in rest {
        let live = h.run_checked(command.clone());
        let copy = twin.run_checked(command);
        assert_eq!(live, copy);
        traded += trades(&live).len();
        assert_eq!(twin.engine.state_hash(), h.engine.state_hash());
    }
    assert!(traded >= 2, "the stream trades in the midpoint book");
}

#[test]
fn a_state_without_midpoint_orders_keeps_the_bytes_it_had_without_them() {
    // The same events either way: accepted, reserved, released, expired.
    let mut lit = market(2);
    quote(&mut lit, "99.00", "100.00");
    let mut dark = market(2);
    quote(&mut dark, "99.00", "100.00");
    exec(&mut lit, ioc(limit(1, "a", Side::Buy, "98.00", "1")));
    let events = exec(
        &mut dark,
        ioc(midpoint(1, "a", Side::Buy, Some("98.00"), "1")),
    );
    assert_eq!(expiries(&events).len(), 1);
    assert_eq!(dark.engine.snapshot(), lit.engine.snapshot());
    // While one rests, the midpoint section holds it.
    let resting = lit.engine.snapshot().len();
    place_ok(&mut dark, midpoint(1, "b", Side::Buy, None, "1"));
    assert!(dark.engine.snapshot().len() > resting);
}

/// The instrument's reference (last) price, in units.
fn reference(h: &Harness) -> Option<u64> {
    h.engine.instruments()[0].reference_price
}

#[test]
fn a_midpoint_trade_moves_no_last_price_and_triggers_no_stop() {
    let mut h = market(3);
    quote(&mut h, "99.00", "100.00");
    let before = reference(&h);
    // A buy stop at 99.50 would trigger on a lit trade there.
    let stop = Place {
        order_type: OrderType::StopLimit,
        ext: Some(Box::new(PlaceExt {
            stop_price: Some(dec("99.50")),
            ..PlaceExt::default()
        })),
        ..limit(3, "stop", Side::Buy, "99.60", "1")
    };
    let stop = place_ok(&mut h, stop);
    place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "2"));
    let events = exec(&mut h, midpoint(2, "s", Side::Sell, None, "2"));
    assert_eq!(trades(&events)[0].0, units("99.50"));
    assert!(!names(&events).contains(&"triggered"));
    assert_eq!(reference(&h), before);
    assert!(open_order(&h, stop).is_some());
}

#[test]
fn an_unlimited_buy_reserves_at_the_collar_and_settles_exactly() {
    let spec = AddInstrument {
        lot_size: dec("1"),
        ..collared(500, "100")
    };
    let mut h = funded_with(spec, 9);
    quote(&mut h, "99.00", "101.00");
    place_ok(&mut h, midpoint(1, "b", Side::Buy, None, "10"));
    // Ten at the collar's 105 and the largest fee (5 bps): 1,050.525.
    let held = units("1050.525");
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("1000000"), units("1000000") - held)
    );
    exec(&mut h, midpoint(2, "s", Side::Sell, None, "4"));
    // Four bought at 100 with the maker's 1 bp rebate; six still held.
    let paid = units("400") - units("0.04");
    let still = units("630.315");
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("1000000") - paid, units("1000000") - paid - still)
    );
    assert_eq!(bal(&h, 1, "BTC").0, units("104"));
}

#[test]
fn new_rules_a_delisting_and_an_expiry_end_midpoint_orders() {
    let mut h = market(2);
    quote(&mut h, "99.00", "100.00");
    let gtd = with_tif(
        midpoint(1, "g", Side::Buy, None, "1"),
        TimeInForce::Gtd,
        Some(h.ts + 3),
    );
    let gtd = place_ok(&mut h, gtd);
    let kept = place_ok(&mut h, midpoint(2, "k", Side::Sell, Some("101.00"), "1"));
    let mut events = h.run_checked(Command::Tick);
    events.extend(h.run_checked(Command::Tick));
    assert_eq!(expiries(&events), [(gtd, units("1"), 0)]);
    let ruled = Place {
        client_order_id: coid("r"),
        ..midpoint(1, "r", Side::Buy, None, "1")
    };
    let ruled = place_ok(&mut h, ruled);
    let fees = SetInstrumentRules {
        maker_fee_bps: Some(0),
        ..rules("BTC-USD")
    };
    let events = h.run_checked(set_rules(fees));
    let ended: Vec<_> = cancels(&events).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        ended,
        [
            (ruled, CancelReason::RulesChanged),
            (kept, CancelReason::RulesChanged)
        ]
    );
    place_ok(&mut h, midpoint(2, "d", Side::Sell, None, "1"));
    let events = h.run_checked(Command::Delist {
        symbol: sym("BTC-USD"),
    });
    assert!(cancels(&events)
        .iter()
        .any(|c| c.1 == CancelReason::Delisted));
    assert!(h.engine.open_orders().is_empty());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// One step of a stream over one instrument: lit quotes that move,
    /// midpoint orders of every shape, cancels, replaces and phases.
    fn step() -> impl Strategy<Value = (u8, u64, bool, u64, u64, u64)> {
        (0u8..9, 1u64..5, any::<bool>(), 0u64..12, 1u64..8, 0u64..5)
    }

    /// Calls and closes (with their expiries) between stretches of
    /// continuous trading; moves the phases do not allow are refused.
    const PHASES: [Phase; 5] = [
        Phase::Closed,
        Phase::Continuous,
        Phase::ClosingCall,
        Phase::Continuous,
        Phase::Halted,
    ];

    fn command(
        n: usize,
        ts: u64,
        (kind, account, buy, offset, qty, extra): (u8, u64, bool, u64, u64, u64),
    ) -> Command {
        let side = if buy { Side::Buy } else { Side::Sell };
        let price = |ticks: u64| format!("{}.{:02}", 99 + ticks / 100, ticks % 100);
        let id = format!("o{n}");
        let old = format!("o{}", n.saturating_sub(1 + extra as usize));
        match kind {
            0 | 1 => {
                // Lit quotes around 99.00 - 99.11, bids low and asks high.
                let ticks = if buy { offset } else { offset + 2 };
                cmd(limit(9, &id, side, &price(ticks), "1"))
            }
            2 => cancel_client(9, &old),
            3 => {
                let limit = (extra > 1).then(|| price(offset));
                let order = midpoint(account, &id, side, limit.as_deref(), &qty.to_string());
                match extra {
                    0 => cmd(with_min_qty(order, &qty.min(3).to_string())),
                    1 => cmd(ioc(order)),
                    2 => cmd(with_stp(order, SelfTradePrevention::Decrement)),
                    3 => cmd(with_tif(order, TimeInForce::Gtd, Some(ts + 1 + offset))),
                    _ => cmd(order),
                }
            }
            4 => cmd(midpoint(account, &id, side, None, &qty.to_string())),
            5 => cancel_client(account, &old),
            6 => replace(
                account,
                &old,
                (extra % 2 == 0).then(|| price(offset)).as_deref(),
                Some(&qty.to_string()),
            ),
            7 => set_phase(PHASES[extra as usize % PHASES.len()]),
            _ => cmd(ioc(limit(
                account,
                &id,
                side,
                &price(offset),
                &qty.to_string(),
            ))),
        }
    }

    proptest! {
        #![proptest_config(proptest_config(64))]

        /// Every command audited; from a point in the stream a copy
        /// restored from a snapshot runs beside the live engine and gives
        /// the same events.
        #[test]
        fn random_streams_keep_every_invariant(
            steps in prop::collection::vec(step(), 1..80),
            cut in 0usize..80,
        ) {
            let mut h = market(4);
            let mut twin: Option<Harness> = None;
            for (n, s) in steps.into_iter().enumerate() {
                if n == cut {
                    let engine = Engine::restore(&h.engine.snapshot()).expect("restores");
                    twin = Some(Harness { engine, ts: h.ts });
                }
                let ts = h.ts;
                let command = command(n, ts, s);
                let live = h.run_checked(command.clone());
                if let Some(twin) = twin.as_mut() {
                    prop_assert_eq!(twin.run_checked(command), live);
                }
            }
            let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
            prop_assert_eq!(restored.state_hash(), h.engine.state_hash());
        }
    }
}

/// No order may name a midpoint order as its one-cancels-other partner
/// (nor may a midpoint order carry `oco_with`): a midpoint order trades
/// when the lit quotes move, after the command's pairs were settled. The
/// refusal changes nothing, and the snapshot still restores.
#[test]
fn an_order_may_not_pair_with_a_midpoint_order() {
    let mut h = market(2);
    quote(&mut h, "10.00", "10.10");
    place_ok(&mut h, midpoint(1, "mid", Side::Buy, Some("10.05"), "100"));
    let mut stop = limit(1, "sl", Side::Sell, "9", "100");
    stop.order_type = OrderType::StopLimit;
    stop.ext = Some(Box::new(PlaceExt {
        stop_price: Some(dec("9")),
        oco_with: Some(coid("mid")),
        ..PlaceExt::default()
    }));
    assert_rejected(&mut h, cmd(stop), RejectReason::MidpointNotAllowed);
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
}
