//! Operator changes to a listed instrument: new rules and delisting.
//!
//! A rule change takes effect at its log index. Resting orders that no
//! longer fit the new rules are canceled (`rules_changed`), never altered,
//! as Xetra and Euronext do when a tick size regime or a lot changes
//! overnight (they purge the orders that no longer fit): silently moving
//! a price or a quantity would trade something the member did not send.
//! The orders that fit keep their place in the queue.
//!
//! Prices and quantities are counted in ticks and lots, so a new tick or
//! lot re-expresses every surviving order and rebuilds the book in the
//! same priority order. An order fits when its price in quote units is a
//! whole number of new ticks, its total and filled quantity whole numbers
//! of new lots, its total within the new bounds and its notional at least
//! the new minimum. Levels keep their unit prices and quantities, so the
//! public book does not move except for the cancellations.
//!
//! A fee change moves what each resting buy holds (notional plus the
//! largest fee): a lower fee releases the difference, a higher one takes
//! it from the account's available balance, and a buy whose account cannot
//! pay it is canceled too, since it could otherwise not pay for its fill.
//!
//! Delisting cancels every order (`delisted`) and refuses every new one;
//! the listing stays so that its history, balances and symbol remain
//! readable. There is no relisting: a symbol once delisted stays taken.

use exchange_types::{
    event, AddInstrument, CancelReason, Dec, Event, EventKind, RejectReason, SetInstrumentRules,
    Side, Symbol, TradingStatus,
};

use crate::book::Book;
use crate::engine::{Engine, Subject};
use crate::instrument::{buy_cost, Instrument};
use crate::orders::NIL;

impl Engine {
    /// Slots of an instrument's resting orders, bids then asks, each best
    /// price first and in time priority within a level.
    pub(crate) fn resting_orders(&self, instrument: u32) -> Vec<u32> {
        let book = &self.books[instrument as usize];
        let mut slots = Vec::new();
        for side in book.all_sides() {
            for level in side.levels_best_first() {
                let mut slot = level.head;
                while slot != NIL {
                    slots.push(slot);
                    slot = self.orders.link(slot).next;
                }
            }
        }
        slots
    }

    pub(crate) fn emit_instrument_rules(&mut self, instrument: u32, out: &mut Vec<Event>) {
        self.emit_with(out, |e| {
            let inst = &e.instruments[instrument as usize];
            EventKind::InstrumentRules(Box::new(event::InstrumentRules {
                symbol: inst.symbol,
                base: e.assets[inst.base as usize],
                quote: e.assets[inst.quote as usize],
                tick_size: inst.tick_units,
                lot_size: inst.lot_units,
                min_qty: inst.qty_units(inst.min_lots),
                max_qty: inst.qty_units(inst.max_lots),
                min_notional: inst.min_notional,
                maker_fee_bps: inst.maker_fee_bps,
                taker_fee_bps: inst.taker_fee_bps,
                collar_bps: inst.collar_bps,
                static_band_bps: e.bands_of(instrument).static_bps,
                dynamic_band_bps: e.bands_of(instrument).dynamic_bps,
                volatility_auction_ns: e.bands_of(instrument).auction_ns,
                status: inst.status,
            }))
        });
    }

    /// The instrument of an operator command, if it is listed and not
    /// delisted.
    pub(crate) fn listed(&self, symbol: &Symbol) -> Result<u32, RejectReason> {
        let &index = self
            .instrument_by_symbol
            .get(symbol)
            .ok_or(RejectReason::UnknownInstrument)?;
        if self.instruments[index as usize].status == TradingStatus::Delisted {
            return Err(RejectReason::InstrumentDelisted);
        }
        Ok(index)
    }

    fn reject_symbol(
        &mut self,
        out: &mut Vec<Event>,
        command: &'static str,
        symbol: Symbol,
        reason: RejectReason,
    ) {
        let subject = Subject {
            symbol: Some(symbol),
            ..Subject::default()
        };
        self.reject(out, command, subject, reason);
    }

