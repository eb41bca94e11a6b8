//! Icebergs: display size and hidden lots by increasing order id. Absent
//! while no iceberg is open.

use exchange_types::limits::MAX_OPEN_ORDERS;

use super::{Reader, SnapshotError, Writer, ICEBERG_SECTION};
use crate::engine::Engine;

pub(super) fn write_icebergs(w: &mut Writer, e: &Engine) {
    if e.iceberg_display.is_empty() {
        return;
    }
    w.u8(ICEBERG_SECTION);
    w.u64(e.iceberg_display.len() as u64);
    for (&id, &display) in &e.iceberg_display {
        // Every iceberg in the table is open (`audit` checks).
        let hidden = e
            .order_by_id
            .get(&id)
            .map_or(0, |&slot| e.orders.get(slot).hidden);
        w.u64(id);
        w.u64(display);
        w.u64(hidden);
    }
}

/// Reads the section after its tag: each an open order that shows at
/// least one lot and at most its display size.
pub(super) fn read_icebergs(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = Err(SnapshotError::Invalid("iceberg"));
    let count = r.count(MAX_OPEN_ORDERS)?;
    if count == 0 {
        return invalid;
    }
    let mut last = None;
    for _ in 0..count {
        let (id, display, hidden) = (r.u64()?, r.u64()?, r.u64()?);
        if last.is_some_and(|l| l >= id) {
            return invalid;
        }
        last = Some(id);
        let Some(&slot) = e.order_by_id.get(&id) else {
            return invalid;
        };
        let order = e.orders.get_mut(slot);
        let leaves = order.leaves();
        if display == 0 || hidden >= leaves || leaves - hidden > display {
            return invalid;
        }
        order.hidden = hidden;
        let (instrument, side, price) = (order.instrument, order.side, order.price);
        // A damaged snapshot may name an order with no level at its price,
        // or hide more than the level holds: refused, not a panic.
        let reduced = e.books[instrument as usize]
            .side_mut(side)
            .try_reduce(price, hidden);
        if reduced.is_none() {
            return invalid;
        }
        e.iceberg_display.insert(id, display);
    }
    Ok(())
}

/// The icebergs the books' flags mark must be exactly those the icebergs
/// section lists, so that neither can be cut off alone.
pub(super) fn check_marked(mut marked: Vec<u64>, e: &Engine) -> Result<(), SnapshotError> {
    marked.sort_unstable();
    if !marked.iter().copied().eq(e.iceberg_display.keys().copied()) {
        return Err(SnapshotError::Invalid("icebergs"));
    }
    Ok(())
}
