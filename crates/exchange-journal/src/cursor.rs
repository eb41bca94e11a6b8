//! Reading committed entries one after another beside a live journal, for
//! a reader that follows the log as it grows (the log stream to mirrors).
//!
//! [`crate::reader`] reads whole segments, which suits a catch-up that
//! happens now and then; a follower woken for every group commit would
//! read its 64 MiB segment again each time. The cursor keeps its segment
//! open and reads each record where the previous one ended, and only the
//! bytes of records at or before the index it is told are committed: past
//! them the writer may be appending, or the segment may hold preallocated
//! zeros that become records later, so nothing there is read or cached.
//!
//! A segment that compaction deletes while the cursor reads it stays
//! readable through the open file. When the cursor has to find a segment
//! and none holds its next entry any more, [`CommittedCursor::read`] says
//! so rather than failing: the caller starts from a snapshot instead.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::journal::SEGMENT_MAGIC;
use crate::reader::segments;
use crate::record::{self, Entry, HEADER_BYTES, MAX_PAYLOAD_BYTES};

/// Follows the committed entries of the journal in a directory.
pub struct CommittedCursor {
    dir: PathBuf,
    next: u64,
    open: Option<OpenSegment>,
}

struct OpenSegment {
    path: PathBuf,
    file: File,
    /// Where the record of the cursor's next entry starts.
    offset: u64,
}

/// What a read found.
#[derive(Debug)]
pub enum Read {
    /// Entries from the cursor's next on, in order (none when it is past
    /// the index asked for).
    Entries(Vec<Entry>),
    /// The next entry is no longer in the journal (compacted away, or the
    /// journal restarts later): the journal's first index now, if any.
    Gone { first: Option<u64> },
}

fn io(path: &Path, source: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn corrupt(path: &Path, offset: u64, reason: String) -> JournalError {
    JournalError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    }
}

impl CommittedCursor {
    /// A cursor whose first entry read will be `next`.
    pub fn new(dir: &Path, next: u64) -> CommittedCursor {
        CommittedCursor {
            dir: dir.to_path_buf(),
            next,
            open: None,
        }
    }

    /// The index of the next entry it reads.
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// Reads the entries from the next one through `through`, which the
    /// caller knows are committed, stopping early once their payloads add
    /// up to `max_bytes` (at least one entry is read).
    pub fn read(&mut self, through: u64, max_bytes: usize) -> Result<Read, JournalError> {
        let mut out = Vec::new();
        if self.next > through {
            return Ok(Read::Entries(out));
        }
        // Listed after the caller learnt `through`: every segment holding
        // an entry up to it exists by now.
        let listed = segments(&self.dir)?;
        let mut bytes = 0usize;
        while self.next <= through && (out.is_empty() || bytes < max_bytes) {
            let holder = listed.iter().rposition(|(first, _)| *first <= self.next);
            match holder {
                Some(at) if self.open.as_ref().map(|o| &o.path) != Some(&listed[at].1) => {
                    let (first, path) = &listed[at];
                    self.open = Some(seek(path, *first, self.next)?);
                }
                Some(_) => {}
                // Compacted away, unless it is in the segment still open.
                None if self.open.is_some() => {}
                None => {
                    return Ok(Read::Gone {
                        first: listed.first().map(|(first, _)| *first),
                    })
                }
            }
            let Some(open) = self.open.as_mut() else {
                return Ok(Read::Gone { first: None });
            };
            match next_record(open, self.next)? {
                Some(entry) => {
                    bytes += entry.payload.len();
                    self.next += 1;
                    out.push(entry);
                }
                // The end of a segment compaction deleted: what was read
                // of it first, then the next call finds the entry gone.
                None if holder.is_none() => {
                    self.open = None;
                    if out.is_empty() {
                        return Ok(Read::Gone {
                            first: listed.first().map(|(first, _)| *first),
                        });
                    }
                    break;
                }
                None => {
                    return Err(corrupt(
                        &open.path,
                        open.offset,
                        format!("committed entry {} is not in the journal", self.next),
                    ))
                }
            }
        }
        Ok(Read::Entries(out))
    }
}

/// Opens the segment starting at `first` and finds the record of `index`
/// in it, by the records' lengths alone (each is checked when read).
fn seek(path: &Path, first: u64, index: u64) -> Result<OpenSegment, JournalError> {
    let file = File::open(path).map_err(|e| io(path, e))?;
    let mut magic = [0u8; SEGMENT_MAGIC.len()];
    file.read_exact_at(&mut magic, 0).map_err(|e| io(path, e))?;
    if &magic != SEGMENT_MAGIC {
        return Err(corrupt(path, 0, "bad segment header".into()));
    }
    let mut open = OpenSegment {
        path: path.to_path_buf(),
        file,
        offset: SEGMENT_MAGIC.len() as u64,
    };
    for skipped in first..index {
        let Some(len) = header(&open, skipped)?.map(|(len, _)| len) else {
            return Err(corrupt(
                path,
                open.offset,
                format!("committed entry {skipped} is not in the journal"),
            ));
        };
        open.offset += (HEADER_BYTES + len) as u64;
    }
    Ok(open)
}

/// The header at the segment's offset, as its payload length and bytes,
/// if a record of `index` starts there; `None` at the end of what was
/// written (the end of the file, or preallocated zeros).
fn header(
    open: &OpenSegment,
    index: u64,
) -> Result<Option<(usize, [u8; HEADER_BYTES])>, JournalError> {
    let mut header = [0u8; HEADER_BYTES];
    match open.file.read_exact_at(&mut header, open.offset) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(io(&open.path, e)),
    }
    if header.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let mut word = [0u8; 4];
    word.copy_from_slice(&header[..4]);
    let len = u32::from_le_bytes(word) as usize;
    let mut long = [0u8; 8];
    long.copy_from_slice(&header[8..16]);
    let found = u64::from_le_bytes(long);
    if len > MAX_PAYLOAD_BYTES || found != index {
        return Err(corrupt(
            &open.path,
            open.offset,
            format!("expected the record of entry {index} (length {len}, index {found})"),
        ));
    }
    Ok(Some((len, header)))
}

/// Reads and checks the record of `index` at the segment's offset, and
/// moves past it.
fn next_record(open: &mut OpenSegment, index: u64) -> Result<Option<Entry>, JournalError> {
    let Some((len, header)) = header(open, index)? else {
        return Ok(None);
    };
    let mut bytes = vec![0u8; HEADER_BYTES + len];
    bytes[..HEADER_BYTES].copy_from_slice(&header);
    open.file
        .read_exact_at(
            &mut bytes[HEADER_BYTES..],
            open.offset + HEADER_BYTES as u64,
        )
        .map_err(|e| io(&open.path, e))?;
    let (entry, used) = record::decode(&bytes, index)
        .map_err(|reason| corrupt(&open.path, open.offset, reason.to_string()))?;
    open.offset += used as u64;
    Ok(Some(entry))
}
