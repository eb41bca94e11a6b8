//! The reference price against the real core: the projection folds it
//! from the events alone (the listing's, a new tick size's rounding, the
//! operator's, each trade's) and must hold the core's value after every
//! command; the operator's change is a status message numbered in the
//! status sequence the replicated state counts. The binary feed's `R`
//! tells a receiver the same value the `status` channel tells, live, from
//! the snapshot service and after the service resynchronised.

use exchange_core::Engine;
use exchange_marketdata::rebuild::Rebuilder;
use exchange_marketdata::wire::{self, Message};
use exchange_marketdata::{
    json, IndicativeView, InstrumentSnapshot, MarketSequences, MarketSnapshot, MarketStatus,
    Projection, SnapshotTrade, StatusChange, StatusUpdate, Update,
};
use exchange_testkit::engine::{
    asset, btc_usd, cmd, dec, deposit, limit, midpoint, rules, set_reference, set_rules, sym, units,
};
use exchange_types::{
    AddInstrument, Command, Event, EventKind, Place, SetInstrumentRules, Side, Stamped,
};
use serde_json::Value;

fn commands() -> Vec<Command> {
    let listing = AddInstrument {
        symbol: sym("SAP-EUR"),
        base: asset("SAP"),
        quote: asset("EUR"),
        lot_size: dec("1"),
        reference_price: Some(dec("100.07")),
        maker_fee_bps: 0,
        taker_fee_bps: 0,
        ..btc_usd()
    };
    let mut commands = vec![
        Command::AddInstrument(Box::new(listing)),
        // 100.07 on a 0.05 tick: the core keeps 100.05.
        set_rules(SetInstrumentRules {
            tick_size: Some(dec("0.05")),
            ..rules("SAP-EUR")
        }),
        set_reference("SAP-EUR", "90.10"),
    ];
    for account in 1..=2 {
        for code in ["SAP", "EUR"] {
            commands.push(deposit(account, code, "1000"));
        }
    }
    for (account, side) in [(1, Side::Buy), (2, Side::Sell)] {
        let id = format!("o{account}");
        commands.push(cmd(Place {
            symbol: sym("SAP-EUR"),
            ..limit(account, &id, side, "95", "1")
        }));
    }
    // A lit quote of 94 / 98, then two midpoint orders that trade at 96:
    // no last price in the core, so no reference either.
    let on_sap = |place: Place| {
        cmd(Place {
            symbol: sym("SAP-EUR"),
            ..place
        })
    };
    commands.push(on_sap(limit(1, "bid", Side::Buy, "94", "1")));
    commands.push(on_sap(limit(2, "ask", Side::Sell, "98", "1")));
    commands.push(on_sap(midpoint(1, "mb", Side::Buy, Some("97"), "1")));
    commands.push(on_sap(midpoint(2, "ms", Side::Sell, Some("95"), "1")));
    commands
}

fn status_of(projection: &Projection) -> MarketStatus {
    projection.instrument(0).unwrap().status
}

#[test]
fn the_projection_holds_the_cores_reference_after_every_command() {
    let mut engine = Engine::new();
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let mut told = Vec::new();
    for (index, command) in (1u64..).zip(commands()) {
        let mut events = Vec::new();
        engine.apply(&Stamped { ts: index, command }, &mut events);
        sequences.record(index, &events);
        let mut out = Vec::new();
        projection.apply(index, &events, &mut out);
        told.extend(out.into_iter().filter_map(|u| match u {
            Update::MarketStatus(s) => Some(s),
            _ => None,
        }));
        let core = engine.instruments()[0].reference_price;
        assert_eq!(
            status_of(&projection).reference_price,
            core,
            "entry {index}"
        );
    }
    // The trade at 95 is the reference now.
    assert_eq!(status_of(&projection).reference_price, Some(9_500_000_000));

    // The operator's change, alone among these, is a status message.
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0].change, StatusChange::ReferencePrice);
    assert_eq!(told[0].sequence, sequences.get("SAP-EUR").status);
    assert_eq!(told[0].sequence, 1);
    let message: Value = serde_json::from_str(&json::status(&told[0])).unwrap();
    assert_eq!(message["reference_price"], "90.1");
    assert_eq!(message["phase"], "continuous");
}

