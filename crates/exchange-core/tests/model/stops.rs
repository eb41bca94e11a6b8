//! Stops and one-cancels-other pairs in the reference model, as
//! docs/market-model.md states them: a stop waits off the book until the
//! last trade price reaches it (a buy stop at or above, a sell stop at or
//! below; an if-touched order the other way: a buy at or below, a sell at
//! or above). After each command that traded, the partners of paired
//! orders that traded are canceled, then the stops reached trigger one at a
//! time: the one a rising price reached with the lowest stop price or the
//! one a falling price reached with the highest (between the two, the
//! older order), found by looking at every
//! stop again after each trigger, at most `MAX_TRIGGERS_PER_COMMAND` per
//! command. A triggered stop reports `triggered`, cancels its partner and
//! enters as a new order would, under its own id.
//!
//! Not modeled (the differential streams send none): trailing stops, and
//! stop market and market-if-touched buys, which need a collar those
//! streams do not list.

use exchange_types::limits::MAX_TRIGGERS_PER_COMMAND;
use exchange_types::*;

use super::book::{Market, Order};
use super::{Ev, Model};

/// An untriggered stop: the order it enters as once triggered.
#[derive(Clone, Debug)]
pub(super) struct Stop {
    pub(super) order: Order,
    /// In ticks.
    pub(super) stop: u64,
    /// Enters as a market order, else as a limit order.
    pub(super) market: bool,
    /// An if-touched order, triggered from the other side than a stop.
    pub(super) touched: bool,
    pub(super) tif: TimeInForce,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct StopPlan {
    pub(super) stop: u64,
    pub(super) market: bool,
    pub(super) touched: bool,
}

/// Whether a rising last price triggers an order of `side` (a buy stop, a
/// sell if-touched order); else a falling one does.
fn rises(side: Side, touched: bool) -> bool {
    matches!((side, touched), (Side::Buy, false) | (Side::Sell, true))
}

impl Market {
    /// Whether the last price has reached `stop` for a stop of `side`.
    fn reached(&self, side: Side, touched: bool, stop: u64) -> bool {
        match (rises(side, touched), self.last) {
            (_, None) => false,
            (true, Some(last)) => last >= stop,
            (false, Some(last)) => last <= stop,
        }
    }

    /// A replace's new stop price for `s`: `None` if it is the same.
    pub(super) fn check_new_stop(&self, to: Dec, s: &Stop) -> Result<Option<u64>, RejectReason> {
        let stop = self
            .price_ticks(to)
            .map_err(|_| RejectReason::StopPriceNotOnTick)?;
        if stop == s.stop {
            return Ok(None);
        }
        if self.reached(s.order.side, s.touched, stop) {
            return Err(RejectReason::StopWouldTriggerImmediately);
        }
        Ok(Some(stop))
    }

    /// The position of the stop to trigger next, if the last price has
    /// reached any: every stop is looked at.
    fn next_reached(&self) -> Option<usize> {
        let reached = |up: bool| {
            self.stops.iter().enumerate().filter(move |(_, s)| {
                rises(s.order.side, s.touched) == up
                    && self.reached(s.order.side, s.touched, s.stop)
            })
        };
        // The lowest a rise reached, then the older; the highest a fall
        // reached, then the older.
        let buy = reached(true).min_by_key(|(_, s)| (s.stop, s.order.id));
        let sell = reached(false).min_by_key(|(_, s)| (u64::MAX - s.stop, s.order.id));
        match (buy, sell) {
            (Some(b), Some(s)) if s.1.order.id < b.1.order.id => Some(s.0),
            (Some(b), _) => Some(b.0),
            (None, s) => s.map(|s| s.0),
        }
    }
}

impl Model {
    /// The stop fields of a place, in the order the documentation lists
    /// their refusals.
    pub(super) fn check_stop(
        &self,
        index: usize,
        p: &Place,
    ) -> Result<Option<StopPlan>, RejectReason> {
        let ext = p.ext();
        let (market, touched) = match p.order_type {
            OrderType::Stop => (true, false),
            OrderType::StopLimit => (false, false),
            OrderType::MarketIfTouched => (true, true),
            OrderType::LimitIfTouched => (false, true),
            // Their stop fields are refused as any non-stop's.
            OrderType::Limit
            | OrderType::Market
            | OrderType::MarketToLimit
            | OrderType::Midpoint => {
                if ext.stop_price.is_some() || ext.trailing.is_some() {
                    return Err(RejectReason::StopPriceNotAllowed);
                }
                return Ok(None);
            }
        };
        if touched && ext.trailing.is_some() {
            return Err(RejectReason::TrailingNotAllowed);
        }
        assert!(ext.trailing.is_none(), "trailing stops are not modeled");
        let m = &self.markets[index];
        let stop = ext.stop_price.ok_or(RejectReason::StopPriceRequired)?;
        let stop = m
            .price_ticks(stop)
            .map_err(|_| RejectReason::StopPriceNotOnTick)?;
        if m.reached(p.side, touched, stop) {
            return Err(RejectReason::StopWouldTriggerImmediately);
        }
        if market && p.side == Side::Buy {
            return Err(RejectReason::StopMarketBuyNeedsCollar);
        }
        Ok(Some(StopPlan {
            stop,
            market,
            touched,
        }))
    }

