//! An order's row: kept by the writer while its order lives, read back
//! from the store when a later entry touches it again.

use exchange_types::event::{AcceptedExt, TrailingUnits};
use exchange_types::{
    ClientOrderId, OrderState, OrderStatus, OrderType, Progress, Side, StopState, Symbol,
    TimeInForce,
};

use crate::batch::{Kept, Row, Table};
use crate::db::Param;
use crate::writer::int;
use crate::StoreError;

fn bad(column: &str, value: &str) -> StoreError {
    StoreError::Schema(format!("unexpected orders.{column} {value:?}"))
}

/// An order's row as the writer last left it.
#[derive(Clone, Debug)]
pub(crate) struct CachedOrder {
    /// The order as its events left it. The store keeps no notional of
    /// the fills, so one read back has none (the writer never needs it).
    pub state: OrderState,
    pub created_ts: i64,
    pub updated_ts: i64,
    pub log_index: i64,
    /// The row is in the store (committed by an earlier batch): it is
    /// updated, not inserted.
    pub stored: bool,
    /// The current batch changed it: it is written at the batch's end.
    pub dirty: bool,
    /// Stop, iceberg, funds, expiry and one-cancels-other details, and
    /// when a stop triggered; boxed, since most orders have none.
    pub extra: Option<Box<OrderExtra>>,
}

/// An order's rarer columns (schema version 4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct OrderExtra {
    pub stop_price: Option<u64>,
    pub trailing: Option<TrailingUnits>,
    pub display_qty: Option<u64>,
    pub funds: Option<u64>,
    pub expire_ts: Option<u64>,
    pub oco_with: Option<ClientOrderId>,
    /// Log time the stop triggered.
    pub triggered_ts: Option<i64>,
    /// The stop price that was reached (a trailing stop's, where it had
    /// trailed to).
    pub triggered_price: Option<u64>,
}

impl OrderExtra {
    /// The accepted order's details; `None` for a plain order.
    pub(crate) fn of(ext: Option<&AcceptedExt>) -> Option<Box<OrderExtra>> {
        let ext = ext?;
        Some(Box::new(OrderExtra {
            stop_price: ext.stop_price,
            trailing: ext.trailing,
            display_qty: ext.display_qty,
            funds: ext.funds,
            expire_ts: ext.expire_ts,
            oco_with: ext.oco_with,
            triggered_ts: None,
            triggered_price: None,
        }))
    }

    fn trailing_amount(&self) -> Option<u64> {
        match self.trailing {
            Some(TrailingUnits::Amount(amount)) => Some(amount),
            _ => None,
        }
    }

    fn trailing_bps(&self) -> Option<u32> {
        match self.trailing {
            Some(TrailingUnits::Bps(bps)) => Some(bps),
            _ => None,
        }
    }
}

/// The empty extra of a plain order, so binding one needs no branch per
/// column.
static NO_EXTRA: OrderExtra = OrderExtra {
    stop_price: None,
    trailing: None,
    display_qty: None,
    funds: None,
    expire_ts: None,
    oco_with: None,
    triggered_ts: None,
    triggered_price: None,
};

/// The columns [`CachedOrder::read`] expects, in order.
pub(crate) const ORDER_COLUMNS: &str = "order_id, account, client_order_id, symbol, side, \
     order_type, price, qty, filled_qty, status, tif, created_ts, updated_ts, log_index, \
     stop_price, trailing_amount, trailing_bps, display_qty, funds, expire_ts, oco_with, \
     triggered_ts, triggered_price";

/// A stored integer that the order fold keeps unsigned.
fn unsigned(row: &[crate::db::Val], i: usize, _column: &str) -> Result<u64, StoreError> {
    row[i].int().map(crate::db::loaded)
}

/// A nullable stored integer that the order fold keeps unsigned.
fn opt_unsigned(row: &[crate::db::Val], i: usize, column: &str) -> Result<Option<u64>, StoreError> {
    match row[i].opt_int()? {
        Some(_) => unsigned(row, i, column).map(Some),
        None => Ok(None),
    }
}

