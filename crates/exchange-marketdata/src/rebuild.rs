//! Books rebuilt from the binary feed's messages, applied in sequence
//! order (the [`client`](crate::client) puts them in order and fills gaps).
//!
//! The rebuilder checks the per-instrument book sequence too: an update
//! must continue the current one or be the next, or start over with a
//! `Clear`. Anything else means a message was lost and is an error.

use std::collections::BTreeMap;
use std::fmt::Write;

use exchange_types::{format_units, Side, Symbol};
use thiserror::Error;

use crate::book::L2Book;
use crate::status::{is_call, IndicativeView};
use crate::wire::{Message, WireError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebuiltInstrument {
    pub symbol: Option<Symbol>,
    pub halted: bool,
    /// The phase of the latest `P`; `None` before one arrived.
    pub phase: Option<exchange_types::Phase>,
    /// The indicative uncrossing of the current call, if something crosses.
    pub indicative: Option<IndicativeView>,
    /// The reference price of the latest `R`; `None` before one, or when
    /// the instrument has none.
    pub reference_price: Option<u64>,
    pub book: L2Book,
    /// Sequence of the latest book update applied.
    pub book_seq: u64,
    /// False in the middle of an update (its last level has not come).
    pub consistent: bool,
    pub trade_seq: u64,
    /// Price and quantity of the latest trade.
    pub last_trade: Option<(u64, u64)>,
    /// Jumps in the trade sequence (trades the server could not replay
    /// after it resynchronised).
    pub trade_gaps: u64,
}

impl Default for RebuiltInstrument {
    fn default() -> Self {
        RebuiltInstrument {
            symbol: None,
            halted: false,
            phase: None,
            indicative: None,
            reference_price: None,
            book: L2Book::default(),
            book_seq: 0,
            consistent: true,
            trade_seq: 0,
            last_trade: None,
            trade_gaps: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RebuildError {
    #[error("instrument {locate}: book update {got} does not follow {current}")]
    BookGap { locate: u16, current: u64, got: u64 },
    #[error(transparent)]
    Wire(#[from] WireError),
}

#[derive(Clone, Debug, Default)]
pub struct Rebuilder {
    instruments: BTreeMap<u16, RebuiltInstrument>,
}

impl Rebuilder {
    /// Forgets everything (before applying a new snapshot).
    pub fn reset(&mut self) {
        self.instruments.clear();
    }

    pub fn apply_bytes(&mut self, bytes: &[u8]) -> Result<(), RebuildError> {
        self.apply(&Message::decode(bytes)?)
    }

    pub fn apply(&mut self, message: &Message) -> Result<(), RebuildError> {
        match *message {
            Message::Directory { locate, symbol } => {
                self.instruments.entry(locate).or_default().symbol = Some(symbol);
            }
            Message::Status { locate, halted, .. } => {
                self.instruments.entry(locate).or_default().halted = halted;
            }
            Message::Phase { locate, phase, .. } => {
                let inst = self.instruments.entry(locate).or_default();
                inst.phase = Some(phase);
                if !is_call(phase) {
                    inst.indicative = None;
                }
            }
            Message::Indicative {
                locate,
                price,
                volume,
                imbalance_side,
                imbalance_qty,
                ..
            } => {
                self.instruments.entry(locate).or_default().indicative =
                    (price != 0).then_some(IndicativeView {
                        price,
                        volume,
                        imbalance_side,
                        imbalance_qty,
                    });
            }
            Message::Reference { locate, price, .. } => {
                self.instruments.entry(locate).or_default().reference_price =
                    (price != 0).then_some(price);
            }
            Message::Clear {
                locate,
                book_seq,
                last,
                ..
            } => {
                let inst = self.instruments.entry(locate).or_default();
                inst.book.clear();
                inst.book_seq = book_seq;
                inst.consistent = last;
            }
            Message::Level {
                locate,
                book_seq,
                side,
                price,
                qty,
                last,
                ..
            } => self.apply_level(locate, book_seq, side, price, qty, last)?,
            Message::Trade {
                locate,
                trade_seq,
                price,
                qty,
                ..
            } => {
                let inst = self.instruments.entry(locate).or_default();
                if trade_seq != inst.trade_seq + 1 && inst.trade_seq != 0 {
                    inst.trade_gaps += 1;
                }
                inst.trade_seq = trade_seq;
                inst.last_trade = Some((price, qty));
            }
        }
        Ok(())
    }

    /// One level of a book message: it continues the book being sent, or
    /// starts the next one; anything else is a gap.
    fn apply_level(
        &mut self,
        locate: u16,
        book_seq: u64,
        side: Side,
        price: u64,
        qty: u64,
        last: bool,
    ) -> Result<(), RebuildError> {
        let inst = self.instruments.entry(locate).or_default();
        let continues = book_seq == inst.book_seq && !inst.consistent;
        let next = book_seq == inst.book_seq + 1 && inst.consistent;
        if !continues && !next {
            return Err(RebuildError::BookGap {
                locate,
                current: inst.book_seq,
                got: book_seq,
            });
        }
        inst.book.set(side, price, qty);
        inst.book_seq = book_seq;
        inst.consistent = last;
        Ok(())
    }

    pub fn instrument(&self, locate: u16) -> Option<&RebuiltInstrument> {
        self.instruments.get(&locate)
    }

    pub fn by_symbol(&self, symbol: &str) -> Option<&RebuiltInstrument> {
        self.instruments
            .values()
            .find(|i| i.symbol.is_some_and(|s| s.as_str() == symbol))
    }

    pub fn instruments(&self) -> impl Iterator<Item = (u16, &RebuiltInstrument)> {
        self.instruments.iter().map(|(&l, i)| (l, i))
    }

    /// The books as text: up to `depth` levels per side, best first.
    pub fn render(&self, depth: usize) -> String {
        let mut out = String::new();
        for (locate, inst) in self.instruments() {
            let name = inst
                .symbol
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("#{locate}"));
            let last = inst
                .last_trade
                .map(|(p, q)| format!("{} x {}", format_units(p), format_units(q)))
                .unwrap_or_else(|| "-".into());
            let phase = inst
                .phase
                .map(|p| format!("  {}", p.as_str()))
                .unwrap_or_default();
            let indicative = inst
                .indicative
                .map(|i| {
                    format!(
                        "  indicative {} x {}",
                        format_units(i.price),
                        format_units(i.volume)
                    )
                })
                .unwrap_or_default();
            let reference = inst
                .reference_price
                .map(|r| format!("  reference {}", format_units(r)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{name}{}{phase}{indicative}{reference}  book seq {}  trades {}  last {last}",
                if inst.halted { " (halted)" } else { "" },
                inst.book_seq,
                inst.trade_seq,
            );
            let bids: Vec<_> = inst.book.levels(Side::Buy).take(depth).collect();
            let asks: Vec<_> = inst.book.levels(Side::Sell).take(depth).collect();
            let _ = writeln!(
                out,
                "  {:>18} {:>14} | {:<14} {:<18}",
                "bid qty", "bid", "ask", "ask qty"
            );
            for row in 0..bids.len().max(asks.len()) {
                let cell = |level: Option<&(u64, u64)>, price: bool| {
                    level
                        .map(|&(p, q)| format_units(if price { p } else { q }))
                        .unwrap_or_default()
                };
                let _ = writeln!(
                    out,
                    "  {:>18} {:>14} | {:<14} {:<18}",
                    cell(bids.get(row), false),
                    cell(bids.get(row), true),
                    cell(asks.get(row), true),
                    cell(asks.get(row), false),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(book_seq: u64, price: u64, qty: u64, last: bool) -> Message {
        Message::Level {
            locate: 0,
            book_seq,
            ts: 0,
            side: Side::Buy,
            price,
            qty,
            last,
        }
    }

    #[test]
    fn updates_must_follow_one_another() {
        let mut books = Rebuilder::default();
        let symbol = Symbol::new("X").unwrap();
        books
            .apply(&Message::Directory { locate: 0, symbol })
            .unwrap();
        books.apply(&level(1, 10, 5, false)).unwrap();
        books.apply(&level(1, 11, 5, true)).unwrap();
        books.apply(&level(2, 10, 0, true)).unwrap();
        assert_eq!(
            books.apply(&level(4, 12, 1, true)),
            Err(RebuildError::BookGap {
                locate: 0,
                current: 2,
                got: 4
            })
        );
        let x = books.by_symbol("X").unwrap();
        assert_eq!(x.book.view(9).bids, vec![(11, 5)]);
        books
            .apply(&Message::Clear {
                locate: 0,
                book_seq: 9,
                ts: 0,
                last: false,
            })
            .unwrap();
        books.apply(&level(9, 12, 1, true)).unwrap();
        assert_eq!(
            books.by_symbol("X").unwrap().book.view(9).bids,
            vec![(12, 1)]
        );
        assert!(books.render(5).contains("X  book seq 9"));
    }

    #[test]
    fn the_latest_reference_is_kept_and_zero_is_none() {
        let mut books = Rebuilder::default();
        let reference = |price| crate::wire::reference_message(0, 0, price);
        books.apply(&reference(Some(9_010_000_000))).unwrap();
        assert_eq!(
            books.instrument(0).unwrap().reference_price,
            Some(9_010_000_000)
        );
        assert!(books.render(1).contains("reference 90.1 "));
        books.apply(&reference(None)).unwrap();
        assert_eq!(books.instrument(0).unwrap().reference_price, None);
    }

    #[test]
    fn phases_and_indicative_prices_are_kept_until_the_call_ends() {
        let mut books = Rebuilder::default();
        let phase = |phase| Message::Phase {
            locate: 0,
            ts: 0,
            phase,
        };
        let indicative = |price| Message::Indicative {
            locate: 0,
            ts: 0,
            price,
            volume: 4,
            imbalance_side: Some(Side::Sell),
            imbalance_qty: 1,
        };
        books.apply(&phase(exchange_types::Phase::PreOpen)).unwrap();
        books.apply(&indicative(7)).unwrap();
        let inst = books.instrument(0).unwrap();
        assert_eq!(inst.phase, Some(exchange_types::Phase::PreOpen));
        assert_eq!(inst.indicative.map(|i| (i.price, i.volume)), Some((7, 4)));
        assert!(books.render(1).contains("pre_open  indicative"));
        books.apply(&indicative(0)).unwrap();
        assert_eq!(books.instrument(0).unwrap().indicative, None);
        books.apply(&indicative(8)).unwrap();
        books
            .apply(&phase(exchange_types::Phase::Continuous))
            .unwrap();
        assert_eq!(books.instrument(0).unwrap().indicative, None);
    }
}
