//! Rows from committed entries: one transaction per batch of entries, with
//! the position updated inside it.
//!
//! Per event kind: `accepted` creates an order; `trade` adds the trade, its
//! two fills and advances both orders; `canceled`, `replaced`, `expired`
//! and `triggered` change the order; `auction` marks the trades of its
//! symbol that follow it in the entry, up to its volume, with its kind;
//! `balance` updates the account's `balances` row and, when it changes the
//! total (a deposit, withdrawal, trade or fee, not a hold), appends to the
//! ledger. Every entry, whatever it did, gets one audit row. Book, status,
//! phase and instrument events are market data and are not stored here.
//!
//! Rows are collected while the batch is read and written at its end, in
//! the same transaction (see [`crate::batch`] for the statements): the
//! append-only tables' rows, and every order the batch touched in its final
//! state. Open orders and the last balance of each account and asset are
//! cached, so an event never reads the store back; both caches are dropped
//! when a transaction fails, since they may then be ahead of the store.

use std::collections::hash_map::Entry;

use exchange_types::event::{AuctionTrades, Balance};
use exchange_types::{
    order_updates, AccountId, AssetCode, Change, Event, EventKind, OrderState, OrderUpdate, Symbol,
    UNITS_PER_WHOLE,
};

use rustc_hash::FxHashMap;

use crate::batch::{write_kept, Appends};
use crate::db::{Conn, Val};
use crate::rows::{
    CachedBalance, CachedOrder, NewAudit, NewFill, NewLedger, NewTrade, OrderExtra, ORDER_COLUMNS,
};
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

/// What the writer keeps between batches so that an event never reads the
/// store: filled lazily from the store and dropped whenever a transaction
/// fails (it may then be ahead of what was committed).
#[derive(Default)]
pub(crate) struct WriterCache {
    /// Balances as last written (the `balances` table), so each ledger row
    /// carries its change and a hold (no change of the total) is told
    /// from one. Both maps are looked up for almost every event and keyed
    /// by ids the core assigned, so they hash with Fx rather than SipHash
    /// (about 3% of the writer's instructions; no untrusted keys here).
    balances: FxHashMap<(AccountId, AssetCode), CachedBalance>,
    /// Balances the current batch changed (each once).
    touched_balances: Vec<(AccountId, AssetCode)>,
    /// Rows of the open orders (and of those the current batch closed),
    /// so an event changes the row in memory instead of reading it back.
    orders: FxHashMap<u64, CachedOrder>,
    /// Orders the current batch changed (each once: see
    /// [`CachedOrder::dirty`]).
    touched: Vec<u64>,
    /// Auctions of the current entry whose trades are still to come. The
    /// core emits an auction's trades in the same entry right after it,
    /// so this starts empty with every entry.
    auctions: Vec<(Symbol, AuctionTrades)>,
    /// The time of the last audit row written; unknown (read from the
    /// store) after a start or a failed write.
    clock: Option<i64>,
}

impl WriterCache {
    pub(crate) fn clear(&mut self) {
        self.clock = None;
        self.balances.clear();
        self.touched_balances.clear();
        self.orders.clear();
        self.touched.clear();
        self.auctions.clear();
    }

    /// The kind of auction a trade of `qty` in `symbol` executed in, if
    /// one of the entry's auctions still has volume to come.
    fn auction_of(&mut self, symbol: &Symbol, qty: u64) -> Option<&'static str> {
        // An instrument's trades follow its latest auction.
        let (_, tags) = self.auctions.iter_mut().rev().find(|(s, _)| s == symbol)?;
        tags.trade(qty).map(|kind| kind.as_str())
    }
}

/// A `u64` of the log as a column value: every one fits (see
/// [`crate::db::stored`]). Fallible only so the call sites read as the
/// checks they once were; `_what` names the value in the code.
pub(crate) fn int(value: u64, _what: &'static str) -> Result<i64, StoreError> {
    Ok(crate::db::stored(value))
}

