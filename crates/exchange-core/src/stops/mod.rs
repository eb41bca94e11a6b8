//! Stop, stop-limit and trailing stop orders, if-touched (take-profit)
//! orders, and one-cancels-other pairs.
//!
//! An untriggered stop is an open order like any other (indexed by id and
//! client id, counted against its account, holding its reservation) that
//! sits in a per-instrument side table instead of a book, so market data
//! never sees it. The tables are by the way the last trade price must move:
//! buy stops and sell if-touched orders are keyed by (stop price, order
//! id) and trigger when it rises to their stop price; sell stops and buy
//! if-touched orders by (reversed stop price, order id) and trigger when it
//! falls to theirs. An if-touched order is otherwise a stop: it enters as
//! a market order (market-if-touched) or a limit order at its price
//! (limit-if-touched) once triggered, and is refused a trailing distance.
//!
//! Triggers are evaluated after every command that carried a trade, one
//! stop at a time: the rising one with the lowest stop price or the falling
//! one with the highest that the last price has reached (between the two,
//! the older order), which then enters the book as a new order would and may
//! trade, moving the last price and reaching further stops. At most
//! `MAX_TRIGGERS_PER_COMMAND` trigger per command; the rest stay reached
//! and trigger, in the same order, after the next command with a trade.
//!
//! Nothing here runs for a plain limit or market order: the hot path pays
//! one comparison of the trade counter per command and one flag test per
//! fill.

pub(crate) mod book;
mod replace;

use std::cmp::Reverse;
use std::collections::BTreeMap;

use exchange_types::event;
use exchange_types::limits::{
    MAX_PRICE_LEVELS_PER_SIDE, MAX_STOP_ORDERS_PER_SIDE, MAX_TRAILING_STOPS_PER_INSTRUMENT,
    MAX_TRIGGERS_PER_COMMAND,
};
use exchange_types::validate;
use exchange_types::{
    AcceptedExt, CancelReason, Event, EventKind, OrderId, OrderType, Place, RejectReason, Side,
    TimeInForce, Trailing, TrailingUnits,
};

use crate::admit::Admitted;
use crate::engine::Engine;
use crate::instrument::Instrument;
use book::{StopBook, StopInfo, StopPlan, TrailingTicks};

/// The parts of an order's `ext` that this module gives meaning to.
impl Engine {
    /// Validates a place's stop fields against `inst`; `Ok(None)` for an
    /// order that is not a stop.
    pub(crate) fn check_stop(
        &self,
        place: &Place,
        instrument: u32,
    ) -> Result<Option<StopPlan>, RejectReason> {
        let ext = place.ext();
        validate::stop_shape(place.order_type, ext)?;
        let inst = &self.instruments[instrument as usize];
        let (market, touched) = match place.order_type {
            OrderType::Stop => (true, false),
            OrderType::StopLimit => (false, false),
            OrderType::MarketIfTouched => (true, true),
            OrderType::LimitIfTouched => (false, true),
            OrderType::Limit
            | OrderType::Market
            | OrderType::MarketToLimit
            | OrderType::Midpoint => return Ok(None),
        };
        let last = inst.reference_ticks;
        // The shape passed: exactly one of the two is given, and a
        // distance in basis points is in range.
        let (stop, trailing) = match (ext.stop_price, ext.trailing) {
            (None, None) | (Some(_), Some(_)) => return Err(RejectReason::StopPriceRequired),
            (Some(price), None) => (
                inst.price_to_ticks(price)
                    .map_err(|_| RejectReason::StopPriceNotOnTick)?,
                None,
            ),
            (None, Some(t)) => {
                let t = match t {
                    Trailing::Amount(amount) => TrailingTicks::Amount(
                        inst.price_to_ticks(amount)
                            .map_err(|_| RejectReason::InvalidTrailing)?,
                    ),
                    Trailing::Bps(bps) => TrailingTicks::Bps(bps),
                };
                let last = last.ok_or(RejectReason::TrailingNeedsLastPrice)?;
                let stop = t
                    .stop_for(place.side, last)
                    .ok_or(RejectReason::InvalidTrailing)?;
                (stop, Some(t))
            }
        };
        // An if-touched order already touched is refused as a stop already
        // reached is (Binance refuses both alike): it would be a plain
        // order the client did not send.
        if last.is_some_and(|last| book::reached(place.side, touched, stop, last)) {
            return Err(RejectReason::StopWouldTriggerImmediately);
        }
        let protection = match (market, place.side) {
            (true, Side::Sell) => Some(1),
            _ => replace::protection(inst, market, place.side, stop)?,
        };
        if let Some(book) = self.stops.books.get(&instrument) {
            if book.direction_len(book::rises(place.side, touched)) >= MAX_STOP_ORDERS_PER_SIDE {
                return Err(RejectReason::TooManyStopOrders);
            }
            if trailing.is_some() && book.trailing.len() >= MAX_TRAILING_STOPS_PER_INSTRUMENT {
                return Err(RejectReason::TooManyTrailingStops);
            }
        }
        Ok(Some(StopPlan {
            stop,
            market,
            touched,
            trailing,
            protection,
        }))
    }

