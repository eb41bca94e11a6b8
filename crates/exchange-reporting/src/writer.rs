//! Rows from committed entries: one transaction per batch of entries, with
//! the position updated inside it.
//!
//! Per event kind: `accepted` creates an order; `trade` adds the trade, its
//! two fills and advances both orders; `canceled`, `replaced` and `expired`
//! change the order; `balance` appends to the ledger. Every entry, whatever
//! it did, gets one audit row. Book, status and instrument events are
//! market data and are not stored here.
//!
//! Rows are collected while the batch is read and written at its end, in
//! the same transaction: the append-only tables with multi-row `INSERT`s,
//! every order the batch touched with one upsert of its final row (open
//! orders are cached, so an event never reads its order back). Either
//! cache is dropped when a transaction fails, since it may then be ahead of
//! the store.

use std::collections::HashMap;

use exchange_types::{AccountId, Event, EventKind, UNITS_PER_WHOLE};

use crate::batch::{CLIENT_ORDER_ID, FILLED, PRICE, QTY, STATUS, UPDATED};
use crate::db::Val;
use crate::{Position, Store, StoreError};

/// One committed log entry and the events applying it produced.
#[derive(Clone, Copy, Debug)]
pub struct EntryRecord<'a> {
    pub index: u64,
    /// The entry's timestamp (ns since the Unix epoch).
    pub ts: u64,
    /// The command's name (`place`, `cancel`, ..., `create_account`).
    pub command: &'a str,
    /// The account that issued it (for `create_account`, the new account).
    pub account: Option<AccountId>,
    pub events: &'a [Event],
}

/// Balances as last written, so each ledger row carries its change
/// without a read; filled lazily from the store and dropped whenever a
/// transaction fails (it may then be ahead of what was committed).
#[derive(Default)]
pub(crate) struct WriterCache {
    totals: HashMap<(AccountId, String), i64>,
    /// Rows of the open orders (and of those the current batch closed),
    /// so an event changes the row in memory instead of reading it back.
    pub(crate) orders: HashMap<u64, Vec<Val>>,
}

impl WriterCache {
    pub(crate) fn clear(&mut self) {
        self.totals.clear();
        self.orders.clear();
    }
}

fn int(value: u64, what: &'static str) -> Result<Val, StoreError> {
    i64::try_from(value)
        .map(Val::Int)
        .map_err(|_| StoreError::OutOfRange(what))
}

fn signed(value: u64, what: &'static str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange(what))
}

/// Quote units a trade of `qty` at `price` moves.
pub fn notional(price: u64, qty: u64) -> Result<i64, StoreError> {
    let value = u128::from(price) * u128::from(qty) / u128::from(UNITS_PER_WHOLE);
    i64::try_from(value).map_err(|_| StoreError::OutOfRange("notional"))
}

