//! An order's row: kept by the writer while its order lives, read back
//! from the store when a later entry touches it again.

use exchange_types::event::{AcceptedExt, TrailingUnits};
use exchange_types::{
    ClientOrderId, OrderState, OrderStatus, OrderType, Progress, Side, StopState, Symbol,
    TimeInForce,
};

use crate::batch::{Kept, Row, Table};
use crate::db::Param;
use crate::record::Record;
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
    /// Stop, iceberg, funds, expiry, one-cancels-other, hidden and
    /// minimum quantity details, and when a stop triggered; boxed, since
    /// most orders have none.
    pub extra: Option<Box<OrderExtra>>,
}

/// An order's rarer columns (schema versions 4 and 6).
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
    /// A hidden (non-displayed) order.
    pub hidden: bool,
    /// The minimum acceptable quantity it was entered with.
    pub min_qty: Option<u64>,
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
            hidden: ext.hidden,
            min_qty: ext.min_qty,
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
    hidden: false,
    min_qty: None,
};

/// The columns [`CachedOrder::read`] reads, in any order.
pub(crate) const ORDER_COLUMNS: &str = "order_id, account, client_order_id, symbol, side, \
     order_type, price, qty, filled_qty, status, tif, created_ts, updated_ts, log_index, \
     stop_price, trailing_amount, trailing_bps, display_qty, funds, expire_ts, oco_with, \
     triggered_ts, triggered_price, hidden, min_qty";

/// A value for the store (every `u64` fits: see [`crate::db::stored`]).
fn sql(value: u64) -> i64 {
    crate::db::stored(value)
}

/// A text column the writer wrote from one of its types, read back as it.
fn parsed<T>(
    row: &dyn Record,
    column: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, StoreError> {
    let text = row.text(column)?;
    parse(&text).ok_or_else(|| bad(column, &text))
}

fn side(text: &str) -> Option<Side> {
    match text {
        "buy" => Some(Side::Buy),
        "sell" => Some(Side::Sell),
        _ => None,
    }
}

fn order_type(text: &str) -> Option<OrderType> {
    OrderType::parse(text)
}

fn tif(text: &str) -> Option<TimeInForce> {
    match text {
        "gtc" => Some(TimeInForce::Gtc),
        "ioc" => Some(TimeInForce::Ioc),
        "fok" => Some(TimeInForce::Fok),
        "day" => Some(TimeInForce::Day),
        "gtd" => Some(TimeInForce::Gtd),
        "at_open" => Some(TimeInForce::AtOpen),
        "at_close" => Some(TimeInForce::AtClose),
        _ => None,
    }
}

impl OrderExtra {
    /// The rarer columns of an order read back from the store.
    fn read(row: &dyn Record) -> Result<OrderExtra, StoreError> {
        let trailing = match (
            row.opt_u64("trailing_amount")?,
            row.opt_i64("trailing_bps")?,
        ) {
            (Some(amount), _) => Some(TrailingUnits::Amount(amount)),
            (None, Some(bps)) => Some(TrailingUnits::Bps(
                u32::try_from(bps).map_err(|_| bad("trailing_bps", &bps.to_string()))?,
            )),
            (None, None) => None,
        };
        let oco_with = match row.opt_text("oco_with")? {
            Some(text) => Some(ClientOrderId::new(&text).map_err(|_| bad("oco_with", &text))?),
            None => None,
        };
        Ok(OrderExtra {
            stop_price: row.opt_u64("stop_price")?,
            trailing,
            display_qty: row.opt_u64("display_qty")?,
            funds: row.opt_u64("funds")?,
            expire_ts: row.opt_u64("expire_ts")?,
            oco_with,
            triggered_ts: row.opt_i64("triggered_ts")?,
            triggered_price: row.opt_u64("triggered_price")?,
            hidden: row.flag("hidden")?,
            min_qty: row.opt_u64("min_qty")?,
        })
    }
}

impl CachedOrder {
    /// An order read back from the store (`SELECT` [`ORDER_COLUMNS`]).
    pub(crate) fn read(row: &dyn Record) -> Result<CachedOrder, StoreError> {
        let order_type = parsed(row, "order_type", order_type)?;
        let extra = OrderExtra::read(row)?;
        let stop = match (StopState::of(order_type), extra.triggered_ts) {
            (StopState::Untriggered, Some(_)) => StopState::Triggered,
            (state, _) => state,
        };
        let progress = Progress {
            price: row.opt_u64("price")?,
            qty: row.u64("qty")?,
            filled_qty: row.u64("filled_qty")?,
            fill_notional: 0,
            status: parsed(row, "status", OrderStatus::parse)?,
        };
        Ok(CachedOrder {
            state: OrderState {
                order_id: row.u64("order_id")?,
                account: row.u64("account")?,
                client_order_id: parsed(row, "client_order_id", |t| ClientOrderId::new(t).ok())?,
                symbol: parsed(row, "symbol", |t| Symbol::new(t).ok())?,
                side: parsed(row, "side", side)?,
                order_type,
                tif: parsed(row, "tif", tif)?,
                stop,
                progress,
            },
            created_ts: row.i64("created_ts")?,
            updated_ts: row.i64("updated_ts")?,
            log_index: row.i64("log_index")?,
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
                (extra.min_qty, "minimum quantity"),
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
            "hidden",
            "min_qty",
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
        out.extend::<[Param<'a>; 11]>([
            extra.stop_price.map(sql).into(),
            extra.trailing_amount().map(sql).into(),
            extra.trailing_bps().map(i64::from).into(),
            extra.display_qty.map(sql).into(),
            extra.funds.map(sql).into(),
            extra.expire_ts.map(sql).into(),
            extra.oco_with.as_ref().map(|c| c.as_str()).into(),
            extra.triggered_ts.into(),
            extra.triggered_price.map(sql).into(),
            Param::Int(i64::from(extra.hidden)),
            extra.min_qty.map(sql).into(),
        ]);
    }
}

impl Kept for CachedOrder {
    fn stored(&self) -> bool {
        self.stored
    }

    // The rarer columns stay as accepted (a replace keeps them), but for
    // a stop's trigger.
    const UPDATE: &'static str = "UPDATE orders SET client_order_id = ?, price = ?, qty = ?, \
         filled_qty = ?, status = ?, updated_ts = ?, triggered_ts = ?, triggered_price = ? \
         WHERE order_id = ?";

    const KEY: &'static str = "order_id";
    const CHANGING: &'static [&'static str] = &[
        "client_order_id",
        "price",
        "qty",
        "filled_qty",
        "status",
        "updated_ts",
        "triggered_ts",
        "triggered_price",
    ];

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
