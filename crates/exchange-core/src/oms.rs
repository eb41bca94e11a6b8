//! Order management after entry: cancel, mass cancel and cancel-replace.
//!
//! Replace rules: `qty` is the new total (filled included). Lowering the
//! quantity at the same price keeps time priority; changing the price or
//! raising the quantity sends the order to the back of its (new) level, and
//! a new price that crosses trades like a new order. A new total below the
//! filled quantity is rejected; equal to it, the order is done. An iceberg
//! keeps its display size: lowering its quantity takes hidden lots first
//! (the shown slice and its priority stay); a new price or a larger
//! quantity sends it, like any order, to the back with a new slice.

use exchange_types::event;
use exchange_types::limits::MAX_PRICE_LEVELS_PER_SIDE;
use exchange_types::{
    Cancel, CancelReason, Dec, Event, EventKind, MassCancel, RejectReason, Replace,
};

use crate::engine::{Engine, Subject};
use crate::orders::Order;

impl Engine {
    pub(crate) fn cancel(&mut self, cancel: &Cancel, out: &mut Vec<Event>) {
        let account = self.accounts.index(cancel.account);
        match self.resolve_order(account, &cancel.order) {
            Ok(slot) => {
                // Canceling one of a pair by request cancels the other.
                let partner = self.unlink_oco(slot);
                self.cancel_resting(slot, CancelReason::Requested, out);
                if let Some(&other) = partner.and_then(|id| self.order_by_id.get(&id)) {
                    self.cancel_resting(other, CancelReason::OneCancelsOther, out);
                }
            }
            Err(reason) => {
                let (order_id, client_order_id) = split_ref(&cancel.order);
                self.reject(
                    out,
                    "cancel",
                    Subject {
                        account: Some(cancel.account),
                        client_order_id,
                        order_id,
                        ..Subject::default()
                    },
                    reason,
                )
            }
        }
    }

    /// Takes a resting order off the book, returns its reservation and
    /// reports it canceled.
    pub(crate) fn cancel_resting(&mut self, slot: u32, reason: CancelReason, out: &mut Vec<Event>) {
        if self.orders.get(slot).stop {
            self.unstop(slot);
        } else {
            self.unrest(slot, out);
        }
        let leaves = self.orders.get(slot).leaves();
        self.orders.get_mut(slot).qty -= leaves;
        self.emit_canceled(slot, reason, leaves, out);
        self.release_all(slot, out);
        self.close_order(slot);
    }

    pub(crate) fn mass_cancel(&mut self, mass: &MassCancel, out: &mut Vec<Event>) {
        let instrument = match mass.symbol {
            None => None,
            Some(symbol) => match self.instrument_by_symbol.get(&symbol) {
                Some(&index) => Some(index),
                None => {
                    return self.reject(
                        out,
                        "mass_cancel",
                        Subject {
                            account: Some(mass.account),
                            symbol: Some(symbol),
                            ..Subject::default()
                        },
                        RejectReason::UnknownInstrument,
                    )
                }
            },
        };
        let Some(account) = self.accounts.index(mass.account) else {
            return self.reject(
                out,
                "mass_cancel",
                Subject {
                    account: Some(mass.account),
                    symbol: mass.symbol,
                    ..Subject::default()
                },
                RejectReason::UnknownAccount,
            );
        };
        let canceled =
            self.cancel_account_orders(account, instrument, CancelReason::MassCancel, out);
        let kind = EventKind::MassCanceled(event::MassCanceled {
            account: mass.account,
            symbol: mass.symbol,
            canceled,
        });
        self.emit(out, kind);
    }

