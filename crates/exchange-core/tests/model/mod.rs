//! A reference matcher for differential tests, written to be obviously
//! correct rather than fast: each book side is a plain vector kept sorted
//! by (price priority, arrival), every lookup is a linear scan, and there
//! are no balances (differential streams fund every account generously and
//! list no collar, so funds never decide anything).
//!
//! It follows the documented semantics, not the core's code: price-time
//! priority with trades at the resting price; GTC rests, IOC and market
//! remainders expire; FOK fills completely or expires whole, judged by
//! simulating the match (self-trade prevention included) on a copy of the
//! book; post-only is refused if it would cross; self-trade prevention by
//! the taker's mode; replace keeps priority only when the price is the same
//! and the quantity does not grow; ids count accepted orders from 1.
//! Stops and one-cancels-other pairs follow docs/market-model.md, written
//! as plainly (`stops`): every stop is checked after each command that
//! traded, and the one to trigger is found by a scan of all of them.
//!
//! Its output is the order-lifecycle part of the event stream ([`Ev`]):
//! everything but balances and book levels, which are compared as state.

use std::collections::{BTreeMap, BTreeSet};

use exchange_core::BookView;
use exchange_types::decimal::UnitsError;
use exchange_types::*;

mod book;
mod midpoint;
pub mod published;
mod stops;
use book::{Market, Order};
use midpoint::Mid;
use stops::StopPlan;

/// An event reduced to what the model can predict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    Accepted(OrderId),
    /// The command's name and the reason.
    Rejected(&'static str, RejectReason),
    Trade {
        symbol: Symbol,
        price: u64,
        qty: u64,
        maker_order_id: OrderId,
        taker_order_id: OrderId,
        maker_account: AccountId,
        taker_account: AccountId,
        aggressor_side: Side,
    },
    Canceled {
        order_id: OrderId,
        reason: CancelReason,
        canceled_qty: u64,
        filled_qty: u64,
        leaves_qty: u64,
    },
    Expired {
        order_id: OrderId,
        expired_qty: u64,
        filled_qty: u64,
    },
    Replaced {
        order_id: OrderId,
        client_order_id: ClientOrderId,
        price: u64,
        qty: u64,
        leaves_qty: u64,
        stop_price: Option<u64>,
    },
    Status(Symbol, TradingStatus),
    Triggered {
        order_id: OrderId,
        stop_price: u64,
        last_price: u64,
    },
}

/// A resting order as the tests compare it with `Engine::open_orders`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct OpenOrder {
    pub order_id: OrderId,
    pub account: AccountId,
    pub client_order_id: String,
    pub symbol: String,
    pub side: Side,
    pub price: u64,
    pub qty: u64,
    pub filled_qty: u64,
    pub stop_price: Option<u64>,
    pub hidden: bool,
}

#[derive(Clone, Debug)]
pub struct Model {
    markets: Vec<Market>,
    accounts: BTreeSet<AccountId>,
    next_order_id: OrderId,
    next_arrival: u64,
    /// Every (account, client id) an order has closed under.
    closed: BTreeSet<(AccountId, ClientOrderId)>,
    /// One-cancels-other pairs, both ways. A pair whose order closed
    /// lingers until the end of the command; canceling a closed partner
    /// does nothing, so that is the same as dissolving it at once.
    pairs: BTreeMap<OrderId, OrderId>,
    /// Partners of paired orders that traded, to cancel once the command
    /// has matched.
    pending: Vec<OrderId>,
    /// Every instrument's midpoint orders, in no particular order.
    mids: Vec<Mid>,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            markets: Vec::new(),
            // The fee account exists from the start; it just cannot trade.
            accounts: BTreeSet::from([exchange_core::FEE_ACCOUNT]),
            next_order_id: 1,
            next_arrival: 0,
            closed: BTreeSet::new(),
            pairs: BTreeMap::new(),
            pending: Vec::new(),
            mids: Vec::new(),
        }
    }
}

/// Where an open order sits: on a book (market index, side, position),
/// among the untriggered stops (market index, position) or in a midpoint
/// book (market index, position among all midpoint orders).
#[derive(Clone, Copy, Debug)]
enum At {
    Book(usize, Side, usize),
    Stop(usize, usize),
    Mid(usize, usize),
}

