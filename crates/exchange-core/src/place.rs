//! Order entry: validation, pre-trade risk, reservation, then matching.
//!
//! Every check runs before anything changes, so a rejected order leaves no
//! trace but its `rejected` event. Once accepted, the order reserves what
//! it could spend (quote for a buy: notional at its limit plus the largest
//! fee; base for a sell), trades, and then rests, expires or is done.

use exchange_types::event;
use exchange_types::limits::{
    MAX_OPEN_ORDERS, MAX_OPEN_ORDERS_PER_ACCOUNT, MAX_PRICE_LEVELS_PER_SIDE,
};
use exchange_types::{Event, EventKind, OrderType, Phase, Place, RejectReason, Side, TimeInForce};

use crate::engine::{Engine, Subject, FEE_ACCOUNT};
use crate::instrument::buy_cost;
use crate::orders::{Order, NIL};
use crate::phase::{check_session_tif, rests};

/// What an order needs from its account before it may trade.
struct Checked {
    instrument: u32,
    account: u32,
    price: u64,
    lots: u64,
    tif: TimeInForce,
    reserve: u64,
    reserve_asset: u32,
    fok_feasible: bool,
    expire_ts: Option<u64>,
    stop: Option<crate::stops::StopPlan>,
    oco_with: Option<exchange_types::OrderId>,
    /// An iceberg's display size in lots.
    display: Option<u64>,
    /// A market buy sized by funds: the funds in quote units.
    funds: Option<u64>,
}

impl Engine {
    pub(crate) fn place(&mut self, place: &Place, out: &mut Vec<Event>) {
        match self.check_place(place) {
            Ok(checked) => self.accept(place, checked, out),
            Err(reason) => self.reject(
                out,
                "place",
                Subject {
                    account: Some(place.account),
                    client_order_id: Some(place.client_order_id),
                    symbol: Some(place.symbol),
                    ..Subject::default()
                },
                reason,
            ),
        }
    }

