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

fn opt_text(v: &Option<String>) -> Cell {
    v.as_deref().map_or(Cell::Null, text)
}

fn opt_int(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, int)
}

pub fn trades(rows: &[TradeRow]) -> Table {
    Table {
        columns: vec![
            "trade_id",
            "time",
            "symbol",
            "side",
            "price",
            "qty",
            "notional",
            "maker_order_id",
            "taker_order_id",
            "maker_account",
            "taker_account",
            "maker_fee",
            "taker_fee",
            "auction",
        ],
        rows: rows
            .iter()
            .map(|t| {
                vec![
                    int(t.trade_id),
                    text(&format_time(t.ts)),
                    text(&t.symbol),
                    text(&t.aggressor_side),
                    amount(t.price),
                    amount(t.qty),
                    amount(t.notional),
                    int(t.maker_order_id),
                    int(t.taker_order_id),
                    int(t.maker_account),
                    int(t.taker_account),
                    signed(t.maker_fee),
                    signed(t.taker_fee),
                    opt_text(&t.auction),
                ]
            })
            .collect(),
    }
}

fn opt_amount(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, amount)
}

fn opt_time(v: Option<u64>) -> Cell {
    v.map_or(Cell::Null, |ts| text(&format_time(ts)))
}

/// Orders with their current state; the stop, trailing, iceberg, funds,
/// expiry and one-cancels-other columns are empty for orders without them.
pub fn orders(rows: &[OrderRow]) -> Table {
    Table {
        columns: vec![
            "order_id",
            "time",
            "account",
            "client_order_id",
            "symbol",
            "side",
            "type",
            "tif",
            "price",
            "qty",
            "filled_qty",
            "status",
            "stop_price",
            "trailing_amount",
            "trailing_bps",
            "display_qty",
            "funds",
            "expire_time",
            "oco_with",
            "triggered_time",
            "triggered_price",
            "updated_time",
        ],
        rows: rows
            .iter()
            .map(|o| {
                vec![
                    int(o.order_id),
                    text(&format_time(o.created_ts)),
                    int(o.account),
                    text(&o.client_order_id),
                    text(&o.symbol),
                    text(&o.side),
                    text(&o.order_type),
                    text(&o.tif),
                    opt_amount(o.price),
                    amount(o.qty),
                    amount(o.filled_qty),
                    text(&o.status),
                    opt_amount(o.stop_price),
                    opt_amount(o.trailing_amount),
                    opt_int(o.trailing_bps),
                    opt_amount(o.display_qty),
                    opt_amount(o.funds),
                    opt_time(o.expire_ts),
                    opt_text(&o.oco_with),
                    opt_time(o.triggered_ts),
                    opt_amount(o.triggered_price),
                    text(&format_time(o.updated_ts)),
                ]
            })
            .collect(),
    }
}

pub fn fills(rows: &[FillRow]) -> Table {
    Table {
        columns: vec![
            "trade_id",
            "time",
            "account",
            "order_id",
            "symbol",
            "side",
            "liquidity",
            "price",
            "qty",
            "notional",
            "fee",
        ],
        rows: rows
            .iter()
            .map(|f| {
                vec![
                    int(f.trade_id),
                    text(&format_time(f.ts)),
                    int(f.account),
                    int(f.order_id),
                    text(&f.symbol),
                    text(&f.side),
                    text(&f.liquidity),
                    amount(f.price),
                    amount(f.qty),
                    amount(f.notional),
                    signed(f.fee),
                ]
            })
            .collect(),
    }
}

pub fn instrument_days(rows: &[InstrumentDay]) -> Table {
    Table {
        columns: vec![
            "date", "symbol", "open", "high", "low", "close", "volume", "trades", "notional",
        ],
        rows: rows
            .iter()
            .map(|d| {
                vec![
                    text(&format_date(d.day)),
                    text(&d.symbol),
                    amount(d.open),
                    amount(d.high),
                    amount(d.low),
                    amount(d.close),
                    amount(d.volume),
                    int(d.trades),
                    amount(d.notional),
                ]
            })
            .collect(),
    }
}

pub fn account_days(rows: &[AccountDay]) -> Table {
    Table {
        columns: vec![
            "date", "account", "symbol", "fills", "volume", "notional", "fees",
        ],
        rows: rows
            .iter()
            .map(|d| {
                vec![
                    text(&format_date(d.day)),
                    int(d.account),
                    text(&d.symbol),
                    int(d.fills),
                    amount(d.volume),
                    amount(d.notional),
                    signed(d.fees),
                ]
            })
            .collect(),
    }
}

pub fn audit(rows: &[AuditRow]) -> Table {
    Table {
        columns: vec![
            "log_index",
            "time",
            "command",
            "account",
            "outcome",
            "reason",
            "order_id",
            "client_order_id",
            "symbol",
            "trades",
            "events",
        ],
        rows: rows
            .iter()
            .map(|a| {
                vec![
                    int(a.log_index),
                    text(&format_time(a.ts)),
                    text(&a.command),
                    opt_int(a.account),
                    text(&a.outcome),
                    opt_text(&a.reason),
                    opt_int(a.order_id),
                    opt_text(&a.client_order_id),
                    opt_text(&a.symbol),
                    int(a.trades),
                    int(a.events),
                ]
            })
            .collect(),
    }
}

pub fn ledger(rows: &[LedgerRow]) -> Table {
    Table {
        columns: vec![
            "seq",
            "log_index",
            "time",
            "account",
            "asset",
            "delta",
            "total",
            "available",
            "cause",
        ],
        rows: rows
            .iter()
            .map(|l| {
                vec![
                    int(l.seq),
                    int(l.log_index),
                    text(&format_time(l.ts)),
                    int(l.account),
                    text(&l.asset),
                    signed(l.delta),
                    amount(l.total),
                    amount(l.available),
                    text(&l.cause),
                ]
            })
            .collect(),
    }
}

fn plain(cell: &Cell) -> String {
    match cell {
        Cell::Int(v) => v.to_string(),
        Cell::Amount(v) | Cell::Text(v) => v.clone(),
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
