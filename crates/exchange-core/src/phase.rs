//! Trading phases: the call phases, their uncrossing, the indicative
//! price published during a call, and the times in force that end with a
//! phase or a time.
//!
//! An instrument starts `Continuous` (or the phase its listing names) and
//! stays there unless an operator or the scheduler sends `set_phase`, so
//! an exchange without a schedule trades as it always did. A book may be
//! crossed only in a call phase
//! (`pre_open`, `closing_call`, `volatility_auction`) or while halted out
//! of one; every transition out of those into a phase that matches or
//! rests uncrosses it first, as one auction at one price.
//!
//! The two auction phases (`opening_auction`, `closing_auction`) last no
//! time in a core that runs each command to its end: asking for one runs
//! the uncross and settles in `continuous` or `post_close`. Asking again
//! for the phase the instrument settled in is `already_in_phase`, so a new
//! leader's scheduler re-sending its last command changes nothing.

use exchange_types::event::{self, AuctionKind};
use exchange_types::{Event, EventKind, Phase, RejectReason, Side, Symbol, TimeInForce};

use crate::auction::{uncross, LevelQty, Uncross};
use crate::engine::{Engine, Subject};
use crate::orders::NIL;
use crate::sessions::{check_session_tif, is_call, may_cross};

/// Where a requested phase settles: the auction phases are instants.
fn settles_in(target: Phase) -> Phase {
    match target {
        Phase::OpeningAuction => Phase::Continuous,
        Phase::ClosingAuction => Phase::PostClose,
        other => other,
    }
}

/// Whether `from` may move to `target`, checked before anything changes.
fn allowed(from: Phase, target: Phase) -> Result<Phase, RejectReason> {
    use Phase::*;
    let to = settles_in(target);
    if to == from {
        return Err(RejectReason::AlreadyInPhase);
    }
    let ok = match (from, target) {
        (_, Halted) => true,
        (Closed, PreOpen | Continuous) => true,
        (PreOpen, OpeningAuction | Continuous | Closed) => true,
        (Continuous, ClosingCall | VolatilityAuction | PostClose | Closed) => true,
        (ClosingCall, ClosingAuction | PostClose | Closed) => true,
        // A closing call falling due during a volatility call takes its
        // orders over, as Xetra switches to the closing auction.
        (VolatilityAuction, Continuous | ClosingCall | PostClose | Closed) => true,
        (PostClose, Closed | PreOpen) => true,
        (Halted, t) => !matches!(t, OpeningAuction | ClosingAuction),
        _ => false,
    };
    if ok {
        Ok(to)
    } else {
        Err(RejectReason::InvalidPhaseTransition)
    }
}

fn auction_kind(from: Phase) -> AuctionKind {
    match from {
        Phase::PreOpen => AuctionKind::Open,
        Phase::ClosingCall => AuctionKind::Close,
        Phase::VolatilityAuction => AuctionKind::Volatility,
        _ => AuctionKind::Reopen,
    }
}

impl Engine {
    pub(crate) fn set_phase(&mut self, symbol: &Symbol, target: Phase, out: &mut Vec<Event>) {
        let checked = self
            .instrument_by_symbol
            .get(symbol)
            .copied()
            .ok_or(RejectReason::UnknownInstrument)
            .and_then(|index| {
                let from = self.instruments[index as usize].phase;
                allowed(from, target).map(|to| (index, to))
            });
        match checked {
            Ok((index, to)) => self.enter_phase(index, to, out),
            Err(reason) => self.reject(
                out,
                "set_phase",
                Subject {
                    symbol: Some(*symbol),
                    ..Subject::default()
                },
                reason,
            ),
        }
    }

    /// Moves an instrument to `to` (already checked): uncrosses if the
    /// book may be crossed and `to` matches or rests, expires what ends
    /// with the phase left or entered, and carries waiting market orders
    /// into continuous trading.
    pub(crate) fn enter_phase(&mut self, index: u32, to: Phase, out: &mut Vec<Event>) {
        let from = self.instruments[index as usize].phase;
        let mut auction_price = None;
        if may_cross(from) && !may_cross(to) {
            let kind = auction_kind(from);
            let transient = match kind {
                AuctionKind::Open => Some(Phase::OpeningAuction),
                AuctionKind::Close => Some(Phase::ClosingAuction),
                _ => None,
            };
            if let Some(phase) = transient {
                self.set_phase_state(index, phase, out);
            }
            auction_price = self.run_auction(index, kind, out);
            if to != Phase::Continuous {
                self.expire_call_markets(index, out);
            }
        }
        self.set_phase_state(index, to, out);
        if from == Phase::PreOpen {
            self.expire_where(index, |tif| tif == TimeInForce::AtOpen, out);
        }
        if from == Phase::ClosingCall {
            self.expire_where(index, |tif| tif == TimeInForce::AtClose, out);
        }
        if matches!(to, Phase::PostClose | Phase::Closed) {
            self.expire_where(index, |tif| tif == TimeInForce::Day, out);
        }
        // Last, once the phase and its expiries stand: carried market
        // orders trade as continuous orders do, and may interrupt it.
        if may_cross(from) && to == Phase::Continuous {
            self.carry_call_markets(index, auction_price, out);
        }
    }