impl Store {
    /// Writes the entries after the store's position in one transaction,
    /// moving the position to the last of them. Entries at or before the
    /// position are skipped (they are already in); an entry that does not
    /// follow the position is refused.
    pub fn write(&mut self, entries: &[EntryRecord<'_>]) -> Result<Position, StoreError> {
        let position = self.position;
        let fresh: Vec<&EntryRecord<'_>> = entries
            .iter()
            .filter(|e| e.index > position.log_index)
            .collect();
        if fresh.is_empty() {
            return Ok(position);
        }
        self.conn.script("BEGIN")?;
        let result = self.write_rows(&fresh, position).and_then(|next| {
            self.conn.script("COMMIT")?;
            Ok(next)
        });
        match result {
            Ok(next) => {
                self.position = next;
                Ok(next)
            }
            Err(error) => {
                let _ = self.conn.script("ROLLBACK");
                // The caches may be ahead of what was committed.
                self.writer.clear();
                self.appends.clear();
                Err(error)
            }
        }
    }

    /// Moves the position forward to `log_index` without writing rows: for
    /// a replica whose log begins after what the store holds (it joined a
    /// cluster by snapshot), so entries before it are not on this node.
    /// Never moves backwards.
    pub fn skip_to(&mut self, log_index: u64, event_seq: u64) -> Result<Position, StoreError> {
        let next = Position {
            log_index: log_index.max(self.position.log_index),
            event_seq: event_seq.max(self.position.event_seq),
        };
        self.conn.script("BEGIN")?;
        let result = self
            .conn
            .exec(
                "UPDATE report_meta SET value = ? WHERE name = 'log_index'",
                &[int(next.log_index, "log index")?],
            )
            .and_then(|_| {
                self.conn.exec(
                    "UPDATE report_meta SET value = ? WHERE name = 'event_seq'",
                    &[int(next.event_seq, "event sequence")?],
                )
            })
            .and_then(|_| self.conn.script("COMMIT"));
        match result {
            Ok(()) => {
                self.position = next;
                Ok(next)
            }
            Err(error) => {
                let _ = self.conn.script("ROLLBACK");
                Err(error)
            }
        }
    }

    fn write_rows(
        &mut self,
        entries: &[&EntryRecord<'_>],
        mut position: Position,
    ) -> Result<Position, StoreError> {
        let mut rows = 0usize;
        for entry in entries {
            if entry.index != position.log_index + 1 {
                return Err(StoreError::Gap {
                    position: position.log_index,
                    got: entry.index,
                });
            }
            for event in entry.events {
                rows += self.write_event(entry, event)?;
                self.failpoint(rows)?;
            }
            self.write_audit(entry)?;
            rows += 1;
            self.failpoint(rows)?;
            position.log_index = entry.index;
            if let Some(last) = entry.events.last() {
                position.event_seq = position.event_seq.max(last.seq);
            }
        }
        self.flush_appends()?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'log_index'",
            &[int(position.log_index, "log index")?],
        )?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'event_seq'",
            &[int(position.event_seq, "event sequence")?],
        )?;
        Ok(position)
    }

    fn failpoint(&mut self, rows: usize) -> Result<(), StoreError> {
        if self.fail_after_rows.is_some_and(|limit| rows >= limit) {
            self.fail_after_rows = None;
            return Err(StoreError::Failpoint(rows));
        }
        Ok(())
    }

