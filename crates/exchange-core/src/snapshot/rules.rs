//! Instruments' minimum notionals, (instrument, minimum) by increasing
//! instrument. Absent while no instrument has one.

use exchange_types::limits::MAX_INSTRUMENTS;

use super::{Reader, SnapshotError, Writer, RULES_SECTION};
use crate::engine::Engine;

pub(super) fn write_rules(w: &mut Writer, e: &Engine) {
    let minimums: Vec<(u32, u64)> = (0u32..)
        .zip(&e.instruments)
        .filter(|(_, inst)| inst.min_notional != 0)
        .map(|(index, inst)| (index, inst.min_notional))
        .collect();
    if minimums.is_empty() {
        return;
    }
    w.u8(RULES_SECTION);
    w.u64(minimums.len() as u64);
    for (index, min_notional) in minimums {
        w.u32(index);
        w.u64(min_notional);
    }
}

/// Reads the section after its tag, each minimum above zero.
pub(super) fn read_rules(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = Err(SnapshotError::Invalid("instrument rules"));
    let count = r.count(MAX_INSTRUMENTS)?;
    if count == 0 {
        return invalid;
    }
    let mut last = None;
    for _ in 0..count {
        let (index, min_notional) = (r.u32()?, r.u64()?);
        if index as usize >= e.instruments.len() || min_notional == 0 {
            return invalid;
        }
        if last.is_some_and(|l| l >= index) {
            return invalid;
        }
        last = Some(index);
        e.instruments[index as usize].min_notional = min_notional;
    }
    Ok(())
}
