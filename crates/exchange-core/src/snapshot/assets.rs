//! Listed assets and their supply, in listing order (their index is their
//! id everywhere else).

use exchange_types::limits::MAX_ASSETS;

use super::{Reader, SnapshotError, Writer};
use crate::engine::Engine;

pub(super) fn write_assets(w: &mut Writer, e: &Engine) {
    w.u64(e.assets.len() as u64);
    for (code, supply) in e.assets.iter().zip(&e.asset_supply) {
        w.text(code.as_bytes());
        w.u64(*supply);
    }
}

pub(super) fn read_assets(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    for index in 0..r.count(MAX_ASSETS)? {
        let code = r.asset()?;
        e.asset_supply.push(r.u64()?);
        e.assets.push(code);
        if e.asset_by_code.insert(code, index as u32).is_some() {
            return Err(SnapshotError::Invalid("duplicate asset"));
        }
    }
    Ok(())
}
