//! The event stream: numbering, time, and what book, trade and lifecycle
//! events report.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::event;
use exchange_types::*;

/// Applies `command` stamped `ts` (the harness clock is bypassed so tests
/// can send time backwards) and checks the invariants.
fn run_at(h: &mut Harness, ts: u64, command: Command) -> Vec<Event> {
    let mut out = Vec::new();
    h.engine.apply(&Stamped { ts, command }, &mut out);
    if let Err(violation) = h.engine.audit() {
        panic!("invariant broken: {violation}");
    }
    out
}

fn busy_session() -> Vec<Command> {
    vec![
        Command::AddInstrument(Box::new(btc_usd())),
        deposit(1, "USD", "1000"),
        deposit(2, "BTC", "5"),
        cmd(limit(2, "s1", Side::Sell, "100", "1")),
        cmd(limit(2, "s2", Side::Sell, "101", "1")),
        cmd(limit(1, "b1", Side::Buy, "101", "1.5")),
        cmd(limit(9, "x", Side::Buy, "101", "1")),
        replace(1, "b1", Some("100.5"), None),
        halt("BTC-USD"),
        cancel_client(1, "b1"),
        resume("BTC-USD"),
        cmd(market(1, "m", Side::Buy, "0.2")),
        withdraw(2, "USD", "10"),
    ]
}

#[test]
fn every_event_is_numbered_one_more_than_the_previous() {
    let mut h = Harness::new();
    let mut all = Vec::new();
    for command in busy_session() {
        all.extend(h.run_checked(command));
    }
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=all.len() as u64).collect();
    assert_eq!(seqs, expected);
    assert_eq!(h.engine.last_seq(), all.len() as u64);
    assert!(all.iter().any(|e| e.kind.name() == "rejected"));
}

#[test]
fn every_event_carries_its_commands_timestamp() {
    let mut h = Harness::new();
    for (i, command) in busy_session().into_iter().enumerate() {
        let ts = 1_000 * (i as u64 + 1);
        for event in run_at(&mut h, ts, command) {
            assert_eq!(event.ts, ts, "{event:?}");
        }
    }
}

#[test]
fn time_never_goes_backwards() {
    let mut h = Harness::funded(1);
    let late = run_at(&mut h, 5_000, deposit(1, "USD", "1"));
    let early = run_at(&mut h, 3_000, deposit(1, "USD", "1"));
    let later = run_at(&mut h, 7_000, deposit(1, "USD", "1"));
    assert_eq!(
        [late[0].ts, early[0].ts, later[0].ts],
        [5_000, 5_000, 7_000]
    );
}

#[test]
fn recorded_errors_are_numbered_and_timed_like_any_event() {
    let mut h = Harness::funded(1);
    run_at(&mut h, 9_000, deposit(1, "USD", "1"));
    let seq = h.engine.last_seq();
    let mut out = Vec::new();
    h.engine
        .record_error(8_000, 17, "bad line".to_string(), &mut out);
    assert_eq!(
        out,
        [Event {
            seq: seq + 1,
            ts: 9_000,
            kind: EventKind::Error(event::Error {
                line: 17,
                message: "bad line".to_string()
            })
        }]
    );
}

#[test]
fn order_ids_increase_by_one_and_rejects_consume_none() {
    let mut h = Harness::funded(1);
    assert_eq!(place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1")), 1);
    exec(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    exec(&mut h, limit(1, "z", Side::Buy, "0", "1"));
    assert_eq!(
        place_ok(&mut h, ioc(limit(1, "b", Side::Buy, "98", "1"))),
        2
    );
    assert_eq!(place_ok(&mut h, limit(1, "c", Side::Sell, "101", "1")), 3);
}

#[test]
fn trade_ids_increase_by_one_across_commands() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let first = exec(&mut h, limit(2, "t", Side::Buy, "101", "1.5"));
    let second = exec(&mut h, market(2, "m", Side::Buy, "0.1"));
    let ids: Vec<TradeId> = trade_fields(&first)
        .iter()
        .chain(&trade_fields(&second))
        .map(|t| t.trade_id)
        .collect();
    assert_eq!(ids, [1, 2, 3]);
}

#[test]
fn trade_event_names_both_orders_their_accounts_and_the_aggressor() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1.5"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "101", "1"));
    assert_eq!(
        trade_fields(&events),
        [Trade {
            trade_id: 1,
            symbol: sym("BTC-USD"),
            price: units("100"),
            qty: units("1"),
            maker_order_id: 1,
            taker_order_id: 2,
            maker_account: 1,
            taker_account: 2,
            aggressor_side: Side::Buy,
            maker_fee: -1_000_000,
            taker_fee: 5_000_000,
            maker_leaves_qty: units("0.5"),
            taker_leaves_qty: 0,
            midpoint: false,
        }]
    );
}

