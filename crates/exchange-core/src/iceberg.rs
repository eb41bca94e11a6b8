//! Iceberg (reserve) orders: a resting limit order that shows only a slice
//! of its open quantity on the book.
//!
//! The rules follow Xetra and Eurex (T7): an iceberg takes liquidity with
//! its whole quantity like any order; once it rests, it shows
//! `min(display, open)` lots and hides the rest. Level-2 data (`book`
//! events, views, market data) counts shown lots only. When the shown
//! slice fills, a new slice is shown at the back of the level's queue: the
//! refill loses time priority. An incoming order first trades with every
//! shown lot at a price (refilled slices included, in queue order), then
//! with the hidden quantity of the icebergs at that price in the order
//! they were refilled (their time priority), before it moves to the next
//! price. Each iceberg gives up all of its hidden quantity before the next
//! one trades, hidden lots before its new slice (`Engine::fill` with
//! `deep`): once the taker is done the iceberg shows `min(display, open)`,
//! as Coinbase and TSX publish it. A fill that stops inside a slice leaves
//! the rest of it shown, in its place, until it fills.
//!
//! The shown/hidden split lives in `Order::hidden` (zero for every other
//! order, so the book's arithmetic for them is unchanged); the display
//! size, needed only at a refill, lives in `Engine::iceberg_display`.

use exchange_types::RejectReason;

use crate::engine::Engine;
use crate::instrument::Instrument;

impl Engine {
    /// An iceberg's display quantity (in units, its shape already checked)
    /// in whole lots of `inst`, at least its minimum and less than the
    /// order's `lots`.
    #[inline(always)]
    pub(crate) fn display_lots(
        inst: &Instrument,
        display_units: Option<u64>,
        lots: u64,
    ) -> Result<Option<u64>, RejectReason> {
        let Some(units) = display_units else {
            return Ok(None);
        };
        if units % inst.lot_units != 0 {
            return Err(RejectReason::InvalidDisplayQty);
        }
        let display = units / inst.lot_units;
        if display == 0 || display < inst.min_lots || display >= lots {
            return Err(RejectReason::InvalidDisplayQty);
        }
        Ok(Some(display))
    }

    /// Hides all but one slice of an iceberg that is about to rest (new,
    /// or moved by a replace).
    pub(crate) fn slice_iceberg(&mut self, slot: u32) {
        let order = self.orders.get_mut(slot);
        if let Some(&display) = self.iceberg_display.get(&order.id) {
            order.hidden = order.leaves() - display.min(order.leaves());
        }
    }

    /// Shows a new slice of an iceberg whose shown slice has just filled,
    /// at the back of its level.
    pub(crate) fn refill_iceberg(&mut self, slot: u32) {
        let order = self.orders.get_mut(slot);
        // Only icebergs hide lots, and an iceberg is in the table while it
        // is open; without its size the refill could not be shown.
        let display = *self
            .iceberg_display
            .get(&order.id)
            .expect("an order with hidden lots is an iceberg");
        let shown = display.min(order.hidden);
        order.hidden -= shown;
        let (instrument, side) = (order.instrument, order.side);
        self.books[instrument as usize]
            .side_mut(side)
            .requeue(&mut self.orders, slot, shown);
    }

    /// A replace that keeps priority shrank an iceberg by `lots`: hidden
    /// lots go first. Returns the shown lots it lost.
    pub(crate) fn shrink_hidden_first(&mut self, slot: u32, lots: u64) -> u64 {
        let order = self.orders.get_mut(slot);
        let from_hidden = lots.min(order.hidden);
        order.hidden -= from_hidden;
        lots - from_hidden
    }

    /// Checks the icebergs for `audit`: each one is open, rests, shows at
    /// least one lot and at most its display size, and only icebergs hide.
    pub(crate) fn audit_icebergs(&self) -> Result<(), String> {
        for (&id, &display) in &self.iceberg_display {
            let Some(&slot) = self.order_by_id.get(&id) else {
                return Err(format!("iceberg {id} is not an open order"));
            };
            let order = self.orders.get(slot);
            if display == 0 || order.displayed() == 0 || order.displayed() > display {
                return Err(format!(
                    "iceberg {id} shows {} of display {display}",
                    order.displayed()
                ));
            }
        }
        Ok(())
    }
}
