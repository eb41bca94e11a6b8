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

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::record::{self, Entry, Invalid, HEADER_BYTES, MAX_PAYLOAD_BYTES};

pub(crate) const SEGMENT_MAGIC: &[u8; 8] = b"EXJRNL01";
/// Default segment size before rolling over.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

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
struct Segment {
    path: PathBuf,
    first_index: u64,
    /// Byte offset of each record, in index order.
    offsets: Vec<u64>,
    len: u64,
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
    segments: Vec<Segment>,
    active: File,
    next_index: u64,
    buf: Vec<u8>,
    unsynced: bool,
}

fn segment_name(first_index: u64) -> String {
    format!("{first_index:020}.log")
}

fn io(path: &Path, source: std::io::Error) -> JournalError {
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
    /// Opens (creating if needed) the journal in `dir`. An empty journal
    /// starts at index `first_index`.
    pub fn open(
        dir: &Path,
        first_index: u64,
        segment_bytes: u64,
    ) -> Result<(Journal, Recovery), JournalError> {
        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
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
        let active = OpenOptions::new()
            .append(true)
            .open(&last.path)
            .map_err(|e| io(&last.path, e))?;
        let journal = Journal {
            dir: dir.to_path_buf(),
            segment_bytes,
            segments,
            active,
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
        let first = self.next_index;
        if self
            .segments
            .last()
            .is_some_and(|s| s.len >= self.segment_bytes)
        {
            self.roll()?;
        }
        self.buf.clear();
        let segment = self.segments.last_mut().expect("an active segment");
        for payload in payloads {
            let payload = payload.as_ref();
            if payload.len() > MAX_PAYLOAD_BYTES {
                return Err(JournalError::TooLarge(payload.len()));
            }
            segment.offsets.push(segment.len + self.buf.len() as u64);
            record::encode(self.next_index, term, payload, &mut self.buf);
            self.next_index += 1;
        }
        if let Err(e) = self.active.write_all(&self.buf) {
            // Keep memory in line with what may be on disk: forget the batch.
            let kept = segment.offsets.len() - payloads.len();
            segment.offsets.truncate(kept);
            self.next_index = first;
            return Err(io(&segment.path, e));
        }
        segment.len += self.buf.len() as u64;
        self.unsynced = true;
        Ok(first)
    }

    /// Makes every appended entry durable.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        if self.unsynced {
            let path = &self.segments.last().expect("an active segment").path;
            self.active.sync_data().map_err(|e| io(path, e))?;
            self.unsynced = false;
        }
        Ok(())
    }

    fn roll(&mut self) -> Result<(), JournalError> {
        self.sync()?;
        let segment = create_segment(&self.dir, self.next_index)?;
        self.active = OpenOptions::new()
            .append(true)
            .open(&segment.path)
            .map_err(|e| io(&segment.path, e))?;
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
        file.set_len(cut)
            .and_then(|_| file.sync_all())
            .map_err(|e| io(&segment.path, e))?;
        self.active = OpenOptions::new()
            .append(true)
            .open(&segment.path)
            .map_err(|e| io(&segment.path, e))?;
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
        self.active = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
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
    /// their files are deleted on another thread, see [`delete_purged`].
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

/// A purged segment's name until its file is deleted: outside the `.log`
/// names that opening and reading the journal look at.
const PURGED_SUFFIX: &str = ".purged";

fn purged_name(segment: &Path) -> PathBuf {
    let mut name = segment.as_os_str().to_owned();
    name.push(PURGED_SUFFIX);
    PathBuf::from(name)
}

/// Deletes purged segment files on a thread of their own. Deleting a full
/// segment frees its blocks, about 20 ms for 64 MiB on the benchmark
/// machine's disk, and the caller (the Raft thread, compacting after a
/// snapshot) must not stall every order in flight for that. A file a crash
/// leaves behind is deleted when the journal is next opened.
fn delete_purged(paths: Vec<PathBuf>) {
    let delete = |paths: &[PathBuf]| {
        for path in paths {
            // Best effort: one left behind goes at the next open.
            let _ = fs::remove_file(path);
        }
    };
    let spawned = std::thread::Builder::new()
        .name("journal-purge".into())
        .spawn({
            let paths = paths.clone();
            move || delete(&paths)
        });
    if spawned.is_err() {
        delete(&paths);
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

fn scan_segment(
    path: &Path,
    first_index: u64,
    is_last: bool,
    recovery: &mut Recovery,
) -> Result<Segment, JournalError> {
    let bytes = fs::read(path).map_err(|e| io(path, e))?;
    let corrupt = |offset: u64, reason: String| JournalError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let header_ok =
        bytes.len() >= SEGMENT_MAGIC.len() && &bytes[..SEGMENT_MAGIC.len()] == SEGMENT_MAGIC;
    let mut segment = Segment {
        path: path.to_path_buf(),
        first_index,
        offsets: Vec::new(),
        len: 0,
    };
    if !header_ok {
        // A crash while creating the newest segment leaves it short.
        if is_last && bytes.len() < SEGMENT_MAGIC.len() && SEGMENT_MAGIC.starts_with(&bytes) {
            let mut file = OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)
                .map_err(|e| io(path, e))?;
            file.write_all(SEGMENT_MAGIC)
                .and_then(|_| file.sync_all())
                .map_err(|e| io(path, e))?;
            segment.len = SEGMENT_MAGIC.len() as u64;
            recovery.truncated_bytes += bytes.len() as u64;
            return Ok(segment);
        }
        return Err(corrupt(0, "bad segment header".into()));
    }
    let mut at = SEGMENT_MAGIC.len();
    let mut index = first_index;
    while at < bytes.len() {
        match record::decode(&bytes[at..], index) {
            Ok((_, used)) => {
                segment.offsets.push(at as u64);
                at += used;
                index += 1;
            }
            Err(reason) => {
                let tail_damage = matches!(
                    reason,
                    Invalid::Torn | Invalid::BadChecksum | Invalid::BadLength(_)
                );
                if !(is_last && tail_damage && is_final_record(&bytes[at..], index + 1)) {
                    return Err(corrupt(at as u64, reason.to_string()));
                }
                let dropped = (bytes.len() - at) as u64;
                let file = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| io(path, e))?;
                file.set_len(at as u64)
                    .and_then(|_| file.sync_all())
                    .map_err(|e| io(path, e))?;
                recovery.truncated_bytes += dropped;
                recovery.truncated_reason = Some(format!(
                    "{}: {dropped} bytes at offset {at} dropped ({reason})",
                    path.display()
                ));
                break;
            }
        }
    }
    recovery.entries += segment.offsets.len() as u64;
    segment.len = at as u64;
    Ok(segment)
}

/// Whether damaged bytes at the tail could be one interrupted write: a
/// crash damages only the last record, so no valid record for the next
/// index may follow anywhere after it.
fn is_final_record(tail: &[u8], next_index: u64) -> bool {
    let needle = next_index.to_le_bytes();
    (1..tail.len().saturating_sub(HEADER_BYTES - 1)).all(|offset| {
        // The index field sits 8 bytes into a header: a cheap filter before
        // a checksum.
        tail[offset + 8..offset + 16] != needle
            || record::decode(&tail[offset..], next_index).is_err()
    })
}
