//! Matching: price-time priority, trades at the resting order's price.
//!
//! The incoming order (the taker) walks the opposite side from the best
//! level outwards while its limit allows, filling each level's orders in
//! arrival order. Meeting an order of its own account triggers self-trade
//! prevention according to the taker's mode. Each fill settles both legs
//! and the fees at once.
//!
//! Cost: `O(levels touched + orders filled)`; an order that does not cross
//! costs one comparison with the best opposite price.

use exchange_types::event;
use exchange_types::{CancelReason, Event, EventKind, SelfTradePrevention, Side};

use crate::engine::Engine;
use crate::instrument::buy_cost;
use crate::orders::NIL;

/// What the taker could do against the book as it stands, computed before
/// anything changes (for fill-or-kill and for a market buy's reservation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Walk {
    pub traded_lots: u64,
    /// Quote units the trades would cost; `None` if beyond representation.
    pub notional: Option<u64>,
}

#[inline]
fn within_limit(side: Side, level_price: u64, limit: u64) -> bool {
    match side {
        Side::Buy => level_price <= limit,
        Side::Sell => level_price >= limit,
    }
}

impl Engine {
    /// Simulates the match of a taker, self-trade prevention and icebergs
    /// included, without changing anything. With a `budget` (a market buy
    /// sized by funds) each fill is also held to what is left of it, taker
    /// fee included, and the walk stops at the first fill the budget cuts
    /// short or at the first own order, whatever the self-trade mode.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn walk(
        &self,
        instrument: u32,
        side: Side,
        account: u32,
        stp: SelfTradePrevention,
        limit: u64,
        lots: u64,
        budget: Option<u64>,
    ) -> Walk {
        let inst = &self.instruments[instrument as usize];
        let mut walk = Walk {
            traded_lots: 0,
            notional: Some(0),
        };
        let mut remaining = lots;
        let mut left = budget;
        // Takes up to `available` lots at `price`; false once the taker is
        // done (its quantity or its budget ran out).
        let mut take = |walk: &mut Walk, remaining: &mut u64, price: u64, available: u64| {
            let mut q = (*remaining).min(available);
            if let Some(left) = left.as_mut() {
                q = crate::funds::affordable(inst, price, q, *left);
                *left -= crate::funds::funds_cost(inst, price, q).unwrap_or(*left);
            }
            *remaining -= q;
            walk.traded_lots += q;
            walk.notional = walk
                .notional
                .and_then(|n| n.checked_add(inst.notional(price, q)?));
            q == available && *remaining > 0
        };
        let mut refills: Vec<u64> = Vec::new();
        let mut last = inst.reference_ticks;
        // Hidden orders are met in price priority too, after the shown
        // lots at their price.
        let levels = self.books[instrument as usize].taker_levels(side.opposite());
        for level in levels {
            if remaining == 0 || !within_limit(side, level.price, limit) {
                break;
            }
            // Matching will stop where a band interrupts it.
            if self.volatility.any_banded() {
                if !self.band_allows_walk(instrument, level.price, last) {
                    break;
                }
                last = Some(level.price);
            }
            refills.clear();
            let mut slot = level.head;
            while slot != NIL {
                let maker = self.orders.get(slot);
                slot = self.orders.link(slot).next;
                if maker.account == account {
                    if budget.is_some() {
                        return walk;
                    }
                    match stp {
                        SelfTradePrevention::CancelOldest => continue,
                        SelfTradePrevention::Decrement => {
                            remaining -= remaining.min(maker.leaves());
                            if remaining == 0 {
                                return walk;
                            }
                            continue;
                        }
                        _ => return walk,
                    }
                }
                if !take(&mut walk, &mut remaining, level.price, maker.displayed()) {
                    return walk;
                }
                if maker.hidden > 0 {
                    refills.push(maker.hidden);
                }
            }
            // Every shown lot at this price is gone: the icebergs' hidden
            // quantity trades next, in the order they were refilled.
            for &hidden in &refills {
                if !take(&mut walk, &mut remaining, level.price, hidden) {
                    return walk;
                }
            }
        }
        walk
    }

    /// Matches the taker in `slot` against the opposite side. Returns true
    /// if self-trade prevention canceled the taker (it is then closed).
    /// Always inlined, as [`Engine::rest`] is, for the same reason.
    #[inline(always)]
    pub(crate) fn match_order(&mut self, taker: u32, out: &mut Vec<Event>) -> bool {
        let (instrument, side, limit, account, stp) = {
            let t = self.orders.get(taker);
            (t.instrument, t.side, t.price, t.account, t.stp)
        };
        let opposite = side.opposite();
        loop {
            if self.orders.get(taker).leaves() == 0 {
                return false;
            }
            let Some((level_price, mut maker, last_shown, hidden)) =
                self.next_level(instrument, side, limit, out)
            else {
                return false;
            };
            // Orders behind the level's tail as matching found it are
            // icebergs refilled by this taker: once it reaches them every
            // shown lot at this price has traded, and they give it their
            // hidden quantity too (see `fill`).
            let mut deep = false;
            let mut traded_here = false;
            let mut stop = false;
            let mut taker_canceled = false;
            while maker != NIL && self.orders.get(taker).leaves() > 0 {
                let maker_account = self.orders.get(maker).account;
                let mut next = self.orders.link(maker).next;
                let at_last_shown = maker == last_shown;
                if maker_account == account {
                    if traded_here && !hidden {
                        // Report the level as trades left it before the
                        // self-trade handling reports it again.
                        self.emit_level(instrument, opposite, level_price, out);
                        traded_here = false;
                    }
                    match self.prevent_self_trade(taker, maker, stp, out) {
                        SelfTradeOutcome::Continue => {}
                        SelfTradeOutcome::TakerCanceled => {
                            taker_canceled = true;
                            stop = true;
                            break;
                        }
                    }
                } else {
                    match self.fill(taker, maker, level_price, deep, out) {
                        Filled::Traded => traded_here = true,
                        Filled::Refilled => {
                            traded_here = true;
                            if next == NIL {
                                next = maker;
                            }
                        }
                        Filled::Stopped => {
                            stop = true;
                            break;
                        }
                    }
                }
                deep |= at_last_shown;
                maker = next;
            }
            if traded_here && !hidden {
                self.emit_level(instrument, opposite, level_price, out);
            }
            if taker_canceled {
                self.cancel_taker(taker, out);
                return true;
            }
            if stop {
                return false;
            }
        }
    }

    /// The best opposite level a taker on `side` with `limit` may trade
    /// at, as (price, head, tail, hidden): the displayed level before the
    /// hidden one at a price; `None` when there is none, or when its
    /// price would break a volatility band (the instrument is then
    /// interrupted).
    #[inline(always)]
    fn next_level(
        &mut self,
        instrument: u32,
        side: Side,
        limit: u64,
        out: &mut Vec<Event>,
    ) -> Option<(u64, u32, u32, bool)> {
        let (level, hidden) = self.books[instrument as usize].next_level(side.opposite())?;
        if !within_limit(side, level.price, limit) {
            return None;
        }
        let found = (level.price, level.head, level.tail, hidden);
        // The one comparison matching pays for volatility bands while no
        // instrument has any.
        if self.volatility.any_banded() && !self.band_allows(instrument, found.0) {
            self.interrupt(instrument, out);
            return None;
        }
        Some(found)
    }

    /// Reports the aggregate now at `price` on `side` (zero if it is gone).
    fn emit_level(&mut self, instrument: u32, side: Side, price: u64, out: &mut Vec<Event>) {
        let qty = self.books[instrument as usize]
            .side(side)
            .best()
            .filter(|level| level.price == price)
            .map_or(0, |level| level.qty);
        self.emit_book(out, instrument, side, price, qty);
    }

    fn prevent_self_trade(
        &mut self,
        taker: u32,
        maker: u32,
        stp: SelfTradePrevention,
        out: &mut Vec<Event>,
    ) -> SelfTradeOutcome {
        match stp {
            SelfTradePrevention::CancelNewest => SelfTradeOutcome::TakerCanceled,
            SelfTradePrevention::CancelOldest => {
                self.cancel_resting(maker, CancelReason::SelfTrade, out);
                SelfTradeOutcome::Continue
            }
            SelfTradePrevention::CancelBoth => {
                self.cancel_resting(maker, CancelReason::SelfTrade, out);
                SelfTradeOutcome::TakerCanceled
            }
            SelfTradePrevention::Decrement => {
                let lots = self
                    .orders
                    .get(taker)
                    .leaves()
                    .min(self.orders.get(maker).leaves());
                if self.orders.get(maker).leaves() == lots {
                    self.cancel_resting(maker, CancelReason::SelfTrade, out);
                } else {
                    self.decrement_resting(maker, lots, out);
                }
                if self.orders.get(taker).leaves() == lots {
                    SelfTradeOutcome::TakerCanceled
                } else {
                    self.decrement_taker(taker, lots, out);
                    SelfTradeOutcome::Continue
                }
            }
        }
    }

    /// Shrinks a resting order in place (it keeps its priority).
    /// An iceberg loses hidden lots first, so what it shows stays.
    fn decrement_resting(&mut self, slot: u32, lots: u64, out: &mut Vec<Event>) {
        let (instrument, side, price, from_shown, hidden) = {
            let o = self.orders.get_mut(slot);
            let from_hidden = lots.min(o.hidden);
            o.hidden -= from_hidden;
            o.qty -= lots;
            (
                o.instrument,
                o.side,
                o.price,
                lots - from_hidden,
                o.is_hidden,
            )
        };
        let level_qty = self.books[instrument as usize]
            .resting_side_mut(side, hidden)
            .reduce(price, from_shown);
        self.emit_canceled(slot, CancelReason::SelfTrade, lots, out);
        if !hidden {
            self.emit_book(out, instrument, side, price, level_qty);
        }
        self.trim_reservation(slot, out);
    }

    /// Shrinks the taker before it trades further.
    fn decrement_taker(&mut self, slot: u32, lots: u64, out: &mut Vec<Event>) {
        self.orders.get_mut(slot).qty -= lots;
        self.emit_canceled(slot, CancelReason::SelfTrade, lots, out);
        self.trim_reservation(slot, out);
    }

    /// Cancels what is left of a taker that has not rested.
    fn cancel_taker(&mut self, slot: u32, out: &mut Vec<Event>) {
        let leaves = self.orders.get(slot).leaves();
        self.orders.get_mut(slot).qty -= leaves;
        self.emit_canceled(slot, CancelReason::SelfTrade, leaves, out);
        self.release_all(slot, out);
        self.close_order(slot);
    }

    /// Lowers a limit order's reservation to what its remainder needs.
    pub(crate) fn trim_reservation(&mut self, slot: u32, out: &mut Vec<Event>) {
        let order = self.orders.get(slot);
        if order.is_market && order.side == Side::Buy {
            // A market buy's reservation was made against the book, not a
            // price; it is released whole when the order ends.
            return;
        }
        // The order only shrank since its reservation was computed, at the
        // same price: what its remainder needs is representable and no more
        // than it holds. Clamping would hide an under-reserved order.
        let needed = self
            .reservation_for(slot, order.price, order.leaves())
            .expect("a shrunken order's reservation is representable");
        let excess = order.reserved.checked_sub(needed).unwrap_or_else(|| {
            panic!(
                "an order holds {} but its remainder needs {needed}",
                order.reserved
            )
        });
        if let Some((account, asset)) = self.release(slot, excess) {
            self.emit_balance(out, account, asset);
        }
    }

    /// What an order of this slot's side and instrument must hold for
    /// `lots` at `price`. Inlined: every replace asks, and the call cost
    /// a third of the answer.
    #[inline]
    pub(crate) fn reservation_for(&self, slot: u32, price: u64, lots: u64) -> Option<u64> {
        let order = self.orders.get(slot);
        let inst = &self.instruments[order.instrument as usize];
        match order.side {
            Side::Buy => buy_cost(inst.notional(price, lots)?, inst.max_fee_bps()),
            Side::Sell => lots.checked_mul(inst.lot_units),
        }
    }

    /// Reports that `canceled_lots` of an order were canceled; the order's
    /// `qty` must already exclude them.
    pub(crate) fn emit_canceled(
        &mut self,
        slot: u32,
        reason: CancelReason,
        canceled_lots: u64,
        out: &mut Vec<Event>,
    ) {
        self.emit_with(out, |e| {
            let order = e.orders.get(slot);
            let inst = &e.instruments[order.instrument as usize];
            EventKind::Canceled(event::Canceled {
                account: e.accounts.get(order.account).id(),
                order_id: order.id,
                client_order_id: order.client_order_id,
                symbol: inst.symbol,
                reason,
                canceled_qty: inst.qty_units(canceled_lots),
                filled_qty: inst.qty_units(order.filled),
                leaves_qty: inst.qty_units(order.leaves()),
            })
        });
    }
}

/// How a fill left the maker.
pub(crate) enum Filled {
    /// It traded; the maker is done or keeps its place.
    Traded,
    /// It traded and the maker, an iceberg whose shown slice filled, went
    /// to the back of its level with a new slice.
    Refilled,
    /// Nothing traded: a market buy's reservation cannot pay.
    Stopped,
}

pub(crate) enum SelfTradeOutcome {
    Continue,
    TakerCanceled,
}
