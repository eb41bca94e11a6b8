//! Resting orders, book by book, bids then asks, best level first and in
//! time priority within a level, then the hidden bids and asks likewise:
//! the order the books themselves keep, so that pool slots never reach the
//! bytes.

use std::collections::BTreeMap;

use exchange_types::limits::MAX_OPEN_ORDERS;

use super::wire::side_code;
use super::{read_order, write_order, Reader, SnapshotError, Writer};
use crate::engine::Engine;
use crate::orders::NIL;

pub(super) fn write_books(w: &mut Writer, e: &Engine) {
    // Untriggered stops, market orders in a call and midpoint orders are
    // open orders on no book: they have sections of their own.
    let off_book = e.stops.untriggered_count() + e.call_markets.len() + e.midpoints.order_count();
    w.u64((e.orders.len() - off_book) as u64);
    for book in &e.books {
        // Hidden orders after the displayed ones, in their own sides'
        // order; a book without any writes what it always did.
        for side in book.all_sides() {
            for level in side.levels_best_first() {
                let mut slot = level.head;
                while slot != NIL {
                    let o = e.orders.get(slot);
                    // Bit 1 of the flags marks an iceberg, so a snapshot
                    // cut before the icebergs section cannot pass for a
                    // whole one.
                    write_order(w, o, e.iceberg_display.contains_key(&o.id));
                    slot = e.orders.link(slot).next;
                }
            }
        }
    }
}

/// Rebuilds the books; returns the ids whose flags mark them icebergs, for
/// the icebergs section to match once everything is read.
pub(super) fn read_books(r: &mut Reader, e: &mut Engine) -> Result<Vec<u64>, SnapshotError> {
    let mut level_totals = BTreeMap::new();
    let mut icebergs_marked: Vec<u64> = Vec::new();
    for _ in 0..r.count(MAX_OPEN_ORDERS)? {
        let (order, iceberg) = read_order(r)?;
        let (id, account, instrument, side, hidden) = (
            order.id,
            order.account,
            order.instrument,
            order.side,
            order.is_hidden,
        );
        if iceberg {
            icebergs_marked.push(id);
        }
        if account as usize >= e.accounts.len()
            || instrument as usize >= e.instruments.len()
            || order.filled >= order.qty
            || e.order_by_id.contains_key(&id)
        {
            return Err(SnapshotError::Invalid("order"));
        }
        // Indexing asserts both keys are free (a clash there is a bug of
        // the engine); here it is damage to refuse.
        if e.by_client_id
            .contains_key(&(account, order.client_order_id))
        {
            return Err(SnapshotError::Invalid("duplicate client order id"));
        }
        // A level's aggregate must fit, or the book itself would
        // overflow while being rebuilt.
        let leaves = order.qty - order.filled;
        let level_total = level_totals
            .entry((instrument, side_code(side), hidden, order.price))
            .or_insert(0u64);
        *level_total = level_total
            .checked_add(leaves)
            .ok_or(SnapshotError::Invalid("level overflows"))?;
        let slot = e.orders.insert(order);
        e.books[instrument as usize]
            .resting_side_mut(side, hidden)
            .push_back(&mut e.orders, slot);
        e.index_order(slot);
    }
    Ok(icebergs_marked)
}
