//! The schema and its migrations, applied in order when a store is opened.
//!
//! `report_meta` holds the schema version and the position; a migration
//! runs in the same transaction as the version bump, so a store is always
//! at exactly one version. New migrations go at the end of [`MIGRATIONS`];
//! a released one is never edited. A migration may differ per backend (the
//! tables mean the same on both; only how they are kept differs).

use crate::db::{Conn, Val};
use crate::StoreError;

struct Migration {
    sqlite: &'static str,
    postgres: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        sqlite: V1,
        postgres: V1,
    },
    Migration {
        sqlite: V2_SQLITE,
        postgres: V2_POSTGRES,
    },
    Migration {
        sqlite: V3,
        postgres: V3,
    },
    Migration {
        sqlite: V4,
        postgres: V4,
    },
    Migration {
        sqlite: V5,
        postgres: V5,
    },
    Migration {
        sqlite: V6,
        postgres: V6,
    },
    Migration {
        sqlite: V7,
        postgres: V7,
    },
];

/// 1: the first schema.
const V1: &str = "
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
    ";

/// 2 (SQLite): cheaper writes, same tables, and `balances`: the last
/// ledger row's balances of each account and asset, updated in place. It
/// replaces the ledger's index by account, whose inserts landed all over
/// the index (each dirtying a page of its own per transaction) and which
/// was only read for exactly that (a ledger row's `delta` is the change
/// from the previous total); reports of one account's ledger scan the
/// ledger, as reports by date already did. A `BIGINT PRIMARY KEY` is a
/// separate index beside SQLite's rowid B-tree; an `INTEGER PRIMARY KEY` is
/// the rowid itself, so each row goes into one B-tree fewer (and ids only
/// grow, so rows are appended). `fills` is keyed by its primary key
/// directly (`WITHOUT ROWID`). Indexes end with the rowid or primary key
/// implicitly, so `(account)` orders by `order_id` as `(account, order_id)`
/// did. `trades.seq` loses its unique index (no query uses it; `trade_id`
/// already refuses a duplicate). Tables are rebuilt by copying, so a store
/// with rows keeps them.
const V2_SQLITE: &str = "
    CREATE TABLE orders_v2 (
        order_id INTEGER PRIMARY KEY,
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
    INSERT INTO orders_v2 SELECT order_id, account, client_order_id, symbol, side, order_type,
        price, qty, filled_qty, status, tif, created_ts, updated_ts, log_index FROM orders;
    DROP TABLE orders;
    ALTER TABLE orders_v2 RENAME TO orders;
    CREATE INDEX orders_by_account ON orders (account);

    CREATE TABLE trades_v2 (
        trade_id INTEGER PRIMARY KEY,
        seq BIGINT NOT NULL,
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
    INSERT INTO trades_v2 SELECT trade_id, seq, log_index, ts, symbol, price, qty, notional,
        aggressor_side, maker_order_id, taker_order_id, maker_account, taker_account, maker_fee,
        taker_fee FROM trades;
    DROP TABLE trades;
    ALTER TABLE trades_v2 RENAME TO trades;
    CREATE INDEX trades_by_symbol ON trades (symbol, ts);
    CREATE INDEX trades_by_time ON trades (ts);

    CREATE TABLE fills_v2 (
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
    ) WITHOUT ROWID;
    INSERT INTO fills_v2 SELECT trade_id, liquidity, order_id, account, symbol, side, price, qty,
        notional, fee, ts FROM fills;
    DROP TABLE fills;
    ALTER TABLE fills_v2 RENAME TO fills;
    CREATE INDEX fills_by_account ON fills (account, trade_id);
    CREATE INDEX fills_by_time ON fills (ts);

    CREATE TABLE ledger_v2 (
        seq INTEGER PRIMARY KEY,
        log_index BIGINT NOT NULL,
        ts BIGINT NOT NULL,
        account BIGINT NOT NULL,
        asset TEXT NOT NULL,
        total BIGINT NOT NULL,
        available BIGINT NOT NULL,
        delta BIGINT NOT NULL,
        cause TEXT NOT NULL
    );
    INSERT INTO ledger_v2 SELECT seq, log_index, ts, account, asset, total, available, delta,
        cause FROM ledger;
    DROP TABLE ledger;
    ALTER TABLE ledger_v2 RENAME TO ledger;

    CREATE TABLE balances (
        account BIGINT NOT NULL,
        asset TEXT NOT NULL,
        total BIGINT NOT NULL,
        available BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (account, asset)
    ) WITHOUT ROWID;
    INSERT INTO balances SELECT l.account, l.asset, l.total, l.available, l.seq FROM ledger l
        JOIN (SELECT MAX(seq) AS seq FROM ledger GROUP BY account, asset) m ON l.seq = m.seq;

    CREATE TABLE audit_v2 (
        log_index INTEGER PRIMARY KEY,
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
    INSERT INTO audit_v2 SELECT log_index, ts, command, account, outcome, reason, reason_code,
        order_id, client_order_id, symbol, trades, first_seq, last_seq, events FROM audit;
    DROP TABLE audit;
    ALTER TABLE audit_v2 RENAME TO audit;
    CREATE INDEX audit_by_time ON audit (ts);
    ";

/// 2 (PostgreSQL): a table is always a heap beside its primary key's
/// index there, so the tables stay; the unused unique index on
/// `trades.seq` goes, and `balances` replaces the ledger's index by
/// account as on SQLite.
const V2_POSTGRES: &str = "
    ALTER TABLE trades DROP CONSTRAINT trades_seq_key;
    CREATE TABLE balances (
        account BIGINT NOT NULL,
        asset TEXT NOT NULL,
        total BIGINT NOT NULL,
        available BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (account, asset)
    );
    INSERT INTO balances SELECT l.account, l.asset, l.total, l.available, l.seq FROM ledger l
        JOIN (SELECT MAX(seq) AS seq FROM ledger GROUP BY account, asset) m ON l.seq = m.seq;
    DROP INDEX ledger_by_account;
    ";

/// 3: the ledger lists changes of a total only (deposits, withdrawals,
/// trades, fees), not holds: a `balance` event that only moves
/// `available` (an order placed, canceled or replaced) updates `balances`
/// and gets no ledger row. Same tables; the hold rows an older writer left
/// (exactly those whose `delta` is 0) go, so a migrated store holds what a
/// store written by this version throughout does.
const V3: &str = "DELETE FROM ledger WHERE delta = 0;";

/// 4: the rarer parts of an order and the auction a trade executed in.
/// `orders` gains the stop price, the trailing distance (a price or basis
/// points), the iceberg's display quantity, the funds of a funds-sized
/// market order, a good-till-date order's expire time, the one-cancels-other
/// partner and, for a stop, when it triggered and at which stop price (for a
/// trailing stop, where it had trailed to); `trades` gains `auction`, the
/// kind of auction the trade executed in (`open`, `close`, `volatility`,
/// `reopen`; NULL for continuous trading). Columns are added, NULL for the
/// rows already there, which had none of these (a stop written by an older
/// writer keeps a NULL stop price). `ADD COLUMN` means the same on both
/// backends.
const V4: &str = "
    ALTER TABLE orders ADD COLUMN stop_price BIGINT;
    ALTER TABLE orders ADD COLUMN trailing_amount BIGINT;
    ALTER TABLE orders ADD COLUMN trailing_bps BIGINT;
    ALTER TABLE orders ADD COLUMN display_qty BIGINT;
    ALTER TABLE orders ADD COLUMN funds BIGINT;
    ALTER TABLE orders ADD COLUMN expire_ts BIGINT;
    ALTER TABLE orders ADD COLUMN oco_with TEXT;
    ALTER TABLE orders ADD COLUMN triggered_ts BIGINT;
    ALTER TABLE orders ADD COLUMN triggered_price BIGINT;
    ALTER TABLE trades ADD COLUMN auction TEXT;
    ";

/// 5: `dead_letters`, the entries the store could not write: each was
/// skipped (the position moved past it) so the entries after it are
/// written, and is kept here with the error, for the operator.
const V5: &str = "
    CREATE TABLE dead_letters (
        log_index BIGINT PRIMARY KEY,
        ts BIGINT NOT NULL,
        command TEXT NOT NULL,
        error TEXT NOT NULL
    );
    ";

/// 6: two more facts of an accepted order. `orders.hidden` is 1 for a
/// hidden (non-displayed) order, else 0: an integer like every column, so
/// one statement reads and compares it on both backends; `orders.min_qty`
/// is the minimum acceptable quantity it was entered with, NULL for none.
/// Rows already there get 0 and NULL, as the older writer dropped both:
/// such an order reads back as shown and without a minimum. `ADD COLUMN`
/// with a constant default fills no row on either backend (SQLite keeps
/// the default in the schema, PostgreSQL 11 and later in the catalog).
const V6: &str = "
    ALTER TABLE orders ADD COLUMN hidden BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE orders ADD COLUMN min_qty BIGINT;
    ";

/// 7: no index by time. Trades, fills and audit rows are read by time as
/// a run of their keys (`query::span`), which holds because their `ts`
/// never decreases along the key; the three indexes on `ts` went, and with
/// them a B-tree insert per row (about 12% of the writer's CPU in `bench
/// e2e`'s flow). Trades and fills carry the core's clock, which never ran
/// back; an audit row carried its log entry's time, which could (a new
/// leader's clock behind the old one's), so rows already there take the
/// latest time at or before them, as the writer now writes them.
const V7: &str = "
    DROP INDEX IF EXISTS trades_by_time;
    DROP INDEX IF EXISTS fills_by_time;
    DROP INDEX IF EXISTS audit_by_time;
    UPDATE audit SET ts = m.clock
        FROM (SELECT log_index, MAX(ts) OVER (ORDER BY log_index) AS clock FROM audit) AS m
        WHERE audit.log_index = m.log_index AND audit.ts < m.clock;
    ";

/// The schema version this binary writes.
pub const LATEST: usize = MIGRATIONS.len();

/// Brings the schema up to `target` (a store already past it is left as it
/// is; one past [`LATEST`] is refused).
pub fn migrate(conn: &mut Conn, target: usize) -> Result<(), StoreError> {
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
    let pending = MIGRATIONS.iter().enumerate().take(target);
    for (number, migration) in pending.skip(version as usize) {
        let number = number as i64 + 1;
        let script = if conn.is_postgres() {
            migration.postgres
        } else {
            migration.sqlite
        };
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
            "INSERT INTO report_meta (name, value) VALUES ('log_index', 0), ('event_seq', 0), \
             ('schema_version', 0)",
            &[],
        )?;
    }
    conn.exec(
        "UPDATE report_meta SET value = ? WHERE name = 'schema_version'",
        &[Val::Int(number)],
    )?;
    Ok(())
}

/// Checks, creating and changing nothing, that the store is at the schema
/// this binary writes: for a reader beside the process that migrates it.
pub fn check_latest(conn: &mut Conn) -> Result<(), StoreError> {
    let exists = conn.row(
        "SELECT COUNT(*) AS n FROM report_meta WHERE name = 'schema_version'",
        &[],
        |row| row.i64("n"),
    );
    let version = match exists {
        Ok(Some(n)) if n > 0 => current_version(conn)?,
        _ => 0,
    };
    if version != LATEST as i64 {
        return Err(StoreError::Schema(format!(
            "the store is at schema version {version}, not {LATEST}: its writer has not created \
             or migrated it yet"
        )));
    }
    Ok(())
}

fn current_version(conn: &mut Conn) -> Result<i64, StoreError> {
    let version = conn.row(
        "SELECT value FROM report_meta WHERE name = 'schema_version'",
        &[],
        |row| row.i64("value"),
    )?;
    Ok(version.unwrap_or(0))
}
