//! The engine: state, command dispatch and the bookkeeping every command
//! shares (event numbering, balance moves, opening and closing orders).
//!
//! Determinism: the engine reads no clock (time is the command's `ts`,
//! clamped to never run backwards), draws no random numbers, uses no
//! floating point, and never iterates a hash map. Ids come from counters in
//! the state. The same commands therefore give the same events and the same
//! [`Engine::state_hash`] on every replica.

use exchange_types::event;
use exchange_types::{
    AccountId, AssetCode, ClientOrderId, Command, Event, EventKind, OrderId, RejectReason, Stamped,
    Symbol,
};

use crate::accounts::Accounts;
use crate::book::Book;
use crate::closed::RecentlyClosed;
use crate::instrument::Instrument;
use crate::lookup::Lookup;
use crate::orders::{Order, OrderPool};
use crate::sessions::Sessions;

/// The account that collects fees and pays maker rebates. It may deposit
/// and withdraw but never trade.
pub const FEE_ACCOUNT: AccountId = 0;

/// Who and what a rejected command was about, as far as it said.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Subject {
    pub account: Option<AccountId>,
    pub client_order_id: Option<ClientOrderId>,
    pub order_id: Option<OrderId>,
    pub symbol: Option<Symbol>,
}

/// Open orders the two order indexes hold before they first grow: a few
/// busy books' worth, 16,384 buckets each and about 1 MiB together. A
/// growth past it moves the entries a few at a time over the next
/// updates (see [`Lookup::churning`]); the room spares smaller workloads
/// even that.
const ORDER_ROOM: usize = 6_144;

/// Orders the pool reserves: every order the engine admits, and a margin
/// for the one order a command may hold in the pool without resting it (a
/// taking order, a snapshot restoring more than was admitted). The pool
/// therefore never copies itself inside a command; the reservation is
/// 1.2 GB of address space (and 40 MB for its free list), of which only
/// the pages holding orders are ever touched (see [`OrderPool`]).
const ORDER_POOL_ROOM: usize = exchange_types::limits::MAX_OPEN_ORDERS + 1_024;

/// The trading core. Feed it [`Stamped`] commands in log order.
#[derive(Clone, Debug)]
pub struct Engine {
    pub(crate) seq: u64,
    pub(crate) now: u64,
    pub(crate) next_order_id: OrderId,
    pub(crate) next_trade_id: u64,
    pub(crate) assets: Vec<AssetCode>,
    /// Sum of every account's total per asset: moved by deposits and
    /// withdrawals only, and capped so no balance can overflow.
    pub(crate) asset_supply: Vec<u64>,
    pub(crate) asset_by_code: Lookup<AssetCode, u32>,
    pub(crate) instruments: Vec<Instrument>,
    pub(crate) books: Vec<Book>,
    pub(crate) instrument_by_symbol: Lookup<Symbol, u32>,
    pub(crate) accounts: Accounts,
    pub(crate) orders: OrderPool,
    pub(crate) order_by_id: Lookup<OrderId, u32>,
    pub(crate) by_client_id: Lookup<(u32, ClientOrderId), u32>,
    pub(crate) closed: RecentlyClosed,
    /// Market-maker protection settings across all accounts.
    pub(crate) mmp_configs: usize,
    /// (account, instrument) pairs whose protection tripped during the
    /// current command; always empty between commands.
    pub(crate) mmp_tripped: Vec<(u32, u32)>,
    /// Call phases and expiries.
    pub(crate) sessions: Sessions,
    /// Untriggered stops and one-cancels-other pairs.
    pub(crate) stops: crate::stops::book::Stops,
    /// Open icebergs by order id: the lots each shows at a time. Rare, so
    /// kept beside the pool rather than in every order.
    pub(crate) iceberg_display: std::collections::BTreeMap<OrderId, u64>,
    /// Volatility bands and the interruptions they start.
    pub(crate) volatility: crate::volatility::bands::Volatility,
    /// Market orders waiting for a call's uncrossing, off the books.
    pub(crate) call_markets: crate::sessions::CallMarkets,
    /// The waiting market orders that were entered as market-to-limit:
    /// they rest at the auction price rather than trade on.
    pub(crate) call_to_limit: std::collections::BTreeSet<OrderId>,
    /// Midpoint orders, by instrument, off the lit books.
    pub(crate) midpoints: crate::midpoint::Midpoints,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    pub fn new() -> Self {
        let mut engine = Engine {
            seq: 0,
            now: 0,
            next_order_id: 1,
            next_trade_id: 1,
            assets: Vec::new(),
            asset_supply: Vec::new(),
            asset_by_code: Lookup::default(),
            instruments: Vec::new(),
            books: Vec::new(),
            instrument_by_symbol: Lookup::default(),
            accounts: Accounts::default(),
            orders: OrderPool::with_room(ORDER_POOL_ROOM),
            order_by_id: Lookup::churning(ORDER_ROOM),
            by_client_id: Lookup::churning(ORDER_ROOM),
            closed: RecentlyClosed::default(),
            mmp_configs: 0,
            mmp_tripped: Vec::new(),
            sessions: Sessions::default(),
            stops: crate::stops::book::Stops::default(),
            iceberg_display: std::collections::BTreeMap::new(),
            volatility: crate::volatility::bands::Volatility::default(),
            call_markets: std::collections::BTreeMap::new(),
            call_to_limit: std::collections::BTreeSet::new(),
            midpoints: crate::midpoint::Midpoints::default(),
        };
        // The fee account always exists so that fees never need a branch.
        let fee = engine.accounts.get_or_create(FEE_ACCOUNT);
        assert_eq!(fee, Ok(0), "the fee account is the first");
        engine
    }

