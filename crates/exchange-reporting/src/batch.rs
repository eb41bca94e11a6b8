//! A batch's rows, collected while its entries are read and written at
//! its end in the same transaction.
//!
//! The rows are typed ([`crate::rows`]) and bind without copying.
//!
//! The two backends get different statement shapes, each the cheaper one
//! for it:
//! - SQLite runs one cached single-row statement per row. A multi-row
//!   `INSERT` (or an upsert) can fail after changing some rows, so SQLite
//!   gives it a statement journal, copying every page it touches before
//!   changing it; a single-row statement never needs one, and a cached
//!   statement costs no parsing. Calls are in-process, so one per row is
//!   cheap: measured, 64-row `INSERT OR FAIL`s (which need no statement
//!   journal either) were no faster. A row binds only the values that
//!   differ from the previous row's ([`SqliteRows`]).
//! - PostgreSQL gets few statements, since every statement is a round
//!   trip: the append-only rows by binary `COPY` (or, a few, by multi-row
//!   `INSERT`s of 64, 32, ... 1 rows), the kept rows' updates by an upsert
//!   of the whole rows staged by `COPY` ([`postgres_upsert`]).
//!
//! Orders and balances are not upserted: the writer knows whether a row is
//! already in the store ([`Kept::stored`]), so a new one is inserted once
//! with its state at the end of the batch and a stored one has only its
//! changing columns updated.

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;

use crate::db::{pg_prepare, Conn, Param};
use crate::rows::{NewAudit, NewFill, NewLedger, NewTrade};
use crate::StoreError;

/// A table the writer inserts into.
pub(crate) struct Table {
    pub name: &'static str,
    pub columns: &'static [&'static str],
}

/// A row the writer inserts.
pub(crate) trait Row {
    const TABLE: Table;
    /// The row's values, in [`Row::TABLE`]'s column order.
    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>);
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
    /// The changing columns, then the key.
    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>);
    /// PostgreSQL: the primary key's columns (the upsert's conflict
    /// target) and the columns a stored row's update sets.
    const KEY: &'static str;
    const CHANGING: &'static [&'static str];
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
            let mut rows = SqliteRows::new(&mut statement);
            for row in stored {
                rows.execute(|params| row.update_params(params))?;
            }
            Ok(())
        }
        Conn::Postgres { .. } => postgres_upsert(conn, &stored),
    }
}

/// PostgreSQL: stored kept rows, whole, by an upsert on their primary key:
/// staged by binary `COPY` into a temporary table of the same columns,
/// then `INSERT ... SELECT ... ON CONFLICT DO UPDATE` (a few go by
/// multi-row `INSERT ... VALUES ... ON CONFLICT`).
///
/// Not `UPDATE ... FROM (VALUES ...)`: that is a join the planner plans,
/// and a prepared statement keeps the plan it made while the table was
/// small, a hash join over a sequential scan of the whole table, which
/// made every batch slower than the one before (measured: orders of a
/// 300,000-entry flow written at 5,000 entries/s, falling). An upsert's
/// conflict check always goes through the primary key's index.
fn postgres_upsert<K: Kept>(conn: &mut Conn, rows: &[&K]) -> Result<(), StoreError> {
    let table = K::TABLE;
    let changing = K::CHANGING
        .iter()
        .map(|c| format!("{c} = EXCLUDED.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let on_conflict = format!("ON CONFLICT ({}) DO UPDATE SET {changing}", K::KEY);
    if rows.len() < COPY_FROM {
        return postgres_chunks(
            conn,
            rows,
            |n| format!("{} {on_conflict}", insert_sql(&table, n)),
            |row, params| row.params(params),
        );
    }
    let stage = format!("{}_stage", table.name);
    // Per session, emptied at every commit; created in the first batch
    // that needs it (again after a rollback took its creation back).
    conn.script(&format!(
        "CREATE TEMPORARY TABLE IF NOT EXISTS {stage} (LIKE {}) ON COMMIT DELETE ROWS",
        table.name
    ))?;
    copy_in(conn, &stage, rows)?;
    let columns = table.columns.join(", ");
    conn.exec(
        &format!(
            "INSERT INTO {} ({columns}) SELECT {columns} FROM {stage} {on_conflict}",
            table.name
        ),
        &[],
    )?;
    Ok(())
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
            let mut statement = SqliteRows::new(&mut statement);
            for row in rows {
                statement.execute(|params| row.params(params))?;
            }
            Ok(())
        }
        Conn::Postgres { .. } if rows.len() >= COPY_FROM => copy_in(conn, R::TABLE.name, rows),
        Conn::Postgres { .. } => postgres_chunks(
            conn,
            rows,
            |n| insert_sql(&R::TABLE, n),
            |row, params| row.params(params),
        ),
    }
}

/// SQLite: one single-row statement run once per row, binding only the
/// values that differ from the previous row's. SQLite keeps a statement's
/// bindings from one run to the next, and binding costs: text is copied
/// into memory SQLite allocates (and frees at the next binding), and most
/// text columns repeat from row to row (symbol, side, status, command,
/// outcome...): measured, text bindings were a tenth of the writer's
/// instructions. The statement cache clears the bindings when the statement
/// goes back to it, so the first row of each use binds everything.
struct SqliteRows<'s, 'c, 'p> {
    statement: &'s mut rusqlite::CachedStatement<'c>,
    /// This row's values, then the previous row's (as bound).
    params: Vec<Param<'p>>,
    bound: Vec<Param<'p>>,
}