#[test]
fn trade_event_of_a_sell_aggressor() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    let events = exec(&mut h, limit(2, "s", Side::Sell, "100", "0.25"));
    let fill = &trade_fields(&events)[0];
    assert_eq!(fill.aggressor_side, Side::Sell);
    assert_eq!((fill.maker_account, fill.taker_account), (1, 2));
    // 25 notional: 0.0125 taker fee, 0.0025 rebate.
    assert_eq!((fill.maker_fee, fill.taker_fee), (-250_000, 1_250_000));
    assert_eq!(
        (fill.maker_leaves_qty, fill.taker_leaves_qty),
        (units("0.75"), 0)
    );
}

#[test]
fn a_cross_emits_its_events_in_a_fixed_order() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1.5"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "101", "1"));
    assert_eq!(
        names(&events),
        [
            "accepted", "balance", "trade", "balance", "balance", "balance", "balance", "balance",
            "book"
        ]
    );
    let who: Vec<(AccountId, String)> = balance_updates(&events)
        .into_iter()
        .map(|(a, code, _, _)| (a, code))
        .collect();
    let expected = [
        (2, "USD"),
        (2, "USD"),
        (2, "BTC"),
        (1, "BTC"),
        (1, "USD"),
        (0, "USD"),
    ];
    assert_eq!(who, expected.map(|(a, c)| (a, c.to_string())));
}

#[test]
fn book_events_report_the_new_aggregate_at_the_level() {
    let mut h = Harness::funded(2);
    let first = exec(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let second = exec(&mut h, limit(1, "b", Side::Sell, "100", "0.5"));
    let fill = exec(&mut h, limit(2, "t", Side::Buy, "100", "0.7"));
    let cancel_a = h.run_checked(cancel_client(1, "a"));
    let cancel_b = h.run_checked(cancel_client(1, "b"));
    let qty = |events: &[Event]| {
        book_updates(events)
            .into_iter()
            .map(|u| u.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(qty(&first), [units("1")]);
    assert_eq!(qty(&second), [units("1.5")]);
    assert_eq!(qty(&fill), [units("0.8")]);
    assert_eq!(qty(&cancel_a), [units("0.5")]);
    assert_eq!(qty(&cancel_b), [0]);
}

#[test]
fn a_sweep_reports_each_level_once_with_what_is_left() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "0.5"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "100", "0.5"));
    place_ok(&mut h, limit(1, "c", Side::Sell, "101", "1"));
    let events = exec(&mut h, limit(2, "t", Side::Buy, "101", "1.5"));
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("100"), 0),
            (Side::Sell, units("101"), units("0.5"))
        ]
    );
}

#[test]
fn rejected_event_names_the_command_and_what_it_referred_to() {
    let mut h = Harness::funded(1);
    let place = exec(&mut h, limit(1, "a", Side::Buy, "0", "1"));
    assert_eq!(
        place[0].kind,
        EventKind::Rejected(event::Rejected {
            command: "place",
            account: Some(1),
            client_order_id: Some(coid("a")),
            order_id: None,
            symbol: Some(sym("BTC-USD")),
            reason: RejectReason::InvalidPrice,
        })
    );
    let cancel = h.run_checked(cancel_id(1, 77));
    assert_eq!(
        cancel[0].kind,
        EventKind::Rejected(event::Rejected {
            command: "cancel",
            account: Some(1),
            client_order_id: None,
            order_id: Some(77),
            symbol: None,
            reason: RejectReason::UnknownOrder,
        })
    );
}