    /// Validates `oco_with`: another open order of the account on the same
    /// instrument, not a midpoint order, not yet in a pair. Returns its
    /// order id.
    pub(crate) fn check_oco(
        &self,
        place: &Place,
        account: u32,
        instrument: u32,
    ) -> Result<Option<OrderId>, RejectReason> {
        let Some(other) = place.ext().oco_with else {
            return Ok(None);
        };
        let &slot = self
            .by_client_id
            .get(&(account, other))
            .ok_or(RejectReason::OcoOrderNotFound)?;
        let order = self.orders.get(slot);
        if order.instrument != instrument {
            return Err(RejectReason::OcoOrderNotFound);
        }
        // A midpoint order trades when the lit quotes move, after the
        // command's pairs were settled: it takes part in no pair.
        if order.is_midpoint {
            return Err(RejectReason::MidpointNotAllowed);
        }
        if order.oco {
            return Err(RejectReason::OcoAlreadyLinked);
        }
        Ok(Some(order.id))
    }

    /// The stop, trailing, pair and other rarer details an `accepted`
    /// event reports, as admitted.
    pub(crate) fn accepted_ext(
        inst: &Instrument,
        admitted: &Admitted,
        place: &Place,
    ) -> Option<Box<AcceptedExt>> {
        let plan = admitted.stop.as_ref();
        let (expire_ts, display_lots, funds) =
            (admitted.expire_ts, admitted.display, admitted.funds);
        if plan.is_none()
            && place.ext().oco_with.is_none()
            && expire_ts.is_none()
            && display_lots.is_none()
            && funds.is_none()
            && !place.ext().hidden
            && admitted.min_lots.is_none()
        {
            return None;
        }
        Some(Box::new(AcceptedExt {
            stop_price: plan.map(|p| inst.price_units(p.stop)),
            trailing: plan.and_then(|p| p.trailing).map(|t| match t {
                TrailingTicks::Amount(ticks) => TrailingUnits::Amount(inst.price_units(ticks)),
                TrailingTicks::Bps(bps) => TrailingUnits::Bps(bps),
            }),
            oco_with: place.ext().oco_with,
            expire_ts,
            display_qty: display_lots.map(|lots| inst.qty_units(lots)),
            funds,
            hidden: place.ext().hidden,
            min_qty: admitted.min_lots.map(|lots| inst.qty_units(lots)),
        }))
    }

    /// Files an accepted order (already indexed and holding its
    /// reservation) as an untriggered stop.
    pub(crate) fn hold_stop(&mut self, slot: u32, plan: &StopPlan) {
        let order = self.orders.get_mut(slot);
        order.stop = true;
        let (id, instrument, side) = (order.id, order.instrument, order.side);
        let info = StopInfo {
            slot,
            instrument,
            side,
            stop: plan.stop,
            market: plan.market,
            touched: plan.touched,
            trailing: plan.trailing,
        };
        self.file_stop(id, info);
    }