    /// `oco_with`: an open order of the account on the same instrument,
    /// not in a pair yet.
    pub(super) fn check_oco(
        &self,
        index: usize,
        p: &Place,
    ) -> Result<Option<OrderId>, RejectReason> {
        let Some(other) = p.ext().oco_with else {
            return Ok(None);
        };
        let at = self
            .find(|o| o.account == p.account && o.client_order_id == other)
            .filter(|at| at.market() == index)
            .ok_or(RejectReason::OcoOrderNotFound)?;
        if matches!(at, super::At::Mid(..)) {
            return Err(RejectReason::MidpointNotAllowed);
        }
        let id = self.order(at).id;
        if self.pairs.contains_key(&id) {
            return Err(RejectReason::OcoAlreadyLinked);
        }
        Ok(Some(id))
    }

    pub(super) fn pair(&mut self, id: OrderId, partner: Option<OrderId>) {
        if let Some(partner) = partner {
            self.pairs.insert(id, partner);
            self.pairs.insert(partner, id);
        }
    }

    /// Dissolves the pair `id` is in; returns the partner.
    pub(super) fn unpair(&mut self, id: OrderId) -> Option<OrderId> {
        let partner = self.pairs.remove(&id)?;
        self.pairs.remove(&partner);
        Some(partner)
    }

    /// Every trade since `from` dissolves the pairs of its taker and maker,
    /// in that order, and leaves their partners to cancel.
    pub(super) fn note_fills(&mut self, from: usize, out: &[Ev]) {
        for e in &out[from..] {
            if let Ev::Trade {
                taker_order_id,
                maker_order_id,
                ..
            } = e
            {
                for id in [*taker_order_id, *maker_order_id] {
                    if let Some(partner) = self.unpair(id) {
                        self.pending.push(partner);
                    }
                }
            }
        }
    }

    /// Cancels order `id` if it is open, wherever it is.
    pub(super) fn cancel_open(&mut self, id: OrderId, reason: CancelReason, out: &mut Vec<Ev>) {
        if let Some(at) = self.find(|o| o.id == id) {
            let mut order = self.take(at);
            self.markets[at.market()].cancel_all(&mut order, reason, out);
            self.close([order]);
        }
    }

    fn cancel_pending(&mut self, out: &mut Vec<Ev>) {
        while !self.pending.is_empty() {
            for id in std::mem::take(&mut self.pending) {
                self.cancel_open(id, CancelReason::OneCancelsOther, out);
            }
        }
    }

    /// The end of a command that traded.
    pub(super) fn after_trades(&mut self, out: &mut Vec<Ev>) {
        self.cancel_pending(out);
        let mut budget = MAX_TRIGGERS_PER_COMMAND;
        for index in 0..self.markets.len() {
            if self.markets[index].halted {
                continue;
            }
            while budget > 0 {
                let Some(pos) = self.markets[index].next_reached() else {
                    break;
                };
                budget -= 1;
                self.trigger(index, pos, out);
                self.cancel_pending(out);
            }
        }
    }

    fn trigger(&mut self, index: usize, pos: usize, out: &mut Vec<Ev>) {
        let s = self.markets[index].stops.remove(pos);
        let m = &self.markets[index];
        out.push(Ev::Triggered {
            order_id: s.order.id,
            stop_price: s.stop * m.tick_units,
            last_price: m.last.unwrap_or(0) * m.tick_units,
        });
        if let Some(partner) = self.unpair(s.order.id) {
            self.cancel_open(partner, CancelReason::OneCancelsOther, out);
        }
        let mut order = s.order;
        let mut tif = s.tif;
        if s.market {
            order.price = None;
            if tif == TimeInForce::Gtc {
                tif = TimeInForce::Ioc;
            }
        }
        if tif == TimeInForce::Fok && !self.fills_completely(index, &order) {
            let lot = self.markets[index].lot_units;
            out.push(Ev::Expired {
                order_id: order.id,
                expired_qty: order.leaves() * lot,
                filled_qty: 0,
            });
            self.close([order]);
            return;
        }
        let from = out.len();
        self.execute(index, order, tif, out);
        self.note_fills(from, out);
    }

    /// Pairs outlive neither order: a partner left alone stays open.
    pub(super) fn prune_pairs(&mut self) {
        let open: Vec<OrderId> = self
            .pairs
            .keys()
            .copied()
            .filter(|&id| self.find(|o| o.id == id).is_some())
            .collect();
        self.pairs
            .retain(|a, b| open.contains(a) && open.contains(b));
    }
}
