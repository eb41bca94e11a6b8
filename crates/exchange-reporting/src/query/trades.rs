//! Trades, each side's fills, and candles built from the trades.

use serde::Serialize;

use super::{bound, id, opt_account, span};
use crate::record::Record;
use crate::{Store, StoreError};

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

impl FillRow {
    pub(crate) fn read(row: &dyn Record) -> Result<FillRow, StoreError> {
        Ok(FillRow {
            trade_id: row.u64("trade_id")?,
            order_id: row.u64("order_id")?,
            account: row.u64("account")?,
            symbol: row.text("symbol")?,
            side: row.text("side")?,
            price: row.u64("price")?,
            qty: row.u64("qty")?,
            notional: row.u64("notional")?,
            fee: row.i64("fee")?,
            liquidity: row.text("liquidity")?,
            ts: row.u64("ts")?,
        })
    }
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

impl TradeRow {
    pub(crate) fn read(row: &dyn Record) -> Result<TradeRow, StoreError> {
        Ok(TradeRow {
            trade_id: row.u64("trade_id")?,
            ts: row.u64("ts")?,
            symbol: row.text("symbol")?,
            price: row.u64("price")?,
            qty: row.u64("qty")?,
            notional: row.u64("notional")?,
            aggressor_side: row.text("aggressor_side")?,
            maker_order_id: row.u64("maker_order_id")?,
            taker_order_id: row.u64("taker_order_id")?,
            maker_account: row.u64("maker_account")?,
            taker_account: row.u64("taker_account")?,
            maker_fee: row.i64("maker_fee")?,
            taker_fee: row.i64("taker_fee")?,
            auction: row.opt_text("auction")?,
        })
    }
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

impl CandleRow {
    pub(crate) fn read(row: &dyn Record) -> Result<CandleRow, StoreError> {
        Ok(CandleRow {
            start: row.u64("start")?,
            open: row.u64("open")?,
            high: row.u64("high")?,
            low: row.u64("low")?,
            close: row.u64("close")?,
            volume: row.u64("volume")?,
            trades: row.u64("trades")?,
            notional: row.u64("notional")?,
        })
    }
}

macro_rules! fill_select {
    ($rest:literal) => {
        concat!(
            "SELECT trade_id, order_id, account, symbol, side, price, qty, notional, fee, \
             liquidity, ts FROM fills ",
            $rest
        )
    };
}

impl Store {
    /// An account's most recent fills, newest first.
    pub fn recent_fills(
        &mut self,
        account: u64,
        symbol: Option<&str>,
        limit: u64,
    ) -> Result<Vec<FillRow>, StoreError> {
        self.conn.rows(
            fill_select!(
                "WHERE account = ? AND (CAST(? AS TEXT) IS NULL OR symbol = ?) \
                 ORDER BY trade_id DESC, liquidity DESC LIMIT ?"
            ),
            &[id(account), symbol.into(), symbol.into(), bound(limit)],
            FillRow::read,
        )
    }

    /// Fills in `[from, to)`, of one account or all, oldest first.
    pub fn fills(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<FillRow>, StoreError> {
        let [first, end] = self.key_span(span::FILLS, from, to)?;
        self.conn.rows(
            fill_select!(
                "WHERE trade_id >= ? AND trade_id < ? \
                 AND (CAST(? AS BIGINT) IS NULL OR account = ?) \
                 AND ts >= ? AND ts < ? ORDER BY trade_id, liquidity"
            ),
            &[
                first,
                end,
                opt_account(account),
                opt_account(account),
                bound(from),
                bound(to),
            ],
            FillRow::read,
        )
    }

    /// Trades in `[from, to)`, of one instrument or all, oldest first.
    pub fn trades(
        &mut self,
        symbol: Option<&str>,
        from: u64,
        to: u64,
    ) -> Result<Vec<TradeRow>, StoreError> {
        let [first, end] = self.key_span(span::TRADES, from, to)?;
        self.conn.rows(
            "SELECT trade_id, ts, symbol, price, qty, notional, aggressor_side, maker_order_id, \
             taker_order_id, maker_account, taker_account, maker_fee, taker_fee, auction \
             FROM trades WHERE trade_id >= ? AND trade_id < ? \
             AND (CAST(? AS TEXT) IS NULL OR symbol = ?) AND ts >= ? AND ts < ? \
             ORDER BY trade_id",
            &[
                first,
                end,
                symbol.into(),
                symbol.into(),
                bound(from),
                bound(to),
            ],
            TradeRow::read,
        )
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
        self.conn.rows(
            "SELECT g.bucket AS start, o.price AS open, g.high AS high, g.low AS low, \
             c.price AS close, g.volume AS volume, g.n AS trades, g.notional AS notional FROM \
             (SELECT (ts / ?) * ? AS bucket, MIN(trade_id) AS first_id, MAX(trade_id) AS last_id, \
              MAX(price) AS high, MIN(price) AS low, CAST(SUM(qty) AS BIGINT) AS volume, \
              COUNT(*) AS n, \
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
            CandleRow::read,
        )
    }
}