    pub(crate) fn file_stop(&mut self, id: OrderId, info: StopInfo) {
        let book = self.stops.books.entry(info.instrument).or_default();
        book.insert(id, &info);
        if info.trailing.is_some() {
            book.trailing.insert(id);
        }
        let old = self.stops.info.insert(id, info);
        assert!(old.is_none(), "stop {id} was filed twice");
    }

    /// The stop table of an instrument that has untriggered stops.
    pub(crate) fn stop_book_mut(&mut self, instrument: u32) -> &mut StopBook {
        self.stops
            .books
            .get_mut(&instrument)
            .expect("a stop's instrument has a stop table")
    }

    /// Takes an untriggered stop out of the stop table (it stays open).
    pub(crate) fn unstop(&mut self, slot: u32) -> StopInfo {
        let order = self.orders.get_mut(slot);
        order.stop = false;
        let id = order.id;
        let info = self
            .stops
            .info
            .remove(&id)
            .unwrap_or_else(|| panic!("stop order {id} has no stop entry"));
        let book = self.stop_book_mut(info.instrument);
        book.remove(id, &info);
        if info.trailing.is_some() {
            book.trailing.remove(&id);
        }
        if book.is_empty() {
            self.stops.books.remove(&info.instrument);
        }
        info
    }

    /// Pairs two open orders as one-cancels-other.
    pub(crate) fn link_oco(&mut self, a: u32, b: u32) {
        let (ida, idb) = (self.orders.get(a).id, self.orders.get(b).id);
        self.orders.get_mut(a).oco = true;
        self.orders.get_mut(b).oco = true;
        self.stops.oco.insert(ida, idb);
        self.stops.oco.insert(idb, ida);
    }

    /// Dissolves the pair `slot` is in, returning the partner's id.
    pub(crate) fn unlink_oco(&mut self, slot: u32) -> Option<OrderId> {
        let order = self.orders.get_mut(slot);
        if !order.oco {
            return None;
        }
        order.oco = false;
        let id = order.id;
        let partner = self.stops.oco.remove(&id)?;
        self.stops.oco.remove(&partner);
        if let Some(&p) = self.order_by_id.get(&partner) {
            self.orders.get_mut(p).oco = false;
        }
        Some(partner)
    }

    /// A fill touched an order of a pair: its partner is canceled once the
    /// command has matched (not now: it may rest further along the very
    /// level being matched).
    #[cold]
    pub(crate) fn note_oco_fill(&mut self, slot: u32) {
        if let Some(partner) = self.unlink_oco(slot) {
            self.stops.oco_pending.push(partner);
        }
    }

    /// Cancels an open order by id, if it still is.
    fn cancel_partner(&mut self, id: OrderId, out: &mut Vec<Event>) {
        if let Some(&slot) = self.order_by_id.get(&id) {
            self.cancel_resting(slot, CancelReason::OneCancelsOther, out);
        }
    }

    /// The work a command that traded leaves for this module: cancel the
    /// partners of paired orders that traded, then trigger the stops the
    /// new last prices reached.
    #[cold]
    pub(crate) fn after_trades(&mut self, out: &mut Vec<Event>) {
        self.cancel_oco_pending(out);
        let mut budget = MAX_TRIGGERS_PER_COMMAND;
        let instruments: Vec<u32> = self.stops.books.keys().copied().collect();
        for instrument in instruments {
            if self.instruments[instrument as usize].status == exchange_types::TradingStatus::Halted
            {
                continue;
            }
            self.trail(instrument);
            while budget > 0 {
                let Some(slot) = self.next_reached(instrument) else {
                    break;
                };
                budget -= 1;
                self.trigger(slot, out);
                self.cancel_oco_pending(out);
            }
        }
    }

