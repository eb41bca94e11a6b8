//! Peer order books from crates.io, fed the same command stream as the
//! core so their figures can stand beside ours.
//!
//! A peer is a bare matching book: no accounts, balances, fees, risk
//! checks, self-trade prevention or events. Each command is translated
//! (before the clock starts) into the order operation the core actually
//! performed, read from the core's events on a scratch run: a rejected
//! command becomes a no-op, a replace carries the order's remaining
//! quantity and whether it kept its queue position. Order ids are the
//! core's, so the peer's book follows ours step for step as long as the
//! two match orders the same way.

#[cfg(feature = "peer-books")]
pub mod lobster;
#[cfg(feature = "peer-books")]
pub mod orderbook_rs;

use exchange_types::{Command, Event, EventKind, OrderType, Side, Stamped, TimeInForce};

use super::tracker::Tracker;

/// One order-book operation, in the core's order ids and in units (1e-8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerOp {
    /// A command with no order-book effect (deposit, listing, reject).
    Noop,
    Limit {
        book: u16,
        id: u64,
        side: Side,
        price: u64,
        qty: u64,
        tif: TimeInForce,
    },
    Market {
        book: u16,
        id: u64,
        side: Side,
        qty: u64,
    },
    Cancel {
        book: u16,
        id: u64,
    },
    /// Re-price and/or re-size: `leaves` is the new open quantity.
    /// `keeps_priority` is true when the core kept the order's place in its
    /// queue (same price, smaller quantity).
    Replace {
        book: u16,
        id: u64,
        side: Side,
        price: u64,
        leaves: u64,
        keeps_priority: bool,
    },
    MassCancel {
        orders: Box<[(u16, u64)]>,
    },
}

/// The peer operation equivalent to what `stamped` did to the core, given
/// the events it caused and the tracker's state from before them.
pub fn translate(stamped: &Stamped, events: &[Event], tracker: &Tracker) -> PeerOp {
    match &stamped.command {
        Command::Place(_) => events
            .iter()
            .find_map(|e| accepted(e, tracker))
            .unwrap_or(PeerOp::Noop),
        Command::Cancel(_) => events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Canceled(canceled) => Some(PeerOp::Cancel {
                    book: tracker.order(canceled.order_id)?.book,
                    id: canceled.order_id,
                }),
                _ => None,
            })
            .unwrap_or(PeerOp::Noop),
        Command::Replace(_) | Command::ReplaceStop(_) => events
            .iter()
            .find_map(|e| replaced(e, tracker))
            .unwrap_or(PeerOp::Noop),
        // A suspension cancels like a mass cancel of every instrument.
        Command::MassCancel(_) | Command::Suspend { .. } => {
            let orders: Box<[(u16, u64)]> = events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Canceled(canceled) => tracker
                        .order(canceled.order_id)
                        .map(|o| (o.book, canceled.order_id)),
                    _ => None,
                })
                .collect();
            if orders.is_empty() {
                PeerOp::Noop
            } else {
                PeerOp::MassCancel { orders }
            }
        }
        Command::AddInstrument(_)
        | Command::Deposit(_)
        | Command::Withdraw(_)
        | Command::Halt { .. }
        | Command::Resume { .. }
        | Command::SetRiskLimits(_)
        | Command::Reinstate { .. }
        | Command::SetMmp(_)
        | Command::ResetMmp { .. }
        | Command::LinkSubAccount { .. }
        | Command::InternalTransfer(_)
        | Command::SetPhase { .. }
        | Command::SetInstrumentRules(_)
        | Command::Delist { .. }
        | Command::SetReferencePrice { .. }
        | Command::Tick => PeerOp::Noop,
    }
}

fn accepted(event: &Event, tracker: &Tracker) -> Option<PeerOp> {
    let EventKind::Accepted(accepted) = &event.kind else {
        return None;
    };
    let book = tracker.book_index(&accepted.symbol)?;
    let (id, side, qty) = (accepted.order_id, accepted.side, accepted.qty);
    Some(match (accepted.order_type, accepted.price) {
        (OrderType::Limit, Some(price)) => PeerOp::Limit {
            book,
            id,
            side,
            price,
            qty,
            tif: accepted.tif,
        },
        _ => PeerOp::Market {
            book,
            id,
            side,
            qty,
        },
    })
}

fn replaced(event: &Event, tracker: &Tracker) -> Option<PeerOp> {
    let EventKind::Replaced(replaced) = &event.kind else {
        return None;
    };
    let (id, price) = (replaced.order_id, replaced.price);
    let before = tracker.order(id)?;
    if replaced.leaves_qty == 0 {
        return Some(PeerOp::Cancel {
            book: before.book,
            id,
        });
    }
    Some(PeerOp::Replace {
        book: before.book,
        id,
        side: before.side(),
        price,
        leaves: replaced.leaves_qty,
        keeps_priority: price == before.price() && replaced.qty <= before.qty(),
    })
}

/// Which peers a run includes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PeerChoice {
    /// Every peer below.
    All,
    /// `lobster` 0.7: single-threaded, BTreeMap of price levels.
    Lobster,
    /// `orderbook-rs` 0.15: lock-free concurrent book.
    OrderbookRs,
    /// No peer: only the core.
    None,
}

#[cfg(feature = "peer-books")]
impl PeerChoice {
    pub fn includes_lobster(self) -> bool {
        matches!(self, PeerChoice::All | PeerChoice::Lobster)
    }

    pub fn includes_orderbook_rs(self) -> bool {
        matches!(self, PeerChoice::All | PeerChoice::OrderbookRs)
    }
}

/// What a peer's run reports besides its timings, so that a reader can see
/// whether its book really followed ours.
#[derive(Clone, Debug, Default)]
pub struct PeerSummary {
    /// Operations that produced at least one fill.
    pub traded_ops: u64,
    /// Operations the peer refused (an error result).
    pub errors: u64,
    /// Cancels and modifies of an order the peer did not have: a sign that
    /// its book has drifted from ours.
    pub missing: u64,
    pub best_bid: Option<u64>,
    pub best_ask: Option<u64>,
}
