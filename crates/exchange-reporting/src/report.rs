//! `exchange report`: the store's rows as a table, CSV or JSON.
//!
//! Amounts are written as exact decimals (never floats), times as UTC
//! ISO 8601, so the three formats carry the same values.

use std::fmt::Write;

use exchange_types::{format_signed_units, format_units};
use serde_json::{Map, Value};

use crate::query::{AccountDay, AuditRow, FillRow, InstrumentDay, LedgerRow, OrderRow, TradeRow};
use crate::time::{format_date, format_time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
}

impl Format {
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "table" => Some(Format::Table),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Int(i128),
    /// A decimal amount, right-aligned in tables, a string in JSON (as on
    /// the REST API: no precision lost to floats).
    Amount(String),
    Text(String),
    /// `true` or `false` in tables and CSV, a boolean in JSON.
    Bool(bool),
    Null,
}

/// Columns and rows, ready to render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<Cell>>,
}

fn int(v: u64) -> Cell {
    Cell::Int(i128::from(v))
}

fn amount(v: u64) -> Cell {
    Cell::Amount(format_units(v))
}

fn signed(v: i64) -> Cell {
    Cell::Amount(format_signed_units(v))
}

fn text(v: &str) -> Cell {
    Cell::Text(v.to_string())
}

fn time(ts: u64) -> Cell {
    text(&format_time(ts))
}

fn date(ts: u64) -> Cell {
    text(&format_date(ts))
}

fn opt_text(v: &Option<String>) -> Cell {
    v.as_deref().map_or(Cell::Null, text)
}

fn opt_int(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, int)
}

fn opt_amount(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, amount)
}

fn opt_time(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, time)
}

