//! The whole pure pipeline against the real core: random commands through
//! the engine; the events through the projection; its updates as JSON (a
//! WebSocket client's rebuilt books) and as MoldUDP64 packets (the binary
//! feed's rebuilt books, with packets lost and recovered from the
//! publisher's store). Every rebuilt book must equal the core's, with the
//! sequence numbers the replicated state counts.
//!
//! The workload runs from several seeds and two generators (this file's
//! xorshift and the test kit's), since each draws a different mix of
//! crosses, sweeps and cancels from the same command shapes.

use std::collections::BTreeMap;

use exchange_core::{BookView, Engine};
use exchange_marketdata::mold::{Packet, Session, HEADER_LEN, SESSION_LEN};
use exchange_marketdata::publisher::Publisher;
use exchange_marketdata::rebuild::Rebuilder;
use exchange_marketdata::wire::{self, Message, LEVEL_LEN};
use exchange_marketdata::{
    json, Channel, InstrumentSnapshot, Interval, Listeners, MarketSequences, MarketSnapshot,
    Projection, Update,
};
use exchange_types::{
    AddInstrument, AssetCode, Cancel, ClientOrderId, Command, Dec, Event, MassCancel, OrderRef,
    OrderType, Place, SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};
use serde_json::Value;

const SYMBOLS: [&str; 2] = ["BTC-USD", "ETH-USD"];
const SECOND: u64 = 1_000_000_000;

enum Rng {
    Xorshift(u64),
    Kit(exchange_testkit::Rng),
}

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        match self {
            Rng::Xorshift(state) => {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                *state % n
            }
            Rng::Kit(rng) => rng.below(n),
        }
    }
}

fn symbol(text: &str) -> Symbol {
    Symbol::new(text).unwrap()
}

fn setup() -> Vec<Command> {
    let mut commands = Vec::new();
    for text in SYMBOLS {
        commands.push(Command::AddInstrument(Box::new(AddInstrument {
            ..AddInstrument::plain(
                symbol(text),
                AssetCode::new(&text[..3]).unwrap(),
                AssetCode::new("USD").unwrap(),
                Dec::new(1, 2),
                Dec::new(1, 3),
            )
        })));
    }
    for account in 1..=4 {
        for asset in ["USD", "BTC", "ETH"] {
            commands.push(Command::Deposit(Transfer {
                account,
                asset: AssetCode::new(asset).unwrap(),
                amount: Dec::new(1_000_000_000, 0),
            }));
        }
    }
    commands
}

fn random_command(rng: &mut Rng, n: u64) -> Command {
    let account = 1 + rng.below(4);
    let sym = symbol(SYMBOLS[rng.below(2) as usize]);
    match rng.below(20) {
        0..=12 => {
            let side = if rng.below(2) == 0 {
                Side::Buy
            } else {
                Side::Sell
            };
            let market = rng.below(10) == 0;
            // Prices 99.90 to 100.10 so orders rest, cross and sweep.
            let price = (!market).then(|| Dec::new(9_990 + rng.below(21) as i64, 2));
            Command::Place(Place {
                account,
                client_order_id: ClientOrderId::new(&format!("c{n}")).unwrap(),
                symbol: sym,
                side,
                order_type: if market {
                    OrderType::Market
                } else {
                    OrderType::Limit
                },
                price,
                qty: Dec::new(1 + rng.below(50) as i64, 3),
                tif: if market {
                    TimeInForce::Ioc
                } else {
                    TimeInForce::Gtc
                },
                post_only: false,
                stp: SelfTradePrevention::Decrement,
                ext: None,
            })
        }
        13..=18 => Command::Cancel(Cancel {
            account,
            order: OrderRef::Id(1 + rng.below(n.max(1))),
        }),
        _ => Command::MassCancel(MassCancel {
            account,
            symbol: (rng.below(2) == 0).then_some(sym),
        }),
    }
}

