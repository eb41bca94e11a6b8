//! An instrument's rules, converted once into integers the hot path uses.
//!
//! Prices are counted in ticks and quantities in lots. A tick times a lot is
//! a whole number of quote units (`notional_per_tick_lot`), which is what
//! makes every notional exact.

use exchange_types::decimal::UnitsError;
use exchange_types::limits::{MAX_COLLAR_BPS, MAX_FEE_BPS};
use exchange_types::{
    AddInstrument, Dec, Phase, ReferencePriceRule, RejectReason, Symbol, TradingStatus,
    UNITS_PER_WHOLE,
};

use crate::auction::Uncross;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Instrument {
    pub symbol: Symbol,
    pub base: u32,
    pub quote: u32,
    /// Quote units per tick of price.
    pub tick_units: u64,
    /// Base units per lot of quantity.
    pub lot_units: u64,
    /// Quote units of notional for one tick of price times one lot.
    pub notional_per_tick_lot: u64,
    pub min_lots: u64,
    pub max_lots: u64,
    pub collar_bps: u32,
    /// Reference price for the collar (ticks): the last trade, or the
    /// configured reference until the first trade.
    pub reference_ticks: Option<u64>,
    pub maker_fee_bps: i32,
    pub taker_fee_bps: i32,
    pub status: TradingStatus,
    /// Kept in step with `status`: halted exactly when `Halted`.
    pub phase: Phase,
    /// The indicative uncrossing last published during a call.
    pub indicative: Option<Uncross>,
    /// Smallest notional an order may have, quote units; 0: none. Zero
    /// keeps the check on the order path to one comparison when unset.
    pub min_notional: u64,
    /// How the auction price uses the reference price.
    pub reference_price_rule: ReferencePriceRule,
    /// Smallest value a hidden order may have, quote units; `None`: the
    /// instrument takes no hidden orders.
    pub hidden_min_notional: Option<u64>,
}

/// An optional amount of a listing in units, zero allowed.
fn optional_units(amount: Option<Dec>) -> Result<Option<u64>, RejectReason> {
    amount
        .map(|d| {
            d.to_units_allow_zero()
                .map_err(|_| RejectReason::InvalidInstrument)
        })
        .transpose()
}

fn price_reason(e: UnitsError) -> RejectReason {
    match e {
        UnitsError::Negative | UnitsError::Zero => RejectReason::InvalidPrice,
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
    }
}

fn qty_reason(e: UnitsError) -> RejectReason {
    match e {
        UnitsError::Negative | UnitsError::Zero => RejectReason::InvalidQuantity,
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
    }
}

/// Fees are within the venue's bounds, and the taker fee pays any maker
/// rebate: the fee account pays a rebate out of the taker fee of the same
/// trade, so it can never go negative.
fn check_fees(maker_fee_bps: i32, taker_fee_bps: i32) -> Result<(), RejectReason> {
    let fee_ok = |bps: i32| (-MAX_FEE_BPS..=MAX_FEE_BPS).contains(&bps);
    if !fee_ok(maker_fee_bps)
        || !fee_ok(taker_fee_bps)
        || taker_fee_bps < 0
        || taker_fee_bps < -maker_fee_bps
    {
        return Err(RejectReason::InvalidFee);
    }
    Ok(())
}