/// The log of `commands` on a fresh core, with the sequences the
/// replicated state counts and the trades the node remembers.
struct Log {
    engine: Engine,
    sequences: MarketSequences,
    entries: Vec<(u64, Vec<Event>)>,
    trades: Vec<SnapshotTrade>,
    /// The core's reference after each entry.
    references: Vec<Option<u64>>,
}

impl Log {
    fn run(commands: Vec<Command>) -> Log {
        let mut log = Log {
            engine: Engine::new(),
            sequences: MarketSequences::default(),
            entries: Vec::new(),
            trades: Vec::new(),
            references: Vec::new(),
        };
        for (index, command) in (1u64..).zip(commands) {
            let mut events = Vec::new();
            log.engine
                .apply(&Stamped { ts: index, command }, &mut events);
            log.sequences.record(index, &events);
            log.trades
                .extend(events.iter().filter_map(|e| match &e.kind {
                    EventKind::Trade(t) => Some(SnapshotTrade {
                        trade_id: t.trade_id,
                        price: t.price,
                        qty: t.qty,
                        aggressor: t.aggressor_side,
                        ts: e.ts,
                        auction: None,
                    }),
                    _ => None,
                }));
            log.entries.push((index, events));
            log.references.push(log.core_reference());
        }
        log
    }

    fn core_reference(&self) -> Option<u64> {
        self.engine.instruments()[0].reference_price
    }

    /// The node's market read after the last entry.
    fn snapshot(&self) -> MarketSnapshot {
        MarketSnapshot {
            applied_index: self.entries.len() as u64,
            now: self.engine.now(),
            instruments: self
                .engine
                .instruments()
                .iter()
                .map(|inst| InstrumentSnapshot {
                    symbol: inst.symbol,
                    halted: false,
                    status: MarketStatus {
                        phase: inst.phase,
                        indicative: self
                            .engine
                            .indicative(&inst.symbol)
                            .and_then(|i| IndicativeView::of(&i)),
                        last_auction: None,
                        reference_price: inst.reference_price,
                    },
                    book: self
                        .engine
                        .book(&inst.symbol, usize::MAX)
                        .unwrap_or_default(),
                    sequences: self.sequences.get(inst.symbol.as_str()),
                    recent_trades: self.trades.clone(),
                })
                .collect(),
        }
    }
}

/// A binary feed receiver: each update's messages, encoded and decoded.
#[derive(Default)]
struct Receiver {
    books: Rebuilder,
    references_told: Vec<Option<u64>>,
}

impl Receiver {
    fn receive(&mut self, update: &Update, projection: &Projection) {
        let mut messages = Vec::new();
        wire::messages_of(update, projection, &mut messages);
        for message in &messages {
            if let Message::Reference { price, .. } = message {
                self.references_told.push((*price != 0).then_some(*price));
            }
            self.books.apply_bytes(&message.to_bytes()).unwrap();
        }
    }

    fn reference(&self) -> Option<u64> {
        self.books.instrument(0).and_then(|i| i.reference_price)
    }
}

/// The `reference_price` of a status message, in price units.
fn told_by_json(message: &Value) -> Option<u64> {
    message["reference_price"].as_str().map(units)
}

/// What a receiver that joins now rebuilds from the snapshot service.
fn late_joiner(projection: &Projection) -> Option<u64> {
    let mut messages = Vec::new();
    wire::snapshot_messages(projection, &mut messages);
    let mut books = Rebuilder::default();
    for message in &messages {
        books.apply_bytes(&message.to_bytes()).unwrap();
    }
    books.instrument(0).and_then(|i| i.reference_price)
}

/// A new `status` subscription's first message, as the service sends it.
fn json_subscription(projection: &Projection) -> Value {
    let info = projection.instrument(0).unwrap();
    let update = StatusUpdate {
        locate: 0,
        symbol: info.symbol,
        sequence: info.sequences.status,
        ts: projection.now(),
        status: info.status,
        change: StatusChange::Snapshot,
    };
    serde_json::from_str(&json::status(&update)).unwrap()
}

