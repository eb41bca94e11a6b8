//! An instrument's book: its displayed sides and its hidden ones.

use exchange_types::Side;

use super::{BookSide, Level};

/// An instrument's book: the displayed sides, which market data shows,
/// and the hidden sides, where hidden orders rest in price-time priority
/// of their own. Apart, so that every level a displayed side holds is
/// public as it stands (its aggregate counts no hidden order), and so that
/// a book without hidden orders costs matching one test of a pointer: the
/// hidden sides are made with the book's first hidden order.
#[derive(Clone, Debug)]
pub(crate) struct Book {
    bids: BookSide,
    asks: BookSide,
    hidden: Option<Box<[BookSide; 2]>>,
}

/// The hidden sides of a book that never held a hidden order.
static NO_HIDDEN: [BookSide; 2] = [BookSide::new(Side::Buy), BookSide::new(Side::Sell)];

fn index(side: Side) -> usize {
    match side {
        Side::Buy => 0,
        Side::Sell => 1,
    }
}

impl Book {
    pub fn new() -> Self {
        Book {
            bids: BookSide::new(Side::Buy),
            asks: BookSide::new(Side::Sell),
            hidden: None,
        }
    }

    pub fn bids(&self) -> &BookSide {
        &self.bids
    }

    pub fn asks(&self) -> &BookSide {
        &self.asks
    }

    /// Every side an order may rest on: displayed bids and asks, then
    /// hidden bids and asks.
    pub fn all_sides(&self) -> [&BookSide; 4] {
        let hidden = self.hidden.as_deref().unwrap_or(&NO_HIDDEN);
        [&self.bids, &self.asks, &hidden[0], &hidden[1]]
    }

    /// The displayed side.
    pub fn side(&self, side: Side) -> &BookSide {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    /// The displayed side.
    pub fn side_mut(&mut self, side: Side) -> &mut BookSide {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    /// The hidden side.
    pub fn hidden_side(&self, side: Side) -> &BookSide {
        &self.hidden.as_deref().unwrap_or(&NO_HIDDEN)[index(side)]
    }

    /// The side an order rests on: displayed, or hidden if `hidden`.
    #[inline]
    pub fn resting_side_mut(&mut self, side: Side, hidden: bool) -> &mut BookSide {
        match (side, hidden) {
            (Side::Buy, false) => &mut self.bids,
            (Side::Sell, false) => &mut self.asks,
            (_, true) => {
                let sides = self
                    .hidden
                    .get_or_insert_with(|| Box::new(NO_HIDDEN.clone()));
                &mut sides[index(side)]
            }
        }
    }

    /// The side an order rests on, to read.
    #[inline]
    pub fn resting_side(&self, side: Side, hidden: bool) -> &BookSide {
        if hidden {
            self.hidden_side(side)
        } else {
            self.side(side)
        }
    }

    /// Whether an incoming order on the other side at `price` would trade
    /// with any order resting on `side`, shown or hidden.
    #[inline]
    pub fn crosses(&self, side: Side, price: u64) -> bool {
        self.side(side).crosses(price)
            || self
                .hidden
                .as_deref()
                .is_some_and(|sides| sides[index(side)].crosses(price))
    }

    /// Whether `side` holds hidden orders.
    #[inline]
    pub fn has_hidden(&self, side: Side) -> bool {
        self.hidden
            .as_deref()
            .is_some_and(|sides| sides[index(side)].level_count() > 0)
    }

    /// The best price on `side`, shown or hidden.
    pub fn best_price(&self, side: Side) -> Option<u64> {
        let shown = self.side(side).best().map(|l| l.price);
        let hidden = self.hidden_side(side).best().map(|l| l.price);
        match (shown, hidden) {
            (Some(a), Some(b)) => Some(match side {
                Side::Buy => a.max(b),
                Side::Sell => a.min(b),
            }),
            (a, b) => a.or(b),
        }
    }

    /// The level a taker meets next on `side`: the better price first,
    /// and at one price the displayed level before the hidden one.
    /// Returns the level and whether it is hidden.
    #[inline]
    pub fn next_level(&self, side: Side) -> Option<(&Level, bool)> {
        let shown = self.side(side).best();
        if !self.has_hidden(side) {
            return shown.map(|l| (l, false));
        }
        let hidden = self.hidden_side(side).best()?;
        match shown {
            Some(l) if !better(side, hidden.price, l.price) => Some((l, false)),
            _ => Some((hidden, true)),
        }
    }

    /// Levels of `side` in the order a taker meets them; a side without
    /// hidden orders is read as it stands, with nothing merged.
    pub fn taker_levels(&self, side: Side) -> impl Iterator<Item = &Level> {
        let merged = self
            .has_hidden(side)
            .then(|| self.levels_with_hidden(side).map(|(l, _)| l));
        let shown = merged
            .is_none()
            .then(|| self.side(side).levels_best_first());
        merged
            .into_iter()
            .flatten()
            .chain(shown.into_iter().flatten())
    }

    /// Levels of `side` from the best price outwards, displayed and
    /// hidden merged, the displayed level first at one price; each with
    /// whether it is hidden. Merged as they are read: a taker reads a few
    /// levels of a deep book.
    pub fn levels_with_hidden(&self, side: Side) -> impl Iterator<Item = (&Level, bool)> {
        let mut shown = self.side(side).levels_best_first().peekable();
        let mut hidden = self.hidden_side(side).levels_best_first().peekable();
        std::iter::from_fn(move || {
            let take_hidden = match (shown.peek(), hidden.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(a), Some(b)) => better(side, b.price, a.price),
            };
            if take_hidden {
                hidden.next().map(|l| (l, true))
            } else {
                shown.next().map(|l| (l, false))
            }
        })
    }
}

/// Whether `a` is a better price than `b` for resting orders of `side`.
#[inline]
fn better(side: Side, a: u64, b: u64) -> bool {
    match side {
        Side::Buy => a > b,
        Side::Sell => a < b,
    }
}