    /// Returns the number of rows written or changed.
    fn write_event(&mut self, entry: &EntryRecord<'_>, event: &Event) -> Result<usize, StoreError> {
        let ts = int(event.ts, "timestamp")?;
        let index = int(entry.index, "log index")?;
        match &event.kind {
            EventKind::Accepted {
                account,
                client_order_id,
                order_id,
                symbol,
                side,
                order_type,
                price,
                qty,
                tif,
                ..
            } => {
                self.appends.orders.insert(*order_id);
                self.writer.orders.insert(
                    *order_id,
                    vec![
                        int(*order_id, "order id")?,
                        int(*account, "account")?,
                        client_order_id.as_str().into(),
                        symbol.as_str().into(),
                        side.as_str().into(),
                        order_type.as_str().into(),
                        price.map(|p| signed(p, "price")).transpose()?.into(),
                        int(*qty, "quantity")?,
                        Val::Int(0),
                        "new".into(),
                        tif.as_str().into(),
                        ts.clone(),
                        ts,
                        index,
                    ],
                );
                Ok(1)
            }
            EventKind::Trade {
                trade_id,
                symbol,
                price,
                qty,
                maker_order_id,
                taker_order_id,
                maker_account,
                taker_account,
                aggressor_side,
                maker_fee,
                taker_fee,
                maker_leaves_qty,
                taker_leaves_qty,
            } => {
                let notional = notional(*price, *qty)?;
                self.appends.trades.push(vec![
                    int(*trade_id, "trade id")?,
                    int(event.seq, "event sequence")?,
                    index,
                    ts.clone(),
                    symbol.as_str().into(),
                    int(*price, "price")?,
                    int(*qty, "quantity")?,
                    Val::Int(notional),
                    aggressor_side.as_str().into(),
                    int(*maker_order_id, "order id")?,
                    int(*taker_order_id, "order id")?,
                    int(*maker_account, "account")?,
                    int(*taker_account, "account")?,
                    Val::Int(*maker_fee),
                    Val::Int(*taker_fee),
                ]);
                let sides = [
                    (
                        "maker",
                        *maker_order_id,
                        *maker_account,
                        aggressor_side.opposite(),
                        *maker_fee,
                        *maker_leaves_qty,
                    ),
                    (
                        "taker",
                        *taker_order_id,
                        *taker_account,
                        *aggressor_side,
                        *taker_fee,
                        *taker_leaves_qty,
                    ),
                ];
                for (liquidity, order_id, account, side, fee, leaves) in sides {
                    self.appends.fills.push(vec![
                        int(*trade_id, "trade id")?,
                        liquidity.into(),
                        int(order_id, "order id")?,
                        int(account, "account")?,
                        symbol.as_str().into(),
                        side.as_str().into(),
                        int(*price, "price")?,
                        int(*qty, "quantity")?,
                        Val::Int(notional),
                        Val::Int(fee),
                        ts.clone(),
                    ]);
                    let status = if leaves == 0 {
                        "filled"
                    } else {
                        "partially_filled"
                    };
                    if let Some(order) = self.order_mut(order_id)? {
                        order[FILLED] = Val::Int(order[FILLED].int()? + signed(*qty, "quantity")?);
                        order[STATUS] = status.into();
                        order[UPDATED] = ts.clone();
                    }
                }
                Ok(5)
            }
            EventKind::Canceled {
                order_id,
                canceled_qty,
                leaves_qty,
                ..
            } => {
                if *leaves_qty > 0 {
                    // Self-trade prevention shrank a live order; a full
                    // cancel keeps the quantity the client asked for.
                    if let Some(order) = self.order_mut(*order_id)? {
                        let left = order[QTY].int()? - signed(*canceled_qty, "quantity")?;
                        order[QTY] = Val::Int(left.max(0));
                        order[UPDATED] = ts;
                    }
                } else {
                    self.close(*order_id, "canceled", ts)?;
                }
                Ok(1)
            }
            EventKind::Expired { order_id, .. } => {
                self.close(*order_id, "expired", ts)?;
                Ok(1)
            }
            EventKind::Replaced {
                order_id,
                client_order_id,
                price,
                qty,
                leaves_qty,
                ..
            } => {
                if let Some(order) = self.order_mut(*order_id)? {
                    order[CLIENT_ORDER_ID] = client_order_id.as_str().into();
                    order[PRICE] = int(*price, "price")?;
                    order[QTY] = int(*qty, "quantity")?;
                    order[UPDATED] = ts.clone();
                }
                if *leaves_qty == 0 {
                    self.close(*order_id, "filled", ts)?;
                }
                Ok(1)
            }
            EventKind::Balance {
                account,
                asset,
                total,
                available,
            } => {
                let total = signed(*total, "balance")?;
                let previous = self.previous_total(*account, asset.as_str())?;
                self.appends.ledger.push(vec![
                    int(event.seq, "event sequence")?,
                    index,
                    ts,
                    int(*account, "account")?,
                    asset.as_str().into(),
                    Val::Int(total),
                    int(*available, "balance")?,
                    Val::Int(total - previous),
                    entry.command.into(),
                ]);
                self.writer
                    .totals
                    .insert((*account, asset.as_str().to_string()), total);
                Ok(1)
            }
            EventKind::InstrumentAdded { .. }
            | EventKind::Status { .. }
            | EventKind::Rejected { .. }
            | EventKind::Book { .. }
            | EventKind::MassCanceled { .. }
            | EventKind::Error { .. } => Ok(0),
        }
    }

    fn close(&mut self, order_id: u64, status: &'static str, ts: Val) -> Result<(), StoreError> {
        if let Some(order) = self.order_mut(order_id)? {
            order[STATUS] = status.into();
            order[UPDATED] = ts;
        }
        Ok(())
    }

