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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MarketSequences {
    by_symbol: BTreeMap<String, Counters>,
}

impl MarketSequences {
    /// The instrument's sequences (zero before its first update).
    pub fn get(&self, symbol: &str) -> InstrumentSequences {
        self.by_symbol
            .get(symbol)
            .map(|c| c.seqs)
            .unwrap_or_default()
    }

    fn counters(&mut self, symbol: &Symbol) -> &mut Counters {
        // Looking up by &str first avoids allocating a key per event.
        if !self.by_symbol.contains_key(symbol.as_str()) {
            self.by_symbol
                .insert(symbol.to_string(), Counters::default());
        }
        self.by_symbol
            .get_mut(symbol.as_str())
            .expect("inserted above")
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
}
