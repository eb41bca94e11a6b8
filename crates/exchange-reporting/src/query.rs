//! Reads: what the REST history endpoints and `exchange report` ask.
//!
//! Time ranges are half-open, `[from, to)`, in nanoseconds since the Unix
//! epoch; amounts are 1e-8 units as stored. Optional filters are written
//! `CAST(? AS ...) IS NULL OR column = ?` so each query is one static,
//! portable statement.

use serde::Serialize;

use crate::db::Val;
use crate::{Store, StoreError};

const DAY_NS: u64 = 86_400 * 1_000_000_000;

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
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FillRow {
    pub trade_id: u64,
    pub order_id: u64,
    pub account: u64,
    pub symbol: String,
    pub side: String,
    pub price: u64,
    pub qty: u64,
    pub notional: u64,
    /// Quote units; negative is a rebate.
    pub fee: i64,
    pub liquidity: String,
    pub ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TradeRow {
    pub trade_id: u64,
    pub ts: u64,
    pub symbol: String,
    pub price: u64,
    pub qty: u64,
    pub notional: u64,
    pub aggressor_side: String,
    pub maker_order_id: u64,
    pub taker_order_id: u64,
    pub maker_account: u64,
    pub taker_account: u64,
    pub maker_fee: i64,
    pub taker_fee: i64,
    /// `open`, `close`, `volatility` or `reopen` for a trade executed in
    /// an auction; `None` in continuous trading.
    pub auction: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CandleRow {
    pub start: u64,
    pub open: u64,
    pub high: u64,
    pub low: u64,
    pub close: u64,
    pub volume: u64,
    pub trades: u64,
    pub notional: u64,
}

/// One instrument's trading over one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstrumentDay {
    pub day: u64,
    pub symbol: String,
    pub open: u64,
    pub high: u64,
    pub low: u64,
    pub close: u64,
    pub volume: u64,
    pub trades: u64,
    pub notional: u64,
}

/// One account's trading in one instrument over one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AccountDay {
    pub day: u64,
    pub account: u64,
    pub symbol: String,
    pub fills: u64,
    pub volume: u64,
    pub notional: u64,
    /// Quote units; negative when rebates exceeded fees.
    pub fees: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditRow {
    pub log_index: u64,
    pub ts: u64,
    pub command: String,
    pub account: Option<u64>,
    pub outcome: String,
    pub reason: Option<String>,
    pub reason_code: Option<u64>,
    pub order_id: Option<u64>,
    pub client_order_id: Option<String>,
    pub symbol: Option<String>,
    pub trades: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    pub events: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LedgerRow {
    pub seq: u64,
    pub log_index: u64,
    pub ts: u64,
    pub account: u64,
    pub asset: String,
    pub total: u64,
    pub available: u64,
    pub delta: i64,
    pub cause: String,
}

/// An account's current balances in an asset (`balances`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BalanceRow {
    pub account: u64,
    pub asset: String,
    pub total: u64,
    pub available: u64,
    /// The event sequence of the last `balance` event (a hold included).
    pub seq: u64,
}

/// A `u64` column (see [`crate::db::stored`]).
fn u(value: &Val) -> Result<u64, StoreError> {
    value.int().map(crate::db::loaded)
}

fn opt_u(value: &Val) -> Result<Option<u64>, StoreError> {
    Ok(value.opt_int()?.map(crate::db::loaded))
}

/// An id to look up: stored as the writer stored it, whatever its size.
fn id(value: u64) -> Val {
    Val::Int(crate::db::stored(value))
}

/// A bound as a parameter; beyond `i64::MAX` means "no bound".
fn bound(value: u64) -> Val {
    Val::Int(i64::try_from(value).unwrap_or(i64::MAX))
}

fn opt_account(account: Option<u64>) -> Val {
    account.map_or(Val::Null, id)
}

fn order_row(row: &[Val]) -> Result<OrderRow, StoreError> {
    Ok(OrderRow {
        order_id: u(&row[0])?,
        account: u(&row[1])?,
        client_order_id: row[2].text()?,
        symbol: row[3].text()?,
        side: row[4].text()?,
        order_type: row[5].text()?,
        price: opt_u(&row[6])?,
        qty: u(&row[7])?,
        filled_qty: u(&row[8])?,
        status: row[9].text()?,
        tif: row[10].text()?,
        created_ts: u(&row[11])?,
        updated_ts: u(&row[12])?,
        stop_price: opt_u(&row[13])?,
        trailing_amount: opt_u(&row[14])?,
        trailing_bps: opt_u(&row[15])?,
        display_qty: opt_u(&row[16])?,
        funds: opt_u(&row[17])?,
        expire_ts: opt_u(&row[18])?,
        oco_with: row[19].opt_text()?,
        triggered_ts: opt_u(&row[20])?,
        triggered_price: opt_u(&row[21])?,
    })
}

fn fill_row(row: &[Val]) -> Result<FillRow, StoreError> {
    Ok(FillRow {
        trade_id: u(&row[0])?,
        order_id: u(&row[1])?,
        account: u(&row[2])?,
        symbol: row[3].text()?,
        side: row[4].text()?,
        price: u(&row[5])?,
        qty: u(&row[6])?,
        notional: u(&row[7])?,
        fee: row[8].int()?,
        liquidity: row[9].text()?,
        ts: u(&row[10])?,
    })
}

macro_rules! order_select {
    ($rest:literal) => {
        concat!(
            "SELECT order_id, account, client_order_id, symbol, side, order_type, price, qty, filled_qty, status, tif, created_ts, updated_ts, \
             stop_price, trailing_amount, trailing_bps, display_qty, funds, expire_ts, oco_with, triggered_ts, triggered_price FROM orders ",
            $rest
        )
    };
}

macro_rules! fill_select {
    ($rest:literal) => {
        concat!(
            "SELECT trade_id, order_id, account, symbol, side, price, qty, notional, fee, liquidity, ts FROM fills ",
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
        let rows = self.conn.query(
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
        )?;
        rows.iter().map(|r| order_row(r)).collect()
    }

    pub fn order(&mut self, order_id: u64) -> Result<Option<OrderRow>, StoreError> {
        let rows = self
            .conn
            .query(order_select!("WHERE order_id = ?"), &[id(order_id)])?;
        rows.first().map(|r| order_row(r)).transpose()
    }

    /// An account's most recent fills, newest first.
    pub fn recent_fills(
        &mut self,
        account: u64,
        symbol: Option<&str>,
        limit: u64,
    ) -> Result<Vec<FillRow>, StoreError> {
        let rows = self.conn.query(
            fill_select!(
                "WHERE account = ? AND (CAST(? AS TEXT) IS NULL OR symbol = ?) \
                 ORDER BY trade_id DESC, liquidity DESC LIMIT ?"
            ),
            &[id(account), symbol.into(), symbol.into(), bound(limit)],
        )?;
        rows.iter().map(|r| fill_row(r)).collect()
    }

    /// Fills in `[from, to)`, of one account or all, oldest first.
    pub fn fills(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<FillRow>, StoreError> {
        let rows = self.conn.query(
            fill_select!(
                "WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) AND ts >= ? AND ts < ? \
                 ORDER BY trade_id, liquidity"
            ),
            &[
                opt_account(account),
                opt_account(account),
                bound(from),
                bound(to),
            ],
        )?;
        rows.iter().map(|r| fill_row(r)).collect()
    }

    /// Trades in `[from, to)`, of one instrument or all, oldest first.
    pub fn trades(
        &mut self,
        symbol: Option<&str>,
        from: u64,
        to: u64,
    ) -> Result<Vec<TradeRow>, StoreError> {
        let rows = self.conn.query(
            "SELECT trade_id, ts, symbol, price, qty, notional, aggressor_side, maker_order_id, taker_order_id, \
             maker_account, taker_account, maker_fee, taker_fee, auction FROM trades \
             WHERE (CAST(? AS TEXT) IS NULL OR symbol = ?) AND ts >= ? AND ts < ? ORDER BY trade_id",
            &[symbol.into(), symbol.into(), bound(from), bound(to)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(TradeRow {
                    trade_id: u(&r[0])?,
                    ts: u(&r[1])?,
                    symbol: r[2].text()?,
                    price: u(&r[3])?,
                    qty: u(&r[4])?,
                    notional: u(&r[5])?,
                    aggressor_side: r[6].text()?,
                    maker_order_id: u(&r[7])?,
                    taker_order_id: u(&r[8])?,
                    maker_account: u(&r[9])?,
                    taker_account: u(&r[10])?,
                    maker_fee: r[11].int()?,
                    taker_fee: r[12].int()?,
                    auction: r[13].opt_text()?,
                })
            })
            .collect()
    }

    /// Candles of `interval_ns` (aligned to the epoch) starting in
    /// `[start, end)`, newest first, at most `limit`.
    pub fn candles(
        &mut self,
        symbol: &str,
        interval_ns: u64,
        start: u64,
        end: u64,
        limit: u64,
    ) -> Result<Vec<CandleRow>, StoreError> {
        if interval_ns == 0 {
            return Ok(Vec::new());
        }
        // Trades whose candle starts in [start, end): round the bounds.
        let from = start.div_ceil(interval_ns).saturating_mul(interval_ns);
        let to = end.div_ceil(interval_ns).saturating_mul(interval_ns);
        let rows = self.conn.query(
            "SELECT g.bucket, o.price, g.high, g.low, c.price, g.volume, g.n, g.notional FROM \
             (SELECT (ts / ?) * ? AS bucket, MIN(trade_id) AS first_id, MAX(trade_id) AS last_id, \
              MAX(price) AS high, MIN(price) AS low, CAST(SUM(qty) AS BIGINT) AS volume, COUNT(*) AS n, \
              CAST(SUM(notional) AS BIGINT) AS notional \
              FROM trades WHERE symbol = ? AND ts >= ? AND ts < ? GROUP BY bucket) g \
             JOIN trades o ON o.trade_id = g.first_id JOIN trades c ON c.trade_id = g.last_id \
             ORDER BY g.bucket DESC LIMIT ?",
            &[
                bound(interval_ns),
                bound(interval_ns),
                symbol.into(),
                bound(from),
                bound(to),
                bound(limit),
            ],
        )?;
        rows.iter()
            .map(|r| {
                Ok(CandleRow {
                    start: u(&r[0])?,
                    open: u(&r[1])?,
                    high: u(&r[2])?,
                    low: u(&r[3])?,
                    close: u(&r[4])?,
                    volume: u(&r[5])?,
                    trades: u(&r[6])?,
                    notional: u(&r[7])?,
                })
            })
            .collect()
    }

    /// Per instrument and UTC day in `[from, to)`: OHLCV, trade count and
    /// notional, by day then symbol.
    pub fn instrument_days(
        &mut self,
        from: u64,
        to: u64,
    ) -> Result<Vec<InstrumentDay>, StoreError> {
        let rows = self.conn.query(
            "SELECT g.day, g.symbol, o.price, g.high, g.low, c.price, g.volume, g.n, g.notional FROM \
             (SELECT (ts / ?) * ? AS day, symbol, MIN(trade_id) AS first_id, MAX(trade_id) AS last_id, \
              MAX(price) AS high, MIN(price) AS low, CAST(SUM(qty) AS BIGINT) AS volume, COUNT(*) AS n, \
              CAST(SUM(notional) AS BIGINT) AS notional \
              FROM trades WHERE ts >= ? AND ts < ? GROUP BY day, symbol) g \
             JOIN trades o ON o.trade_id = g.first_id JOIN trades c ON c.trade_id = g.last_id \
             ORDER BY g.day, g.symbol",
            &[
                bound(DAY_NS),
                bound(DAY_NS),
                bound(from),
                bound(to),
            ],
        )?;
        rows.iter()
            .map(|r| {
                Ok(InstrumentDay {
                    day: u(&r[0])?,
                    symbol: r[1].text()?,
                    open: u(&r[2])?,
                    high: u(&r[3])?,
                    low: u(&r[4])?,
                    close: u(&r[5])?,
                    volume: u(&r[6])?,
                    trades: u(&r[7])?,
                    notional: u(&r[8])?,
                })
            })
            .collect()
    }

    /// Per account, instrument and UTC day in `[from, to)`: fills, volume,
    /// notional and fees paid, by day, account, symbol.
    pub fn account_days(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<AccountDay>, StoreError> {
        let rows = self.conn.query(
            "SELECT (ts / ?) * ? AS day, account, symbol, COUNT(*), CAST(SUM(qty) AS BIGINT), \
             CAST(SUM(notional) AS BIGINT), CAST(SUM(fee) AS BIGINT) FROM fills \
             WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) AND ts >= ? AND ts < ? \
             GROUP BY day, account, symbol ORDER BY day, account, symbol",
            &[
                bound(DAY_NS),
                bound(DAY_NS),
                opt_account(account),
                opt_account(account),
                bound(from),
                bound(to),
            ],
        )?;
        rows.iter()
            .map(|r| {
                Ok(AccountDay {
                    day: u(&r[0])?,
                    account: u(&r[1])?,
                    symbol: r[2].text()?,
                    fills: u(&r[3])?,
                    volume: u(&r[4])?,
                    notional: u(&r[5])?,
                    fees: r[6].int()?,
                })
            })
            .collect()
    }

    /// Audit rows for entries timestamped in `[from, to)`, in log order.
    pub fn audit(&mut self, from: u64, to: u64) -> Result<Vec<AuditRow>, StoreError> {
        let rows = self.conn.query(
            "SELECT log_index, ts, command, account, outcome, reason, reason_code, order_id, client_order_id, \
             symbol, trades, first_seq, last_seq, events FROM audit WHERE ts >= ? AND ts < ? ORDER BY log_index",
            &[bound(from), bound(to)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(AuditRow {
                    log_index: u(&r[0])?,
                    ts: u(&r[1])?,
                    command: r[2].text()?,
                    account: opt_u(&r[3])?,
                    outcome: r[4].text()?,
                    reason: r[5].opt_text()?,
                    reason_code: opt_u(&r[6])?,
                    order_id: opt_u(&r[7])?,
                    client_order_id: r[8].opt_text()?,
                    symbol: r[9].opt_text()?,
                    trades: u(&r[10])?,
                    first_seq: opt_u(&r[11])?,
                    last_seq: opt_u(&r[12])?,
                    events: u(&r[13])?,
                })
            })
            .collect()
    }

    /// Changes of a total (deposits, withdrawals, trades, fees; not
    /// holds) in `[from, to)`, of one account or all, in order.
    pub fn ledger(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        let rows = self.conn.query(
            "SELECT seq, log_index, ts, account, asset, total, available, delta, cause FROM ledger \
             WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) AND ts >= ? AND ts < ? ORDER BY seq",
            &[opt_account(account), opt_account(account), bound(from), bound(to)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(LedgerRow {
                    seq: u(&r[0])?,
                    log_index: u(&r[1])?,
                    ts: u(&r[2])?,
                    account: u(&r[3])?,
                    asset: r[4].text()?,
                    total: u(&r[5])?,
                    available: u(&r[6])?,
                    delta: r[7].int()?,
                    cause: r[8].text()?,
                })
            })
            .collect()
    }

    /// Current balances, of one account or all, by account and asset.
    pub fn balances(&mut self, account: Option<u64>) -> Result<Vec<BalanceRow>, StoreError> {
        let rows = self.conn.query(
            "SELECT account, asset, total, available, seq FROM balances \
             WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) ORDER BY account, asset",
            &[opt_account(account), opt_account(account)],
        )?;
        rows.iter()
            .map(|r| {
                Ok(BalanceRow {
                    account: u(&r[0])?,
                    asset: r[1].text()?,
                    total: u(&r[2])?,
                    available: u(&r[3])?,
                    seq: u(&r[4])?,
                })
            })
            .collect()
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
        let rows = self.conn.query(
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
        )?;
        rows.iter().map(|r| order_row(r)).collect()
    }

    /// Every order, by id (for comparing two stores).
    pub fn all_orders(&mut self) -> Result<Vec<OrderRow>, StoreError> {
        let rows = self.conn.query(order_select!("ORDER BY order_id"), &[])?;
        rows.iter().map(|r| order_row(r)).collect()
    }

    /// Everything the store holds, in a fixed order: two stores that saw
    /// the same entries dump equal, whatever their backends and batches.
    pub fn dump(&mut self) -> Result<Dump, StoreError> {
        Ok(Dump {
            position: self.refresh_position()?,
            trades: self.trades(None, 0, u64::MAX)?,
            fills: self.fills(None, 0, u64::MAX)?,
            orders: self.all_orders()?,
            audit: self.audit(0, u64::MAX)?,
            ledger: self.ledger(None, 0, u64::MAX)?,
            balances: self.balances(None)?,
        })
    }
}

/// Every row of a store (see [`Store::dump`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dump {
    pub position: crate::Position,
    pub trades: Vec<TradeRow>,
    pub fills: Vec<FillRow>,
    pub orders: Vec<OrderRow>,
    pub audit: Vec<AuditRow>,
    pub ledger: Vec<LedgerRow>,
    pub balances: Vec<BalanceRow>,
}
