//! The reporter's own state snapshots: where a restart resumes the log.
//!
//! They are the replicas' snapshot files (the same format, named by Raft
//! index, in `DATA_DIR/snapshots`), written only when the store holds
//! every command the state has applied, so each is at or before the
//! store's position. A store that is behind every one of them (restored
//! from an older backup, or another store) starts from the genesis.

use std::path::Path;

use exchange_node::log_files::{self, LogFilesError};
use exchange_node::recovery::snapshot_dir;
use exchange_node::{CoreState, ServerState};
use exchange_replication::ConfState;

use super::StartError;

/// Snapshots of its state a reporter keeps (the newer one might yet
/// prove unreadable).
const KEEP: usize = 2;

fn local_error(index: u64) -> impl Fn(String) -> StartError {
    move |reason| StartError::LocalState { index, reason }
}

/// The newest kept state at or before command `position`, with its Raft
/// index set and its term; the genesis (the empty state at Raft index 1)
/// when none is.
pub(super) fn starting_state(
    data_dir: &Path,
    position: u64,
) -> Result<(ServerState, u64), StartError> {
    let mut below = u64::MAX;
    loop {
        let file = log_files::snapshot_at_or_before(data_dir, below).map_err(|e| match e {
            LogFilesError::Journal(e) => local_error(below)(e.to_string()),
            LogFilesError::Snapshot { index, reason } => local_error(index)(reason),
        })?;
        let Some(file) = file else { break };
        let mut state = if file.data.is_empty() {
            ServerState::new()
        } else {
            ServerState::restore(&file.data)
                .map_err(|e| local_error(file.raft_index)(e.to_string()))?
        };
        if state.applied_index <= position {
            state.raft_index = file.raft_index;
            return Ok((state, file.term));
        }
        tracing::warn!(
            snapshot = file.raft_index,
            command = state.applied_index,
            position,
            "reporter: a kept state is ahead of the store; looking for an older one"
        );
        match file.raft_index.checked_sub(1) {
            Some(earlier) if earlier > 0 => below = earlier,
            _ => break,
        }
    }
    let mut genesis = ServerState::new();
    genesis.raft_index = 1;
    Ok((genesis, 0))
}

/// Writes `state` (as of Raft entry `state.raft_index`, of `term`) as a
/// snapshot, keeping the newest [`KEEP`].
pub(super) fn save(data_dir: &Path, state: &mut ServerState, term: u64) -> Result<(), String> {
    let raft_index = state.raft_index;
    // The snapshot format carries the history beside the state; the
    // reporter keeps none, so an empty one goes with it.
    let core = CoreState {
        state: std::mem::take(state),
        ..CoreState::default()
    };
    let bytes = core.snapshot();
    *state = core.state;
    state.raft_index = raft_index;
    let bytes = bytes.map_err(|e| e.to_string())?;
    exchange_replication::write_snapshot(
        &snapshot_dir(data_dir),
        raft_index,
        term,
        &ConfState::default(),
        &bytes,
        KEEP,
    )
    .map(drop)
    .map_err(|e| e.to_string())
}
