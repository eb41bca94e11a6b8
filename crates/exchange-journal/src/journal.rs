//! The segmented log.
//!
//! Records go to the active segment file; when it passes the configured
//! size a new segment starts, named after its first index. [`Journal::append`]
//! writes a batch with one `write`; [`Journal::sync`] makes everything
//! appended so far durable with one `fdatasync`. A caller that appends all
//! the commands that queued up during the previous sync and then syncs once
//! gets group commit for free.
//!
//! Opening scans every segment. A record that is torn or fails its checksum
//! at the tail of the last segment is what a crash mid-write leaves: it was
//! never acknowledged, so it is cut off and reported. The same damage
//! anywhere else means acknowledged data is gone, and opening fails.
//!
//! With preallocation on, segments after the first few MiB come from
//! [`crate::spare`]: files written full of zeros ahead of need, so that
//! appends overwrite allocated blocks. Records are therefore written at
//! the segment's logical end, not the file's, and an all-zero remainder
//! after the last record is unused room, not damage.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::JournalError;
use crate::purge::{delete_purged, purged_name, PURGED_SUFFIX};
use crate::record::{self, Entry, MAX_PAYLOAD_BYTES};
use crate::scan::scan_segment;
use crate::spare::Spares;

pub(crate) const SEGMENT_MAGIC: &[u8; 8] = b"EXJRNL01";
/// Default segment size before rolling over.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// How much a segment that grows as it is written (the first one, or one
/// cut by recovery or a truncation) takes before a preallocated spare is
/// prepared, which the log then rolls onto as soon as it is ready. Below
/// this a journal never writes a spare: a node that takes a few orders
/// (every test) pays no 64 MiB of zeros.
pub const DEFAULT_PREALLOCATE_AFTER: u64 = 4 << 20;

/// How a journal lays out its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalOptions {
    /// Size at which a segment rolls over.
    pub segment_bytes: u64,
    /// Preallocate segments ([`crate::spare`]) once the active segment
    /// holds this many bytes; `None`: segments grow as they are written.
    pub preallocate_after: Option<u64>,
}

impl JournalOptions {
    /// Growing segments of `segment_bytes`, nothing preallocated.
    pub fn plain(segment_bytes: u64) -> JournalOptions {
        JournalOptions {
            segment_bytes,
            preallocate_after: None,
        }
    }
}

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            preallocate_after: Some(DEFAULT_PREALLOCATE_AFTER),
        }
    }
}

/// What recovery found and did when the journal was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Entries found intact.
    pub entries: u64,
    /// Bytes cut from the tail of the last segment.
    pub truncated_bytes: u64,
    /// Why they were cut, if they were.
    pub truncated_reason: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) path: PathBuf,
    pub(crate) first_index: u64,
    /// Byte offset of each record, in index order.
    pub(crate) offsets: Vec<u64>,
    /// Where its records end (a preallocated file is longer).
    pub(crate) len: u64,
}

impl Segment {
    fn last_index(&self) -> Option<u64> {
        (!self.offsets.is_empty()).then(|| self.first_index + self.offsets.len() as u64 - 1)
    }
}

/// An append-only, checksummed, segmented log of [`Entry`]s with dense,
/// increasing indices starting at some `first_index`.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    segment_bytes: u64,
    preallocate_after: Option<u64>,
    spares: Spares,
    segments: Vec<Segment>,
    /// The last segment's file; written at the segment's logical end.
    /// Shared with [`LogSync`]s still to run.
    active: Arc<File>,
    /// Whether the active segment's file was written full of zeros to its
    /// size ahead of need (a spare, or reopened at full size): if not, it
    /// is left for a spare as soon as one is ready.
    preallocated: bool,
    next_index: u64,
    buf: Vec<u8>,
    unsynced: bool,
}

fn segment_name(first_index: u64) -> String {
    format!("{first_index:020}.log")
}

pub(crate) fn io(path: &Path, source: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes a directory entry (a new or renamed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(dir, e))
}

