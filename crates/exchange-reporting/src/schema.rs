//! The schema and its migrations, applied in order when a store is opened.
//!
//! `report_meta` holds the schema version and the position; a migration
//! runs in the same transaction as the version bump, so a store is always
//! at exactly one version. New migrations go at the end of [`MIGRATIONS`];
//! a released one is never edited.

use crate::db::{Conn, Val};
use crate::StoreError;

const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "
    CREATE TABLE orders (
        order_id BIGINT PRIMARY KEY,
        account BIGINT NOT NULL,
        client_order_id TEXT NOT NULL,
        symbol TEXT NOT NULL,
        side TEXT NOT NULL,
        order_type TEXT NOT NULL,
        price BIGINT,
        qty BIGINT NOT NULL,
        filled_qty BIGINT NOT NULL,
        status TEXT NOT NULL,
        tif TEXT NOT NULL,
        created_ts BIGINT NOT NULL,
        updated_ts BIGINT NOT NULL,
        log_index BIGINT NOT NULL
    );
    CREATE INDEX orders_by_account ON orders (account, order_id);
    CREATE TABLE trades (
        trade_id BIGINT PRIMARY KEY,
        seq BIGINT NOT NULL UNIQUE,
        log_index BIGINT NOT NULL,
        ts BIGINT NOT NULL,
        symbol TEXT NOT NULL,
        price BIGINT NOT NULL,
        qty BIGINT NOT NULL,
        notional BIGINT NOT NULL,
        aggressor_side TEXT NOT NULL,
        maker_order_id BIGINT NOT NULL,
        taker_order_id BIGINT NOT NULL,
        maker_account BIGINT NOT NULL,
        taker_account BIGINT NOT NULL,
        maker_fee BIGINT NOT NULL,
        taker_fee BIGINT NOT NULL
    );
    CREATE INDEX trades_by_symbol ON trades (symbol, ts);
    CREATE INDEX trades_by_time ON trades (ts);
    CREATE TABLE fills (
        trade_id BIGINT NOT NULL,
        liquidity TEXT NOT NULL,
        order_id BIGINT NOT NULL,
        account BIGINT NOT NULL,
        symbol TEXT NOT NULL,
        side TEXT NOT NULL,
        price BIGINT NOT NULL,
        qty BIGINT NOT NULL,
        notional BIGINT NOT NULL,
        fee BIGINT NOT NULL,
        ts BIGINT NOT NULL,
        PRIMARY KEY (trade_id, liquidity)
    );
    CREATE INDEX fills_by_account ON fills (account, trade_id);
    CREATE INDEX fills_by_time ON fills (ts);
    CREATE TABLE ledger (
        seq BIGINT PRIMARY KEY,
        log_index BIGINT NOT NULL,
        ts BIGINT NOT NULL,
        account BIGINT NOT NULL,
        asset TEXT NOT NULL,
        total BIGINT NOT NULL,
        available BIGINT NOT NULL,
        delta BIGINT NOT NULL,
        cause TEXT NOT NULL
    );
    CREATE INDEX ledger_by_account ON ledger (account, asset, seq);
    CREATE TABLE audit (
        log_index BIGINT PRIMARY KEY,
        ts BIGINT NOT NULL,
        command TEXT NOT NULL,
        account BIGINT,
        outcome TEXT NOT NULL,
        reason TEXT,
        reason_code BIGINT,
        order_id BIGINT,
        client_order_id TEXT,
        symbol TEXT,
        trades BIGINT NOT NULL,
        first_seq BIGINT,
        last_seq BIGINT,
        events BIGINT NOT NULL
    );
    CREATE INDEX audit_by_time ON audit (ts);
    ",
];

pub fn migrate(conn: &mut Conn) -> Result<(), StoreError> {
    conn.script(
        "CREATE TABLE IF NOT EXISTS report_meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
    )?;
    let version = current_version(conn)?;
    if version > MIGRATIONS.len() as i64 {
        return Err(StoreError::Schema(format!(
            "the store is at schema version {version}, newer than this binary ({})",
            MIGRATIONS.len()
        )));
    }
    for (number, script) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let number = number as i64 + 1;
        conn.script("BEGIN")?;
        let result = apply(conn, script, number);
        match result {
            Ok(()) => conn.script("COMMIT")?,
            Err(error) => {
                let _ = conn.script("ROLLBACK");
                // Two processes opening a new store at once: the other one
                // migrated first, which is as good.
                if current_version(conn)? >= number {
                    continue;
                }
                return Err(error);
            }
        }
    }
    Ok(())
}

fn apply(conn: &mut Conn, script: &str, number: i64) -> Result<(), StoreError> {
    conn.script(script)?;
    if number == 1 {
        conn.exec(
            "INSERT INTO report_meta (name, value) VALUES ('log_index', 0), ('event_seq', 0), ('schema_version', 0)",
            &[],
        )?;
    }
    conn.exec(
        "UPDATE report_meta SET value = ? WHERE name = 'schema_version'",
        &[Val::Int(number)],
    )?;
    Ok(())
}

fn current_version(conn: &mut Conn) -> Result<i64, StoreError> {
    let rows = conn.query(
        "SELECT value FROM report_meta WHERE name = 'schema_version'",
        &[],
    )?;
    rows.first().map_or(Ok(0), |row| row[0].int())
}
