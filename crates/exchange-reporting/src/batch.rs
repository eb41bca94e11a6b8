//! A batch's rows, collected while its entries are read and written at
//! its end in the same transaction: the append-only tables with multi-row
//! `INSERT`s, every order the batch touched with one upsert of its final
//! row. One statement per 64 rows instead of one per row matters most on
//! PostgreSQL, where each statement is a round trip.

use std::collections::BTreeSet;

use crate::db::Val;
use crate::{Store, StoreError};

/// An append-only table written with multi-row `INSERT`s.
pub(crate) struct Table {
    name: &'static str,
    columns: &'static [&'static str],
}

pub(crate) const TRADES: Table = Table {
    name: "trades",
    columns: &[
        "trade_id",
        "seq",
        "log_index",
        "ts",
        "symbol",
        "price",
        "qty",
        "notional",
        "aggressor_side",
        "maker_order_id",
        "taker_order_id",
        "maker_account",
        "taker_account",
        "maker_fee",
        "taker_fee",
    ],
};
pub(crate) const FILLS: Table = Table {
    name: "fills",
    columns: &[
        "trade_id",
        "liquidity",
        "order_id",
        "account",
        "symbol",
        "side",
        "price",
        "qty",
        "notional",
        "fee",
        "ts",
    ],
};
pub(crate) const LEDGER: Table = Table {
    name: "ledger",
    columns: &[
        "seq",
        "log_index",
        "ts",
        "account",
        "asset",
        "total",
        "available",
        "delta",
        "cause",
    ],
};
pub(crate) const AUDIT: Table = Table {
    name: "audit",
    columns: &[
        "log_index",
        "ts",
        "command",
        "account",
        "outcome",
        "reason",
        "reason_code",
        "order_id",
        "client_order_id",
        "symbol",
        "trades",
        "first_seq",
        "last_seq",
        "events",
    ],
};

pub(crate) const ORDERS: Table = Table {
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
    ],
};
/// Columns of an order row that events change.
pub(crate) const CLIENT_ORDER_ID: usize = 2;
pub(crate) const PRICE: usize = 6;
pub(crate) const QTY: usize = 7;
pub(crate) const FILLED: usize = 8;
pub(crate) const STATUS: usize = 9;
pub(crate) const UPDATED: usize = 12;
/// An order written before is brought up to date.
const ORDERS_UPSERT: &str =
    " ON CONFLICT (order_id) DO UPDATE SET client_order_id = excluded.client_order_id, \
     price = excluded.price, qty = excluded.qty, filled_qty = excluded.filled_qty, \
     status = excluded.status, updated_ts = excluded.updated_ts";

/// Rows per multi-row `INSERT` (a statement of each of two sizes, this
/// and one, so each stays prepared).
const CHUNK: usize = 64;

fn insert_sql(table: &Table, rows: usize) -> String {
    let row = format!("({})", vec!["?"; table.columns.len()].join(", "));
    let upsert = if table.name == ORDERS.name {
        ORDERS_UPSERT
    } else {
        ""
    };
    format!(
        "INSERT INTO {} ({}) VALUES {}{upsert}",
        table.name,
        table.columns.join(", "),
        vec![row; rows].join(", ")
    )
}

/// Rows of the append-only tables, collected while a batch's events are
/// read and inserted together at its end, in the same transaction: one
/// statement per 64 rows instead of one per row (a round trip each, on
/// PostgreSQL).
#[derive(Default)]
pub(crate) struct Appends {
    /// Every order the batch touched (upserted as the cache has it).
    pub orders: BTreeSet<u64>,
    pub trades: Vec<Vec<Val>>,
    pub fills: Vec<Vec<Val>>,
    pub ledger: Vec<Vec<Val>>,
    pub audit: Vec<Vec<Val>>,
}

impl Appends {
    pub(crate) fn clear(&mut self) {
        self.orders.clear();
        self.trades.clear();
        self.fills.clear();
        self.ledger.clear();
        self.audit.clear();
    }
}

impl Store {
    pub(crate) fn flush_appends(&mut self) -> Result<(), StoreError> {
        let appends = std::mem::take(&mut self.appends);
        let mut orders: Vec<Vec<Val>> = Vec::with_capacity(appends.orders.len());
        for id in &appends.orders {
            let Some(row) = self.writer.orders.get(id) else {
                continue;
            };
            orders.push(row.clone());
            // Closed orders leave the cache: events no longer reach them.
            if !matches!(&row[STATUS], Val::Text(s) if s == "new" || s == "partially_filled") {
                self.writer.orders.remove(id);
            }
        }
        for (table, rows) in [
            (&ORDERS, &orders),
            (&TRADES, &appends.trades),
            (&FILLS, &appends.fills),
            (&LEDGER, &appends.ledger),
            (&AUDIT, &appends.audit),
        ] {
            let mut chunks = rows.chunks_exact(CHUNK);
            if rows.len() >= CHUNK {
                let sql = insert_sql(table, CHUNK);
                for chunk in chunks.by_ref() {
                    let params: Vec<Val> = chunk.iter().flatten().cloned().collect();
                    self.conn.exec(&sql, &params)?;
                }
            }
            let rest = chunks.remainder();
            if !rest.is_empty() {
                let sql = insert_sql(table, 1);
                for row in rest {
                    self.conn.exec(&sql, row)?;
                }
            }
        }
        // Keep the allocations for the next batch.
        self.appends = appends;
        self.appends.clear();
        Ok(())
    }
}
