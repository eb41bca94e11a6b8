//! Orders and the pool that holds them.
//!
//! Orders live in one slab addressed by `u32` slots; the price-level queues
//! and the per-account lists are intrusive doubly linked lists through those
//! slots, so adding, cancelling and filling an order never allocates once
//! the slab has grown to the working set. Slot numbers are internal: they
//! never appear in events, snapshots or the state hash.
//!
//! A level's queue links are kept apart from the orders, in an array of
//! their own beside the slab ([`Link`]): taking an order off its level, or
//! queueing one behind a level's tail, writes its neighbours' links, and a
//! neighbour is an order the command has no other business with. Eight
//! bytes a slot, the links of every open order stay in the nearer caches,
//! where the neighbours' whole records (112 bytes each) did not: a move's
//! three such writes were the order path's costliest loads. The account
//! lists keep their links in the orders: an order joins or leaves one only
//! when it opens or closes, and kept apart they measured no faster.

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
    /// A hidden order: it rests on its book's hidden side, never shown.
    pub is_hidden: bool,
    /// A midpoint order: it rests in its instrument's midpoint book, on no
    /// level, and its `price` is its limit or, unlimited, its bound.
    pub is_midpoint: bool,
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
    pub account_prev: u32,
    pub account_next: u32,
}

// The pool's slab is orders side by side, 112 bytes each with the queue
// links kept apart; a field that grows it must say why.
const _: () = assert!(std::mem::size_of::<Order>() <= 112);

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

/// An order's neighbours on its level's queue, [`NIL`] at either end and
/// for an order on no level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub prev: u32,
    pub next: u32,
}

impl Link {
    pub const NONE: Link = Link {
        prev: NIL,
        next: NIL,
    };
}

/// The slab. It is reserved for the open orders the engine may ever hold
/// ([`OrderPool::with_room`]) rather than grown, since growing copies
/// every open order inside the command that outgrew it.
///
/// A reservation is address space, not memory: the allocator maps it
/// without touching it, and a page is faulted in (and counts towards the
/// resident set) when the first order is written to it. Vacated slots are
/// reused last out first, so the orders stay packed at the front and the
/// pages in use follow the most orders ever open at once. (Where
/// transparent huge pages are `always` on, a fault fills 2 MiB, a pause of
/// its own; BENCHMARKS.md says how the server runs there.)
#[derive(Debug, Default)]
pub(crate) struct OrderPool {
    slots: Vec<Option<Order>>,
    /// Each slot's queue links, reserved and grown with `slots`.
    links: Vec<Link>,
    /// Vacated slots, reused last out first. Its capacity is kept at the
    /// slab's, so that pushing onto it never reallocates.
    free: Vec<u32>,
    live: usize,
}

/// A copy keeps the slab's and the free list's whole capacity, so it
/// grows no sooner than the original (`Vec::clone` would trim both).
impl Clone for OrderPool {
    fn clone(&self) -> Self {
        let mut slots = Vec::with_capacity(self.slots.capacity());
        slots.extend(self.slots.iter().cloned());
        let mut links = Vec::with_capacity(self.links.capacity());
        links.extend_from_slice(&self.links);
        let mut free = Vec::with_capacity(self.free.capacity());
        free.extend_from_slice(&self.free);
        OrderPool {
            slots,
            links,
            free,
            live: self.live,
        }
    }
}

impl OrderPool {
    /// A pool with room for `room` orders before it first grows. The
    /// memory is reserved, not written: pages are touched as orders use
    /// them.
    ///
    /// On a host that does not overcommit memory (`vm.overcommit_memory`
    /// = 2) the whole reservation is charged to the process, for the
    /// engine and for each copy of it.
    pub fn with_room(room: usize) -> Self {
        OrderPool {
            slots: Vec::with_capacity(room),
            links: Vec::with_capacity(room),
            free: Vec::with_capacity(room),
            live: 0,
        }
    }

    #[inline]
    pub fn insert(&mut self, order: Order) -> u32 {
        self.live += 1;
        if let Some(slot) = self.free.pop() {
            self.slots[slot as usize] = Some(order);
            self.links[slot as usize] = Link::NONE;
            slot
        } else {
            if self.slots.len() == self.slots.capacity() {
                self.grow();
            }
            self.slots.push(Some(order));
            self.links.push(Link::NONE);
            (self.slots.len() - 1) as u32
        }
    }