/// A value for the store (every `u64` fits: see [`crate::db::stored`]).
fn sql(value: u64) -> i64 {
    crate::db::stored(value)
}

impl CachedOrder {
    /// An order read back from the store (`SELECT` [`ORDER_COLUMNS`]).
    pub(crate) fn read(row: &[crate::db::Val]) -> Result<CachedOrder, StoreError> {
        let text = |i: usize| row[i].text();
        let side = match text(4)?.as_str() {
            "buy" => Side::Buy,
            "sell" => Side::Sell,
            other => return Err(bad("side", other)),
        };
        let order_type = match text(5)?.as_str() {
            "limit" => OrderType::Limit,
            "market" => OrderType::Market,
            "stop" => OrderType::Stop,
            "stop_limit" => OrderType::StopLimit,
            other => return Err(bad("order_type", other)),
        };
        let tif = match text(10)?.as_str() {
            "gtc" => TimeInForce::Gtc,
            "ioc" => TimeInForce::Ioc,
            "fok" => TimeInForce::Fok,
            "day" => TimeInForce::Day,
            "gtd" => TimeInForce::Gtd,
            "at_open" => TimeInForce::AtOpen,
            "at_close" => TimeInForce::AtClose,
            other => return Err(bad("tif", other)),
        };
        let status = text(9)?;
        let client_order_id = text(2)?;
        let symbol = text(3)?;
        let price = opt_unsigned(row, 6, "price")?;
        let trailing = match (
            opt_unsigned(row, 15, "trailing_amount")?,
            row[16].opt_int()?,
        ) {
            (Some(amount), _) => Some(TrailingUnits::Amount(amount)),
            (None, Some(bps)) => Some(TrailingUnits::Bps(
                u32::try_from(bps).map_err(|_| bad("trailing_bps", &bps.to_string()))?,
            )),
            (None, None) => None,
        };
        let oco_with = match row[20].opt_text()? {
            Some(text) => Some(ClientOrderId::new(&text).map_err(|_| bad("oco_with", &text))?),
            None => None,
        };
        let extra = OrderExtra {
            stop_price: opt_unsigned(row, 14, "stop_price")?,
            trailing,
            display_qty: opt_unsigned(row, 17, "display_qty")?,
            funds: opt_unsigned(row, 18, "funds")?,
            expire_ts: opt_unsigned(row, 19, "expire_ts")?,
            oco_with,
            triggered_ts: row[21].opt_int()?,
            triggered_price: opt_unsigned(row, 22, "triggered_price")?,
        };
        let stop = match (StopState::of(order_type), extra.triggered_ts) {
            (StopState::Untriggered, Some(_)) => StopState::Triggered,
            (state, _) => state,
        };
        Ok(CachedOrder {
            state: OrderState {
                order_id: unsigned(row, 0, "order_id")?,
                account: unsigned(row, 1, "account")?,
                client_order_id: ClientOrderId::new(&client_order_id)
                    .map_err(|_| bad("client_order_id", &client_order_id))?,
                symbol: Symbol::new(&symbol).map_err(|_| bad("symbol", &symbol))?,
                side,
                order_type,
                tif,
                stop,
                progress: Progress {
                    price,
                    qty: unsigned(row, 7, "qty")?,
                    filled_qty: unsigned(row, 8, "filled_qty")?,
                    fill_notional: 0,
                    status: OrderStatus::parse(&status).ok_or_else(|| bad("status", &status))?,
                },
            },
            created_ts: row[11].int()?,
            updated_ts: row[12].int()?,
            log_index: row[13].int()?,
            stored: true,
            dirty: false,
            extra: (extra != NO_EXTRA).then(|| Box::new(extra)),
        })
    }

    /// Refuses an order whose numbers the store cannot hold.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let state = &self.state;
        int(state.order_id, "order id")?;
        int(state.account, "account")?;
        state.progress.price.map(|p| int(p, "price")).transpose()?;
        int(state.progress.qty, "quantity")?;
        int(state.progress.filled_qty, "filled quantity")?;
        if let Some(extra) = &self.extra {
            for (value, what) in [
                (extra.stop_price, "stop price"),
                (extra.trailing_amount(), "trailing distance"),
                (extra.display_qty, "display quantity"),
                (extra.funds, "funds"),
                (extra.expire_ts, "expire time"),
                (extra.triggered_price, "stop price"),
            ] {
                value.map(|v| int(v, what)).transpose()?;
            }
        }
        Ok(())
    }
}

