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

use exchange_node::history::OrderRecord;
use exchange_node::limits::FIX_CLOSED_REMEMBERED;
use exchange_types::{
    order_updates, AccountId, CancelReason, Change, ClientOrderId, Event, Liquidity, OrderId,
    OrderRef, StopState, TradeId,
};

pub use exchange_types::{OrderState, OrderStatus};

/// OrdStatus (39) of an order.
pub fn ord_status(status: OrderStatus) -> char {
    match status {
        OrderStatus::New => '0',
        OrderStatus::PartiallyFilled => '1',
        OrderStatus::Filled => '2',
        OrderStatus::Canceled => '4',
        OrderStatus::Expired => 'C',
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
    /// Accepted; a stop's trigger price (units) is echoed as StopPx (99),
    /// an iceberg's display quantity as MaxFloor (111) and a funds-sized
    /// market buy's quote amount as CashOrderQty (152): the client sees the
    /// order was taken as it asked, not as a plain limit or a zero-qty market.
    New {
        stop_price: Option<u64>,
        display_qty: Option<u64>,
        funds: Option<u64>,
        /// A hidden order, echoed as DisplayQty (1138) 0.
        hidden: bool,
        /// The minimum acceptable quantity, echoed as MinQty (110).
        min_qty: Option<u64>,
    },
    /// A stop's trigger was reached (ExecType L): it enters the book now.
    Triggered {
        stop_price: u64,
    },
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
    /// Replaced; an untriggered stop's trigger price (units, new or kept)
    /// is echoed as StopPx (99).
    Replaced {
        old_cl_ord_id: ClientOrderId,
        stop_price: Option<u64>,
    },
    Expired,
    /// No change: the order as it stands, answering an OrderStatusRequest
    /// (or a resent order already taken).
    Status,
}

impl ReportKind {
    /// The report of one change of the order fold.
    pub fn of(change: &Change<'_>) -> ReportKind {
        match change {
            Change::New(accepted) => ReportKind::New {
                stop_price: accepted.ext.as_ref().and_then(|e| e.stop_price),
                display_qty: accepted.ext.as_ref().and_then(|e| e.display_qty),
                funds: accepted.ext.as_ref().and_then(|e| e.funds),
                hidden: accepted.ext.as_ref().is_some_and(|e| e.hidden),
                min_qty: accepted.ext.as_ref().and_then(|e| e.min_qty),
            },
            Change::Triggered(triggered) => ReportKind::Triggered {
                stop_price: triggered.stop_price,
            },
            Change::Fill(fill) => ReportKind::Fill {
                trade_id: fill.trade.trade_id,
                price: fill.trade.price,
                qty: fill.trade.qty,
                fee: fill.fee,
                maker: fill.liquidity == Liquidity::Maker,
            },
            Change::Canceled(canceled) => ReportKind::Canceled {
                reason: canceled.reason,
                canceled_qty: canceled.canceled_qty,
                leaves_qty: canceled.leaves_qty,
            },
            Change::Replaced(replaced) => ReportKind::Replaced {
                old_cl_ord_id: replaced.old_client_order_id,
                stop_price: replaced.stop_price.map(std::num::NonZeroU64::get),
            },
            Change::Expired(_) => ReportKind::Expired,
        }
    }
}

/// The order a history record holds.
fn state_from(record: &OrderRecord) -> OrderState {
    OrderState {
        order_id: record.order_id,
        account: record.account,
        client_order_id: record.client_order_id,
        symbol: record.symbol,
        side: record.side,
        order_type: record.order_type,
        tif: record.tif,
        stop: StopState::of(record.order_type),
        progress: record.progress(),
    }
}

#[derive(Debug, Default)]
pub struct OrderCache {
    open: HashMap<OrderId, OrderState>,
    by_cl_ord_id: HashMap<(AccountId, ClientOrderId), OrderId>,
    closed: VecDeque<OrderState>,
}

impl OrderCache {
    /// Seeds the cache from the server's live state: its open `orders`,
    /// each with the notional of its fills (for the average price). Orders
    /// closed before the seed are not in it (the reporting store has them).
    pub fn seed<'a>(&mut self, orders: impl IntoIterator<Item = &'a OrderRecord>) {
        let mut sorted: Vec<&OrderRecord> = orders.into_iter().collect();
        sorted.sort_by_key(|o| o.order_id);
        for state in sorted.into_iter().map(state_from) {
            if state.is_open() {
                self.insert_open(state);
            } else {
                self.remember_closed(state);
            }
        }
    }

    fn insert_open(&mut self, state: OrderState) {
        self.by_cl_ord_id
            .insert((state.account, state.client_order_id), state.order_id);
        self.open.insert(state.order_id, state);
    }

    fn remember_closed(&mut self, state: OrderState) {
        self.closed.push_back(state);
        if self.closed.len() > FIX_CLOSED_REMEMBERED {
            self.closed.pop_front();
        }
    }

    fn close(&mut self, order_id: OrderId) {
        if let Some(state) = self.open.remove(&order_id) {
            let key = (state.account, state.client_order_id);
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
                .get(&(account, *cl))
                .and_then(|id| self.open.get(id)),
        };
        open.or_else(|| {
            self.closed.iter().rev().find(|o| {
                o.account == account
                    && match order {
                        OrderRef::Id(id) => o.order_id == *id,
                        OrderRef::Client(cl) => o.client_order_id == *cl,
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
                order: *order,
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
        for update in order_updates(&event.kind) {
            if !in_scope(update.account) {
                continue;
            }
            if let Change::New(accepted) = update.change {
                self.insert_open(OrderState::new(accepted));
            } else {
                // Only orders seen open are followed (and reported).
                let Some(order) = self.open.get_mut(&update.order_id) else {
                    continue;
                };
                let old_key = (order.account, order.client_order_id);
                order.apply(&update.change);
                let (new_key, open) = ((order.account, order.client_order_id), order.is_open());
                if new_key != old_key {
                    self.by_cl_ord_id.remove(&old_key);
                    self.by_cl_ord_id.insert(new_key, update.order_id);
                }
                if !open {
                    self.close(update.order_id);
                }
            }
            let kind = ReportKind::of(&update.change);
            self.report(event, update.order_id, kind, reports);
        }
    }
}

#[cfg(test)]
#[path = "orders_tests.rs"]
mod tests;