#[test]
fn the_binary_feed_tells_the_reference_the_status_channel_tells() {
    let log = Log::run(commands());
    let mut projection = Projection::default();
    let mut receiver = Receiver::default();
    let mut status_messages = 0;
    for ((index, events), core) in log.entries.iter().zip(&log.references) {
        let mut out = Vec::new();
        projection.apply(*index, events, &mut out);
        for update in &out {
            receiver.receive(update, &projection);
            if let Update::MarketStatus(status) = update {
                let message: Value = serde_json::from_str(&json::status(status)).unwrap();
                assert_eq!(told_by_json(&message), receiver.reference(), "{message}");
                status_messages += 1;
            }
        }
        // Between status messages the feed is never behind: it tells
        // what a new subscription (or the next status message) would.
        let subscription = json_subscription(&projection);
        assert_eq!(
            receiver.reference(),
            told_by_json(&subscription),
            "entry {index}"
        );
        assert_eq!(receiver.reference(), *core, "entry {index}");
        assert_eq!(
            late_joiner(&projection),
            receiver.reference(),
            "entry {index}"
        );
    }
    assert_eq!(status_messages, 1);
    // One `R` per move: the listing's, the tick's rounding, the
    // operator's, the trade's.
    assert_eq!(
        receiver.references_told,
        ["100.07", "100.05", "90.10", "95"].map(|p| Some(units(p)))
    );
    // A gateway that starts from the node's snapshot serves late joiners
    // the same reference as one that applied every entry.
    let from_snapshot = Projection::from_snapshot(&log.snapshot());
    assert_eq!(late_joiner(&from_snapshot), log.core_reference());
}

#[test]
fn a_listing_without_a_reference_tells_none_until_a_trade() {
    let mut commands = commands();
    if let Command::AddInstrument(listing) = &mut commands[0] {
        listing.reference_price = None;
    }
    // Without a reference there is nothing to round, nor an operator's.
    commands.retain(|c| {
        !matches!(
            c,
            Command::SetInstrumentRules(_) | Command::SetReferencePrice { .. }
        )
    });
    let log = Log::run(commands);
    let mut projection = Projection::default();
    let mut receiver = Receiver::default();
    let (first, _) = &log.entries[0];
    let mut out = Vec::new();
    projection.apply(*first, &log.entries[0].1, &mut out);
    out.iter().for_each(|u| receiver.receive(u, &projection));
    assert_eq!(late_joiner(&projection), None);
    assert!(receiver.references_told.is_empty(), "nothing moved");
    for (index, events) in &log.entries[1..] {
        out.clear();
        projection.apply(*index, events, &mut out);
        out.iter().for_each(|u| receiver.receive(u, &projection));
    }
    assert_eq!(receiver.references_told, vec![Some(units("95"))]);
    assert_eq!(receiver.reference(), log.core_reference());
}

/// The service missed everything after the listing, the trade and then
/// the operator's change among it: the resync tells the operator's
/// reference, and the missed trade, replayed after it, does not undo it.
#[test]
fn a_resync_tells_the_reference_the_snapshot_holds() {
    let mut commands = commands();
    commands.push(set_reference("SAP-EUR", "97"));
    let log = Log::run(commands);
    let mut projection = Projection::default();
    let mut receiver = Receiver::default();
    let (first, events) = &log.entries[0];
    let mut out = Vec::new();
    projection.apply(*first, events, &mut out);
    out.iter().for_each(|u| receiver.receive(u, &projection));
    assert_eq!(receiver.reference(), Some(units("100.07")));

    out.clear();
    projection.resync(&log.snapshot(), &mut out);
    assert!(
        out.iter().any(|u| matches!(u, Update::Trade(_))),
        "the missed trade is replayed: {out:?}"
    );
    for update in &out {
        receiver.receive(update, &projection);
    }
    assert_eq!(log.core_reference(), Some(units("97")));
    assert_eq!(receiver.reference(), log.core_reference());
    assert_eq!(
        told_by_json(&json_subscription(&projection)),
        receiver.reference()
    );
    assert_eq!(late_joiner(&projection), receiver.reference());
}