    pub(crate) fn set_instrument_rules(&mut self, set: &SetInstrumentRules, out: &mut Vec<Event>) {
        let checked = self
            .listed(&set.symbol)
            .and_then(|index| Ok((index, self.new_rules(index, set)?)));
        let (index, rules) = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                return self.reject_symbol(out, "set_instrument_rules", set.symbol, reason)
            }
        };
        let old = self.instruments[index as usize].clone();
        // A market order's bound and reservation are in the old grid, and
        // so are a midpoint order's limit or bound.
        self.cancel_call_markets(index, CancelReason::RulesChanged, out);
        self.cancel_midpoints(index, CancelReason::RulesChanged, out);
        let slots = self.resting_orders(index);
        let mut kept = Vec::with_capacity(slots.len());
        for slot in slots {
            match reexpress(&old, &rules, self.orders.get(slot)) {
                Some(units) => kept.push((slot, units)),
                None => self.cancel_resting(slot, CancelReason::RulesChanged, out),
            }
        }
        let regrid = rules.tick_units != old.tick_units || rules.lot_units != old.lot_units;
        self.regrid_bands(index, &old, &rules);
        self.instruments[index as usize] = rules;
        if set.static_band_bps.is_some()
            || set.dynamic_band_bps.is_some()
            || set.volatility_auction_ns.is_some()
        {
            let bands = self.bands_of(index);
            self.set_bands(
                index,
                set.static_band_bps.unwrap_or(bands.static_bps),
                set.dynamic_band_bps.unwrap_or(bands.dynamic_bps),
                set.volatility_auction_ns.unwrap_or(bands.auction_ns),
            );
        }
        if regrid {
            // Levels keep their unit prices and their orders' order, so
            // rebuilding in the old priority order keeps every queue.
            self.books[index as usize] = Book::new();
            for &(slot, (price, qty, filled)) in &kept {
                let order = self.orders.get_mut(slot);
                order.price = price;
                order.qty = qty;
                order.filled = filled;
                let (side, hidden) = (order.side, order.is_hidden);
                self.books[index as usize]
                    .resting_side_mut(side, hidden)
                    .push_back(&mut self.orders, slot);
            }
        }
        for &(slot, _) in &kept {
            let order = self.orders.get(slot);
            if order.side != Side::Buy {
                continue;
            }
            let inst = &self.instruments[index as usize];
            let needed = inst
                .notional(order.price, order.leaves())
                .and_then(|n| buy_cost(n, inst.max_fee_bps()));
            let available = self.accounts.balance(order.account, inst.quote).available;
            let affordable =
                needed.filter(|&n| n <= order.reserved || n - order.reserved <= available);
            match affordable {
                Some(target) => self.set_reservation(slot, target, out),
                None => self.cancel_resting(slot, CancelReason::RulesChanged, out),
            }
        }
        self.emit_instrument_rules(index, out);
    }

    /// The instrument as `set` would leave it, or why it cannot.
    fn new_rules(&self, index: u32, set: &SetInstrumentRules) -> Result<Instrument, RejectReason> {
        if set.is_empty() {
            return Err(RejectReason::NoRuleChange);
        }
        let bands = self.bands_of(index);
        crate::volatility::bands::check_bands(
            set.static_band_bps.unwrap_or(bands.static_bps),
            set.dynamic_band_bps.unwrap_or(bands.dynamic_bps),
            set.volatility_auction_ns.unwrap_or(bands.auction_ns),
        )?;
        let old = &self.instruments[index as usize];
        let unbounded = old.max_lots == u64::MAX / old.lot_units;
        let spec = AddInstrument {
            symbol: old.symbol,
            base: self.assets[old.base as usize],
            quote: self.assets[old.quote as usize],
            tick_size: set.tick_size.unwrap_or(Dec::from_units(old.tick_units)),
            lot_size: set.lot_size.unwrap_or(Dec::from_units(old.lot_units)),
            min_qty: Some(
                set.min_qty
                    .unwrap_or(Dec::from_units(old.qty_units(old.min_lots))),
            ),
            // An instrument listed without a maximum keeps none, whatever
            // its new lot.
            max_qty: set
                .max_qty
                .or((!unbounded).then(|| Dec::from_units(old.qty_units(old.max_lots)))),
            collar_bps: Some(set.collar_bps.unwrap_or(old.collar_bps)),
            reference_price: None,
            maker_fee_bps: set.maker_fee_bps.unwrap_or(old.maker_fee_bps),
            taker_fee_bps: set.taker_fee_bps.unwrap_or(old.taker_fee_bps),
            min_notional: Some(
                set.min_notional
                    .unwrap_or(Dec::from_units(old.min_notional)),
            ),
            static_band_bps: None,
            dynamic_band_bps: None,
            volatility_auction_ns: None,
            reference_price_rule: old.reference_price_rule,
            hidden_min_notional: set
                .hidden_min_notional
                .or(old.hidden_min_notional.map(Dec::from_units)),
            phase: None,
        };
        let mut rules = Instrument::from_spec(&spec, old.base, old.quote)?;
        rules.status = old.status;
        // The phase is state, not a rule: a change during a call keeps it.
        rules.phase = old.phase;
        rules.indicative = old.indicative;
        // The collar's reference is a price, not a rule: it is kept, on
        // the nearest tick at or below it (at least one tick).
        rules.reference_ticks = old
            .reference_ticks
            .map(|t| (old.price_units(t) / rules.tick_units).max(1));
        Ok(rules)
    }

    pub(crate) fn delist(&mut self, symbol: &Symbol, out: &mut Vec<Event>) {
        let index = match self.listed(symbol) {
            Ok(index) => index,
            Err(reason) => return self.reject_symbol(out, "delist", *symbol, reason),
        };
        self.cancel_call_markets(index, CancelReason::Delisted, out);
        self.cancel_midpoints(index, CancelReason::Delisted, out);
        for slot in self.resting_orders(index) {
            self.cancel_resting(slot, CancelReason::Delisted, out);
        }
        self.instruments[index as usize].status = TradingStatus::Delisted;
        self.emit(
            out,
            EventKind::Status(event::Status {
                symbol: *symbol,
                status: TradingStatus::Delisted,
            }),
        );
        self.emit_instrument_rules(index, out);
    }
}

/// An order's price, total and filled quantity under `new` rules, if it
/// fits them.
fn reexpress(
    old: &Instrument,
    new: &Instrument,
    order: &crate::orders::Order,
) -> Option<(u64, u64, u64)> {
    let price_units = order.price.checked_mul(old.tick_units)?;
    let qty_units = order.qty.checked_mul(old.lot_units)?;
    let filled_units = order.filled.checked_mul(old.lot_units)?;
    if price_units % new.tick_units != 0
        || qty_units % new.lot_units != 0
        || filled_units % new.lot_units != 0
    {
        return None;
    }
    let (price, qty) = (price_units / new.tick_units, qty_units / new.lot_units);
    if qty < new.min_lots || qty > new.max_lots || new.below_min_notional(price, qty) {
        return None;
    }
    // A hidden order stays worth the listing's minimum for them, as on
    // entry and on a replace.
    if order.is_hidden {
        let minimum = new.hidden_min_notional?;
        if new.notional(price, qty).is_none_or(|n| n < minimum) {
            return None;
        }
    }
    Some((price, qty, filled_units / new.lot_units))
}
