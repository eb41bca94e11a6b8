//! What the model's markets check of an order on entry: funds, the
//! minimum acceptable quantity, hidden orders and icebergs.

use exchange_types::decimal::UnitsError;
use exchange_types::*;

use super::book::{Market, Order};

/// The quote a market buy by funds spends, in units.
pub(super) fn funds_units(p: &Place, market_order: bool) -> Result<Option<u64>, RejectReason> {
    let Some(funds) = p.ext().funds else {
        return Ok(None);
    };
    if !market_order || p.side != Side::Buy {
        return Err(RejectReason::FundsNotAllowed);
    }
    if p.qty.to_units_allow_zero() != Ok(0) {
        return Err(RejectReason::FundsWithQty);
    }
    Some(funds.to_units().map_err(|e| match e {
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
        _ => RejectReason::InvalidFunds,
    }))
    .transpose()
}

impl Market {
    /// The best price on the other side of `side`'s book.
    /// The best price shown on the other side: a hidden order's is no
    /// price a market-to-limit order can see.
    pub(super) fn best_opposite(&self, side: Side) -> Option<u64> {
        let shown = |o: &Order| if o.dark { None } else { o.price };
        match side {
            Side::Buy => self.asks.iter().filter_map(shown).min(),
            Side::Sell => self.bids.iter().filter_map(shown).max(),
        }
    }

    /// A minimum acceptable quantity in lots: on an order that may trade
    /// on entry, positive, on the lot and at most the quantity.
    pub(super) fn min_qty_lots(&self, p: &Place, stop: bool) -> Result<Option<u64>, RejectReason> {
        let Some(min_qty) = p.ext().min_qty else {
            return Ok(None);
        };
        let typed = matches!(
            p.order_type,
            OrderType::Limit | OrderType::Market | OrderType::MarketToLimit | OrderType::Midpoint
        );
        if !typed || stop || p.post_only || p.ext().funds.is_some() {
            return Err(RejectReason::MinQtyNotAllowed);
        }
        let units = min_qty.to_units().map_err(|e| match e {
            UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
            UnitsError::Overflow => RejectReason::AmountOverflow,
            _ => RejectReason::InvalidMinQty,
        })?;
        if p.qty.to_units().is_ok_and(|qty| units > qty) || units % self.lot_units != 0 {
            return Err(RejectReason::InvalidMinQty);
        }
        Ok(Some(units / self.lot_units))
    }

    /// Whether the order is hidden, and if so that it may be: a limit
    /// order that may rest, no iceberg, worth the instrument's minimum.
    pub(super) fn check_dark(
        &self,
        p: &Place,
        price: Option<u64>,
        qty: u64,
        tif: TimeInForce,
    ) -> Result<bool, RejectReason> {
        if !p.ext().hidden {
            return Ok(false);
        }
        let immediate = matches!(tif, TimeInForce::Ioc | TimeInForce::Fok);
        if p.order_type != OrderType::Limit || immediate || p.ext().display_qty.is_some() {
            return Err(RejectReason::HiddenNotAllowed);
        }
        if self.hidden_min.is_none() {
            return Err(RejectReason::HiddenNotOffered);
        }
        if self.below_hidden_minimum(price.unwrap_or(0), qty) {
            return Err(RejectReason::HiddenBelowMinimum);
        }
        Ok(true)
    }

    /// Whether `qty` lots at `price` ticks are worth less than a hidden
    /// order must be (any value, without a minimum).
    pub(super) fn below_hidden_minimum(&self, price: u64, qty: u64) -> bool {
        let value =
            u128::from(price * self.tick_units) * u128::from(qty) * u128::from(self.lot_units)
                / 100_000_000;
        value < u128::from(self.hidden_min.unwrap_or(u64::MAX))
    }

    /// The lots an iceberg shows at a time, of the `qty` lots it holds.
    pub(super) fn display_lots(
        &self,
        p: &Place,
        market_order: bool,
        tif: TimeInForce,
        qty: u64,
    ) -> Result<Option<u64>, RejectReason> {
        let lot_units = self.lot_units;
        match p.ext().display_qty {
            None => Ok(None),
            Some(_) if market_order || tif != TimeInForce::Gtc => {
                Err(RejectReason::DisplayQtyNotAllowed)
            }
            Some(display) => {
                let lots = display.to_units().map_err(|e| match e {
                    UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
                    UnitsError::Overflow => RejectReason::AmountOverflow,
                    _ => RejectReason::InvalidDisplayQty,
                })?;
                if lots % lot_units != 0
                    || lots / lot_units < self.min_lots
                    || lots / lot_units >= qty
                {
                    return Err(RejectReason::InvalidDisplayQty);
                }
                Ok(Some(lots / lot_units))
            }
        }
    }
}