impl Instrument {
    /// Checks an add-instrument command; the asset indices are resolved by
    /// the caller.
    pub fn from_spec(spec: &AddInstrument, base: u32, quote: u32) -> Result<Self, RejectReason> {
        if let Some(phase) = spec.phase {
            crate::operator::check_listing_phase(phase)?;
        }
        crate::volatility::bands::check_bands(
            spec.static_band_bps.unwrap_or(0),
            spec.dynamic_band_bps.unwrap_or(0),
            spec.volatility_auction_ns.unwrap_or(0),
        )?;
        let invalid = |_| RejectReason::InvalidInstrument;
        let tick_units = spec.tick_size.to_units().map_err(invalid)?;
        let lot_units = spec.lot_size.to_units().map_err(invalid)?;
        let product = u128::from(tick_units) * u128::from(lot_units);
        // A tick times a lot must be a whole number of quote units, or
        // notionals would need rounding.
        if product % u128::from(UNITS_PER_WHOLE) != 0 {
            return Err(RejectReason::InvalidInstrument);
        }
        let notional_per_tick_lot = u64::try_from(product / u128::from(UNITS_PER_WHOLE))
            .map_err(|_| RejectReason::InvalidInstrument)?;
        let lots = |d: Dec| -> Result<u64, RejectReason> {
            let units = d.to_units().map_err(invalid)?;
            if units % lot_units != 0 {
                return Err(RejectReason::InvalidInstrument);
            }
            Ok(units / lot_units)
        };
        let min_lots = spec.min_qty.map(lots).transpose()?.unwrap_or(1);
        let max_lots = spec
            .max_qty
            .map(lots)
            .transpose()?
            .unwrap_or(u64::MAX / lot_units);
        if min_lots > max_lots || base == quote {
            return Err(RejectReason::InvalidInstrument);
        }
        check_fees(spec.maker_fee_bps, spec.taker_fee_bps)?;
        let collar_bps = spec.collar_bps.unwrap_or(0);
        if collar_bps > MAX_COLLAR_BPS {
            return Err(RejectReason::InvalidCollar);
        }
        let min_notional = optional_units(spec.min_notional)?.unwrap_or(0);
        let mut instrument = Instrument {
            symbol: spec.symbol,
            base,
            quote,
            tick_units,
            lot_units,
            notional_per_tick_lot,
            min_lots,
            max_lots,
            collar_bps,
            reference_ticks: None,
            maker_fee_bps: spec.maker_fee_bps,
            taker_fee_bps: spec.taker_fee_bps,
            status: TradingStatus::Trading,
            phase: Phase::Continuous,
            indicative: None,
            min_notional,
            reference_price_rule: spec.reference_price_rule,
            hidden_min_notional: optional_units(spec.hidden_min_notional)?,
        };
        if let Some(reference) = spec.reference_price {
            instrument.reference_ticks = Some(
                instrument
                    .price_to_ticks(reference)
                    .map_err(|_| RejectReason::InvalidInstrument)?,
            );
        }
        Ok(instrument)
    }

    /// Whether the rules hold together as `from_spec` would have made
    /// them (for snapshots, which arrive from disk or the network).
    pub fn is_consistent(&self) -> bool {
        let fee_ok = |bps: i32| (-MAX_FEE_BPS..=MAX_FEE_BPS).contains(&bps);
        let product = u128::from(self.tick_units) * u128::from(self.lot_units);
        self.tick_units > 0
            && self.lot_units > 0
            && product % u128::from(UNITS_PER_WHOLE) == 0
            && product / u128::from(UNITS_PER_WHOLE) == u128::from(self.notional_per_tick_lot)
            && self.min_lots >= 1
            && self.min_lots <= self.max_lots
            && self.base != self.quote
            && fee_ok(self.maker_fee_bps)
            && fee_ok(self.taker_fee_bps)
            && self.taker_fee_bps >= 0
            && self.taker_fee_bps >= -self.maker_fee_bps
            && self.collar_bps <= MAX_COLLAR_BPS
    }

    pub fn price_to_ticks(&self, price: Dec) -> Result<u64, RejectReason> {
        let units = price.to_units().map_err(price_reason)?;
        if units % self.tick_units != 0 {
            return Err(RejectReason::PriceNotOnTick);
        }
        Ok(units / self.tick_units)
    }

    /// Quantity in lots, checked against the lot size and the min/max.
    /// On every order's admission, so kept inline there.
    #[inline(always)]
    pub fn qty_to_lots(&self, qty: Dec) -> Result<u64, RejectReason> {
        let units = qty.to_units().map_err(qty_reason)?;
        if units % self.lot_units != 0 {
            return Err(RejectReason::QuantityNotOnLot);
        }
        let lots = units / self.lot_units;
        if lots < self.min_lots {
            return Err(RejectReason::QuantityBelowMinimum);
        }
        if lots > self.max_lots {
            return Err(RejectReason::QuantityAboveMaximum);
        }
        Ok(lots)
    }