impl At {
    fn market(self) -> usize {
        match self {
            At::Book(index, _, _) | At::Stop(index, _) | At::Mid(index, _) => index,
        }
    }
}

/// A place that passed every check, in ticks and lots.
struct Admitted {
    index: usize,
    price: Option<u64>,
    qty: u64,
    /// Quote to spend, for a market buy by funds.
    funds: Option<u64>,
    tif: TimeInForce,
    display: Option<u64>,
    /// Minimum acceptable quantity in lots.
    min_lots: Option<u64>,
    /// A hidden order.
    dark: bool,
    stop: Option<StopPlan>,
    /// The order to pair with as one-cancels-other.
    partner: Option<OrderId>,
    /// A midpoint order: whether it has no limit.
    midpoint: Option<bool>,
}

/// A replace that passed every check, in ticks and lots.
pub(super) struct Amend {
    at: At,
    /// The order as it was before the replace.
    old: Order,
    price: u64,
    qty: u64,
    coid: ClientOrderId,
    /// The stop as it was, when the order is an untriggered stop.
    stop: Option<stops::Stop>,
    /// The stop price it moves to, if it moves.
    new_stop: Option<u64>,
}

impl Amend {
    fn leaves(&self) -> u64 {
        self.qty - self.old.filled
    }
}

impl Model {
    pub fn apply(&mut self, command: &Command) -> Vec<Ev> {
        let mut out = Vec::new();
        let result = match command {
            Command::AddInstrument(spec) => {
                self.add_instrument(spec);
                Ok(())
            }
            Command::Deposit(t) => {
                if self.asset_listed(&t.asset) && t.amount.to_units().is_ok() {
                    self.accounts.insert(t.account);
                }
                Ok(())
            }
            Command::Withdraw(_) => Ok(()),
            Command::Place(p) => self.place(p, &mut out),
            Command::Cancel(c) => self.cancel(c, &mut out),
            Command::Replace(r) => self.replace(r, None, &mut out),
            Command::ReplaceStop(r) => self.replace(&r.replace, Some(r.stop_price), &mut out),
            Command::MassCancel(m) => self.mass_cancel(m, &mut out),
            Command::Halt { symbol } => self.set_halted(symbol, true, &mut out),
            Command::Resume { symbol } => self.set_halted(symbol, false, &mut out),
            // Member risk controls are not modeled: the differential
            // streams never send them (tests/member_risk.rs covers them).
            Command::SetRiskLimits(_)
            | Command::Suspend { .. }
            | Command::Reinstate { .. }
            | Command::SetMmp(_)
            | Command::ResetMmp { .. }
            | Command::LinkSubAccount { .. }
            | Command::InternalTransfer(_)
            | Command::SetPhase { .. }
            | Command::SetInstrumentRules(_)
            | Command::Delist { .. }
            | Command::Tick => Ok(()),
            Command::SetReferencePrice { symbol, price } => self.set_reference(symbol, *price),
        };
        if let Err(reason) = result {
            out.push(Ev::Rejected(command.name(), reason));
        }
        if out.iter().any(|e| matches!(e, Ev::Trade { .. })) {
            self.after_trades(&mut out);
        }
        self.match_all_mids(&mut out);
        if !self.pending.is_empty() {
            self.after_trades(&mut out);
        }
        self.prune_pairs();
        out
    }

    /// Levels of `symbol` per side, best first, in units.
    pub fn book(&self, symbol: &Symbol) -> Option<BookView> {
        let m = self.markets.iter().find(|m| m.symbol == *symbol)?;
        Some(BookView {
            bids: m.levels(Side::Buy),
            asks: m.levels(Side::Sell),
        })
    }

    /// Every resting iceberg by order id, in units: (display, shown,
    /// hidden, whether a fill cut into its slice and stopped there).
    pub fn icebergs(&self) -> BTreeMap<OrderId, (u64, u64, u64, bool)> {
        let mut all = BTreeMap::new();
        for m in &self.markets {
            for o in m.bids.iter().chain(&m.asks) {
                if let Some(display) = o.display {
                    let lots = (display, o.shown(), o.hidden);
                    let units = (lots.0 * m.lot_units, lots.1 * m.lot_units);
                    all.insert(o.id, (units.0, units.1, lots.2 * m.lot_units, o.slice_cut));
                }
            }
        }
        all
    }

