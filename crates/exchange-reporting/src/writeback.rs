//! How the SQLite store's writes reach the disk without stalling the
//! journal.
//!
//! The journal's `fdatasync` after each group commit is a flush of the
//! disk's cache, and a flush waits for everything written to that disk
//! before it. Left to itself, SQLite keeps its log (`-wal`) dirty in the
//! page cache until a checkpoint, then syncs it (64 MiB at once), copies the
//! pages into the database file and syncs that: tens of MiB pushed to the
//! disk in one go, twice, every few seconds at full load. On a machine
//! where the journal and the store share a disk, every journal flush in
//! the meantime waited for them: 25-70 ms every 3-4 s at 50,000 entries/s
//! (docs/benchmarking.md, "The store's checkpoints and the log's flushes").
//!
//! So the writer paces its own writes:
//! - after every commit it starts the write-back of the log's new pages
//!   (`sync_file_range`, which writes without flushing), so the log
//!   reaches the disk as it grows rather than at the checkpoint;
//! - it checkpoints itself (SQLite's automatic checkpoint is off on its
//!   connection) once the log holds [`CHECKPOINT_PAGES`] pages: it syncs
//!   the log (little is left to write), copies the pages into the database
//!   file with SQLite's own syncs off, writes the database's dirty pages
//!   back [`CHUNK`] at a time, each waited for, and only then syncs it.
//!
//! Durability is what SQLite's `synchronous = NORMAL` gives, which the
//! store relies on (a transaction lost to a power cut takes its position
//! with it): the log is synced before any of its pages are copied, and the
//! database is synced before the log can be restarted, which only this
//! connection's next write transaction does (readers never restart it, and
//! the connection is back at NORMAL before that transaction begins).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use crate::StoreError;

/// Log pages (4 KiB each) after which the writer checkpoints: as many as
/// SQLite's automatic checkpoint was given before. A checkpoint copies each
/// page changed since the last one once, however often it changed, and
/// the index leaves change in almost every transaction, so a larger log
/// costs less CPU per entry.
pub(crate) const CHECKPOINT_PAGES: i32 = 16_384;

/// The database file is written back this much at a time, each part
/// waited for before the next is started, so no flush of the journal finds
/// more than this ahead of it on the disk.
const CHUNK: u64 = 512 * 1024;

/// The writer connection's write-back state.
pub(crate) struct Writeback {
    database: PathBuf,
    /// Installed on the writer's connection, which is in WAL mode.
    active: bool,
    /// Opened on first use: the log file exists only once something was
    /// written.
    files: Option<Files>,
    /// Pages in the log after the last commit, as SQLite's WAL hook reports.
    log_pages: Arc<AtomicI32>,
    /// The log size at which the next checkpoint runs.
    checkpoint_at: i32,
    every: i32,
    /// Checkpoints run so far, and what the last one did.
    pub(crate) checkpoints: u64,
    pub(crate) last: Option<Checkpointed>,
}

struct Files {
    database: File,
    log: File,
}

/// What a checkpoint did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checkpointed {
    /// Pages in the log.
    pub log: i32,
    /// Of them, copied into the database file (all of them unless a reader
    /// still needed older pages).
    pub copied: i32,
}

impl Writeback {
    pub(crate) fn new(database: &Path) -> Writeback {
        Writeback {
            database: database.to_path_buf(),
            active: false,
            files: None,
            log_pages: Arc::new(AtomicI32::new(0)),
            checkpoint_at: CHECKPOINT_PAGES,
            every: CHECKPOINT_PAGES,
            checkpoints: 0,
            last: None,
        }
    }

    /// Takes over checkpoints from SQLite on the writer's connection, if
    /// it is in WAL mode: SQLite stays in its rollback journal where the
    /// file system cannot share the log's index, and then there is no log
    /// to pace and SQLite syncs each commit itself.
    pub(crate) fn install(&mut self, conn: &mut rusqlite::Connection) -> Result<(), StoreError> {
        let mode: String =
            conn.query_row("PRAGMA journal_mode", [], |row| row.get("journal_mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        // The pragma replaces the WAL hook, so it goes first.
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")?;
        let log_pages = Arc::clone(&self.log_pages);
        conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
            log_pages.store(pages, Ordering::Relaxed);
            Ok(())
        }))?;
        self.active = true;
        Ok(())
    }

    /// Tests checkpoint after fewer pages.
    #[cfg(test)]
    pub(crate) fn checkpoint_every(&mut self, pages: i32) {
        self.every = pages;
        self.checkpoint_at = pages;
    }

    /// After each commit: starts writing the log's new pages back, and
    /// checkpoints when the log has grown enough.
    pub(crate) fn committed(&mut self, conn: &rusqlite::Connection) -> Result<(), StoreError> {
        if !self.active {
            return Ok(());
        }
        let files = match &mut self.files {
            Some(files) => files,
            None => self.files.insert(Files::open(&self.database)?),
        };
        start_writeback(&files.log);
        let pages = self.log_pages.load(Ordering::Relaxed);
        if pages < self.checkpoint_at {
            return Ok(());
        }
        let done = checkpoint(conn, files)?;
        self.checkpoints += 1;
        self.last = Some(done);
        // A complete checkpoint lets the next transaction restart the log
        // from its first page; an incomplete one (a reader still on older
        // pages) is retried once the log has grown a little more.
        self.checkpoint_at = if done.copied >= done.log {
            self.every
        } else {
            pages.saturating_add((self.every / 4).max(1))
        };
        Ok(())
    }
}