    fn check_place(&self, place: &Place) -> Result<Checked, RejectReason> {
        let &instrument = self
            .instrument_by_symbol
            .get(&place.symbol)
            .ok_or(RejectReason::UnknownInstrument)?;
        if place.account == FEE_ACCOUNT {
            return Err(RejectReason::FeeAccountCannotTrade);
        }
        let expire_ts = place.ext().expire_ts;
        match (place.tif, expire_ts) {
            (TimeInForce::Gtd, None) => return Err(RejectReason::ExpireTsRequired),
            (TimeInForce::Gtd, Some(ts)) if ts <= self.now => {
                return Err(RejectReason::ExpireTsPassed)
            }
            (TimeInForce::Gtd, Some(_)) | (_, None) => {}
            (_, Some(_)) => return Err(RejectReason::ExpireTsNotAllowed),
        }
        let account = self
            .accounts
            .index(place.account)
            .ok_or(RejectReason::UnknownAccount)?;
        let inst = &self.instruments[instrument as usize];
        if inst.status == exchange_types::TradingStatus::Delisted {
            return Err(RejectReason::InstrumentDelisted);
        }
        // The one branch continuous trading pays for phases.
        if inst.phase != Phase::Continuous {
            Engine::check_phase_place(
                inst.phase,
                place.tif,
                place.order_type == OrderType::Market && place.ext().funds.is_some(),
            )?;
        } else if matches!(place.tif, TimeInForce::AtOpen | TimeInForce::AtClose) {
            check_session_tif(inst.phase, place.tif)?;
        }
        // One test for the accounts without risk controls.
        let risk = self.accounts.list[account as usize].risk.as_deref();
        if let Some(risk) = risk {
            risk.check_access(instrument)?;
        }
        let stop = self.check_stop(place, instrument)?;
        // A stop market order is a market order once triggered; until then
        // it trades nothing and needs no look at the book.
        let is_market = matches!(place.order_type, OrderType::Market | OrderType::Stop);
        let limit_price = match (place.order_type, place.price) {
            (OrderType::Limit | OrderType::StopLimit, Some(price)) => {
                Some(inst.price_to_ticks(price)?)
            }
            (OrderType::Limit | OrderType::StopLimit, None) => {
                return Err(RejectReason::PriceRequired)
            }
            (OrderType::Market | OrderType::Stop, Some(_)) => {
                return Err(RejectReason::PriceNotAllowed)
            }
            (OrderType::Market | OrderType::Stop, None) => None,
        };
        let funds = Self::check_funds(place, place.order_type == OrderType::Market)?;
        // A funds order's quantity is what its funds buy, known once the
        // book has been walked; the smallest order stands in until then.
        let mut lots = match funds {
            Some(_) => inst.min_lots.max(1),
            None => inst.qty_to_lots(place.qty)?,
        };
        // A market order never rests: any resting time in force means
        // immediate. A stop keeps its time in force until it triggers.
        // In a call a market order waits for the uncrossing instead, with
        // the time in force it was given (`call_market.rs`).
        let call_market =
            place.order_type == OrderType::Market && crate::phase::is_call(inst.phase);
        let tif = if place.order_type == OrderType::Market && rests(place.tif) && !call_market {
            TimeInForce::Ioc
        } else {
            place.tif
        };
        if place.post_only && (is_market || !rests(tif) || stop.is_some()) {
            return Err(RejectReason::PostOnlyNotAllowed);
        }
        let display = Self::check_display(inst, place, lots, tif)?;
        let band = inst.collar_band();
        if let (Some(price), Some((low, high))) = (limit_price, band) {
            if price < low || price > high {
                return Err(RejectReason::PriceOutsideCollar);
            }
        }
        // A market order has no price of its own: it is held to the
        // minimum at the reference price (last trade, or the configured
        // one), as Binance's NOTIONAL filter applies to market orders at
        // a recent average price; with no reference yet it is not held.
        if let Some(at) = limit_price.or(inst.reference_ticks) {
            if inst.below_min_notional(at, lots) {
                return Err(RejectReason::NotionalBelowMinimum);
            }
        }
        // A market order may trade down to (up to) the collar, no further.
        let mut price = if call_market {
            self.call_market_bound(instrument, place.side)?
        } else {
            limit_price
                .or(stop.and_then(|s| s.protection))
                .unwrap_or(match (place.side, band) {
                    (Side::Buy, Some((_, high))) => high,
                    (Side::Buy, None) => u64::MAX,
                    (Side::Sell, Some((low, _))) => low,
                    (Side::Sell, None) => 1,
                })
        };
        if let Some(risk) = risk {
            price = risk.check_order(
                inst,
                place.side,
                limit_price,
                price,
                lots,
                rests(tif) || stop.is_some(),
                self.accounts.list[account as usize].open_orders,
            )?;
        }
        if self
            .by_client_id
            .contains_key(&(account, place.client_order_id))
        {
            return Err(RejectReason::DuplicateClientOrderId);
        }
        let book = &self.books[instrument as usize];
        if place.post_only && book.side(place.side.opposite()).crosses(price) {
            return Err(RejectReason::PostOnlyWouldTake);
        }
        let oco_with = self.check_oco(place, account, instrument)?;
        if rests(tif) || stop.is_some() {
            if self.accounts.list[account as usize].open_orders >= MAX_OPEN_ORDERS_PER_ACCOUNT {
                return Err(RejectReason::TooManyOpenOrders);
            }
            if self.orders.len() >= MAX_OPEN_ORDERS {
                return Err(RejectReason::ExchangeFull);
            }
            let own = book.side(place.side);
            if stop.is_none()
                && !call_market
                && own.level_count() >= MAX_PRICE_LEVELS_PER_SIDE
                && !own.has_level(price)
            {
                return Err(RejectReason::TooManyPriceLevels);
            }
        }
        if let Some(funds) = funds {
            let walk = self.walk(
                instrument,
                place.side,
                account,
                place.stp,
                price,
                u64::MAX,
                Some(funds),
            );
            lots = walk.traded_lots;
            if let (Some(risk), true) = (risk, lots > 0) {
                risk.check_order(
                    inst,
                    place.side,
                    None,
                    price,
                    lots,
                    false,
                    self.accounts.list[account as usize].open_orders,
                )?;
            }
            let available = self.accounts.list[account as usize]
                .balance(inst.quote)
                .available;
            if available < funds {
                return Err(RejectReason::InsufficientFunds);
            }
            return Ok(Checked {
                instrument,
                account,
                price,
                lots,
                tif,
                reserve: funds,
                reserve_asset: inst.quote,
                fok_feasible: true,
                expire_ts: None,
                stop: None,
                oco_with,
                display: None,
                funds: Some(funds),
            });
        }
        let needs_walk = stop.is_none()
            && !call_market
            && (tif == TimeInForce::Fok || (is_market && place.side == Side::Buy));
        let walk = needs_walk.then(|| {
            self.walk(
                instrument, place.side, account, place.stp, price, lots, None,
            )
        });
        // A fill-or-kill stop is judged when it triggers (`trigger`), not
        // against the book it does not trade with yet.
        let fok_feasible = tif != TimeInForce::Fok
            || stop.is_some()
            || walk.is_some_and(|w| w.traded_lots == lots);
        let (reserve, reserve_asset) = match place.side {
            Side::Sell => (
                lots.checked_mul(inst.lot_units)
                    .ok_or(RejectReason::AmountOverflow)?,
                inst.base,
            ),
            Side::Buy => {
                let notional = if is_market && stop.is_none() && !call_market {
                    walk.map_or(Some(0), |w| w.notional)
                } else {
                    inst.notional(price, lots)
                };
                let cost = notional
                    .and_then(|n| buy_cost(n, inst.max_fee_bps()))
                    .ok_or(RejectReason::AmountOverflow)?;
                (cost, inst.quote)
            }
        };
        let available = self.accounts.list[account as usize]
            .balance(reserve_asset)
            .available;
        // A fill-or-kill that cannot fill reserves nothing, but an order the
        // account could never pay for is refused either way.
        if available < reserve {
            return Err(RejectReason::InsufficientFunds);
        }
        Ok(Checked {
            instrument,
            account,
            price,
            lots,
            tif,
            reserve,
            reserve_asset,
            fok_feasible,
            expire_ts,
            stop,
            oco_with,
            display,
            funds: None,
        })
    }

