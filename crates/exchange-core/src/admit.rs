//! The second stage of an order: admission. An order is held to the state
//! it meets:
//! the instrument and its phase, the account and its member controls, the
//! instrument's units, collar and minimum, the book's capacity and the
//! order's relations (duplicate ids, one-cancels-other).
//!
//! Admission reads and never writes: a refused order leaves no trace but
//! its `rejected` event. It ends with the price the order may trade to and
//! its quantity in lots, which reservation (`reserve.rs`) prices.
//!
//! The checks run in a fixed order, which decides the reason a command
//! with several faults is refused for: instrument, expiry, account,
//! listing, phase (and what a call refuses of market-to-limit and
//! minimum-quantity orders), access, stop, price (a market-to-limit
//! order's from the book), funds, quantity, post-only, display, minimum
//! acceptable quantity, collar, minimum notional, member limits,
//! relations, capacity. The shape
//! rules among them are `exchange_types::validate`'s, the same functions
//! the edges run before the log.

use exchange_types::limits::{
    MAX_MIDPOINT_ORDERS_PER_INSTRUMENT, MAX_OPEN_ORDERS, MAX_OPEN_ORDERS_PER_ACCOUNT,
    MAX_PRICE_LEVELS_PER_SIDE,
};
use exchange_types::validate::{self, rests};
use exchange_types::{
    OrderId, OrderType, Phase, Place, RejectReason, Side, TimeInForce, TradingStatus,
};

use crate::engine::{Engine, FEE_ACCOUNT};
use crate::instrument::Instrument;
use crate::sessions::check_session_tif;
use crate::stops::book::StopPlan;

/// An admitted order, before its reservation is priced.
pub(crate) struct Admitted {
    pub instrument: u32,
    pub account: u32,
    /// The price it may trade to: its limit, a stop's protection, a
    /// market order's bound from the collar, a call or member band.
    pub price: u64,
    pub lots: u64,
    /// The time in force it rests with (a market order's becomes `Ioc`).
    pub tif: TimeInForce,
    /// A good-till-date order's expire time, as sent.
    pub expire_ts: Option<u64>,
    pub stop: Option<StopPlan>,
    pub oco_with: Option<OrderId>,
    /// An iceberg's display size in lots.
    pub display: Option<u64>,
    /// A market buy sized by funds: the funds in quote units.
    pub funds: Option<u64>,
    /// A market order in a call: it waits for the uncrossing.
    pub call_market: bool,
    /// A market or stop-market order: no price of its own.
    pub is_market: bool,
    /// The minimum acceptable quantity in lots: what it must trade on
    /// entry or be canceled whole.
    pub min_lots: Option<u64>,
    /// A hidden order: it rests on the book's hidden side.
    pub hidden: bool,
    /// A midpoint order: it goes to the midpoint book, and its minimum
    /// acceptable quantity is there, not in `min_lots`.
    pub midpoint: Option<crate::midpoint::Terms>,
}

/// The order's instrument and account, as indices.
#[derive(Clone, Copy)]
struct Parties {
    instrument: u32,
    account: u32,
}

impl Engine {
    /// Admits an order whose shape passed, or says why not.
    #[inline(always)]
    pub(crate) fn admit(&self, place: &Place) -> Result<Admitted, RejectReason> {
        let parties = self.admit_parties(place)?;
        let mut admitted = self.admit_terms(place, parties)?;
        self.admit_member(place, &mut admitted)?;
        Ok(admitted)
    }