#[test]
fn canceled_and_expired_events_carry_the_order_and_its_quantities() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "0.25"));
    let canceled = h.run_checked(cancel_client(1, "a"));
    assert!(canceled.iter().any(|e| e.kind
        == EventKind::Canceled(event::Canceled {
            account: 1,
            order_id: 1,
            client_order_id: coid("a"),
            symbol: sym("BTC-USD"),
            reason: CancelReason::Requested,
            canceled_qty: units("0.75"),
            filled_qty: units("0.25"),
            leaves_qty: 0,
        })));
    let expired = exec(&mut h, ioc(limit(2, "i", Side::Buy, "100", "1")));
    assert!(expired.iter().any(|e| e.kind
        == EventKind::Expired(event::Expired {
            account: 2,
            order_id: 3,
            client_order_id: coid("i"),
            symbol: sym("BTC-USD"),
            expired_qty: units("1"),
            filled_qty: 0,
        })));
}

#[test]
fn listing_halting_and_resuming_are_announced() {
    let mut h = Harness::new();
    let added = h.run_checked(add(btc_usd()));
    assert_eq!(
        added[0].kind,
        EventKind::InstrumentAdded(event::InstrumentAdded {
            symbol: sym("BTC-USD"),
            base: asset("BTC"),
            quote: asset("USD"),
            reference_price: None,
        })
    );
    // A listing's reference price is announced with it, on the tick.
    let eth = h.run_checked(add(AddInstrument {
        symbol: sym("ETH-USD"),
        base: asset("ETH"),
        reference_price: Some(dec("2000.5")),
        ..btc_usd()
    }));
    assert!(matches!(
        &eth[0].kind,
        EventKind::InstrumentAdded(e) if e.reference_price == Some(units("2000.5"))
    ));
    let halted = h.run_checked(halt("BTC-USD"));
    let resumed = h.run_checked(resume("BTC-USD"));
    assert_eq!(
        [&halted[0].kind, &resumed[0].kind],
        [
            &EventKind::Status(event::Status {
                symbol: sym("BTC-USD"),
                status: TradingStatus::Halted
            }),
            &EventKind::Status(event::Status {
                symbol: sym("BTC-USD"),
                status: TradingStatus::Trading
            }),
        ]
    );
}

#[test]
fn the_same_commands_give_the_same_events_and_state_even_after_a_restore() {
    let run = || {
        let mut engine = Engine::new();
        let mut out = Vec::new();
        for (i, command) in busy_session().into_iter().enumerate() {
            engine.apply(
                &Stamped {
                    ts: i as u64,
                    command,
                },
                &mut out,
            );
        }
        (engine, out)
    };
    let (mut engine, events) = run();
    assert_eq!(run().1, events);
    let mut restored = Engine::restore(&engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), engine.state_hash());
    let next = Stamped {
        ts: 99,
        command: cmd(limit(1, "b2", Side::Buy, "101", "0.1")),
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    engine.apply(&next, &mut a);
    restored.apply(&next, &mut b);
    assert_eq!(a, b);
    assert!(
        !trades(&a).is_empty(),
        "the probe should trade with the resting ask"
    );
}

#[test]
fn each_book_event_reports_the_level_as_it_stands_at_that_moment() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a", Side::Sell, "100", "0.5"));
    place_ok(&mut h, limit(1, "own", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let taker = with_stp(
        limit(1, "t", Side::Buy, "100", "1"),
        SelfTradePrevention::CancelOldest,
    );
    let events = exec(&mut h, taker);
    // After the first fill, after canceling the own order, after the last fill.
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("100"), units("2")),
            (Side::Sell, units("100"), units("1")),
            (Side::Sell, units("100"), units("0.5")),
        ]
    );
    assert_eq!(book(&h).asks, [(units("100"), units("0.5"))]);
}
