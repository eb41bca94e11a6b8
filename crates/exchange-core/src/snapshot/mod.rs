//! Snapshots: the whole state as canonical bytes, and back.
//!
//! The encoding is canonical: two engines in the same logical state give
//! the same bytes, whatever their history, because only logical content is
//! written (orders in book order, never pool slots or hash-map order). The
//! state hash is BLAKE3 over these bytes, so replicas compare state by
//! comparing 32 bytes, and `restore(snapshot(e))` continues exactly as `e`.

use exchange_types::TradingStatus;
use thiserror::Error;

use crate::accounts::{Account, Balance};
use crate::book::Book;
use crate::engine::Engine;
use crate::instrument::Instrument;
use crate::orders::NIL;

mod phase;
mod wire;

use wire::side_code;
pub(crate) use wire::{read_order, write_order, Reader, Writer};

const MAGIC: &[u8; 8] = b"EXSNAP01";
/// Tags the optional section of accounts' risk controls at the end.
const RISK_SECTION: u8 = 1;
/// Tags the optional section of sub-account links, after the risk one.
const FAMILY_SECTION: u8 = 2;
/// Tags the optional section of untriggered stops and one-cancels-other
/// pairs, after the sub-account one.
const STOP_SECTION: u8 = 7;
/// Tags the optional section of icebergs (display size and hidden lots by
/// order id), after the others.
const ICEBERG_SECTION: u8 = 9;

/// Reads the icebergs section: by increasing order id, each an open order
/// that shows at least one lot and at most its display size.
fn read_icebergs(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use exchange_types::limits::MAX_OPEN_ORDERS;
    let invalid = Err(SnapshotError::Invalid("iceberg"));
    let count = r.count(MAX_OPEN_ORDERS)?;
    if count == 0 {
        return invalid;
    }
    let mut last = None;
    for _ in 0..count {
        let (id, display, hidden) = (r.u64()?, r.u64()?, r.u64()?);
        if last.is_some_and(|l| l >= id) {
            return invalid;
        }
        last = Some(id);
        let Some(&slot) = e.order_by_id.get(&id) else {
            return invalid;
        };
        let order = e.orders.get_mut(slot);
        let leaves = order.leaves();
        if display == 0 || hidden >= leaves || leaves - hidden > display {
            return invalid;
        }
        order.hidden = hidden;
        let (instrument, side, price) = (order.instrument, order.side, order.price);
        e.books[instrument as usize]
            .side_mut(side)
            .reduce(price, hidden);
        e.iceberg_display.insert(id, display);
    }
    Ok(())
}

/// Tags the optional section of instruments' minimum notionals, after
/// the family one; absent while no instrument has one.
const RULES_SECTION: u8 = 10;

fn status_code(status: TradingStatus) -> u8 {
    match status {
        TradingStatus::Trading => 0,
        TradingStatus::Halted => 1,
        TradingStatus::Delisted => 2,
    }
}