    /// The instrument and account exist, may trade, and the instrument's
    /// phase takes this order.
    #[inline(always)]
    fn admit_parties(&self, place: &Place) -> Result<Parties, RejectReason> {
        let &instrument = self
            .instrument_by_symbol
            .get(&place.symbol)
            .ok_or(RejectReason::UnknownInstrument)?;
        if place.account == FEE_ACCOUNT {
            return Err(RejectReason::FeeAccountCannotTrade);
        }
        validate::expire_shape(place.tif, place.ext().expire_ts)?;
        if let (TimeInForce::Gtd, Some(ts)) = (place.tif, place.ext().expire_ts) {
            if ts <= self.now {
                return Err(RejectReason::ExpireTsPassed);
            }
        }
        let account = self
            .accounts
            .index(place.account)
            .ok_or(RejectReason::UnknownAccount)?;
        let inst = &self.instruments[instrument as usize];
        if inst.status == TradingStatus::Delisted {
            return Err(RejectReason::InstrumentDelisted);
        }
        // The one branch continuous trading pays for phases.
        if inst.phase != Phase::Continuous {
            Engine::check_phase_place(
                inst.phase,
                place.tif,
                place.order_type == OrderType::Market && place.ext().funds.is_some(),
            )?;
            // Every phase but a call has refused the order by now.
            Engine::check_call_entry(place)?;
        } else if matches!(place.tif, TimeInForce::AtOpen | TimeInForce::AtClose) {
            check_session_tif(inst.phase, place.tif)?;
        }
        // One test for the accounts without risk controls.
        if let Some(risk) = self.accounts.get(account).risk() {
            risk.check_access(instrument)?;
        }
        Ok(Parties {
            instrument,
            account,
        })
    }

    /// The order in the instrument's units, within its collar and minimum,
    /// with the price it may trade to.
    #[inline(always)]
    fn admit_terms(&self, place: &Place, parties: Parties) -> Result<Admitted, RejectReason> {
        let Parties {
            instrument,
            account,
        } = parties;
        let inst = &self.instruments[instrument as usize];
        let stop = self.check_stop(place, instrument)?;
        // A stop market (or market-if-touched) order is a market order once
        // triggered; until then it trades nothing and needs no look at the
        // book.
        let is_market = matches!(
            place.order_type,
            OrderType::Market | OrderType::Stop | OrderType::MarketIfTouched
        );
        validate::price_shape(place.order_type, place.price.is_some())?;
        let limit_price = match place.price {
            Some(price) => Some(inst.price_to_ticks(price)?),
            // In a call it waits for the auction as a market order does.
            None if place.order_type == OrderType::MarketToLimit
                && !crate::sessions::is_call(inst.phase) =>
            {
                Some(self.market_to_limit_price(instrument, place.side)?)
            }
            None => None,
        };
        let funds = validate::funds_shape(place)?;
        // A funds order's quantity is what its funds buy, known once the
        // book has been walked; the smallest order stands in until then.
        let lots = match funds {
            Some(_) => inst.min_lots.max(1),
            None => inst.qty_to_lots(place.qty)?,
        };
        // A market order never rests: any resting time in force means
        // immediate. A stop keeps its time in force until it triggers.
        // In a call a market order waits for the uncrossing instead, with
        // the time in force it was given (`call_market.rs`).
        let call_market = matches!(
            place.order_type,
            OrderType::Market | OrderType::MarketToLimit
        ) && crate::sessions::is_call(inst.phase);
        let tif = if place.order_type == OrderType::Market && rests(place.tif) && !call_market {
            TimeInForce::Ioc
        } else {
            place.tif
        };
        validate::post_only_shape(place)?;
        let display = Self::display_lots(inst, validate::display_shape(place)?, lots)?;
        let (min_lots, hidden) = match place.ext {
            None => (None, false),
            Some(_) => (
                Self::min_lots(inst, validate::min_qty_shape(place)?)?,
                Self::check_hidden(place, inst, limit_price, lots)?,
            ),
        };
        let mut admitted = Admitted {
            instrument,
            account,
            price: 0,
            lots,
            tif,
            expire_ts: place.ext().expire_ts,
            stop,
            oco_with: None,
            display,
            funds,
            call_market,
            is_market,
            min_lots,
            hidden,
            midpoint: None,
        };
        admitted.price = self.admit_price(place, inst, limit_price, &admitted)?;
        if place.order_type == OrderType::Midpoint {
            self.admit_midpoint(place, &mut admitted)?;
        }
        self.admit_limits(place, inst, limit_price, admitted)
    }

