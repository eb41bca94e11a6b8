//! What the generator and the peer translation need to know about the
//! core's state, rebuilt from the events alone: open orders (to pick
//! cancel and replace targets), each book's levels (to price new orders
//! and steer the depth) and the last trade price.
//!
//! Reading events instead of peeking into the engine keeps the bench on the
//! core's public contract, and means any command stream — generated or
//! read from a file — can be followed the same way.

use std::collections::BTreeMap;

use exchange_types::{
    order_updates, Change, Event, EventKind, OrderId, OrderState, OrderType, OrderUpdate, Side,
    Symbol,
};
use rustc_hash::FxHashMap;

use super::rng::SplitMix64;

/// An order the core has accepted and not yet closed. Values in units
/// (1e-8), as events carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOrder {
    pub book: u16,
    pub state: OrderState,
}

impl OpenOrder {
    pub fn account(&self) -> u64 {
        self.state.account
    }

    pub fn side(&self) -> Side {
        self.state.side
    }

    /// The limit price; 0 for a market order.
    pub fn price(&self) -> u64 {
        match self.state.order_type {
            OrderType::Limit
            | OrderType::StopLimit
            | OrderType::MarketToLimit
            | OrderType::LimitIfTouched
            | OrderType::Midpoint => self.state.progress.price.unwrap_or(0),
            OrderType::Market | OrderType::Stop | OrderType::MarketIfTouched => 0,
        }
    }

    /// Total quantity, filled included.
    pub fn qty(&self) -> u64 {
        self.state.progress.qty
    }

    pub fn filled(&self) -> u64 {
        self.state.progress.filled_qty
    }
}

/// One book's price levels: price to aggregate open quantity (from the
/// core's book events), and price to the open orders there.
#[derive(Clone, Debug, Default)]
pub struct Levels {
    pub bids: BTreeMap<u64, u64>,
    pub asks: BTreeMap<u64, u64>,
    pub last_trade: Option<u64>,
    bid_orders: BTreeMap<u64, Vec<OrderId>>,
    ask_orders: BTreeMap<u64, Vec<OrderId>>,
}

impl Levels {
    pub fn best_bid(&self) -> Option<u64> {
        self.bids.last_key_value().map(|(p, _)| *p)
    }

    pub fn best_ask(&self) -> Option<u64> {
        self.asks.first_key_value().map(|(p, _)| *p)
    }