/// Quote units a trade of `qty` at `price` moves: within `u64`, as the
/// core's balances are, or the entry is out of range.
pub fn notional(price: u64, qty: u64) -> Result<i64, StoreError> {
    let value = u128::from(price) * u128::from(qty) / u128::from(UNITS_PER_WHOLE);
    u64::try_from(value)
        .map(crate::db::stored)
        .map_err(|_| StoreError::OutOfRange("notional"))
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
        if !self.writing {
            self.prepare_for_writing()?;
        }
        self.conn.script("BEGIN")?;
        let result = self.write_rows(&fresh, position).and_then(|next| {
            self.conn.script("COMMIT")?;
            Ok(next)
        });
        match result {
            Ok(next) => {
                self.position = next;
                self.committed()?;
                Ok(next)
            }
            Err(error) => {
                let _ = self.conn.script("ROLLBACK");
                // The caches may be ahead of what was committed.
                self.writer.clear();
                Err(error)
            }
        }
    }

    /// Settings of the connection that writes (SQLite's are per
    /// connection; readers keep the defaults).
    fn prepare_for_writing(&mut self) -> Result<(), StoreError> {
        if let Conn::Sqlite(sqlite) = &mut self.conn {
            // - A 32 MiB page cache: the writer's pages (the last leaves of
            //   every table and index, the inner pages above them, and the
            //   leaves that rows indexed by account land on, all over those
            //   indexes) stay cached instead of being read back from the
            //   file and spilled to the log mid-transaction. It fills only
            //   as pages are used.
            // - Checkpoints by the writer itself, paced (see
            //   [`crate::writeback`]).
            sqlite.execute_batch("PRAGMA cache_size = -32768;")?;
            if let Some(writeback) = &mut self.writeback {
                writeback.install(sqlite)?;
            }
        }
        self.writing = true;
        Ok(())
    }

    /// After a commit of this writer: its own write-back and checkpoints
    /// (see [`crate::writeback`]).
    fn committed(&mut self) -> Result<(), StoreError> {
        if let (Conn::Sqlite(sqlite), Some(writeback)) = (&self.conn, &mut self.writeback) {
            writeback.committed(sqlite)?;
        }
        Ok(())
    }

    /// The time of the audit row of the highest log index, 0 if none.
    fn last_audit_ts(&mut self) -> Result<i64, StoreError> {
        let ts = self.conn.row(
            "SELECT ts FROM audit ORDER BY log_index DESC LIMIT 1",
            &[],
            |row| row.i64("ts"),
        )?;
        Ok(ts.unwrap_or(0))
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
                &[Val::Int(int(next.log_index, "log index")?)],
            )
            .and_then(|_| {
                self.conn.exec(
                    "UPDATE report_meta SET value = ? WHERE name = 'event_seq'",
                    &[Val::Int(int(next.event_seq, "event sequence")?)],
                )
            })
            .and_then(|_| self.conn.script("COMMIT"));
        match result {
            Ok(()) => {
                self.position = next;
                self.committed()?;
                Ok(next)
            }
            Err(error) => {
                let _ = self.conn.script("ROLLBACK");
                Err(error)
            }
        }
    }

    fn write_rows<'e>(
        &mut self,
        entries: &[&EntryRecord<'e>],
        mut position: Position,
    ) -> Result<Position, StoreError> {
        let mut appends = Appends::with_capacity(entries.len());
        let mut rows = 0usize;
        let mut clock = match self.writer.clock {
            Some(clock) => clock,
            None => self.last_audit_ts()?,
        };
        for entry in entries {
            if entry.index != position.log_index + 1 {
                return Err(StoreError::Gap {
                    position: position.log_index,
                    got: entry.index,
                });
            }
            self.writer.auctions.clear();
            for event in entry.events {
                rows += self.write_event(&mut appends, entry, event)?;
                self.failpoint(rows)?;
            }
            let mut audit = NewAudit::of(entry)?;
            // Audit rows are read by time as a run of log indexes
            // (`query::span`), so their time never runs back: an entry
            // whose log clock did (a new leader's clock behind the old
            // one's) is recorded at the latest time before it, as the core
            // itself keeps its clock.
            clock = clock.max(audit.ts);
            audit.ts = clock;
            appends.audit.push(audit);
            rows += 1;
            self.failpoint(rows)?;
            position.log_index = entry.index;
            if let Some(last) = entry.events.last() {
                position.event_seq = position.event_seq.max(last.seq);
            }
        }
        self.writer.clock = Some(clock);
        self.flush_orders()?;
        self.flush_failpoint(1)?;
        self.flush_balances()?;
        self.flush_failpoint(2)?;
        appends.flush(&mut self.conn)?;
        self.flush_failpoint(3)?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'log_index'",
            &[Val::Int(int(position.log_index, "log index")?)],
        )?;
        self.flush_failpoint(4)?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'event_seq'",
            &[Val::Int(int(position.event_seq, "event sequence")?)],
        )?;
        Ok(position)
    }

    /// Writes every order the batch changed, as the batch leaves it; the
    /// closed ones leave the cache (no event reaches them any more).
    fn flush_orders(&mut self) -> Result<(), StoreError> {
        let cache = &mut self.writer;
        // By id: neighbouring rows share pages.
        cache.touched.sort_unstable();
        cache.touched.dedup();
        let orders: Vec<&CachedOrder> = cache
            .touched
            .iter()
            .filter_map(|id| cache.orders.get(id))
            .collect();
        write_kept(&mut self.conn, &orders)?;
        for id in cache.touched.drain(..) {
            let open = match cache.orders.get_mut(&id) {
                Some(order) => {
                    order.stored = true;
                    order.dirty = false;
                    order.state.is_open()
                }
                None => continue,
            };
            if !open {
                cache.orders.remove(&id);
            }
        }
        Ok(())
    }

    /// Writes every balance the batch changed.
    fn flush_balances(&mut self) -> Result<(), StoreError> {
        let cache = &mut self.writer;
        cache.touched_balances.sort_unstable();
        let balances: Vec<&CachedBalance> = cache
            .touched_balances
            .iter()
            .filter_map(|key| cache.balances.get(key))
            .collect();
        write_kept(&mut self.conn, &balances)?;
        for key in cache.touched_balances.drain(..) {
            if let Some(balance) = cache.balances.get_mut(&key) {
                balance.stored = true;
                balance.dirty = false;
            }
        }
        Ok(())
    }

    fn flush_failpoint(&mut self, step: usize) -> Result<(), StoreError> {
        if self.fail_in_flush == Some(step) {
            self.fail_in_flush = None;
            return Err(StoreError::Failpoint(step));
        }
        Ok(())
    }

    fn failpoint(&mut self, rows: usize) -> Result<(), StoreError> {
        if self.fail_after_rows.is_some_and(|limit| rows >= limit) {
            self.fail_after_rows = None;
            return Err(StoreError::Failpoint(rows));
        }
        Ok(())
    }

    /// Returns the number of rows written or changed.
    fn write_event<'e>(
        &mut self,
        appends: &mut Appends<'e>,
        entry: &EntryRecord<'e>,
        event: &Event,
    ) -> Result<usize, StoreError> {
        let ts = int(event.ts, "timestamp")?;
        let index = int(entry.index, "log index")?;
        let mut rows = 0;
        match &event.kind {
            EventKind::Auction(auction) => {
                let mut tags = AuctionTrades::default();
                tags.start(auction);
                self.writer.auctions.push((auction.symbol, tags));
                return Ok(0);
            }
            EventKind::Trade(trade) => {
                let auction = if self.writer.auctions.is_empty() {
                    None
                } else {
                    self.writer.auction_of(&trade.symbol, trade.qty)
                };
                appends.trades.push(NewTrade {
                    trade_id: int(trade.trade_id, "trade id")?,
                    seq: int(event.seq, "event sequence")?,
                    log_index: index,
                    ts,
                    symbol: trade.symbol,
                    price: int(trade.price, "price")?,
                    qty: int(trade.qty, "quantity")?,
                    notional: notional(trade.price, trade.qty)?,
                    aggressor_side: trade.aggressor_side,
                    maker_order_id: int(trade.maker_order_id, "order id")?,
                    taker_order_id: int(trade.taker_order_id, "order id")?,
                    maker_account: int(trade.maker_account, "account")?,
                    taker_account: int(trade.taker_account, "account")?,
                    maker_fee: trade.maker_fee,
                    taker_fee: trade.taker_fee,
                    auction,
                });
                rows += 1;
            }
            EventKind::Balance(balance) => {
                return self.write_balance(appends, entry, (event.seq, ts, index), balance);
            }
            _ => {}
        }
        for update in order_updates(&event.kind) {
            rows += self.write_order(appends, &update, ts, index)?;
        }
        Ok(rows)
    }

    /// One change to one order: its row (created, or changed as the order
    /// fold says) and, for a fill, the fill's row.
    fn write_order(
        &mut self,
        appends: &mut Appends<'_>,
        update: &OrderUpdate<'_>,
        ts: i64,
        index: i64,
    ) -> Result<usize, StoreError> {
        let mut rows = 1;
        match &update.change {
            Change::New(accepted) => {
                let order = CachedOrder {
                    state: OrderState::new(accepted),
                    created_ts: ts,
                    updated_ts: ts,
                    log_index: index,
                    stored: false,
                    dirty: true,
                    extra: OrderExtra::of(accepted.ext.as_deref()),
                };
                order.check()?;
                // Inserted at the batch's end (an id the store already holds
                // is refused there by the primary key).
                self.writer.orders.insert(update.order_id, order);
                self.writer.touched.push(update.order_id);
                return Ok(rows);
            }
            Change::Fill(fill) => {
                let trade = fill.trade;
                appends.fills.push(NewFill {
                    trade_id: int(trade.trade_id, "trade id")?,
                    liquidity: fill.liquidity.as_str(),
                    order_id: int(update.order_id, "order id")?,
                    account: int(update.account, "account")?,
                    symbol: trade.symbol,
                    side: fill.side,
                    price: int(trade.price, "price")?,
                    qty: int(trade.qty, "quantity")?,
                    notional: notional(trade.price, trade.qty)?,
                    fee: fill.fee,
                    ts,
                });
                rows += 1;
            }
            _ => {}
        }
        if let Some(order) = self.order_mut(update.order_id)? {
            order.state.apply(&update.change);
            if let Change::Triggered(triggered) = &update.change {
                let extra = order.extra.get_or_insert_with(Box::default);
                extra.triggered_ts = Some(ts);
                extra.triggered_price = Some(triggered.stop_price);
            }
            order.updated_ts = ts;
            order.check()?;
        }
        Ok(rows)
    }

    /// A `balance` event: the account's row and, when the total changed,
    /// a ledger row.
    fn write_balance<'e>(
        &mut self,
        appends: &mut Appends<'e>,
        entry: &EntryRecord<'e>,
        (seq, ts, index): (u64, i64, i64),
        event: &Balance,
    ) -> Result<usize, StoreError> {
        let (total, available) = (
            int(event.total, "balance")?,
            int(event.available, "balance")?,
        );
        let seq = int(seq, "event sequence")?;
        let balance = self.balance_mut(event.account, &event.asset)?;
        // Totals are `u64`s as stored (see `crate::db::stored`); their
        // difference is a signed column, which a change of 2^63 units or
        // more cannot fit.
        let delta = i128::from(event.total) - i128::from(crate::db::loaded(balance.total));
        let delta = i64::try_from(delta).map_err(|_| StoreError::OutOfRange("balance change"))?;
        balance.total = total;
        balance.available = available;
        balance.seq = seq;
        if delta == 0 {
            // A hold or its release (an order placed, canceled or
            // replaced): only `available` moved, which `balances` keeps;
            // the ledger lists changes of the total.
            return Ok(1);
        }
        appends.ledger.push(NewLedger {
            seq,
            log_index: index,
            ts,
            account: int(event.account, "account")?,
            asset: event.asset,
            total,
            available,
            delta,
            cause: entry.command,
        });
        Ok(2)
    }

    /// An order's row as this batch leaves it: from the cache, or read
    /// from the store the first time it is touched since the cache was
    /// dropped. Marks it to be written at the batch's end.
    fn order_mut(&mut self, order_id: u64) -> Result<Option<&mut CachedOrder>, StoreError> {
        if !self.writer.orders.contains_key(&order_id) {
            let order = self.conn.row(
                &format!("SELECT {ORDER_COLUMNS} FROM orders WHERE order_id = ?"),
                &[Val::Int(int(order_id, "order id")?)],
                CachedOrder::read,
            )?;
            match order {
                Some(order) => {
                    self.writer.orders.insert(order_id, order);
                }
                None => return Ok(None),
            }
        }
        let Some(order) = self.writer.orders.get_mut(&order_id) else {
            return Ok(None);
        };
        if !order.dirty {
            order.dirty = true;
            self.writer.touched.push(order_id);
        }
        Ok(Some(order))
    }

    /// An account's balances in an asset as the batch has left them so
    /// far, marked to be written at the batch's end.
    fn balance_mut(
        &mut self,
        account: AccountId,
        asset: &AssetCode,
    ) -> Result<&mut CachedBalance, StoreError> {
        let key = (account, *asset);
        let cache = &mut self.writer;
        let balance = match cache.balances.entry(key) {
            Entry::Occupied(cached) => cached.into_mut(),
            Entry::Vacant(vacant) => vacant.insert(load_balance(&mut self.conn, account, asset)?),
        };
        if !balance.dirty {
            balance.dirty = true;
            cache.touched_balances.push(key);
        }
        Ok(balance)
    }
}

/// An account's balances in an asset as the store has them (zero before
/// its first `balance` event).
fn load_balance(
    conn: &mut Conn,
    account: AccountId,
    asset: &AssetCode,
) -> Result<CachedBalance, StoreError> {
    let account = int(account, "account")?;
    let stored = conn.row(
        "SELECT total, available, seq FROM balances WHERE account = ? AND asset = ?",
        &[Val::Int(account), asset.as_str().into()],
        |row| Ok((row.i64("total")?, row.i64("available")?, row.i64("seq")?)),
    )?;
    let ((total, available, seq), stored) = match stored {
        Some(values) => (values, true),
        None => ((0, 0, 0), false),
    };
    Ok(CachedBalance {
        account,
        asset: *asset,
        total,
        available,
        seq,
        stored,
        dirty: false,
    })
}
