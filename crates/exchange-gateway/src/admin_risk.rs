//! Member controls over HTTP: the operator's routes under
//! `/admin/accounts/{account}` (limits, kill switch, market-maker
//! protection, sub-accounts), the account's own market-maker protection
//! reset and its transfers within its family. Each is one logged command,
//! answered with what the core made of it.

use axum::extract::State;
use axum::Json;
use exchange_types::{
    format_units, AccountId, Command, Dec, Event, EventKind, InternalTransfer, MmpState, SetMmp,
    SetRiskLimits, Symbol,
};
use serde::Deserialize;
use serde_json::{json, Value};

use exchange_node::keys::Scope;

use super::auth::{Admin, Signed};
use super::error::{ApiError, ApiPath, JsonBody};
use super::replay::RequestGuard;
use super::translate::{decimal, entry, identifier, rejection};
use super::AppState;

type Reply = Result<Json<Value>, ApiError>;

/// Submits `command` for `account` (which must have credentials; guarded
/// as a signed write when `guard` is given) and returns its events, or the
/// core's refusal as an error.
async fn submit_for(
    app: &AppState,
    guard: Option<RequestGuard>,
    account: AccountId,
    command: Command,
) -> Result<Vec<Event>, ApiError> {
    if !app.handle.account_exists(account).await? {
        return Err(ApiError::not_found(
            "unknown_account",
            "no account has this id",
        ));
    }
    let applied = crate::replay::submit(&app.handle, guard, entry(command)).await?;
    match rejection(&applied.events) {
        Some(reason) => Err(ApiError::reject(reason)),
        None => Ok(applied.events.clone()),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsRequest {
    max_order_qty: Option<String>,
    max_order_notional: Option<String>,
    max_open_orders: Option<u32>,
    /// Half-width of the band in percent, at most two decimals.
    price_band_pct: Option<String>,
}

/// A percentage with at most two decimals as whole basis points.
pub(crate) fn percent_to_bps(field: &str, text: &str) -> Result<u32, ApiError> {
    let pct = decimal(field, text)?.normalized();
    let invalid = |problem: &str| {
        ApiError::bad_request("invalid_value", format!("field `{field}`: {problem}"))
    };
    if pct.is_negative() {
        return Err(invalid("must not be negative"));
    }
    if pct.scale() > 2 {
        return Err(invalid("has more than 2 decimals"));
    }
    pct.magnitude()
        .checked_mul(10u64.pow(2 - u32::from(pct.scale())))
        .and_then(|bps| u32::try_from(bps).ok())
        .ok_or_else(|| invalid("is too large"))
}

fn optional_decimal(field: &str, text: Option<&str>) -> Result<Option<Dec>, ApiError> {
    text.map(|t| decimal(field, t)).transpose()
}

fn limits_json(events: &[Event]) -> Value {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RiskLimits(l) => Some(json!({
                "account_id": l.account,
                "max_order_qty": l.max_order_qty.map(format_units),
                "max_order_notional": l.max_order_notional.map(format_units),
                "max_open_orders": l.max_open_orders,
                "price_band_bps": l.price_band_bps,
            })),
            _ => None,
        })
        .unwrap_or_default()
}

async fn set_limits(app: &AppState, account: AccountId, request: LimitsRequest) -> Reply {
    let command = Command::SetRiskLimits(Box::new(SetRiskLimits {
        account,
        max_order_qty: optional_decimal("max_order_qty", request.max_order_qty.as_deref())?,
        max_order_notional: optional_decimal(
            "max_order_notional",
            request.max_order_notional.as_deref(),
        )?,
        max_open_orders: request.max_open_orders,
        price_band_bps: request
            .price_band_pct
            .as_deref()
            .map(|t| percent_to_bps("price_band_pct", t))
            .transpose()?,
    }));
    let events = submit_for(app, None, account, command).await?;
    Ok(Json(limits_json(&events)))
}

/// `PUT /admin/accounts/{account}/risk-limits`: replaces the account's
/// pre-trade limits (an absent field is no limit).
pub async fn put_limits(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
    JsonBody(request): JsonBody<LimitsRequest>,
) -> Reply {
    set_limits(&app, account, request).await
}

/// `DELETE /admin/accounts/{account}/risk-limits`: clears them.
pub async fn delete_limits(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
) -> Reply {
    set_limits(&app, account, LimitsRequest::default()).await
}

async fn set_suspended(app: &AppState, account: AccountId, suspend: bool) -> Reply {
    let command = if suspend {
        Command::Suspend { account }
    } else {
        Command::Reinstate { account }
    };
    let events = submit_for(app, None, account, command).await?;
    let canceled = events.iter().find_map(|e| match &e.kind {
        EventKind::AccountStatus(s) => Some(s.canceled),
        _ => None,
    });
    let status = if suspend { "suspended" } else { "active" };
    Ok(Json(json!({
        "account_id": account,
        "status": status,
        "canceled": canceled.unwrap_or(0),
    })))
}

/// `POST /admin/accounts/{account}/suspend`: the kill switch.
pub async fn suspend(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
) -> Reply {
    let reply = set_suspended(&app, account, true).await;
    if reply.is_ok() {
        tracing::warn!(account, "account suspended");
    }
    reply
}

