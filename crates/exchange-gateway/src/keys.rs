//! API key routes: create, list, revoke and rotate, for any account under
//! `/admin` (admin token), and for its own account under `/v1/keys` (a key
//! with the `transfer` scope; listing needs `read`). A key manages only
//! keys it covers, and its children inherit its restrictions: the entry
//! names the key that asks, and the core holds it to that when applying it
//! ([`exchange_node::key_rules`]).
//!
//! Each change is a log entry, applied on every replica at the same index;
//! its answer comes once the key works (or stops working) on this node.
//! An HMAC key's secret is in the create or rotate answer and nowhere
//! else: the server derives it from its master key and never stores it.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use base64::Engine as _;
use exchange_node::entry::LogEntry;
use exchange_node::key_rules::{canonical_allow, check_label};
use exchange_node::keys::{check_key_id, ApiKey, KeyError, KeySpec, Scope, Scopes};
use exchange_node::random_hex;
use exchange_node::reads::KeyQuery;
use exchange_node::state::Applied;
use exchange_types::AccountId;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::{Admin, Signed, KEY_HEADER};
use super::error::{parse_json, read_body, ApiError, ApiPath, JsonBody};
use super::replay::RequestGuard;
use super::AppState;

type Created = Result<(StatusCode, Json<Value>), ApiError>;

/// A new key, as a client asks for it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    scopes: Vec<String>,
    #[serde(default)]
    label: String,
    #[serde(default)]
    expires_in_secs: Option<u64>,
    #[serde(default)]
    allow: Vec<String>,
    /// Makes an Ed25519 key: its 32-byte public key, hex or base64.
    #[serde(default)]
    ed25519_public_key: Option<String>,
}

/// What a rotation may carry: an Ed25519 key's new public key.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RotateRequest {
    #[serde(default)]
    ed25519_public_key: Option<String>,
}

pub fn key_error(error: KeyError) -> ApiError {
    let status = match error {
        KeyError::UnknownKey | KeyError::UnknownAccount => StatusCode::NOT_FOUND,
        KeyError::DuplicateKey | KeyError::TooManyKeys => StatusCode::CONFLICT,
        KeyError::NotCovered => StatusCode::FORBIDDEN,
        KeyError::ManagerGone => StatusCode::UNAUTHORIZED,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, error.code(), error.to_string())
}

/// The public key as the log carries it (hex), from hex or base64, once
/// it is known to be a valid Ed25519 point of large order: a small-order
/// point (the identity, or one of order 2, 4 or 8) verifies no signature
/// under strict verification, so its key could never sign.
fn public_key(text: &str) -> Result<String, ApiError> {
    let text = text.trim();
    let bytes = if text.len() == 64 {
        hex::decode(text).ok()
    } else {
        base64::engine::general_purpose::STANDARD.decode(text).ok()
    };
    let point = bytes
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_value",
                concat!(
                    "ed25519_public_key must be a valid 32-byte Ed25519 public key, ",
                    "as 64 hex digits or base64"
                ),
            )
        })?;
    if point.is_weak() {
        return Err(ApiError::bad_request(
            "weak_public_key",
            "ed25519_public_key is a point of small order, with which no signature verifies",
        ));
    }
    Ok(hex::encode(point.as_bytes()))
}

fn spec(request: KeyRequest) -> Result<KeySpec, ApiError> {
    check_label(&request.label).map_err(key_error)?;
    let spec = KeySpec {
        key_id: random_hex(16),
        label: request.label,
        scopes: Scopes::parse(&request.scopes).map_err(key_error)?,
        expires_in_secs: request.expires_in_secs,
        allow: canonical_allow(&request.allow).map_err(key_error)?,
        ed25519: request
            .ed25519_public_key
            .as_deref()
            .map(public_key)
            .transpose()?,
    };
    spec.check().map_err(key_error)?;
    Ok(spec)
}

/// Submits a key command (guarded as a signed write when `guard` is
/// given); the core's refusal becomes the error.
async fn submit(
    app: &AppState,
    guard: Option<RequestGuard>,
    entry: LogEntry,
) -> Result<Arc<Applied>, ApiError> {
    let applied = crate::replay::submit(&app.handle, guard, entry).await?;
    match &applied.key_error {
        Some(error) => Err(key_error(error.clone())),
        None => Ok(applied),
    }
}

/// One key as the API shows it; `secret` only in a create or rotate answer.
fn key_json(app: &AppState, key_id: &str, key: &ApiKey, with_secret: bool) -> Value {
    let mut body = json!({
        "api_key": key_id,
        "account_id": key.account,
        "type": if key.ed25519.is_some() { "ed25519" } else { "hmac" },
        "label": key.label,
        "scopes": key.scopes.names(),
        "created_at": key.created_at,
        "expires_at": key.expires_at,
        "allow": key.allow,
    });
    if let Some(public_key) = &key.ed25519 {
        body["ed25519_public_key"] = json!(public_key);
    } else if with_secret {
        body["api_secret"] = json!(app.handle.hmac_secret(key_id));
    }
    body
}

/// The key as the state now holds it, with its secret: the answer to a
/// create or rotate.
async fn answer_new(app: &AppState, key_id: String) -> Created {
    let found = app.handle.api_keys(KeyQuery::One(key_id.clone())).await?;
    let (_, key) = found
        .into_iter()
        .next()
        .ok_or_else(|| key_error(KeyError::UnknownKey))?;
    Ok((
        StatusCode::CREATED,
        Json(key_json(app, &key_id, &key, true)),
    ))
}

