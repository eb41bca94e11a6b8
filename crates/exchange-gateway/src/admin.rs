//! Operator routes under `/admin`, behind the admin bearer token: accounts
//! (their further API keys: [`super::keys`]), deposits and withdrawals, listing, halting
//! and resuming instruments. Each one goes through the log like any order.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use exchange_types::{format_units, AccountId, Command, EventKind, Symbol, Transfer};
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Admin;
use super::error::{ApiError, ApiPath, JsonBody};
use super::public::instrument_json;
use super::replay::RequestGuard;
use super::translate::{decimal, entry, identifier, rejection};
use super::AppState;
use exchange_node::config::InstrumentConfig;
use exchange_node::entry::LogEntry;
use exchange_node::instruments::instrument_entry;
use exchange_node::keys::Scopes;
use exchange_node::random_hex;
use exchange_node::state::Applied;
use exchange_node::MarketQuery;

type Created = Result<(StatusCode, Json<Value>), ApiError>;

/// Submits an entry (guarded as a signed write when `guard` is given) and
/// turns a core refusal into an error.
async fn submit(
    app: &AppState,
    guard: Option<RequestGuard>,
    entry: LogEntry,
) -> Result<std::sync::Arc<Applied>, ApiError> {
    let applied = crate::replay::submit(&app.handle, guard, entry).await?;
    match rejection(&applied.events) {
        Some(reason) => Err(ApiError::reject(reason)),
        None => Ok(applied),
    }
}

pub async fn create_account(State(app): State<AppState>, _admin: Admin) -> Created {
    let api_key = random_hex(16);
    let applied = app
        .handle
        .submit(LogEntry::CreateAccount {
            ts: 0,
            api_key: api_key.clone(),
            legacy_secret: None,
        })
        .await?;
    if let Some(error) = applied.key_error.clone() {
        return Err(super::keys::key_error(error));
    }
    let Some(account) = applied.account else {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "no account id was assigned",
        ));
    };
    tracing::info!(account, "account created");
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "account_id": account,
            "api_key": api_key,
            "api_secret": app.handle.hmac_secret(&api_key),
            "scopes": Scopes::all().names(),
        })),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferRequest {
    account_id: AccountId,
    asset: String,
    amount: String,
}

/// Moves funds in or out of `account` (`guard`: a signed request's).
pub(crate) async fn transfer(
    app: &AppState,
    guard: Option<RequestGuard>,
    account: AccountId,
    asset: &str,
    amount: &str,
    deposit: bool,
) -> Result<Json<Value>, ApiError> {
    let transfer = Transfer {
        account: crate::ids::account_id("account_id", account)?,
        asset: identifier("asset", asset)?,
        amount: decimal("amount", amount)?,
    };
    let account = transfer.account;
    if !app.handle.account_exists(account).await? {
        return Err(ApiError::not_found(
            "unknown_account",
            "no account has this id",
        ));
    }
    let asset = transfer.asset;
    let command = if deposit {
        Command::Deposit(transfer)
    } else {
        Command::Withdraw(transfer)
    };
    let applied = submit(app, guard, entry(command)).await?;
    let (total, available) = applied
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Balance(b) if b.account == account && b.asset == asset => {
                Some((b.total, b.available))
            }
            _ => None,
        })
        .unwrap_or_default();
    Ok(Json(json!({
        "account_id": account,
        "asset": asset.as_str(),
        "total": format_units(total),
        "available": format_units(available),
    })))
}

pub async fn deposit(
    State(app): State<AppState>,
    _admin: Admin,
    JsonBody(request): JsonBody<TransferRequest>,
) -> Result<Json<Value>, ApiError> {
    transfer(
        &app,
        None,
        request.account_id,
        &request.asset,
        &request.amount,
        true,
    )
    .await
}

pub async fn withdraw(
    State(app): State<AppState>,
    _admin: Admin,
    JsonBody(request): JsonBody<TransferRequest>,
) -> Result<Json<Value>, ApiError> {
    transfer(
        &app,
        None,
        request.account_id,
        &request.asset,
        &request.amount,
        false,
    )
    .await
}

pub async fn add_instrument(
    State(app): State<AppState>,
    _admin: Admin,
    JsonBody(spec): JsonBody<InstrumentConfig>,
) -> Created {
    let entry = instrument_entry(&spec)
        .map_err(|e| ApiError::bad_request("invalid_value", e.to_string()))?;
    submit(&app, None, entry).await?;
    let symbol = Symbol::new(&spec.symbol).ok();
    let listed = app
        .handle
        .markets(MarketQuery {
            symbol,
            ..MarketQuery::default()
        })
        .await?
        .into_one();
    let body = listed
        .map(|m| instrument_json(&m.instrument))
        .unwrap_or_default();
    Ok((StatusCode::CREATED, Json(body)))
}

async fn set_status(app: &AppState, symbol: &str, halt: bool) -> Result<Json<Value>, ApiError> {
    let symbol = identifier("symbol", symbol)?;
    let command = if halt {
        Command::Halt { symbol }
    } else {
        Command::Resume { symbol }
    };
    let applied = submit(app, None, entry(command)).await?;
    let status = applied.events.iter().find_map(|e| match &e.kind {
        EventKind::Status(s) => Some(s.status.as_str()),
        _ => None,
    });
    Ok(Json(json!({ "symbol": symbol.as_str(), "status": status })))
}

pub async fn halt(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(symbol): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    set_status(&app, &symbol, true).await
}

pub async fn resume(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(symbol): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    set_status(&app, &symbol, false).await
}
