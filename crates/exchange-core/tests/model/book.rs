//! One instrument of the reference model: each book side a plain vector
//! kept sorted by (price priority, arrival), and the matching loop.

use exchange_types::decimal::UnitsError;
use exchange_types::*;

use super::Ev;

/// A resting order, or a taker while it matches. Prices in ticks,
/// quantities in lots; `qty` is the total, filled included.
#[derive(Clone, Debug)]
pub(super) struct Order {
    pub(super) id: OrderId,
    pub(super) account: AccountId,
    pub(super) client_order_id: ClientOrderId,
    pub(super) side: Side,
    /// `None` for a market order: no limit.
    pub(super) price: Option<u64>,
    pub(super) qty: u64,
    pub(super) filled: u64,
    pub(super) stp: SelfTradePrevention,
    pub(super) post_only: bool,
    pub(super) arrival: u64,
}

impl Order {
    pub(super) fn leaves(&self) -> u64 {
        self.qty - self.filled
    }

    /// Whether this order, as a taker, may trade at `price`.
    fn accepts(&self, price: u64) -> bool {
        match (self.side, self.price) {
            (_, None) => true,
            (Side::Buy, Some(limit)) => price <= limit,
            (Side::Sell, Some(limit)) => price >= limit,
        }
    }

    /// Sort key: best price first, then earliest arrival.
    fn priority(&self) -> (i128, u64) {
        let price = i128::from(self.price.unwrap_or(0));
        match self.side {
            Side::Buy => (-price, self.arrival),
            Side::Sell => (price, self.arrival),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Market {
    pub(super) symbol: Symbol,
    pub(super) base: AssetCode,
    pub(super) quote: AssetCode,
    pub(super) tick_units: u64,
    pub(super) lot_units: u64,
    pub(super) halted: bool,
    pub(super) bids: Vec<Order>,
    pub(super) asks: Vec<Order>,
}

impl Market {
    pub(super) fn side(&mut self, side: Side) -> &mut Vec<Order> {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    pub(super) fn price_ticks(&self, price: Dec) -> Result<u64, RejectReason> {
        let (invalid, off_grid) = (RejectReason::InvalidPrice, RejectReason::PriceNotOnTick);
        whole_steps(price, self.tick_units, invalid, off_grid)
    }

    pub(super) fn qty_lots(&self, qty: Dec) -> Result<u64, RejectReason> {
        let (invalid, off_grid) = (
            RejectReason::InvalidQuantity,
            RejectReason::QuantityNotOnLot,
        );
        whole_steps(qty, self.lot_units, invalid, off_grid)
    }

    /// Whether an order of `side` at `price` would meet the other side.
    pub(super) fn would_cross(&self, side: Side, price: u64) -> bool {
        let opposite = match side {
            Side::Buy => &self.asks,
            Side::Sell => &self.bids,
        };
        opposite.iter().any(|o| match side {
            Side::Buy => o.price <= Some(price),
            Side::Sell => o.price >= Some(price),
        })
    }

    fn canceled(&self, o: &Order, reason: CancelReason, canceled: u64) -> Ev {
        Ev::Canceled {
            order_id: o.id,
            reason,
            canceled_qty: canceled * self.lot_units,
            filled_qty: o.filled * self.lot_units,
            leaves_qty: o.leaves() * self.lot_units,
        }
    }

    /// Takes the whole remainder of `o` away and reports it.
    pub(super) fn cancel_all(&self, o: &mut Order, reason: CancelReason, out: &mut Vec<Ev>) {
        let leaves = o.leaves();
        o.qty -= leaves;
        out.push(self.canceled(o, reason, leaves));
    }

    /// Matches `taker` against the opposite side, best first. Orders that
    /// leave the book are added to `closed`. Returns true if self-trade
    /// prevention canceled the taker (its Canceled event already out).
    pub(super) fn match_taker(
        &mut self,
        taker: &mut Order,
        closed: &mut Vec<Order>,
        out: &mut Vec<Ev>,
    ) -> bool {
        let opposite = taker.side.opposite();
        while taker.leaves() > 0 {
            let Some(best) = self.side(opposite).first().cloned() else {
                break;
            };
            let price = best.price.unwrap_or(0);
            if !taker.accepts(price) {
                break;
            }
            if best.account == taker.account {
                let mut maker = best;
                match taker.stp {
                    SelfTradePrevention::CancelNewest => {
                        self.cancel_all(taker, CancelReason::SelfTrade, out);
                        return true;
                    }
                    SelfTradePrevention::CancelOldest => {
                        self.side(opposite).remove(0);
                        self.cancel_all(&mut maker, CancelReason::SelfTrade, out);
                        closed.push(maker);
                    }
                    SelfTradePrevention::CancelBoth => {
                        self.side(opposite).remove(0);
                        self.cancel_all(&mut maker, CancelReason::SelfTrade, out);
                        closed.push(maker);
                        self.cancel_all(taker, CancelReason::SelfTrade, out);
                        return true;
                    }
                    SelfTradePrevention::Decrement => {
                        let smaller = maker.leaves().min(taker.leaves());
                        maker.qty -= smaller;
                        out.push(self.canceled(&maker, CancelReason::SelfTrade, smaller));
                        if maker.leaves() == 0 {
                            self.side(opposite).remove(0);
                            closed.push(maker);
                        } else {
                            self.side(opposite)[0] = maker;
                        }
                        taker.qty -= smaller;
                        out.push(self.canceled(taker, CancelReason::SelfTrade, smaller));
                        if taker.leaves() == 0 {
                            return true;
                        }
                    }
                }
                continue;
            }
            let qty = best.leaves().min(taker.leaves());
            taker.filled += qty;
            let maker = &mut self.side(opposite)[0];
            maker.filled += qty;
            let maker_done = maker.leaves() == 0;
            out.push(Ev::Trade {
                symbol: self.symbol,
                price: price * self.tick_units,
                qty: qty * self.lot_units,
                maker_order_id: best.id,
                taker_order_id: taker.id,
                maker_account: best.account,
                taker_account: taker.account,
                aggressor_side: taker.side,
            });
            if maker_done {
                let maker = self.side(opposite).remove(0);
                closed.push(maker);
            }
        }
        false
    }

    pub(super) fn rest(&mut self, order: Order) {
        let side = self.side(order.side);
        side.push(order);
        side.sort_by_key(Order::priority);
    }

    /// Aggregated levels per side, best first, in units.
    pub(super) fn levels(&self, side: Side) -> Vec<(u64, u64)> {
        let orders = match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        };
        let mut levels: Vec<(u64, u64)> = Vec::new();
        for o in orders {
            let price = o.price.unwrap_or(0) * self.tick_units;
            match levels.last_mut() {
                Some((p, qty)) if *p == price => *qty += o.leaves() * self.lot_units,
                _ => levels.push((price, o.leaves() * self.lot_units)),
            }
        }
        levels
    }
}

/// `value` as a count of `step` units, refused for the reasons the
/// protocol names.
fn whole_steps(
    value: Dec,
    step: u64,
    invalid: RejectReason,
    off_grid: RejectReason,
) -> Result<u64, RejectReason> {
    let units = value.to_units().map_err(|e| match e {
        UnitsError::Negative | UnitsError::Zero => invalid,
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
    })?;
    if units % step != 0 {
        return Err(off_grid);
    }
    Ok(units / step)
}