impl Files {
    fn open(database: &Path) -> Result<Files, StoreError> {
        let open =
            |path: &Path| File::open(path).map_err(|e| failed(&path.display().to_string(), e));
        let mut log = database.as_os_str().to_owned();
        log.push("-wal");
        Ok(Files {
            database: open(database)?,
            log: open(Path::new(&log))?,
        })
    }
}

fn checkpoint(conn: &rusqlite::Connection, files: &Files) -> Result<Checkpointed, StoreError> {
    sync(&files.log, "log")?;
    conn.execute_batch("PRAGMA synchronous = OFF;")?;
    let copied = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok(Checkpointed {
            // The pragma's columns: busy, log (frames in the log),
            // checkpointed (frames copied to the database).
            log: row.get("log")?,
            copied: row.get("checkpointed")?,
        })
    });
    // Back to NORMAL whatever happened: the next transaction may restart
    // the log, and must not do so with syncs off.
    conn.execute_batch("PRAGMA synchronous = NORMAL;")?;
    let copied = copied?;
    write_back_paced(&files.database);
    sync(&files.database, "database")?;
    Ok(copied)
}

fn sync(file: &File, what: &str) -> Result<(), StoreError> {
    file.sync_data().map_err(|source| failed(what, source))
}

fn failed(file: &str, source: std::io::Error) -> StoreError {
    StoreError::Writeback {
        file: file.to_string(),
        source,
    }
}

// The pacing is best effort: the syncs alone make the store durable, so a
// file system that refuses `sync_file_range` costs the pacing, never a
// write.

/// Starts writing `file`'s dirty pages to the disk, without waiting and
/// without a flush.
fn start_writeback(file: &File) {
    let _ = sync_range(file, 0, 0, WRITE);
}

/// Writes `file`'s dirty pages back [`CHUNK`] at a time, waiting for each.
fn write_back_paced(file: &File) {
    let Ok(metadata) = file.metadata() else {
        return;
    };
    let mut offset = 0;
    while offset < metadata.len() {
        if sync_range(file, offset, CHUNK, WAIT_BEFORE | WRITE | WAIT_AFTER).is_err() {
            return;
        }
        offset += CHUNK;
    }
}

#[cfg(target_os = "linux")]
const WAIT_BEFORE: u32 = libc::SYNC_FILE_RANGE_WAIT_BEFORE;
#[cfg(target_os = "linux")]
const WRITE: u32 = libc::SYNC_FILE_RANGE_WRITE;
#[cfg(target_os = "linux")]
const WAIT_AFTER: u32 = libc::SYNC_FILE_RANGE_WAIT_AFTER;

#[cfg(target_os = "linux")]
fn sync_range(file: &File, offset: u64, bytes: u64, flags: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let range = |v: u64| i64::try_from(v).map_err(|_| std::io::ErrorKind::InvalidInput);
    // SAFETY: the descriptor is open for as long as `file` is borrowed,
    // and the call only reads its arguments.
    let status =
        unsafe { libc::sync_file_range(file.as_raw_fd(), range(offset)?, range(bytes)?, flags) };
    if status == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

// Elsewhere the final syncs alone make it durable; only the pacing is lost.
#[cfg(not(target_os = "linux"))]
const WAIT_BEFORE: u32 = 0;
#[cfg(not(target_os = "linux"))]
const WRITE: u32 = 0;
#[cfg(not(target_os = "linux"))]
const WAIT_AFTER: u32 = 0;

#[cfg(not(target_os = "linux"))]
fn sync_range(_: &File, _: u64, _: u64, _: u32) -> std::io::Result<()> {
    Ok(())
}
