//! The state of an account's member risk controls: its pre-trade limits,
//! its suspension and its market-maker protection windows, with the
//! checks that need nothing but them and the instrument.
//!
//! Data and pure checks only: setting the controls, counting fills and
//! sweeping a tripped account's orders are `risk.rs`, which also gives the
//! rules.

use exchange_types::RejectReason;
use exchange_types::Side;

use crate::instrument::Instrument;

/// Pre-trade limits in units (`None`: no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub max_qty: Option<u64>,
    pub max_notional: Option<u64>,
    pub max_open_orders: Option<u32>,
    pub band_bps: Option<u32>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }
}

/// One account's market-maker protection on one instrument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mmp {
    pub instrument: u32,
    pub window_ns: u64,
    pub max_qty: Option<u64>,
    pub max_count: Option<u32>,
    /// Log time the current window opened; meaningless while `fills` is 0.
    pub window_start: u64,
    /// Base units filled in the current window.
    pub filled: u64,
    pub fills: u32,
    pub tripped: bool,
}

impl Mmp {
    pub(crate) fn new(
        instrument: u32,
        window_ns: u64,
        max_qty: Option<u64>,
        max_count: Option<u32>,
    ) -> Self {
        Mmp {
            instrument,
            window_ns,
            max_qty,
            max_count,
            window_start: 0,
            filled: 0,
            fills: 0,
            tripped: false,
        }
    }

    /// Counts a fill at log time `now`; true if it trips the protection.
    pub(crate) fn count(&mut self, now: u64, units: u64) -> bool {
        if self.fills > 0 && now.saturating_sub(self.window_start) >= self.window_ns {
            self.fills = 0;
            self.filled = 0;
        }
        if self.fills == 0 {
            self.window_start = now;
        }
        self.fills = self.fills.saturating_add(1);
        self.filled = self.filled.saturating_add(units);
        let over = self.max_qty.is_some_and(|max| self.filled > max)
            || self.max_count.is_some_and(|max| self.fills > max);
        if over && !self.tripped {
            self.tripped = true;
            return true;
        }
        false
    }

    pub(crate) fn clear_window(&mut self) {
        self.window_start = 0;
        self.filled = 0;
        self.fills = 0;
    }
}

/// Everything an account's risk controls hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AccountRisk {
    pub limits: Limits,
    pub suspended: bool,
    /// Sorted by instrument index; at most one per instrument.
    pub mmp: Vec<Mmp>,
}

impl AccountRisk {
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && !self.suspended && self.mmp.is_empty()
    }

    pub(crate) fn mmp(&self, instrument: u32) -> Option<&Mmp> {
        self.mmp
            .binary_search_by_key(&instrument, |m| m.instrument)
            .ok()
            .map(|i| &self.mmp[i])
    }

    /// Whether the account may enter or change orders on `instrument`.
    pub fn check_access(&self, instrument: u32) -> Result<(), RejectReason> {
        if self.suspended {
            return Err(RejectReason::AccountSuspended);
        }
        if self.mmp(instrument).is_some_and(|m| m.tripped) {
            return Err(RejectReason::MmpTripped);
        }
        Ok(())
    }

    /// Checks a new order against the limits and returns the price it may
    /// trade to: a market order is held inside the band as it is held
    /// inside the collar.
    #[allow(clippy::too_many_arguments)]
    pub fn check_order(
        &self,
        inst: &Instrument,
        side: Side,
        limit_price: Option<u64>,
        price: u64,
        lots: u64,
        rests: bool,
        open_orders: u32,
    ) -> Result<u64, RejectReason> {
        let limits = &self.limits;
        check_qty(limits, inst, lots)?;
        if let Some(max) = limits.max_notional {
            // A market order has no price of its own: it is valued at the
            // reference price, and refused when there is none yet.
            let valued_at = limit_price.or(inst.reference_ticks);
            let notional = valued_at.and_then(|p| inst.notional(p, lots));
            if notional.is_none_or(|n| n > max) {
                return Err(RejectReason::OrderNotionalOverLimit);
            }
        }
        let mut price = price;
        if let Some((low, high)) = band(limits, inst) {
            match limit_price {
                Some(p) if p < low || p > high => return Err(RejectReason::PriceOutsideBand),
                Some(_) => {}
                None => {
                    price = match side {
                        Side::Buy => price.min(high),
                        Side::Sell => price.max(low),
                    }
                }
            }
        }
        if rests && limits.max_open_orders.is_some_and(|max| open_orders >= max) {
            return Err(RejectReason::OpenOrdersOverLimit);
        }
        Ok(price)
    }

    /// Checks a replace: only what raises exposure is held to a limit
    /// (a larger quantity, a larger notional, a new price), so an order
    /// placed before its account's limits were lowered can always be
    /// reduced.
    pub fn check_replace(
        &self,
        inst: &Instrument,
        old: (u64, u64),
        new: (u64, u64),
    ) -> Result<(), RejectReason> {
        let ((old_price, old_lots), (price, lots)) = (old, new);
        let limits = &self.limits;
        if lots > old_lots {
            check_qty(limits, inst, lots)?;
        }
        if let Some(max) = limits.max_notional {
            let before = inst.notional(old_price, old_lots);
            let after = inst.notional(price, lots);
            let raised = match (before, after) {
                (Some(b), Some(a)) => a > b,
                (_, None) => true,
                (None, Some(_)) => false,
            };
            if raised && after.is_none_or(|n| n > max) {
                return Err(RejectReason::OrderNotionalOverLimit);
            }
        }
        if price != old_price {
            if let Some((low, high)) = band(limits, inst) {
                if price < low || price > high {
                    return Err(RejectReason::PriceOutsideBand);
                }
            }
        }
        Ok(())
    }
}

fn check_qty(limits: &Limits, inst: &Instrument, lots: u64) -> Result<(), RejectReason> {
    if let Some(max) = limits.max_qty {
        if u128::from(lots) * u128::from(inst.lot_units) > u128::from(max) {
            return Err(RejectReason::OrderQtyOverLimit);
        }
    }
    Ok(())
}

/// The account's band around the instrument's reference price (the last
/// trade, or the listing's reference until the first trade), in ticks;
/// `None` when either is missing.
fn band(limits: &Limits, inst: &Instrument) -> Option<(u64, u64)> {
    let bps = limits.band_bps?;
    let reference = inst.reference_ticks?;
    let width = u128::from(reference) * u128::from(bps) / 10_000;
    let width = u64::try_from(width).unwrap_or(u64::MAX);
    Some((
        reference.saturating_sub(width).max(1),
        reference.saturating_add(width),
    ))
}
