//! Scanning a segment when the journal opens: where its records end, and
//! whether damage after them is a torn final write (cut off and reported)
//! or lost acknowledged data (refused).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::JournalError;
use crate::journal::{io, Recovery, Segment, SEGMENT_MAGIC};
use crate::record::{self, Invalid, HEADER_BYTES};

pub(crate) fn scan_segment(
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
            rewrite_header(path)?;
            segment.len = SEGMENT_MAGIC.len() as u64;
            recovery.truncated_bytes += bytes.len() as u64;
            return Ok(segment);
        }
        return Err(corrupt(0, "bad segment header".into()));
    }
    let mut at = SEGMENT_MAGIC.len();
    let mut index = first_index;
    while at < bytes.len() {
        match record::parse(&bytes[at..], index) {
            Ok((_, _, used)) => {
                segment.offsets.push(at as u64);
                at += used;
                index += 1;
            }
            // Room a preallocated segment has not used yet.
            Err(_) if bytes[at..].iter().all(|&b| b == 0) => break,
            Err(reason) => {
                // Only the written part counts: zeros after it are
                // preallocated room.
                let written = bytes.iter().rposition(|&b| b != 0).map_or(at, |p| p + 1);
                let tail_damage = matches!(
                    reason,
                    Invalid::Torn | Invalid::BadChecksum | Invalid::BadLength(_)
                );
                if !(is_last
                    && tail_damage
                    && is_final_record(&bytes[at..], written - at, index + 1))
                {
                    return Err(corrupt(at as u64, reason.to_string()));
                }
                let dropped = (written - at) as u64;
                cut_at(path, at as u64)?;
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

/// Gives a segment cut short while it was created its full header.
fn rewrite_header(path: &Path) -> Result<(), JournalError> {
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    file.write_all(SEGMENT_MAGIC)
        .and_then(|_| file.sync_all())
        .map_err(|e| io(path, e))
}

/// Cuts the segment's torn tail off, durably.
fn cut_at(path: &Path, len: u64) -> Result<(), JournalError> {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    file.set_len(len)
        .and_then(|_| file.sync_all())
        .map_err(|e| io(path, e))
}

/// Whether damaged bytes at the tail could be one interrupted write: a
/// crash damages only the last record, so no valid record for the next
/// index may follow anywhere after it. Records can only start in the first
/// `written` bytes (the rest are zeros), though one may end after them.
fn is_final_record(tail: &[u8], written: usize, next_index: u64) -> bool {
    let needle = next_index.to_le_bytes();
    let starts = tail
        .len()
        .saturating_sub(HEADER_BYTES - 1)
        .min(written.max(1));
    (1..starts).all(|offset| {
        // The index field sits 8 bytes into a header: a cheap filter before
        // a checksum.
        tail[offset + 8..offset + 16] != needle
            || record::parse(&tail[offset..], next_index).is_err()
    })
}
