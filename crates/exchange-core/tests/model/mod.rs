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
use exchange_types::*;

mod admission;
mod book;
mod midpoint;
pub mod published;
mod requests;
mod stops;
use admission::funds_units;
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