/// `manager`: the account's key asking (`by`), which the new key must not
/// exceed.
async fn create(
    app: &AppState,
    account: AccountId,
    request: KeyRequest,
    manager: Option<Manager>,
) -> Created {
    let key = spec(request)?;
    let key_id = key.key_id.clone();
    let (_, by, guard) = split(manager);
    submit(
        app,
        guard,
        LogEntry::CreateKey {
            ts: 0,
            account,
            key,
            by,
        },
    )
    .await?;
    tracing::info!(account, "API key created");
    answer_new(app, key_id).await
}

async fn list(app: &AppState, account: AccountId) -> Result<Json<Value>, ApiError> {
    let keys: Vec<Value> = app
        .handle
        .api_keys(KeyQuery::Account(account))
        .await?
        .iter()
        .map(|(id, key)| key_json(app, id, key, false))
        .collect();
    Ok(Json(json!({ "account_id": account, "keys": keys })))
}

/// Who manages a key: the operator (`None`), or a key of the account
/// (with its signed request's guard).
struct Manager {
    account: AccountId,
    key: String,
    guard: Option<RequestGuard>,
}

type Managed = (Option<AccountId>, Option<String>, Option<RequestGuard>);

fn split(manager: Option<Manager>) -> Managed {
    manager.map_or((None, None, None), |m| {
        (Some(m.account), Some(m.key), m.guard)
    })
}

async fn revoke(
    app: &AppState,
    key_id: String,
    manager: Option<Manager>,
) -> Result<Json<Value>, ApiError> {
    known_shape(&key_id)?;
    let (account, by, guard) = split(manager);
    let applied = submit(
        app,
        guard,
        LogEntry::RevokeKey {
            ts: 0,
            key_id: key_id.clone(),
            account,
            by,
        },
    )
    .await?;
    tracing::info!(account = applied.account, "API key revoked");
    Ok(Json(
        json!({ "api_key": key_id, "account_id": applied.account, "revoked": true }),
    ))
}

async fn rotate(
    app: &AppState,
    key_id: String,
    manager: Option<Manager>,
    request: RotateRequest,
) -> Created {
    known_shape(&key_id)?;
    let (account, by, guard) = split(manager);
    let new_key_id = random_hex(16);
    let ed25519 = request
        .ed25519_public_key
        .as_deref()
        .map(public_key)
        .transpose()?;
    submit(
        app,
        guard,
        LogEntry::RotateKey {
            ts: 0,
            key_id,
            account,
            new_key_id: new_key_id.clone(),
            ed25519,
            by,
        },
    )
    .await?;
    tracing::info!(account, "API key rotated");
    answer_new(app, new_key_id).await
}

/// A key id no key can have is refused before it reaches the log (whose
/// entries are bounded), as the unknown key it is.
fn known_shape(key_id: &str) -> Result<(), ApiError> {
    check_key_id(key_id).map_err(|_| key_error(KeyError::UnknownKey))
}

/// An empty body is an empty request (a rotation needs nothing else).
fn optional_json<T: Default + serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        Ok(T::default())
    } else {
        parse_json(body)
    }
}

async fn account_known(app: &AppState, account: AccountId) -> Result<(), ApiError> {
    // Account 0 collects fees and holds no keys.
    if account == 0 || !app.handle.account_exists(account).await? {
        return Err(key_error(KeyError::UnknownAccount));
    }
    Ok(())
}

pub async fn admin_create(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
    JsonBody(request): JsonBody<KeyRequest>,
) -> Created {
    account_known(&app, account).await?;
    create(&app, account, request, None).await
}

pub async fn admin_list(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
) -> Result<Json<Value>, ApiError> {
    account_known(&app, account).await?;
    list(&app, account).await
}

pub async fn admin_revoke(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(key_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    revoke(&app, key_id, None).await
}

pub async fn admin_rotate(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(key_id): ApiPath<String>,
    request: axum::extract::Request,
) -> Created {
    let (parts, body) = request.into_parts();
    let body = read_body(&parts.headers, body, app.gateway.max_body_bytes).await?;
    rotate(&app, key_id, None, optional_json(&body)?).await
}

/// The key a verified request was signed with, managing its account's
/// keys.
fn manager(headers: &HeaderMap, signed: &Signed) -> Result<Manager, ApiError> {
    let account = signed.require(Scope::Transfer)?;
    let key = headers
        .get(KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| key_error(KeyError::ManagerGone))?;
    Ok(Manager {
        account,
        key: key.to_owned(),
        guard: signed.guard(),
    })
}

pub async fn own_create(
    State(app): State<AppState>,
    headers: HeaderMap,
    signed: Signed,
) -> Created {
    let manager = manager(&headers, &signed)?;
    let request: KeyRequest = parse_json(&signed.body)?;
    let wanted = Scopes::parse(&request.scopes).map_err(key_error)?;
    if !signed.caller.scopes.covers(wanted) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            "a key can only create keys with scopes it holds itself",
        ));
    }
    create(&app, manager.account, request, Some(manager)).await
}

pub async fn own_list(
    State(app): State<AppState>,
    signed: Signed,
) -> Result<Json<Value>, ApiError> {
    let account = signed.require(Scope::Read)?;
    list(&app, account).await
}

pub async fn own_revoke(
    State(app): State<AppState>,
    ApiPath(key_id): ApiPath<String>,
    headers: HeaderMap,
    signed: Signed,
) -> Result<Json<Value>, ApiError> {
    let manager = manager(&headers, &signed)?;
    revoke(&app, key_id, Some(manager)).await
}

pub async fn own_rotate(
    State(app): State<AppState>,
    ApiPath(key_id): ApiPath<String>,
    headers: HeaderMap,
    signed: Signed,
) -> Created {
    let manager = manager(&headers, &signed)?;
    let request = optional_json(&signed.body)?;
    rotate(&app, key_id, Some(manager), request).await
}