    /// `stop_price` moves an untriggered stop's trigger as well.
    pub(crate) fn replace(
        &mut self,
        replace: &Replace,
        stop_price: Option<Dec>,
        out: &mut Vec<Event>,
    ) {
        let account = self.accounts.index(replace.account);
        let checked = self
            .resolve_order(account, &replace.order)
            .and_then(|slot| {
                self.check_replace(slot, replace, stop_price)
                    .map(|plan| (slot, plan))
            });
        match checked {
            Ok((slot, plan)) => self.apply_replace(slot, plan, out),
            Err(reason) => {
                let (order_id, client_order_id) = split_ref(&replace.order);
                self.reject(
                    out,
                    "replace",
                    Subject {
                        account: Some(replace.account),
                        client_order_id,
                        order_id,
                        ..Subject::default()
                    },
                    reason,
                )
            }
        }
    }

    /// A replace's stages, as an order's: admission of the order as it
    /// stands, its new terms, their admission, then the reservation they
    /// need. Only reads: a refused replace leaves no trace.
    fn check_replace(
        &self,
        slot: u32,
        replace: &Replace,
        stop_price: Option<Dec>,
    ) -> Result<ReplacePlan, RejectReason> {
        let order = self.orders.get(slot);
        // Both admission stages ask the member's limits: looked up once.
        let risk = self.accounts.get(order.account).risk();
        self.admit_replace(order, risk)?;
        let terms = self.replace_terms(slot, replace, stop_price)?;
        self.admit_replace_terms(order, risk, replace, &terms)?;
        let reserve = self.reserve_replace(slot, &terms)?;
        Ok(ReplacePlan {
            price: terms.price,
            qty: terms.qty,
            new_client_order_id: terms.new_client_order_id,
            reserve,
            keeps_priority: terms.price == order.price && terms.qty <= order.qty,
            stop: terms.stop,
        })
    }

    /// The order's instrument is listed, in a phase that takes a new
    /// order, and the account may trade it.
    #[inline(always)]
    fn admit_replace(
        &self,
        order: &Order,
        risk: Option<&crate::controls::AccountRisk>,
    ) -> Result<(), RejectReason> {
        let inst = &self.instruments[order.instrument as usize];
        if inst.status == exchange_types::TradingStatus::Delisted {
            return Err(RejectReason::InstrumentDelisted);
        }
        if inst.phase != exchange_types::Phase::Continuous {
            // A replace is a new order for the phase's rules, apart from
            // the time in force it already passed.
            Engine::check_phase_place(inst.phase, exchange_types::TimeInForce::Gtc, false)?;
        }
        if let Some(risk) = risk {
            risk.check_access(order.instrument)?;
        }
        Ok(())
    }

    /// The replace's price, quantity, client id and stop in the
    /// instrument's units; refused if it changes nothing.
    #[inline(always)]
    fn replace_terms(
        &self,
        slot: u32,
        replace: &Replace,
        stop_price: Option<Dec>,
    ) -> Result<ReplaceTerms, RejectReason> {
        let order = self.orders.get(slot);
        let inst = &self.instruments[order.instrument as usize];
        let price = match replace.price {
            // A stop market order's price is its protection, not the
            // owner's to set.
            Some(_) if order.stop && self.stops.is_market_stop(order.id) => {
                return Err(RejectReason::PriceNotAllowed)
            }
            // Nor is a market order's bound, waiting in a call.
            Some(_) if order.is_market => return Err(RejectReason::PriceNotAllowed),
            Some(price) => inst.price_to_ticks(price)?,
            None => order.price,
        };
        let new_stop = self.check_replace_stop(slot, stop_price)?;
        // A stop market buy's price is its protection, which follows the
        // stop.
        let price = new_stop.and_then(|s| s.price).unwrap_or(price);
        let qty = match replace.qty {
            Some(qty) => inst.qty_to_lots(qty)?,
            None => order.qty,
        };
        // Most replaces keep the client id; compare 36 bytes only when a new
        // one was given.
        let renamed = replace
            .new_client_order_id
            .is_some_and(|new| new != order.client_order_id);
        let new_client_order_id = replace.new_client_order_id.filter(|_| renamed);
        if price == order.price && qty == order.qty && !renamed && new_stop.is_none() {
            return Err(RejectReason::NothingToReplace);
        }
        Ok(ReplaceTerms {
            price,
            qty,
            new_client_order_id,
            stop: new_stop.map(|s| s.stop),
        })
    }

