//! A batch's rows, collected while its entries are read and written at
//! its end in the same transaction.
//!
//! Rows are plain typed structs (integers, inline ids, static names): none
//! owns heap memory, and binding one borrows its fields ([`Param`]), so a
//! row costs no allocation from the event to the statement.
//!
//! The two backends get different statement shapes, each the cheaper one
//! for it:
//! - SQLite runs one cached single-row statement per row. A multi-row
//!   `INSERT` (or an upsert) can fail after changing some rows, so SQLite
//!   gives it a statement journal, copying every page it touches before
//!   changing it; a single-row statement never needs one, and a cached
//!   statement costs no parsing. Calls are in-process, so one per row is
//!   cheap.
//! - PostgreSQL gets multi-row statements (64, 32, ... 1 rows), since every
//!   statement is a round trip.
//!
//! Orders and balances are not upserted: the writer knows whether a row is
//! already in the store ([`Kept::stored`]), so a new one is inserted once
//! with its state at the end of the batch and a stored one has only its
//! changing columns updated.

use exchange_types::{AssetCode, ClientOrderId, OrderType, Side, Symbol, TimeInForce};

use crate::db::{pg_prepare, Conn, Param};
use crate::StoreError;

/// A table the writer inserts into.
pub(crate) struct Table {
    name: &'static str,
    columns: &'static [&'static str],
}

/// A row the writer inserts.
pub(crate) trait Row {
    const TABLE: Table;
    /// The row's values, in [`Row::TABLE`]'s column order.
    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>);
}

/// The life of an order, as stored in `orders.status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    New,
    PartiallyFilled,
    Filled,
    Canceled,
    Expired,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::PartiallyFilled => "partially_filled",
            Status::Filled => "filled",
            Status::Canceled => "canceled",
            Status::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Result<Status, StoreError> {
        Ok(match text {
            "new" => Status::New,
            "partially_filled" => Status::PartiallyFilled,
            "filled" => Status::Filled,
            "canceled" => Status::Canceled,
            "expired" => Status::Expired,
            other => return Err(bad("status", other)),
        })
    }

    /// Events can still reach the order.
    pub(crate) fn is_open(self) -> bool {
        matches!(self, Status::New | Status::PartiallyFilled)
    }
}

fn bad(column: &str, value: &str) -> StoreError {
    StoreError::Schema(format!("unexpected orders.{column} {value:?}"))
}

/// An order's row as the writer last left it.
#[derive(Clone, Debug)]
pub(crate) struct CachedOrder {
    pub order_id: i64,
    pub account: i64,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub side: Side,
    pub order_type: OrderType,
    pub price: Option<i64>,
    pub qty: i64,
    pub filled_qty: i64,
    pub status: Status,
    pub tif: TimeInForce,
    pub created_ts: i64,
    pub updated_ts: i64,
    pub log_index: i64,
    /// The row is in the store (committed by an earlier batch): it is
    /// updated, not inserted.
    pub stored: bool,
    /// The current batch changed it: it is written at the batch's end.
    pub dirty: bool,
}

/// The columns [`CachedOrder::read`] expects, in order.
pub(crate) const ORDER_COLUMNS: &str = "order_id, account, client_order_id, symbol, side, \
     order_type, price, qty, filled_qty, status, tif, created_ts, updated_ts, log_index";

impl CachedOrder {
    /// An order read back from the store (`SELECT` [`ORDER_COLUMNS`]).
    pub(crate) fn read(row: &[crate::db::Val]) -> Result<CachedOrder, StoreError> {
        let text = |i: usize| row[i].text();
        let side = match text(4)?.as_str() {
            "buy" => Side::Buy,
            "sell" => Side::Sell,
            other => return Err(bad("side", other)),
        };
        let order_type = match text(5)?.as_str() {
            "limit" => OrderType::Limit,
            "market" => OrderType::Market,
            other => return Err(bad("order_type", other)),
        };
        let tif = match text(10)?.as_str() {
            "gtc" => TimeInForce::Gtc,
            "ioc" => TimeInForce::Ioc,
            "fok" => TimeInForce::Fok,
            other => return Err(bad("tif", other)),
        };
        let client_order_id = text(2)?;
        let symbol = text(3)?;
        Ok(CachedOrder {
            order_id: row[0].int()?,
            account: row[1].int()?,
            client_order_id: ClientOrderId::new(&client_order_id)
                .map_err(|_| bad("client_order_id", &client_order_id))?,
            symbol: Symbol::new(&symbol).map_err(|_| bad("symbol", &symbol))?,
            side,
            order_type,
            price: row[6].opt_int()?,
            qty: row[7].int()?,
            filled_qty: row[8].int()?,
            status: Status::parse(&text(9)?)?,
            tif,
            created_ts: row[11].int()?,
            updated_ts: row[12].int()?,
            log_index: row[13].int()?,
            stored: true,
            dirty: false,
        })
    }
}

