//! `orderbook-rs` 0.15 as a peer.
//!
//! It has native IOC and FOK, cancel, and modify: a quantity-only decrease
//! keeps queue priority (`UpdateQuantity`), a price change re-enters at the
//! back (`UpdatePriceAndQuantity`), the same rules as the core. The book
//! is built with its deterministic `StubClock` (the core reads no clock
//! either) and a trade listener that only counts, standing in for the
//! events the core emits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use orderbook_rs::{Id, OrderBook, OrderBookError, StubClock, TradeResult};
use pricelevel::{OrderUpdate, Price, Quantity};

use super::{PeerOp, PeerSummary};
use crate::bench::timing::Subject;
use exchange_types::{Side, TimeInForce};

pub struct OrderbookRs {
    books: Vec<OrderBook<()>>,
    trades: Arc<AtomicU64>,
    /// How the last operation went; counted outside the timed window.
    outcome: Outcome,
    summary: PeerSummary,
}

impl OrderbookRs {
    pub fn new() -> Self {
        OrderbookRs {
            books: Vec::new(),
            trades: Arc::new(AtomicU64::new(0)),
            outcome: Outcome::Done,
            summary: PeerSummary::default(),
        }
    }

    fn book(&mut self, index: u16) -> &OrderBook<()> {
        let index = usize::from(index);
        while self.books.len() <= index {
            let mut book = OrderBook::with_clock("BOOK", Arc::new(StubClock::new()));
            let trades = Arc::clone(&self.trades);
            book.set_trade_listener(Arc::new(move |_: &TradeResult| {
                trades.fetch_add(1, Ordering::Relaxed);
            }));
            self.books.push(book);
        }
        &self.books[index]
    }

    pub fn finish(&mut self) -> PeerSummary {
        self.summary.traded_ops = self.trades.load(Ordering::Relaxed);
        if let Some(book) = self.books.first() {
            self.summary.best_bid = book.best_bid().and_then(|p| u64::try_from(p).ok());
            self.summary.best_ask = book.best_ask().and_then(|p| u64::try_from(p).ok());
        }
        self.summary.clone()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Done,
    Missing,
    Error,
}

fn outcome<T>(result: Result<Option<T>, OrderBookError>) -> Outcome {
    match result {
        Ok(Some(_)) => Outcome::Done,
        Ok(None) => Outcome::Missing,
        // How it reports an IOC or market order that filled only in part
        // (or not at all); the fills stand, as in the core.
        Err(OrderBookError::InsufficientLiquidity { .. }) => Outcome::Done,
        Err(_) => Outcome::Error,
    }
}

fn side(side: Side) -> orderbook_rs::Side {
    match side {
        Side::Buy => orderbook_rs::Side::Buy,
        Side::Sell => orderbook_rs::Side::Sell,
    }
}

fn tif(tif: TimeInForce) -> orderbook_rs::TimeInForce {
    match tif {
        TimeInForce::Gtc => orderbook_rs::TimeInForce::Gtc,
        TimeInForce::Ioc => orderbook_rs::TimeInForce::Ioc,
        TimeInForce::Fok => orderbook_rs::TimeInForce::Fok,
        // The peer runs only the standard workload, which rests nothing
        // with a session-bound time in force.
        TimeInForce::Day | TimeInForce::Gtd | TimeInForce::AtOpen | TimeInForce::AtClose => {
            orderbook_rs::TimeInForce::Gtc
        }
    }
}

impl Subject for OrderbookRs {
    type Op = PeerOp;

    fn apply(&mut self, op: &PeerOp) {
        self.outcome = match op {
            PeerOp::Noop => Outcome::Done,
            PeerOp::Limit {
                book,
                id,
                side: s,
                price,
                qty,
                tif: t,
            } => {
                let id = Id::Sequential(*id);
                let price = u128::from(*price);
                outcome(
                    self.book(*book)
                        .add_limit_order(id, price, *qty, side(*s), tif(*t), None)
                        .map(Some),
                )
            }
            PeerOp::Market {
                book,
                id,
                side: s,
                qty,
            } => outcome(
                self.book(*book)
                    .submit_market_order(Id::Sequential(*id), *qty, side(*s))
                    .map(Some),
            ),
            PeerOp::Cancel { book, id } => {
                outcome(self.book(*book).cancel_order(Id::Sequential(*id)))
            }
            PeerOp::Replace {
                book,
                id,
                price,
                leaves,
                keeps_priority,
                ..
            } => {
                let order_id = Id::Sequential(*id);
                let update = if *keeps_priority {
                    OrderUpdate::UpdateQuantity {
                        order_id,
                        new_quantity: Quantity::new(*leaves),
                    }
                } else {
                    OrderUpdate::UpdatePriceAndQuantity {
                        order_id,
                        new_price: Price::new(u128::from(*price)),
                        new_quantity: Quantity::new(*leaves),
                    }
                };
                outcome(self.book(*book).update_order(update))
            }
            PeerOp::MassCancel { orders } => {
                let mut worst = Outcome::Done;
                for (book, id) in orders.iter() {
                    let one = outcome(self.book(*book).cancel_order(Id::Sequential(*id)));
                    if one != Outcome::Done {
                        worst = one;
                    }
                }
                worst
            }
        };
    }

    fn after(&mut self) {
        match std::mem::replace(&mut self.outcome, Outcome::Done) {
            Outcome::Done => {}
            Outcome::Missing => self.summary.missing += 1,
            Outcome::Error => self.summary.errors += 1,
        }
    }
}
