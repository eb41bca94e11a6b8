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
    /// An iceberg's display size in lots.
    pub(super) display: Option<u64>,
    /// Open lots not shown (an iceberg's reserve).
    pub(super) hidden: u64,
    /// A hidden order: never shown, met after everything shown at its
    /// price (icebergs' reserves included), in arrival order.
    pub(super) dark: bool,
    /// A fill took part of the iceberg's current slice and stopped inside
    /// it: the rest of the slice stays shown until it fills (TSX, Xetra,
    /// Coinbase). Otherwise the slice is `min(display, open)`.
    pub(super) slice_cut: bool,
}

impl Order {
    pub(super) fn leaves(&self) -> u64 {
        self.qty - self.filled
    }

    pub(super) fn shown(&self) -> u64 {
        self.leaves() - self.hidden
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
    pub(super) min_lots: u64,
    pub(super) taker_fee_bps: i32,
    /// Smallest value of a hidden order, quote units; `None`: none taken.
    pub(super) hidden_min: Option<u64>,
    pub(super) bids: Vec<Order>,
    pub(super) asks: Vec<Order>,
    /// The last trade price in ticks: what stops wait for.
    pub(super) last: Option<u64>,
    /// Untriggered stops, in no particular order.
    pub(super) stops: Vec<super::stops::Stop>,
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

    pub(super) fn canceled(&self, o: &Order, reason: CancelReason, canceled: u64) -> Ev {
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

    /// Quote units a taker buy of `lots` at `price` ticks costs, fee
    /// included (rounded down), or `None` past u64.
    fn cost(&self, price: u64, lots: u64) -> Option<u64> {
        let notional =
            u128::from(price * self.tick_units) * u128::from(lots) * u128::from(self.lot_units)
                / 100_000_000;
        let fee = notional * u128::from(self.taker_fee_bps.max(0).unsigned_abs()) / 10_000;
        u64::try_from(notional + fee).ok()
    }

    /// How many of `want` lots at `price` a budget of `left` pays for:
    /// counted up from an estimate.
    fn affordable(&self, price: u64, want: u64, left: u64) -> u64 {
        let per_lot = self.cost(price, 1).unwrap_or(u64::MAX).max(1);
        let mut lots = (left / per_lot).min(want);
        while lots > 0 && self.cost(price, lots).is_none_or(|c| c > left) {
            lots -= 1;
        }
        while lots < want && self.cost(price, lots + 1).is_some_and(|c| c <= left) {
            lots += 1;
        }
        lots
    }

    /// One trade of up to `want` lots with the order at `pos`; a spent
    /// budget cuts it. Shown lots go first, or with `hidden_first` (every
    /// shown lot at the price has traded) hidden ones, so the slice stays
    /// whole while the iceberg hides any. Returns whether the budget cut it
    /// short and whether the iceberg showed a new slice.
    #[allow(clippy::too_many_arguments)]
    fn trade(
        &mut self,
        taker: &mut Order,
        pos: usize,
        want: u64,
        hidden_first: bool,
        budget: &mut Option<u64>,
        arrival: &mut u64,
        closed: &mut Vec<Order>,
        out: &mut Vec<Ev>,
    ) -> (bool, bool) {
        let opposite = taker.side.opposite();
        let maker = self.side(opposite)[pos].clone();
        let price = maker.price.unwrap_or(0);
        let mut qty = want.min(taker.leaves());
        let mut cut = false;
        if let Some(left) = budget.as_mut() {
            let can = self.affordable(price, qty, *left);
            cut = can < qty;
            qty = can;
            *left -= self.cost(price, qty).unwrap_or(0);
        }
        if qty > 0 {
            self.last = Some(price);
            taker.filled += qty;
            let m = &mut self.side(opposite)[pos];
            let from_shown = if hidden_first {
                qty - qty.min(m.hidden)
            } else {
                qty.min(m.shown())
            };
            m.filled += qty;
            m.hidden -= qty - from_shown;
            m.slice_cut |= from_shown > 0 && !hidden_first;
            out.push(Ev::Trade {
                symbol: self.symbol,
                price: price * self.tick_units,
                qty: qty * self.lot_units,
                maker_order_id: maker.id,
                taker_order_id: taker.id,
                maker_account: maker.account,
                taker_account: taker.account,
                aggressor_side: taker.side,
            });
        }
        let m = &mut self.side(opposite)[pos];
        let mut refilled = false;
        if m.leaves() == 0 {
            let done = self.side(opposite).remove(pos);
            closed.push(done);
        } else if m.shown() == 0 {
            // The slice is gone: a new one, at the back of the level.
            let slice = m.display.unwrap_or(0).min(m.hidden);
            m.hidden -= slice;
            m.slice_cut = false;
            m.arrival = *arrival;
            *arrival += 1;
            self.side(opposite).sort_by_key(Order::priority);
            refilled = true;
        }
        (cut, refilled)
    }

    /// Matches `taker` against the opposite side, best price first. At each
    /// price every shown lot trades first, in priority order; then the
    /// icebergs refilled on the way give their hidden lots, in the order
    /// they were refilled. A `budget` (a buy sized by funds) caps each
    /// trade and ends the match at the first trade it cuts, or at the
    /// first own order. Orders that
    /// leave the book are added to `closed`. Returns true if self-trade
    /// prevention canceled the taker (its Canceled event already out).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn match_taker(
        &mut self,
        taker: &mut Order,
        mut budget: Option<u64>,
        arrival: &mut u64,
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
            let at_price: Vec<OrderId> = self
                .side(opposite)
                .iter()
                .filter(|o| o.price == Some(price) && !o.dark)
                .map(|o| o.id)
                .collect();
            let dark: Vec<OrderId> = self
                .side(opposite)
                .iter()
                .filter(|o| o.price == Some(price) && o.dark)
                .map(|o| o.id)
                .collect();
            let mut refilled = Vec::new();
            for id in at_price {
                if taker.leaves() == 0 {
                    return false;
                }
                let Some(pos) = self.side(opposite).iter().position(|o| o.id == id) else {
                    continue;
                };
                let maker = self.side(opposite)[pos].clone();
                if maker.account == taker.account {
                    if budget.is_some() {
                        return false;
                    }
                    if self.prevent_self_trade(taker, pos, closed, out) {
                        return true;
                    }
                    continue;
                }
                let shown = maker.shown();
                let (cut, again) =
                    self.trade(taker, pos, shown, false, &mut budget, arrival, closed, out);
                if cut {
                    return false;
                }
                if again {
                    refilled.push(id);
                }
            }
            for id in refilled {
                if taker.leaves() == 0 {
                    return false;
                }
                let Some(pos) = self.side(opposite).iter().position(|o| o.id == id) else {
                    continue;
                };
                let want = self.side(opposite)[pos].leaves();
                let (cut, _) =
                    self.trade(taker, pos, want, true, &mut budget, arrival, closed, out);
                if cut {
                    return false;
                }
            }
            if let Some(canceled) = self.match_dark(taker, &dark, &mut budget, arrival, closed, out)
            {
                return canceled;
            }
        }
        false
    }

