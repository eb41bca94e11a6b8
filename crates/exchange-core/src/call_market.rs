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
//! two), the same protection a market order gets in continuous trading.
//! The uncrossing never executes it above that bound: at a candidate price
//! above it, it does not count. A market sell is bounded likewise by the
//! lower ends, or not at all. Bounds are not candidate prices: the auction
//! price comes from limit prices and the reference only, as at Xetra.
//!
//! What an auction leaves of a market order expires with the call. Xetra
//! carries unexecuted market orders into continuous trading instead; here
//! a market order in continuous trading is immediate, so carried over it
//! would sweep the book the instant the call ends, unseen by its owner.
//! docs/market-model.md has the rules and their sources.

use std::collections::BTreeMap;

use exchange_types::{CancelReason, Event, OrderId, Side};

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

    /// Takes a market order out of the call table (it stays open).
    pub(crate) fn unhold_call_market(&mut self, slot: u32) {
        let o = self.orders.get(slot);
        let removed = self.call_markets.remove(&(o.instrument, o.id));
        assert_eq!(
            removed,
            Some(slot),
            "market order {} is not in the call table",
            o.id
        );
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
        let book = &self.books[index as usize];
        let levels = |side: &crate::book::BookSide| -> Vec<LevelQty> {
            side.levels_best_first()
                .map(|l| LevelQty {
                    price: l.price,
                    qty: self.auction_volume(l),
                })
                .collect()
        };
        let inst = &self.instruments[index as usize];
        uncross(
            &levels(book.bids()),
            &levels(book.asks()),
            market_bids,
            market_asks,
            inst.reference_ticks,
            inst.reference_price_rule,
        )
    }

    /// The market orders that execute at `price`, in time priority: buys
    /// bounded at or above it, sells at or below it.
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
        (buys, sells)
    }

    /// Expires what the uncrossing left of the instrument's market orders.
    pub(crate) fn expire_call_markets(&mut self, index: u32, out: &mut Vec<Event>) {
        if self.call_markets.is_empty() {
            return;
        }
        for slot in self.call_market_slots(index) {
            self.unhold_call_market(slot);
            self.expire(slot, out);
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
        Ok(self.call_markets.len())
    }
}