    pub fn symbols(&self) -> Vec<Symbol> {
        self.markets.iter().map(|m| m.symbol).collect()
    }

    pub fn open_orders(&self) -> Vec<OpenOrder> {
        let mut all: Vec<OpenOrder> = self
            .markets
            .iter()
            .flat_map(|m| {
                let resting = m.bids.iter().chain(&m.asks).map(|o| (o, None));
                let stops = m.stops.iter().map(|s| (&s.order, Some(s.stop)));
                resting.chain(stops).map(move |(o, stop)| OpenOrder {
                    order_id: o.id,
                    account: o.account,
                    client_order_id: o.client_order_id.to_string(),
                    symbol: m.symbol.to_string(),
                    side: o.side,
                    price: o.price.unwrap_or(0) * m.tick_units,
                    qty: o.qty * m.lot_units,
                    filled_qty: o.filled * m.lot_units,
                    stop_price: stop.map(|ticks| ticks * m.tick_units),
                    hidden: o.dark,
                })
            })
            .chain(self.mids.iter().map(|mid| {
                let (m, o) = (&self.markets[mid.index], &mid.order);
                OpenOrder {
                    order_id: o.id,
                    account: o.account,
                    client_order_id: o.client_order_id.to_string(),
                    symbol: m.symbol.to_string(),
                    side: o.side,
                    price: o.price.unwrap_or(0) * m.tick_units,
                    qty: o.qty * m.lot_units,
                    filled_qty: o.filled * m.lot_units,
                    stop_price: None,
                    hidden: false,
                }
            }))
            .collect();
        all.sort();
        all
    }

    fn add_instrument(&mut self, spec: &AddInstrument) {
        let units = |d: Dec| d.to_units().expect("model instruments are valid");
        self.markets.push(Market {
            symbol: spec.symbol,
            base: spec.base,
            quote: spec.quote,
            tick_units: units(spec.tick_size),
            lot_units: units(spec.lot_size),
            halted: false,
            min_lots: spec.min_qty.map_or(1, |q| units(q) / units(spec.lot_size)),
            taker_fee_bps: spec.taker_fee_bps,
            hidden_min: spec.hidden_min_notional.map(|d| {
                d.to_units_allow_zero()
                    .expect("model instruments are valid")
            }),
            bids: Vec::new(),
            asks: Vec::new(),
            last: None,
            stops: Vec::new(),
        });
    }

    fn asset_listed(&self, code: &AssetCode) -> bool {
        self.markets
            .iter()
            .any(|m| m.base == *code || m.quote == *code)
    }

    fn market_index(&self, symbol: &Symbol) -> Result<usize, RejectReason> {
        self.markets
            .iter()
            .position(|m| m.symbol == *symbol)
            .ok_or(RejectReason::UnknownInstrument)
    }

    fn find(&self, matches: impl Fn(&Order) -> bool) -> Option<At> {
        for (index, m) in self.markets.iter().enumerate() {
            for (side, orders) in [(Side::Buy, &m.bids), (Side::Sell, &m.asks)] {
                if let Some(pos) = orders.iter().position(&matches) {
                    return Some(At::Book(index, side, pos));
                }
            }
            if let Some(pos) = m.stops.iter().position(|s| matches(&s.order)) {
                return Some(At::Stop(index, pos));
            }
        }
        let pos = self.mids.iter().position(|m| matches(&m.order))?;
        Some(At::Mid(self.mids[pos].index, pos))
    }

    fn resolve(&self, account: AccountId, reference: &OrderRef) -> Result<At, RejectReason> {
        match reference {
            OrderRef::Id(id) => match self.find(|o| o.id == *id) {
                Some(at) if self.order(at).account == account => Ok(at),
                // Someone else's order is indistinguishable from none.
                Some(_) => Err(RejectReason::UnknownOrder),
                None if *id >= 1 && *id < self.next_order_id => Err(RejectReason::OrderNotOpen),
                None => Err(RejectReason::UnknownOrder),
            },
            OrderRef::Client(coid) => {
                if !self.accounts.contains(&account) {
                    return Err(RejectReason::UnknownOrder);
                }
                match self.find(|o| o.account == account && o.client_order_id == *coid) {
                    Some(at) => Ok(at),
                    None if self.closed.contains(&(account, *coid)) => {
                        Err(RejectReason::OrderNotOpen)
                    }
                    None => Err(RejectReason::UnknownOrder),
                }
            }
        }
    }

