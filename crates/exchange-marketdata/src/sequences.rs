//! Per-instrument sequence numbers of the public market data.
//!
//! The book sequence rises by one for every log entry that changed the
//! instrument's book (however many levels it changed); the trade sequence
//! rises by one per trade. Both are functions of the log alone, so the
//! server keeps them in its replicated state: the REST book, the level2
//! channel and the binary feed report the same number for the same book,
//! on every node and across restarts. The market-data projection counts
//! with this same type, so the two can never disagree on the rule.

use std::collections::BTreeMap;

use exchange_types::{EventKind, Symbol};
use serde::{Deserialize, Serialize};

/// The sequence numbers of one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentSequences {
    /// Book updates so far: the sequence of the latest.
    pub book: u64,
    /// Trades so far: the sequence of the latest.
    pub trades: u64,
    /// Changes of phase, indicative price, last auction or reference
    /// price so far (one per `phase`, `indicative`, `auction` or
    /// `reference_price` event): the `status` channel's sequence. Left
    /// out while zero, so a state without any phase event serializes (and
    /// hashes) as before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub status: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Counters {
    #[serde(flatten)]
    seqs: InstrumentSequences,
    /// Log index of the entry that last bumped `book`, so several level
    /// changes of one entry count once. Entries arrive with rising
    /// indices, so it need not survive a snapshot.
    #[serde(skip)]
    book_entry: u64,
}

/// Sequence numbers of every instrument that has had a book change or a
/// trade, by symbol.
///
/// Counted on the core thread for every event, so the lookup is cheap: the
/// instruments are kept in a vector sorted by symbol text (the order the
/// serialized map has always had, which the state hash covers), found by a
/// comparison of the symbols' inline bytes, and the last one found is tried
/// first, since an entry's events mostly name one instrument. Serialized as
/// the map from symbol to sequences it stands for.
#[derive(Clone, Debug, Default)]
pub struct MarketSequences {
    by_symbol: Vec<(Symbol, Counters)>,
    /// Index in `by_symbol` of the instrument found last.
    last: usize,
}

/// The serialized form: a map sorted by symbol text.
#[derive(Serialize)]
struct SequencesOut<'a> {
    #[serde(serialize_with = "serialize_counters")]
    by_symbol: &'a [(Symbol, Counters)],
}

#[derive(Deserialize)]
struct SequencesIn {
    by_symbol: BTreeMap<String, Counters>,
}