impl Journal {
    /// Opens (creating if needed) the journal in `dir` with growing
    /// segments of `segment_bytes`. An empty journal starts at index
    /// `first_index`.
    pub fn open(
        dir: &Path,
        first_index: u64,
        segment_bytes: u64,
    ) -> Result<(Journal, Recovery), JournalError> {
        Journal::open_with(dir, first_index, JournalOptions::plain(segment_bytes))
    }

    /// Opens (creating if needed) the journal in `dir`. An empty journal
    /// starts at index `first_index`.
    pub fn open_with(
        dir: &Path,
        first_index: u64,
        options: JournalOptions,
    ) -> Result<(Journal, Recovery), JournalError> {
        let segment_bytes = options.segment_bytes;
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let (names, purged) = list_segments(dir)?;
        if !purged.is_empty() {
            delete_purged(purged);
        }
        let mut recovery = Recovery::default();
        let mut segments = Vec::new();
        let count = names.len();
        for (position, (first, path)) in names.into_iter().enumerate() {
            let is_last = position + 1 == count;
            if let Some(prev) = segments.last() {
                let prev: &Segment = prev;
                let expected = prev.last_index().map_or(prev.first_index, |l| l + 1);
                if first != expected {
                    return Err(JournalError::Corrupt {
                        path,
                        offset: 0,
                        reason: format!("segment starts at {first}, expected {expected}"),
                    });
                }
            }
            let segment = scan_segment(&path, first, is_last, &mut recovery)?;
            segments.push(segment);
        }
        if segments.is_empty() {
            segments.push(create_segment(dir, first_index)?);
        }
        let last = segments.last().expect("at least one segment");
        let next_index = last.last_index().map_or(last.first_index, |l| l + 1);
        let active = open_active(&last.path)?;
        let file_bytes = active.metadata().map_err(|e| io(&last.path, e))?.len();
        let journal = Journal {
            dir: dir.to_path_buf(),
            segment_bytes,
            preallocate_after: options.preallocate_after,
            spares: Spares::open(dir, segment_bytes, options.preallocate_after.is_some()),
            segments,
            active,
            preallocated: file_bytes >= segment_bytes,
            next_index,
            buf: Vec::new(),
            unsynced: false,
        };
        Ok((journal, recovery))
    }

    /// Index the next appended entry will get.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Index of the oldest entry still held.
    pub fn first_index(&self) -> u64 {
        self.segments
            .first()
            .map_or(self.next_index, |s| s.first_index)
    }

    /// Appends payloads as consecutive entries of `term` with one write.
    /// They are durable only after [`Journal::sync`]. Returns the index of
    /// the first.
    pub fn append<P: AsRef<[u8]>>(
        &mut self,
        term: u64,
        payloads: &[P],
    ) -> Result<u64, JournalError> {
        // Refused before anything changes: a payload refused halfway through
        // the batch would leave the records before it counted but never
        // written, and the next batch's records filed under the wrong
        // indices (which recovery then reports as corruption).
        if let Some(large) = payloads
            .iter()
            .map(|p| p.as_ref().len())
            .find(|&len| len > MAX_PAYLOAD_BYTES)
        {
            return Err(JournalError::TooLarge(large));
        }
        let first = self.next_index;
        let active_len = self.segments.last().map_or(0, |s| s.len);
        let holds_records = active_len > SEGMENT_MAGIC.len() as u64;
        if active_len >= self.segment_bytes
            || (!self.preallocated && holds_records && self.spares.ready())
        {
            self.roll()?;
        }
        self.buf.clear();
        let segment = self.segments.last_mut().expect("an active segment");
        // Every record the segment lists was written before its end: an
        // offset at or past it is a record counted and never written.
        assert!(
            segment.offsets.last().is_none_or(|&at| at < segment.len),
            "{}: a record listed at or past the end {}",
            segment.path.display(),
            segment.len
        );
        for payload in payloads {
            let payload = payload.as_ref();
            // Indices are dense: the record at position k of a segment has
            // index first + k, which is what recovery and reads expect to
            // find there. A skipped or repeated index would be written
            // durably and only noticed as corruption on the next open.
            assert_eq!(
                self.next_index,
                segment.first_index + segment.offsets.len() as u64,
                "{}: appending out of sequence",
                segment.path.display()
            );
            let at = self.buf.len();
            segment.offsets.push(segment.len + at as u64);
            record::encode(self.next_index, term, payload, &mut self.buf);
            // One more CRC pass over a payload already in cache, beside a
            // write system call.
            record::assert_reads_back(&self.buf[at..], self.next_index, term, payload);
            self.next_index += 1;
        }
        if let Err(e) = self.active.write_all_at(&self.buf, segment.len) {
            // Keep memory in line with what may be on disk: forget the batch.
            let kept = segment.offsets.len() - payloads.len();
            segment.offsets.truncate(kept);
            self.next_index = first;
            erase_partial(&self.active, segment.len, self.buf.len(), self.preallocated);
            return Err(io(&segment.path, e));
        }
        segment.len += self.buf.len() as u64;
        self.unsynced = true;
        if self
            .preallocate_after
            .is_some_and(|after| segment.len >= after)
        {
            self.spares.want();
        }
        Ok(first)
    }