impl Row for CachedOrder {
    const TABLE: Table = Table {
        name: "orders",
        columns: &[
            "order_id",
            "account",
            "client_order_id",
            "symbol",
            "side",
            "order_type",
            "price",
            "qty",
            "filled_qty",
            "status",
            "tif",
            "created_ts",
            "updated_ts",
            "log_index",
            "stop_price",
            "trailing_amount",
            "trailing_bps",
            "display_qty",
            "funds",
            "expire_ts",
            "oco_with",
            "triggered_ts",
            "triggered_price",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        let (state, progress) = (&self.state, &self.state.progress);
        out.extend([
            Param::Int(sql(state.order_id)),
            Param::Int(sql(state.account)),
            Param::Text(state.client_order_id.as_str()),
            Param::Text(state.symbol.as_str()),
            Param::Text(state.side.as_str()),
            Param::Text(state.order_type.as_str()),
            progress.price.map(sql).into(),
            Param::Int(sql(progress.qty)),
            Param::Int(sql(progress.filled_qty)),
            Param::Text(progress.status.as_str()),
            Param::Text(state.tif.as_str()),
            Param::Int(self.created_ts),
            Param::Int(self.updated_ts),
            Param::Int(self.log_index),
        ]);
        let extra = self.extra.as_deref().unwrap_or(&NO_EXTRA);
        out.extend::<[Param<'a>; 9]>([
            extra.stop_price.map(sql).into(),
            extra.trailing_amount().map(sql).into(),
            extra.trailing_bps().map(i64::from).into(),
            extra.display_qty.map(sql).into(),
            extra.funds.map(sql).into(),
            extra.expire_ts.map(sql).into(),
            extra.oco_with.as_ref().map(|c| c.as_str()).into(),
            extra.triggered_ts.into(),
            extra.triggered_price.map(sql).into(),
        ]);
    }
}

impl Kept for CachedOrder {
    fn stored(&self) -> bool {
        self.stored
    }

    const UPDATE: &'static str = "UPDATE orders SET client_order_id = ?, price = ?, qty = ?, \
         filled_qty = ?, status = ?, updated_ts = ?, triggered_ts = ?, triggered_price = ? \
         WHERE order_id = ?";

    fn update_postgres(rows: usize) -> String {
        let row = "(?::TEXT, ?::BIGINT, ?::BIGINT, ?::BIGINT, ?::TEXT, ?::BIGINT, ?::BIGINT, \
                   ?::BIGINT, ?::BIGINT)";
        format!(
            "UPDATE orders SET client_order_id = v.client_order_id, price = v.price, qty = v.qty, \
             filled_qty = v.filled_qty, status = v.status, updated_ts = v.updated_ts, \
             triggered_ts = v.triggered_ts, triggered_price = v.triggered_price \
             FROM (VALUES {}) \
             AS v(client_order_id, price, qty, filled_qty, status, updated_ts, triggered_ts, \
             triggered_price, order_id) \
             WHERE orders.order_id = v.order_id",
            vec![row; rows].join(", ")
        )
    }

    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        let (state, progress) = (&self.state, &self.state.progress);
        out.extend([
            Param::Text(state.client_order_id.as_str()),
            progress.price.map(sql).into(),
            Param::Int(sql(progress.qty)),
            Param::Int(sql(progress.filled_qty)),
            Param::Text(progress.status.as_str()),
            Param::Int(self.updated_ts),
        ]);
        let extra = self.extra.as_deref().unwrap_or(&NO_EXTRA);
        out.extend::<[Param<'a>; 3]>([
            extra.triggered_ts.into(),
            extra.triggered_price.map(sql).into(),
            Param::Int(sql(state.order_id)),
        ]);
    }
}
