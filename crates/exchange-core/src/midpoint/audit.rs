//! The midpoint books' invariants, for `Engine::audit`.

use std::collections::BTreeMap;

use exchange_types::limits::MAX_MIDPOINT_ORDERS_PER_INSTRUMENT;
use exchange_types::{Side, TradingStatus};

use super::pairs::Held;
use super::reach::{reach, Offer};
use super::{rank, Entry, MidBook};
use crate::engine::Engine;

impl Engine {
    /// Every entry is an open, indexed midpoint order of its instrument
    /// and side that reserves exactly what its remainder needs at its
    /// limit or bound; each side is in priority order; a book is within
    /// its limit, not empty, and not on a delisted instrument; and the
    /// two-sided set names exactly the books with both sides. Adds the
    /// orders' reservations and counts to the tally; returns how many.
    pub(crate) fn audit_midpoints(
        &self,
        reserved: &mut BTreeMap<(u32, u32), u128>,
        per_account: &mut BTreeMap<u32, u32>,
    ) -> Result<usize, String> {
        let mut open = 0;
        for (instrument, book) in self.midpoints.books() {
            let inst = self
                .instruments
                .get(instrument as usize)
                .ok_or_else(|| format!("midpoint book of unknown instrument {instrument}"))?;
            if book.len() == 0 || book.len() > MAX_MIDPOINT_ORDERS_PER_INSTRUMENT {
                return Err(format!(
                    "{} midpoint book holds {}",
                    inst.symbol,
                    book.len()
                ));
            }
            if inst.status == TradingStatus::Delisted {
                return Err(format!("delisted {} has midpoint orders", inst.symbol));
            }
            let two = !book.bids.is_empty() && !book.asks.is_empty();
            if two != self.midpoints.two_sided().contains(&instrument) {
                return Err(format!("{} midpoint book is misfiled", inst.symbol));
            }
            self.audit_midpoint_pairs(book)
                .map_err(|what| format!("{} midpoint book's {what}", inst.symbol))?;
            for side in [Side::Buy, Side::Sell] {
                self.audit_midpoint_side(instrument, side, book.side(side))?;
                for e in book.side(side) {
                    let o = self.orders.get(e.slot);
                    *reserved
                        .entry((o.account, self.reserved_asset(o)))
                        .or_default() += u128::from(o.reserved);
                    *per_account.entry(o.account).or_default() += 1;
                    open += 1;
                }
            }
        }
        if let Some(stray) = self
            .midpoints
            .two_sided()
            .iter()
            .find(|i| self.midpoints.book(**i).is_none())
        {
            return Err(format!(
                "instrument {stray} is two-sided without midpoint orders"
            ));
        }
        Ok(open)
    }

    /// What the book's pairs hold is its orders as they are now, each
    /// buy's low is what a walk of the sells finds, and the reach is what
    /// working it out from scratch gives.
    fn audit_midpoint_pairs(&self, book: &MidBook) -> Result<(), &'static str> {
        let Some(pairs) = &book.pairs else {
            return Ok(());
        };
        let held =
            |entries: &[Entry]| -> Vec<Held> { entries.iter().map(|e| self.held(e)).collect() };
        let (bids, asks) = (held(&book.bids), held(&book.asks));
        if pairs.buys() != bids || pairs.sells() != asks {
            return Err("pairs are out of step with its orders");
        }
        if !pairs.lows_hold() {
            return Err("pairs hold a stale low");
        }
        let offers = |side: &[Held]| -> Vec<Offer> { side.iter().map(|h| h.offer).collect() };
        if pairs.spans() != reach(&offers(&bids), &offers(&asks)) {
            return Err("reach is not what its orders reach");
        }
        Ok(())
    }

    fn audit_midpoint_side(
        &self,
        instrument: u32,
        side: Side,
        entries: &[Entry],
    ) -> Result<(), String> {
        let mut last = None;
        for e in entries {
            let o = self.orders.get(e.slot);
            let id = o.id;
            if !o.is_midpoint
                || o.instrument != instrument
                || o.side != side
                || !o.indexed
                || o.stop
                || o.is_market
                || o.is_hidden
                || o.hidden != 0
                || o.filled >= o.qty
                || o.id == 0
                || o.id >= self.next_order_id
                || e.time > self.seq
            {
                return Err(format!("midpoint order {id} is misfiled"));
            }
            if self.order_by_id.get(&id) != Some(&e.slot)
                || self.by_client_id.get(&(o.account, o.client_order_id)) != Some(&e.slot)
            {
                return Err(format!("midpoint order {id} is not indexed"));
            }
            if e.terms.min_lots == Some(0) {
                return Err(format!("midpoint order {id} has a bad minimum quantity"));
            }
            let need = self.reservation_for(e.slot, o.price, o.leaves());
            if need != Some(o.reserved) {
                return Err(format!(
                    "midpoint order {id} reserves {} but needs {need:?}",
                    o.reserved
                ));
            }
            let key = rank(side, o.price, e);
            if last.is_some_and(|l| l >= key) {
                return Err(format!("midpoint order {id} is out of priority order"));
            }
            last = Some(key);
        }
        Ok(())
    }
}
