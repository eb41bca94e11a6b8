//! `GET /admin/status`: the operator dashboard's one JSON document (node
//! role and log position, throughput, latency, rejects, market data).
//!
//! Assembly is split by source so each part can change alone:
//! [`replication`] says what this node knows of the cluster (from its Raft
//! state: a single node is a cluster of one voter, its own leader), the
//! sequencer's [`Metrics`] give throughput and latency, the market-data
//! service its subscribers.
//!
//! The state hash is computed on the core thread and costs a pass over the
//! whole state, so it is reused for [`HASH_REFRESH`] however often the
//! page polls; its log index says which state it is the hash of.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use serde_json::{json, Value};

use super::auth::Admin;
use super::error::ApiError;
use super::AppState;
use exchange_node::metrics_window::{SecondPoint, WindowSummary};
use exchange_node::replication::ReplicationStatus;

/// Seconds summarised by the percentiles and the command rate.
pub const SUMMARY_SECS: u64 = 10;
/// How long a computed state hash is reused.
pub const HASH_REFRESH: Duration = Duration::from_secs(2);

/// One node as this node knows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeReplication {
    pub node_id: u64,
    /// `leader`, `follower`, `candidate` or `pre_candidate`; `voter` for
    /// another node as its leader sees it.
    pub role: String,
    pub term: u64,
    /// Last Raft index known committed (durable on a majority).
    pub commit_index: u64,
    /// Last Raft index applied to the state; for another node as its
    /// leader sees it, the last index it has replicated.
    pub applied_index: u64,
    /// Committed entries not applied (or not replicated) yet.
    pub lag: u64,
}

/// The cluster as this node sees it, this node first; a leader also
/// lists every other voter with the last index it has replicated.
pub fn replication(status: &ReplicationStatus) -> Vec<NodeReplication> {
    let mut nodes = vec![NodeReplication {
        node_id: status.node_id,
        role: status.role.clone(),
        term: status.term,
        commit_index: status.commit_index,
        applied_index: status.applied_index,
        lag: status.commit_index.saturating_sub(status.applied_index),
    }];
    nodes.extend(
        status
            .matched
            .iter()
            .filter(|(id, _)| *id != status.node_id)
            .map(|&(node_id, matched)| NodeReplication {
                node_id,
                role: "voter".into(),
                term: status.term,
                commit_index: status.commit_index,
                applied_index: matched,
                lag: status.commit_index.saturating_sub(matched),
            }),
    );
    nodes
}

/// Per gateway: when it started, and the last state hash computed.
pub struct StatusCache {
    started: Instant,
    hash: Mutex<Option<(Instant, u64, String)>>,
}

impl Default for StatusCache {
    fn default() -> Self {
        StatusCache {
            started: Instant::now(),
            hash: Mutex::new(None),
        }
    }
}

impl StatusCache {
    async fn state_hash(&self, app: &AppState) -> Result<(u64, String), ApiError> {
        let now = Instant::now();
        if let Some((at, index, hash)) =
            self.hash.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
        {
            if now.saturating_duration_since(*at) < HASH_REFRESH {
                return Ok((*index, hash.clone()));
            }
        }
        let (position, hash) = app.handle.state_hash().await?;
        let index = position.applied_index;
        *self.hash.lock().unwrap_or_else(|p| p.into_inner()) = Some((now, index, hash.clone()));
        Ok((index, hash))
    }
}

/// The full document (docs/ui.md describes every field).
pub async fn assemble(app: &AppState) -> Result<Value, ApiError> {
    let metrics = &app.handle.metrics;
    let own = app.handle.replication_status();
    let nodes = replication(&own);
    let (hash_index, state_hash) = app.status.state_hash(app).await?;
    let now = Instant::now();
    let WindowSummary {
        seconds,
        commands_per_sec,
        ack_latency_us,
        fsync_latency_us,
    } = metrics.window.summary(now, SUMMARY_SECS);
    let series: Vec<SecondPoint> = metrics.window.series(now);
    let rejects: BTreeMap<&str, u64> = metrics.rejects();
    let market = app.market.as_ref().map(|market| {
        let s = &market.stats;
        let get = |v: &std::sync::atomic::AtomicU64| v.load(Ordering::Relaxed);
        let applied = metrics.applied_index.load(Ordering::Relaxed);
        json!({
            "subscribers": get(&s.subscribers),
            "messages_total": get(&s.messages),
            "conflated_total": get(&s.conflated),
            "slow_consumers_total": get(&s.kicked),
            "resyncs_total": get(&s.resyncs),
            "applied_index": get(&s.applied_index),
            "lag": applied.saturating_sub(get(&s.applied_index)),
        })
    });
    let this = nodes.first().cloned();
    Ok(json!({
        // `replica`, `gateway` or `md-gateway`; a gateway's lag is counted
        // against what the replica it follows had applied.
        "tier": app.handle.tier(),
        "following": own.following,
        "leader": own.leader_id,
        "node_id": this.as_ref().map(|n| n.node_id),
        "role": this.as_ref().map(|n| n.role.clone()),
        "term": this.as_ref().map(|n| n.term),
        "commit_index": this.as_ref().map(|n| n.commit_index),
        "applied_index": this.as_ref().map(|n| n.applied_index),
        "lag": this.as_ref().map(|n| n.lag),
        "nodes": nodes,
        "healthy": app.handle.is_healthy(),
        // `nospace` while this replica waits for disk space; empty when well.
        "alarms": own.alarms,
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_secs": app.status.started.elapsed().as_secs(),
        "state_hash": state_hash,
        "state_hash_index": hash_index,
        "window_secs": seconds,
        "commands_per_sec": commands_per_sec,
        "commands_total": metrics.commands.load(Ordering::Relaxed),
        "ack_latency_us": ack_latency_us,
        "fsync_latency_us": fsync_latency_us,
        "queues": {
            "submit": metrics.submit_queue_depth.load(Ordering::Relaxed),
            "core": metrics.core_queue_depth.load(Ordering::Relaxed),
        },
        "rejects": rejects,
        "marketdata": market,
        // How far the reporting store's copy of the log is behind the
        // applied index; null on a node that runs no reporting service.
        "reporting_lag": app.reporting.as_ref().map(|r| r.lag().entries),
        // The same lag in log time (see `exchange_reporting_lag_seconds`).
        "reporting_lag_seconds": app.reporting.as_ref().map(|r| r.lag().seconds()),
        // Log entries the store could not write and skipped: an alarm
        // (see docs/reporting.md, "Dead letters").
        "reporting_dead_letters": app.reporting.as_ref().map(|r| r.dead_letters()),
        "series": series,
    }))
}

pub async fn status(State(app): State<AppState>, _admin: Admin) -> Result<Json<Value>, ApiError> {
    Ok(Json(assemble(&app).await?))
}
