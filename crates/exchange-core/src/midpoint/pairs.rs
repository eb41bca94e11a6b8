//! The book's reach ([`reach`](super::reach)) and its first pair at a
//! midpoint, kept up to date as orders enter, leave and fill.
//!
//! Each buy keeps its *low*: the lowest price, up to its own, of a sell it
//! meets the minimums with, and how many such sells are at that price. The
//! reach is the union of the intervals from each buy's low to its price,
//! counted in a [`Cover`]; the first pair at a midpoint `m` is the first
//! buy, in priority order, whose interval holds `m`, with the first sell
//! in priority order it meets the minimums with at `m`.
//!
//! A sell that enters or changes is compared with every buy, O(B); a buy
//! that enters or changes finds its low among the sells in priority order,
//! where limited sells come by increasing price, so the walk stops at the
//! buy's price or past the first match. A sell that leaves lowers the
//! count of the buys whose low it was, and only a buy left with none walks
//! the sells again. Each side is a vector in its book's priority order,
//! index for index with the book's entries.

use super::cover::Cover;
use super::reach::{minimums_met, Offer};

/// An order as matching sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub offer: Offer,
    /// Ahead of every limited order of its side, whatever its bound.
    pub unlimited: bool,
}

/// The lowest price of the sells a buy meets the minimums with, at or
/// below the buy's price, and how many sells are at that price.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Low {
    price: u64,
    sells: u32,
}

/// A midpoint book's orders as matching sees them, with each buy's low.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pairs {
    buys: Vec<Held>,
    /// Index for index with `buys`.
    lows: Vec<Option<Low>>,
    sells: Vec<Held>,
    /// Each buy's interval from its low to its price.
    cover: Cover,
}

/// Whether the pair can trade at some midpoint: the sell's price is at
/// most the buy's and a trade of the smaller remainder meets both minimums.
fn meets(buy: &Held, sell: &Held) -> bool {
    sell.offer.price <= buy.offer.price && minimums_met(&buy.offer, &sell.offer)
}

impl Pairs {
    /// Puts a buy at `at` in its side's priority order.
    pub fn insert_buy(&mut self, at: usize, buy: Held) {
        let low = self.lowest(&buy);
        if let Some(low) = low {
            self.cover.add(low.price, buy.offer.price);
        }
        self.buys.insert(at, buy);
        self.lows.insert(at, low);
    }

    pub fn remove_buy(&mut self, at: usize) {
        let buy = self.buys.remove(at);
        if let Some(low) = self.lows.remove(at) {
            self.cover.remove(low.price, buy.offer.price);
        }
    }

    /// The buy at `at` now has `offer` (a fill or a reduction: the price
    /// is the same).
    pub fn update_buy(&mut self, at: usize, offer: Offer) {
        debug_assert_eq!(self.buys[at].offer.price, offer.price);
        self.buys[at].offer = offer;
        self.find_low(at);
    }

    /// Puts a sell at `at` in its side's priority order.
    pub fn insert_sell(&mut self, at: usize, sell: Held) {
        self.sells.insert(at, sell);
        for row in 0..self.reaching(sell.offer.price) {
            if meets(&self.buys[row], &sell) {
                self.lower(row, sell.offer.price);
            }
        }
    }

    pub fn remove_sell(&mut self, at: usize) {
        let sell = self.sells.remove(at);
        for row in 0..self.reaching(sell.offer.price) {
            if meets(&self.buys[row], &sell) {
                self.drop_one(row, sell.offer.price);
            }
        }
    }

    /// How many buys from the top may meet a sell at `price`: past the
    /// unlimited ones, limited buys come by decreasing price, and none
    /// priced below the sell meets it.
    fn reaching(&self, price: u64) -> usize {
        self.buys
            .partition_point(|b| b.unlimited || b.offer.price >= price)
    }

    /// The sell at `at` now has `offer` (a fill or a reduction: the price
    /// is the same).
    pub fn update_sell(&mut self, at: usize, offer: Offer) {
        let old = self.sells[at];
        debug_assert_eq!(old.offer.price, offer.price);
        let new = Held { offer, ..old };
        self.sells[at] = new;
        for row in 0..self.reaching(offer.price) {
            let buy = &self.buys[row];
            match (meets(buy, &old), meets(buy, &new)) {
                (false, true) => self.lower(row, offer.price),
                (true, false) => self.drop_one(row, offer.price),
                _ => {}
            }
        }
    }

    /// Whether some pair can trade at `mid`.
    pub fn covers(&self, mid: u64) -> bool {
        self.cover.covers(mid)
    }