impl Row for CachedOrder {
    const TABLE: Table = Table {
        name: "orders",
        columns: &[
            "order_id",
            "account",
            "client_order_id",
            "symbol",
            "side",
            "order_type",
            "price",
            "qty",
            "filled_qty",
            "status",
            "tif",
            "created_ts",
            "updated_ts",
            "log_index",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.order_id),
            Param::Int(self.account),
            Param::Text(self.client_order_id.as_str()),
            Param::Text(self.symbol.as_str()),
            Param::Text(self.side.as_str()),
            Param::Text(self.order_type.as_str()),
            self.price.into(),
            Param::Int(self.qty),
            Param::Int(self.filled_qty),
            Param::Text(self.status.as_str()),
            Param::Text(self.tif.as_str()),
            Param::Int(self.created_ts),
            Param::Int(self.updated_ts),
            Param::Int(self.log_index),
        ]);
    }
}

impl Kept for CachedOrder {
    fn stored(&self) -> bool {
        self.stored
    }

    const UPDATE: &'static str = "UPDATE orders SET client_order_id = ?, price = ?, qty = ?, \
         filled_qty = ?, status = ?, updated_ts = ? WHERE order_id = ?";

    fn update_postgres(rows: usize) -> String {
        let row = "(?::TEXT, ?::BIGINT, ?::BIGINT, ?::BIGINT, ?::TEXT, ?::BIGINT, ?::BIGINT)";
        format!(
            "UPDATE orders SET client_order_id = v.client_order_id, price = v.price, qty = v.qty, \
             filled_qty = v.filled_qty, status = v.status, updated_ts = v.updated_ts \
             FROM (VALUES {}) \
             AS v(client_order_id, price, qty, filled_qty, status, updated_ts, order_id) \
             WHERE orders.order_id = v.order_id",
            vec![row; rows].join(", ")
        )
    }

    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Text(self.client_order_id.as_str()),
            self.price.into(),
            Param::Int(self.qty),
            Param::Int(self.filled_qty),
            Param::Text(self.status.as_str()),
            Param::Int(self.updated_ts),
            Param::Int(self.order_id),
        ]);
    }
}

/// The balances of an account and asset as of its last ledger row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CachedBalance {
    pub account: i64,
    pub asset: AssetCode,
    pub total: i64,
    pub available: i64,
    /// The event sequence of that ledger row.
    pub seq: i64,
    /// As [`CachedOrder::stored`].
    pub stored: bool,
    /// As [`CachedOrder::dirty`].
    pub dirty: bool,
}

impl Row for CachedBalance {
    const TABLE: Table = Table {
        name: "balances",
        columns: &["account", "asset", "total", "available", "seq"],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.seq),
        ]);
    }
}

impl Kept for CachedBalance {
    fn stored(&self) -> bool {
        self.stored
    }

    const UPDATE: &'static str =
        "UPDATE balances SET total = ?, available = ?, seq = ? WHERE account = ? AND asset = ?";

    fn update_postgres(rows: usize) -> String {
        let row = "(?::BIGINT, ?::BIGINT, ?::BIGINT, ?::BIGINT, ?::TEXT)";
        format!(
            "UPDATE balances SET total = v.total, available = v.available, seq = v.seq \
             FROM (VALUES {}) AS v(total, available, seq, account, asset) \
             WHERE balances.account = v.account AND balances.asset = v.asset",
            vec![row; rows].join(", ")
        )
    }

    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.seq),
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewTrade {
    pub trade_id: i64,
    pub seq: i64,
    pub log_index: i64,
    pub ts: i64,
    pub symbol: Symbol,
    pub price: i64,
    pub qty: i64,
    pub notional: i64,
    pub aggressor_side: Side,
    pub maker_order_id: i64,
    pub taker_order_id: i64,
    pub maker_account: i64,
    pub taker_account: i64,
    pub maker_fee: i64,
    pub taker_fee: i64,
}