    fn order(&self, at: At) -> &Order {
        match at {
            At::Book(index, Side::Buy, pos) => &self.markets[index].bids[pos],
            At::Book(index, Side::Sell, pos) => &self.markets[index].asks[pos],
            At::Stop(index, pos) => &self.markets[index].stops[pos].order,
            At::Mid(_, pos) => &self.mids[pos].order,
        }
    }

    fn take(&mut self, at: At) -> Order {
        match at {
            At::Book(index, side, pos) => self.markets[index].side(side).remove(pos),
            At::Stop(index, pos) => self.markets[index].stops.remove(pos).order,
            At::Mid(_, pos) => self.mids.remove(pos).order,
        }
    }

    fn close(&mut self, orders: impl IntoIterator<Item = Order>) {
        for o in orders {
            self.closed.insert((o.account, o.client_order_id));
        }
    }

    fn is_open(&self, account: AccountId, coid: &ClientOrderId) -> bool {
        self.find(|o| o.account == account && o.client_order_id == *coid)
            .is_some()
    }

    fn place(&mut self, p: &Place, out: &mut Vec<Ev>) -> Result<(), RejectReason> {
        let admitted = self.admit(p)?;
        let Admitted {
            index,
            qty,
            tif,
            partner,
            ..
        } = admitted;
        let id = self.next_order_id;
        self.next_order_id += 1;
        out.push(Ev::Accepted(id));
        let taker = Order {
            id,
            account: p.account,
            client_order_id: p.client_order_id,
            side: p.side,
            price: admitted.price,
            qty,
            filled: 0,
            stp: p.stp,
            post_only: p.post_only,
            arrival: 0,
            display: admitted.display,
            hidden: 0,
            dark: admitted.dark,
            slice_cut: false,
        };
        if let Some(funds) = admitted.funds {
            self.buy_with_funds(index, taker, funds, partner, out);
            return Ok(());
        }
        if let Some(stop) = admitted.stop {
            self.pair(id, partner);
            self.hold_stop(index, taker, stop, tif);
            return Ok(());
        }
        if let Some(unlimited) = admitted.midpoint {
            self.enter_mid(index, taker, (unlimited, admitted.min_lots), tif, out);
            return Ok(());
        }
        // Fill-or-kill needs all of it at once, a minimum acceptable
        // quantity that much: short of it the order ends having traded
        // nothing.
        let needed = match tif {
            TimeInForce::Fok => Some(qty),
            _ => admitted.min_lots,
        };
        if needed.is_some_and(|needed| self.fillable(index, &taker) < needed) {
            out.push(Ev::Expired {
                order_id: id,
                expired_qty: qty * self.markets[index].lot_units,
                filled_qty: 0,
            });
            self.close([taker]);
            return Ok(());
        }
        self.pair(id, partner);
        let from = out.len();
        self.execute(index, taker, tif, out);
        self.note_fills(from, out);
        Ok(())
    }

