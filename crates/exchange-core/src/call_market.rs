//! Market orders in a call phase.
//!
//! As on Xetra and Euronext, a market order entered during a call
//! (`pre_open`, `closing_call`, `volatility_auction`) waits for the
//! uncrossing and executes there before every limit order of its side.
//! It is an open order (findable, cancelable, counted, swept by mass
//! cancel) but has no price, so it is on no book: it is filed here, out of
//! level-2 data, and counted by the indicative uncrossing.
//!
//! A market buy needs a price to reserve at: its bound, the upper end of
//! the instrument's collar or static volatility band (the tighter of the
//! two), the same protection a market order gets in continuous trading;
//! without either, the highest price at which its account's available
//! quote pays for all of it (`admit.rs`), so entering one is never refused
//! for want of a band. The uncrossing never executes it above that bound:
//! at a candidate price above it, it does not count. A market sell is
//! bounded likewise by the lower ends, or not at all. Bounds are not
//! candidate prices: the auction price comes from limit prices and the
//! reference, as at Xetra, unless a bound executes strictly more than
//! all of them (bounded market orders crossing between two limits).
//!
//! What an auction leaves of a market order goes on into the next phase,
//! as Xetra and Euronext carry it. Into continuous trading it trades at
//! once against the book up to its bound, in time priority, as an
//! incoming market order would (after an uncrossing at the maximum
//! volume there is nothing left within its bound, or the volume would
//! have been larger). What is still left rests as a limit order
//! at the last trade price (never beyond its bound), where the venues keep
//! an unpriced market order on top of the book: this book holds priced
//! levels only, and a resting order without a price would have none to
//! show and would cross every level within its bound. Should a volatility
//! band stop it, the instrument is in a volatility call again and it waits
//! there for that call's uncrossing. After a closing auction, or any move
//! to a phase that does not trade, it expires, as do `at_open` and
//! `at_close` market orders. docs/market-model.md has the rules and their
//! sources.

use std::collections::BTreeMap;

use exchange_types::limits::MAX_PRICE_LEVELS_PER_SIDE;
use exchange_types::{event, CancelReason, Event, EventKind, OrderId, Phase, Side, TimeInForce};

use crate::auction::{uncross, LevelQty, Uncross};
use crate::engine::Engine;

impl Engine {
    /// Files an accepted market order (holding its reservation) for the
    /// uncrossing of its instrument.
    pub(crate) fn hold_call_market(&mut self, slot: u32) {
        self.index_order(slot);
        let o = self.orders.get(slot);
        let old = self.call_markets.insert((o.instrument, o.id), slot);
        assert!(old.is_none(), "market order {} was filed twice", o.id);
    }

    /// Takes a market order out of the call table (it stays open);
    /// whether it was entered as market-to-limit.
    pub(crate) fn unhold_call_market(&mut self, slot: u32) -> bool {
        let o = self.orders.get(slot);
        let removed = self.call_markets.remove(&(o.instrument, o.id));
        assert_eq!(
            removed,
            Some(slot),
            "market order {} is not in the call table",
            o.id
        );
        !self.call_to_limit.is_empty() && self.call_to_limit.remove(&o.id)
    }

    /// The market orders of an instrument in time priority.
    pub(crate) fn call_market_slots(&self, index: u32) -> Vec<u32> {
        self.call_markets
            .range((index, 0)..=(index, OrderId::MAX))
            .map(|(_, &slot)| slot)
            .collect()
    }

    /// The market orders of an instrument as bounded quantities for the
    /// uncrossing: buys by bound highest first, sells lowest first. `None`
    /// when the instrument has none.
    pub(crate) fn call_market_levels(&self, index: u32) -> Option<(Vec<LevelQty>, Vec<LevelQty>)> {
        let mut buys: BTreeMap<u64, u64> = BTreeMap::new();
        let mut sells: BTreeMap<u64, u64> = BTreeMap::new();
        for slot in self.call_market_slots(index) {
            let o = self.orders.get(slot);
            let side = match o.side {
                Side::Buy => &mut buys,
                Side::Sell => &mut sells,
            };
            *side.entry(o.price).or_default() += o.leaves();
        }
        if buys.is_empty() && sells.is_empty() {
            return None;
        }
        let level = |(price, qty): (u64, u64)| LevelQty { price, qty };
        Some((
            buys.into_iter().rev().map(level).collect(),
            sells.into_iter().map(level).collect(),
        ))
    }

    /// The uncrossing with market orders waiting: they may execute against
    /// a book that does not cross, so every level is a candidate.
    pub(crate) fn uncross_with_markets(
        &self,
        index: u32,
        (market_bids, market_asks): &(Vec<LevelQty>, Vec<LevelQty>),
    ) -> Option<Uncross> {
        let inst = &self.instruments[index as usize];
        uncross(
            &self.auction_ladder(index, Side::Buy, |_| true),
            &self.auction_ladder(index, Side::Sell, |_| true),
            market_bids,
            market_asks,
            inst.reference_ticks,
            inst.reference_price_rule,
        )
    }

