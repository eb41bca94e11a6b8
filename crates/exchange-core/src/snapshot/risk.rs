//! Accounts' risk controls: limits, suspension and market-maker
//! protection. Absent when no account has any, so such a state keeps the
//! bytes (and the hash) it had before they existed.

use exchange_types::limits::{
    MAX_ACCOUNTS, MAX_MMP_CONFIGS, MAX_MMP_COUNT, MAX_PRICE_BAND_BPS, MAX_RISK_OPEN_ORDERS,
};

use super::{Reader, SnapshotError, Writer, RISK_SECTION};
use crate::controls::{AccountRisk, Limits, Mmp};
use crate::engine::Engine;

fn opt_u32(v: Option<u32>) -> Option<u64> {
    v.map(u64::from)
}

pub(super) fn write_risk(w: &mut Writer, e: &Engine) {
    let with_risk: Vec<_> = e
        .accounts
        .iter()
        .enumerate()
        .filter_map(|(index, a)| Some((index as u32, a.risk()?)))
        .collect();
    if with_risk.is_empty() {
        return;
    }
    w.u8(RISK_SECTION);
    w.u64(with_risk.len() as u64);
    for (index, risk) in with_risk {
        w.u32(index);
        let l = &risk.limits;
        w.opt_u64(l.max_qty);
        w.opt_u64(l.max_notional);
        w.opt_u64(opt_u32(l.max_open_orders));
        w.opt_u64(opt_u32(l.band_bps));
        w.u8(u8::from(risk.suspended));
        w.u64(risk.mmp.len() as u64);
        for m in &risk.mmp {
            w.u32(m.instrument);
            w.u64(m.window_ns);
            w.opt_u64(m.max_qty);
            w.opt_u64(opt_u32(m.max_count));
            w.u64(m.window_start);
            w.u64(m.filled);
            w.u32(m.fills);
            w.u8(u8::from(m.tripped));
        }
    }
}

fn read_opt_u32(r: &mut Reader, max: u32) -> Result<Option<u32>, SnapshotError> {
    match r.opt_u64()? {
        None => Ok(None),
        Some(v) => u32::try_from(v)
            .ok()
            .filter(|&v| v >= 1 && v <= max)
            .map(Some)
            .ok_or(SnapshotError::Invalid("risk limit")),
    }
}

fn read_bool(r: &mut Reader) -> Result<bool, SnapshotError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(SnapshotError::Invalid("flag")),
    }
}

fn positive(v: Option<u64>) -> bool {
    v.is_none_or(|v| v > 0)
}

/// Reads the section after its tag; refuses anything the engine could not
/// have reached (so the restored state is canonical too).
pub(super) fn read_risk(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    let invalid = |what| Err(SnapshotError::Invalid(what));
    let accounts = r.count(MAX_ACCOUNTS)?;
    if accounts == 0 {
        return invalid("empty risk section");
    }
    let mut last_account = None;
    for _ in 0..accounts {
        let index = r.u32()?;
        if index as usize >= e.accounts.len() || last_account.is_some_and(|l| l >= index) {
            return invalid("risk account");
        }
        last_account = Some(index);
        let limits = Limits {
            max_qty: r.opt_u64()?,
            max_notional: r.opt_u64()?,
            max_open_orders: read_opt_u32(r, MAX_RISK_OPEN_ORDERS)?,
            band_bps: read_opt_u32(r, MAX_PRICE_BAND_BPS)?,
        };
        if !positive(limits.max_qty) || !positive(limits.max_notional) {
            return invalid("risk limit");
        }
        let suspended = read_bool(r)?;
        let mmp = read_mmp(r, e)?;
        e.mmp_configs += mmp.len();
        if e.mmp_configs > MAX_MMP_CONFIGS {
            return invalid("market-maker protection count");
        }
        let risk = AccountRisk {
            limits,
            suspended,
            mmp,
        };
        if risk.is_empty() {
            return invalid("empty risk controls");
        }
        *e.accounts.controls_mut(index) = Some(Box::new(risk));
    }
    Ok(())
}

/// One account's market-maker protection, by increasing instrument.
fn read_mmp(r: &mut Reader, e: &Engine) -> Result<Vec<Mmp>, SnapshotError> {
    let mut mmp: Vec<Mmp> = Vec::new();
    for _ in 0..r.count(e.instruments.len())? {
        let entry = Mmp {
            instrument: r.u32()?,
            window_ns: r.u64()?,
            max_qty: r.opt_u64()?,
            max_count: read_opt_u32(r, MAX_MMP_COUNT)?,
            window_start: r.u64()?,
            filled: r.u64()?,
            fills: r.u32()?,
            tripped: read_bool(r)?,
        };
        let ordered = mmp.last().is_none_or(|m| m.instrument < entry.instrument);
        if !ordered
            || entry.instrument as usize >= e.instruments.len()
            || entry.window_ns == 0
            || !positive(entry.max_qty)
            || (entry.max_qty.is_none() && entry.max_count.is_none())
            || (entry.fills == 0 && (entry.filled != 0 || entry.window_start != 0))
        {
            return Err(SnapshotError::Invalid("market-maker protection"));
        }
        mmp.push(entry);
    }
    Ok(mmp)
}