impl<'s, 'c, 'p> SqliteRows<'s, 'c, 'p> {
    fn new(statement: &'s mut rusqlite::CachedStatement<'c>) -> Self {
        let count = statement.parameter_count();
        SqliteRows {
            statement,
            params: Vec::with_capacity(count),
            bound: Vec::with_capacity(count),
        }
    }

    /// Runs the statement with the values `row` gives.
    fn execute(&mut self, row: impl FnOnce(&mut Vec<Param<'p>>)) -> Result<(), StoreError> {
        self.params.clear();
        row(&mut self.params);
        let count = self.statement.parameter_count();
        if self.params.len() != count {
            // A value left unbound would silently be NULL.
            return Err(StoreError::Schema(format!(
                "{} values for a statement of {count}",
                self.params.len()
            )));
        }
        for (i, value) in self.params.iter().enumerate() {
            if self.bound.get(i) != Some(value) {
                self.statement.raw_bind_parameter(i + 1, value)?;
            }
        }
        self.statement.raw_execute()?;
        std::mem::swap(&mut self.params, &mut self.bound);
        Ok(())
    }
}

/// From this many rows on, PostgreSQL gets them by binary `COPY`: rows
/// stream in one statement, and the server stores them without running an
/// `INSERT` (parameters, executor) per row: measured, about 30% less of
/// its CPU per entry than 64-row `INSERT`s. Fewer rows go by `INSERT`,
/// which takes one round trip where `COPY` takes two.
pub(crate) const COPY_FROM: usize = 16;

/// PostgreSQL: `rows` by binary `COPY` into `table` (theirs, or a
/// staging table of the same columns).
fn copy_in<R: Row>(conn: &mut Conn, table: &str, rows: &[R]) -> Result<(), StoreError> {
    let Conn::Postgres { client, prepared } = conn else {
        return Err(StoreError::Schema(
            "a PostgreSQL statement on SQLite".into(),
        ));
    };
    let columns = R::TABLE.columns.join(", ");
    // Binary values must be of the columns' exact types: as the server
    // describes them (prepared once).
    let probe = pg_prepare(
        client,
        prepared,
        &format!("SELECT {columns} FROM {table} LIMIT 0"),
    )?;
    let types: Vec<Type> = probe.columns().iter().map(|c| c.type_().clone()).collect();
    let sink = client.copy_in(&format!(
        "COPY {table} ({columns}) FROM STDIN (FORMAT binary)"
    ))?;
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    let mut params = Vec::with_capacity(types.len());
    for row in rows {
        params.clear();
        row.params(&mut params);
        // The writer panics on a count that differs; dropping it instead
        // aborts the copy, and with it the transaction.
        if params.len() != types.len() {
            return Err(StoreError::Schema(format!(
                "{} values for the {} columns of {table}",
                params.len(),
                types.len()
            )));
        }
        writer.write_raw(params.iter())?;
    }
    writer.finish()?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::SqliteRows;
    use crate::db::Param;

    /// Values repeated from the row before are not bound again, and every
    /// row still reads back as written, whatever changes between rows (a
    /// value, its type, NULL).
    #[test]
    fn sqlite_rows_bind_only_what_changed_and_store_every_value() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        conn.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY, a, b, c)")
            .expect("table");
        let rows: Vec<[Param<'_>; 4]> = vec![
            [Param::Int(1), Param::Text("x"), Param::Int(5), Param::Null],
            [Param::Int(2), Param::Text("x"), Param::Int(5), Param::Null],
            [
                Param::Int(3),
                Param::Text("y"),
                Param::Null,
                Param::Text("z"),
            ],
            [Param::Int(4), Param::Int(7), Param::Null, Param::Text("z")],
            [Param::Int(5), Param::Text("7"), Param::Int(5), Param::Null],
        ];
        let mut statement = conn
            .prepare_cached("INSERT INTO t (n, a, b, c) VALUES (?, ?, ?, ?)")
            .expect("prepare");
        let mut writer = SqliteRows::new(&mut statement);
        for row in &rows {
            writer.execute(|params| params.extend(row)).expect("insert");
        }
        let too_few = writer.execute(|params| params.push(Param::Int(6)));
        assert!(too_few.is_err(), "{too_few:?}");
        drop(writer);
        drop(statement);

        let mut read = conn
            .prepare("SELECT n, a, b, c FROM t ORDER BY n")
            .expect("select");
        let stored: Vec<Vec<rusqlite::types::Value>> = read
            .query_map([], |r| (0..4).map(|i| r.get(i)).collect())
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        use rusqlite::types::Value::{Integer, Null, Text};
        let text = |s: &str| Text(s.to_string());
        assert_eq!(
            stored,
            vec![
                vec![Integer(1), text("x"), Integer(5), Null],
                vec![Integer(2), text("x"), Integer(5), Null],
                vec![Integer(3), text("y"), Null, text("z")],
                vec![Integer(4), Integer(7), Null, text("z")],
                vec![Integer(5), text("7"), Integer(5), Null],
            ]
        );
    }
}