    fn cancel_oco_pending(&mut self, out: &mut Vec<Event>) {
        while !self.stops.oco_pending.is_empty() {
            let pending = std::mem::take(&mut self.stops.oco_pending);
            for id in pending {
                self.cancel_partner(id, out);
            }
        }
    }

    /// Moves the trailing stops of `instrument` after its last price: a
    /// sell stop up, a buy stop down, never back.
    fn trail(&mut self, instrument: u32) {
        let Some(last) = self.instruments[instrument as usize].reference_ticks else {
            return;
        };
        let Some(book) = self.stops.books.get(&instrument) else {
            return;
        };
        if book.trailing.is_empty() {
            return;
        }
        let ids: Vec<OrderId> = book.trailing.iter().copied().collect();
        for id in ids {
            let info = self.stops.info[&id];
            let Some(t) = info.trailing else { continue };
            let Some(candidate) = t.stop_for(info.side, last) else {
                continue;
            };
            let better = match info.side {
                Side::Buy => candidate < info.stop,
                Side::Sell => candidate > info.stop,
            };
            if better {
                self.move_stop(id, candidate);
            }
        }
    }

    /// The next stop of `instrument` the last price has reached, if any.
    fn next_reached(&self, instrument: u32) -> Option<u32> {
        let last = self.instruments[instrument as usize].reference_ticks?;
        let book = self.stops.books.get(&instrument)?;
        let rising = book
            .rises
            .first_key_value()
            .filter(|((stop, _), _)| last >= *stop)
            .map(|((_, id), &slot)| (*id, slot));
        let falling = book
            .falls
            .first_key_value()
            .filter(|((Reverse(stop), _), _)| last <= *stop)
            .map(|((_, id), &slot)| (*id, slot));
        match (rising, falling) {
            (Some(r), Some(f)) => Some(if r.0 < f.0 { r.1 } else { f.1 }),
            (r, f) => r.or(f).map(|(_, slot)| slot),
        }
    }

    /// Triggers the stop in `slot`: reports it, cancels its partner, and
    /// enters it as a market or limit order.
    fn trigger(&mut self, slot: u32, out: &mut Vec<Event>) {
        let info = self.unstop(slot);
        let last = self.instruments[info.instrument as usize]
            .reference_ticks
            .expect("a stop triggers only on a last price");
        self.emit_with(out, |e| {
            let order = e.orders.get(slot);
            let inst = &e.instruments[info.instrument as usize];
            EventKind::Triggered(event::Triggered {
                account: e.accounts.get(order.account).id(),
                order_id: order.id,
                client_order_id: order.client_order_id,
                symbol: inst.symbol,
                stop_price: inst.price_units(info.stop),
                last_price: inst.price_units(last),
                qty: inst.qty_units(order.qty),
            })
        });
        if let Some(partner) = self.unlink_oco(slot) {
            self.cancel_partner(partner, out);
        }
        let inst = &self.instruments[info.instrument as usize];
        let band = inst.collar_band();
        let levels_full = {
            let order = self.orders.get(slot);
            let own = self.books[info.instrument as usize].side(order.side);
            own.level_count() >= MAX_PRICE_LEVELS_PER_SIDE && !own.has_level(order.price)
        };
        let order = self.orders.get_mut(slot);
        if info.market {
            if order.tif == TimeInForce::Gtc {
                order.tif = TimeInForce::Ioc;
            }
            if order.side == Side::Sell {
                // A sell holds its quantity, not a price: it may go as low
                // as a market sell may now.
                order.is_market = true;
                order.price = band.map_or(1, |(low, _)| low);
            }
            // A buy stays a limit at its protection price, which its
            // reservation covers.
        } else if order.tif == TimeInForce::Gtc && levels_full {
            // No room for a new level: the remainder expires rather than
            // push the book past its bound.
            order.tif = TimeInForce::Ioc;
        }
        if order.tif == TimeInForce::Fok {
            let o = self.orders.get(slot);
            let (side, account, stp, price, lots) = (o.side, o.account, o.stp, o.price, o.leaves());
            let walk = self.walk(info.instrument, side, account, stp, price, lots, None);
            if walk.traded_lots != lots {
                self.expire(slot, out);
                return;
            }
        }
        self.execute(slot, out);
    }
}

