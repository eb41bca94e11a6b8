//! Time ranges read as key ranges.
//!
//! A trade's and a fill's `ts` is the core's clock, which never runs back,
//! and trade ids rise with it; an audit row's `ts` is kept from running
//! back by the writer (see `Store::write_rows`). So along the key each of
//! those tables' `ts` never decreases, and the rows of `[from, to)` are
//! one run of keys. Its ends are found by bisection, one seek of the key
//! a step (about 2 × log2 of the rows), instead of an index on the time
//! that every insert would pay for.

use super::bound;
use crate::db::Val;
use crate::{Store, StoreError};

/// A table whose `ts` never decreases along `key`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Keyed {
    table: &'static str,
    key: &'static str,
}

pub(super) const AUDIT: Keyed = Keyed {
    table: "audit",
    key: "log_index",
};
pub(super) const TRADES: Keyed = Keyed {
    table: "trades",
    key: "trade_id",
};
pub(super) const FILLS: Keyed = Keyed {
    table: "fills",
    key: "trade_id",
};

impl Store {
    /// The keys of the rows timestamped in `[from, to)`, as the two ends
    /// of a half-open key range.
    pub(super) fn key_span(
        &mut self,
        keyed: Keyed,
        from: u64,
        to: u64,
    ) -> Result<[Val; 2], StoreError> {
        let Keyed { table, key } = keyed;
        let ends = self.conn.row(
            &format!("SELECT MIN({key}) AS first, MAX({key}) AS last FROM {table}"),
            &[],
            |row| Ok((row.opt_i64("first")?, row.opt_i64("last")?)),
        )?;
        let Some((Some(first), Some(last))) = ends else {
            return Ok([Val::Int(0), Val::Int(0)]);
        };
        let end = last.saturating_add(1);
        let start = self.first_at(keyed, first, end, from)?;
        let stop = if to <= from {
            start
        } else {
            self.first_at(keyed, start, end, to)?
        };
        Ok([Val::Int(start), Val::Int(stop)])
    }

    /// The least key `k` in `[lo, end]` whose first row at or after it is
    /// timestamped at or after `at`, or has none: every row keyed below
    /// `k` is before `at`, every row from `k` on is not.
    fn first_at(&mut self, keyed: Keyed, lo: i64, end: i64, at: u64) -> Result<i64, StoreError> {
        let Keyed { table, key } = keyed;
        let probe =
            format!("SELECT {key} AS k, ts FROM {table} WHERE {key} >= ? ORDER BY {key} LIMIT 1");
        let at = bound(at).int()?;
        let (mut lo, mut hi) = (lo, end);
        while lo < hi {
            // The floor of the mean, in `[lo, hi)` whatever the signs.
            let mean = (i128::from(lo) + i128::from(hi)).div_euclid(2);
            let mid = i64::try_from(mean).unwrap_or(lo);
            let found = self.conn.row(&probe, &[Val::Int(mid)], |row| {
                Ok((row.i64("k")?, row.i64("ts")?))
            })?;
            match found {
                // Every row up to this one is before `at`.
                Some((row_key, ts)) if ts < at => lo = row_key.saturating_add(1).min(hi),
                _ => hi = mid,
            }
        }
        Ok(lo)
    }
}