impl Row for NewTrade {
    const TABLE: Table = Table {
        name: "trades",
        columns: &[
            "trade_id",
            "seq",
            "log_index",
            "ts",
            "symbol",
            "price",
            "qty",
            "notional",
            "aggressor_side",
            "maker_order_id",
            "taker_order_id",
            "maker_account",
            "taker_account",
            "maker_fee",
            "taker_fee",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.trade_id),
            Param::Int(self.seq),
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Text(self.symbol.as_str()),
            Param::Int(self.price),
            Param::Int(self.qty),
            Param::Int(self.notional),
            Param::Text(self.aggressor_side.as_str()),
            Param::Int(self.maker_order_id),
            Param::Int(self.taker_order_id),
            Param::Int(self.maker_account),
            Param::Int(self.taker_account),
            Param::Int(self.maker_fee),
            Param::Int(self.taker_fee),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewFill {
    pub trade_id: i64,
    pub liquidity: &'static str,
    pub order_id: i64,
    pub account: i64,
    pub symbol: Symbol,
    pub side: Side,
    pub price: i64,
    pub qty: i64,
    pub notional: i64,
    pub fee: i64,
    pub ts: i64,
}

impl Row for NewFill {
    const TABLE: Table = Table {
        name: "fills",
        columns: &[
            "trade_id",
            "liquidity",
            "order_id",
            "account",
            "symbol",
            "side",
            "price",
            "qty",
            "notional",
            "fee",
            "ts",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.trade_id),
            Param::Text(self.liquidity),
            Param::Int(self.order_id),
            Param::Int(self.account),
            Param::Text(self.symbol.as_str()),
            Param::Text(self.side.as_str()),
            Param::Int(self.price),
            Param::Int(self.qty),
            Param::Int(self.notional),
            Param::Int(self.fee),
            Param::Int(self.ts),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewLedger<'e> {
    pub seq: i64,
    pub log_index: i64,
    pub ts: i64,
    pub account: i64,
    pub asset: AssetCode,
    pub total: i64,
    pub available: i64,
    pub delta: i64,
    pub cause: &'e str,
}

impl Row for NewLedger<'_> {
    const TABLE: Table = Table {
        name: "ledger",
        columns: &[
            "seq",
            "log_index",
            "ts",
            "account",
            "asset",
            "total",
            "available",
            "delta",
            "cause",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.seq),
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.delta),
            Param::Text(self.cause),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewAudit<'e> {
    pub log_index: i64,
    pub ts: i64,
    pub command: &'e str,
    pub account: Option<i64>,
    pub outcome: &'static str,
    pub reason: Option<&'static str>,
    pub reason_code: Option<i64>,
    pub order_id: Option<i64>,
    pub client_order_id: Option<ClientOrderId>,
    pub symbol: Option<Symbol>,
    pub trades: i64,
    pub first_seq: Option<i64>,
    pub last_seq: Option<i64>,
    pub events: i64,
}

impl Row for NewAudit<'_> {
    const TABLE: Table = Table {
        name: "audit",
        columns: &[
            "log_index",
            "ts",
            "command",
            "account",
            "outcome",
            "reason",
            "reason_code",
            "order_id",
            "client_order_id",
            "symbol",
            "trades",
            "first_seq",
            "last_seq",
            "events",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Text(self.command),
            self.account.into(),
            Param::Text(self.outcome),
            self.reason.into(),
            self.reason_code.into(),
            self.order_id.into(),
            self.client_order_id.as_ref().map(|c| c.as_str()).into(),
            self.symbol.as_ref().map(|s| s.as_str()).into(),
            Param::Int(self.trades),
            self.first_seq.into(),
            self.last_seq.into(),
            Param::Int(self.events),
        ]);
    }
}

/// The append-only rows of one batch (`'e`: its entries), inserted at its
/// end in the same transaction.
#[derive(Default)]
pub(crate) struct Appends<'e> {
    pub trades: Vec<NewTrade>,
    pub fills: Vec<NewFill>,
    pub ledger: Vec<NewLedger<'e>>,
    pub audit: Vec<NewAudit<'e>>,
}