fn serialize_counters<S: serde::Serializer>(
    counters: &&[(Symbol, Counters)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(counters.iter().map(|(symbol, c)| (symbol.as_str(), c)))
}

impl Serialize for MarketSequences {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SequencesOut {
            by_symbol: &self.by_symbol,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MarketSequences {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = SequencesIn::deserialize(deserializer)?;
        // A map's keys come sorted as text, the order kept here.
        let by_symbol = stored
            .by_symbol
            .into_iter()
            .map(|(text, counters)| {
                Symbol::new(&text)
                    .map(|symbol| (symbol, counters))
                    .map_err(serde::de::Error::custom)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MarketSequences { by_symbol, last: 0 })
    }
}

impl MarketSequences {
    /// The instrument's sequences (zero before its first update).
    pub fn get(&self, symbol: &str) -> InstrumentSequences {
        self.position(symbol.as_bytes())
            .ok()
            .map(|at| self.by_symbol[at].1.seqs)
            .unwrap_or_default()
    }

    /// Where the instrument is, or where it would go.
    fn position(&self, text: &[u8]) -> Result<usize, usize> {
        self.by_symbol
            .binary_search_by(|(known, _)| known.as_bytes().cmp(text))
    }

    fn counters(&mut self, symbol: &Symbol) -> &mut Counters {
        let at = match self.by_symbol.get(self.last) {
            Some((known, _)) if known == symbol => self.last,
            _ => match self.position(symbol.as_bytes()) {
                Ok(at) => at,
                Err(at) => {
                    self.by_symbol.insert(at, (*symbol, Counters::default()));
                    at
                }
            },
        };
        self.last = at;
        &mut self.by_symbol[at].1
    }

    /// Counts one event of log entry `index` and returns the sequence it
    /// belongs to: the book sequence for a `Book` event, the trade sequence
    /// for a `Trade`, the status sequence for a `Phase`, `Indicative`,
    /// `Auction` or `ReferencePrice`; `None` for every other event.
    pub fn record_event(&mut self, index: u64, kind: &EventKind) -> Option<u64> {
        match kind {
            EventKind::Book(book) => {
                let counters = self.counters(&book.symbol);
                if counters.book_entry != index {
                    counters.book_entry = index;
                    counters.seqs.book += 1;
                }
                Some(counters.seqs.book)
            }
            EventKind::Trade(trade) => {
                let counters = self.counters(&trade.symbol);
                counters.seqs.trades += 1;
                Some(counters.seqs.trades)
            }
            other => {
                let symbol = crate::status::status_symbol(other)?;
                let counters = self.counters(&symbol);
                counters.seqs.status += 1;
                Some(counters.seqs.status)
            }
        }
    }

    /// Counts every event of log entry `index`.
    pub fn record(&mut self, index: u64, events: &[exchange_types::Event]) {
        for event in events {
            self.record_event(index, &event.kind);
        }
    }

    /// Sets an instrument's sequences (a projection starting from a
    /// snapshot of the replicated state).
    pub fn set(&mut self, symbol: &Symbol, seqs: InstrumentSequences) {
        self.counters(symbol).seqs = seqs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exchange_types::{Event, Side};

    fn book(symbol: &str, price: u64) -> Event {
        Event {
            seq: 0,
            ts: 0,
            kind: EventKind::Book(exchange_types::event::Book {
                symbol: Symbol::new(symbol).unwrap(),
                side: Side::Buy,
                price,
                qty: 1,
            }),
        }
    }

    #[test]
    fn one_book_update_per_entry_and_per_symbol() {
        let mut seqs = MarketSequences::default();
        seqs.record(5, &[book("A", 1), book("A", 2), book("B", 1)]);
        seqs.record(6, &[book("A", 3)]);
        assert_eq!(seqs.get("A").book, 2);
        assert_eq!(seqs.get("B").book, 1);
        assert_eq!(seqs.get("C"), InstrumentSequences::default());
    }

    #[test]
    fn survives_a_json_round_trip_and_keeps_counting() {
        let mut seqs = MarketSequences::default();
        seqs.record(1, &[book("A", 1)]);
        let text = serde_json::to_string(&seqs).unwrap();
        assert_eq!(text, r#"{"by_symbol":{"A":{"book":1,"trades":0}}}"#);
        let mut back: MarketSequences = serde_json::from_str(&text).unwrap();
        back.record(2, &[book("A", 1), book("A", 2)]);
        assert_eq!(back.get("A").book, 2);
    }

    #[test]
    fn status_events_count_one_each_and_appear_once_counted() {
        let mut seqs = MarketSequences::default();
        let symbol = Symbol::new("A").unwrap();
        let phase = Event {
            seq: 0,
            ts: 0,
            kind: EventKind::Phase(exchange_types::event::PhaseChanged {
                symbol,
                phase: exchange_types::Phase::PreOpen,
            }),
        };
        seqs.record(1, &[book("A", 1), phase.clone(), phase]);
        assert_eq!(seqs.get("A").status, 2);
        let text = serde_json::to_string(&seqs).unwrap();
        assert_eq!(
            text,
            r#"{"by_symbol":{"A":{"book":1,"trades":0,"status":2}}}"#
        );
        let back: MarketSequences = serde_json::from_str(&text).unwrap();
        assert_eq!(back.get("A"), seqs.get("A"));
    }

    /// The rule as a map from symbol text, counted the plain way.
    #[derive(Default)]
    struct Model {
        by_symbol: BTreeMap<String, (u64, InstrumentSequences)>,
    }

    impl Model {
        fn record(&mut self, index: u64, events: &[Event]) {
            for event in events {
                let (symbol, book) = match &event.kind {
                    EventKind::Book(b) => (b.symbol, true),
                    EventKind::Trade(t) => (t.symbol, false),
                    _ => continue,
                };
                let (entry, seqs) = self.by_symbol.entry(symbol.to_string()).or_default();
                if !book {
                    seqs.trades += 1;
                } else if *entry != index {
                    *entry = index;
                    seqs.book += 1;
                }
            }
        }

        fn json(&self) -> String {
            let map: BTreeMap<&str, InstrumentSequences> = self
                .by_symbol
                .iter()
                .map(|(symbol, (_, seqs))| (symbol.as_str(), *seqs))
                .collect();
            serde_json::to_string(&serde_json::json!({ "by_symbol": map })).unwrap()
        }
    }

    fn trade(symbol: &str) -> Event {
        Event {
            seq: 0,
            ts: 0,
            kind: EventKind::Trade(exchange_types::event::Trade {
                trade_id: 1,
                symbol: Symbol::new(symbol).unwrap(),
                price: 1,
                qty: 1,
                maker_order_id: 1,
                taker_order_id: 2,
                maker_account: 1,
                taker_account: 2,
                aggressor_side: Side::Buy,
                maker_fee: 0,
                taker_fee: 0,
                maker_leaves_qty: 0,
                taker_leaves_qty: 0,
                midpoint: false,
            }),
        }
    }

    proptest::proptest! {
        /// Symbols of different lengths sort as text, not as inline
        /// bytes: the counts, the serialized map (which the state hash
        /// covers) and its round trip all match the plain map's.
        #[test]
        fn counts_and_serializes_as_the_plain_map(
            entries in proptest::collection::vec(
                proptest::collection::vec((0usize..6, proptest::bool::ANY), 0..5),
                0..40,
            )
        ) {
            const SYMBOLS: [&str; 6] = ["B", "AB", "A", "ZZ", "AAA", "B-C"];
            let mut seqs = MarketSequences::default();
            let mut model = Model::default();
            for (index, picks) in entries.iter().enumerate() {
                let events: Vec<Event> = picks
                    .iter()
                    .map(|&(at, is_book)| {
                        if is_book { book(SYMBOLS[at], 1) } else { trade(SYMBOLS[at]) }
                    })
                    .collect();
                seqs.record(index as u64 + 1, &events);
                model.record(index as u64 + 1, &events);
            }
            for symbol in SYMBOLS {
                let expected = model.by_symbol.get(symbol).map(|(_, s)| *s).unwrap_or_default();
                proptest::prop_assert_eq!(seqs.get(symbol), expected);
            }
            let text = serde_json::to_string(&seqs).unwrap();
            proptest::prop_assert_eq!(&text, &model.json());
            let back: MarketSequences = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(serde_json::to_string(&back).unwrap(), text);
        }
    }
}
