//! Orders and the pool that holds them.
//!
//! Orders live in one slab addressed by `u32` slots; the price-level queues
//! and the per-account lists are intrusive doubly linked lists through those
//! slots, so adding, cancelling and filling an order never allocates once
//! the slab has grown to the working set. Slot numbers are internal: they
//! never appear in events, snapshots or the state hash.

use exchange_types::{ClientOrderId, OrderId, SelfTradePrevention, Side, TimeInForce};

/// The null link.
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    pub id: OrderId,
    pub account: u32,
    pub instrument: u32,
    pub side: Side,
    pub tif: TimeInForce,
    pub stp: SelfTradePrevention,
    pub post_only: bool,
    pub is_market: bool,
    /// Limit price in ticks; for a market order, the collar bound.
    pub price: u64,
    /// Total quantity in lots, filled included (reduced by self-trade
    /// decrements).
    pub qty: u64,
    pub filled: u64,
    /// What this order holds of its account's balance: quote units for a
    /// buy, base units for a sell.
    pub reserved: u64,
    /// An iceberg's open lots not shown on the book; zero for every other
    /// order, and for any order while it takes liquidity.
    pub hidden: u64,
    pub client_order_id: ClientOrderId,
    /// True once the order is findable by id and client id (it rests).
    pub indexed: bool,
    /// An untriggered stop: open, but held in the stop table, not a book.
    pub stop: bool,
    /// One of a one-cancels-other pair (the partner is in the stop table's
    /// pair map); a flag here so a fill looks no further unless set.
    pub oco: bool,
    pub prev: u32,
    pub next: u32,
    pub account_prev: u32,
    pub account_next: u32,
}

impl Order {
    pub fn leaves(&self) -> u64 {
        self.qty - self.filled
    }

    /// Open lots shown on the book: what the level's aggregate counts.
    #[inline]
    pub fn displayed(&self) -> u64 {
        self.leaves() - self.hidden
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct OrderPool {
    slots: Vec<Option<Order>>,
    free: Vec<u32>,
    live: usize,
}

impl OrderPool {
    pub fn insert(&mut self, order: Order) -> u32 {
        self.live += 1;
        if let Some(slot) = self.free.pop() {
            self.slots[slot as usize] = Some(order);
            slot
        } else {
            self.slots.push(Some(order));
            (self.slots.len() - 1) as u32
        }
    }

    pub fn remove(&mut self, slot: u32) -> Order {
        let order = self.slots[slot as usize].take();
        self.free.push(slot);
        self.live -= 1;
        // Slots come only from the engine's own indices; a missing one is a
        // broken invariant, not bad input.
        order.expect("order slot must be occupied")
    }

    pub fn len(&self) -> usize {
        self.live
    }

    #[inline]
    pub fn get(&self, slot: u32) -> &Order {
        self.slots[slot as usize]
            .as_ref()
            .expect("order slot must be occupied")
    }

    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> &mut Order {
        self.slots[slot as usize]
            .as_mut()
            .expect("order slot must be occupied")
    }
}
