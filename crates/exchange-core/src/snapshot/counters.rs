//! The engine's clocks and counters: sequence, time, next order and trade
//! ids.

use super::{Reader, SnapshotError, Writer};
use crate::engine::Engine;

pub(super) fn write_counters(w: &mut Writer, e: &Engine) {
    w.u64(e.seq);
    w.u64(e.now);
    w.u64(e.next_order_id);
    w.u64(e.next_trade_id);
}

pub(super) fn read_counters(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    e.seq = r.u64()?;
    e.now = r.u64()?;
    e.next_order_id = r.u64()?;
    e.next_trade_id = r.u64()?;
    Ok(())
}