impl Engine {
    /// The audit's part for stops: each untriggered stop is open, off the
    /// books, filed where its stop price says, and holds what its order
    /// needs; each pair is two open orders of one account and instrument.
    /// Adds what stops reserve and count to the audit's totals.
    pub(crate) fn audit_stops(
        &self,
        reserved: &mut BTreeMap<(u32, u32), u128>,
        per_account: &mut BTreeMap<u32, u32>,
    ) -> Result<usize, String> {
        let mut filed = 0usize;
        for book in self.stops.books.values() {
            filed += book.rises.len() + book.falls.len();
            if book.is_empty() {
                return Err("an empty stop table is kept".into());
            }
        }
        if filed != self.stops.info.len() {
            return Err(format!(
                "{filed} stops filed but {} known",
                self.stops.info.len()
            ));
        }
        for (&id, info) in &self.stops.info {
            let o = self.orders.get(info.slot);
            let book = self.stops.books.get(&info.instrument);
            let in_table = book.is_some_and(|b| b.files(id, info));
            let trailing_ok = book.is_some_and(|b| b.trailing.contains(&id))
                == info.trailing.is_some()
                && !(info.touched && info.trailing.is_some());
            if o.id != id
                || !o.stop
                || !o.indexed
                || o.filled != 0
                || o.side != info.side
                || o.instrument != info.instrument
                || !in_table
                || !trailing_ok
                || self.order_by_id.get(&id) != Some(&info.slot)
            {
                return Err(format!("stop order {id} is misfiled"));
            }
            let need = self.reservation_for(info.slot, o.price, o.leaves());
            if need != Some(o.reserved) {
                return Err(format!(
                    "stop order {id} reserves {} but needs {need:?}",
                    o.reserved
                ));
            }
            *reserved
                .entry((o.account, self.reserved_asset(o)))
                .or_default() += u128::from(o.reserved);
            *per_account.entry(o.account).or_default() += 1;
        }
        self.audit_pairs()?;
        Ok(self.stops.info.len())
    }

    /// Each pair is two open orders of one account and instrument, both
    /// flagged, and no order is flagged outside a pair.
    fn audit_pairs(&self) -> Result<(), String> {
        for (&a, &b) in &self.stops.oco {
            let ok = self.stops.oco.get(&b) == Some(&a)
                && a != b
                && match (self.order_by_id.get(&a), self.order_by_id.get(&b)) {
                    (Some(&sa), Some(&sb)) => {
                        let (oa, ob) = (self.orders.get(sa), self.orders.get(sb));
                        oa.oco
                            && ob.oco
                            && oa.account == ob.account
                            && oa.instrument == ob.instrument
                    }
                    _ => false,
                };
            if !ok {
                return Err(format!("one-cancels-other pair {a}/{b} is broken"));
            }
        }
        // Pairs check their orders' flags; a flag without a pair would
        // refuse the order's next pairing, and a snapshot (which writes
        // pairs, not flags) would restore it unflagged.
        let mut flagged = 0usize;
        for account in self.accounts.iter() {
            let mut slot = account.orders_head();
            while slot != crate::orders::NIL {
                let o = self.orders.get(slot);
                flagged += usize::from(o.oco);
                slot = o.account_next;
            }
        }
        if flagged != self.stops.oco.len() {
            return Err(format!(
                "{flagged} orders flagged as paired but {} in pairs",
                self.stops.oco.len()
            ));
        }
        if !self.stops.oco_pending.is_empty() {
            return Err("one-cancels-other work left between commands".into());
        }
        Ok(())
    }
}
