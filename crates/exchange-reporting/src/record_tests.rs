//! Rows are decoded by column name on both backends: a statement that
//! selects its columns in another order, or more of them, decodes to the
//! same values, and a column that is missing, doubled, NULL or of another
//! type is an error naming it.

use crate::batch::Row;
use crate::db::Conn;
use crate::query::{AuditRow, BalanceRow, FillRow, LedgerRow, OrderRow, TradeRow};
use crate::record::{ColumnError, Record};
use crate::rows::{
    CachedBalance, CachedOrder, NewAudit, NewFill, NewLedger, NewTrade, ORDER_COLUMNS,
};
use crate::tests::{on_both, workload, write_in_batches};
use crate::{Store, StoreError};

/// A `SELECT` of `columns` (the writer's, a few more than a query reads),
/// last first.
fn reversed(columns: &[&str], table: &str, order: &str) -> String {
    let mut columns = columns.to_vec();
    columns.reverse();
    format!(
        "SELECT {} FROM {table} ORDER BY {order}",
        columns.join(", ")
    )
}

fn read_all<T>(
    conn: &mut Conn,
    sql: &str,
    decode: fn(&dyn Record) -> Result<T, StoreError>,
) -> Vec<T> {
    conn.rows(sql, &[], decode).expect(sql)
}

#[test]
fn rows_decode_the_same_whatever_the_order_and_number_of_columns() {
    on_both("rows_decode_by_name", |target| {
        let (entries, _) = workload(300);
        let mut store = Store::open(target).expect("open");
        write_in_batches(&mut store, &entries, 41);
        let dump = store.dump().expect("dump");
        assert!(!dump.trades.is_empty() && !dump.orders.is_empty());
        crate::order_types_tests::assert_hidden_and_min_qty_kept(&entries, &dump);
        let conn = &mut store.conn;

        let sql = reversed(NewTrade::TABLE.columns, "trades", "trade_id");
        assert_eq!(read_all(conn, &sql, TradeRow::read), dump.trades);
        let sql = reversed(NewFill::TABLE.columns, "fills", "trade_id, liquidity");
        assert_eq!(read_all(conn, &sql, FillRow::read), dump.fills);
        let sql = reversed(CachedOrder::TABLE.columns, "orders", "order_id");
        assert_eq!(read_all(conn, &sql, OrderRow::read), dump.orders);
        let sql = reversed(NewAudit::TABLE.columns, "audit", "log_index");
        assert_eq!(read_all(conn, &sql, AuditRow::read), dump.audit);
        let sql = reversed(NewLedger::TABLE.columns, "ledger", "seq");
        assert_eq!(read_all(conn, &sql, LedgerRow::read), dump.ledger);
        let sql = reversed(CachedBalance::TABLE.columns, "balances", "account, asset");
        assert_eq!(read_all(conn, &sql, BalanceRow::read), dump.balances);

        // The writer's own read-back of an order.
        let columns: Vec<&str> = ORDER_COLUMNS.split(',').map(str::trim).collect();
        let forward = format!("SELECT {ORDER_COLUMNS} FROM orders ORDER BY order_id");
        let backward = reversed(&columns, "orders", "order_id");
        let debug = |orders: Vec<CachedOrder>| format!("{orders:?}");
        assert_eq!(
            debug(read_all(conn, &backward, CachedOrder::read)),
            debug(read_all(conn, &forward, CachedOrder::read))
        );
    });
}

/// Reads one column of a row, as a decoder does.
type Read = fn(&dyn Record) -> Result<(), StoreError>;

fn column_error(conn: &mut Conn, sql: &str, read: Read) -> ColumnError {
    match conn.rows(sql, &[], read) {
        Err(StoreError::Column(error)) => error,
        other => panic!("{sql}: expected a column error, got {other:?}"),
    }
}

#[test]
fn a_column_that_cannot_be_read_as_asked_is_named() {
    on_both("a_column_is_named", |target| {
        let mut store = Store::open(target).expect("open");
        let conn = &mut store.conn;
        let cases: [(&str, Read, ColumnError); 6] = [
            (
                "SELECT CAST(1 AS BIGINT) AS qty",
                |row| row.u64("filled_qty").map(drop),
                ColumnError::Missing {
                    column: "filled_qty".into(),
                },
            ),
            (
                "SELECT CAST(1 AS BIGINT) AS qty, CAST(2 AS BIGINT) AS qty",
                |row| row.u64("qty").map(drop),
                ColumnError::Ambiguous {
                    column: "qty".into(),
                },
            ),
            (
                "SELECT CAST(NULL AS BIGINT) AS price",
                |row| row.u64("price").map(drop),
                ColumnError::Null {
                    column: "price".into(),
                    expected: "an integer",
                },
            ),
            (
                "SELECT CAST('buy' AS TEXT) AS side",
                |row| row.i64("side").map(drop),
                ColumnError::Type {
                    column: "side".into(),
                    expected: "an integer",
                    found: "text".into(),
                },
            ),
            (
                "SELECT CAST(7 AS BIGINT) AS symbol",
                |row| row.text("symbol").map(drop),
                ColumnError::Type {
                    column: "symbol".into(),
                    expected: "text",
                    found: "an integer".into(),
                },
            ),
            (
                "SELECT CAST(2 AS BIGINT) AS hidden",
                |row| row.flag("hidden").map(drop),
                ColumnError::Type {
                    column: "hidden".into(),
                    expected: "0 or 1",
                    found: "2".into(),
                },
            ),
        ];
        for (sql, read, expected) in cases {
            let error = column_error(conn, sql, read);
            assert_eq!(error, expected, "{sql}");
        }
        // A type the store never writes, named by the backend.
        let error = column_error(conn, "SELECT 1.5 AS fee", |row| row.i64("fee").map(drop));
        let ColumnError::Type { column, found, .. } = &error else {
            panic!("expected a type error, got {error:?}");
        };
        assert_eq!(column, "fee");
        assert!(!found.is_empty());
        assert!(error.to_string().contains("\"fee\""), "{error}");
    });
}

#[test]
fn a_u64_column_reads_the_bigint_with_the_same_bits() {
    on_both("a_u64_column_reads_the_same_bits", |target| {
        let mut store = Store::open(target).expect("open");
        let read = |row: &dyn Record| {
            Ok((
                row.u64("top")?,
                row.opt_u64("half")?,
                row.opt_u64("none")?,
                row.i64("top")?,
            ))
        };
        let values = store
            .conn
            .row(
                "SELECT CAST(-1 AS BIGINT) AS top, CAST(? AS BIGINT) AS half, \
                 CAST(NULL AS BIGINT) AS none",
                &[crate::Val::Int(i64::MIN)],
                read,
            )
            .expect("row");
        assert_eq!(values, Some((u64::MAX, Some(1 << 63), None, -1)));
    });
}