    fn set_phase_state(&mut self, index: u32, phase: Phase, out: &mut Vec<Event>) {
        let inst = &mut self.instruments[index as usize];
        let was_call = is_call(inst.phase);
        inst.phase = phase;
        inst.status = if phase == Phase::Halted {
            exchange_types::TradingStatus::Halted
        } else {
            exchange_types::TradingStatus::Trading
        };
        if !is_call(phase) {
            inst.indicative = None;
        }
        let symbol = inst.symbol;
        if self.volatility.has_bands() {
            self.volatility_phase_changed(index, phase);
        }
        if was_call != is_call(phase) {
            self.sessions.count_call(is_call(phase));
        }
        self.emit(out, EventKind::Phase(event::PhaseChanged { symbol, phase }));
    }

    /// The volume each price of `side` can execute in an auction, best
    /// first while `within` holds: the displayed level's and the hidden
    /// one's together. A book without hidden orders reads its displayed
    /// side alone, as before they existed.
    pub(crate) fn auction_ladder(
        &self,
        index: u32,
        side: Side,
        within: impl Fn(u64) -> bool,
    ) -> Vec<LevelQty> {
        let book = &self.books[index as usize];
        let mut ladder: Vec<LevelQty> = Vec::new();
        let mut add = |price: u64, qty: u64| match ladder.last_mut() {
            Some(last) if last.price == price => last.qty += qty,
            _ => ladder.push(LevelQty { price, qty }),
        };
        if book.has_hidden(side) {
            for (level, _) in book.levels_with_hidden(side) {
                if !within(level.price) {
                    break;
                }
                add(level.price, self.auction_volume(level));
            }
        } else {
            for level in book.side(side).levels_best_first() {
                if !within(level.price) {
                    break;
                }
                add(level.price, self.auction_volume(level));
            }
        }
        ladder
    }

    /// What a level can execute in an auction: its shown quantity and the
    /// hidden volume of its icebergs, which take part whole.
    pub(crate) fn auction_volume(&self, level: &crate::book::Level) -> u64 {
        let mut qty = level.qty;
        if !self.iceberg_display.is_empty() {
            let mut slot = level.head;
            while slot != NIL {
                let order = self.orders.get(slot);
                qty += order.hidden;
                slot = self.orders.link(slot).next;
            }
        }
        qty
    }

    /// The uncrossing the book of `index` would have now.
    pub(crate) fn uncross_of(&self, index: u32) -> Option<Uncross> {
        if !self.call_markets.is_empty() {
            if let Some(markets) = self.call_market_levels(index) {
                return self.uncross_with_markets(index, &markets);
            }
        }
        let book = &self.books[index as usize];
        let best_bid = book.best_price(Side::Buy)?;
        let best_ask = book.best_price(Side::Sell)?;
        if best_bid < best_ask {
            return None;
        }
        // Only the crossing region can execute; the rest of the book
        // changes no candidate that could win. Hidden orders take part as
        // at Xetra: their volume counts at their price.
        let bids = self.auction_ladder(index, Side::Buy, |price| price >= best_ask);
        let asks = self.auction_ladder(index, Side::Sell, |price| price <= best_bid);
        let inst = &self.instruments[index as usize];
        uncross(
            &bids,
            &asks,
            &[],
            &[],
            inst.reference_ticks,
            inst.reference_price_rule,
        )
    }

    /// Expires the resting orders of an instrument whose time in force
    /// matches, in book order (bids then asks, best first).
    fn expire_where(&mut self, index: u32, ends: fn(TimeInForce) -> bool, out: &mut Vec<Event>) {
        let mut slots = Vec::new();
        for side in self.books[index as usize].all_sides() {
            for level in side.levels_best_first() {
                let mut slot = level.head;
                while slot != NIL {
                    let order = self.orders.get(slot);
                    if ends(order.tif) {
                        slots.push(slot);
                    }
                    slot = self.orders.link(slot).next;
                }
            }
        }
        for slot in slots {
            self.unrest(slot, out);
            self.expire(slot, out);
        }
        self.expire_midpoints(index, ends, out);
    }

    /// Expires the good-till-date orders whose time has come.
    #[cold]
    pub(crate) fn expire_due(&mut self, out: &mut Vec<Event>) {
        while let Some(id) = self.sessions.pop_due(self.now) {
            if let Some(&slot) = self.order_by_id.get(&id) {
                self.unrest(slot, out);
                self.expire(slot, out);
            }
        }
        self.sessions.refresh_next();
    }

    /// Publishes the indicative uncrossing of every instrument in a call
    /// whose figure changed.
    #[cold]
    pub(crate) fn refresh_indicatives(&mut self, out: &mut Vec<Event>) {
        for index in 0..self.instruments.len() as u32 {
            if !is_call(self.instruments[index as usize].phase) {
                continue;
            }
            let now = self.uncross_of(index);
            if now == self.instruments[index as usize].indicative {
                continue;
            }
            self.instruments[index as usize].indicative = now;
            self.emit_with(out, |e| EventKind::Indicative(e.indicative_event(index)));
        }
    }