/// Reads (instrument, minimum notional) by increasing instrument, each
/// minimum above zero.
fn read_rules(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use exchange_types::limits::MAX_INSTRUMENTS;
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

/// Reads the sub-account links: (sub, owner) by increasing sub, one level
/// deep, each owner within its limit.
fn read_family(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use exchange_types::limits::{MAX_ACCOUNTS, MAX_SUB_ACCOUNTS};
    let invalid = Err(SnapshotError::Invalid("sub-account"));
    let count = r.count(MAX_ACCOUNTS)?;
    if count == 0 {
        return invalid;
    }
    let len = e.accounts.list.len() as u32;
    let mut last = None;
    for _ in 0..count {
        let (sub, owner) = (r.u32()?, r.u32()?);
        if sub >= len || owner >= len || sub == owner || sub == 0 || owner == 0 {
            return invalid;
        }
        if last.is_some_and(|l| l >= sub) {
            return invalid;
        }
        last = Some(sub);
        e.accounts.list[sub as usize].owner = owner;
        e.accounts.list[owner as usize].sub_accounts += 1;
    }
    for account in &e.accounts.list {
        let nested = account.owner != NIL
            && (account.sub_accounts > 0 || e.accounts.list[account.owner as usize].owner != NIL);
        if nested || account.sub_accounts > MAX_SUB_ACCOUNTS {
            return invalid;
        }
    }
    Ok(())
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    #[error("not a snapshot (bad magic)")]
    BadMagic,
    #[error("snapshot ends early at byte {0}")]
    Truncated(usize),
    #[error("snapshot has {0} trailing bytes")]
    TrailingBytes(usize),
    #[error("snapshot is inconsistent: {0}")]
    Invalid(&'static str),
    #[error("snapshot breaks an invariant: {0}")]
    Inconsistent(String),
}

fn opt_u32(v: Option<u32>) -> Option<u64> {
    v.map(u64::from)
}

fn write_risk(w: &mut Writer, e: &Engine) {
    let with_risk: Vec<_> = e
        .accounts
        .list
        .iter()
        .enumerate()
        .filter_map(|(index, a)| Some((index as u32, a.risk.as_deref()?)))
        .collect();
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

/// Reads the risk section; refuses anything the engine could not have
/// reached (so the restored state is canonical too).
fn read_risk(r: &mut Reader, e: &mut Engine) -> Result<(), SnapshotError> {
    use crate::risk::{AccountRisk, Limits, Mmp};
    use exchange_types::limits::{
        MAX_ACCOUNTS, MAX_MMP_CONFIGS, MAX_MMP_COUNT, MAX_PRICE_BAND_BPS, MAX_RISK_OPEN_ORDERS,
    };
    let invalid = |what| Err(SnapshotError::Invalid(what));
    let accounts = r.count(MAX_ACCOUNTS)?;
    if accounts == 0 {
        return invalid("empty risk section");
    }
    let mut last_account = None;
    for _ in 0..accounts {
        let index = r.u32()?;
        if index as usize >= e.accounts.list.len() || last_account.is_some_and(|l| l >= index) {
            return invalid("risk account");
        }
        last_account = Some(index);
        let positive = |v: Option<u64>| v.is_none_or(|v| v > 0);
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
                return invalid("market-maker protection");
            }
            mmp.push(entry);
        }
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
        e.accounts.list[index as usize].risk = Some(Box::new(risk));
    }
    Ok(())
}

impl Engine {
    /// The whole state as canonical bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(4096 + self.orders.len() * 96));
        w.0.extend_from_slice(MAGIC);
        w.u64(self.seq);
        w.u64(self.now);
        w.u64(self.next_order_id);
        w.u64(self.next_trade_id);
        w.u64(self.assets.len() as u64);
        for (code, supply) in self.assets.iter().zip(&self.asset_supply) {
            w.text(code.as_bytes());
            w.u64(*supply);
        }
        w.u64(self.instruments.len() as u64);
        for inst in &self.instruments {
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
            w.u8(status_code(inst.status));
        }
        w.u64(self.accounts.list.len() as u64);
        for acct in &self.accounts.list {
            w.u64(acct.id);
            w.u64(acct.balances.len() as u64);
            for b in &acct.balances {
                w.u64(b.total);
                w.u64(b.available);
            }
        }
        // Untriggered stops are open orders on no book: they have their own
        // section below.
        w.u64((self.orders.len() - self.stops.info.len() - self.call_markets.len()) as u64);
        for book in &self.books {
            for side in [&book.bids, &book.asks] {
                for level in side.levels_best_first() {
                    let mut slot = level.head;
                    while slot != NIL {
                        let o = self.orders.get(slot);
                        // Bit 1 of the flags marks an iceberg, so a snapshot
                        // cut before the icebergs section cannot pass for a
                        // whole one.
                        write_order(&mut w, o, self.iceberg_display.contains_key(&o.id));
                        slot = o.next;
                    }
                }
            }
        }
        let closed: Vec<_> = self.closed.entries().collect();
        w.u64(closed.len() as u64);
        for ((account, coid), id) in closed {
            w.u32(*account);
            w.text(coid.as_bytes());
            w.u64(id);
        }
        // Absent when no account has risk controls, so such a state keeps
        // the bytes (and the hash) it had before they existed.
        if self.accounts.list.iter().any(|a| a.risk.is_some()) {
            w.u8(RISK_SECTION);
            write_risk(&mut w, self);
        }
        // Likewise absent while no account has an owner.
        let owned: Vec<(u32, u32)> = (0u32..)
            .zip(&self.accounts.list)
            .filter(|(_, a)| a.owner != NIL)
            .map(|(index, a)| (index, a.owner))
            .collect();
        if !owned.is_empty() {
            w.u8(FAMILY_SECTION);
            w.u64(owned.len() as u64);
            for (sub, owner) in owned {
                w.u32(sub);
                w.u32(owner);
            }
        }
        if !self.stops.info.is_empty() || !self.stops.oco.is_empty() {
            w.u8(STOP_SECTION);
            crate::stops::write_section(&mut w, self);
        }
        // Likewise absent while no iceberg is open.
        if !self.iceberg_display.is_empty() {
            w.u8(ICEBERG_SECTION);
            w.u64(self.iceberg_display.len() as u64);
            for (&id, &display) in &self.iceberg_display {
                // Every iceberg in the table is open (`audit` checks).
                let hidden = self
                    .order_by_id
                    .get(&id)
                    .map_or(0, |&slot| self.orders.get(slot).hidden);
                w.u64(id);
                w.u64(display);
                w.u64(hidden);
            }
        }
        // Likewise absent while no instrument has a minimum notional.
        let minimums: Vec<(u32, u64)> = (0u32..)
            .zip(&self.instruments)
            .filter(|(_, inst)| inst.min_notional != 0)
            .map(|(index, inst)| (index, inst.min_notional))
            .collect();
        if !minimums.is_empty() {
            w.u8(RULES_SECTION);
            w.u64(minimums.len() as u64);
            for (index, min_notional) in minimums {
                w.u32(index);
                w.u64(min_notional);
            }
        }
        phase::write(&mut w, self);
        phase::write_volatility(&mut w, self);
        crate::call_market::write_section(&mut w, self);
        w.0
    }

    /// BLAKE3 of the canonical snapshot, as lowercase hex.
    pub fn state_hash(&self) -> String {
        blake3::hash(&self.snapshot()).to_hex().to_string()
    }

    /// Rebuilds an engine from [`Engine::snapshot`] bytes.
    pub fn restore(bytes: &[u8]) -> Result<Engine, SnapshotError> {
        use exchange_types::limits::*;
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let mut e = Engine::new();
        e.accounts = Default::default();
        e.seq = r.u64()?;
        e.now = r.u64()?;
        e.next_order_id = r.u64()?;
        e.next_trade_id = r.u64()?;
        for index in 0..r.count(MAX_ASSETS)? {
            let code = r.asset()?;
            e.asset_supply.push(r.u64()?);
            e.assets.push(code);
            if e.asset_by_code.insert(code, index as u32).is_some() {
                return Err(SnapshotError::Invalid("duplicate asset"));
            }
        }
        for index in 0..r.count(MAX_INSTRUMENTS)? {
            let symbol = r.symbol()?;
            let inst = Instrument {
                symbol,
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
                status: match r.u8()? {
                    0 => TradingStatus::Trading,
                    1 => TradingStatus::Halted,
                    2 => TradingStatus::Delisted,
                    _ => return Err(SnapshotError::Invalid("instrument status")),
                },
                // Set from the status, or the phase section, once read.
                phase: exchange_types::Phase::Continuous,
                indicative: None,
                min_notional: 0,
            };
            if inst.base as usize >= e.assets.len()
                || inst.quote as usize >= e.assets.len()
                || !inst.is_consistent()
            {
                return Err(SnapshotError::Invalid("instrument"));
            }
            e.instruments.push(inst);
            e.books.push(Book::new());
            if e.instrument_by_symbol
                .insert(symbol, index as u32)
                .is_some()
            {
                return Err(SnapshotError::Invalid("duplicate symbol"));
            }
        }
        for _ in 0..r.count(MAX_ACCOUNTS)? {
            let id = r.u64()?;
            let mut balances = Vec::new();
            for _ in 0..r.count(e.assets.len())? {
                let total = r.u64()?;
                let available = r.u64()?;
                if available > total {
                    return Err(SnapshotError::Invalid("balance"));
                }
                balances.push(Balance { total, available });
            }
            if e.accounts.index(id).is_some() {
                return Err(SnapshotError::Invalid("duplicate account"));
            }
            e.accounts.push_restored(Account {
                id,
                balances,
                open_orders: 0,
                orders_head: NIL,
                risk: None,
                owner: NIL,
                sub_accounts: 0,
            });
        }
        if e.accounts.list.first().map(|a| a.id) != Some(crate::engine::FEE_ACCOUNT) {
            return Err(SnapshotError::Invalid("fee account"));
        }
        let mut level_totals = std::collections::BTreeMap::new();
        let mut icebergs_marked: Vec<u64> = Vec::new();
        for _ in 0..r.count(MAX_OPEN_ORDERS)? {
            let (order, iceberg) = read_order(&mut r)?;
            let (id, account, instrument, side) =
                (order.id, order.account, order.instrument, order.side);
            if iceberg {
                icebergs_marked.push(id);
            }
            if account as usize >= e.accounts.list.len()
                || instrument as usize >= e.instruments.len()
                || order.filled >= order.qty
                || e.order_by_id.contains_key(&id)
            {
                return Err(SnapshotError::Invalid("order"));
            }
            // Indexing asserts both keys are free (a clash there is a bug of
            // the engine); here it is damage to refuse.
            if e.by_client_id
                .contains_key(&(account, order.client_order_id))
            {
                return Err(SnapshotError::Invalid("duplicate client order id"));
            }
            // A level's aggregate must fit, or the book itself would
            // overflow while being rebuilt.
            let leaves = order.qty - order.filled;
            let level_total = level_totals
                .entry((instrument, side_code(side), order.price))
                .or_insert(0u64);
            *level_total = level_total
                .checked_add(leaves)
                .ok_or(SnapshotError::Invalid("level overflows"))?;
            let slot = e.orders.insert(order);
            e.books[instrument as usize]
                .side_mut(side)
                .push_back(&mut e.orders, slot);
            e.index_order(slot);
        }
        for _ in 0..r.count(RECENTLY_CLOSED_CAPACITY)? {
            let account = r.u32()?;
            let coid = r.client_order_id()?;
            let id = r.u64()?;
            e.closed.record(account, coid, id);
        }
        if r.at < bytes.len() && bytes[r.at] == RISK_SECTION {
            r.at += 1;
            read_risk(&mut r, &mut e)?;
        }
        if r.at < bytes.len() && bytes[r.at] == FAMILY_SECTION {
            r.at += 1;
            read_family(&mut r, &mut e)?;
        }
        if r.at < bytes.len() && bytes[r.at] == STOP_SECTION {
            r.at += 1;
            crate::stops::read_section(&mut r, &mut e)?;
        }
        if r.at < bytes.len() && bytes[r.at] == ICEBERG_SECTION {
            r.at += 1;
            read_icebergs(&mut r, &mut e)?;
        }
        if r.at < bytes.len() && bytes[r.at] == RULES_SECTION {
            r.at += 1;
            read_rules(&mut r, &mut e)?;
        }
        phase::read(&mut r, &mut e)?;
        phase::read_volatility(&mut r, &mut e)?;
        if r.at < bytes.len() && bytes[r.at] == crate::call_market::CALL_MARKET_SECTION {
            r.at += 1;
            crate::call_market::read_section(&mut r, &mut e)?;
        }
        if r.at != bytes.len() {
            return Err(SnapshotError::TrailingBytes(bytes.len() - r.at));
        }
        icebergs_marked.sort_unstable();
        if !icebergs_marked
            .iter()
            .copied()
            .eq(e.iceberg_display.keys().copied())
        {
            return Err(SnapshotError::Invalid("icebergs"));
        }
        // Every field parsed, but the whole must also be a state the engine
        // could have reached; a damaged snapshot must not become a replica.
        e.audit().map_err(SnapshotError::Inconsistent)?;
        Ok(e)
    }
}