    /// What makes every entry appended so far durable, to run on another
    /// thread while this one goes on appending; `None` when nothing is
    /// unsynced. Whoever takes it owes the sync: [`Journal::sync`] (and so
    /// a roll or a truncation) covers only what was written after it. The
    /// sync keeps its segment's file open, so it still covers those entries
    /// after a roll to a new segment; syncing a file since cut or deleted
    /// is harmless.
    pub fn take_sync(&mut self) -> Option<LogSync> {
        if !self.unsynced {
            return None;
        }
        self.unsynced = false;
        let path = self.segments.last().map(|s| s.path.clone())?;
        Some(LogSync {
            file: self.active.clone(),
            path,
        })
    }

    /// Makes every appended entry durable.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.unsynced {
            let path = &self.segments.last().expect("an active segment").path;
            self.active
                .sync_data()
                .map_err(|source| JournalError::Sync {
                    path: path.clone(),
                    source,
                })?;
            self.unsynced = false;
        }
        Ok(())
    }

    fn roll(&mut self) -> Result<(), JournalError> {
        self.sync()?;
        let path = self.dir.join(segment_name(self.next_index));
        let segment = if self.spares.take(&path)? {
            sync_dir(&self.dir)?;
            Segment {
                path,
                first_index: self.next_index,
                offsets: Vec::new(),
                len: SEGMENT_MAGIC.len() as u64,
            }
        } else {
            create_segment(&self.dir, self.next_index)?
        };
        self.active = open_active(&segment.path)?;
        self.preallocated = self
            .active
            .metadata()
            .map_err(|e| io(&segment.path, e))?
            .len()
            >= self.segment_bytes;
        self.segments.push(segment);
        Ok(())
    }

    /// Reads entries `from..` up to `max` of them.
    pub fn read(&self, from: u64, max: usize) -> Result<Vec<Entry>, JournalError> {
        let mut out = Vec::new();
        let mut index = from.max(self.first_index());
        while index < self.next_index && out.len() < max {
            let Some(segment) = self.segments.iter().rev().find(|s| s.first_index <= index) else {
                break;
            };
            let Some(last) = segment.last_index() else {
                break;
            };
            let start = segment.offsets[(index - segment.first_index) as usize];
            let room = (max - out.len()) as u64;
            let end_index = last.min(index.saturating_add(room - 1));
            let end = segment
                .offsets
                .get((end_index + 1 - segment.first_index) as usize)
                .copied()
                .unwrap_or(segment.len);
            let mut file = File::open(&segment.path).map_err(|e| io(&segment.path, e))?;
            file.seek(SeekFrom::Start(start))
                .map_err(|e| io(&segment.path, e))?;
            let mut bytes = vec![0u8; (end - start) as usize];
            file.read_exact(&mut bytes)
                .map_err(|e| io(&segment.path, e))?;
            let mut at = 0usize;
            while index <= end_index {
                let (entry, used) = record::decode(&bytes[at..], index).map_err(|reason| {
                    JournalError::Corrupt {
                        path: segment.path.clone(),
                        offset: start + at as u64,
                        reason: reason.to_string(),
                    }
                })?;
                at += used;
                out.push(entry);
                index += 1;
            }
        }
        Ok(out)
    }

    /// Drops every entry at or after `index` (a Raft follower discarding a
    /// conflicting suffix). Durable on return.
    pub fn truncate_from(&mut self, index: u64) -> Result<(), JournalError> {
        if index >= self.next_index {
            return Ok(());
        }
        self.sync()?;
        while self.segments.len() > 1
            && self.segments.last().is_some_and(|s| s.first_index >= index)
        {
            let segment = self.segments.pop().expect("checked non-empty");
            fs::remove_file(&segment.path).map_err(|e| io(&segment.path, e))?;
        }
        let segment = self.segments.last_mut().expect("an active segment");
        let keep = index.saturating_sub(segment.first_index) as usize;
        let cut = segment.offsets.get(keep).copied().unwrap_or(segment.len);
        segment.offsets.truncate(keep);
        segment.len = cut;
        let file = OpenOptions::new()
            .write(true)
            .open(&segment.path)
            .map_err(|e| io(&segment.path, e))?;
        // Cut rather than zeroed: a crash halfway through zeroing would
        // leave old records after the zeros. The segment then grows again
        // until the next spare.
        file.set_len(cut)
            .and_then(|_| file.sync_all())
            .map_err(|e| io(&segment.path, e))?;
        self.active = open_active(&segment.path)?;
        self.preallocated = false;
        self.next_index = segment.first_index + keep as u64;
        sync_dir(&self.dir)
    }

    /// Drops every entry and restarts the log empty at `next_index` (the
    /// entries before it are covered by a snapshot). Durable on return.
    pub fn reset(&mut self, next_index: u64) -> Result<(), JournalError> {
        let fresh = create_segment_named(&self.dir, next_index, "log.new")?;
        for segment in self.segments.drain(..) {
            fs::remove_file(&segment.path).map_err(|e| io(&segment.path, e))?;
        }
        let path = self.dir.join(segment_name(next_index));
        fs::rename(&fresh, &path).map_err(|e| io(&path, e))?;
        sync_dir(&self.dir)?;
        self.active = open_active(&path)?;
        self.preallocated = false;
        self.segments.push(Segment {
            path,
            first_index: next_index,
            offsets: Vec::new(),
            len: SEGMENT_MAGIC.len() as u64,
        });
        self.next_index = next_index;
        self.unsynced = false;
        Ok(())
    }

    /// Deletes whole segments that hold only entries below `index` (they
    /// are covered by a snapshot). The active segment is always kept.
    ///
    /// The segments leave the log at once (renamed out of its namespace);
    /// their files are deleted on another thread, see [`crate::purge`].
    pub fn purge_before(&mut self, index: u64) -> Result<usize, JournalError> {
        let mut purged = Vec::new();
        while self.segments.len() > 1 && self.segments[1].first_index <= index {
            let segment = self.segments.remove(0);
            let doomed = purged_name(&segment.path);
            fs::rename(&segment.path, &doomed).map_err(|e| io(&segment.path, e))?;
            purged.push(doomed);
        }
        let removed = purged.len();
        if removed > 0 {
            sync_dir(&self.dir)?;
            delete_purged(purged);
        }
        Ok(removed)
    }
}

