//! The reporting store: the full record of what the exchange did — orders,
//! fills and trades, a balance ledger, and an audit row for every command
//! with its outcome — in SQLite (the default, a file in the data
//! directory) or PostgreSQL.
//!
//! Invariants:
//! - Rows are only ever derived from committed log entries, in log order,
//!   by [`Store::write`]; a batch of entries is one transaction.
//! - The position (last log index and last event sequence written) is
//!   updated in the same transaction as the rows it covers, so after a
//!   crash the store is exactly at some entry boundary and resumes after
//!   it: no entry is written twice, none is skipped ([`Store::write`]
//!   refuses a gap).
//! - Every integer is a `BIGINT` (amounts in 1e-8 units, times in
//!   nanoseconds since the Unix epoch), so both backends agree exactly.

mod batch;
mod db;
mod dead_letter;
pub mod query;
mod record;
pub mod report;
mod rows;
mod schema;
pub mod testing;
pub mod time;
mod writeback;
mod writer;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use db::Val;
pub use dead_letter::DeadLetter;
pub use query::{
    AccountDay, AuditRow, BalanceRow, CandleRow, Dump, FillRow, InstrumentDay, LedgerRow,
    OrderFilter, OrderRow, TradeRow,
};
pub use record::ColumnError;
pub use writer::EntryRecord;

use db::Conn;

/// File name of the SQLite store inside the data directory.
pub const SQLITE_FILE: &str = "reporting.sqlite";

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] postgres::Error),
    #[error("reading the reporting store: {0}")]
    Column(#[from] ColumnError),
    #[error("reporting store schema: {0}")]
    Schema(String),
    #[error("reporting URL {0:?} is neither postgres://... nor sqlite:PATH")]
    BadUrl(String),
    #[error(
        "log entry {got} does not follow the store's position {position}: entries are missing"
    )]
    Gap { position: u64, got: u64 },
    #[error(
        "the reporting store is at log entry {store} but the journal ends at {journal}: \
         it holds another exchange's record (point --reporting-url elsewhere)"
    )]
    Ahead { store: u64, journal: u64 },
    #[error("value out of range for the store: {0}")]
    OutOfRange(&'static str),
    #[error("writing the store's {file} file back to the disk: {source}")]
    Writeback {
        file: String,
        source: std::io::Error,
    },
    #[error("injected failure at row or flush step {0} (test failpoint)")]
    Failpoint(usize),
}

/// Where the store lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Target {
    /// `url` when given (`postgres://...`, `postgresql://...` or
    /// `sqlite:PATH`), else the SQLite file in `data_dir`.
    pub fn resolve(url: Option<&str>, data_dir: &Path) -> Result<Target, StoreError> {
        match url.map(str::trim).filter(|u| !u.is_empty()) {
            None => Ok(Target::Sqlite(data_dir.join(SQLITE_FILE))),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Target::Postgres(url.to_string()))
            }
            Some(url) => match url.strip_prefix("sqlite:") {
                Some(path) if !path.is_empty() => Ok(Target::Sqlite(PathBuf::from(path))),
                _ => Err(StoreError::BadUrl(url.to_string())),
            },
        }
    }

    /// For logs: the SQLite path, or the PostgreSQL URL without its
    /// password (and without its parameters, which may hold one).
    pub fn describe(&self) -> String {
        match self {
            Target::Sqlite(path) => format!("sqlite:{}", path.display()),
            Target::Postgres(url) => {
                let url = url.split('?').next().unwrap_or_default();
                match (url.find("://"), url.rfind('@')) {
                    (Some(scheme), Some(at)) if at > scheme => {
                        let credentials = &url[scheme + 3..at];
                        let user = credentials.split(':').next().unwrap_or("");
                        format!("{}{user}{}", &url[..scheme + 3], &url[at..])
                    }
                    _ => url.to_string(),
                }
            }
        }
    }
}

/// How far the store has got: the last log entry written and the last
/// event sequence number among the entries written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub log_index: u64,
    pub event_seq: u64,
}

/// One connection to the store.
pub struct Store {
    conn: Conn,
    position: Position,
    writer: writer::WriterCache,
    /// Test failpoint: fail the next write after this many row writes, in
    /// the middle of its transaction.
    fail_after_rows: Option<usize>,
    /// Test failpoint: fail the next write at this step of its flush (see
    /// [`Store::fail_in_flush`]).
    fail_in_flush: Option<usize>,
    /// The connection has been set up for writing (see [`Store::write`]).
    writing: bool,
    /// SQLite only: the writer's own checkpoints (see [`writeback`]).
    writeback: Option<writeback::Writeback>,
}