    /// Applies one command and appends the events it caused to `out`.
    pub fn apply(&mut self, stamped: &Stamped, out: &mut Vec<Event>) {
        self.now = self.now.max(stamped.ts);
        if self.sessions.expiry_due(self.now) {
            self.expire_due(out);
        }
        if self.volatility.end_due(self.now) {
            self.end_volatility_auctions(out);
        }
        let trades_before = self.next_trade_id;
        self.dispatch(stamped, out);
        // Stops trigger on trades, and pairs cancel on fills: nothing to do
        // after a command that traded nothing.
        if self.next_trade_id != trades_before && self.stops.is_active() {
            self.after_trades(out);
        }
        // The one test every command pays for midpoint orders: only an
        // instrument with midpoint orders on both sides can trade there
        // when its lit quotes move.
        if self.midpoints.any_two_sided() {
            self.rematch_midpoints(out);
        }
    }

    /// A hint, given one command ahead: starts loading the open order a
    /// cancel or replace names, so that its index probe and the order's
    /// lines are in the cache when [`Engine::apply`] reaches it. Most
    /// commands name an order (nine in ten of the standard workload), and
    /// on a deep book both loads miss the cache. It only reads, so giving
    /// it or not yields the same events and state.
    #[inline]
    pub fn prefetch(&self, stamped: &Stamped) {
        let reference = match &stamped.command {
            Command::Cancel(cancel) => &cancel.order,
            command => match command.as_replace() {
                Some((replace, _)) => &replace.order,
                None => return,
            },
        };
        if let exchange_types::OrderRef::Id(id) = reference {
            if let Some(&slot) = self.order_by_id.get(id) {
                self.orders.prefetch(slot);
            }
        }
    }

    // Always inlined: `apply`'s body, split off only to read better; a
    // call here would be paid on every command.
    #[inline(always)]
    fn dispatch(&mut self, stamped: &Stamped, out: &mut Vec<Event>) {
        match &stamped.command {
            Command::AddInstrument(spec) => self.add_instrument(spec, out),
            Command::Deposit(transfer) => self.deposit(transfer, out),
            Command::Withdraw(transfer) => self.withdraw(transfer, out),
            Command::Place(place) => self.place(place, out),
            Command::Cancel(cancel) => self.cancel(cancel, out),
            // One call for both kinds: LLVM inlines a function's only call
            // into `apply`, as it did before there were two kinds.
            command @ (Command::Replace(_) | Command::ReplaceStop(_)) => {
                if let Some((replace, stop_price)) = command.as_replace() {
                    self.replace(replace, stop_price, out);
                }
            }
            Command::MassCancel(mass) => self.mass_cancel(mass, out),
            Command::Halt { symbol } => self.set_status(symbol, true, out),
            Command::Resume { symbol } => self.set_status(symbol, false, out),
            Command::SetRiskLimits(set) => self.set_risk_limits(set, out),
            Command::Suspend { account } => self.set_suspended(*account, true, out),
            Command::Reinstate { account } => self.set_suspended(*account, false, out),
            Command::SetMmp(set) => self.set_mmp(set, out),
            Command::ResetMmp { account, symbol } => self.reset_mmp(*account, symbol, out),
            Command::LinkSubAccount { owner, sub } => self.link_sub_account(*owner, *sub, out),
            Command::InternalTransfer(t) => self.internal_transfer(t, out),
            Command::SetPhase { symbol, phase } => self.set_phase(symbol, *phase, out),
            Command::SetInstrumentRules(set) => self.set_instrument_rules(set, out),
            Command::Delist { symbol } => self.delist(symbol, out),
            Command::Tick => {}
            Command::SetReferencePrice { symbol, price } => {
                self.set_reference_price(symbol, *price, out)
            }
        }
        if self.sessions.any_call() {
            self.refresh_indicatives(out);
        }
    }