fn commands(count: usize, mut rng: Rng) -> Vec<Command> {
    let mut all = setup();
    for n in 0..count as u64 {
        all.push(random_command(&mut rng, n));
    }
    all
}

/// Applies the `i`-th command (a second apart, times seven) to `engine`.
fn apply(engine: &mut Engine, i: usize, command: Command) -> Vec<Event> {
    let mut events = Vec::new();
    let stamped = Stamped {
        ts: 1_700_000_000 * SECOND + i as u64 * 7 * SECOND,
        command,
    };
    engine.apply(&stamped, &mut events);
    events
}

/// The log: (index, events) of every entry, applied to `engine`.
fn run(engine: &mut Engine, count: usize, rng: Rng) -> Vec<(u64, Vec<Event>)> {
    commands(count, rng)
        .into_iter()
        .enumerate()
        .map(|(i, command)| (i as u64 + 1, apply(engine, i, command)))
        .collect()
}

fn snapshot_of(engine: &Engine, sequences: &MarketSequences, index: u64) -> MarketSnapshot {
    MarketSnapshot {
        applied_index: index,
        now: engine.now(),
        instruments: engine
            .instruments()
            .iter()
            .map(|inst| InstrumentSnapshot {
                symbol: inst.symbol,
                halted: false,
                status: exchange_marketdata::MarketStatus {
                    phase: inst.phase,
                    indicative: engine
                        .indicative(&inst.symbol)
                        .and_then(|i| exchange_marketdata::IndicativeView::of(&i)),
                    last_auction: None,
                    reference_price: inst.reference_price,
                },
                book: engine.book(&inst.symbol, usize::MAX).unwrap_or_default(),
                sequences: sequences.get(inst.symbol.as_str()),
                recent_trades: Vec::new(),
            })
            .collect(),
    }
}

fn core_reference(engine: &Engine, text: &str) -> Option<u64> {
    engine
        .instruments()
        .iter()
        .find(|i| i.symbol.as_str() == text)
        .and_then(|i| i.reference_price)
}

/// Quantity by (side, price).
type Levels = BTreeMap<(String, u64), u64>;

/// A WebSocket client's level2 books, from the JSON messages: the
/// sequence and the levels by symbol.
#[derive(Default)]
struct JsonBooks {
    books: BTreeMap<String, (u64, Levels)>,
}

fn units(value: &Value) -> u64 {
    let dec = Dec::parse(value.as_str().unwrap()).unwrap();
    dec.to_units_allow_zero().unwrap()
}

impl JsonBooks {
    fn apply(&mut self, text: &str) {
        let msg: Value = serde_json::from_str(text).unwrap();
        let symbol = msg["symbol"].as_str().unwrap().to_string();
        let sequence = msg["sequence"].as_u64().unwrap();
        let entry = self.books.entry(symbol).or_default();
        match msg["type"].as_str().unwrap() {
            "snapshot" => {
                entry.1.clear();
                for (side, key) in [("buy", "bids"), ("sell", "asks")] {
                    for level in msg[key].as_array().unwrap() {
                        entry
                            .1
                            .insert((side.into(), units(&level[0])), units(&level[1]));
                    }
                }
            }
            "update" => {
                assert_eq!(sequence, entry.0 + 1, "level2 gap: {text}");
                for change in msg["changes"].as_array().unwrap() {
                    let key = (change[0].as_str().unwrap().to_string(), units(&change[1]));
                    match units(&change[2]) {
                        0 => entry.1.remove(&key),
                        qty => entry.1.insert(key, qty),
                    };
                }
            }
            other => panic!("unexpected {other}"),
        }
        entry.0 = sequence;
    }