    /// An order's row as this batch leaves it: from the batch, or read
    /// from the store the first time the batch touches it.
    fn order_mut(&mut self, order_id: u64) -> Result<Option<&mut Vec<Val>>, StoreError> {
        if !self.writer.orders.contains_key(&order_id) {
            let rows = self.conn.query(
                "SELECT order_id, account, client_order_id, symbol, side, order_type, price, qty, \
                 filled_qty, status, tif, created_ts, updated_ts, log_index FROM orders WHERE order_id = ?",
                &[int(order_id, "order id")?],
            )?;
            match rows.into_iter().next() {
                Some(row) => {
                    self.writer.orders.insert(order_id, row);
                }
                None => return Ok(None),
            }
        }
        self.appends.orders.insert(order_id);
        Ok(self.writer.orders.get_mut(&order_id))
    }

    fn previous_total(&mut self, account: AccountId, asset: &str) -> Result<i64, StoreError> {
        let key = (account, asset.to_string());
        if let Some(total) = self.writer.totals.get(&key) {
            return Ok(*total);
        }
        let rows = self.conn.query(
            "SELECT total FROM ledger WHERE account = ? AND asset = ? ORDER BY seq DESC LIMIT 1",
            &[int(account, "account")?, asset.into()],
        )?;
        rows.first().map_or(Ok(0), |row| row[0].int())
    }

    fn write_audit(&mut self, entry: &EntryRecord<'_>) -> Result<(), StoreError> {
        let mut outcome = "accepted";
        let (mut reason, mut reason_code) = (None, None);
        let (mut order_id, mut client_order_id, mut symbol) = (None, None, None);
        let mut trades = 0i64;
        for event in entry.events {
            match &event.kind {
                EventKind::Rejected {
                    reason: why,
                    order_id: id,
                    client_order_id: coid,
                    symbol: sym,
                    ..
                } => {
                    outcome = "rejected";
                    reason = Some(why.as_str());
                    reason_code = Some(i64::from(why.code()));
                    order_id = order_id.or(*id);
                    client_order_id = client_order_id.or(coid.map(|c| c.to_string()));
                    symbol = symbol.or(sym.map(|s| s.to_string()));
                }
                EventKind::Accepted {
                    order_id: id,
                    client_order_id: coid,
                    symbol: sym,
                    ..
                }
                | EventKind::Canceled {
                    order_id: id,
                    client_order_id: coid,
                    symbol: sym,
                    ..
                }
                | EventKind::Replaced {
                    order_id: id,
                    client_order_id: coid,
                    symbol: sym,
                    ..
                } if order_id.is_none() => {
                    order_id = Some(*id);
                    client_order_id = Some(coid.to_string());
                    symbol = Some(sym.to_string());
                }
                EventKind::Trade { .. } => trades += 1,
                EventKind::InstrumentAdded { symbol: sym, .. }
                | EventKind::Status { symbol: sym, .. } => {
                    symbol = symbol.or(Some(sym.to_string()));
                }
                EventKind::MassCanceled { symbol: sym, .. } => {
                    symbol = symbol.or(sym.map(|s| s.to_string()));
                }
                _ => {}
            }
        }
        let seq = |event: Option<&Event>| -> Result<Val, StoreError> {
            event
                .map(|e| int(e.seq, "event sequence"))
                .transpose()
                .map(Into::into)
        };
        self.appends.audit.push(vec![
            int(entry.index, "log index")?,
            int(entry.ts, "timestamp")?,
            entry.command.into(),
            entry
                .account
                .map(|a| signed(a, "account"))
                .transpose()?
                .into(),
            outcome.into(),
            reason.into(),
            reason_code.into(),
            order_id.map(|o| signed(o, "order id")).transpose()?.into(),
            client_order_id.into(),
            symbol.into(),
            Val::Int(trades),
            seq(entry.events.first())?,
            seq(entry.events.last())?,
            Val::Int(entry.events.len() as i64),
        ]);
        Ok(())
    }
}