    /// The market orders that execute at `price`, in priority: buys
    /// bounded at or above it, highest bound first, sells at or below it,
    /// lowest first, each bound in time priority.
    pub(crate) fn call_markets_at(&self, index: u32, price: u64) -> (Vec<u32>, Vec<u32>) {
        let (mut buys, mut sells) = (Vec::new(), Vec::new());
        for slot in self.call_market_slots(index) {
            let o = self.orders.get(slot);
            match o.side {
                Side::Buy if o.price >= price => buys.push(slot),
                Side::Sell if o.price <= price => sells.push(slot),
                _ => {}
            }
        }
        // Stable: time priority stays within a bound.
        buys.sort_by_key(|&slot| std::cmp::Reverse(self.orders.get(slot).price));
        sells.sort_by_key(|&slot| self.orders.get(slot).price);
        (buys, sells)
    }

    /// Expires what the uncrossing left of the instrument's market orders
    /// when the next phase does not trade.
    pub(crate) fn expire_call_markets(&mut self, index: u32, out: &mut Vec<Event>) {
        if self.call_markets.is_empty() {
            return;
        }
        for slot in self.call_market_slots(index) {
            self.unhold_call_market(slot);
            self.expire(slot, out);
        }
    }

    /// Carries what the uncrossing left of the instrument's market orders
    /// into continuous trading, in time priority (see the module's rules).
    /// Continuous matching never looks at the call table, so this costs
    /// the hot path nothing.
    #[cold]
    pub(crate) fn carry_call_markets(
        &mut self,
        index: u32,
        auction_price: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        if self.call_markets.is_empty() {
            return;
        }
        for slot in self.call_market_slots(index) {
            if self.instruments[index as usize].phase != Phase::Continuous {
                // A band stopped an earlier one: the rest wait for the
                // volatility call, holding what their remainder needs.
                self.true_up_call_market(slot, out);
                continue;
            }
            if self.unhold_call_market(slot) {
                self.carry_to_limit(index, slot, auction_price, out);
            } else {
                self.carry_one(index, slot, out);
            }
        }
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
    }

    /// One market order's remainder entering continuous trading.
    fn carry_one(&mut self, index: u32, slot: u32, out: &mut Vec<Event>) {
        let (side, bound, tif) = {
            let o = self.orders.get(slot);
            (o.side, o.price, o.tif)
        };
        if matches!(tif, TimeInForce::AtOpen | TimeInForce::AtClose) {
            self.expire(slot, out);
            return;
        }
        let crosses = self.books[index as usize].crosses(side.opposite(), bound);
        // Self-trade prevention may cancel it, which closes it.
        if crosses && self.match_order(slot, out) {
            return;
        }
        let o = self.orders.get(slot);
        if o.leaves() == 0 {
            self.release_all(slot, out);
            self.close_order(slot);
        } else if self.instruments[index as usize].phase != Phase::Continuous {
            // A band interrupted its trading: it waits in the new call.
            let key = (o.instrument, o.id);
            self.true_up_call_market(slot, out);
            self.call_markets.insert(key, slot);
        } else {
            self.rest_carried(index, slot, out);
        }
    }

    /// Rests what is left of a carried market order as a limit order at
    /// the last trade price, bounded by its own bound; expires it when
    /// there is no such price or the price would cross or need a level the
    /// side has no room for.
    fn rest_carried(&mut self, index: u32, slot: u32, out: &mut Vec<Event>) {
        let (side, bound) = {
            let o = self.orders.get(slot);
            (o.side, o.price)
        };
        let price = self.instruments[index as usize]
            .reference_ticks
            .map(|last| match side {
                Side::Buy => last.min(bound),
                Side::Sell => last.max(bound),
            });
        let book = &self.books[index as usize];
        let fits = |p: u64| {
            !book.crosses(side.opposite(), p)
                && (book.side(side).has_level(p)
                    || book.side(side).level_count() < MAX_PRICE_LEVELS_PER_SIDE)
        };
        let Some(price) = price.filter(|&p| fits(p)) else {
            self.expire(slot, out);
            return;
        };
        self.price_carried(index, slot, price, out);
        self.rest(slot, out);
    }

