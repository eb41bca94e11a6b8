//! The small durable record beside the log: Raft's hard state (term,
//! vote, commit) and the cluster configuration with the index it took
//! effect at.
//!
//! It is replaced atomically: written to a temporary name, synced, renamed
//! over the old file and the directory synced. A crash leaves the old
//! record or the new one, never a mix; a checksum catches anything else.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{ConfState, HardState};

use crate::error::{io, ReplicationError};

pub(crate) const MAGIC: &[u8; 8] = b"EXRAFTS1";
pub(crate) const FILE_NAME: &str = "raft-state";

/// What the file holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DurableState {
    pub hard: HardState,
    pub conf: ConfState,
    /// Log index of the last configuration change `conf` includes.
    pub conf_index: u64,
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// Makes a directory entry (a new or renamed file) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), ReplicationError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(dir, e))
}

fn encode(state: &DurableState) -> Vec<u8> {
    let conf = state.conf.write_to_bytes().unwrap_or_default();
    let mut body = Vec::with_capacity(32 + conf.len());
    body.extend_from_slice(&state.hard.term.to_le_bytes());
    body.extend_from_slice(&state.hard.vote.to_le_bytes());
    body.extend_from_slice(&state.hard.commit.to_le_bytes());
    body.extend_from_slice(&state.conf_index.to_le_bytes());
    body.extend_from_slice(&conf);
    let mut bytes = Vec::with_capacity(16 + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

fn decode(bytes: &[u8]) -> Result<DurableState, String> {
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err("bad header".into());
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (crc, len) = (word(8), word(12) as usize);
    let body = &bytes[16..];
    if body.len() != len || body.len() < 32 {
        return Err(format!("length {} does not match {len}", body.len()));
    }
    if crc32c::crc32c(body) != crc {
        return Err("checksum mismatch".into());
    }
    let long = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&body[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let hard = HardState {
        term: long(0),
        vote: long(8),
        commit: long(16),
        ..HardState::default()
    };
    let conf = ConfState::parse_from_bytes(&body[32..]).map_err(|e| e.to_string())?;
    Ok(DurableState {
        hard,
        conf,
        conf_index: long(24),
    })
}

/// Reads the state file in `dir`; `None` if there is none yet.
pub fn load(dir: &Path) -> Result<Option<DurableState>, ReplicationError> {
    let path = path(dir);
    match fs::read(&path) {
        Ok(bytes) => decode(&bytes)
            .map(Some)
            .map_err(|reason| ReplicationError::CorruptState { path, reason }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path, e)),
    }
}

/// Replaces the state file durably; `fsync` false skips the syncs (tests
/// that simulate process crashes only, where the page cache survives).
pub fn store(dir: &Path, state: &DurableState, fsync: bool) -> Result<(), ReplicationError> {
    let path = path(dir);
    let temp = dir.join(format!("{FILE_NAME}.tmp"));
    let mut file = File::create(&temp).map_err(|e| io(&temp, e))?;
    let written =
        file.write_all(&encode(state))
            .and_then(|()| if fsync { file.sync_all() } else { Ok(()) });
    drop(file);
    if let Err(error) = written {
        // The old record stands; a full disk keeps none of the new one.
        let _ = fs::remove_file(&temp);
        return Err(io(&temp, error));
    }
    fs::rename(&temp, &path).map_err(|e| io(&path, e))?;
    if fsync {
        sync_dir(dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), None);
        let mut state = DurableState::default();
        state.hard.term = 7;
        state.hard.vote = 2;
        state.hard.commit = 41;
        state.conf.voters = vec![1, 2, 3];
        state.conf.learners = vec![4];
        state.conf_index = 12;
        store(dir.path(), &state, true).unwrap();
        assert_eq!(load(dir.path()).unwrap(), Some(state.clone()));
        let mut bytes = fs::read(path(dir.path())).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(path(dir.path()), &bytes).unwrap();
        assert!(matches!(
            load(dir.path()),
            Err(ReplicationError::CorruptState { .. })
        ));
    }
}