impl Appends<'_> {
    pub(crate) fn with_capacity(entries: usize) -> Self {
        Appends {
            trades: Vec::with_capacity(entries),
            fills: Vec::with_capacity(2 * entries),
            ledger: Vec::with_capacity(4 * entries),
            audit: Vec::with_capacity(entries),
        }
    }

    pub(crate) fn flush(&self, conn: &mut Conn) -> Result<(), StoreError> {
        insert(conn, &self.trades)?;
        insert(conn, &self.fills)?;
        insert(conn, &self.ledger)?;
        insert(conn, &self.audit)
    }
}

impl<R: Row> Row for &R {
    const TABLE: Table = R::TABLE;

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        (**self).params(out)
    }
}

/// A row the writer keeps in memory and writes whenever a batch changed
/// it: inserted the first time, then updated.
pub(crate) trait Kept: Row {
    /// Whether the row is already in the store.
    fn stored(&self) -> bool;
    /// SQLite: updates one stored row, with [`Kept::update_params`].
    const UPDATE: &'static str;
    /// PostgreSQL: updates `rows` stored rows, with their
    /// [`Kept::update_params`] one after the other.
    fn update_postgres(rows: usize) -> String;
    /// The changing columns, then the key.
    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>);
}

/// Writes kept rows a batch changed: new ones inserted, stored ones
/// updated.
pub(crate) fn write_kept<K: Kept>(conn: &mut Conn, rows: &[&K]) -> Result<(), StoreError> {
    let (stored, new): (Vec<&K>, Vec<&K>) = rows.iter().partition(|row| row.stored());
    insert(conn, &new)?;
    if stored.is_empty() {
        return Ok(());
    }
    match conn {
        Conn::Sqlite(sqlite) => {
            let mut statement = sqlite.prepare_cached(K::UPDATE)?;
            let mut params = Vec::new();
            for row in stored {
                params.clear();
                row.update_params(&mut params);
                statement.execute(rusqlite::params_from_iter(params.iter()))?;
            }
            Ok(())
        }
        Conn::Postgres { .. } => {
            postgres_chunks(conn, &stored, K::update_postgres, |row, params| {
                row.update_params(params)
            })
        }
    }
}

fn insert_sql(table: &Table, rows: usize) -> String {
    let row = format!("({})", vec!["?"; table.columns.len()].join(", "));
    format!(
        "INSERT INTO {} ({}) VALUES {}",
        table.name,
        table.columns.join(", "),
        vec![row; rows].join(", ")
    )
}

/// Inserts `rows` into their table.
fn insert<R: Row>(conn: &mut Conn, rows: &[R]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    match conn {
        Conn::Sqlite(sqlite) => {
            let mut statement = sqlite.prepare_cached(&insert_sql(&R::TABLE, 1))?;
            let mut params = Vec::with_capacity(R::TABLE.columns.len());
            for row in rows {
                params.clear();
                row.params(&mut params);
                statement.execute(rusqlite::params_from_iter(params.iter()))?;
            }
            Ok(())
        }
        Conn::Postgres { .. } => postgres_chunks(
            conn,
            rows,
            |n| insert_sql(&R::TABLE, n),
            |row, params| row.params(params),
        ),
    }
}

/// Most rows per PostgreSQL statement. Statements of 64, 32, ..., 1 rows
/// cover any count with a few round trips, and only 7 shapes per table
/// stay prepared.
const CHUNK: usize = 64;

/// PostgreSQL: `rows` in as few statements as the chunk sizes allow,
/// `sql(n)` being the statement for `n` rows.
fn postgres_chunks<T>(
    conn: &mut Conn,
    rows: &[T],
    sql: impl Fn(usize) -> String,
    bind: impl for<'a> Fn(&'a T, &mut Vec<Param<'a>>),
) -> Result<(), StoreError> {
    let Conn::Postgres { client, prepared } = conn else {
        return Err(StoreError::Schema(
            "a PostgreSQL statement on SQLite".into(),
        ));
    };
    let mut rest = rows;
    let mut params: Vec<Param<'_>> = Vec::new();
    while !rest.is_empty() {
        let n = if rest.len() >= CHUNK {
            CHUNK
        } else {
            // The largest power of two that fits.
            1 << (usize::BITS - 1 - rest.len().leading_zeros())
        };
        let (chunk, after) = rest.split_at(n);
        rest = after;
        let statement = pg_prepare(client, prepared, &sql(n))?;
        params.clear();
        for row in chunk {
            bind(row, &mut params);
        }
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
            .iter()
            .map(|p| p as &(dyn postgres::types::ToSql + Sync))
            .collect();
        client.execute(&statement, &refs)?;
    }
    Ok(())
}