    fn view(&self, symbol: &str) -> (u64, BookView) {
        let (seq, levels) = &self.books[symbol];
        let side = |name: &str| -> Vec<(u64, u64)> {
            levels
                .iter()
                .filter(|((s, _), _)| s == name)
                .map(|((_, p), q)| (*p, *q))
                .collect()
        };
        let mut bids = side("buy");
        bids.reverse();
        (
            *seq,
            BookView {
                bids,
                asks: side("sell"),
            },
        )
    }
}

/// Books rebuilt from the publisher's packets as a receiver gets them
/// when the packets `lost(n, total)` picks never arrive. A gap before a
/// packet is fetched from the publisher's store, like the feed client
/// does. The heartbeat after the last packet arrives too: it carries the
/// next sequence number, and is the only way a receiver learns that the
/// last packet was lost.
fn receive(publisher: &mut Publisher, lost: impl Fn(usize, usize) -> bool) -> Rebuilder {
    let session = publisher.session();
    let packets = publisher.take_packets();
    let heartbeat = publisher.heartbeat();
    let total = packets.len();
    let arriving = packets
        .iter()
        .enumerate()
        .filter(|&(n, _)| !lost(n, total))
        .map(|(_, packet)| packet)
        .chain([&heartbeat]);
    let mut rebuilt = Rebuilder::default();
    let mut next = 1u64;
    for packet in arriving {
        let parsed = Packet::parse(packet).unwrap();
        while next < parsed.seq {
            let wanted = (parsed.seq - next).min(u64::from(u16::MAX)) as u16;
            let again = publisher.retransmit(&session, next, wanted);
            let again = Packet::parse(&again).unwrap();
            assert!(!again.messages.is_empty(), "{next} is still stored");
            for message in again.messages {
                rebuilt.apply_bytes(message).unwrap();
                next += 1;
            }
        }
        assert_eq!(next, parsed.seq);
        for message in parsed.messages {
            rebuilt.apply_bytes(message).unwrap();
            next += 1;
        }
    }
    rebuilt
}

#[test]
fn a_lost_last_packet_is_fetched_after_the_heartbeat() {
    let session: Session = [b'T'; SESSION_LEN];
    // One level message per packet.
    let mut publisher = Publisher::new(session, 100, HEADER_LEN + 2 + LEVEL_LEN);
    let level = |book_seq, qty| Message::Level {
        locate: 0,
        book_seq,
        ts: book_seq,
        side: Side::Sell,
        price: 10_010_000_000,
        qty,
        last: true,
    };
    publisher.push(&Message::Directory {
        locate: 0,
        symbol: symbol("BTC-USD"),
    });
    // An ask, then what a partial fill leaves of it.
    publisher.push(&level(1, 8_200_000));
    publisher.push(&level(2, 3_900_000));
    publisher.flush();

    let rebuilt = receive(&mut publisher, |n, total| n + 1 == total);
    let book = rebuilt.by_symbol("BTC-USD").unwrap();
    assert_eq!((book.book_seq, book.consistent), (2, true));
    assert_eq!(
        book.book.view(usize::MAX).asks,
        vec![(10_010_000_000, 3_900_000)]
    );
}

#[test]
fn rebuilt_books_equal_the_core_after_random_workloads() {
    let cases = [
        ("xorshift 0x5eed", Rng::Xorshift(0x5eed), 400),
        ("xorshift 22", Rng::Xorshift(22), 1_400),
        ("kit 4", Rng::Kit(exchange_testkit::Rng(4)), 400),
        ("kit 12", Rng::Kit(exchange_testkit::Rng(12)), 1_400),
        ("kit 0x5eed", Rng::Kit(exchange_testkit::Rng(0x5eed)), 400),
    ];
    for (label, rng, max_packet) in cases {
        check_pipeline(label, rng, max_packet);
    }
}

