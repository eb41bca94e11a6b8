//! `lobster` 0.7 as a peer.
//!
//! Lobster has limit (resting), market and cancel orders only, so: an IOC
//! or FOK limit is a limit order followed by a cancel of whatever rested
//! (FOK therefore behaves as IOC), and a replace is a cancel followed by a
//! new limit order under the same id, which always loses queue priority.

use lobster::{OrderBook, OrderEvent, OrderType};

use super::{PeerOp, PeerSummary};
use crate::bench::timing::Subject;
use exchange_types::{Side, TimeInForce};

pub struct Lobster {
    books: Vec<OrderBook>,
    /// The result of the last operation, dropped outside the timed window.
    last: Option<OrderEvent>,
    summary: PeerSummary,
}

impl Lobster {
    pub fn new() -> Self {
        Lobster {
            books: Vec::new(),
            last: None,
            summary: PeerSummary::default(),
        }
    }

    fn book(&mut self, index: u16) -> &mut OrderBook {
        let index = usize::from(index);
        while self.books.len() <= index {
            self.books.push(OrderBook::default());
        }
        &mut self.books[index]
    }

    /// Best bid and ask of the first book, for the cross-check.
    pub fn finish(&mut self) -> PeerSummary {
        if let Some(book) = self.books.first() {
            self.summary.best_bid = book.max_bid();
            self.summary.best_ask = book.min_ask();
        }
        self.summary.clone()
    }
}

fn side(side: Side) -> lobster::Side {
    match side {
        Side::Buy => lobster::Side::Bid,
        Side::Sell => lobster::Side::Ask,
    }
}

fn rested(event: &OrderEvent) -> bool {
    matches!(
        event,
        OrderEvent::Placed { .. } | OrderEvent::PartiallyFilled { .. }
    )
}

impl Subject for Lobster {
    type Op = PeerOp;

    fn apply(&mut self, op: &PeerOp) {
        self.last = match op {
            PeerOp::Noop => None,
            PeerOp::Limit {
                book,
                id,
                side: s,
                price,
                qty,
                tif,
            } => {
                let id = u128::from(*id);
                let book = self.book(*book);
                let event = book.execute(OrderType::Limit {
                    id,
                    side: side(*s),
                    qty: *qty,
                    price: *price,
                });
                if *tif != TimeInForce::Gtc && rested(&event) {
                    book.execute(OrderType::Cancel { id });
                }
                Some(event)
            }
            PeerOp::Market {
                book,
                id,
                side: s,
                qty,
            } => {
                let order = OrderType::Market {
                    id: u128::from(*id),
                    side: side(*s),
                    qty: *qty,
                };
                Some(self.book(*book).execute(order))
            }
            PeerOp::Cancel { book, id } => Some(self.book(*book).execute(OrderType::Cancel {
                id: u128::from(*id),
            })),
            PeerOp::Replace {
                book,
                id,
                side: s,
                price,
                leaves,
                ..
            } => {
                let id = u128::from(*id);
                let book = self.book(*book);
                book.execute(OrderType::Cancel { id });
                Some(book.execute(OrderType::Limit {
                    id,
                    side: side(*s),
                    qty: *leaves,
                    price: *price,
                }))
            }
            PeerOp::MassCancel { orders } => {
                for (book, id) in orders.iter() {
                    self.book(*book).execute(OrderType::Cancel {
                        id: u128::from(*id),
                    });
                }
                None
            }
        };
    }

    fn after(&mut self) {
        if let Some(OrderEvent::Filled { .. } | OrderEvent::PartiallyFilled { .. }) =
            self.last.take()
        {
            self.summary.traded_ops += 1;
        }
    }
}