    /// The collar and the minimum notional, then the price the order may
    /// trade to.
    #[inline(always)]
    fn admit_price(
        &self,
        place: &Place,
        inst: &Instrument,
        limit_price: Option<u64>,
        admitted: &Admitted,
    ) -> Result<u64, RejectReason> {
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
            if inst.below_min_notional(at, admitted.lots) {
                return Err(RejectReason::NotionalBelowMinimum);
            }
        }
        // A market order may trade down to (up to) the collar, no further.
        if admitted.call_market {
            return self.call_market_bound(admitted, place.side);
        }
        Ok(limit_price
            .or(admitted.stop.and_then(|s| s.protection))
            .unwrap_or(match (place.side, band) {
                (Side::Buy, Some((_, high))) => high,
                (Side::Buy, None) => u64::MAX,
                (Side::Sell, Some((low, _))) => low,
                (Side::Sell, None) => 1,
            }))
    }

    /// The account's member risk limits, which may tighten a market
    /// order's bound.
    #[inline(always)]
    fn admit_limits(
        &self,
        place: &Place,
        inst: &Instrument,
        limit_price: Option<u64>,
        mut admitted: Admitted,
    ) -> Result<Admitted, RejectReason> {
        let account = &self.accounts.get(admitted.account);
        if let Some(risk) = account.risk() {
            admitted.price = risk.check_order(
                inst,
                place.side,
                limit_price,
                admitted.price,
                admitted.lots,
                rests(admitted.tif) || admitted.stop.is_some(),
                account.open_orders(),
            )?;
        }
        Ok(admitted)
    }

    /// The order's relations (a fresh client order id, a one-cancels-other
    /// partner, a post-only that would not take) and the room it needs on
    /// the book and in the venue.
    #[inline(always)]
    fn admit_member(&self, place: &Place, admitted: &mut Admitted) -> Result<(), RejectReason> {
        let (instrument, account) = (admitted.instrument, admitted.account);
        if self
            .by_client_id
            .contains_key(&(account, place.client_order_id))
        {
            return Err(RejectReason::DuplicateClientOrderId);
        }
        let book = &self.books[instrument as usize];
        if place.post_only && book.crosses(place.side.opposite(), admitted.price) {
            return Err(RejectReason::PostOnlyWouldTake);
        }
        admitted.oco_with = self.check_oco(place, account, instrument)?;
        if rests(admitted.tif) || admitted.stop.is_some() {
            if self.accounts.get(account).open_orders() >= MAX_OPEN_ORDERS_PER_ACCOUNT {
                return Err(RejectReason::TooManyOpenOrders);
            }
            if self.orders.len() >= MAX_OPEN_ORDERS {
                return Err(RejectReason::ExchangeFull);
            }
            let own = book.resting_side(place.side, admitted.hidden);
            if admitted.stop.is_none()
                && !admitted.call_market
                && own.level_count() >= MAX_PRICE_LEVELS_PER_SIDE
                && !own.has_level(admitted.price)
            {
                return Err(RejectReason::TooManyPriceLevels);
            }
        }
        Ok(())
    }

    /// What a minimum-quantity order cannot be in a call, where nothing
    /// trades on entry, nor a midpoint order, which takes no part in
    /// auctions (`docs/market-model.md`).
    #[cold]
    fn check_call_entry(place: &Place) -> Result<(), RejectReason> {
        if place.order_type == OrderType::Midpoint {
            return Err(RejectReason::MidpointInCall);
        }
        if place.ext().min_qty.is_some() {
            return Err(RejectReason::MinQtyInCall);
        }
        Ok(())
    }

    /// A midpoint order's own terms: its shape, its minimum acceptable
    /// quantity (held on every execution, so kept from the entry check
    /// against the lit book), an unlimited one's bound, and room in the
    /// midpoint book.
    #[cold]
    fn admit_midpoint(&self, place: &Place, admitted: &mut Admitted) -> Result<(), RejectReason> {
        validate::midpoint_shape(place)?;
        let unlimited = place.price.is_none();
        if unlimited {
            // Reserved and never executed beyond, as a market order in a
            // call: the tighter end of the collar and the static band, or
            // for a buy without either what its account can pay.
            admitted.price = self.call_market_bound(admitted, place.side)?;
        }
        let book = self.midpoints.book(admitted.instrument);
        if rests(admitted.tif)
            && book.is_some_and(|b| b.len() >= MAX_MIDPOINT_ORDERS_PER_INSTRUMENT)
        {
            return Err(RejectReason::TooManyMidpointOrders);
        }
        admitted.midpoint = Some(crate::midpoint::Terms {
            unlimited,
            min_lots: admitted.min_lots.take(),
        });
        Ok(())
    }

    /// A market-to-limit order's limit: the best price on the other side,
    /// as CME Globex prices its market-limit order; with that side empty
    /// it is refused, as there.
    #[cold]
    fn market_to_limit_price(&self, instrument: u32, side: Side) -> Result<u64, RejectReason> {
        self.books[instrument as usize]
            .side(side.opposite())
            .best()
            .map(|level| level.price)
            .ok_or(RejectReason::MarketToLimitNoOpposite)
    }

    /// Whether the order is hidden, and if so that it may be: a limit
    /// order that may rest and is no iceberg, on an instrument that takes
    /// hidden orders, worth at least its minimum for them.
    #[cold]
    fn check_hidden(
        place: &Place,
        inst: &Instrument,
        limit_price: Option<u64>,
        lots: u64,
    ) -> Result<bool, RejectReason> {
        if !place.ext().hidden {
            return Ok(false);
        }
        validate::hidden_shape(place)?;
        let minimum = inst
            .hidden_min_notional
            .ok_or(RejectReason::HiddenNotOffered)?;
        // The shape rule made it a limit order, so it has a price; a value
        // beyond representation is above any minimum.
        let price = limit_price.ok_or(RejectReason::HiddenNotAllowed)?;
        if inst.notional(price, lots).is_some_and(|n| n < minimum) {
            return Err(RejectReason::HiddenBelowMinimum);
        }
        Ok(true)
    }

    /// A minimum acceptable quantity (units) in whole lots.
    #[cold]
    fn min_lots(inst: &Instrument, units: Option<u64>) -> Result<Option<u64>, RejectReason> {
        let Some(units) = units else {
            return Ok(None);
        };
        if units % inst.lot_units != 0 {
            return Err(RejectReason::InvalidMinQty);
        }
        Ok(Some(units / inst.lot_units))
    }

    /// The price a market order in a call is reserved at and never
    /// executes beyond: the tighter end of the collar and the static band.
    /// A buy with neither is bounded by its account instead: the highest
    /// price at which its available quote pays for all its lots and the
    /// largest fee, what an unbounded market buy could spend at most. It
    /// is refused only when the account could not pay even one tick.
    fn call_market_bound(&self, admitted: &Admitted, side: Side) -> Result<u64, RejectReason> {
        let instrument = admitted.instrument;
        let collar = self.instruments[instrument as usize].collar_band();
        let band = self.volatility.static_band(instrument);
        let ends = collar.into_iter().chain(band);
        match side {
            Side::Buy => match ends.map(|(_, high)| high).min() {
                Some(high) => Ok(high),
                None => self.affordable_bound(admitted),
            },
            Side::Sell => Ok(ends.map(|(low, _)| low).max().unwrap_or(1)),
        }
    }

    /// The highest price (ticks) at which the admitted buy's lots, with
    /// the largest fee, cost no more than its account has available.
    #[cold]
    fn affordable_bound(&self, admitted: &Admitted) -> Result<u64, RejectReason> {
        let inst = &self.instruments[admitted.instrument as usize];
        let available = self
            .accounts
            .balance(admitted.account, inst.quote)
            .available;
        let fits = |price: u64| {
            inst.notional(price, admitted.lots)
                .and_then(|n| crate::instrument::buy_cost(n, inst.max_fee_bps()))
                .is_some_and(|cost| cost <= available)
        };
        if !fits(1) {
            return Err(RejectReason::InsufficientFunds);
        }
        // The cost grows with the price: bisect for the highest that fits.
        let (mut low, mut high) = (1u64, u64::MAX);
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if fits(mid) {
                low = mid;
            } else {
                high = mid;
            }
        }
        Ok(if fits(high) { high } else { low })
    }
}