/// Runs a 3,000-command workload from `rng` through the pipeline and
/// compares every rebuilt book with the core's.
fn check_pipeline(label: &str, rng: Rng, max_packet: usize) {
    let mut engine = Engine::new();
    let log = run(&mut engine, 3_000, rng);
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let mut publisher = Publisher::new([b'T'; SESSION_LEN], 1_000_000, max_packet);
    let mut json_books = JsonBooks::default();
    let mut updates = Vec::new();
    let mut messages = Vec::new();
    let mut trades = 0;
    for (index, events) in &log {
        sequences.record(*index, events);
        updates.clear();
        projection.apply(*index, events, &mut updates);
        for update in &updates {
            match update {
                Update::Listed { locate, symbol } => {
                    let book = projection.instrument(*locate).unwrap().book;
                    json_books.apply(&json::level2_snapshot(symbol.as_str(), 0, book));
                }
                Update::Book(book) => json_books.apply(&json::level2_update(book)),
                Update::Trade(_) => trades += 1,
                _ => {}
            }
            messages.clear();
            wire::messages_of(update, &projection, &mut messages);
            messages.iter().for_each(|m| publisher.push(m));
        }
        publisher.flush();
    }
    assert!(trades > 100, "{label}: the workload trades ({trades})");

    // The binary feed, losing every seventh packet and the last one.
    let rebuilt = receive(&mut publisher, |n, total| n % 7 == 3 || n + 1 == total);

    for text in SYMBOLS {
        let core = engine.book(&symbol(text), usize::MAX).unwrap();
        let locate = projection.locate(&symbol(text)).unwrap();
        let info = projection.instrument(locate).unwrap();
        assert_eq!(
            info.book.view(usize::MAX),
            core,
            "{label}: projection {text}"
        );
        assert_eq!(
            info.sequences,
            sequences.get(text),
            "{label}: projection sequences {text}"
        );
        assert!(info.sequences.book > 100, "{label}");
        assert_eq!(
            json_books.view(text),
            (info.sequences.book, core.clone()),
            "{label}: json {text}"
        );
        // Sequences first: a feed that fell behind reports as behind.
        let binary = rebuilt.by_symbol(text).unwrap();
        assert_eq!(
            (binary.book_seq, binary.trade_seq, binary.consistent),
            (info.sequences.book, info.sequences.trades, true),
            "{label}: binary sequences {text}"
        );
        assert_eq!(binary.book.view(usize::MAX), core, "{label}: binary {text}");
        let reference = core_reference(&engine, text);
        let told = (info.status.reference_price, binary.reference_price);
        assert_eq!(told, (reference, reference), "{label}: reference {text}");
        let ticker = projection.ticker(locate).unwrap();
        assert_eq!(
            (ticker.best_bid, ticker.best_ask),
            (core.bids.first().copied(), core.asks.first().copied()),
            "{label}: ticker {text}"
        );
    }
}

#[test]
fn a_projection_that_missed_entries_resyncs_from_a_snapshot() {
    let mut engine = Engine::new();
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let mut updates = Vec::new();
    let mut feed = Rebuilder::default();
    let mut messages = Vec::new();
    let mut receive = |updates: &[Update], projection: &Projection| {
        for update in updates {
            messages.clear();
            wire::messages_of(update, projection, &mut messages);
            for message in &messages {
                feed.apply_bytes(&message.to_bytes()).unwrap();
            }
        }
    };
    let (lag_from, lag_to) = (400, 900);
    for (i, command) in commands(1_500, Rng::Xorshift(7)).into_iter().enumerate() {
        let index = i as u64 + 1;
        let events = apply(&mut engine, i, command);
        sequences.record(index, &events);
        updates.clear();
        if !(lag_from..lag_to).contains(&i) {
            projection.apply(index, &events, &mut updates);
            receive(&updates, &projection);
            continue;
        }
        if i + 1 == lag_to {
            projection.resync(&snapshot_of(&engine, &sequences, index), &mut updates);
            receive(&updates, &projection);
            let snapshots: Vec<u64> = updates
                .iter()
                .filter_map(|u| match u {
                    Update::Snapshot { sequence, .. } => Some(*sequence),
                    _ => None,
                })
                .collect();
            let expected: Vec<u64> = SYMBOLS.iter().map(|s| sequences.get(s).book).collect();
            assert_eq!(snapshots, expected, "{updates:?}");
            // An entry the snapshot covers is ignored when it arrives late.
            updates.clear();
            projection.apply(index, &events, &mut updates);
            assert!(updates.is_empty());
        }
    }
    for text in SYMBOLS {
        let core = engine.book(&symbol(text), usize::MAX).unwrap();
        let info = projection
            .instrument(projection.locate(&symbol(text)).unwrap())
            .unwrap();
        assert_eq!(info.book.view(usize::MAX), core, "{text}");
        assert_eq!(info.sequences, sequences.get(text));
        // The feed's receiver followed through the resync.
        let binary = feed.by_symbol(text).unwrap();
        assert_eq!(
            binary.reference_price,
            core_reference(&engine, text),
            "{text}"
        );
        assert!(binary.reference_price.is_some(), "{text} traded");
    }
}

