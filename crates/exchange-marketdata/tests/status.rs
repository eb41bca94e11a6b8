//! Phase transparency against the real core: a trading day's calls and
//! auctions through the projection, as `status` messages, as trades
//! tagged with their auction, and as the binary feed's `P` and `I`
//! messages rebuilt by a receiver. A projection started from a snapshot
//! taken mid-call must hold the same status as one that saw every entry.

use exchange_core::Engine;
use exchange_marketdata::rebuild::Rebuilder;
use exchange_marketdata::wire;
use exchange_marketdata::{
    json, IndicativeView, InstrumentSnapshot, LastAuction, MarketSequences, MarketSnapshot,
    MarketStatus, Projection, Update,
};
use exchange_types::event::AuctionKind;
use exchange_types::{
    AddInstrument, AssetCode, ClientOrderId, Command, Dec, Event, OrderType, Phase, Place,
    SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};
use serde_json::Value;

const SECOND: u64 = 1_000_000_000;

fn sym() -> Symbol {
    Symbol::new("SAP-EUR").unwrap()
}

fn place(n: u64, account: u64, side: Side, price: i64, qty: i64) -> Command {
    Command::Place(Place {
        account,
        client_order_id: ClientOrderId::new(&format!("o{n}")).unwrap(),
        symbol: sym(),
        side,
        order_type: OrderType::Limit,
        price: Some(Dec::new(price, 0)),
        qty: Dec::new(qty, 0),
        tif: TimeInForce::Gtc,
        post_only: false,
        stp: SelfTradePrevention::Decrement,
        ext: None,
    })
}

fn set_phase(phase: Phase) -> Command {
    Command::SetPhase {
        symbol: sym(),
        phase,
    }
}

/// Listing, funding, a pre-open call with crossing orders, the open.
fn day() -> Vec<Command> {
    let mut commands = vec![Command::AddInstrument(Box::new(AddInstrument {
        ..AddInstrument::plain(
            sym(),
            AssetCode::new("SAP").unwrap(),
            AssetCode::new("EUR").unwrap(),
            Dec::new(1, 2),
            Dec::new(1, 0),
        )
    }))];
    for account in 1..=2 {
        for asset in ["SAP", "EUR"] {
            commands.push(Command::Deposit(Transfer {
                account,
                asset: AssetCode::new(asset).unwrap(),
                amount: Dec::new(1_000_000, 0),
            }));
        }
    }
    commands.extend([
        set_phase(Phase::Closed),
        set_phase(Phase::PreOpen),
        place(1, 1, Side::Buy, 101, 5),
        place(2, 2, Side::Sell, 100, 3),
        place(3, 2, Side::Sell, 102, 4),
    ]);
    commands
}

fn open() -> Vec<Command> {
    vec![
        set_phase(Phase::OpeningAuction),
        place(4, 2, Side::Sell, 101, 1),
    ]
}

struct Log {
    engine: Engine,
    sequences: MarketSequences,
    entries: Vec<(u64, Vec<Event>)>,
}

impl Log {
    fn new() -> Log {
        Log {
            engine: Engine::new(),
            sequences: MarketSequences::default(),
            entries: Vec::new(),
        }
    }

    fn run(&mut self, commands: Vec<Command>) {
        for command in commands {
            let index = self.entries.len() as u64 + 1;
            let mut events = Vec::new();
            let stamped = Stamped {
                ts: 1_700_000_000 * SECOND + index * SECOND,
                command,
            };
            self.engine.apply(&stamped, &mut events);
            self.sequences.record(index, &events);
            self.entries.push((index, events));
        }
    }

    /// What the node's market read gives at the last entry (the last
    /// auction, which the core does not keep, is passed in).
    fn snapshot(&self, last_auction: Option<LastAuction>) -> MarketSnapshot {
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
                        last_auction,
                        reference_price: inst.reference_price,
                    },
                    book: self
                        .engine
                        .book(&inst.symbol, usize::MAX)
                        .unwrap_or_default(),
                    sequences: self.sequences.get(inst.symbol.as_str()),
                    recent_trades: Vec::new(),
                })
                .collect(),
        }
    }
}

fn updates(projection: &mut Projection, entries: &[(u64, Vec<Event>)]) -> Vec<Update> {
    let mut out = Vec::new();
    for (index, events) in entries {
        projection.apply(*index, events, &mut out);
    }
    out
}

fn status_of(projection: &Projection) -> MarketStatus {
    projection.instrument(0).unwrap().status
}

#[test]
fn a_call_and_its_auction_are_told_in_order() {
    let mut log = Log::new();
    log.run(day());
    let mut projection = Projection::default();
    let mut all = updates(&mut projection, &log.entries);
    during_the_call(&log, &projection, &all);

    // The open: the auction, its trades tagged, then continuous trading.
    let before = log.entries.len();
    log.run(open());
    let mut later = updates(&mut projection, &log.entries[before..]);
    at_the_open(&log, &projection, &later);

    // The binary feed: a receiver rebuilds the phase and indicative.
    all.append(&mut later);
    the_feed_rebuilds_phase_and_indicative(&log, before);
}

