//! `GET /admin/replication`: this node's part in the Raft cluster, for
//! operators and `exchange cluster status` (docs/replication.md).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use exchange_replication::Membership;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Admin;
use super::error::{ApiError, JsonBody};
use super::AppState;
use exchange_node::replication::MembershipError;

/// `{"add": ID, "raft_addr": "HOST:PORT"}` or `{"remove": ID}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoterChange {
    add: Option<u64>,
    remove: Option<u64>,
    raft_addr: Option<String>,
}

/// `POST /admin/replication/voters`: proposes adding or removing a voter.
/// `202` once proposed; it takes effect when it commits (the voters in
/// `GET /admin/replication` show it).
pub async fn change_voters(
    State(app): State<AppState>,
    _admin: Admin,
    JsonBody(request): JsonBody<VoterChange>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let bad = |message: &str| ApiError::bad_request("invalid_value", message.to_string());
    let change = match (request.add, request.remove) {
        (Some(0), _) | (_, Some(0)) => return Err(bad("node id 0 is reserved")),
        (Some(id), None) => Membership::AddVoter(id),
        (None, Some(id)) => Membership::RemoveVoter(id),
        _ => return Err(bad("give exactly one of add and remove")),
    };
    let raft_addr = match (&change, request.raft_addr.as_deref()) {
        // A name is kept as given and resolved at each connection: the
        // node added may not exist yet, and may move.
        (Membership::AddVoter(_), Some(addr)) => Some(
            addr.parse::<exchange_replication::transport::PeerAddr>()
                .map_err(|e| bad(&format!("raft_addr must be HOST:PORT: {e}")))?,
        ),
        (Membership::AddVoter(_), None) => return Err(bad("add needs raft_addr")),
        (Membership::RemoveVoter(_), Some(_)) => return Err(bad("remove takes no raft_addr")),
        (Membership::RemoveVoter(_), None) => None,
    };
    match app.handle.change_membership(change, raft_addr).await {
        Ok(()) => {
            let (what, id) = match change {
                Membership::AddVoter(id) => ("add", id),
                Membership::RemoveVoter(id) => ("remove", id),
            };
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({ "proposed": what, "id": id })),
            ))
        }
        Err(error) => Err(membership_error(&app, error)),
    }
}

/// `{"to": ID}`, or `{}` for the most up-to-date other voter.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderTransfer {
    to: Option<u64>,
}

/// `POST /admin/replication/leader`: the leader hands leadership over
/// (before it is stopped for an upgrade, say). `202` once the transfer has
/// started; the new leader shows in `GET /admin/replication`, and if the
/// target cannot take over within an election timeout this node stays
/// leader.
pub async fn transfer_leader(
    State(app): State<AppState>,
    _admin: Admin,
    JsonBody(request): JsonBody<LeaderTransfer>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    match app.handle.transfer_leader(request.to).await {
        Ok(to) => Ok((StatusCode::ACCEPTED, Json(json!({ "transferring_to": to })))),
        Err(error) => Err(membership_error(&app, error)),
    }
}

fn membership_error(app: &AppState, error: MembershipError) -> ApiError {
    match error {
        MembershipError::NotLeader { leader } => exchange_node::sequencer::SubmitError::NotLeader {
            leader,
            leader_url: leader.and_then(|id| app.handle.leader_urls().get(&id).cloned()),
        }
        .into(),
        MembershipError::Stopped => exchange_node::sequencer::SubmitError::Stopped.into(),
        error => ApiError::new(
            StatusCode::CONFLICT,
            "membership_refused",
            error.to_string(),
        ),
    }
}

/// Role, term, leader and indices; with `?state_hash=true` also the hash
/// of the state as of the applied index (equal on replicas that applied
/// the same index; it serialises the whole state, so it is on request).
/// On a gateway or market-data gateway: the replica it follows, the leader
/// its forwarder sends to and how far its mirror is behind that replica.
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
    let (position, state_hash) = if with_hash {
        let (position, hash) = app.handle.state_hash().await?;
        (position, Some(hash))
    } else {
        (app.handle.position().await?, None)
    };
    let (raft_index, commands) = (position.raft_index, position.applied_index);
    let status = app.handle.replication_status();
    let tier = app.handle.tier();
    if tier != "replica" {
        // A gateway has no Raft state of its own: it applies the log of
        // the replica it follows, and knows how far that replica had
        // applied when it last said.
        return Ok(Json(json!({
            "tier": tier,
            "role": tier,
            "following": status.following,
            "leader": status.leader_id,
            "replica_applied_index": status.commit_index,
            "applied_index": raft_index,
            "lag": status.commit_index.saturating_sub(raft_index),
            "commands_applied": commands,
            "state_hash": state_hash,
        })));
    }
    Ok(Json(json!({
        "tier": tier,
        "id": status.node_id,
        "role": status.role,
        "term": status.term,
        "leader": status.leader_id,
        "commit_index": status.commit_index,
        "applied_index": raft_index,
        "last_index": status.last_index,
        "commands_applied": commands,
        "state_hash": state_hash,
        "formats": exchange_node::formats::formats(),
        "voters": status.voters,
        "urls": app.handle.leader_urls(),
        "alarms": status.alarms,
        "matched": status.matched.iter()
            .map(|(id, index)| json!({"id": id, "index": index}))
            .collect::<Vec<_>>(),
    })))
}
