//! `GET /admin/replication`: this node's part in the Raft cluster, for
//! operators and `exchange cluster status` (docs/replication.md).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde_json::{json, Value};

use super::auth::Admin;
use super::error::ApiError;
use super::AppState;

/// Role, term, leader and indices; with `?state_hash=true` also the hash
/// of the state as of the applied index (equal on replicas that applied
/// the same index; it serialises the whole state, so it is on request).
pub async fn replication(
    State(app): State<AppState>,
    _admin: Admin,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let with_hash = match query.as_deref() {
        None | Some("") => false,
        Some("state_hash=true") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "the only query is state_hash=true",
            ))
        }
    };
    let (raft_index, commands, state_hash) = app
        .handle
        .query(move |state| {
            let hash = with_hash.then(|| state.state_hash());
            (state.raft_index, state.applied_index, hash)
        })
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