fn during_the_call(log: &Log, projection: &Projection, all: &[Update]) {
    // During the call: pre-open, with the indicative price the book has.
    let status = status_of(projection);
    assert_eq!(status.phase, Phase::PreOpen);
    let indicative = status.indicative.expect("the book crosses");
    assert_eq!(indicative.volume, 3 * 100_000_000);
    assert_eq!(indicative.imbalance_side, Some(Side::Buy));
    assert_eq!(indicative.imbalance_qty, 2 * 100_000_000);
    let messages: Vec<Value> = all
        .iter()
        .filter_map(|u| match u {
            Update::MarketStatus(s) => Some(serde_json::from_str(&json::status(s)).unwrap()),
            _ => None,
        })
        .collect();
    let sequences: Vec<u64> = messages
        .iter()
        .map(|m| m["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sequences,
        (1..=messages.len() as u64).collect::<Vec<_>>(),
        "one status message per change, numbered"
    );
    assert_eq!(
        messages.last().unwrap()["sequence"].as_u64(),
        Some(log.sequences.get("SAP-EUR").status)
    );
    let phases: Vec<&str> = messages
        .iter()
        .map(|m| m["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases.first(), Some(&"closed"));
    assert_eq!(
        messages.last().unwrap()["indicative"]["imbalance_side"],
        "buy"
    );

    // A projection started from a snapshot mid-call holds the same.
    let from_snapshot = Projection::from_snapshot(&log.snapshot(None));
    assert_eq!(status_of(&from_snapshot), status_of(projection));
}

fn at_the_open(log: &Log, projection: &Projection, later: &[Update]) {
    let status = status_of(projection);
    assert_eq!(status.phase, Phase::Continuous);
    assert_eq!(status.indicative, None);
    let auction = status.last_auction.expect("the open executed");
    assert_eq!(auction.kind, AuctionKind::Open);
    assert_eq!(auction.volume, 3 * 100_000_000);
    let trades: Vec<Option<AuctionKind>> = later
        .iter()
        .filter_map(|u| match u {
            Update::Trade(t) => Some(t.auction),
            _ => None,
        })
        .collect();
    // The auction's trades, then the continuous one that followed.
    assert_eq!(trades.last(), Some(&None), "{trades:?}");
    assert!(trades[..trades.len() - 1]
        .iter()
        .all(|t| *t == Some(AuctionKind::Open)));
    let kinds: Vec<String> = later
        .iter()
        .filter_map(|u| match u {
            Update::MarketStatus(s) => Some(format!("{:?}", s.change)),
            Update::Trade(_) => Some("Trade".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        &kinds[..3],
        &["Phase", "Auction", "Trade"],
        "the auction is told before its trades"
    );

    // The same status from a snapshot given the auction the node kept.
    let from_snapshot = Projection::from_snapshot(&log.snapshot(Some(auction)));
    assert_eq!(status_of(&from_snapshot), status);
}

/// Replays the whole log through a fresh projection and the binary feed;
/// `before` is the last entry of the call.
fn the_feed_rebuilds_phase_and_indicative(log: &Log, before: usize) {
    let mut feed_projection = Projection::default();
    let mut rebuilt = Rebuilder::default();
    let mut messages = Vec::new();
    let mut saw_indicative = false;
    for (index, events) in &log.entries {
        let mut out = Vec::new();
        feed_projection.apply(*index, events, &mut out);
        for update in &out {
            messages.clear();
            wire::messages_of(update, &feed_projection, &mut messages);
            for message in &messages {
                rebuilt.apply(message).unwrap();
                if let wire::Message::Indicative { price, .. } = message {
                    saw_indicative |= *price != 0;
                }
            }
        }
        if *index as usize == before {
            let inst = rebuilt.instrument(0).unwrap();
            assert_eq!(inst.phase, Some(Phase::PreOpen));
            assert_eq!(inst.indicative, status_of(&feed_projection).indicative);
        }
    }
    assert!(saw_indicative);
    let inst = rebuilt.instrument(0).unwrap();
    assert_eq!(inst.phase, Some(Phase::Continuous));
    assert_eq!(inst.indicative, None);
}

#[test]
fn a_resync_announces_a_changed_status() {
    let mut log = Log::new();
    log.run(day());
    let mut projection = Projection::default();
    // The projection saw only the listing, then resyncs mid-call.
    let _ = updates(&mut projection, &log.entries[..1]);
    let mut out = Vec::new();
    projection.resync(&log.snapshot(None), &mut out);
    let told: Vec<_> = out
        .iter()
        .filter_map(|u| match u {
            Update::MarketStatus(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].status.phase, Phase::PreOpen);
    assert_eq!(told[0].sequence, log.sequences.get("SAP-EUR").status);
    let mut messages = Vec::new();
    wire::messages_of(&Update::MarketStatus(*told[0]), &projection, &mut messages);
    // The reference restated too, as the status message carries it.
    assert!(matches!(
        messages.as_slice(),
        [
            wire::Message::Phase { .. },
            wire::Message::Indicative { .. },
            wire::Message::Reference { price: 0, .. }
        ]
    ));
    // Nothing changed: nothing told.
    let mut again = Vec::new();
    projection.resync(&log.snapshot(None), &mut again);
    assert!(!again.iter().any(|u| matches!(u, Update::MarketStatus(_))));
}
