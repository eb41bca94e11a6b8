//! Entries the store cannot write: recorded in `dead_letters` with the
//! error and skipped, in one transaction that also moves the position past
//! them, so one bad entry never holds up the record of those after it.

use crate::db::Val;
use crate::writer::{int, EntryRecord};
use crate::{Position, Store, StoreError};

/// An entry the store skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub log_index: u64,
    pub ts: u64,
    pub command: String,
    pub error: String,
}

impl StoreError {
    /// The entry itself cannot be written, whatever the store's health: a
    /// value out of range or refused by a constraint. Anything else (the
    /// connection, the disk, a lock) may pass and is retried.
    pub fn is_entry_error(&self) -> bool {
        match self {
            StoreError::OutOfRange(_) => true,
            StoreError::Sqlite(error) => {
                matches!(
                    error,
                    rusqlite::Error::ToSqlConversionFailure(_)
                        | rusqlite::Error::IntegralValueOutOfRange(..)
                ) || error.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
            }
            // SQLSTATE classes 22 (data exception) and 23 (integrity).
            StoreError::Postgres(error) => error
                .code()
                .is_some_and(|code| matches!(&code.code()[..2], "22" | "23")),
            _ => false,
        }
    }
}

impl Store {
    /// Records `entry`, the next one after the position, as not written
    /// because of `error`, and moves the position past it.
    pub fn dead_letter(
        &mut self,
        entry: &EntryRecord<'_>,
        error: &str,
    ) -> Result<Position, StoreError> {
        let position = self.position;
        if entry.index != position.log_index + 1 {
            return Err(StoreError::Gap {
                position: position.log_index,
                got: entry.index,
            });
        }
        let next = Position {
            log_index: entry.index,
            event_seq: entry
                .events
                .last()
                .map_or(position.event_seq, |e| e.seq.max(position.event_seq)),
        };
        // The caches may hold what a failed transaction left half done.
        self.writer.clear();
        self.conn.script("BEGIN")?;
        let result = self.record_dead_letter(entry, error, next);
        match result.and_then(|()| self.conn.script("COMMIT")) {
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

    fn record_dead_letter(
        &mut self,
        entry: &EntryRecord<'_>,
        error: &str,
        next: Position,
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO dead_letters (log_index, ts, command, error) VALUES (?, ?, ?, ?)",
            &[
                Val::Int(int(entry.index, "log index")?),
                Val::Int(int(entry.ts, "timestamp")?),
                entry.command.into(),
                error.into(),
            ],
        )?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'log_index'",
            &[Val::Int(int(next.log_index, "log index")?)],
        )?;
        self.conn.exec(
            "UPDATE report_meta SET value = ? WHERE name = 'event_seq'",
            &[Val::Int(int(next.event_seq, "event sequence")?)],
        )?;
        Ok(())
    }

    /// Every entry skipped, oldest first.
    pub fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StoreError> {
        self.conn.rows(
            "SELECT log_index, ts, command, error FROM dead_letters ORDER BY log_index",
            &[],
            |row| {
                Ok(DeadLetter {
                    log_index: row.u64("log_index")?,
                    ts: row.u64("ts")?,
                    command: row.text("command")?,
                    error: row.text("error")?,
                })
            },
        )
    }

    /// How many entries were skipped.
    pub fn dead_letter_count(&mut self) -> Result<u64, StoreError> {
        let count = self.conn.row(
            "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM dead_letters",
            &[],
            |row| row.u64("n"),
        )?;
        Ok(count.unwrap_or(0))
    }

    /// The timestamp of the entry at the store's position, from its audit
    /// row (or its dead letter); `None` for an empty store or a position
    /// moved past entries this store never had ([`Store::skip_to`]).
    pub fn position_ts(&mut self) -> Result<Option<u64>, StoreError> {
        let index = Val::Int(crate::db::stored(self.position().log_index));
        for sql in [
            "SELECT ts FROM audit WHERE log_index = ?",
            "SELECT ts FROM dead_letters WHERE log_index = ?",
        ] {
            if let Some(ts) = self
                .conn
                .row(sql, std::slice::from_ref(&index), |row| row.u64("ts"))?
            {
                return Ok(Some(ts));
            }
        }
        Ok(None)
    }
}
