//! Segment files prepared ahead of need.
//!
//! Appending to a file that grows makes every `fdatasync` write the inode
//! (the size changed) and allocate blocks first. A segment whose blocks
//! were already written, with zeros, takes appends as plain overwrites, so
//! `fdatasync` writes the data and nothing else: on the benchmark machine
//! (ext4 on virtio) the median sync went from 86 to 62 µs and the p99 from
//! 243 to 136-184 µs (`BENCHMARKS.md`, "Preallocated segments").
//!
//! A thread of its own writes the zeros, in paced chunks so they never
//! queue as one burst ahead of the log's own syncs, into a temporary file
//! that becomes the *spare* (`spare.seg`) only once complete and synced;
//! the journal renames the spare into place when it next rolls. A spare's
//! records region is all zeros, so the end of the records is the first
//! all-zero header, and a crash can leave at worst an unused spare or a
//! temporary file, which the next open deletes.
//!
//! Invariant: a file named [`SPARE_NAME`] is always complete (segment
//! magic, then zeros to its length); everything else is a temporary name.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::JournalError;
use crate::journal::SEGMENT_MAGIC;

/// The prepared segment, ready to be renamed into the log.
pub(crate) const SPARE_NAME: &str = "spare.seg";
/// Names of spares being written: `spare.{pid}.{n}.tmp`.
const PREPARING_PREFIX: &str = "spare.";
const PREPARING_SUFFIX: &str = ".tmp";
/// Zeros written (and synced) at a time. Every flush of the disk waits
/// for the zeros written before it, the log's too: beside a loop writing
/// spares in 1 MiB chunks 5 ms apart, a probe's append + `fdatasync` had a
/// p99 of 691 µs and a p99.9 of 4.0-4.3 ms, against 255 µs and 1.0 ms
/// alone; in 256 KiB chunks, 250-399 µs and 1.1-2.0 ms
/// (docs/benchmarking.md, `bench journal`).
const CHUNK_BYTES: usize = 256 << 10;
/// The pause between two chunks: a 64 MiB spare takes about 1.5 s to
/// write, against the 5 s the log takes to fill a segment at 50,000
/// orders/s (the spare is wanted once the segment holds 4 MiB), and the
/// log's syncs get the device in between.
const CHUNK_PAUSE: Duration = Duration::from_millis(5);

/// Tells concurrent preparations in one process apart (tests open
/// journals in parallel; a restarted journal may meet its predecessor's
/// thread still writing).
static PREPARATIONS: AtomicU64 = AtomicU64::new(0);

/// The spare of one journal directory: none, being written, or ready.
#[derive(Debug)]
pub(crate) struct Spares {
    dir: PathBuf,
    /// Size of the spares this journal prepares.
    bytes: u64,
    preparing: Option<JoinHandle<io::Result<()>>>,
    ready: bool,
    /// A preparation failed: no more are tried by this journal (the log
    /// works as well on plain segments, only slower).
    failed: bool,
}

impl Spares {
    /// Takes stock of `dir`: deletes unfinished spares and, when
    /// preallocation is off, a leftover finished one.
    pub(crate) fn open(dir: &Path, bytes: u64, enabled: bool) -> Spares {
        let mut ready = false;
        if let Ok(items) = fs::read_dir(dir) {
            for item in items.flatten() {
                let name = item.file_name();
                let Some(name) = name.to_str() else { continue };
                if name == SPARE_NAME {
                    if enabled {
                        ready = true;
                    } else {
                        let _ = fs::remove_file(item.path());
                    }
                } else if name.starts_with(PREPARING_PREFIX) && name.ends_with(PREPARING_SUFFIX) {
                    // Best effort: a file left here is only disk space.
                    let _ = fs::remove_file(item.path());
                }
            }
        }
        Spares {
            dir: dir.to_path_buf(),
            bytes,
            preparing: None,
            ready,
            failed: !enabled,
        }
    }

    /// Starts writing a spare unless one is ready or on its way.
    pub(crate) fn want(&mut self) {
        self.poll();
        if self.ready || self.preparing.is_some() || self.failed {
            return;
        }
        let dir = self.dir.clone();
        let bytes = self.bytes;
        let spawned = std::thread::Builder::new()
            .name("journal-spare".into())
            .spawn(move || prepare(&dir, bytes));
        match spawned {
            Ok(handle) => self.preparing = Some(handle),
            Err(_) => self.failed = true,
        }
    }

    /// Whether a spare is ready to be taken.
    pub(crate) fn ready(&mut self) -> bool {
        self.poll();
        self.ready
    }

    /// Renames the ready spare to `target` (the caller makes the directory
    /// durable). Returns false, changing nothing, when none is ready.
    pub(crate) fn take(&mut self, target: &Path) -> Result<bool, JournalError> {
        if !self.ready() {
            return Ok(false);
        }
        let spare = self.dir.join(SPARE_NAME);
        self.ready = false;
        fs::rename(&spare, target).map_err(|source| JournalError::Io {
            path: spare,
            source,
        })?;
        Ok(true)
    }

    fn poll(&mut self) {
        if !self.preparing.as_ref().is_some_and(JoinHandle::is_finished) {
            return;
        }
        match self.preparing.take().map(JoinHandle::join) {
            Some(Ok(Ok(()))) => self.ready = true,
            _ => self.failed = true,
        }
    }
}

/// Writes a spare of `bytes` bytes under a temporary name, syncs it and
/// gives it the spare's name.
fn prepare(dir: &Path, bytes: u64) -> io::Result<()> {
    let n = PREPARATIONS.fetch_add(1, Ordering::Relaxed);
    let preparing = dir.join(format!(
        "{PREPARING_PREFIX}{}.{n}{PREPARING_SUFFIX}",
        std::process::id()
    ));
    let written = write_zeros(&preparing, bytes);
    if written.is_err() {
        let _ = fs::remove_file(&preparing);
        return written;
    }
    fs::rename(&preparing, dir.join(SPARE_NAME))
}

fn write_zeros(path: &Path, bytes: u64) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)?;
    file.write_all(SEGMENT_MAGIC)?;
    let zeros = vec![0u8; CHUNK_BYTES];
    let mut written = SEGMENT_MAGIC.len() as u64;
    while written < bytes {
        let take = (bytes - written).min(CHUNK_BYTES as u64) as usize;
        file.write_all(&zeros[..take])?;
        written += take as u64;
        file.sync_data()?;
        std::thread::sleep(CHUNK_PAUSE);
    }
    file.sync_all()
}