    /// The new terms against the collar, the minimum, the member's limits,
    /// the account's open client ids and the book.
    #[inline(always)]
    fn admit_replace_terms(
        &self,
        order: &Order,
        risk: Option<&crate::controls::AccountRisk>,
        replace: &Replace,
        terms: &ReplaceTerms,
    ) -> Result<(), RejectReason> {
        let inst = &self.instruments[order.instrument as usize];
        let (price, qty) = (terms.price, terms.qty);
        // Only a price the owner gave is held to the collar: a stop market
        // buy's protection is not, on entry either.
        if price != order.price && replace.price.is_some() {
            if let Some((low, high)) = inst.collar_band() {
                if price < low || price > high {
                    return Err(RejectReason::PriceOutsideCollar);
                }
            }
        }
        if qty < order.filled {
            return Err(RejectReason::ReplaceBelowFilled);
        }
        // Replacing down to what has filled ends the order: nothing is
        // left to hold to the minimum.
        if qty > order.filled && inst.below_min_notional(price, qty) {
            return Err(RejectReason::NotionalBelowMinimum);
        }
        // A hidden order stays worth its minimum, as on entry.
        if order.is_hidden && qty > order.filled {
            let minimum = inst.hidden_min_notional.unwrap_or(u64::MAX);
            if inst.notional(price, qty).is_some_and(|n| n < minimum) {
                return Err(RejectReason::HiddenBelowMinimum);
            }
        }
        if let Some(risk) = risk {
            risk.check_replace(inst, (order.price, order.qty), (price, qty))?;
        }
        if let Some(new) = terms.new_client_order_id {
            if self.by_client_id.contains_key(&(order.account, new)) {
                return Err(RejectReason::DuplicateClientOrderId);
            }
        }
        let book = &self.books[order.instrument as usize];
        if qty > order.filled && price != order.price && !order.stop {
            if order.post_only && book.crosses(order.side.opposite(), price) {
                return Err(RejectReason::PostOnlyWouldTake);
            }
            let own = book.resting_side(order.side, order.is_hidden);
            if own.level_count() >= MAX_PRICE_LEVELS_PER_SIDE && !own.has_level(price) {
                return Err(RejectReason::TooManyPriceLevels);
            }
        }
        Ok(())
    }

    /// What the order must hold under its new terms; any increase must be
    /// available.
    #[inline(always)]
    fn reserve_replace(&self, slot: u32, terms: &ReplaceTerms) -> Result<u64, RejectReason> {
        let order = self.orders.get(slot);
        let reserve = self
            .reservation_for(slot, terms.price, terms.qty - order.filled)
            .ok_or(RejectReason::AmountOverflow)?;
        if reserve > order.reserved {
            let asset = self.reserved_asset(order);
            let available = self.accounts.balance(order.account, asset).available;
            if available < reserve - order.reserved {
                return Err(RejectReason::InsufficientFunds);
            }
        }
        Ok(reserve)
    }