    fn accept(&mut self, place: &Place, c: Checked, out: &mut Vec<Event>) {
        let id = self.next_order_id;
        self.next_order_id += 1;
        let is_market = place.order_type == OrderType::Market;
        // A stop market order's price is its protection, not a limit the
        // client gave: like a market order's collar bound, not reported.
        let priced = !is_market && place.order_type != OrderType::Stop;
        self.emit_with(out, |e| {
            let inst = &e.instruments[c.instrument as usize];
            EventKind::Accepted(event::Accepted {
                account: place.account,
                client_order_id: place.client_order_id,
                order_id: id,
                symbol: place.symbol,
                side: place.side,
                order_type: place.order_type,
                price: priced.then(|| inst.price_units(c.price)),
                qty: inst.qty_units(c.lots),
                tif: c.tif,
                post_only: place.post_only,
                stp: place.stp,
                ext: Engine::accepted_ext(
                    inst,
                    c.stop.as_ref(),
                    place,
                    c.expire_ts,
                    c.display,
                    c.funds,
                ),
            })
        });
        if let Some(display) = c.display {
            self.iceberg_display.insert(id, display);
        }
        let slot = self.orders.insert(Order {
            id,
            account: c.account,
            instrument: c.instrument,
            side: place.side,
            tif: c.tif,
            stp: place.stp,
            post_only: place.post_only,
            is_market,
            price: c.price,
            qty: c.lots,
            filled: 0,
            reserved: 0,
            hidden: 0,
            client_order_id: place.client_order_id,
            indexed: false,
            stop: false,
            oco: false,
            prev: NIL,
            next: NIL,
            account_prev: NIL,
            account_next: NIL,
        });
        // A funds order its funds buy nothing of ends at once, as a
        // market order facing an empty book does.
        if !c.fok_feasible || (c.funds.is_some() && c.lots == 0) {
            self.expire(slot, out);
            return;
        }
        if let (TimeInForce::Gtd, Some(ts)) = (c.tif, c.expire_ts) {
            self.sessions.add_expiry(ts, id);
        }
        if c.reserve > 0 {
            self.orders.get_mut(slot).reserved = c.reserve;
            let balance = self.accounts.list[c.account as usize].balance_mut(c.reserve_asset);
            // `check_place` compared the same two numbers; nothing ran since
            // that could lower available. A release build would wrap.
            assert!(
                balance.available >= c.reserve,
                "reserving {} of {} available",
                c.reserve,
                balance.available
            );
            balance.available -= c.reserve;
            self.emit_balance(out, c.account, c.reserve_asset);
        }
        if let Some(other) = c.oco_with {
            if let Some(&other) = self.order_by_id.get(&other) {
                self.link_oco(slot, other);
            }
        }
        if let Some(plan) = c.stop {
            self.index_order(slot);
            self.hold_stop(slot, &plan);
            return;
        }
        if is_market && crate::phase::is_call(self.instruments[c.instrument as usize].phase) {
            self.hold_call_market(slot);
            return;
        }
        self.execute(slot, out);
    }