    pub(crate) fn indicative_event(&self, index: u32) -> event::Indicative {
        let inst = &self.instruments[index as usize];
        let u = inst.indicative;
        let surplus = u.map_or(0, |u| u.surplus);
        event::Indicative {
            symbol: inst.symbol,
            price: u.map(|u| inst.price_units(u.price)),
            volume: inst.qty_units(u.map_or(0, |u| u.volume)),
            imbalance_side: match surplus.signum() {
                1 => Some(Side::Buy),
                -1 => Some(Side::Sell),
                _ => None,
            },
            imbalance_qty: inst
                .qty_units(u64::try_from(surplus.unsigned_abs()).unwrap_or(u64::MAX)),
        }
    }

    /// Checks an order against the phase of its instrument, which is not
    /// `Continuous` (the caller's one branch).
    pub(crate) fn check_phase_place(
        phase: Phase,
        tif: TimeInForce,
        is_funds: bool,
    ) -> Result<(), RejectReason> {
        match phase {
            Phase::Halted => Err(RejectReason::InstrumentHalted),
            Phase::Closed => Err(RejectReason::InstrumentClosed),
            Phase::PostClose | Phase::OpeningAuction | Phase::ClosingAuction => {
                Err(RejectReason::CancelsOnly)
            }
            Phase::Continuous => check_session_tif(phase, tif),
            Phase::PreOpen | Phase::ClosingCall | Phase::VolatilityAuction => {
                // A funds order's quantity is what the book sells for its
                // funds, which a call cannot say before its uncrossing.
                if is_funds {
                    return Err(RejectReason::MarketInCall);
                }
                if matches!(tif, TimeInForce::Ioc | TimeInForce::Fok) {
                    return Err(RejectReason::ImmediateInCall);
                }
                check_session_tif(phase, tif)
            }
        }
    }
}

impl Engine {
    /// The invariants of phases and expiries, for [`Engine::audit`].
    pub(crate) fn audit_phases(&self) -> Result<(), String> {
        let mut calls = 0;
        for (index, inst) in self.instruments.iter().enumerate() {
            if (inst.status == exchange_types::TradingStatus::Halted)
                != (inst.phase == Phase::Halted)
            {
                return Err(format!("{} has status and phase apart", inst.symbol));
            }
            if matches!(inst.phase, Phase::OpeningAuction | Phase::ClosingAuction) {
                return Err(format!("{} rests in an instant phase", inst.symbol));
            }
            if is_call(inst.phase) {
                calls += 1;
                if inst.indicative != self.uncross_of(index as u32) {
                    return Err(format!("{} published a stale indicative", inst.symbol));
                }
            } else if inst.indicative.is_some() {
                return Err(format!("{} has an indicative outside a call", inst.symbol));
            }
        }
        if calls != self.sessions.calls() {
            return Err(format!(
                "{calls} instruments in a call but {} counted",
                self.sessions.calls()
            ));
        }
        if !self.sessions.next_expiry_is_first() {
            return Err("the next expiry is not the first".into());
        }
        let mut gtd = 0usize;
        for (_, id) in self.sessions.expiries() {
            if id == 0 || id >= self.next_order_id {
                return Err(format!("expiry of order {id}, never assigned"));
            }
            if let Some(&slot) = self.order_by_id.get(&id) {
                if self.orders.get(slot).tif != TimeInForce::Gtd {
                    return Err(format!("expiry of order {id}, not good-till-date"));
                }
                gtd += 1;
            }
        }
        // Each open good-till-date order has its expiry (ids are unique in
        // the set only per time, so count rather than look up).
        let open_gtd = self.open_gtd_orders();
        if gtd != open_gtd {
            return Err(format!(
                "{open_gtd} open good-till-date orders but {gtd} expiries"
            ));
        }
        Ok(())
    }

    /// Open good-till-date orders: resting on a book, waiting in a call
    /// or in a midpoint book.
    fn open_gtd_orders(&self) -> usize {
        self.books
            .iter()
            .flat_map(|b| b.all_sides())
            .flat_map(|s| s.levels_best_first())
            .map(|level| {
                let mut n = 0usize;
                let mut slot = level.head;
                while slot != NIL {
                    let o = self.orders.get(slot);
                    n += usize::from(o.tif == TimeInForce::Gtd);
                    slot = self.orders.link(slot).next;
                }
                n
            })
            .sum::<usize>()
            + self
                .call_markets
                .values()
                .chain(
                    self.midpoints
                        .books()
                        .flat_map(|(_, b)| b.bids.iter().chain(&b.asks))
                        .map(|e| &e.slot),
                )
                .filter(|&&slot| self.orders.get(slot).tif == TimeInForce::Gtd)
                .count()
    }
}