    /// Records input that never became a command (for example a malformed
    /// line in a replay file) so that it is numbered like every event.
    pub fn record_error(&mut self, ts: u64, line: u64, message: String, out: &mut Vec<Event>) {
        self.now = self.now.max(ts);
        self.emit(out, EventKind::Error(event::Error { line, message }));
    }

    /// Timestamp of the latest command applied (never decreases).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Sequence number of the last event emitted.
    pub fn last_seq(&self) -> u64 {
        self.seq
    }

    /// Number of open orders: resting on the books or untriggered stops.
    pub fn open_order_count(&self) -> usize {
        self.order_by_id.len()
    }

    #[inline]
    pub(crate) fn emit(&mut self, out: &mut Vec<Event>, kind: EventKind) {
        self.emit_with(out, move |_| kind);
    }

    /// Numbers the next event and appends it, built by `kind` only once
    /// `out` has room for it. An event built first and then pushed is
    /// spilled around the vector's growth check, and copying its
    /// odd-sized inline strings back defeats store forwarding: that stall
    /// was a quarter of the cost of emitting on the hot path.
    #[inline(always)]
    pub(crate) fn emit_with(
        &mut self,
        out: &mut Vec<Event>,
        kind: impl FnOnce(&Engine) -> EventKind,
    ) {
        self.seq += 1;
        let (seq, ts) = (self.seq, self.now);
        if out.len() == out.capacity() {
            grow_events(out);
        }
        let len = out.len();
        let event = Event {
            seq,
            ts,
            kind: kind(self),
        };
        // SAFETY: the check above leaves room for one more event, so slot
        // `len` lies inside the allocation; it is written before the length
        // covers it. Writing through the pointer, with no call left between
        // the check and the write, lets the event be built in its slot.
        unsafe {
            out.as_mut_ptr().add(len).write(event);
            out.set_len(len + 1);
        }
    }

    pub(crate) fn emit_balance(&mut self, out: &mut Vec<Event>, account: u32, asset: u32) {
        self.emit_balance_inline(out, account, asset);
    }

    /// [`Engine::emit_balance`] without the call: for a replace, whose
    /// reservation moves on every new price of a buy.
    #[inline(always)]
    pub(crate) fn emit_balance_inline(&mut self, out: &mut Vec<Event>, account: u32, asset: u32) {
        self.emit_with(out, |e| {
            let acct = &e.accounts.get(account);
            let balance = acct.balance(asset);
            EventKind::Balance(event::Balance {
                account: acct.id(),
                asset: e.assets[asset as usize],
                total: balance.total,
                available: balance.available,
            })
        });
    }

    pub(crate) fn emit_book(
        &mut self,
        out: &mut Vec<Event>,
        instrument: u32,
        order_side: exchange_types::Side,
        price_ticks: u64,
        qty_lots: u64,
    ) {
        self.emit_with(out, |e| {
            let inst = &e.instruments[instrument as usize];
            EventKind::Book(event::Book {
                symbol: inst.symbol,
                side: order_side,
                price: inst.price_units(price_ticks),
                qty: inst.qty_units(qty_lots),
            })
        });
    }

    /// Cold and out of line: it keeps the accept paths it branches from
    /// compact, and builds its event in place like the hot events, not
    /// first on the stack and then copied into `out`.
    #[cold]
    #[inline(never)]
    pub(crate) fn reject(
        &mut self,
        out: &mut Vec<Event>,
        command: &'static str,
        subject: Subject,
        reason: RejectReason,
    ) {
        self.emit_with(out, move |_| {
            let Subject {
                account,
                client_order_id,
                order_id,
                symbol,
            } = subject;
            EventKind::Rejected(event::Rejected {
                command,
                account,
                client_order_id,
                order_id,
                symbol,
                reason,
            })
        });
    }

    /// The asset an order of `side` reserves on `instrument`.
    pub(crate) fn reserved_asset(&self, order: &Order) -> u32 {
        let inst = &self.instruments[order.instrument as usize];
        match order.side {
            exchange_types::Side::Buy => inst.quote,
            exchange_types::Side::Sell => inst.base,
        }
    }

