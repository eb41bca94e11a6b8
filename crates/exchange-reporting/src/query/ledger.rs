//! The audit trail, the balance ledger and current balances.

use serde::Serialize;

use super::{bound, opt_account, span};
use crate::record::Record;
use crate::{Store, StoreError};

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

impl AuditRow {
    pub(crate) fn read(row: &dyn Record) -> Result<AuditRow, StoreError> {
        Ok(AuditRow {
            log_index: row.u64("log_index")?,
            ts: row.u64("ts")?,
            command: row.text("command")?,
            account: row.opt_u64("account")?,
            outcome: row.text("outcome")?,
            reason: row.opt_text("reason")?,
            reason_code: row.opt_u64("reason_code")?,
            order_id: row.opt_u64("order_id")?,
            client_order_id: row.opt_text("client_order_id")?,
            symbol: row.opt_text("symbol")?,
            trades: row.u64("trades")?,
            first_seq: row.opt_u64("first_seq")?,
            last_seq: row.opt_u64("last_seq")?,
            events: row.u64("events")?,
        })
    }
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

impl LedgerRow {
    pub(crate) fn read(row: &dyn Record) -> Result<LedgerRow, StoreError> {
        Ok(LedgerRow {
            seq: row.u64("seq")?,
            log_index: row.u64("log_index")?,
            ts: row.u64("ts")?,
            account: row.u64("account")?,
            asset: row.text("asset")?,
            total: row.u64("total")?,
            available: row.u64("available")?,
            delta: row.i64("delta")?,
            cause: row.text("cause")?,
        })
    }
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

impl BalanceRow {
    pub(crate) fn read(row: &dyn Record) -> Result<BalanceRow, StoreError> {
        Ok(BalanceRow {
            account: row.u64("account")?,
            asset: row.text("asset")?,
            total: row.u64("total")?,
            available: row.u64("available")?,
            seq: row.u64("seq")?,
        })
    }
}

impl Store {
    /// Audit rows for entries timestamped in `[from, to)`, in log order.
    pub fn audit(&mut self, from: u64, to: u64) -> Result<Vec<AuditRow>, StoreError> {
        let [first, end] = self.key_span(span::AUDIT, from, to)?;
        self.conn.rows(
            "SELECT log_index, ts, command, account, outcome, reason, reason_code, order_id, \
             client_order_id, symbol, trades, first_seq, last_seq, events FROM audit \
             WHERE log_index >= ? AND log_index < ? AND ts >= ? AND ts < ? ORDER BY log_index",
            &[first, end, bound(from), bound(to)],
            AuditRow::read,
        )
    }

    /// Changes of a total (deposits, withdrawals, trades, fees; not
    /// holds) in `[from, to)`, of one account or all, in order.
    pub fn ledger(
        &mut self,
        account: Option<u64>,
        from: u64,
        to: u64,
    ) -> Result<Vec<LedgerRow>, StoreError> {
        self.conn.rows(
            "SELECT seq, log_index, ts, account, asset, total, available, delta, cause FROM ledger \
             WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) AND ts >= ? AND ts < ? ORDER BY seq",
            &[opt_account(account), opt_account(account), bound(from), bound(to)],
            LedgerRow::read,
        )
    }

    /// Current balances, of one account or all, by account and asset.
    pub fn balances(&mut self, account: Option<u64>) -> Result<Vec<BalanceRow>, StoreError> {
        self.conn.rows(
            "SELECT account, asset, total, available, seq FROM balances \
             WHERE (CAST(? AS BIGINT) IS NULL OR account = ?) ORDER BY account, asset",
            &[opt_account(account), opt_account(account)],
            BalanceRow::read,
        )
    }
}
