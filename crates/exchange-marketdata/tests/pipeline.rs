//! The whole pure pipeline against the real core: random commands through
//! the engine; the events through the projection; its updates as JSON (a
//! WebSocket client's rebuilt books) and as MoldUDP64 packets (the binary
//! feed's rebuilt books, with packets lost and recovered from the
//! publisher's store). Every rebuilt book must equal the core's, with the
//! sequence numbers the replicated state counts.

use std::collections::BTreeMap;

use exchange_core::{BookView, Engine};
use exchange_marketdata::mold::{Packet, SESSION_LEN};
use exchange_marketdata::publisher::Publisher;
use exchange_marketdata::rebuild::Rebuilder;
use exchange_marketdata::wire;
use exchange_marketdata::{
    json, InstrumentSnapshot, MarketSequences, MarketSnapshot, Projection, Update,
};
use exchange_types::{
    AddInstrument, AssetCode, Cancel, ClientOrderId, Command, Dec, Event, MassCancel, OrderRef,
    OrderType, Place, SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};
use serde_json::Value;

const SYMBOLS: [&str; 2] = ["BTC-USD", "ETH-USD"];
const SECOND: u64 = 1_000_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn symbol(text: &str) -> Symbol {
    Symbol::new(text).unwrap()
}

fn setup() -> Vec<Command> {
    let mut commands = Vec::new();
    for text in SYMBOLS {
        commands.push(Command::AddInstrument(Box::new(AddInstrument {
            symbol: symbol(text),
            base: AssetCode::new(&text[..3]).unwrap(),
            quote: AssetCode::new("USD").unwrap(),
            tick_size: Dec::new(1, 2),
            lot_size: Dec::new(1, 3),
            min_qty: None,
            max_qty: None,
            collar_bps: None,
            reference_price: None,
            maker_fee_bps: 0,
            taker_fee_bps: 0,
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

fn commands(count: usize, seed: u64) -> Vec<Command> {
    let mut rng = Rng(seed);
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
fn run(engine: &mut Engine, count: usize, seed: u64) -> Vec<(u64, Vec<Event>)> {
    commands(count, seed)
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
                book: engine.book(&inst.symbol, usize::MAX).unwrap_or_default(),
                sequences: sequences.get(inst.symbol.as_str()),
                recent_trades: Vec::new(),
            })
            .collect(),
    }
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

#[test]
fn rebuilt_books_equal_the_core_after_a_random_workload() {
    let mut engine = Engine::new();
    let log = run(&mut engine, 3_000, 0x5eed);
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let session = [b'T'; SESSION_LEN];
    let mut publisher = Publisher::new(session, 1_000_000, 400);
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
    assert!(trades > 100, "the workload trades ({trades})");

    // The binary feed, losing every seventh packet and asking again.
    let mut rebuilt = Rebuilder::default();
    let mut next = 1u64;
    for (n, packet) in publisher.take_packets().iter().enumerate() {
        let parsed = Packet::parse(packet).unwrap();
        if n % 7 == 3 {
            continue;
        }
        while next < parsed.seq {
            let wanted = (parsed.seq - next) as u16;
            let again = publisher.retransmit(&session, next, wanted);
            for message in Packet::parse(&again).unwrap().messages {
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

    for text in SYMBOLS {
        let core = engine.book(&symbol(text), usize::MAX).unwrap();
        let locate = projection.locate(&symbol(text)).unwrap();
        let info = projection.instrument(locate).unwrap();
        assert_eq!(info.book.view(usize::MAX), core, "projection {text}");
        assert_eq!(
            info.sequences,
            sequences.get(text),
            "projection sequences {text}"
        );
        assert!(info.sequences.book > 100);
        assert_eq!(
            json_books.view(text),
            (info.sequences.book, core.clone()),
            "json {text}"
        );
        let binary = rebuilt.by_symbol(text).unwrap();
        assert_eq!(binary.book.view(usize::MAX), core, "binary {text}");
        assert_eq!(
            (binary.book_seq, binary.trade_seq),
            (info.sequences.book, info.sequences.trades)
        );
        assert!(binary.consistent);
        let ticker = projection.ticker(locate).unwrap();
        assert_eq!(
            (ticker.best_bid, ticker.best_ask),
            (core.bids.first().copied(), core.asks.first().copied())
        );
    }
}

#[test]
fn a_projection_that_missed_entries_resyncs_from_a_snapshot() {
    let mut engine = Engine::new();
    let mut sequences = MarketSequences::default();
    let mut projection = Projection::default();
    let mut updates = Vec::new();
    let (lag_from, lag_to) = (400, 900);
    for (i, command) in commands(1_500, 7).into_iter().enumerate() {
        let index = i as u64 + 1;
        let events = apply(&mut engine, i, command);
        sequences.record(index, &events);
        updates.clear();
        if !(lag_from..lag_to).contains(&i) {
            projection.apply(index, &events, &mut updates);
            continue;
        }
        if i + 1 == lag_to {
            projection.resync(&snapshot_of(&engine, &sequences, index), &mut updates);
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
    }
}