impl Store {
    /// Connects, creating or migrating the schema.
    pub fn open(target: &Target) -> Result<Store, StoreError> {
        Store::open_at(target, schema::LATEST)
    }

    /// Connects to a store another process has created and migrated (it
    /// writes it), creating and changing nothing: an error if there is no
    /// store yet, or not at this binary's schema.
    pub fn open_existing(target: &Target) -> Result<Store, StoreError> {
        if let Target::Sqlite(path) = target {
            if !path.exists() {
                return Err(StoreError::Schema(format!(
                    "no reporting store at {} yet",
                    path.display()
                )));
            }
        }
        let mut store = Store::connect(target)?;
        schema::check_latest(&mut store.conn)?;
        store.position = store.read_position()?;
        Ok(store)
    }

    /// Connects, migrating the schema up to `version` (only tests ask for
    /// an older one).
    fn open_at(target: &Target, version: usize) -> Result<Store, StoreError> {
        let mut store = Store::connect(target)?;
        schema::migrate(&mut store.conn, version)?;
        store.position = store.read_position()?;
        Ok(store)
    }

    fn connect(target: &Target) -> Result<Store, StoreError> {
        let conn = match target {
            Target::Sqlite(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        StoreError::Schema(format!("cannot create {}: {e}", parent.display()))
                    })?;
                }
                let conn = rusqlite::Connection::open(path)?;
                // WAL: readers (the REST handlers, `exchange report`) never
                // block the writer. NORMAL sync is enough: a transaction
                // lost to a power cut takes its position with it, and the
                // reporter derives those entries again from the journal.
                conn.busy_timeout(std::time::Duration::from_secs(10))?;
                // Every statement the writer and the queries use stays
                // prepared.
                conn.set_prepared_statement_cache_capacity(64);
                conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")?;
                Conn::Sqlite(conn)
            }
            Target::Postgres(url) => {
                let client = postgres::Client::connect(url, postgres::NoTls)?;
                Conn::Postgres {
                    client: Box::new(client),
                    prepared: Default::default(),
                }
            }
        };
        let writeback = match target {
            Target::Sqlite(path) => Some(writeback::Writeback::new(path)),
            Target::Postgres(_) => None,
        };
        Ok(Store {
            conn,
            position: Position::default(),
            writer: Default::default(),
            fail_after_rows: None,
            fail_in_flush: None,
            writing: false,
            writeback,
        })
    }

    pub fn is_postgres(&self) -> bool {
        self.conn.is_postgres()
    }

    /// The position as of the last commit (of this connection or, after
    /// [`Store::refresh_position`], of any).
    pub fn position(&self) -> Position {
        self.position
    }

    /// Reads the position committed by whichever connection wrote last.
    pub fn refresh_position(&mut self) -> Result<Position, StoreError> {
        self.position = self.read_position()?;
        Ok(self.position)
    }

    fn read_position(&mut self) -> Result<Position, StoreError> {
        let rows = self.conn.rows(
            "SELECT name, value FROM report_meta WHERE name IN ('log_index', 'event_seq')",
            &[],
            |row| Ok((row.text("name")?, row.i64("value")?)),
        )?;
        let mut position = Position::default();
        for (name, value) in rows {
            let value = u64::try_from(value).map_err(|_| StoreError::OutOfRange("position"))?;
            match name.as_str() {
                "log_index" => position.log_index = value,
                _ => position.event_seq = value,
            }
        }
        Ok(position)
    }

    /// Test failpoint: the next [`Store::write`] fails after `rows` row
    /// writes, inside its transaction, as a crash between two row writes
    /// would leave it.
    pub fn fail_after_rows(&mut self, rows: usize) {
        self.fail_after_rows = Some(rows);
    }

    /// Test failpoint: the next [`Store::write`] fails at `step` of the
    /// end of its transaction, after the statements before it ran: 1 after
    /// the orders, 2 after the balances, 3 after the appended rows (trades,
    /// fills, ledger, audit), 4 after the position's log index.
    pub fn fail_in_flush(&mut self, step: usize) {
        self.fail_in_flush = Some(step);
    }
}

#[cfg(test)]
mod bulk_tests;
#[cfg(test)]
mod extreme_tests;
#[cfg(test)]
mod ledger_tests;
#[cfg(test)]
mod migration_tests;
#[cfg(test)]
mod order_types_tests;
#[cfg(test)]
mod record_tests;
#[cfg(test)]
mod span_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod writeback_tests;