    fn apply_replace(&mut self, slot: u32, plan: ReplacePlan, out: &mut Vec<Event>) {
        // The order is read once for all it says; each later checked read
        // of it (the pool cannot tell that nothing in between closed it)
        // was paid on every replace.
        let order = self.orders.get(slot);
        let asset = self.reserved_asset(order);
        let old = Before::of(order);
        // An untriggered stop has no place on a book to keep or lose, nor
        // has a market order waiting in a call: it keeps its time.
        let (is_stop, is_market, midpoint) = (old.stop, old.is_market, old.is_midpoint);
        if let Some(new) = plan.new_client_order_id {
            self.rename_order(slot, old.account, old.client_order_id, new);
        }
        // A midpoint order is on no level: its book requeues it below.
        let off_book = is_stop | is_market | midpoint;
        let moves = !plan.keeps_priority && !off_book;
        if moves {
            let at = (old.instrument, old.side, old.price, old.is_hidden);
            self.unrest_at(slot, at, out);
        }
        let order = self.orders.get_mut(slot);
        if moves {
            // A moved iceberg takes liquidity whole, then rests with a new
            // slice (`rest`).
            order.hidden = 0;
        }
        order.price = plan.price;
        order.qty = plan.qty;
        // The balance moves below, after the events that come before its
        // own; nothing in between reads the order's reservation.
        order.reserved = plan.reserve;
        let leaves = order.leaves();
        let (account, instrument, order_id) = (old.account, old.instrument, old.id);
        if let Some(stop) = plan.stop {
            self.move_stop(order_id, stop);
        }
        let stop_price = if is_stop {
            self.reported_stop(slot)
        } else {
            None
        };
        let old_client_order_id = old.client_order_id;
        self.emit_with(out, |e| {
            let inst = &e.instruments[instrument as usize];
            EventKind::Replaced(event::Replaced {
                account: e.accounts.get(account).id(),
                order_id,
                old_client_order_id,
                client_order_id: plan.new_client_order_id.unwrap_or(old_client_order_id),
                symbol: inst.symbol,
                price: inst.price_units(plan.price),
                qty: inst.qty_units(plan.qty),
                leaves_qty: inst.qty_units(leaves),
                stop_price: stop_price.and_then(std::num::NonZeroU64::new),
            })
        });
        let old_leaves = old.leaves;
        if !moves && !off_book && leaves < old_leaves {
            self.shrink_in_place(slot, old.price, old_leaves, out);
        }
        self.move_reservation(account, asset, old.reserved, plan.reserve, out);
        if leaves == 0 {
            if is_stop {
                self.unstop(slot);
            }
            if is_market | midpoint {
                // Off the books: out of the call's list or the midpoint book.
                self.unrest(slot, out);
            }
            self.close_order(slot);
        } else if moves {
            let at = (instrument, old.side, plan.price, old.is_hidden);
            self.rest_moved(slot, at, old.tif, out);
        } else if midpoint {
            let limit_given = plan.price != old.price;
            self.requeue_midpoint(slot, limit_given, plan.keeps_priority, out);
        }
    }

    /// A moved order trades like a new one. Most moves cross nothing in a
    /// continuous phase: they rest at once, as `execute` would have them
    /// (nothing traded, so no market-maker protection tripped), without
    /// its call and its tests of a taker's end (a quarter of a move's
    /// resting work). The order is indexed already: it was found open.
    #[inline(always)]
    fn rest_moved(
        &mut self,
        slot: u32,
        at: (u32, exchange_types::Side, u64, bool),
        tif: exchange_types::TimeInForce,
        out: &mut Vec<Event>,
    ) {
        let (instrument, side, price, _) = at;
        let quiet = self.instruments[instrument as usize].phase
            == exchange_types::Phase::Continuous
            && !self.books[instrument as usize].crosses(side.opposite(), price);
        if quiet && crate::sessions::rests(tif) {
            debug_assert!(self.orders.get(slot).indexed, "a moved order is open");
            self.rest_at(slot, at, out);
        } else {
            self.execute(slot, out);
        }
    }

    /// A resting order replaced down at its price keeps its place: its
    /// level loses what it showed of the difference (an iceberg gives up
    /// hidden lots first and keeps its slice).
    fn shrink_in_place(
        &mut self,
        slot: u32,
        old_price: u64,
        old_leaves: u64,
        out: &mut Vec<Event>,
    ) {
        let (instrument, side, leaves, hidden) = {
            let order = self.orders.get(slot);
            (
                order.instrument,
                order.side,
                order.leaves(),
                order.is_hidden,
            )
        };
        let shown_lost = self.shrink_hidden_first(slot, old_leaves - leaves);
        let level_qty = self.books[instrument as usize]
            .resting_side_mut(side, hidden)
            .reduce(old_price, shown_lost);
        if leaves == 0 {
            // Replaced down to what already filled: the order is done.
            self.unrest(slot, out);
        } else if shown_lost > 0 && !hidden {
            self.emit_book(out, instrument, side, old_price, level_qty);
        }
    }

