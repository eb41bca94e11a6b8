//! Replacing an untriggered stop's stop price.
//!
//! A stop that has not triggered has no place on a book, only one in its
//! instrument's stop table, keyed by (stop price, order id); a new stop
//! price moves it there and keeps its order id, as Nasdaq's and Binance's
//! amend of a stop order keeps the order. The new stop is held to what a
//! new stop would be: on the tick, not already reached by the last price
//! (so a replace never triggers), and not given to a trailing stop, whose
//! stop follows the last price. A stop market buy reserves for its
//! protection price, the collar band above its stop, so that price and the
//! reservation move with the stop.

use exchange_types::{Dec, RejectReason, Side};

use super::book::StopInfo;
use crate::engine::Engine;
use crate::instrument::Instrument;

/// Where a stop market or market-if-touched buy trades up to once
/// triggered, and what it reserves for: `stop` plus the instrument's
/// collar width at `stop`. `None` for any other stop (a sell holds its
/// quantity, a stop-limit its limit).
pub(crate) fn protection(
    inst: &Instrument,
    market: bool,
    side: Side,
    stop: u64,
) -> Result<Option<u64>, RejectReason> {
    match (market, side) {
        (true, Side::Buy) => {
            if inst.collar_bps == 0 {
                return Err(RejectReason::StopMarketBuyNeedsCollar);
            }
            let width = u128::from(stop) * u128::from(inst.collar_bps) / 10_000;
            let width = u64::try_from(width).map_err(|_| RejectReason::AmountOverflow)?;
            stop.checked_add(width)
                .map(Some)
                .ok_or(RejectReason::AmountOverflow)
        }
        _ => Ok(None),
    }
}

/// A checked new stop price.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NewStop {
    pub stop: u64,
    /// A stop market buy's new protection price (its order price).
    pub price: Option<u64>,
}

impl Engine {
    /// Checks a replace's `stop_price` for the order in `slot`. `Ok(None)`
    /// when none was given or it is the stop price the order has, so that
    /// it alone is nothing to replace.
    pub(crate) fn check_replace_stop(
        &self,
        slot: u32,
        stop_price: Option<Dec>,
    ) -> Result<Option<NewStop>, RejectReason> {
        let Some(stop_price) = stop_price else {
            return Ok(None);
        };
        let order = self.orders.get(slot);
        let info = match self.stops.info.get(&order.id) {
            Some(info) if order.stop => info,
            // A limit order, or a stop that has triggered and is one now.
            _ => return Err(RejectReason::StopPriceNotAllowed),
        };
        if info.trailing.is_some() {
            return Err(RejectReason::InvalidTrailing);
        }
        let inst = &self.instruments[order.instrument as usize];
        let stop = inst
            .price_to_ticks(stop_price)
            .map_err(|_| RejectReason::StopPriceNotOnTick)?;
        if stop == info.stop {
            return Ok(None);
        }
        let moved = StopInfo { stop, ..*info };
        if inst.reference_ticks.is_some_and(|last| moved.reached(last)) {
            return Err(RejectReason::StopWouldTriggerImmediately);
        }
        let price = protection(inst, info.market, info.side, stop)?;
        Ok(Some(NewStop { stop, price }))
    }

    /// Refiles the untriggered stop `id` under a new stop price.
    pub(crate) fn move_stop(&mut self, id: exchange_types::OrderId, stop: u64) {
        let info = self.stops.info[&id];
        let book = self.stop_book_mut(info.instrument);
        book.remove(id, &info);
        let moved = StopInfo { stop, ..info };
        book.insert(id, &moved);
        self.stops.info.insert(id, moved);
    }

    /// The stop price a `replaced` event reports for the order in `slot`:
    /// its stop's, if it is still an untriggered stop.
    pub(crate) fn reported_stop(&self, slot: u32) -> Option<u64> {
        let order = self.orders.get(slot);
        if !order.stop {
            return None;
        }
        let inst = &self.instruments[order.instrument as usize];
        self.stops
            .info
            .get(&order.id)
            .map(|info| inst.price_units(info.stop))
    }
}
