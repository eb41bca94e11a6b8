//! What a market data subscriber holds: levels as `book` events left
//! them, to compare with the reference model's book.

use exchange_types::{Event, EventKind, Side, Symbol};

/// Levels as `book` events left them, by (symbol, side, price): what a
/// market data subscriber holds.
pub type Published = std::collections::BTreeMap<(Symbol, u8, u64), u64>;

pub fn publish(published: &mut Published, events: &[Event]) {
    for event in events {
        if let EventKind::Book(b) = &event.kind {
            let key = (b.symbol, u8::from(b.side == Side::Sell), b.price);
            if b.qty == 0 {
                published.remove(&key);
            } else {
                published.insert(key, b.qty);
            }
        }
    }
}

/// The book of `symbol` as the `book` events published it.
pub fn published_book(published: &Published, symbol: Symbol) -> exchange_core::BookView {
    let side = |code: u8| -> Vec<(u64, u64)> {
        let levels = published
            .iter()
            .filter(|((s, c, _), _)| *s == symbol && *c == code)
            .map(|((_, _, price), qty)| (*price, *qty));
        match code {
            0 => levels.rev().collect(),
            _ => levels.collect(),
        }
    };
    exchange_core::BookView {
        bids: side(0),
        asks: side(1),
    }
}