    /// Every check of a place, in the order the refusals are documented.
    fn admit(&self, p: &Place) -> Result<Admitted, RejectReason> {
        let index = self.market_index(&p.symbol)?;
        if p.account == exchange_core::FEE_ACCOUNT {
            return Err(RejectReason::FeeAccountCannotTrade);
        }
        if !self.accounts.contains(&p.account) {
            return Err(RejectReason::UnknownAccount);
        }
        if self.markets[index].halted {
            return Err(RejectReason::InstrumentHalted);
        }
        let stop = self.check_stop(index, p)?;
        let m = &self.markets[index];
        let market_order = p.order_type == OrderType::Market;
        let to_limit = p.order_type == OrderType::MarketToLimit;
        let midpoint = p.order_type == OrderType::Midpoint;
        // A stop market order has no price of its own either, and a
        // market-to-limit order takes the best opposite one.
        let priceless = market_order
            || matches!(p.order_type, OrderType::Stop | OrderType::MarketIfTouched)
            || to_limit;
        let price = match (priceless, p.price) {
            (false, Some(price)) => Some(m.price_ticks(price)?),
            // An unlimited midpoint sell is bounded at the lowest price;
            // a buy, with no collar or band, by what its account pays.
            (false, None) if midpoint => (p.side == Side::Sell).then_some(1),
            (false, None) => return Err(RejectReason::PriceRequired),
            (true, Some(_)) => return Err(RejectReason::PriceNotAllowed),
            (true, None) if to_limit => Some(
                m.best_opposite(p.side)
                    .ok_or(RejectReason::MarketToLimitNoOpposite)?,
            ),
            (true, None) => None,
        };
        let funds = funds_units(p, market_order)?;
        // What funds buy is found by the match itself.
        let qty = match funds {
            Some(_) => u64::MAX / 2,
            None => m.qty_lots(p.qty)?,
        };
        // A market order never rests.
        let tif = if market_order && p.tif == TimeInForce::Gtc {
            TimeInForce::Ioc
        } else {
            p.tif
        };
        if p.post_only && (priceless || midpoint || tif != TimeInForce::Gtc || stop.is_some()) {
            return Err(RejectReason::PostOnlyNotAllowed);
        }
        let display = m.display_lots(p, market_order || to_limit || midpoint, tif, qty)?;
        let min_lots = m.min_qty_lots(p, stop.is_some())?;
        let dark = m.check_dark(p, price, qty, tif)?;
        let midpoint = midpoint::terms(p, tif)?;
        if self.is_open(p.account, &p.client_order_id) {
            return Err(RejectReason::DuplicateClientOrderId);
        }
        if p.post_only && price.is_some_and(|price| m.would_cross(p.side, price)) {
            return Err(RejectReason::PostOnlyWouldTake);
        }
        let partner = self.check_oco(index, p)?;
        Ok(Admitted {
            index,
            price,
            qty,
            funds,
            tif,
            display,
            min_lots,
            dark,
            stop,
            partner,
            midpoint,
        })
    }

    /// A market buy for an amount of quote: it trades what the funds buy
    /// and never rests.
    fn buy_with_funds(
        &mut self,
        index: usize,
        mut taker: Order,
        funds: u64,
        partner: Option<OrderId>,
        out: &mut Vec<Ev>,
    ) {
        let id = taker.id;
        let mut closed = Vec::new();
        let from = out.len();
        let m = &mut self.markets[index];
        m.match_taker(
            &mut taker,
            Some(funds),
            &mut self.next_arrival,
            &mut closed,
            out,
        );
        self.close(closed);
        if taker.filled == 0 {
            out.push(Ev::Expired {
                order_id: id,
                expired_qty: 0,
                filled_qty: 0,
            });
        } else {
            // Funds that buy nothing end the order before it pairs.
            self.pair(id, partner);
        }
        self.note_fills(from, out);
        self.close([taker]);
    }

    fn hold_stop(&mut self, index: usize, taker: Order, stop: StopPlan, tif: TimeInForce) {
        self.markets[index].stops.push(stops::Stop {
            order: Order {
                // A stop market sell is held at the lowest price, which
                // is what the engine shows for it until it triggers.
                price: if stop.market { Some(1) } else { taker.price },
                ..taker
            },
            stop: stop.stop,
            market: stop.market,
            touched: stop.touched,
            tif,
        });
    }

    /// Whether `taker` would fill entirely by trades now: the match is
    /// tried on a copy of the book. Quantity that self-trade prevention
    /// removes is not filled, so any self-trade prevention but canceling
    /// the resting orders makes a fill-or-kill fail.
    fn fills_completely(&self, index: usize, taker: &Order) -> bool {
        self.fillable(index, taker) == taker.qty
    }

    /// The lots `taker` would fill by trades now.
    fn fillable(&self, index: usize, taker: &Order) -> u64 {
        let mut scratch = self.markets[index].clone();
        let mut trial = taker.clone();
        let (mut closed, mut out) = (Vec::new(), Vec::new());
        let mut arrival = self.next_arrival;
        scratch.match_taker(&mut trial, None, &mut arrival, &mut closed, &mut out);
        trial.filled
    }

