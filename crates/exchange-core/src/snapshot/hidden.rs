//! Instruments' minimum values for hidden orders, (instrument, minimum) by
//! increasing instrument. Absent while no instrument takes hidden orders,
//! so states from before hidden orders keep their bytes and hash. The
//! hidden orders themselves are in the books section, flagged.

use exchange_types::limits::MAX_INSTRUMENTS;

use super::{Reader, SnapshotError, Writer};
use crate::engine::Engine;

/// Tags the section, after the market orders waiting in a call.
pub(super) const HIDDEN_SECTION: u8 = 23;

pub(super) fn write_section(w: &mut Writer, e: &Engine) {
    let minimums: Vec<(u32, u64)> = (0u32..)
        .zip(&e.instruments)
        .filter_map(|(index, inst)| Some((index, inst.hidden_min_notional?)))
        .collect();
    if minimums.is_empty() {
        return;
    }
    w.u8(HIDDEN_SECTION);
    w.u64(minimums.len() as u64);
    for (index, minimum) in minimums {
        w.u32(index);
        w.u64(minimum);
    }
}

/// The instruments the status bytes mark must be exactly those the
/// section gives a minimum, so that neither can be cut off alone.
pub(super) fn check_marked(marked: &[u32], e: &Engine) -> Result<(), SnapshotError> {
    let listed = (0u32..).zip(&e.instruments);
    let with_minimum = listed.filter(|(_, inst)| inst.hidden_min_notional.is_some());
    if !with_minimum
        .map(|(index, _)| index)
        .eq(marked.iter().copied())
    {
        return Err(SnapshotError::Invalid("hidden order minimums"));
    }
    Ok(())
}

/// Reads the section after its tag.
pub(super) fn read_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = Err(SnapshotError::Invalid("hidden order minimums"));
    let count = r.count(MAX_INSTRUMENTS)?;
    if count == 0 {
        return invalid;
    }
    let mut last = None;
    for _ in 0..count {
        let (index, minimum) = (r.u32()?, r.u64()?);
        if index as usize >= e.instruments.len() || last.is_some_and(|l| l >= index) {
            return invalid;
        }
        last = Some(index);
        e.instruments[index as usize].hidden_min_notional = Some(minimum);
    }
    Ok(())
}