    /// Moves `amount` of an order's reservation back to available.
    pub(crate) fn release(&mut self, slot: u32, amount: u64) -> Option<(u32, u32)> {
        if amount == 0 {
            return None;
        }
        // Callers release at most what the order holds, and what it holds is
        // part of its account's total. Either failing is a bug that, in a
        // release build, would wrap a reservation or make funds spendable
        // twice; each check is one comparison of values in hand.
        let order = self.orders.get_mut(slot);
        assert!(
            order.reserved >= amount,
            "order {} releases {amount} but holds {}",
            order.id,
            order.reserved
        );
        order.reserved -= amount;
        let account = order.account;
        let asset = self.reserved_asset(self.orders.get(slot));
        self.accounts.release(account, asset, amount);
        Some((account, asset))
    }

    /// Releases all of an order's remaining reservation and reports it.
    pub(crate) fn release_all(&mut self, slot: u32, out: &mut Vec<Event>) {
        let amount = self.orders.get(slot).reserved;
        if let Some((account, asset)) = self.release(slot, amount) {
            self.emit_balance(out, account, asset);
        }
    }

    /// Makes a resting order findable by id and client id, and counts it
    /// against its account. Inlined for its test alone: a moved order rests
    /// again already indexed, and paid a call and its register saves (30
    /// instructions a move) to find that out.
    #[inline]
    pub(crate) fn index_order(&mut self, slot: u32) {
        if !self.orders.get(slot).indexed {
            self.index_new_order(slot);
        }
    }

    #[inline(never)]
    fn index_new_order(&mut self, slot: u32) {
        let order = self.orders.get_mut(slot);
        order.indexed = true;
        let (id, account, coid) = (order.id, order.account, order.client_order_id);
        // Both keys were checked free before the order was accepted (or
        // restored); an occupied one means two open orders share an id and
        // one of them would become unreachable. The check is the insert's
        // own return value.
        let old_by_id = self.order_by_id.insert(id, slot);
        assert!(old_by_id.is_none(), "order id {id} is already open");
        let old_by_client = self.by_client_id.insert((account, coid), slot);
        assert!(
            old_by_client.is_none(),
            "client order id {coid} of order {id} is already open"
        );
        self.accounts.link_order(&mut self.orders, slot);
    }

    /// Removes an order that is no longer on any book from every index and
    /// from the pool. Its reservation must already be released.
    pub(crate) fn close_order(&mut self, slot: u32) -> Order {
        if self.orders.get(slot).oco {
            // A pair outlives neither order: the partner stays open alone.
            self.unlink_oco(slot);
        }
        let order = self.orders.remove(slot);
        // Funds still held by a closed order could never be released again.
        assert_eq!(
            order.reserved, 0,
            "closing order {} that still holds funds",
            order.id
        );
        if order.indexed {
            self.accounts.unlink_order(&mut self.orders, &order);
            // An index entry naming another slot would outlive this order and
            // resolve a later command to whatever reuses that slot.
            let by_id = self.order_by_id.remove(&order.id);
            assert_eq!(
                by_id,
                Some(slot),
                "order {} was indexed elsewhere",
                order.id
            );
            let by_client = self
                .by_client_id
                .remove(&(order.account, order.client_order_id));
            assert_eq!(
                by_client,
                Some(slot),
                "order {}'s client id was indexed elsewhere",
                order.id
            );
        }
        if !self.iceberg_display.is_empty() {
            self.iceberg_display.remove(&order.id);
        }
        self.closed
            .record(order.account, order.client_order_id, order.id);
        order
    }

    /// Puts an order on its book at the back of its level and reports the
    /// level. Always inlined: it has a second, cold caller (a market order
    /// carried out of a call), and with two callers the compiler keeps it
    /// out of line on the order path (1.7% more of the core's instructions
    /// in `bench engine`).
    #[inline(always)]
    pub(crate) fn rest(&mut self, slot: u32, out: &mut Vec<Event>) {
        let (instrument, side, price, hidden) = {
            let order = self.orders.get(slot);
            (order.instrument, order.side, order.price, order.is_hidden)
        };
        // An order rests only once nothing it could trade with is left (a
        // post-only one was refused if it would have crossed), so the book
        // is never crossed after matching. One look at the opposite best,
        // which matching has just touched.
        assert!(
            !self.books[instrument as usize].crosses(side.opposite(), price)
                || crate::sessions::may_cross(self.instruments[instrument as usize].phase),
            "resting order {} at {price} would cross the book",
            self.orders.get(slot).id
        );
        self.rest_at(slot, (instrument, side, price, hidden), out);
        self.index_order(slot);
    }