    pub fn side(&self, side: Side) -> &BTreeMap<u64, u64> {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    /// An open order drawn from the `top` best levels of `side`: a level
    /// uniformly, then an order of it uniformly.
    pub fn near_top(&self, side: Side, top: usize, rng: &mut SplitMix64) -> Option<OrderId> {
        let map = self.orders_at(side);
        let n = map.len().min(top);
        if n == 0 {
            return None;
        }
        let index = rng.below(n as u64) as usize;
        let ids = match side {
            Side::Buy => map.values().rev().nth(index),
            Side::Sell => map.values().nth(index),
        }?;
        ids.get(rng.below(ids.len() as u64) as usize).copied()
    }

    fn orders_at(&self, side: Side) -> &BTreeMap<u64, Vec<OrderId>> {
        match side {
            Side::Buy => &self.bid_orders,
            Side::Sell => &self.ask_orders,
        }
    }

    fn orders_at_mut(&mut self, side: Side) -> &mut BTreeMap<u64, Vec<OrderId>> {
        match side {
            Side::Buy => &mut self.bid_orders,
            Side::Sell => &mut self.ask_orders,
        }
    }

    fn add_order(&mut self, side: Side, price: u64, id: OrderId) {
        self.orders_at_mut(side).entry(price).or_default().push(id);
    }

    fn remove_order(&mut self, side: Side, price: u64, id: OrderId) {
        let map = self.orders_at_mut(side);
        if let Some(ids) = map.get_mut(&price) {
            ids.retain(|&other| other != id);
            if ids.is_empty() {
                map.remove(&price);
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Tracker {
    symbols: Vec<Symbol>,
    books: Vec<Levels>,
    /// Open order ids in a vector so one can be drawn uniformly; the map
    /// holds each order and its position there. The map is only probed,
    /// never iterated, so the draw is deterministic.
    ids: Vec<OrderId>,
    orders: FxHashMap<OrderId, (usize, OpenOrder)>,
}

impl Tracker {
    pub fn book_index(&self, symbol: &Symbol) -> Option<u16> {
        self.symbols
            .iter()
            .position(|s| s == symbol)
            .map(|i| i as u16)
    }

    pub fn levels(&self, book: u16) -> Option<&Levels> {
        self.books.get(usize::from(book))
    }

    pub fn order(&self, id: OrderId) -> Option<&OpenOrder> {
        self.orders.get(&id).map(|(_, order)| order)
    }

    pub fn open_count(&self) -> usize {
        self.ids.len()
    }

    /// A uniformly drawn open order.
    pub fn random_order(&self, rng: &mut SplitMix64) -> Option<(OrderId, OpenOrder)> {
        if self.ids.is_empty() {
            return None;
        }
        let id = self.ids[rng.below(self.ids.len() as u64) as usize];
        self.order(id).map(|order| (id, *order))
    }

    /// Follows one command's events.
    pub fn observe(&mut self, events: &[Event]) {
        for event in events {
            self.observe_one(&event.kind);
        }
    }

    fn observe_one(&mut self, kind: &EventKind) {
        match kind {
            EventKind::InstrumentAdded(e) if self.book_index(&e.symbol).is_none() => {
                self.symbols.push(e.symbol);
                self.books.push(Levels::default());
            }
            EventKind::Trade(trade) => {
                if let Some(book) = self.book_index(&trade.symbol) {
                    self.books[usize::from(book)].last_trade = Some(trade.price);
                }
            }
            EventKind::Book(e) => {
                let Some(book) = self.book_index(&e.symbol) else {
                    return;
                };
                let levels = &mut self.books[usize::from(book)];
                let map = match e.side {
                    Side::Buy => &mut levels.bids,
                    Side::Sell => &mut levels.asks,
                };
                if e.qty == 0 {
                    map.remove(&e.price);
                } else {
                    map.insert(e.price, e.qty);
                }
            }
            _ => {}
        }
        for update in order_updates(kind) {
            self.follow(&update);
        }
    }

    /// One change to one order, as the order fold reads it.
    fn follow(&mut self, update: &OrderUpdate<'_>) {
        let id = update.order_id;
        if let Change::New(accepted) = update.change {
            let Some(book) = self.book_index(&accepted.symbol) else {
                return;
            };
            let order = OpenOrder {
                book,
                state: OrderState::new(accepted),
            };
            self.books[usize::from(book)].add_order(order.side(), order.price(), id);
            self.orders.insert(id, (self.ids.len(), order));
            self.ids.push(id);
            return;
        }
        if update.closes() {
            self.remove(id);
            return;
        }
        let Some((_, order)) = self.orders.get_mut(&id) else {
            return;
        };
        let old_price = order.price();
        order.state.apply(&update.change);
        let (book, side, price) = (order.book, order.side(), order.price());
        if price != old_price {
            let levels = &mut self.books[usize::from(book)];
            levels.remove_order(side, old_price, id);
            levels.add_order(side, price, id);
        }
    }

    fn remove(&mut self, id: OrderId) {
        let Some((position, order)) = self.orders.remove(&id) else {
            return;
        };
        self.books[usize::from(order.book)].remove_order(order.side(), order.price(), id);
        self.ids.swap_remove(position);
        if let Some(&moved) = self.ids.get(position) {
            if let Some((slot, _)) = self.orders.get_mut(&moved) {
                *slot = position;
            }
        }
    }
}
