//! The call-market section of a snapshot: market orders waiting for a
//! call's uncrossing.

use super::wire::{read_order, write_order, Reader, Writer};
use super::SnapshotError;
use crate::engine::Engine;

/// Tags the snapshot section of market orders in a call, after the
/// volatility section; absent while there are none, so other states keep
/// their bytes and hash.
pub(crate) const CALL_MARKET_SECTION: u8 = 22;

pub(crate) fn write_section(w: &mut Writer, e: &Engine) {
    if e.call_markets.is_empty() {
        return;
    }
    w.u8(CALL_MARKET_SECTION);
    w.u64(e.call_markets.len() as u64);
    for &slot in e.call_markets.values() {
        write_order(w, e.orders.get(slot), false);
    }
}

/// Reads the section after its tag.
pub(crate) fn read_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use SnapshotError;
    let count = r.count(exchange_types::limits::MAX_OPEN_ORDERS)?;
    if count == 0 {
        return Err(SnapshotError::Invalid("empty call market section"));
    }
    let mut last = None;
    for _ in 0..count {
        let (mut order, iceberg) = read_order(r)?;
        if iceberg
            || order.account as usize >= e.accounts.len()
            || order.instrument as usize >= e.instruments.len()
            || order.filled >= order.qty
            || e.order_by_id.contains_key(&order.id)
            || e.by_client_id
                .contains_key(&(order.account, order.client_order_id))
        {
            return Err(SnapshotError::Invalid("call market order"));
        }
        // Written in (instrument, id) order: anything else was not written
        // by this engine.
        let key = (order.instrument, order.id);
        if last.is_some_and(|l| l >= key) {
            return Err(SnapshotError::Invalid("call market order"));
        }
        last = Some(key);
        order.is_market = true;
        let slot = e.orders.insert(order);
        e.hold_call_market(slot);
    }
    Ok(())
}

/// Tags the section naming the waiting market orders entered as
/// market-to-limit, after the hidden section; absent while there are none.
pub(crate) const CALL_TO_LIMIT_SECTION: u8 = 24;

pub(crate) fn write_to_limit_section(w: &mut Writer, e: &Engine) {
    if e.call_to_limit.is_empty() {
        return;
    }
    w.u8(CALL_TO_LIMIT_SECTION);
    w.u64(e.call_to_limit.len() as u64);
    for &id in &e.call_to_limit {
        w.u64(id);
    }
}

/// Reads the section after its tag: each id names a waiting market order
/// of the call section, in increasing order.
pub(crate) fn read_to_limit_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let count = r.count(exchange_types::limits::MAX_OPEN_ORDERS)?;
    if count == 0 {
        return Err(SnapshotError::Invalid("empty market-to-limit section"));
    }
    for _ in 0..count {
        let id = r.u64()?;
        let waiting = e.order_by_id.get(&id).is_some_and(|&slot| {
            let o = e.orders.get(slot);
            e.call_markets.get(&(o.instrument, id)) == Some(&slot)
        });
        if !waiting || e.call_to_limit.last().is_some_and(|&last| last >= id) {
            return Err(SnapshotError::Invalid("market-to-limit order"));
        }
        e.call_to_limit.insert(id);
    }
    Ok(())
}
