//! What clients ask about after the fact: their orders (open and recently
//! closed), their fills, and each market's recent trades.
//!
//! A projection of the core's events, maintained on the core thread beside
//! the engine and saved in the server snapshot. It is bounded: closed
//! orders, fills and trades are kept up to fixed counts per account or
//! symbol (the reporting service keeps the full record).

use std::collections::{BTreeMap, VecDeque};

use exchange_types::{AccountId, Event, EventKind, OrderId, Side};
use serde::{Deserialize, Serialize};

/// Closed orders remembered per account.
pub const CLOSED_ORDERS_PER_ACCOUNT: usize = 1_000;
/// Fills remembered per account.
pub const FILLS_PER_ACCOUNT: usize = 1_000;
/// Trades remembered per symbol.
pub const TRADES_PER_SYMBOL: usize = 1_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    New,
    PartiallyFilled,
    Filled,
    Canceled,
    Expired,
}

impl OrderStatus {
    pub fn is_open(self) -> bool {
        matches!(self, OrderStatus::New | OrderStatus::PartiallyFilled)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub order_id: OrderId,
    pub account: AccountId,
    pub client_order_id: String,
    pub symbol: String,
    pub side: String,
    #[serde(rename = "type")]
    pub order_type: String,
    /// Units; `None` for market orders.
    pub price: Option<u64>,
    pub qty: u64,
    pub filled_qty: u64,
    pub status: OrderStatus,
    pub tif: String,
    pub created_ts: u64,
    pub updated_ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fill {
    pub trade_id: u64,
    pub order_id: OrderId,
    pub symbol: String,
    pub side: String,
    pub price: u64,
    pub qty: u64,
    /// Quote units; negative is a rebate.
    pub fee: i64,
    pub liquidity: String,
    pub ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicTrade {
    pub trade_id: u64,
    pub price: u64,
    pub qty: u64,
    pub side: String,
    pub ts: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    orders: BTreeMap<OrderId, OrderRecord>,
    closed: BTreeMap<AccountId, VecDeque<OrderId>>,
    fills: BTreeMap<AccountId, VecDeque<Fill>>,
    trades: BTreeMap<String, VecDeque<PublicTrade>>,
}

fn push_bounded<T>(queue: &mut VecDeque<T>, item: T, limit: usize) -> Option<T> {
    queue.push_back(item);
    if queue.len() > limit {
        queue.pop_front()
    } else {
        None
    }
}

impl History {
    pub fn order(&self, id: OrderId) -> Option<&OrderRecord> {
        self.orders.get(&id)
    }

    /// The account's orders, newest first.
    pub fn orders_of(&self, account: AccountId, open_only: bool, symbol: Option<&str>) -> Vec<&OrderRecord> {
        self.orders
            .values()
            .rev()
            .filter(|o| o.account == account)
            .filter(|o| !open_only || o.status.is_open())
            .filter(|o| symbol.is_none_or(|s| o.symbol == s))
            .collect()
    }

    /// The account's fills, newest first.
    pub fn fills_of(&self, account: AccountId, symbol: Option<&str>, limit: usize) -> Vec<&Fill> {
        self.fills
            .get(&account)
            .map(|f| f.iter().rev().filter(|f| symbol.is_none_or(|s| f.symbol == s)).take(limit).collect())
            .unwrap_or_default()
    }

    /// A market's trades, newest first.
    pub fn trades_of(&self, symbol: &str, limit: usize) -> Vec<&PublicTrade> {
        self.trades.get(symbol).map(|t| t.iter().rev().take(limit).collect()).unwrap_or_default()
    }

    pub fn record(&mut self, events: &[Event]) {
        for event in events {
            self.record_one(event);
        }
    }

    fn close(&mut self, id: OrderId, status: OrderStatus, ts: u64) {
        let Some(order) = self.orders.get_mut(&id) else { return };
        order.status = status;
        order.updated_ts = ts;
        let account = order.account;
        let closed = self.closed.entry(account).or_default();
        if let Some(evicted) = push_bounded(closed, id, CLOSED_ORDERS_PER_ACCOUNT) {
            self.orders.remove(&evicted);
        }
    }

    fn record_one(&mut self, event: &Event) {
        let ts = event.ts;
        match &event.kind {
            EventKind::Accepted {
                account, client_order_id, order_id, symbol, side, order_type, price, qty, tif, ..
            } => {
                self.orders.insert(
                    *order_id,
                    OrderRecord {
                        order_id: *order_id,
                        account: *account,
                        client_order_id: client_order_id.to_string(),
                        symbol: symbol.to_string(),
                        side: side.as_str().into(),
                        order_type: order_type.as_str().into(),
                        price: *price,
                        qty: *qty,
                        filled_qty: 0,
                        status: OrderStatus::New,
                        tif: tif.as_str().into(),
                        created_ts: ts,
                        updated_ts: ts,
                    },
                );
            }
            EventKind::Trade { trade_id, symbol, price, qty, aggressor_side, .. } => {
                for side in trade_sides(&event.kind).into_iter().flatten() {
                    let fill = Fill {
                        trade_id: *trade_id,
                        order_id: side.order_id,
                        symbol: symbol.to_string(),
                        side: side_str(side.side).into(),
                        price: *price,
                        qty: *qty,
                        fee: side.fee,
                        liquidity: side.liquidity.into(),
                        ts,
                    };
                    push_bounded(self.fills.entry(side.account).or_default(), fill, FILLS_PER_ACCOUNT);
                    if let Some(order) = self.orders.get_mut(&side.order_id) {
                        order.filled_qty += qty;
                        order.updated_ts = ts;
                        order.status = OrderStatus::PartiallyFilled;
                    }
                    if side.leaves == 0 {
                        self.close(side.order_id, OrderStatus::Filled, ts);
                    }
                }
                let public = PublicTrade {
                    trade_id: *trade_id,
                    price: *price,
                    qty: *qty,
                    side: aggressor_side.as_str().into(),
                    ts,
                };
                push_bounded(self.trades.entry(symbol.to_string()).or_default(), public, TRADES_PER_SYMBOL);
            }
            EventKind::Canceled { order_id, leaves_qty, canceled_qty, .. } => {
                if let Some(order) = self.orders.get_mut(order_id) {
                    // Only a self-trade decrement shrinks a live order; a
                    // full cancel keeps the quantity the client asked for.
                    if *leaves_qty > 0 {
                        order.qty -= (*canceled_qty).min(order.qty);
                    }
                    order.updated_ts = ts;
                }
                if *leaves_qty == 0 {
                    self.close(*order_id, OrderStatus::Canceled, ts);
                }
            }
            EventKind::Expired { order_id, .. } => self.close(*order_id, OrderStatus::Expired, ts),
            EventKind::Replaced { order_id, client_order_id, price, qty, leaves_qty, .. } => {
                if let Some(order) = self.orders.get_mut(order_id) {
                    order.client_order_id = client_order_id.to_string();
                    order.price = Some(*price);
                    order.qty = *qty;
                    order.updated_ts = ts;
                }
                if *leaves_qty == 0 {
                    self.close(*order_id, OrderStatus::Filled, ts);
                }
            }
            _ => {}
        }
    }
}

/// One order's part in a trade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeSide {
    pub order_id: OrderId,
    pub account: AccountId,
    /// Quote units; negative is a rebate.
    pub fee: i64,
    /// What the order still has open after the trade.
    pub leaves: u64,
    pub liquidity: &'static str,
    pub side: Side,
}

/// The maker's and the taker's part in a trade event: the one reading of
/// a trade that fills come from, live (the private stream, answers) and
/// after the fact (this history).
pub fn trade_sides(kind: &EventKind) -> Option<[TradeSide; 2]> {
    let EventKind::Trade {
        maker_order_id,
        taker_order_id,
        maker_account,
        taker_account,
        aggressor_side,
        maker_fee,
        taker_fee,
        maker_leaves_qty,
        taker_leaves_qty,
        ..
    } = kind
    else {
        return None;
    };
    Some([
        TradeSide {
            order_id: *maker_order_id,
            account: *maker_account,
            fee: *maker_fee,
            leaves: *maker_leaves_qty,
            liquidity: "maker",
            side: aggressor_side.opposite(),
        },
        TradeSide {
            order_id: *taker_order_id,
            account: *taker_account,
            fee: *taker_fee,
            leaves: *taker_leaves_qty,
            liquidity: "taker",
            side: *aggressor_side,
        },
    ])
}

fn side_str(side: Side) -> &'static str {
    side.as_str()
}
