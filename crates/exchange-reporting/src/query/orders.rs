//! Orders as they stand: an account's, one by id, those placed in a range.

use serde::Serialize;

use super::{bound, id, opt_account};
use crate::db::Val;
use crate::record::Record;
use crate::{Store, StoreError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderFilter {
    Open,
    Closed,
    All,
}

impl OrderFilter {
    fn statuses(self) -> (&'static str, &'static str, &'static str) {
        match self {
            OrderFilter::Open => ("new", "partially_filled", "new"),
            OrderFilter::Closed => ("filled", "canceled", "expired"),
            OrderFilter::All => ("", "", ""),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderRow {
    pub order_id: u64,
    pub account: u64,
    pub client_order_id: String,
    pub symbol: String,
    pub side: String,
    pub order_type: String,
    pub price: Option<u64>,
    pub qty: u64,
    pub filled_qty: u64,
    pub status: String,
    pub tif: String,
    pub created_ts: u64,
    pub updated_ts: u64,
    /// A stop's trigger price as placed.
    pub stop_price: Option<u64>,
    /// A trailing stop's distance: a price, or basis points.
    pub trailing_amount: Option<u64>,
    pub trailing_bps: Option<u64>,
    /// An iceberg's displayed quantity.
    pub display_qty: Option<u64>,
    /// A funds-sized market buy's quote amount.
    pub funds: Option<u64>,
    /// A good-till-date order's expire time.
    pub expire_ts: Option<u64>,
    /// The one-cancels-other partner's client order id.
    pub oco_with: Option<String>,
    /// When a stop triggered (`None`: not a stop, or not triggered).
    pub triggered_ts: Option<u64>,
    /// The stop price reached (a trailing stop's, where it had trailed to).
    pub triggered_price: Option<u64>,
    /// A hidden (non-displayed) order (`false` for an order written before
    /// schema version 6, which did not keep the flag).
    pub hidden: bool,
    /// The minimum acceptable quantity it was entered with.
    pub min_qty: Option<u64>,
}

impl OrderRow {
    pub(crate) fn read(row: &dyn Record) -> Result<OrderRow, StoreError> {
        Ok(OrderRow {
            order_id: row.u64("order_id")?,
            account: row.u64("account")?,
            client_order_id: row.text("client_order_id")?,
            symbol: row.text("symbol")?,
            side: row.text("side")?,
            order_type: row.text("order_type")?,
            price: row.opt_u64("price")?,
            qty: row.u64("qty")?,
            filled_qty: row.u64("filled_qty")?,
            status: row.text("status")?,
            tif: row.text("tif")?,
            created_ts: row.u64("created_ts")?,
            updated_ts: row.u64("updated_ts")?,
            stop_price: row.opt_u64("stop_price")?,
            trailing_amount: row.opt_u64("trailing_amount")?,
            trailing_bps: row.opt_u64("trailing_bps")?,
            display_qty: row.opt_u64("display_qty")?,
            funds: row.opt_u64("funds")?,
            expire_ts: row.opt_u64("expire_ts")?,
            oco_with: row.opt_text("oco_with")?,
            triggered_ts: row.opt_u64("triggered_ts")?,
            triggered_price: row.opt_u64("triggered_price")?,
            hidden: row.flag("hidden")?,
            min_qty: row.opt_u64("min_qty")?,
        })
    }
}

macro_rules! order_select {
    ($rest:literal) => {
        concat!(
            "SELECT order_id, account, client_order_id, symbol, side, order_type, price, qty, \
             filled_qty, status, tif, created_ts, updated_ts, stop_price, trailing_amount, \
             trailing_bps, display_qty, funds, expire_ts, oco_with, triggered_ts, \
             triggered_price, hidden, min_qty FROM orders ",
            $rest
        )
    };
}

impl Store {
    /// An account's orders, newest first, at most `limit`.
    pub fn orders(
        &mut self,
        account: u64,
        filter: OrderFilter,
        symbol: Option<&str>,
        limit: u64,
    ) -> Result<Vec<OrderRow>, StoreError> {
        let (a, b, c) = filter.statuses();
        let all = matches!(filter, OrderFilter::All);
        self.conn.rows(
            order_select!(
                "WHERE account = ? AND (? = 1 OR status IN (?, ?, ?)) \
                 AND (CAST(? AS TEXT) IS NULL OR symbol = ?) ORDER BY order_id DESC LIMIT ?"
            ),
            &[
                id(account),
                Val::Int(i64::from(all)),
                a.into(),
                b.into(),
                c.into(),
                symbol.into(),
                symbol.into(),
                bound(limit),
            ],
            OrderRow::read,
        )
    }

    pub fn order(&mut self, order_id: u64) -> Result<Option<OrderRow>, StoreError> {
        self.conn.row(
            order_select!("WHERE order_id = ?"),
            &[id(order_id)],
            OrderRow::read,
        )
    }

    /// Orders placed in `[from, to)`, of one account or all and of one
    /// instrument or all, by id.
    pub fn orders_placed(
        &mut self,
        account: Option<u64>,
        symbol: Option<&str>,
        from: u64,
        to: u64,
    ) -> Result<Vec<OrderRow>, StoreError> {
        self.conn.rows(
            order_select!(
                "WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) \
                 AND (CAST(? AS TEXT) IS NULL OR symbol = ?) \
                 AND created_ts >= ? AND created_ts < ? ORDER BY order_id"
            ),
            &[
                opt_account(account),
                opt_account(account),
                symbol.into(),
                symbol.into(),
                bound(from),
                bound(to),
            ],
            OrderRow::read,
        )
    }

    /// Every order, by id (for comparing two stores).
    pub fn all_orders(&mut self) -> Result<Vec<OrderRow>, StoreError> {
        self.conn
            .rows(order_select!("ORDER BY order_id"), &[], OrderRow::read)
    }
}
