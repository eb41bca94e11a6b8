//! `GET /admin/replication`: this node's part in the Raft cluster, for
//! operators and `exchange cluster status` (docs/replication.md).

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::auth::Admin;
use super::error::ApiError;
use super::AppState;

/// Role, term, leader and indices, with the hash of the state as of the
/// applied index (equal on replicas that applied the same index).
pub async fn replication(
    State(app): State<AppState>,
    _admin: Admin,
) -> Result<Json<Value>, ApiError> {
    let (raft_index, commands, state_hash) = app
        .handle
        .query(|state| (state.raft_index, state.applied_index, state.state_hash()))
        .await?;
    let status = app.handle.replication_status();
    Ok(Json(json!({
        "id": status.node_id,
        "role": status.role,
        "term": status.term,
        "leader": status.leader_id,
        "commit_index": status.commit_index,
        "applied_index": raft_index,
        "last_index": status.last_index,
        "commands_applied": commands,
        "state_hash": state_hash,
        "voters": status.voters,
        "urls": app.handle.leader_urls(),
        "matched": status.matched.iter().map(|(id, index)| json!({"id": id, "index": index})).collect::<Vec<_>>(),
    })))
}
