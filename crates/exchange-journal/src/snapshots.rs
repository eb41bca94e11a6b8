//! Snapshot files: the core's state as of a log index.
//!
//! `snapshot-{index}.snap` holds a header (magic, index, term, length,
//! CRC32C) and the state bytes. It is written to a temporary name, synced,
//! renamed into place and the directory synced, so a crash leaves either
//! the old set of snapshots or the new one, never half a file under a
//! final name. Loading takes the newest snapshot that validates.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::JournalError;
use crate::journal::sync_dir;

pub(crate) const MAGIC: &[u8; 8] = b"EXSNAPF1";
const HEADER_BYTES: usize = 8 + 8 + 8 + 8 + 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Index of the last log entry the state includes.
    pub index: u64,
    pub term: u64,
    pub state: Vec<u8>,
}

fn io(path: &Path, source: std::io::Error) -> JournalError {
    JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn file_name(index: u64) -> String {
    format!("snapshot-{index:020}.snap")
}

fn listed(dir: &Path) -> Result<Vec<(u64, PathBuf)>, JournalError> {
    let mut found = Vec::new();
    if !dir.exists() {
        return Ok(found);
    }
    for item in fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = item.map_err(|e| io(dir, e))?.path();
        let index = path.file_name().and_then(|n| n.to_str()).and_then(|n| {
            n.strip_prefix("snapshot-")?
                .strip_suffix(".snap")?
                .parse::<u64>()
                .ok()
        });
        if let Some(index) = index {
            found.push((index, path));
        }
    }
    found.sort();
    Ok(found)
}

/// Writes a snapshot durably and keeps only the newest `keep` of them.
pub fn save(dir: &Path, snapshot: &Snapshot, keep: usize) -> Result<PathBuf, JournalError> {
    fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let path = dir.join(file_name(snapshot.index));
    let temp = dir.join(format!("{}.tmp", file_name(snapshot.index)));
    let mut bytes = Vec::with_capacity(HEADER_BYTES + snapshot.state.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&snapshot.index.to_le_bytes());
    bytes.extend_from_slice(&snapshot.term.to_le_bytes());
    bytes.extend_from_slice(&(snapshot.state.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(&snapshot.state).to_le_bytes());
    bytes.extend_from_slice(&snapshot.state);
    let mut file = fs::File::create(&temp).map_err(|e| io(&temp, e))?;
    if let Err(error) = file.write_all(&bytes).and_then(|_| file.sync_all()) {
        // A full disk must not keep the part written: it is space.
        let _ = fs::remove_file(&temp);
        return Err(io(&temp, error));
    }
    fs::rename(&temp, &path).map_err(|e| io(&path, e))?;
    sync_dir(dir)?;
    // Read back what was written before trusting it enough to delete older
    // snapshots.
    let reread = read(&path)?;
    if reread.as_ref() != Some(snapshot) {
        return Err(JournalError::Corrupt {
            path,
            offset: 0,
            reason: "snapshot did not read back".into(),
        });
    }
    let all = listed(dir)?;
    for (_, old) in all.iter().take(all.len().saturating_sub(keep.max(1))) {
        fs::remove_file(old).map_err(|e| io(old, e))?;
    }
    Ok(path)
}

fn read(path: &Path) -> Result<Option<Snapshot>, JournalError> {
    let bytes = fs::read(path).map_err(|e| io(path, e))?;
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return Ok(None);
    }
    let long = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let (index, term, len) = (long(8), long(16), long(24));
    let crc = u32::from_le_bytes([bytes[32], bytes[33], bytes[34], bytes[35]]);
    let state = &bytes[HEADER_BYTES..];
    if state.len() as u64 != len || crc32c::crc32c(state) != crc {
        return Ok(None);
    }
    Ok(Some(Snapshot {
        index,
        term,
        state: state.to_vec(),
    }))
}

/// The newest snapshot that validates, and the names of any that did not.
pub fn load_latest(dir: &Path) -> Result<(Option<Snapshot>, Vec<PathBuf>), JournalError> {
    let mut invalid = Vec::new();
    for (_, path) in listed(dir)?.into_iter().rev() {
        match read(&path)? {
            Some(snapshot) => return Ok((Some(snapshot), invalid)),
            None => invalid.push(path),
        }
    }
    Ok((None, invalid))
}

/// The newest snapshot at or before `index` that validates.
pub fn load_at_or_before(dir: &Path, index: u64) -> Result<Option<Snapshot>, JournalError> {
    for (_, path) in listed(dir)?.into_iter().rev().filter(|(i, _)| *i <= index) {
        if let Some(snapshot) = read(&path)? {
            return Ok(Some(snapshot));
        }
    }
    Ok(None)
}

/// Deletes every snapshot but the newest `keep` and the newest at or
/// before `floor` (a reader still behind needs it to replay from); returns
/// the indices kept, oldest first.
pub fn prune(dir: &Path, keep: usize, floor: u64) -> Result<Vec<u64>, JournalError> {
    let all = listed(dir)?;
    let newest = all.len().saturating_sub(keep.max(1));
    let below_floor = all.iter().rposition(|(i, _)| *i <= floor);
    let mut kept = Vec::new();
    for (position, (index, path)) in all.iter().enumerate() {
        if position >= newest || Some(position) == below_floor {
            kept.push(*index);
        } else {
            fs::remove_file(path).map_err(|e| io(path, e))?;
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod retention_tests {
    use super::*;

    fn snapshot(index: u64) -> Snapshot {
        Snapshot {
            index,
            term: 0,
            state: vec![index as u8; 4],
        }
    }

    #[test]
    fn pruning_keeps_the_newest_and_the_one_under_the_floor() {
        let dir = tempfile::tempdir().expect("temp dir");
        for index in [10, 20, 30, 40, 50] {
            save(dir.path(), &snapshot(index), usize::MAX).expect("save");
        }
        assert_eq!(prune(dir.path(), 2, 25).expect("prune"), vec![20, 40, 50]);
        assert_eq!(
            load_at_or_before(dir.path(), 39).expect("load"),
            Some(snapshot(20))
        );
        assert_eq!(load_at_or_before(dir.path(), 19).expect("load"), None);
        assert_eq!(prune(dir.path(), 2, u64::MAX).expect("prune"), vec![40, 50]);
        assert_eq!(prune(dir.path(), 2, 5).expect("prune"), vec![40, 50]);
    }
}
