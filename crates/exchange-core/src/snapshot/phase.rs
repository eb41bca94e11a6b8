//! The snapshot section of trading phases: phases other than what the
//! status implies, published indicative uncrossings, and good-till-date
//! expiries. Absent while every instrument trades continuously with no
//! expiry pending, so such a state keeps the bytes (and the hash) it had
//! before phases existed.

use exchange_types::{Phase, TradingStatus};

use super::{Reader, SnapshotError, Writer};
use crate::auction::Uncross;
use crate::engine::Engine;
use crate::sessions::is_call;
use crate::volatility::bands::Bands;

/// Tags the section; far from the small tags so that sections added
/// alongside it do not collide.
pub(super) const PHASE_SECTION: u8 = 20;

/// Tags the volatility bands, written right after the phase section.
pub(super) const VOLATILITY_SECTION: u8 = 21;

/// What `status` alone says the phase is (all a snapshot without this
/// section can say).
fn implied(status: TradingStatus) -> Phase {
    match status {
        TradingStatus::Halted => Phase::Halted,
        TradingStatus::Trading => Phase::Continuous,
        TradingStatus::Delisted => Phase::Closed,
    }
}

fn phase_code(phase: Phase) -> u8 {
    Phase::ALL
        .iter()
        .position(|&p| p == phase)
        .map_or(u8::MAX, |i| i as u8)
}

pub(super) fn write(w: &mut Writer, e: &Engine) {
    let entries: Vec<(u32, Phase, Option<Uncross>)> = (0u32..)
        .zip(&e.instruments)
        .filter(|(_, inst)| inst.phase != implied(inst.status) || inst.indicative.is_some())
        .map(|(index, inst)| (index, inst.phase, inst.indicative))
        .collect();
    if entries.is_empty() && !e.sessions.has_expiries() {
        return;
    }
    w.u8(PHASE_SECTION);
    w.u64(entries.len() as u64);
    for (index, phase, indicative) in entries {
        w.u32(index);
        w.u8(phase_code(phase));
        match indicative {
            None => w.u8(0),
            Some(u) => {
                w.u8(1);
                w.u64(u.price);
                w.u64(u.volume);
                let bits = u.surplus as u128;
                w.u64((bits >> 64) as u64);
                w.u64(bits as u64);
            }
        }
    }
    w.u64(e.sessions.expiry_count() as u64);
    for (ts, id) in e.sessions.expiries() {
        w.u64(ts);
        w.u64(id);
    }
}

/// Reads the section if it is next, then derives what is not written.
pub(super) fn read(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    for inst in &mut e.instruments {
        inst.phase = implied(inst.status);
    }
    if r.next_is(PHASE_SECTION) {
        let invalid = || SnapshotError::Invalid("phase");
        let mut last = None;
        for _ in 0..r.count(e.instruments.len())? {
            let index = next_instrument(r, e, &mut last, "phase")?;
            let phase = *Phase::ALL.get(usize::from(r.u8()?)).ok_or_else(invalid)?;
            let indicative = match r.u8()? {
                0 => None,
                1 => {
                    let price = r.u64()?;
                    let volume = r.u64()?;
                    let bits = (u128::from(r.u64()?) << 64) | u128::from(r.u64()?);
                    Some(Uncross {
                        price,
                        volume,
                        surplus: bits as i128,
                    })
                }
                _ => return Err(invalid()),
            };
            let inst = &mut e.instruments[index as usize];
            // The status follows the phase; a halted status with another
            // phase is damage.
            if (inst.status == TradingStatus::Halted) != (phase == Phase::Halted) {
                return Err(invalid());
            }
            inst.phase = phase;
            inst.indicative = indicative;
        }
        let mut last = None;
        for _ in 0..r.count(usize::MAX)? {
            let entry = (r.u64()?, r.u64()?);
            if last.is_some_and(|l| l >= entry) {
                return Err(invalid());
            }
            last = Some(entry);
            e.sessions.add_expiry(entry.0, entry.1);
        }
    }
    let calls = e.instruments.iter().filter(|i| is_call(i.phase)).count() as u32;
    e.sessions.set_calls(calls);
    e.sessions.refresh_next();
    Ok(())
}

fn write_opt(w: &mut Writer, v: Option<u64>) {
    match v {
        None => w.u8(0),
        Some(v) => {
            w.u8(1);
            w.u64(v);
        }
    }
}

fn read_opt(r: &mut Reader) -> Result<Option<u64>, SnapshotError> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(r.u64()?)),
        _ => Err(SnapshotError::Invalid("volatility")),
    }
}

/// The bands and running interruptions; absent while no instrument has
/// either, so such a state keeps the bytes it had before bands existed.
pub(super) fn write_volatility(w: &mut Writer, e: &Engine) {
    if !e.volatility.has_bands() {
        return;
    }
    w.u8(VOLATILITY_SECTION);
    w.u64(e.volatility.len() as u64);
    for (index, b) in e.volatility.iter() {
        w.u32(index);
        w.u32(b.static_bps);
        w.u32(b.dynamic_bps);
        w.u64(b.auction_ns);
        write_opt(w, b.static_ref);
        write_opt(w, b.end);
        w.u8(u8::from(b.extended));
    }
}

/// Reads the bands if they are next; `audit` checks them against the
/// phases once the whole state is read.
pub(super) fn read_volatility(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    if r.next_is(VOLATILITY_SECTION) {
        let invalid = || SnapshotError::Invalid("volatility");
        let mut last = None;
        for _ in 0..r.count(e.instruments.len())? {
            let index = next_instrument(r, e, &mut last, "volatility")?;
            let static_bps = r.u32()?;
            let dynamic_bps = r.u32()?;
            let auction_ns = r.u64()?;
            let static_ref = read_opt(r)?;
            let end = read_opt(r)?;
            let extended = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(invalid()),
            };
            e.volatility.restore(
                index,
                Bands {
                    static_bps,
                    dynamic_bps,
                    auction_ns,
                    static_ref,
                    end,
                    extended,
                },
            );
        }
    }
    let before = e.volatility.len();
    e.volatility.refresh();
    // An entry `refresh` would drop was never written by a live engine.
    if e.volatility.len() != before {
        return Err(SnapshotError::Invalid("volatility"));
    }
    Ok(())
}

/// The next instrument index of a per-instrument section: listed, and
/// after the one before (`last`), so that no instrument appears twice.
fn next_instrument(
    r: &mut Reader,
    e: &Engine,
    last: &mut Option<u32>,
    section: &'static str,
) -> Result<u32, SnapshotError> {
    let index = r.u32()?;
    if index as usize >= e.instruments.len() || last.is_some_and(|l| l >= index) {
        return Err(SnapshotError::Invalid(section));
    }
    *last = Some(index);
    Ok(index)
}