    /// The first pair that can trade at `mid`, as indexes into the bids
    /// and the asks: the first buy in priority order that trades with any
    /// sell at `mid`, and the first sell in priority order it trades with.
    pub fn first_pair(&self, mid: u64) -> Option<(usize, usize)> {
        let row = (0..self.buys.len())
            .take_while(|&row| self.buys[row].unlimited || self.buys[row].offer.price >= mid)
            .find(|&row| {
                self.buys[row].offer.price >= mid
                    && self.lows[row].is_some_and(|low| low.price <= mid)
            })?;
        let buy = &self.buys[row];
        let column = self
            .sells
            .iter()
            .take_while(|s| s.unlimited || s.offer.price <= mid)
            .position(|s| s.offer.price <= mid && meets(buy, s))?;
        Some((row, column))
    }

    pub fn buys(&self) -> &[Held] {
        &self.buys
    }

    pub fn sells(&self) -> &[Held] {
        &self.sells
    }

    /// The reach as [`reach::reach`](super::reach::reach) gives it.
    pub fn spans(&self) -> Vec<(u64, u64)> {
        self.cover.spans()
    }

    /// Whether every buy's low is what a walk of the sells finds now.
    pub fn lows_hold(&self) -> bool {
        self.lows.len() == self.buys.len()
            && self
                .buys
                .iter()
                .zip(&self.lows)
                .all(|(buy, low)| self.lowest(buy) == *low)
    }

    /// A sell the buy at `row` meets, at `price`, entered or changed.
    fn lower(&mut self, row: usize, price: u64) {
        match &mut self.lows[row] {
            Some(low) if low.price == price => low.sells += 1,
            Some(low) if low.price < price => {}
            low => {
                let high = self.buys[row].offer.price;
                if let Some(old) = low.replace(Low { price, sells: 1 }) {
                    self.cover.remove(old.price, high);
                }
                self.cover.add(price, high);
            }
        }
    }

    /// A sell the buy at `row` met, at `price`, left or changed.
    fn drop_one(&mut self, row: usize, price: u64) {
        let Some(low) = &mut self.lows[row] else {
            return;
        };
        if low.price != price {
            return;
        }
        low.sells -= 1;
        if low.sells == 0 {
            self.find_low(row);
        }
    }

    /// Finds the low of the buy at `row` again and moves its interval.
    fn find_low(&mut self, row: usize) {
        let high = self.buys[row].offer.price;
        let new = self.lowest(&self.buys[row]);
        let old = std::mem::replace(&mut self.lows[row], new);
        if old.map(|low| low.price) != new.map(|low| low.price) {
            if let Some(old) = old {
                self.cover.remove(old.price, high);
            }
            if let Some(new) = new {
                self.cover.add(new.price, high);
            }
        }
    }