    /// Gives an open order a new client id. Replace admission found the
    /// new id free; the old one names this order while it is open.
    /// Otherwise an id would be left naming a slot that another order will
    /// reuse.
    fn rename_order(
        &mut self,
        slot: u32,
        account: u32,
        old: exchange_types::ClientOrderId,
        new: exchange_types::ClientOrderId,
    ) {
        let indexed = self.by_client_id.remove(&(account, old));
        assert_eq!(indexed, Some(slot), "a renamed order was indexed elsewhere");
        let taken = self.by_client_id.insert((account, new), slot);
        assert!(taken.is_none(), "client order id {new} is already open");
        self.orders.get_mut(slot).client_order_id = new;
    }

    /// Moves an order's reservation to exactly `target`, taking from or
    /// returning to available (checked by the caller). Always inlined:
    /// every replace calls it, and a hint alone left it a call (16 of its
    /// 87 instructions a move).
    #[inline(always)]
    pub(crate) fn set_reservation(&mut self, slot: u32, target: u64, out: &mut Vec<Event>) {
        let order = self.orders.get(slot);
        let current = order.reserved;
        if target == current {
            return;
        }
        let (account, asset) = (order.account, self.reserved_asset(order));
        // The account and asset are in hand: `release` would look both up
        // again (a quarter of a move's reservation work).
        self.orders.get_mut(slot).reserved = target;
        self.move_reservation(account, asset, current, target, out);
    }

    /// The account's side of [`Engine::set_reservation`], for a caller
    /// that has set the order's reservation from `current` to `target`.
    #[inline(always)]
    fn move_reservation(
        &mut self,
        account: u32,
        asset: u32,
        current: u64,
        target: u64,
        out: &mut Vec<Event>,
    ) {
        if target == current {
            return;
        }
        if target < current {
            self.accounts.release(account, asset, current - target);
        } else {
            // `check_replace` refused the replace unless this held.
            self.accounts.hold(account, asset, target - current);
        }
        self.emit_balance_inline(out, account, asset);
    }
}

/// What a replace reads of the order before changing it.
struct Before {
    id: exchange_types::OrderId,
    account: u32,
    instrument: u32,
    side: exchange_types::Side,
    tif: exchange_types::TimeInForce,
    price: u64,
    leaves: u64,
    reserved: u64,
    client_order_id: exchange_types::ClientOrderId,
    stop: bool,
    is_market: bool,
    is_midpoint: bool,
    is_hidden: bool,
}

impl Before {
    #[inline(always)]
    fn of(order: &Order) -> Self {
        Before {
            id: order.id,
            account: order.account,
            instrument: order.instrument,
            side: order.side,
            tif: order.tif,
            price: order.price,
            leaves: order.leaves(),
            reserved: order.reserved,
            client_order_id: order.client_order_id,
            stop: order.stop,
            is_market: order.is_market,
            is_midpoint: order.is_midpoint,
            is_hidden: order.is_hidden,
        }
    }
}

/// A replace's new terms, in the instrument's units.
struct ReplaceTerms {
    price: u64,
    qty: u64,
    /// Only when the client id actually changes.
    new_client_order_id: Option<exchange_types::ClientOrderId>,
    /// An untriggered stop's new stop price.
    stop: Option<u64>,
}

struct ReplacePlan {
    price: u64,
    qty: u64,
    /// Only when the client id actually changes.
    new_client_order_id: Option<exchange_types::ClientOrderId>,
    reserve: u64,
    keeps_priority: bool,
    /// An untriggered stop's new stop price.
    stop: Option<u64>,
}

fn split_ref(
    reference: &exchange_types::OrderRef,
) -> (
    Option<exchange_types::OrderId>,
    Option<exchange_types::ClientOrderId>,
) {
    match reference {
        exchange_types::OrderRef::Id(id) => (Some(*id), None),
        exchange_types::OrderRef::Client(coid) => (None, Some(*coid)),
    }
}