/// Hears level2 of the first instrument in two entries of three (a client
/// that subscribes and leaves), the second's ticker and the first's
/// one-minute candles.
struct PartOfTheMarket {
    index: u64,
}

impl Listeners for PartOfTheMarket {
    fn hears(&self, channel: Channel, locate: u16) -> bool {
        match channel {
            Channel::Level2 => locate == 0 && !self.index.is_multiple_of(3),
            Channel::Ticker => locate == 1,
            Channel::Candles(interval) => locate == 0 && interval == Interval::M1,
            Channel::Trades | Channel::Status => false,
        }
    }
}

#[test]
fn updates_nobody_hears_are_not_built_and_the_state_advances_alike() {
    let mut engine = Engine::new();
    let log = run(&mut engine, 3_000, Rng::Xorshift(0x5eed));
    let (mut everyone, mut some) = (Projection::default(), Projection::default());
    let (mut all, mut heard) = (Vec::new(), Vec::new());
    let mut listeners = PartOfTheMarket { index: 0 };
    let (mut books, mut skipped) = (0, 0);
    for (index, events) in &log {
        all.clear();
        heard.clear();
        listeners.index = *index;
        everyone.apply(*index, events, &mut all);
        some.apply_heard(*index, events, &listeners, &mut heard);
        let expected: Vec<&Update> = all
            .iter()
            .filter(|update| match update {
                Update::Book(book) => listeners.hears(Channel::Level2, book.locate),
                Update::Ticker(ticker) => listeners.hears(Channel::Ticker, ticker.locate),
                Update::Candle {
                    locate, interval, ..
                } => listeners.hears(Channel::Candles(*interval), *locate),
                _ => true,
            })
            .collect();
        // A book update heard after unheard ones holds this entry's
        // changes alone, as everyone's does.
        assert_eq!(heard.iter().collect::<Vec<_>>(), expected, "entry {index}");
        books += heard
            .iter()
            .filter(|u| matches!(u, Update::Book(_)))
            .count();
        skipped += all.len() - heard.len();
    }
    assert!(
        books > 100 && skipped > 1_000,
        "{books} heard, {skipped} skipped"
    );
    for text in SYMBOLS {
        let locate = everyone.locate(&symbol(text)).unwrap();
        let (a, b) = (
            everyone.instrument(locate).unwrap(),
            some.instrument(locate).unwrap(),
        );
        assert_eq!(a.book.view(usize::MAX), b.book.view(usize::MAX), "{text}");
        assert_eq!(a.sequences, b.sequences, "{text}");
        assert_eq!(everyone.ticker(locate), some.ticker(locate), "{text}");
        for interval in Interval::ALL {
            let latest = |p: &Projection| p.candles(locate).unwrap().latest(interval);
            assert_eq!(latest(&everyone), latest(&some), "{text} {interval:?}");
        }
    }
}
