//! Midpoint books: for each instrument that has any, by increasing
//! instrument, its bids then its asks in priority order, each order with
//! its midpoint terms and entry time. Absent while there are none, so
//! other states keep their bytes and hash. The midpoint each book last
//! matched at is a cache, not state, and is not written.

use exchange_types::limits::{MAX_INSTRUMENTS, MAX_MIDPOINT_ORDERS_PER_INSTRUMENT};
use exchange_types::Side;

use super::wire::{read_order, write_order, Reader, Writer};
use super::SnapshotError;
use crate::engine::Engine;
use crate::midpoint::{Entry, Terms};

/// Tags the section, after the market-to-limit orders waiting in a call.
pub(super) const MIDPOINT_SECTION: u8 = 25;

pub(super) fn write_section(w: &mut Writer, e: &Engine) {
    if e.midpoints.is_empty() {
        return;
    }
    w.u8(MIDPOINT_SECTION);
    w.u64(e.midpoints.books().count() as u64);
    for (instrument, book) in e.midpoints.books() {
        w.u32(instrument);
        for side in [Side::Buy, Side::Sell] {
            let entries = book.side(side);
            w.u64(entries.len() as u64);
            for entry in entries {
                write_order(w, e.orders.get(entry.slot), false);
                w.u8(u8::from(entry.terms.unlimited));
                w.opt_u64(entry.terms.min_lots);
                w.u64(entry.time);
            }
        }
    }
}

/// Reads the section after its tag. The audit that ends a restore checks
/// what one entry cannot show alone: priority order, reservations.
pub(super) fn read_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = SnapshotError::Invalid("midpoint order");
    let books = r.count(MAX_INSTRUMENTS)?;
    if books == 0 {
        return Err(invalid);
    }
    let mut last = None;
    for _ in 0..books {
        let instrument = r.u32()?;
        if instrument as usize >= e.instruments.len() || last.is_some_and(|l| l >= instrument) {
            return Err(invalid);
        }
        last = Some(instrument);
        let mut held = 0;
        for side in [Side::Buy, Side::Sell] {
            let count = r.count(MAX_MIDPOINT_ORDERS_PER_INSTRUMENT)?;
            held += count;
            for _ in 0..count {
                read_entry(r, e, instrument, side)?;
            }
        }
        if held == 0 || held > MAX_MIDPOINT_ORDERS_PER_INSTRUMENT {
            return Err(invalid);
        }
    }
    Ok(())
}

fn read_entry(
    r: &mut Reader,
    e: &mut Engine,
    instrument: u32,
    side: Side,
) -> Result<(), SnapshotError> {
    let invalid = SnapshotError::Invalid("midpoint order");
    let (mut order, iceberg) = read_order(r)?;
    let unlimited = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(invalid),
    };
    let min_lots = r.opt_u64()?;
    let time = r.u64()?;
    if iceberg
        || order.is_hidden
        || order.post_only
        || order.instrument != instrument
        || order.side != side
        || order.account as usize >= e.accounts.len()
        || order.filled >= order.qty
        || e.order_by_id.contains_key(&order.id)
        || e.by_client_id
            .contains_key(&(order.account, order.client_order_id))
    {
        return Err(invalid);
    }
    order.is_midpoint = true;
    let slot = e.orders.insert(order);
    e.index_order(slot);
    let terms = Terms {
        unlimited,
        min_lots,
    };
    e.midpoints
        .restore_entry(instrument, side, Entry { slot, terms, time });
    Ok(())
}