    /// What an auction left of a market-to-limit order entered in the call
    /// becomes a limit order at the auction price, as at Euronext. With no
    /// auction it enters continuous trading as it would have there: at the
    /// best opposite price, trading that one level and resting the rest;
    /// with that side empty too it expires. Either price stays within its
    /// bound.
    fn carry_to_limit(
        &mut self,
        index: u32,
        slot: u32,
        auction_price: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        let (side, bound, tif) = {
            let o = self.orders.get(slot);
            (o.side, o.price, o.tif)
        };
        let book = &self.books[index as usize];
        let price = auction_price
            .or_else(|| book.side(side.opposite()).best().map(|level| level.price))
            .map(|p| match side {
                Side::Buy => p.min(bound),
                Side::Sell => p.max(bound),
            });
        let Some(price) =
            price.filter(|_| !matches!(tif, TimeInForce::AtOpen | TimeInForce::AtClose))
        else {
            self.expire(slot, out);
            return;
        };
        let own = book.side(side);
        if !own.has_level(price) && own.level_count() >= MAX_PRICE_LEVELS_PER_SIDE {
            // No room for a new level: what does not trade expires rather
            // than push the book past its bound.
            self.orders.get_mut(slot).tif = TimeInForce::Ioc;
        }
        self.price_carried(index, slot, price, out);
        self.execute(slot, out);
    }

    /// Gives a carried market order its limit `price`, lowers a buy's
    /// reservation to it, and reports the price by a `replaced` event.
    fn price_carried(&mut self, index: u32, slot: u32, price: u64, out: &mut Vec<Event>) {
        let o = self.orders.get_mut(slot);
        o.price = price;
        o.is_market = false;
        // A buy held its remainder at its bound, at or above `price`.
        self.trim_reservation(slot, out);
        self.emit_with(out, |e| {
            let o = e.orders.get(slot);
            let inst = &e.instruments[index as usize];
            EventKind::Replaced(event::Replaced {
                account: e.accounts.get(o.account).id(),
                order_id: o.id,
                old_client_order_id: o.client_order_id,
                client_order_id: o.client_order_id,
                symbol: inst.symbol,
                price: inst.price_units(price),
                qty: inst.qty_units(o.qty),
                leaves_qty: inst.qty_units(o.leaves()),
                stop_price: None,
            })
        });
    }

    /// Lowers a waiting market buy's reservation to what its remainder
    /// needs at its bound, after auction fills at better prices.
    fn true_up_call_market(&mut self, slot: u32, out: &mut Vec<Event>) {
        let o = self.orders.get(slot);
        // The remainder is smaller than what was reserved at this bound,
        // and each fill took at most what its lots had set aside there
        // (the same argument as a limit buy's after a fill).
        let needed = self
            .reservation_for(slot, o.price, o.leaves())
            .expect("a market order's remainder costs less than the whole");
        let excess = o.reserved.checked_sub(needed).unwrap_or_else(|| {
            panic!(
                "market order {} holds {} but its remainder needs {needed}",
                o.id, o.reserved
            )
        });
        if let Some((account, asset)) = self.release(slot, excess) {
            self.emit_balance(out, account, asset);
        }
    }

    /// Cancels the instrument's market orders (delisting, new rules).
    pub(crate) fn cancel_call_markets(
        &mut self,
        index: u32,
        reason: CancelReason,
        out: &mut Vec<Event>,
    ) {
        if self.call_markets.is_empty() {
            return;
        }
        for slot in self.call_market_slots(index) {
            self.cancel_resting(slot, reason, out);
        }
    }

    /// The invariants of the call table, for [`Engine::audit`]; adds each
    /// order's reservation and count, and returns how many there are.
    pub(crate) fn audit_call_markets(
        &self,
        reserved: &mut BTreeMap<(u32, u32), u128>,
        per_account: &mut BTreeMap<u32, u32>,
    ) -> Result<usize, String> {
        for (&(instrument, id), &slot) in &self.call_markets {
            let o = self.orders.get(slot);
            let inst = &self.instruments[instrument as usize];
            if o.id != id || o.instrument != instrument || !o.is_market || !o.indexed || o.stop {
                return Err(format!("market order {id} is misfiled"));
            }
            if !crate::sessions::may_cross(inst.phase) {
                return Err(format!(
                    "market order {id} waits on {} outside a call",
                    inst.symbol
                ));
            }
            if o.filled >= o.qty || o.hidden != 0 {
                return Err(format!("market order {id} has no open quantity"));
            }
            if self.order_by_id.get(&id) != Some(&slot)
                || self.by_client_id.get(&(o.account, o.client_order_id)) != Some(&slot)
            {
                return Err(format!("market order {id} is not indexed"));
            }
            let need = self.reservation_for(slot, o.price, o.leaves());
            if need != Some(o.reserved) {
                return Err(format!(
                    "market order {id} reserves {} but needs {need:?}",
                    o.reserved
                ));
            }
            *reserved
                .entry((o.account, self.reserved_asset(o)))
                .or_default() += u128::from(o.reserved);
            *per_account.entry(o.account).or_default() += 1;
        }
        for &id in &self.call_to_limit {
            let waiting = self.order_by_id.get(&id).is_some_and(|&slot| {
                let o = self.orders.get(slot);
                self.call_markets.get(&(o.instrument, id)) == Some(&slot)
            });
            if !waiting {
                return Err(format!(
                    "market-to-limit order {id} is not waiting in a call"
                ));
            }
        }
        Ok(self.call_markets.len())
    }
}
