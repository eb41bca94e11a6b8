//! What a session knows about its accounts' orders, and the order-level
//! reports the core's events become.
//!
//! An ExecutionReport carries more than an event does (side, cumulative
//! quantity, average price, the client's id of the order), so each session
//! keeps the state of its accounts' orders, advanced by the same events in
//! the same order as the core. It is seeded from the server's history when
//! the gateway starts, so orders placed before a restart are reported
//! correctly too.

use std::collections::{HashMap, VecDeque};

use exchange_node::history::{OrderRecord, OrderStatus};
use exchange_types::{
    AccountId, CancelReason, Event, EventKind, OrderId, OrderRef, OrderType, Side, TimeInForce,
    TradeId,
};

/// Closed orders remembered for answering a late cancel with their status.
pub const CLOSED_REMEMBERED: usize = 4_096;

/// OrdStatus (39).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    New,
    PartiallyFilled,
    Filled,
    Canceled,
    Expired,
}

impl Status {
    pub fn fix(self) -> char {
        match self {
            Status::New => '0',
            Status::PartiallyFilled => '1',
            Status::Filled => '2',
            Status::Canceled => '4',
            Status::Expired => 'C',
        }
    }

    pub fn is_open(self) -> bool {
        matches!(self, Status::New | Status::PartiallyFilled)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderState {
    pub order_id: OrderId,
    pub account: AccountId,
    pub cl_ord_id: String,
    pub symbol: String,
    pub side: Side,
    pub ord_type: OrderType,
    /// Units; `None` for market orders.
    pub price: Option<u64>,
    /// Total quantity, filled included (units).
    pub qty: u64,
    pub cum_qty: u64,
    /// Sum of price × quantity over the fills, for AvgPx.
    pub notional: u128,
    pub tif: TimeInForce,
    pub status: Status,
}

impl OrderState {
    pub fn leaves_qty(&self) -> u64 {
        if self.status.is_open() {
            self.qty.saturating_sub(self.cum_qty)
        } else {
            0
        }
    }

    /// Average fill price in units (rounded down); 0 before any fill.
    pub fn avg_px(&self) -> u64 {
        match u128::from(self.cum_qty) {
            0 => 0,
            cum => u64::try_from(self.notional / cum).unwrap_or(u64::MAX),
        }
    }

    fn after_fill(&mut self) {
        self.status = if self.cum_qty >= self.qty {
            Status::Filled
        } else {
            Status::PartiallyFilled
        };
    }
}

/// One change to one order, with the order as it stands afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Sequence number of the event, unique across the exchange.
    pub seq: u64,
    pub ts: u64,
    pub order: OrderState,
    pub kind: ReportKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportKind {
    New,
    Fill {
        trade_id: TradeId,
        price: u64,
        qty: u64,
        fee: i64,
        maker: bool,
    },
    /// The order left the book (or, for a self-trade decrement with
    /// quantity left, only shrank).
    Canceled {
        reason: CancelReason,
        canceled_qty: u64,
        leaves_qty: u64,
    },
    Replaced {
        old_cl_ord_id: String,
    },
    Expired,
}

fn side_from(text: &str) -> Side {
    if text == "sell" {
        Side::Sell
    } else {
        Side::Buy
    }
}

fn status_from(status: OrderStatus) -> Status {
    match status {
        OrderStatus::New => Status::New,
        OrderStatus::PartiallyFilled => Status::PartiallyFilled,
        OrderStatus::Filled => Status::Filled,
        OrderStatus::Canceled => Status::Canceled,
        OrderStatus::Expired => Status::Expired,
    }
}

#[derive(Debug, Default)]
pub struct OrderCache {
    open: HashMap<OrderId, OrderState>,
    by_cl_ord_id: HashMap<(AccountId, String), OrderId>,
    closed: VecDeque<OrderState>,
}

impl OrderCache {
    /// Seeds the cache from the server's live state: its open `orders`,
    /// each with the notional of its fills (for the average price). Orders
    /// closed before the seed are not in it (the reporting store has them).
    pub fn seed<'a>(&mut self, orders: impl IntoIterator<Item = &'a OrderRecord>) {
        let mut sorted: Vec<&OrderRecord> = orders.into_iter().collect();
        sorted.sort_by_key(|o| o.order_id);
        for record in sorted {
            let state = OrderState {
                order_id: record.order_id,
                account: record.account,
                cl_ord_id: record.client_order_id.clone(),
                symbol: record.symbol.clone(),
                side: side_from(&record.side),
                ord_type: if record.order_type == "market" {
                    OrderType::Market
                } else {
                    OrderType::Limit
                },
                price: record.price,
                qty: record.qty,
                cum_qty: record.filled_qty,
                notional: record.fill_notional,
                tif: match record.tif.as_str() {
                    "ioc" => TimeInForce::Ioc,
                    "fok" => TimeInForce::Fok,
                    _ => TimeInForce::Gtc,
                },
                status: status_from(record.status),
            };
            if state.status.is_open() {
                self.insert_open(state);
            } else {
                self.remember_closed(state);
            }
        }
    }

    fn insert_open(&mut self, state: OrderState) {
        self.by_cl_ord_id
            .insert((state.account, state.cl_ord_id.clone()), state.order_id);
        self.open.insert(state.order_id, state);
    }

    fn remember_closed(&mut self, state: OrderState) {
        self.closed.push_back(state);
        if self.closed.len() > CLOSED_REMEMBERED {
            self.closed.pop_front();
        }
    }

    fn close(&mut self, order_id: OrderId) {
        if let Some(state) = self.open.remove(&order_id) {
            let key = (state.account, state.cl_ord_id.clone());
            if self.by_cl_ord_id.get(&key) == Some(&order_id) {
                self.by_cl_ord_id.remove(&key);
            }
            self.remember_closed(state);
        }
    }

    pub fn open_orders(&self) -> usize {
        self.open.len()
    }

    /// An order of `account` by the exchange's id or the client's, open or
    /// recently closed (the newest closed one for a reused client id).
    pub fn find(&self, account: AccountId, order: &OrderRef) -> Option<&OrderState> {
        let open = match order {
            OrderRef::Id(id) => self.open.get(id).filter(|o| o.account == account),
            OrderRef::Client(cl) => self
                .by_cl_ord_id
                .get(&(account, cl.as_str().to_string()))
                .and_then(|id| self.open.get(id)),
        };
        open.or_else(|| {
            self.closed.iter().rev().find(|o| {
                o.account == account
                    && match order {
                        OrderRef::Id(id) => o.order_id == *id,
                        OrderRef::Client(cl) => o.cl_ord_id == cl.as_str(),
                    }
            })
        })
    }

    /// Advances the cache by one entry's events and appends a report for
    /// every change to an order of an account `in_scope`.
    pub fn apply(
        &mut self,
        events: &[Event],
        in_scope: impl Fn(AccountId) -> bool,
        reports: &mut Vec<Report>,
    ) {
        for event in events {
            self.apply_one(event, &in_scope, reports);
        }
    }

    fn report(
        &self,
        event: &Event,
        order_id: OrderId,
        kind: ReportKind,
        reports: &mut Vec<Report>,
    ) {
        let order = self
            .open
            .get(&order_id)
            .or_else(|| self.closed.iter().rev().find(|o| o.order_id == order_id));
        if let Some(order) = order {
            reports.push(Report {
                seq: event.seq,
                ts: event.ts,
                order: order.clone(),
                kind,
            });
        }
    }

    fn apply_one(
        &mut self,
        event: &Event,
        in_scope: &impl Fn(AccountId) -> bool,
        reports: &mut Vec<Report>,
    ) {
        match &event.kind {
            EventKind::Accepted {
                account,
                client_order_id,
                order_id,
                symbol,
                side,
                order_type,
                price,
                qty,
                tif,
                ..
            } if in_scope(*account) => {
                self.insert_open(OrderState {
                    order_id: *order_id,
                    account: *account,
                    cl_ord_id: client_order_id.to_string(),
                    symbol: symbol.to_string(),
                    side: *side,
                    ord_type: *order_type,
                    price: *price,
                    qty: *qty,
                    cum_qty: 0,
                    notional: 0,
                    tif: *tif,
                    status: Status::New,
                });
                self.report(event, *order_id, ReportKind::New, reports);
            }
            EventKind::Trade {
                trade_id,
                price,
                qty,
                maker_order_id,
                taker_order_id,
                maker_account,
                taker_account,
                maker_fee,
                taker_fee,
                ..
            } => {
                let sides = [
                    (*maker_order_id, *maker_account, *maker_fee, true),
                    (*taker_order_id, *taker_account, *taker_fee, false),
                ];
                for (order_id, account, fee, maker) in sides {
                    if !in_scope(account) {
                        continue;
                    }
                    let filled = match self.open.get_mut(&order_id) {
                        Some(order) => {
                            order.cum_qty += qty;
                            order.notional += u128::from(*price) * u128::from(*qty);
                            order.after_fill();
                            order.status == Status::Filled
                        }
                        None => continue,
                    };
                    if filled {
                        self.close(order_id);
                    }
                    let kind = ReportKind::Fill {
                        trade_id: *trade_id,
                        price: *price,
                        qty: *qty,
                        fee,
                        maker,
                    };
                    self.report(event, order_id, kind, reports);
                }
            }
            EventKind::Canceled {
                account,
                order_id,
                reason,
                canceled_qty,
                leaves_qty,
                ..
            } if in_scope(*account) => {
                let Some(order) = self.open.get_mut(order_id) else {
                    return;
                };
                if *leaves_qty > 0 {
                    // A self-trade decrement: the order stays, smaller.
                    order.qty = order.qty.saturating_sub(*canceled_qty);
                } else {
                    order.status = Status::Canceled;
                    self.close(*order_id);
                }
                let kind = ReportKind::Canceled {
                    reason: *reason,
                    canceled_qty: *canceled_qty,
                    leaves_qty: *leaves_qty,
                };
                self.report(event, *order_id, kind, reports);
            }
            EventKind::Replaced {
                account,
                order_id,
                old_client_order_id,
                client_order_id,
                price,
                qty,
                leaves_qty,
                ..
            } if in_scope(*account) => {
                let Some(order) = self.open.get_mut(order_id) else {
                    return;
                };
                let old_key = (order.account, order.cl_ord_id.clone());
                order.cl_ord_id = client_order_id.to_string();
                order.price = Some(*price);
                order.qty = *qty;
                let new_key = (order.account, order.cl_ord_id.clone());
                let done = *leaves_qty == 0;
                if done {
                    order.status = Status::Filled;
                }
                self.by_cl_ord_id.remove(&old_key);
                self.by_cl_ord_id.insert(new_key, *order_id);
                if done {
                    self.close(*order_id);
                }
                let kind = ReportKind::Replaced {
                    old_cl_ord_id: old_client_order_id.to_string(),
                };
                self.report(event, *order_id, kind, reports);
            }
            EventKind::Expired {
                account, order_id, ..
            } if in_scope(*account) => {
                let Some(order) = self.open.get_mut(order_id) else {
                    return;
                };
                order.status = Status::Expired;
                self.close(*order_id);
                self.report(event, *order_id, ReportKind::Expired, reports);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "orders_tests.rs"]
mod tests;
