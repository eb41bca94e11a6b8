//! The state of untriggered stops and one-cancels-other pairs: per
//! instrument, the orders a rising last price triggers (buy stops, sell
//! if-touched orders) by (stop price, order id) and those a falling one
//! triggers (sell stops, buy if-touched orders) by (reversed stop price,
//! order id), so the next to trigger is first; each stop's trigger details
//! by order id; and the pairs.
//!
//! Data only: entry, triggering and pairs are `stops/mod.rs`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use exchange_types::{OrderId, Side};

/// How far a trailing stop stays from the last price, in ticks or basis
/// points of that price.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrailingTicks {
    Amount(u64),
    Bps(u32),
}

impl TrailingTicks {
    /// The distance at `last`, in ticks.
    pub(crate) fn distance(self, last: u64) -> u64 {
        match self {
            TrailingTicks::Amount(ticks) => ticks,
            TrailingTicks::Bps(bps) => {
                let d = u128::from(last) * u128::from(bps) / 10_000;
                u64::try_from(d).unwrap_or(u64::MAX)
            }
        }
    }

    /// Where a stop of `side` trailing `last` by this distance sits, if
    /// that is a price at all.
    pub(crate) fn stop_for(self, side: Side, last: u64) -> Option<u64> {
        let d = self.distance(last);
        match side {
            Side::Buy => last.checked_add(d),
            Side::Sell => last.checked_sub(d).filter(|&p| p > 0),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StopInfo {
    pub slot: u32,
    pub instrument: u32,
    pub side: Side,
    /// The trigger, in ticks.
    pub stop: u64,
    /// A stop market order (enters as a market order), else stop-limit.
    pub market: bool,
    /// An if-touched order: triggers as the last price moves the other way
    /// than a stop of its side's.
    pub touched: bool,
    pub trailing: Option<TrailingTicks>,
}

impl StopInfo {
    /// Whether a rising last price triggers it (else a falling one).
    pub(crate) fn rises(&self) -> bool {
        rises(self.side, self.touched)
    }

    /// Whether `last` has reached its stop price.
    pub(crate) fn reached(&self, last: u64) -> bool {
        reached(self.side, self.touched, self.stop, last)
    }
}

/// Whether a rising last price triggers an order of `side` (a buy stop,
/// a sell if-touched order).
pub(crate) fn rises(side: Side, touched: bool) -> bool {
    (side == Side::Buy) != touched
}

/// Whether `last` has reached `stop` for an order of `side`.
pub(crate) fn reached(side: Side, touched: bool, stop: u64, last: u64) -> bool {
    if rises(side, touched) {
        last >= stop
    } else {
        last <= stop
    }
}

/// One instrument's untriggered stops, by the way the last price must
/// move to trigger them.
#[derive(Clone, Debug, Default)]
pub(crate) struct StopBook {
    pub rises: BTreeMap<(u64, OrderId), u32>,
    pub falls: BTreeMap<(Reverse<u64>, OrderId), u32>,
    pub trailing: BTreeSet<OrderId>,
}

impl StopBook {
    pub(crate) fn is_empty(&self) -> bool {
        self.rises.is_empty() && self.falls.is_empty()
    }

    pub(crate) fn insert(&mut self, id: OrderId, info: &StopInfo) {
        if info.rises() {
            self.rises.insert((info.stop, id), info.slot);
        } else {
            self.falls.insert((Reverse(info.stop), id), info.slot);
        }
    }

    pub(crate) fn remove(&mut self, id: OrderId, info: &StopInfo) {
        let removed = if info.rises() {
            self.rises.remove(&(info.stop, id))
        } else {
            self.falls.remove(&(Reverse(info.stop), id))
        };
        // The table and the info map change together; a miss would leave a
        // stop that triggers after it was canceled.
        assert_eq!(removed, Some(info.slot), "stop {id} was not in its table");
    }

    /// Whether `info` is filed under its order id where its stop price
    /// and direction say.
    pub(crate) fn files(&self, id: OrderId, info: &StopInfo) -> bool {
        let slot = if info.rises() {
            self.rises.get(&(info.stop, id))
        } else {
            self.falls.get(&(Reverse(info.stop), id))
        };
        slot == Some(&info.slot)
    }

    /// How many stops one direction holds (the bound a new one meets).
    pub(crate) fn direction_len(&self, rises: bool) -> usize {
        if rises {
            self.rises.len()
        } else {
            self.falls.len()
        }
    }
}

/// Every untriggered stop and every one-cancels-other pair.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stops {
    pub(super) books: BTreeMap<u32, StopBook>,
    pub(super) info: BTreeMap<OrderId, StopInfo>,
    /// Both directions of every pair.
    pub(super) oco: BTreeMap<OrderId, OrderId>,
    /// Partners of orders that traded during the current command, to cancel
    /// once it has matched; always empty between commands.
    pub(super) oco_pending: Vec<OrderId>,
}

impl Stops {
    /// The untriggered stops, by order id.
    pub fn untriggered(&self) -> impl Iterator<Item = &StopInfo> + '_ {
        self.info.values()
    }

    pub fn untriggered_count(&self) -> usize {
        self.info.len()
    }

    /// Whether there is any untriggered stop or pair (the snapshot then
    /// has a stop section).
    pub fn has_any(&self) -> bool {
        !self.info.is_empty() || !self.oco.is_empty()
    }

    /// Whether the untriggered stop `id` enters as a market order (a stop
    /// or market-if-touched order).
    pub fn is_market_stop(&self, id: OrderId) -> bool {
        self.info.get(&id).is_some_and(|info| info.market)
    }

    /// Every pair once, as (lower id, higher id), in id order.
    pub fn pairs(&self) -> impl Iterator<Item = (OrderId, OrderId)> + '_ {
        self.oco
            .iter()
            .filter(|(a, b)| a < b)
            .map(|(&a, &b)| (a, b))
    }

    /// Whether a command that traded has anything to do here.
    #[inline]
    pub fn is_active(&self) -> bool {
        !self.info.is_empty() || !self.oco_pending.is_empty()
    }
}

/// A checked stop, before the order exists.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StopPlan {
    pub stop: u64,
    pub market: bool,
    pub touched: bool,
    pub trailing: Option<TrailingTicks>,
    /// What a stop market order trades up (down) to once triggered, and
    /// what a buy reserves for: the collar band around its stop price.
    pub protection: Option<u64>,
}
