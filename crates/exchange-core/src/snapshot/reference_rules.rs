//! Instruments' reference price rules for the auction, (instrument, rule
//! code) by increasing instrument, for the instruments whose rule is not
//! the default. Absent while none has another, so states listed before
//! the rule existed keep their bytes and hash.

use exchange_types::limits::MAX_INSTRUMENTS;
use exchange_types::ReferencePriceRule;

use super::{Reader, SnapshotError, Writer};
use crate::engine::Engine;

/// Tags the section, after the call-market one.
pub(super) const REFERENCE_RULE_SECTION: u8 = 23;

/// A rule's code: its place in [`ReferencePriceRule::ALL`], which only
/// grows at its end.
fn code(rule: ReferencePriceRule) -> u8 {
    ReferencePriceRule::ALL
        .iter()
        .position(|r| *r == rule)
        .and_then(|at| u8::try_from(at).ok())
        .unwrap_or(u8::MAX)
}

pub(super) fn write_section(w: &mut Writer, e: &Engine) {
    let rules: Vec<(u32, ReferencePriceRule)> = (0u32..)
        .zip(&e.instruments)
        .filter(|(_, inst)| inst.reference_price_rule != ReferencePriceRule::default())
        .map(|(index, inst)| (index, inst.reference_price_rule))
        .collect();
    if rules.is_empty() {
        return;
    }
    w.u8(REFERENCE_RULE_SECTION);
    w.u64(rules.len() as u64);
    for (index, rule) in rules {
        w.u32(index);
        w.u8(code(rule));
    }
}

/// Reads the section after its tag: increasing instruments, each with a
/// known rule other than the default.
pub(super) fn read_section(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = Err(SnapshotError::Invalid("reference price rules"));
    let count = r.count(MAX_INSTRUMENTS)?;
    if count == 0 {
        return invalid;
    }
    let mut last = None;
    for _ in 0..count {
        let (index, code) = (r.u32()?, r.u8()?);
        let Some(&rule) = ReferencePriceRule::ALL.get(usize::from(code)) else {
            return invalid;
        };
        if index as usize >= e.instruments.len()
            || rule == ReferencePriceRule::default()
            || last.is_some_and(|l| l >= index)
        {
            return invalid;
        }
        last = Some(index);
        e.instruments[index as usize].reference_price_rule = rule;
    }
    Ok(())
}