    /// Doubles the slab, and gives the free list as much room: the free
    /// list is empty whenever the slab grows, so it is replaced, not
    /// copied. A pool reserved for every order the engine admits never
    /// gets here; a pool sized smaller (tests) pays a copy.
    #[cold]
    fn grow(&mut self) {
        self.slots.reserve(self.slots.capacity().max(1));
        self.links.reserve(self.slots.capacity() - self.links.len());
        debug_assert!(self.free.is_empty());
        self.free = Vec::with_capacity(self.slots.capacity());
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

    /// Asks the CPU to start loading a slot's order and its links: a
    /// hint, which reads nothing into the program and cannot fault, so it
    /// changes no state.
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        #[cfg(target_arch = "x86_64")]
        if let (Some(order), Some(link)) =
            (self.slots.get(slot as usize), self.links.get(slot as usize))
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let start = std::ptr::from_ref(order).cast::<i8>();
            let last = std::mem::size_of::<Option<Order>>() - 1;
            // SAFETY: a prefetch of any address is defined (it never faults
            // and loads nothing the program sees); these are the slot's own
            // lines: an order spans two or three of them, its links one.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(start);
                _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(64));
                _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(last));
                _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(link).cast::<i8>());
            }
        }
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

    /// The order in `slot` and its queue links, for a caller that moves
    /// the order on its level.
    #[inline]
    pub fn get_with_link(&mut self, slot: u32) -> (&mut Order, &mut Link) {
        let order = self.slots[slot as usize]
            .as_mut()
            .expect("order slot must be occupied");
        (order, &mut self.links[slot as usize])
    }

    /// A slot's queue links. A vacated slot's are stale: only a slot
    /// reached through a level (or its neighbours) is asked.
    #[inline]
    pub fn link(&self, slot: u32) -> Link {
        self.links[slot as usize]
    }

    #[inline]
    pub fn link_mut(&mut self, slot: u32) -> &mut Link {
        &mut self.links[slot as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: OrderId) -> Order {
        Order {
            id,
            account: 0,
            instrument: 0,
            side: Side::Buy,
            tif: TimeInForce::Gtc,
            stp: SelfTradePrevention::CancelNewest,
            post_only: false,
            is_market: false,
            is_hidden: false,
            is_midpoint: false,
            price: 1,
            qty: 1,
            filled: 0,
            reserved: 0,
            hidden: 0,
            client_order_id: ClientOrderId::new("c").expect("a valid id"),
            indexed: false,
            stop: false,
            oco: false,
            account_prev: NIL,
            account_next: NIL,
        }
    }

    #[test]
    fn slots_past_the_room_are_found_freed_and_reused() {
        let mut pool = OrderPool::with_room(4);
        let total = 37u64;
        let slots: Vec<u32> = (0..total).map(|id| pool.insert(order(id))).collect();
        assert_eq!(slots, (0..total as u32).collect::<Vec<_>>());
        for &slot in &slots {
            assert_eq!(pool.get(slot).id, u64::from(slot));
        }
        assert!(pool.free.capacity() >= pool.slots.capacity());
        assert!(pool.links.capacity() >= pool.slots.capacity());
        assert_eq!(pool.remove(5).id, 5);
        assert_eq!(pool.len(), total as usize - 1);
        *pool.link_mut(5) = Link { prev: 4, next: 6 };
        assert_eq!(pool.insert(order(99)), 5);
        assert_eq!(pool.link(5), Link::NONE, "a reused slot is on no level");
        assert_eq!(pool.get(5).id, 99);
        pool.get_mut(3).price = 7;
        assert_eq!(pool.get(3).price, 7);
        let mut unreserved = OrderPool::default();
        assert_eq!(unreserved.insert(order(1)), 0);
        assert_eq!(unreserved.get(0).id, 1);
    }

    #[test]
    fn a_copy_keeps_room_to_grow_without_reallocating() {
        let mut pool = OrderPool::with_room(64);
        for id in 0..10 {
            pool.insert(order(id));
        }
        pool.remove(4);
        let copy = pool.clone();
        assert_eq!(copy.len(), 9);
        assert_eq!(copy.get(9).id, 9);
        assert_eq!(copy.slots.capacity(), pool.slots.capacity());
        assert_eq!(copy.free.capacity(), pool.free.capacity());
        assert_eq!(copy.links.capacity(), pool.links.capacity());
        assert!(copy.slots.capacity() >= 64);
    }

    #[test]
    fn the_engines_pool_never_grows_for_an_admitted_order() {
        let engine = crate::engine::Engine::new();
        let wanted = exchange_types::limits::MAX_OPEN_ORDERS + 1;
        for pool in [&engine.orders, &engine.clone().orders] {
            assert!(pool.slots.capacity() >= wanted);
            assert!(pool.links.capacity() >= wanted);
            assert!(pool.free.capacity() >= wanted);
        }
    }
}
