//! Recently closed orders' client ids, so that a duplicate client id is
//! still refused after a restore.

use exchange_types::limits::RECENTLY_CLOSED_CAPACITY;

use super::{Reader, SnapshotError, Writer};
use crate::engine::Engine;

pub(super) fn write_closed(w: &mut Writer, e: &Engine) {
    let closed: Vec<_> = e.closed.entries().collect();
    w.u64(closed.len() as u64);
    for ((account, coid), id) in closed {
        w.u32(*account);
        w.text(coid.as_bytes());
        w.u64(id);
    }
}

pub(super) fn read_closed(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    for _ in 0..r.count(RECENTLY_CLOSED_CAPACITY)? {
        let account = r.u32()?;
        let coid = r.client_order_id()?;
        let id = r.u64()?;
        e.closed.record(account, coid, id);
    }
    Ok(())
}