    /// Matches a taker and then rests, expires or closes it.
    fn execute(&mut self, index: usize, mut taker: Order, tif: TimeInForce, out: &mut Vec<Ev>) {
        let mut closed = Vec::new();
        let canceled = self.markets[index].match_taker(
            &mut taker,
            None,
            &mut self.next_arrival,
            &mut closed,
            out,
        );
        self.close(closed);
        if canceled || taker.leaves() == 0 {
            self.close([taker]);
        } else if tif == TimeInForce::Gtc {
            taker.arrival = self.next_arrival;
            self.next_arrival += 1;
            self.markets[index].rest(taker);
        } else {
            let lot = self.markets[index].lot_units;
            out.push(Ev::Expired {
                order_id: taker.id,
                expired_qty: taker.leaves() * lot,
                filled_qty: taker.filled * lot,
            });
            self.close([taker]);
        }
    }

    fn cancel(&mut self, c: &Cancel, out: &mut Vec<Ev>) -> Result<(), RejectReason> {
        let at = self.resolve(c.account, &c.order)?;
        // Canceling one of a pair by request cancels the other.
        let partner = self.unpair(self.order(at).id);
        let mut order = self.take(at);
        self.markets[at.market()].cancel_all(&mut order, CancelReason::Requested, out);
        self.close([order]);
        if let Some(partner) = partner {
            self.cancel_open(partner, CancelReason::OneCancelsOther, out);
        }
        Ok(())
    }

    fn mass_cancel(&mut self, mc: &MassCancel, out: &mut Vec<Ev>) -> Result<(), RejectReason> {
        let only = mc
            .symbol
            .as_ref()
            .map(|s| self.market_index(s))
            .transpose()?;
        if !self.accounts.contains(&mc.account) {
            return Err(RejectReason::UnknownAccount);
        }
        let mut victims: Vec<OrderId> = (self.markets.iter().enumerate())
            .filter(|(index, _)| only.is_none_or(|only| only == *index))
            .flat_map(|(_, m)| {
                m.bids
                    .iter()
                    .chain(&m.asks)
                    .chain(m.stops.iter().map(|s| &s.order))
            })
            .chain(self.mids.iter().filter_map(|mid| {
                only.is_none_or(|only| only == mid.index)
                    .then_some(&mid.order)
            }))
            .filter(|o| o.account == mc.account)
            .map(|o| o.id)
            .collect();
        victims.sort();
        for id in victims {
            self.cancel_open(id, CancelReason::MassCancel, out);
        }
        Ok(())
    }

    fn replace(
        &mut self,
        r: &Replace,
        stop_price: Option<Dec>,
        out: &mut Vec<Ev>,
    ) -> Result<(), RejectReason> {
        let amend = self.check_replace(r, stop_price)?;
        let m = &self.markets[amend.at.market()];
        out.push(Ev::Replaced {
            order_id: amend.old.id,
            client_order_id: amend.coid,
            price: amend.price * m.tick_units,
            qty: amend.qty * m.lot_units,
            leaves_qty: amend.leaves() * m.lot_units,
            stop_price: (amend.stop.as_ref())
                .map(|s| amend.new_stop.unwrap_or(s.stop) * m.tick_units),
        });
        match amend.at {
            At::Stop(index, pos) => {
                // A stop has no place on a book to keep or lose.
                let s = &mut self.markets[index].stops[pos];
                s.order.client_order_id = amend.coid;
                s.order.price = Some(amend.price);
                s.order.qty = amend.qty;
                s.stop = amend.new_stop.unwrap_or(s.stop);
            }
            At::Book(..) => self.amend_resting(&amend, out),
            At::Mid(..) => self.amend_mid(&amend, out),
        }
        Ok(())
    }