    pub fn price_units(&self, ticks: u64) -> u64 {
        ticks.saturating_mul(self.tick_units)
    }

    pub fn qty_units(&self, lots: u64) -> u64 {
        lots.saturating_mul(self.lot_units)
    }

    /// Quote units of `lots` at `ticks`; `None` if it cannot be represented.
    pub fn notional(&self, ticks: u64, lots: u64) -> Option<u64> {
        let n = u128::from(ticks)
            .checked_mul(u128::from(lots))?
            .checked_mul(u128::from(self.notional_per_tick_lot))?;
        u64::try_from(n).ok()
    }

    /// Whether `lots` at `ticks` fall short of the minimum notional. An
    /// unrepresentable notional is not short: it is refused elsewhere.
    #[inline]
    pub fn below_min_notional(&self, ticks: u64, lots: u64) -> bool {
        self.min_notional != 0
            && self
                .notional(ticks, lots)
                .is_some_and(|n| n < self.min_notional)
    }

    /// The largest fee an order may pay, whichever role it ends up in.
    pub fn max_fee_bps(&self) -> i32 {
        self.taker_fee_bps.max(self.maker_fee_bps).max(0)
    }

    /// Inclusive band of acceptable prices in ticks, if a collar applies.
    pub fn collar_band(&self) -> Option<(u64, u64)> {
        if self.collar_bps == 0 {
            return None;
        }
        let reference = self.reference_ticks?;
        let width = u128::from(reference) * u128::from(self.collar_bps) / 10_000;
        let width = u64::try_from(width).unwrap_or(u64::MAX);
        Some((
            reference.saturating_sub(width).max(1),
            reference.saturating_add(width),
        ))
    }
}

/// Fee on a notional, rounded toward zero so that the sum of the fees of
/// several fills never exceeds the fee reserved for their total.
pub(crate) fn fee(notional: u64, bps: i32) -> i64 {
    let bps_abs = u64::from(bps.unsigned_abs());
    // Dividing a u128 by a constant is a library call; in 64 bits it is a
    // multiplication, and almost every product fits.
    let magnitude = match notional.checked_mul(bps_abs) {
        Some(product) => u128::from(product / 10_000),
        None => u128::from(notional) * u128::from(bps_abs) / 10_000,
    };
    // |bps| <= 10_000, so the magnitude never exceeds the notional.
    let magnitude = i64::try_from(magnitude).unwrap_or(i64::MAX);
    if bps < 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// What a buy reserves: the notional plus the largest fee it may pay.
pub(crate) fn buy_cost(notional: u64, max_fee_bps: i32) -> Option<u64> {
    notional.checked_add(fee(notional, max_fee_bps).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::fee;

    #[test]
    fn fee_is_the_exact_quotient_on_both_sides_of_64_bits() {
        let exact = |n: u64, bps: i32| {
            let m = u128::from(n) * u128::from(bps.unsigned_abs()) / 10_000;
            let m = i64::try_from(m).unwrap_or(i64::MAX);
            if bps < 0 {
                -m
            } else {
                m
            }
        };
        let edge = u64::MAX / 10_000;
        for n in [
            0,
            1,
            9_999,
            123_456_789,
            edge,
            edge + 1,
            u64::MAX / 5,
            u64::MAX,
        ] {
            for bps in [-10_000, -3, -1, 0, 1, 5, 9_999, 10_000] {
                assert_eq!(fee(n, bps), exact(n, bps), "fee({n}, {bps})");
            }
        }
        assert_eq!(fee(u64::MAX, 10_000), i64::MAX);
        assert_eq!(fee(1_999_999, 5), 999);
        assert_eq!(fee(1_999_999, -5), -999);
    }
}