    /// The buy's low among the sells now in the book.
    fn lowest(&self, buy: &Held) -> Option<Low> {
        let mut best: Option<Low> = None;
        for sell in &self.sells {
            let price = sell.offer.price;
            // Limited sells come by increasing price: none further on is
            // at or below the buy's price, or at or below the best found.
            if !sell.unlimited && (price > buy.offer.price || best.is_some_and(|b| price > b.price))
            {
                break;
            }
            if !meets(buy, sell) {
                continue;
            }
            match &mut best {
                Some(b) if b.price == price => b.sells += 1,
                Some(b) if b.price < price => {}
                b => *b = Some(Low { price, sells: 1 }),
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::super::reach::reach;
    use super::*;
    use proptest::prelude::*;

    /// An order of the model: what `Pairs` holds, and its minimum and
    /// time to rebuild its offer and to rank it.
    #[derive(Clone, Copy, Debug)]
    struct Order {
        held: Held,
        min: Option<u64>,
        time: u64,
    }

    /// The book's sides in priority order, as the engine keeps them.
    #[derive(Default)]
    struct Model {
        buys: Vec<Order>,
        sells: Vec<Order>,
        pairs: Pairs,
        time: u64,
    }

    fn rank(buy: bool, o: &Order) -> (bool, u64, u64) {
        let price = match (o.held.unlimited, buy) {
            (true, _) => 0,
            (false, true) => !o.held.offer.price,
            (false, false) => o.held.offer.price,
        };
        (!o.held.unlimited, price, o.time)
    }

    /// The first pair at `mid` by a search of every pair in priority
    /// order, as the engine's full scan finds it.
    fn first_by_every_pair(m: &Model, mid: u64) -> Option<(usize, usize)> {
        m.buys.iter().enumerate().find_map(|(row, b)| {
            let b = &b.held.offer;
            if b.price < mid {
                return None;
            }
            let column = m.sells.iter().position(|s| {
                let s = &s.held.offer;
                s.price <= mid && minimums_met(b, s)
            })?;
            Some((row, column))
        })
    }

    impl Model {
        fn enter(&mut self, buy: bool, price: u64, leaves: u64, min: Option<u64>, unlimited: bool) {
            self.time += 1;
            let offer = Offer::new(price, leaves, min);
            let held = Held { offer, unlimited };
            let order = Order {
                held,
                min,
                time: self.time,
            };
            let side = if buy { &mut self.buys } else { &mut self.sells };
            let at = side.partition_point(|o| rank(buy, o) < rank(buy, &order));
            side.insert(at, order);
            if buy {
                self.pairs.insert_buy(at, held);
            } else {
                self.pairs.insert_sell(at, held);
            }
        }

        fn leave(&mut self, buy: bool, at: usize) {
            if buy {
                self.buys.remove(at);
                self.pairs.remove_buy(at);
            } else {
                self.sells.remove(at);
                self.pairs.remove_sell(at);
            }
        }

        /// Takes `lots` off the order at `at`; one left with none leaves.
        fn fill(&mut self, buy: bool, at: usize, lots: u64) {
            let side = if buy { &mut self.buys } else { &mut self.sells };
            let order = &mut side[at];
            let leaves = order.held.offer.leaves - lots;
            if leaves == 0 {
                return self.leave(buy, at);
            }
            let offer = Offer::new(order.held.offer.price, leaves, order.min);
            order.held.offer = offer;
            if buy {
                self.pairs.update_buy(at, offer);
            } else {
                self.pairs.update_sell(at, offer);
            }
        }

        fn check(&self) -> Result<(), TestCaseError> {
            let offers =
                |side: &[Order]| -> Vec<Offer> { side.iter().map(|o| o.held.offer).collect() };
            let (buys, sells) = (offers(&self.buys), offers(&self.sells));
            let held = |side: &[Order]| -> Vec<Held> { side.iter().map(|o| o.held).collect() };
            prop_assert_eq!(self.pairs.buys(), &held(&self.buys)[..]);
            prop_assert_eq!(self.pairs.sells(), &held(&self.sells)[..]);
            prop_assert_eq!(self.pairs.spans(), reach(&buys, &sells));
            prop_assert!(self.pairs.lows_hold());
            for mid in 0..45 {
                let first = first_by_every_pair(self, mid);
                prop_assert_eq!(self.pairs.first_pair(mid), first, "at {}", mid);
                prop_assert_eq!(self.pairs.covers(mid), first.is_some(), "at {}", mid);
            }
            Ok(())
        }
    }

    /// One change to the book: an order enters (a buy or a sell, limited
    /// or not, with or without a minimum), one leaves, one is filled in
    /// part, or the first pair at a midpoint trades the smaller remainder.
    fn step() -> impl Strategy<Value = (u8, u64, u64, Option<u64>, u8)> {
        (
            0u8..8,
            0..40u64,
            1..12u64,
            proptest::option::of(1..14u64),
            any::<u8>(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// After every change the reach, each buy's low and the first pair
        /// at every midpoint are what the from-scratch computations give.
        #[test]
        fn kept_up_to_date_it_is_what_a_search_from_scratch_finds(
            steps in proptest::collection::vec(step(), 1..60),
        ) {
            let mut m = Model::default();
            for (kind, price, leaves, min, pick) in steps {
                let pick = usize::from(pick);
                let unlimited = pick % 7 == 0;
                match kind {
                    0 | 1 => m.enter(kind == 0, price, leaves, min, unlimited),
                    2 | 3 => {
                        let side = if kind == 2 { &m.buys } else { &m.sells };
                        if !side.is_empty() {
                            m.leave(kind == 2, pick % side.len());
                        }
                    }
                    4 | 5 => {
                        let side = if kind == 4 { &m.buys } else { &m.sells };
                        if !side.is_empty() {
                            let at = pick % side.len();
                            let lots = 1 + price % side[at].held.offer.leaves;
                            m.fill(kind == 4, at, lots);
                        }
                    }
                    _ => {
                        if let Some((row, column)) = m.pairs.first_pair(price) {
                            let lots = m.buys[row].held.offer.leaves
                                .min(m.sells[column].held.offer.leaves);
                            // The sell first: the buy's row stays put.
                            m.fill(false, column, lots);
                            m.fill(true, row, lots);
                        }
                    }
                }
                m.check()?;
            }
            while !m.buys.is_empty() {
                m.leave(true, 0);
            }
            prop_assert!(m.pairs.cover.is_empty());
        }
    }
}