    /// Every check of a replace, in the order the refusals are documented.
    fn check_replace(&self, r: &Replace, stop_price: Option<Dec>) -> Result<Amend, RejectReason> {
        let at = self.resolve(r.account, &r.order)?;
        let m = &self.markets[at.market()];
        if m.halted {
            return Err(RejectReason::InstrumentHalted);
        }
        let old = self.order(at).clone();
        let old_price = old.price.unwrap_or(0);
        let stop = match at {
            At::Stop(_, pos) => Some(m.stops[pos].clone()),
            At::Book(..) | At::Mid(..) => None,
        };
        if r.price.is_some() && stop.as_ref().is_some_and(|s| s.market) {
            return Err(RejectReason::PriceNotAllowed);
        }
        let price = r
            .price
            .map(|p| m.price_ticks(p))
            .transpose()?
            .unwrap_or(old_price);
        let new_stop = match (stop_price, &stop) {
            (None, _) => None,
            (Some(_), None) => return Err(RejectReason::StopPriceNotAllowed),
            (Some(to), Some(s)) => m.check_new_stop(to, s)?,
        };
        let qty = r.qty.map(|q| m.qty_lots(q)).transpose()?.unwrap_or(old.qty);
        let coid = r.new_client_order_id.unwrap_or(old.client_order_id);
        let renamed = coid != old.client_order_id;
        if price == old_price && qty == old.qty && !renamed && new_stop.is_none() {
            return Err(RejectReason::NothingToReplace);
        }
        if qty < old.filled {
            return Err(RejectReason::ReplaceBelowFilled);
        }
        if old.dark && qty > old.filled && m.below_hidden_minimum(price, qty) {
            return Err(RejectReason::HiddenBelowMinimum);
        }
        if renamed && self.is_open(old.account, &coid) {
            return Err(RejectReason::DuplicateClientOrderId);
        }
        let leaves = qty - old.filled;
        if leaves > 0
            && price != old_price
            && old.post_only
            && stop.is_none()
            && m.would_cross(old.side, price)
        {
            return Err(RejectReason::PostOnlyWouldTake);
        }
        Ok(Amend {
            at,
            old,
            price,
            qty,
            coid,
            stop,
            new_stop,
        })
    }

    /// Applies a checked replace to an order on a book.
    fn amend_resting(&mut self, amend: &Amend, out: &mut Vec<Ev>) {
        let index = amend.at.market();
        let (price, qty) = (amend.price, amend.qty);
        let old_price = amend.old.price.unwrap_or(0);
        let keeps_priority = price == old_price && qty <= amend.old.qty;
        let mut order = self.take(amend.at);
        order.client_order_id = amend.coid;
        order.price = Some(price);
        // An iceberg that keeps its place loses hidden lots first; one that
        // moves takes whole and rests a new slice.
        let shrink = order.qty - qty.min(order.qty);
        order.hidden = if keeps_priority {
            order.hidden - shrink.min(order.hidden)
        } else {
            0
        };
        order.qty = qty;
        if amend.leaves() == 0 {
            self.close([order]);
        } else if keeps_priority {
            self.markets[index].put_back(order);
        } else {
            // A replace that loses priority is a new arrival, and trades
            // like a new order if it now crosses.
            let from = out.len();
            self.execute(index, order, TimeInForce::Gtc, out);
            self.note_fills(from, out);
        }
    }

    /// An operator's reference price is the last price until a trade
    /// moves it: what stops wait for (the streams list no band or collar).
    fn set_reference(&mut self, symbol: &Symbol, price: Dec) -> Result<(), RejectReason> {
        let index = self.market_index(symbol)?;
        let ticks = self.markets[index].price_ticks(price)?;
        self.markets[index].last = Some(ticks);
        Ok(())
    }

    fn set_halted(
        &mut self,
        symbol: &Symbol,
        halt: bool,
        out: &mut Vec<Ev>,
    ) -> Result<(), RejectReason> {
        let index = self.market_index(symbol)?;
        if self.markets[index].halted == halt {
            return Err(RejectReason::AlreadyInStatus);
        }
        self.markets[index].halted = halt;
        let status = if halt {
            TradingStatus::Halted
        } else {
            TradingStatus::Trading
        };
        out.push(Ev::Status(*symbol, status));
        Ok(())
    }
}