/// A report's column: its header and the cell a row gives it, side by
/// side, so a column added or moved takes its values with it.
type Column<R> = (&'static str, fn(&R) -> Cell);

fn table<R>(columns: &[Column<R>], rows: &[R]) -> Table {
    Table {
        columns: columns.iter().map(|(name, _)| *name).collect(),
        rows: rows
            .iter()
            .map(|row| columns.iter().map(|(_, cell)| cell(row)).collect())
            .collect(),
    }
}

const TRADES: &[Column<TradeRow>] = &[
    ("trade_id", |t| int(t.trade_id)),
    ("time", |t| time(t.ts)),
    ("symbol", |t| text(&t.symbol)),
    ("side", |t| text(&t.aggressor_side)),
    ("price", |t| amount(t.price)),
    ("qty", |t| amount(t.qty)),
    ("notional", |t| amount(t.notional)),
    ("maker_order_id", |t| int(t.maker_order_id)),
    ("taker_order_id", |t| int(t.taker_order_id)),
    ("maker_account", |t| int(t.maker_account)),
    ("taker_account", |t| int(t.taker_account)),
    ("maker_fee", |t| signed(t.maker_fee)),
    ("taker_fee", |t| signed(t.taker_fee)),
    ("auction", |t| opt_text(&t.auction)),
];

pub fn trades(rows: &[TradeRow]) -> Table {
    table(TRADES, rows)
}

const ORDERS: &[Column<OrderRow>] = &[
    ("order_id", |o| int(o.order_id)),
    ("time", |o| time(o.created_ts)),
    ("account", |o| int(o.account)),
    ("client_order_id", |o| text(&o.client_order_id)),
    ("symbol", |o| text(&o.symbol)),
    ("side", |o| text(&o.side)),
    ("type", |o| text(&o.order_type)),
    ("tif", |o| text(&o.tif)),
    ("price", |o| opt_amount(o.price)),
    ("qty", |o| amount(o.qty)),
    ("filled_qty", |o| amount(o.filled_qty)),
    ("status", |o| text(&o.status)),
    ("stop_price", |o| opt_amount(o.stop_price)),
    ("trailing_amount", |o| opt_amount(o.trailing_amount)),
    ("trailing_bps", |o| opt_int(o.trailing_bps)),
    ("display_qty", |o| opt_amount(o.display_qty)),
    ("funds", |o| opt_amount(o.funds)),
    ("expire_time", |o| opt_time(o.expire_ts)),
    ("oco_with", |o| opt_text(&o.oco_with)),
    ("triggered_time", |o| opt_time(o.triggered_ts)),
    ("triggered_price", |o| opt_amount(o.triggered_price)),
    ("hidden", |o| Cell::Bool(o.hidden)),
    ("min_qty", |o| opt_amount(o.min_qty)),
    ("updated_time", |o| time(o.updated_ts)),
];

/// Orders with their current state; the stop, trailing, iceberg, funds,
/// expiry, one-cancels-other and minimum quantity columns are empty for
/// orders without them.
pub fn orders(rows: &[OrderRow]) -> Table {
    table(ORDERS, rows)
}

const FILLS: &[Column<FillRow>] = &[
    ("trade_id", |f| int(f.trade_id)),
    ("time", |f| time(f.ts)),
    ("account", |f| int(f.account)),
    ("order_id", |f| int(f.order_id)),
    ("symbol", |f| text(&f.symbol)),
    ("side", |f| text(&f.side)),
    ("liquidity", |f| text(&f.liquidity)),
    ("price", |f| amount(f.price)),
    ("qty", |f| amount(f.qty)),
    ("notional", |f| amount(f.notional)),
    ("fee", |f| signed(f.fee)),
];

pub fn fills(rows: &[FillRow]) -> Table {
    table(FILLS, rows)
}

const INSTRUMENT_DAYS: &[Column<InstrumentDay>] = &[
    ("date", |d| date(d.day)),
    ("symbol", |d| text(&d.symbol)),
    ("open", |d| amount(d.open)),
    ("high", |d| amount(d.high)),
    ("low", |d| amount(d.low)),
    ("close", |d| amount(d.close)),
    ("volume", |d| amount(d.volume)),
    ("trades", |d| int(d.trades)),
    ("notional", |d| amount(d.notional)),
];

pub fn instrument_days(rows: &[InstrumentDay]) -> Table {
    table(INSTRUMENT_DAYS, rows)
}

const ACCOUNT_DAYS: &[Column<AccountDay>] = &[
    ("date", |d| date(d.day)),
    ("account", |d| int(d.account)),
    ("symbol", |d| text(&d.symbol)),
    ("fills", |d| int(d.fills)),
    ("volume", |d| amount(d.volume)),
    ("notional", |d| amount(d.notional)),
    ("fees", |d| signed(d.fees)),
];

pub fn account_days(rows: &[AccountDay]) -> Table {
    table(ACCOUNT_DAYS, rows)
}

const AUDIT: &[Column<AuditRow>] = &[
    ("log_index", |a| int(a.log_index)),
    ("time", |a| time(a.ts)),
    ("command", |a| text(&a.command)),
    ("account", |a| opt_int(a.account)),
    ("outcome", |a| text(&a.outcome)),
    ("reason", |a| opt_text(&a.reason)),
    ("order_id", |a| opt_int(a.order_id)),
    ("client_order_id", |a| opt_text(&a.client_order_id)),
    ("symbol", |a| opt_text(&a.symbol)),
    ("trades", |a| int(a.trades)),
    ("events", |a| int(a.events)),
];

pub fn audit(rows: &[AuditRow]) -> Table {
    table(AUDIT, rows)
}

const LEDGER: &[Column<LedgerRow>] = &[
    ("seq", |l| int(l.seq)),
    ("log_index", |l| int(l.log_index)),
    ("time", |l| time(l.ts)),
    ("account", |l| int(l.account)),
    ("asset", |l| text(&l.asset)),
    ("delta", |l| signed(l.delta)),
    ("total", |l| amount(l.total)),
    ("available", |l| amount(l.available)),
    ("cause", |l| text(&l.cause)),
];

pub fn ledger(rows: &[LedgerRow]) -> Table {
    table(LEDGER, rows)
}

fn plain(cell: &Cell) -> String {
    match cell {
        Cell::Int(v) => v.to_string(),
        Cell::Amount(v) | Cell::Text(v) => v.clone(),
        Cell::Bool(v) => v.to_string(),
        Cell::Null => String::new(),
    }
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

impl Table {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Table => self.to_text(),
            Format::Csv => self.to_csv(),
            Format::Json => self.to_json(),
        }
    }

    /// Aligned columns, numbers to the right; "(no rows)" when empty.
    pub fn to_text(&self) -> String {
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(plain).collect())
            .collect();
        let widths: Vec<usize> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([name.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let numeric: Vec<bool> = (0..self.columns.len())
            .map(|i| {
                self.rows
                    .iter()
                    .all(|r| matches!(r[i], Cell::Int(_) | Cell::Amount(_) | Cell::Null))
            })
            .collect();
        let mut out = String::new();
        let line = |out: &mut String, values: &mut dyn Iterator<Item = &str>| {
            let mut parts = Vec::new();
            for (i, value) in values.enumerate() {
                parts.push(if numeric[i] {
                    format!("{value:>width$}", width = widths[i])
                } else {
                    format!("{value:<width$}", width = widths[i])
                });
            }
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&mut out, &mut self.columns.iter().copied());
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        line(&mut out, &mut rule.iter().map(String::as_str));
        for row in &cells {
            line(&mut out, &mut row.iter().map(String::as_str));
        }
        if self.rows.is_empty() {
            out.push_str("(no rows)\n");
        }
        out
    }

    /// RFC 4180: a header line, then one line per row.
    pub fn to_csv(&self) -> String {
        let mut out = self.columns.join(",");
        out.push('\n');
        for row in &self.rows {
            let fields: Vec<String> = row.iter().map(|c| csv_field(&plain(c))).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    /// An array of objects keyed by column.
    pub fn to_json(&self) -> String {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| {
                let mut object = Map::new();
                for (name, cell) in self.columns.iter().zip(row) {
                    let value = match cell {
                        Cell::Int(v) => i64::try_from(*v)
                            .map(Value::from)
                            .unwrap_or_else(|_| Value::from(v.to_string())),
                        Cell::Amount(v) | Cell::Text(v) => Value::from(v.as_str()),
                        Cell::Bool(v) => Value::from(*v),
                        Cell::Null => Value::Null,
                    };
                    object.insert((*name).to_string(), value);
                }
                Value::Object(object)
            })
            .collect();
        let mut out = serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into());
        out.push('\n');
        out
    }
}