    /// The hidden orders at a price, `dark` in arrival order, after
    /// everything shown there. `None` to go on to the next price; else the
    /// match ends, `Some(true)` if self-trade prevention canceled the
    /// taker.
    fn match_dark(
        &mut self,
        taker: &mut Order,
        dark: &[OrderId],
        budget: &mut Option<u64>,
        arrival: &mut u64,
        closed: &mut Vec<Order>,
        out: &mut Vec<Ev>,
    ) -> Option<bool> {
        let opposite = taker.side.opposite();
        for id in dark {
            if taker.leaves() == 0 {
                return Some(false);
            }
            let Some(pos) = self.side(opposite).iter().position(|o| o.id == *id) else {
                continue;
            };
            let maker = self.side(opposite)[pos].clone();
            if maker.account == taker.account {
                if budget.is_some() {
                    return Some(false);
                }
                if self.prevent_self_trade(taker, pos, closed, out) {
                    return Some(true);
                }
                continue;
            }
            let (cut, _) = self.trade(
                taker,
                pos,
                maker.leaves(),
                false,
                budget,
                arrival,
                closed,
                out,
            );
            if cut {
                return Some(false);
            }
        }
        None
    }

    /// Self-trade prevention against the own order at `pos`. Returns true
    /// if the taker was canceled.
    fn prevent_self_trade(
        &mut self,
        taker: &mut Order,
        pos: usize,
        closed: &mut Vec<Order>,
        out: &mut Vec<Ev>,
    ) -> bool {
        let opposite = taker.side.opposite();
        let mut maker = self.side(opposite)[pos].clone();
        match taker.stp {
            SelfTradePrevention::CancelNewest => {
                self.cancel_all(taker, CancelReason::SelfTrade, out);
                true
            }
            SelfTradePrevention::CancelOldest => {
                self.side(opposite).remove(pos);
                self.cancel_all(&mut maker, CancelReason::SelfTrade, out);
                closed.push(maker);
                false
            }
            SelfTradePrevention::CancelBoth => {
                self.side(opposite).remove(pos);
                self.cancel_all(&mut maker, CancelReason::SelfTrade, out);
                closed.push(maker);
                self.cancel_all(taker, CancelReason::SelfTrade, out);
                true
            }
            SelfTradePrevention::Decrement => {
                let smaller = maker.leaves().min(taker.leaves());
                maker.qty -= smaller;
                // An iceberg gives up hidden lots first.
                maker.hidden -= smaller.min(maker.hidden);
                out.push(self.canceled(&maker, CancelReason::SelfTrade, smaller));
                if maker.leaves() == 0 {
                    self.side(opposite).remove(pos);
                    closed.push(maker);
                } else {
                    self.side(opposite)[pos] = maker;
                }
                taker.qty -= smaller;
                out.push(self.canceled(taker, CancelReason::SelfTrade, smaller));
                taker.leaves() == 0
            }
        }
    }

    /// Rests a new arrival; an iceberg shows one slice.
    pub(super) fn rest(&mut self, mut order: Order) {
        if let Some(display) = order.display {
            order.hidden = order.leaves() - display.min(order.leaves());
        }
        order.slice_cut = false;
        self.put_back(order);
    }

    /// Puts an order back where its priority says, shown and hidden as
    /// they are.
    pub(super) fn put_back(&mut self, order: Order) {
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
        // Hidden orders are never shown.
        for o in orders.iter().filter(|o| !o.dark) {
            let price = o.price.unwrap_or(0) * self.tick_units;
            match levels.last_mut() {
                Some((p, qty)) if *p == price => *qty += o.shown() * self.lot_units,
                _ => levels.push((price, o.shown() * self.lot_units)),
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
