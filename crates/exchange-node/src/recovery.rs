//! Starting a node: open the Raft replica on the data directory, rebuild
//! the state from its newest snapshot and the committed log after it, then
//! start the pipeline.
//!
//! Layout: `DATA_DIR/journal/` holds the Raft log (exchange-journal
//! segments) and `raft-state` (term, vote, commit, configuration);
//! `DATA_DIR/snapshots/` the snapshots. Only committed entries are
//! replayed; a single voter's whole durable log is committed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use exchange_replication::transport::{PeerAddr, Transport, TransportConfig};
use exchange_replication::{CommittedKind, ReplicaNode, ReplicationError};
use thiserror::Error;

use crate::core_state::CoreState;
use crate::metrics::Metrics;
use crate::replication::{
    decode_batch, load_learned_peers, BatchError, ClusterError, ClusterSettings,
};
use crate::sequencer::{Pipeline, PipelineConfig, ReplicaParts};
use crate::state::{SectionError, StateSnapshotError};

#[derive(Debug, Error)]
pub enum RecoveryError {
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    #[error("snapshot {path}: {source}")]
    Snapshot {
        path: PathBuf,
        source: StateSnapshotError,
    },
    #[error("log entry {index}: {source}")]
    Entry { index: u64, source: BatchError },
    #[error("committed log entries after {after} are missing")]
    Gap { after: u64 },
    #[error("cluster: {0}")]
    Cluster(#[from] ClusterError),
    #[error("raft transport on {addr}: {source}")]
    Transport {
        addr: PeerAddr,
        source: std::io::Error,
    },
    /// The state rebuilt would not serialise: it could be neither hashed
    /// nor snapshotted, so the node does not start on it.
    #[error("the recovered state: {0}")]
    Unwritable(#[from] SectionError),
}

/// What recovery found, for the operator.
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// Raft index of the snapshot loaded.
    pub snapshot_index: Option<u64>,
    pub invalid_snapshots: Vec<PathBuf>,
    /// Commands replayed from the log.
    pub replayed: u64,
    pub truncated_bytes: u64,
    pub truncated_reason: Option<String>,
    /// Commands applied in all.
    pub applied_index: u64,
    /// Raft index applied.
    pub raft_index: u64,
    pub state_hash: String,
}

pub fn journal_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("journal")
}

pub fn snapshot_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("snapshots")
}

/// Raft addresses of voters added after start-up (see
/// [`crate::replication::load_learned_peers`]).
pub fn learned_peers_file(data_dir: &Path) -> PathBuf {
    data_dir.join("raft-peers")
}

/// Opens the replica in `data_dir` and rebuilds the state it has committed.
pub fn recover(
    data_dir: &Path,
    cluster: &ClusterSettings,
) -> Result<(CoreState, ReplicaNode, RecoveryReport), RecoveryError> {
    cluster.validate()?;
    let mut report = RecoveryReport::default();
    let (replica, snapshot, found) = ReplicaNode::open(
        &journal_dir(data_dir),
        &snapshot_dir(data_dir),
        &cluster.replica_config(),
    )?;
    report.invalid_snapshots = found.invalid_snapshots;
    report.truncated_bytes = found.journal.truncated_bytes;
    report.truncated_reason = found.journal.truncated_reason;
    let mut core = match snapshot {
        Some(snapshot) => {
            report.snapshot_index = Some(snapshot.index);
            let mut core = if snapshot.data.is_empty() {
                CoreState::new()
            } else {
                CoreState::restore(&snapshot.data).map_err(|source| RecoveryError::Snapshot {
                    path: snapshot_dir(data_dir),
                    source,
                })?
            };
            core.state.raft_index = snapshot.index;
            core
        }
        None => {
            // The genesis: the empty state as of the replica's first index.
            let mut core = CoreState::new();
            core.state.raft_index = replica.snapshot_index().0;
            core
        }
    };
    let mut next = core.state.raft_index + 1;
    while next <= replica.applied() {
        let committed = replica.read_committed(next, 1_024)?;
        if committed.is_empty() {
            return Err(RecoveryError::Gap { after: next - 1 });
        }
        for entry in committed {
            if let CommittedKind::Normal(data) = &entry.kind {
                if !data.is_empty() {
                    let commands = decode_batch(data).map_err(|source| RecoveryError::Entry {
                        index: entry.index,
                        source,
                    })?;
                    for command in commands {
                        core.apply(core.state.applied_index + 1, &command);
                        report.replayed += 1;
                    }
                }
            }
            core.state.raft_index = entry.index;
            next = entry.index + 1;
        }
    }
    report.applied_index = core.state.applied_index;
    report.raft_index = core.state.raft_index;
    report.state_hash = core.state.state_hash()?;
    Ok((core, replica, report))
}

/// Recovers and starts a single node (a cluster of one voter).
pub fn start(
    data_dir: &Path,
    config: PipelineConfig,
) -> Result<(Pipeline, RecoveryReport), RecoveryError> {
    start_cluster(data_dir, config, &ClusterSettings::default())
}

/// Listens where this node's own Raft address says ([`PeerAddr::listen_addrs`]:
/// a name listens on every interface, since it may not resolve yet), the
/// first of its candidates that binds.
fn start_transport(
    own: &PeerAddr,
    others: &BTreeMap<u64, PeerAddr>,
    inbox: crossbeam_channel::Sender<exchange_replication::Message>,
    config: TransportConfig,
) -> std::io::Result<Transport> {
    let mut failure = std::io::Error::from(std::io::ErrorKind::AddrNotAvailable);
    for listen in own.listen_addrs() {
        match Transport::start(listen, others, inbox.clone(), config.clone()) {
            Ok(transport) => return Ok(transport),
            Err(error) => failure = error,
        }
    }
    Err(failure)
}

/// Recovers and starts a replica of the cluster `cluster` describes.
pub fn start_cluster(
    data_dir: &Path,
    mut config: PipelineConfig,
    cluster: &ClusterSettings,
) -> Result<(Pipeline, RecoveryReport), RecoveryError> {
    let (state, mut replica, report) = recover(data_dir, cluster)?;
    if replica.status().voters == [cluster.node_id] {
        // Alone, there is nobody to wait for: lead at once.
        replica.campaign()?;
    }
    let (inbox_tx, inbox) = crossbeam_channel::bounded(65_536);
    let mut others = cluster.others();
    for (id, addr) in load_learned_peers(&learned_peers_file(data_dir)) {
        if id != cluster.node_id {
            others.entry(id).or_insert(addr);
        }
    }
    let transport = match (cluster.peers.get(&cluster.node_id), &cluster.key) {
        (Some(addr), Some(key)) if cluster.talks_to_peers() => {
            let config = TransportConfig::new(cluster.node_id, key.clone());
            Some(
                start_transport(addr, &others, inbox_tx, config).map_err(|source| {
                    RecoveryError::Transport {
                        addr: addr.clone(),
                        source,
                    }
                })?,
            )
        }
        _ => None,
    };
    config.snapshot_dir = snapshot_dir(data_dir);
    let metrics = Arc::new(Metrics::default());
    if let Some(transport) = &transport {
        let _ = metrics.raft_transport.set(transport.counters().clone());
    }
    metrics.applied_index.store(
        state.state.applied_index,
        std::sync::atomic::Ordering::Relaxed,
    );
    let parts = ReplicaParts {
        node: replica,
        transport,
        inbox,
        tick: cluster.tick,
        learned_peers: learned_peers_file(data_dir),
    };
    Ok((Pipeline::start(state, parts, config, metrics), report))
}
