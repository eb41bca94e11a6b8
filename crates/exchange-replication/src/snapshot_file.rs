//! Snapshot files as the replica writes them: the exchange-journal
//! snapshot format, whose state bytes start with the Raft snapshot
//! metadata (`u32` length, protobuf `SnapshotMetadata`: index, term,
//! configuration) followed by the state machine's bytes.

use std::path::{Path, PathBuf};

use exchange_journal::snapshots::{self, Snapshot as SnapshotFile};
use protobuf::Message as _;
use raft::eraftpb::{ConfState, SnapshotMetadata};

use crate::error::ReplicationError;

/// Where every member of a new cluster starts: a virtual snapshot at index
/// 1, term 1, of the empty state machine with the bootstrap voters. A node
/// that joins later (no bootstrap voters) starts empty at index 0 and, as
/// the leader's log begins at 2, always catches up by snapshot: the
/// configuration it learns is the cluster's, not a guess.
pub(crate) fn genesis(bootstrap: &[u64]) -> SnapshotMetadata {
    let mut meta = SnapshotMetadata::default();
    if !bootstrap.is_empty() {
        meta.index = 1;
        meta.term = 1;
        meta.mut_conf_state().voters = bootstrap.to_vec();
    }
    meta
}

pub(crate) fn snapshot_bytes(meta: &SnapshotMetadata, data: &[u8]) -> Vec<u8> {
    let meta = meta.write_to_bytes().unwrap_or_default();
    let mut bytes = Vec::with_capacity(4 + meta.len() + data.len());
    bytes.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&meta);
    bytes.extend_from_slice(data);
    bytes
}

/// Splits a snapshot file's bytes into the Raft metadata and the state
/// machine's data.
pub(crate) fn split_snapshot(
    file: &SnapshotFile,
) -> Result<(SnapshotMetadata, &[u8]), ReplicationError> {
    let corrupt = |reason: String| ReplicationError::CorruptSnapshot {
        index: file.index,
        reason,
    };
    let len = file
        .state
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| corrupt("truncated".into()))?;
    let meta = file
        .state
        .get(4..4 + len)
        .ok_or_else(|| corrupt("truncated metadata".into()))?;
    let meta = SnapshotMetadata::parse_from_bytes(meta).map_err(|e| corrupt(e.to_string()))?;
    if meta.index != file.index || meta.term != file.term {
        return Err(corrupt("metadata disagrees with the file header".into()));
    }
    Ok((meta, &file.state[4 + len..]))
}

/// The state machine's bytes of a snapshot file the replica wrote (empty:
/// the empty state), for readers of the log outside the replica.
pub fn snapshot_state(file: &SnapshotFile) -> Result<&[u8], ReplicationError> {
    split_snapshot(file).map(|(_, data)| data)
}

/// Writes a state-machine snapshot as of log `index` (of `term`, under
/// configuration `conf`) durably, from any thread; the replica learns of it
/// through `ReplicaNode::snapshot_written`.
pub fn write_snapshot(
    snapshot_dir: &Path,
    index: u64,
    term: u64,
    conf: &ConfState,
    data: &[u8],
    keep: usize,
) -> Result<PathBuf, ReplicationError> {
    let meta = SnapshotMetadata {
        index,
        term,
        conf_state: Some(conf.clone()).into(),
        ..SnapshotMetadata::default()
    };
    let file = SnapshotFile {
        index,
        term,
        state: snapshot_bytes(&meta, data),
    };
    Ok(snapshots::save(snapshot_dir, &file, keep)?)
}

pub(crate) fn oldest_snapshot_index(dir: &Path) -> Result<Option<u64>, ReplicationError> {
    let mut oldest = None;
    if let Ok(items) = std::fs::read_dir(dir) {
        for item in items.flatten() {
            let name = item.file_name();
            let index = name.to_str().and_then(|n| {
                n.strip_prefix("snapshot-")?
                    .strip_suffix(".snap")?
                    .parse::<u64>()
                    .ok()
            });
            if let Some(index) = index {
                oldest = Some(oldest.map_or(index, |o: u64| o.min(index)));
            }
        }
    }
    Ok(oldest)
}
