//! Daily summaries (UTC days): per instrument, and per account and
//! instrument.

use serde::Serialize;

use super::{bound, opt_account, span, DAY_NS};
use crate::record::Record;
use crate::{Store, StoreError};

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

impl InstrumentDay {
    pub(crate) fn read(row: &dyn Record) -> Result<InstrumentDay, StoreError> {
        Ok(InstrumentDay {
            day: row.u64("day")?,
            symbol: row.text("symbol")?,
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

impl AccountDay {
    pub(crate) fn read(row: &dyn Record) -> Result<AccountDay, StoreError> {
        Ok(AccountDay {
            day: row.u64("day")?,
            account: row.u64("account")?,
            symbol: row.text("symbol")?,
            fills: row.u64("fills")?,
            volume: row.u64("volume")?,
            notional: row.u64("notional")?,
            fees: row.i64("fees")?,
        })
    }
}

impl Store {
    /// Per instrument and UTC day in `[from, to)`: OHLCV, trade count and
    /// notional, by day then symbol.
    pub fn instrument_days(
        &mut self,
        from: u64,
        to: u64,
    ) -> Result<Vec<InstrumentDay>, StoreError> {
        let [first, end] = self.key_span(span::TRADES, from, to)?;
        self.conn.rows(
            "SELECT g.day AS day, g.symbol AS symbol, o.price AS open, g.high AS high, \
             g.low AS low, c.price AS close, g.volume AS volume, g.n AS trades, \
             g.notional AS notional FROM \
             (SELECT (ts / ?) * ? AS day, symbol, MIN(trade_id) AS first_id, \
              MAX(trade_id) AS last_id, MAX(price) AS high, MIN(price) AS low, \
              CAST(SUM(qty) AS BIGINT) AS volume, COUNT(*) AS n, \
              CAST(SUM(notional) AS BIGINT) AS notional \
              FROM trades WHERE trade_id >= ? AND trade_id < ? AND ts >= ? AND ts < ? \
              GROUP BY day, symbol) g \
             JOIN trades o ON o.trade_id = g.first_id JOIN trades c ON c.trade_id = g.last_id \
             ORDER BY g.day, g.symbol",
            &[
                bound(DAY_NS),
                bound(DAY_NS),
                first,
                end,
                bound(from),
                bound(to),
            ],
            InstrumentDay::read,
        )
    }

    /// Per account, instrument and UTC day in `[from, to)`: fills, volume,
    /// notional and fees paid, by day, account, symbol.
    pub fn account_days(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<AccountDay>, StoreError> {
        let [first, end] = self.key_span(span::FILLS, from, to)?;
        self.conn.rows(
            "SELECT (ts / ?) * ? AS day, account, symbol, COUNT(*) AS fills, \
             CAST(SUM(qty) AS BIGINT) AS volume, CAST(SUM(notional) AS BIGINT) AS notional, \
             CAST(SUM(fee) AS BIGINT) AS fees FROM fills \
             WHERE trade_id >= ? AND trade_id < ? AND (CAST(? AS BIGINT) IS NULL OR account = ?) \
             AND ts >= ? AND ts < ? \
             GROUP BY day, account, symbol ORDER BY day, account, symbol",
            &[
                bound(DAY_NS),
                bound(DAY_NS),
                first,
                end,
                opt_account(account),
                opt_account(account),
                bound(from),
                bound(to),
            ],
            AccountDay::read,
        )
    }
}