/// `POST /admin/accounts/{account}/reinstate`.
pub async fn reinstate(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(account): ApiPath<AccountId>,
) -> Reply {
    let reply = set_suspended(&app, account, false).await;
    if reply.is_ok() {
        tracing::info!(account, "account reinstated");
    }
    reply
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmpRequest {
    /// Window length in milliseconds of log time.
    window_ms: u64,
    max_qty: Option<String>,
    max_count: Option<u32>,
}

fn mmp_json(account: AccountId, symbol: Symbol, events: &[Event]) -> Value {
    let state = events.iter().find_map(|e| match &e.kind {
        EventKind::Mmp(m) => Some(&m.state),
        _ => None,
    });
    let mut body = json!({
        "account_id": account,
        "symbol": symbol.as_str(),
        "state": state.map(MmpState::as_str),
    });
    if let Some(MmpState::Set {
        window_ns,
        max_qty,
        max_count,
    }) = state
    {
        body["window_ms"] = json!(window_ns / 1_000_000);
        body["max_qty"] = json!(max_qty.map(format_units));
        body["max_count"] = json!(max_count);
    }
    body
}

async fn set_mmp(
    app: &AppState,
    account: AccountId,
    symbol: &str,
    request: Option<MmpRequest>,
) -> Reply {
    let symbol: Symbol = identifier("symbol", symbol)?;
    let (window_ns, max_qty, max_count) = match request {
        Some(r) => {
            let window_ns = r.window_ms.checked_mul(1_000_000).ok_or_else(|| {
                ApiError::bad_request("invalid_value", "field `window_ms`: is too large")
            })?;
            if r.max_qty.is_none() && r.max_count.is_none() {
                return Err(ApiError::bad_request(
                    "missing_field",
                    "give `max_qty`, `max_count` or both; DELETE removes the protection",
                ));
            }
            (
                window_ns,
                optional_decimal("max_qty", r.max_qty.as_deref())?,
                r.max_count,
            )
        }
        // Removal: the core ignores the window when no threshold is set.
        None => (1, None, None),
    };
    let command = Command::SetMmp(Box::new(SetMmp {
        account,
        symbol,
        window_ns,
        max_qty,
        max_count,
    }));
    let events = submit_for(app, None, account, command).await?;
    Ok(Json(mmp_json(account, symbol, &events)))
}

/// `PUT /admin/accounts/{account}/mmp/{symbol}`.
pub async fn put_mmp(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath((account, symbol)): ApiPath<(AccountId, String)>,
    JsonBody(request): JsonBody<MmpRequest>,
) -> Reply {
    set_mmp(&app, account, &symbol, Some(request)).await
}

/// `DELETE /admin/accounts/{account}/mmp/{symbol}`.
pub async fn delete_mmp(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath((account, symbol)): ApiPath<(AccountId, String)>,
) -> Reply {
    set_mmp(&app, account, &symbol, None).await
}

async fn reset_mmp(
    app: &AppState,
    guard: Option<RequestGuard>,
    account: AccountId,
    symbol: &str,
) -> Reply {
    let symbol: Symbol = identifier("symbol", symbol)?;
    let command = Command::ResetMmp { account, symbol };
    let events = submit_for(app, guard, account, command).await?;
    Ok(Json(mmp_json(account, symbol, &events)))
}

/// `POST /admin/accounts/{account}/mmp/{symbol}/reset`.
pub async fn admin_reset_mmp(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath((account, symbol)): ApiPath<(AccountId, String)>,
) -> Reply {
    reset_mmp(&app, None, account, &symbol).await
}

/// `POST /v1/mmp/{symbol}/reset`: the account resets its own protection.
pub async fn account_reset_mmp(
    State(app): State<AppState>,
    ApiPath(symbol): ApiPath<String>,
    signed: Signed,
) -> Reply {
    reset_mmp(&app, signed.guard(), signed.require(Scope::Trade)?, &symbol).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubAccountRequest {
    account_id: AccountId,
}

/// `POST /admin/accounts/{owner}/sub-accounts`: makes an existing account
/// a sub-account of `owner`.
pub async fn link_sub_account(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(owner): ApiPath<AccountId>,
    JsonBody(request): JsonBody<SubAccountRequest>,
) -> Reply {
    let sub = crate::ids::account_id("account_id", request.account_id)?;
    if !app.handle.account_exists(sub).await? {
        return Err(ApiError::not_found(
            "unknown_account",
            "no account has this id",
        ));
    }
    submit_for(&app, None, owner, Command::LinkSubAccount { owner, sub }).await?;
    Ok(Json(json!({ "owner": owner, "sub_account": sub })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InternalTransferRequest {
    to_account_id: AccountId,
    asset: String,
    amount: String,
}

/// `POST /v1/transfers`: the signing account moves available funds to its
/// owner, one of its sub-accounts or a sibling sub-account.
pub async fn internal_transfer(State(app): State<AppState>, signed: Signed) -> Reply {
    let from = signed.require(Scope::Transfer)?;
    let request: InternalTransferRequest =
        serde_json::from_slice(&signed.body).map_err(|e| ApiError::from_json(&e))?;
    let transfer = InternalTransfer {
        from,
        to: crate::ids::account_id("to_account_id", request.to_account_id)?,
        asset: identifier("asset", &request.asset)?,
        amount: decimal("amount", &request.amount)?,
    };
    let asset = transfer.asset;
    let command = Command::InternalTransfer(transfer);
    let events = submit_for(&app, signed.guard(), from, command).await?;
    let balances: Vec<Value> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Balance(b) if b.asset == asset => Some(json!({
                "account_id": b.account,
                "asset": b.asset.as_str(),
                "total": format_units(b.total),
                "available": format_units(b.available),
            })),
            _ => None,
        })
        .collect();
    Ok(Json(json!({ "balances": balances })))
}