/// Opens a segment for appending at its logical end (not the file's: a
/// preallocated segment's file is longer than its records).
/// Segment files by first index.
type SegmentNames = Vec<(u64, PathBuf)>;

/// The directory's segments by first index, in order, and the files
/// left behind by a purge.
fn list_segments(dir: &Path) -> Result<(SegmentNames, Vec<PathBuf>), JournalError> {
    let mut names: SegmentNames = Vec::new();
    let mut purged = Vec::new();
    for item in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = item.map_err(|e| io(dir, e))?.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(PURGED_SUFFIX))
        {
            purged.push(path);
            continue;
        }
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
        else {
            continue;
        };
        let first = stem.parse::<u64>().map_err(|_| JournalError::Corrupt {
            path: path.clone(),
            offset: 0,
            reason: "segment name is not an index".into(),
        })?;
        names.push((first, path));
    }
    names.sort();
    Ok((names, purged))
}

/// Best effort after a failed write (a full disk writes part of a batch):
/// what it left past the records goes, so that a retry that writes less,
/// or a roll to the next segment, leaves no torn record behind the last
/// one, which opening the journal would take for damage. A preallocated
/// file gets its zeros back (no new blocks needed); a growing one is cut.
fn erase_partial(file: &File, end: u64, written: usize, preallocated: bool) {
    let _ = if preallocated {
        file.write_all_at(&vec![0; written], end)
    } else {
        file.set_len(end)
    };
}

