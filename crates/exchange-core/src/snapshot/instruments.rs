//! Listed instruments in listing order, each with an empty book to be
//! filled by the resting orders' section.

use exchange_types::limits::MAX_INSTRUMENTS;
use exchange_types::{ReferencePriceRule, TradingStatus};

use super::{Reader, SnapshotError, Writer};
use crate::book::Book;
use crate::engine::Engine;
use crate::instrument::Instrument;

fn status_code(status: TradingStatus) -> u8 {
    match status {
        TradingStatus::Trading => 0,
        TradingStatus::Halted => 1,
        TradingStatus::Delisted => 2,
    }
}

/// Reference price rules by the code the status byte's high half holds:
/// the one a listing naming none gets is 0, so states listed before the
/// setting existed keep their bytes and hash, and restore to the rule they
/// ran under. Only ever grows at its end.
const RULES: [ReferencePriceRule; 2] = [
    ReferencePriceRule::UNNAMED,
    ReferencePriceRule::FOR_NEW_LISTINGS,
];

fn rule_code(rule: ReferencePriceRule) -> u8 {
    RULES
        .iter()
        .position(|r| *r == rule)
        .and_then(|at| u8::try_from(at).ok())
        .unwrap_or(u8::MAX)
}

pub(super) fn write_instruments(w: &mut Writer, e: &Engine) {
    w.u64(e.instruments.len() as u64);
    for inst in &e.instruments {
        w.text(inst.symbol.as_bytes());
        w.u32(inst.base);
        w.u32(inst.quote);
        w.u64(inst.tick_units);
        w.u64(inst.lot_units);
        w.u64(inst.notional_per_tick_lot);
        w.u64(inst.min_lots);
        w.u64(inst.max_lots);
        w.u32(inst.collar_bps);
        w.opt_u64(inst.reference_ticks);
        w.i32(inst.maker_fee_bps);
        w.i32(inst.taker_fee_bps);
        // The rule rides in the status byte rather than a section of its
        // own: an optional section at the end could be cut off unnoticed.
        // So does a mark (bit 3) for a minimum of hidden orders, whose
        // value is in its own section, checked against the marks.
        let hidden = u8::from(inst.hidden_min_notional.is_some()) << 3;
        w.u8(status_code(inst.status) | hidden | rule_code(inst.reference_price_rule) << 4);
    }
}

/// Reads the instruments; returns those whose status byte marks a
/// minimum for hidden orders, for the hidden section to match.
pub(super) fn read_instruments(r: &mut Reader, e: &mut Engine) -> Result<Vec<u32>, SnapshotError> {
    let mut hidden_marked = Vec::new();
    for index in 0..r.count(MAX_INSTRUMENTS)? {
        let (inst, hidden) = read_instrument(r)?;
        if hidden {
            hidden_marked.push(index as u32);
        }
        if inst.base as usize >= e.assets.len()
            || inst.quote as usize >= e.assets.len()
            || !inst.is_consistent()
        {
            return Err(SnapshotError::Invalid("instrument"));
        }
        let symbol = inst.symbol;
        e.instruments.push(inst);
        e.books.push(Book::new());
        if e.instrument_by_symbol
            .insert(symbol, index as u32)
            .is_some()
        {
            return Err(SnapshotError::Invalid("duplicate symbol"));
        }
    }
    Ok(hidden_marked)
}

fn read_instrument(r: &mut Reader) -> Result<(Instrument, bool), SnapshotError> {
    let mut inst = Instrument {
        symbol: r.symbol()?,
        base: r.u32()?,
        quote: r.u32()?,
        tick_units: r.u64()?,
        lot_units: r.u64()?,
        notional_per_tick_lot: r.u64()?,
        min_lots: r.u64()?,
        max_lots: r.u64()?,
        collar_bps: r.u32()?,
        reference_ticks: r.opt_u64()?,
        maker_fee_bps: r.i32()?,
        taker_fee_bps: r.i32()?,
        // Both set from the byte that follows.
        status: TradingStatus::Trading,
        reference_price_rule: ReferencePriceRule::UNNAMED,
        // Set from the status, or the phase section, once read.
        phase: exchange_types::Phase::Continuous,
        indicative: None,
        min_notional: 0,
        // Set from the hidden orders' section, if any.
        hidden_min_notional: None,
    };
    let status_and_rule = r.u8()?;
    inst.status = match status_and_rule & 0x07 {
        0 => TradingStatus::Trading,
        1 => TradingStatus::Halted,
        2 => TradingStatus::Delisted,
        _ => return Err(SnapshotError::Invalid("instrument status")),
    };
    inst.reference_price_rule = *RULES
        .get(usize::from(status_and_rule >> 4))
        .ok_or(SnapshotError::Invalid("reference price rule"))?;
    Ok((inst, status_and_rule & 0x08 != 0))
}