    /// [`Engine::rest`] for a caller that holds the order's instrument,
    /// side, price and hidden flag, has just seen the book uncrossed at
    /// that price, and rests an order already indexed (a move): each
    /// second read of the order, the book and the index was a checked
    /// read on every move.
    #[inline(always)]
    pub(crate) fn rest_at(
        &mut self,
        slot: u32,
        (instrument, side, price, hidden): (u32, exchange_types::Side, u64, bool),
        out: &mut Vec<Event>,
    ) {
        if !self.iceberg_display.is_empty() {
            self.slice_iceberg(slot);
        }
        let qty = self.books[instrument as usize]
            .resting_side_mut(side, hidden)
            .push_back(&mut self.orders, slot);
        // A hidden order is never shown: its level is no level of the
        // published book.
        if !hidden {
            self.emit_book(out, instrument, side, price, qty);
        }
    }

    /// Takes a resting order off its book and reports the level.
    pub(crate) fn unrest(&mut self, slot: u32, out: &mut Vec<Event>) {
        let (is_market, midpoint) = {
            let o = self.orders.get(slot);
            (o.is_market, o.is_midpoint)
        };
        // The only open market orders wait off the book for a call's
        // uncrossing; midpoint orders rest in their own book.
        if is_market | midpoint {
            if is_market {
                self.unhold_call_market(slot);
            } else {
                self.unbook_midpoint(slot);
            }
            return;
        }
        self.unrest_on_book(slot, out);
    }

    /// [`Engine::unrest`] for an order known to rest on a level (neither a
    /// market order in a call nor a midpoint order). Always inlined: a
    /// move calls it directly, and the call it spares was 16 instructions
    /// of register saves on every move.
    #[inline(always)]
    pub(crate) fn unrest_on_book(&mut self, slot: u32, out: &mut Vec<Event>) {
        let terms = {
            let o = self.orders.get(slot);
            (o.instrument, o.side, o.price, o.is_hidden)
        };
        self.unrest_at(slot, terms, out);
    }

    /// [`Engine::unrest_on_book`] for a caller that holds the order's
    /// instrument, side, price and hidden flag.
    #[inline(always)]
    pub(crate) fn unrest_at(
        &mut self,
        slot: u32,
        (instrument, side, price, hidden): (u32, exchange_types::Side, u64, bool),
        out: &mut Vec<Event>,
    ) {
        let qty = self.books[instrument as usize]
            .resting_side_mut(side, hidden)
            .unlink(&mut self.orders, slot);
        if !hidden {
            self.emit_book(out, instrument, side, price, qty);
        }
    }

    /// Finds an open order of `account` by id or client id. Inlined into
    /// its two callers, cancel and replace, nine commands in ten.
    #[inline(always)]
    pub(crate) fn resolve_order(
        &self,
        account: Option<u32>,
        reference: &exchange_types::OrderRef,
    ) -> Result<u32, RejectReason> {
        match reference {
            exchange_types::OrderRef::Id(id) => {
                if let Some(&slot) = self.order_by_id.get(id) {
                    if Some(self.orders.get(slot).account) == account {
                        return Ok(slot);
                    }
                    // Another account's open order: indistinguishable from
                    // none. (A closed id answers `order_not_open` whoever
                    // asks: ids are sequential, so that reveals nothing.)
                    return Err(RejectReason::UnknownOrder);
                }
                if *id >= 1 && *id < self.next_order_id {
                    Err(RejectReason::OrderNotOpen)
                } else {
                    Err(RejectReason::UnknownOrder)
                }
            }
            exchange_types::OrderRef::Client(coid) => {
                let Some(account) = account else {
                    return Err(RejectReason::UnknownOrder);
                };
                if let Some(&slot) = self.by_client_id.get(&(account, *coid)) {
                    return Ok(slot);
                }
                if self.closed.contains(account, coid) {
                    Err(RejectReason::OrderNotOpen)
                } else {
                    Err(RejectReason::UnknownOrder)
                }
            }
        }
    }
}

/// The events vector's growth, out of line: it runs once per few hundred
/// commands at most (callers keep their vectors), and a call on the path
/// that builds an event would make it build the event aside and copy it.
#[cold]
#[inline(never)]
fn grow_events(out: &mut Vec<Event>) {
    out.reserve(64);
}