    /// The price a market order in a call is reserved at and never
    /// executes beyond: the tighter end of the collar and the static band;
    /// a buy without either could cost anything and is refused.
    fn call_market_bound(&self, instrument: u32, side: Side) -> Result<u64, RejectReason> {
        let collar = self.instruments[instrument as usize].collar_band();
        let band = self
            .volatility
            .bands
            .get(&instrument)
            .and_then(|b| b.static_band());
        let ends = collar.into_iter().chain(band);
        match side {
            Side::Buy => ends
                .map(|(_, high)| high)
                .min()
                .ok_or(RejectReason::MarketInCallNeedsBound),
            Side::Sell => Ok(ends.map(|(low, _)| low).max().unwrap_or(1)),
        }
    }

    /// Matches the order in `slot` (new, or a replace that lost priority)
    /// and then rests, expires or closes it.
    pub(crate) fn execute(&mut self, slot: u32, out: &mut Vec<Event>) {
        let (instrument, side, price) = {
            let order = self.orders.get(slot);
            (order.instrument, order.side, order.price)
        };
        // Most orders (a quote moved, a passive order) cross nothing: one
        // look at the opposite best spares them matching's set-up. Nothing
        // matches in a call either: the order waits for the uncross.
        let canceled_by_stp = self.instruments[instrument as usize].phase == Phase::Continuous
            && self.books[instrument as usize]
                .side(side.opposite())
                .crosses(price)
            && self.match_order(slot, out);
        if !canceled_by_stp {
            self.finish(slot, out);
        }
        // The fills may have tripped market-maker protection; the order has
        // matched to its end, and may now be one of those to cancel.
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
    }

    /// Rests, expires or closes an order that has matched.
    fn finish(&mut self, slot: u32, out: &mut Vec<Event>) {
        let order = self.orders.get(slot);
        if order.leaves() == 0 {
            self.release_all(slot, out);
            self.close_order(slot);
        } else if rests(order.tif) {
            self.rest(slot, out);
        } else {
            self.expire(slot, out);
        }
    }

    /// Ends an order that never rests: its remainder expires.
    pub(crate) fn expire(&mut self, slot: u32, out: &mut Vec<Event>) {
        self.release_all(slot, out);
        let order = self.close_order(slot);
        self.emit_with(out, |e| {
            let inst = &e.instruments[order.instrument as usize];
            EventKind::Expired(event::Expired {
                account: e.accounts.list[order.account as usize].id,
                order_id: order.id,
                client_order_id: order.client_order_id,
                symbol: inst.symbol,
                expired_qty: inst.qty_units(order.leaves()),
                filled_qty: inst.qty_units(order.filled),
            })
        });
    }
}