fn open_active(path: &Path) -> Result<Arc<File>, JournalError> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .map(Arc::new)
        .map_err(|e| io(path, e))
}

/// A pending `fdatasync` of one segment file (see [`Journal::take_sync`]).
#[derive(Debug, Clone)]
pub struct LogSync {
    file: Arc<File>,
    path: PathBuf,
}

impl LogSync {
    pub fn run(&self) -> Result<(), JournalError> {
        self.file.sync_data().map_err(|source| JournalError::Sync {
            path: self.path.clone(),
            source,
        })
    }

    /// Whether two syncs are of the same file (one `fdatasync` covers both).
    pub fn same_file(&self, other: &LogSync) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
    }
}

/// Creates a segment file holding only its header under `{index}.{suffix}`.
fn create_segment_named(
    dir: &Path,
    first_index: u64,
    suffix: &str,
) -> Result<PathBuf, JournalError> {
    let path = dir.join(format!("{first_index:020}.{suffix}"));
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| io(&path, e))?;
    file.write_all(SEGMENT_MAGIC)
        .and_then(|_| file.sync_all())
        .map_err(|e| io(&path, e))?;
    Ok(path)
}

fn create_segment(dir: &Path, first_index: u64) -> Result<Segment, JournalError> {
    let path = dir.join(segment_name(first_index));
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| io(&path, e))?;
    file.write_all(SEGMENT_MAGIC)
        .and_then(|_| file.sync_all())
        .map_err(|e| io(&path, e))?;
    sync_dir(dir)?;
    Ok(Segment {
        path,
        first_index,
        offsets: Vec::new(),
        len: SEGMENT_MAGIC.len() as u64,
    })
}

#[cfg(test)]
mod append_tests {
    use super::Journal;

    fn journal(dir: &std::path::Path) -> Journal {
        let (mut journal, _) = Journal::open(dir, 5, 1 << 20).expect("open");
        journal.append(1, &[b"a", b"b"]).expect("append");
        journal
    }

    #[test]
    fn appends_keep_indices_dense_across_rolls_and_truncation() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut journal, _) = Journal::open(dir.path(), 5, 200).expect("open");
        for _ in 0..20 {
            journal.append(1, &[[1u8; 40], [2u8; 40]]).expect("append");
        }
        journal.truncate_from(12).expect("truncate");
        journal.append(2, &[b"after"]).expect("append");
        assert_eq!(journal.next_index(), 13);
        assert_eq!(journal.read(12, 1).expect("read")[0].payload, b"after");
    }

    #[test]
    fn what_a_failed_write_left_past_the_records_is_erased() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("segment");
        let file = std::fs::File::create(&path).expect("create");
        file.write_all_at(&[7u8; 100], 0).expect("write");
        // A growing segment is cut back to its records' end.
        super::erase_partial(&file, 40, 60, false);
        assert_eq!(std::fs::read(&path).expect("read"), [7u8; 40]);
        // A preallocated one keeps its length, zeros after the records.
        file.write_all_at(&[7u8; 60], 40).expect("write");
        super::erase_partial(&file, 40, 60, true);
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(bytes.len(), 100);
        assert!(bytes[..40].iter().all(|&b| b == 7) && bytes[40..].iter().all(|&b| b == 0));
    }

    #[test]
    #[should_panic(expected = "appending out of sequence")]
    fn an_index_that_skips_is_caught() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut journal = journal(dir.path());
        journal.next_index += 1;
        let _ = journal.append(1, &[b"c"]);
    }

    #[test]
    #[should_panic(expected = "a record listed at or past the end")]
    fn a_record_counted_but_never_written_is_caught() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut journal = journal(dir.path());
        let segment = journal.segments.last_mut().expect("a segment");
        segment.offsets.push(segment.len);
        journal.next_index += 1;
        let _ = journal.append(1, &[b"c"]);
    }
}