/// The quote a market buy by funds spends, in units.
fn funds_units(p: &Place, market_order: bool) -> Result<Option<u64>, RejectReason> {
    let Some(funds) = p.ext().funds else {
        return Ok(None);
    };
    if !market_order || p.side != Side::Buy {
        return Err(RejectReason::FundsNotAllowed);
    }
    if p.qty.to_units_allow_zero() != Ok(0) {
        return Err(RejectReason::FundsWithQty);
    }
    Some(funds.to_units().map_err(|e| match e {
        UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
        UnitsError::Overflow => RejectReason::AmountOverflow,
        _ => RejectReason::InvalidFunds,
    }))
    .transpose()
}

impl Market {
    /// The best price on the other side of `side`'s book.
    /// The best price shown on the other side: a hidden order's is no
    /// price a market-to-limit order can see.
    fn best_opposite(&self, side: Side) -> Option<u64> {
        let shown = |o: &Order| if o.dark { None } else { o.price };
        match side {
            Side::Buy => self.asks.iter().filter_map(shown).min(),
            Side::Sell => self.bids.iter().filter_map(shown).max(),
        }
    }

    /// A minimum acceptable quantity in lots: on an order that may trade
    /// on entry, positive, on the lot and at most the quantity.
    fn min_qty_lots(&self, p: &Place, stop: bool) -> Result<Option<u64>, RejectReason> {
        let Some(min_qty) = p.ext().min_qty else {
            return Ok(None);
        };
        let typed = matches!(
            p.order_type,
            OrderType::Limit | OrderType::Market | OrderType::MarketToLimit | OrderType::Midpoint
        );
        if !typed || stop || p.post_only || p.ext().funds.is_some() {
            return Err(RejectReason::MinQtyNotAllowed);
        }
        let units = min_qty.to_units().map_err(|e| match e {
            UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
            UnitsError::Overflow => RejectReason::AmountOverflow,
            _ => RejectReason::InvalidMinQty,
        })?;
        if p.qty.to_units().is_ok_and(|qty| units > qty) || units % self.lot_units != 0 {
            return Err(RejectReason::InvalidMinQty);
        }
        Ok(Some(units / self.lot_units))
    }

    /// Whether the order is hidden, and if so that it may be: a limit
    /// order that may rest, no iceberg, worth the instrument's minimum.
    fn check_dark(
        &self,
        p: &Place,
        price: Option<u64>,
        qty: u64,
        tif: TimeInForce,
    ) -> Result<bool, RejectReason> {
        if !p.ext().hidden {
            return Ok(false);
        }
        let immediate = matches!(tif, TimeInForce::Ioc | TimeInForce::Fok);
        if p.order_type != OrderType::Limit || immediate || p.ext().display_qty.is_some() {
            return Err(RejectReason::HiddenNotAllowed);
        }
        if self.hidden_min.is_none() {
            return Err(RejectReason::HiddenNotOffered);
        }
        if self.below_hidden_minimum(price.unwrap_or(0), qty) {
            return Err(RejectReason::HiddenBelowMinimum);
        }
        Ok(true)
    }

    /// Whether `qty` lots at `price` ticks are worth less than a hidden
    /// order must be (any value, without a minimum).
    fn below_hidden_minimum(&self, price: u64, qty: u64) -> bool {
        let value =
            u128::from(price * self.tick_units) * u128::from(qty) * u128::from(self.lot_units)
                / 100_000_000;
        value < u128::from(self.hidden_min.unwrap_or(u64::MAX))
    }

    /// The lots an iceberg shows at a time, of the `qty` lots it holds.
    fn display_lots(
        &self,
        p: &Place,
        market_order: bool,
        tif: TimeInForce,
        qty: u64,
    ) -> Result<Option<u64>, RejectReason> {
        let lot_units = self.lot_units;
        match p.ext().display_qty {
            None => Ok(None),
            Some(_) if market_order || tif != TimeInForce::Gtc => {
                Err(RejectReason::DisplayQtyNotAllowed)
            }
            Some(display) => {
                let lots = display.to_units().map_err(|e| match e {
                    UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
                    UnitsError::Overflow => RejectReason::AmountOverflow,
                    _ => RejectReason::InvalidDisplayQty,
                })?;
                if lots % lot_units != 0
                    || lots / lot_units < self.min_lots
                    || lots / lot_units >= qty
                {
                    return Err(RejectReason::InvalidDisplayQty);
                }
                Ok(Some(lots / lot_units))
            }
        }
    }
}
