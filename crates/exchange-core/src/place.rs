//! An order's way through the core, stage by stage:
//!
//! 1. **validate** (`exchange_types::validate`): the command's shape, with
//!    no state; the edges run it whole before the log;
//! 2. **admit** (`admit.rs`): instrument, phase, account, member controls,
//!    the book's capacity, with the shape rules at the points where the
//!    venue has always checked them;
//! 3. **reserve** (`reserve.rs`): what the order could spend, against what
//!    its account has available;
//! 4. **accept** (here): the `accepted` event, the order in the pool, its
//!    reservation set aside;
//! 5. **match** (`matching.rs` continuously, `call_market.rs` and
//!    `phase.rs` in a call);
//! 6. **settle** (`settle.rs`): each fill's balances, fees and levels, then
//!    the stops it triggers (`stops/`, after the command).
//!
//! The first three only read, so a rejected order leaves no trace but its
//! `rejected` event; from acceptance on nothing can refuse it.

use exchange_types::event;
use exchange_types::{Event, EventKind, OrderId, OrderType, Phase, Place, TimeInForce};

use crate::engine::{Engine, Subject};
use crate::orders::{Order, NIL};
use crate::reserve::Reserved;
use crate::sessions::rests;

impl Engine {
    pub(crate) fn place(&mut self, place: &Place, out: &mut Vec<Event>) {
        let staged = self
            .admit(place)
            .and_then(|admitted| self.reserve(place, admitted));
        match staged {
            Ok(reserved) => self.accept(place, reserved, out),
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

    /// Accepts an order that passed every check: from here on nothing
    /// refuses it. It is reported, pooled, given its reservation, and then
    /// held as a stop, held for a call, or matched.
    #[inline(always)]
    fn accept(&mut self, place: &Place, reserved: Reserved, out: &mut Vec<Event>) {
        let slot = self.open_order(place, &reserved, out);
        let a = &reserved.admitted;
        // A funds order its funds buy nothing of ends at once, as a
        // market order facing an empty book does.
        if !reserved.feasible || (a.funds.is_some() && a.lots == 0) {
            self.expire(slot, out);
            return;
        }
        if let (TimeInForce::Gtd, Some(ts)) = (a.tif, a.expire_ts) {
            let id = self.orders.get(slot).id;
            self.sessions.add_expiry(ts, id);
        }
        if reserved.reserve > 0 {
            self.set_aside(slot, reserved.reserve_asset, reserved.reserve, out);
        }
        if let Some(other) = a.oco_with {
            self.pair_on_entry(slot, other);
        }
        if let Some(terms) = a.midpoint {
            self.enter_midpoint(slot, terms, out);
            return;
        }
        if let Some(plan) = a.stop {
            self.index_order(slot);
            self.hold_stop(slot, &plan);
            return;
        }
        if a.call_market {
            self.hold_call_entry(slot, place.order_type == OrderType::MarketToLimit);
            return;
        }
        self.execute(slot, out);
    }

    /// Pairs a new order with its one-cancels-other partner, if still
    /// open. Out of line: the order path of an unpaired order stays small.
    #[cold]
    #[inline(never)]
    fn pair_on_entry(&mut self, slot: u32, other: OrderId) {
        if let Some(&other) = self.order_by_id.get(&other) {
            // Indexed now rather than when it rests: its own matching may
            // close the partner, whose unlinking finds it by id.
            self.index_order(slot);
            self.link_oco(slot, other);
        }
    }

    /// Files a market (or market-to-limit) order entered in a call for
    /// the uncrossing.
    #[cold]
    #[inline(never)]
    fn hold_call_entry(&mut self, slot: u32, to_limit: bool) {
        self.hold_call_market(slot);
        if to_limit {
            self.call_to_limit.insert(self.orders.get(slot).id);
        }
    }

    /// Numbers the order, reports it accepted and puts it in the pool.
    #[inline(always)]
    fn open_order(&mut self, place: &Place, reserved: &Reserved, out: &mut Vec<Event>) -> u32 {
        let a = &reserved.admitted;
        let id = self.next_order_id;
        self.next_order_id += 1;
        // In a call a market-to-limit order waits unpriced, as a market
        // order does, until the auction gives it a price.
        let is_market = place.order_type == OrderType::Market || a.call_market;
        // A stop market order's price is its protection, not a limit the
        // client gave: like a market order's collar bound, or an unlimited
        // midpoint order's, not reported.
        let priced = !is_market
            && !matches!(
                place.order_type,
                OrderType::Stop | OrderType::MarketIfTouched
            )
            && (place.order_type != OrderType::Midpoint || place.price.is_some());
        self.emit_with(out, |e| {
            let inst = &e.instruments[a.instrument as usize];
            EventKind::Accepted(event::Accepted {
                account: place.account,
                client_order_id: place.client_order_id,
                order_id: id,
                symbol: place.symbol,
                side: place.side,
                order_type: place.order_type,
                price: priced.then(|| inst.price_units(a.price)),
                qty: inst.qty_units(a.lots),
                tif: a.tif,
                post_only: place.post_only,
                stp: place.stp,
                ext: Engine::accepted_ext(inst, a, place),
            })
        });
        if let Some(display) = a.display {
            self.iceberg_display.insert(id, display);
        }
        self.orders.insert(Order {
            id,
            account: a.account,
            instrument: a.instrument,
            side: place.side,
            tif: a.tif,
            stp: place.stp,
            post_only: place.post_only,
            is_market,
            is_hidden: a.hidden,
            is_midpoint: a.midpoint.is_some(),
            price: a.price,
            qty: a.lots,
            filled: 0,
            reserved: 0,
            hidden: 0,
            client_order_id: place.client_order_id,
            indexed: false,
            stop: false,
            oco: false,
            account_prev: NIL,
            account_next: NIL,
        })
    }

    /// Moves `amount` of the order's account's available `asset` into the
    /// order's reservation.
    #[inline(always)]
    fn set_aside(&mut self, slot: u32, asset: u32, amount: u64, out: &mut Vec<Event>) {
        let order = self.orders.get_mut(slot);
        order.reserved = amount;
        let account = order.account;
        // Reservation compared the same two numbers; nothing ran since
        // that could lower available.
        self.accounts.hold(account, asset, amount);
        self.emit_balance(out, account, asset);
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
            && self.books[instrument as usize].crosses(side.opposite(), price)
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
                account: e.accounts.get(order.account).id(),
                order_id: order.id,
                client_order_id: order.client_order_id,
                symbol: inst.symbol,
                expired_qty: inst.qty_units(order.leaves()),
                filled_qty: inst.qty_units(order.filled),
            })
        });
    }
}
