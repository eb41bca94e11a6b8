//! Reads: what the REST history endpoints and `exchange report` ask, one
//! module per kind of record. Each row type decodes itself by column
//! name ([`crate::record::Record`]).
//!
//! Time ranges are half-open, `[from, to)`, in nanoseconds since the Unix
//! epoch; amounts are 1e-8 units as stored. Optional filters are written
//! `CAST(? AS ...) IS NULL OR column = ?` so each query is one static,
//! portable statement.

mod days;
mod ledger;
mod orders;
mod span;
mod trades;

pub use days::{AccountDay, InstrumentDay};
pub use ledger::{AuditRow, BalanceRow, LedgerRow};
pub use orders::{OrderFilter, OrderRow};
pub use trades::{CandleRow, FillRow, TradeRow};

use crate::db::Val;
use crate::{Store, StoreError};

const DAY_NS: u64 = 86_400 * 1_000_000_000;

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

impl Store {
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
