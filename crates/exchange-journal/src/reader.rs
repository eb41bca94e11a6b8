//! Reading committed entries beside a live journal, without opening it.
//!
//! [`Journal::open`](crate::Journal::open) repairs a torn tail, which must
//! never race the writer; this reader only reads. It is for entries the
//! caller knows are durable (at or before the applied index): those are
//! complete on disk, whatever the writer is appending after them. Segments
//! may be deleted by compaction at any time; a caller that needs old ones
//! keeps them with a retention floor (see `exchange-reporter`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::journal::SEGMENT_MAGIC;
use crate::record::{self, Entry, HEADER_BYTES};

fn io(path: &Path, source: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, JournalError> {
    let mut found = Vec::new();
    for item in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = item.map_err(|e| io(dir, e))?.path();
        let first = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(first) = first {
            found.push((first, path));
        }
    }
    found.sort();
    Ok(found)
}

/// Index of the oldest entry the journal in `dir` still holds (its first
/// segment's first index), if it has any segment.
pub fn first_index(dir: &Path) -> Result<Option<u64>, JournalError> {
    Ok(segments(dir)?.first().map(|(first, _)| *first))
}

/// Calls `each` with every entry `from..=through`, in order. Fails if any
/// of them is missing or unreadable.
pub fn for_each_committed<E: From<JournalError>>(
    dir: &Path,
    from: u64,
    through: u64,
    each: impl FnMut(Entry) -> Result<(), E>,
) -> Result<(), E> {
    if from > through {
        return Ok(());
    }
    let next = walk(dir, from, through, each)?;
    if next > through {
        return Ok(());
    }
    Err(JournalError::Corrupt {
        path: dir.to_path_buf(),
        offset: 0,
        reason: format!("entry {next} is not in the journal yet"),
    }
    .into())
}

/// Calls `each` with every entry the journal in `dir` holds, oldest
/// first, and returns how many there were. For a journal no process
/// writes to (a record being appended reads as a torn one).
pub fn for_each_entry<E: From<JournalError>>(
    dir: &Path,
    each: impl FnMut(Entry) -> Result<(), E>,
) -> Result<u64, E> {
    let Some(first) = first_index(dir)? else {
        return Ok(0);
    };
    Ok(walk(dir, first, u64::MAX, each)? - first)
}

/// Walks the entries `from..=through` that are on disk, in order, and
/// returns the index after the last one given to `each`.
fn walk<E: From<JournalError>>(
    dir: &Path,
    from: u64,
    through: u64,
    mut each: impl FnMut(Entry) -> Result<(), E>,
) -> Result<u64, E> {
    let all = segments(dir)?;
    let missing = |reason: String| JournalError::Corrupt {
        path: dir.to_path_buf(),
        offset: 0,
        reason,
    };
    let mut next = from;
    for (position, (first, path)) in all.iter().enumerate() {
        let end = all.get(position + 1).map(|(f, _)| *f);
        if end.is_some_and(|end| end <= next) || *first > through {
            continue;
        }
        if *first > next {
            return Err(missing(format!("entry {next} is no longer in the journal")).into());
        }
        let bytes = fs::read(path).map_err(|e| io(path, e))?;
        if bytes.len() < SEGMENT_MAGIC.len() || &bytes[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
            return Err(missing(format!("{}: bad segment header", path.display())).into());
        }
        let mut at = SEGMENT_MAGIC.len();
        let mut index = *first;
        while index <= through && at < bytes.len() {
            let (entry, used) = match record::decode(&bytes[at..], index) {
                Ok(decoded) => decoded,
                // Room of a preallocated segment: no record is written
                // past its first all-zero header. Checked only when a
                // record does not decode, not for every record read.
                Err(_) if bytes[at..].iter().take(HEADER_BYTES).all(|&b| b == 0) => break,
                Err(reason) => {
                    return Err(JournalError::Corrupt {
                        path: path.clone(),
                        offset: at as u64,
                        reason: reason.to_string(),
                    }
                    .into())
                }
            };
            at += used;
            index += 1;
            if entry.index >= next {
                next = entry.index + 1;
                each(entry)?;
            }
        }
        if next > through {
            return Ok(next);
        }
    }
    Ok(next)
}
