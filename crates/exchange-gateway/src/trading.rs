//! Signed trading routes under `/v1`: order entry (scope `trade`), the
//! account's balances (`read`) and withdrawals (`transfer`) (its orders and
//! fills: [`super::records`]). Every handler acts for the account the
//! signature proves; another account's orders are indistinguishable from
//! orders that do not exist.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use exchange_types::OrderRef;
use serde::Deserialize;
use serde_json::Value;

use exchange_node::keys::Scope;

use super::auth::Signed;
use super::error::{parse_json, ApiError, ApiPath, ApiQuery};
use super::rest_text::JsonText;
use super::translate::{self, PlaceRequest, ReplaceRequest};
use super::AppState;

type Reply = Result<Json<Value>, ApiError>;

/// An answer written by hand ([`super::rest_text`]).
type OrderReply = Result<JsonText, ApiError>;

pub async fn place(
    State(app): State<AppState>,
    signed: Signed,
) -> Result<(StatusCode, JsonText), ApiError> {
    let account = signed.require(Scope::Trade)?;
    let request: PlaceRequest = parse_json(&signed.body)?;
    let command = translate::place(account, request)?;
    let body = translate::execute_guarded(&app.handle, signed.guard(), command).await?;
    Ok((StatusCode::CREATED, body))
}

pub async fn cancel(
    State(app): State<AppState>,
    ApiPath(order_id): ApiPath<u64>,
    signed: Signed,
) -> OrderReply {
    let command = translate::cancel(signed.require(Scope::Trade)?, OrderRef::Id(order_id));
    translate::execute_guarded(&app.handle, signed.guard(), command).await
}

pub async fn cancel_by_client_id(
    State(app): State<AppState>,
    ApiPath(client_order_id): ApiPath<String>,
    signed: Signed,
) -> OrderReply {
    let account = signed.require(Scope::Trade)?;
    let command = translate::cancel(account, translate::by_client_id(&client_order_id)?);
    translate::execute_guarded(&app.handle, signed.guard(), command).await
}

pub async fn replace(
    State(app): State<AppState>,
    ApiPath(order_id): ApiPath<u64>,
    signed: Signed,
) -> OrderReply {
    let account = signed.require(Scope::Trade)?;
    let request: ReplaceRequest = parse_json(&signed.body)?;
    let command = translate::replace(account, OrderRef::Id(order_id), request)?;
    translate::execute_guarded(&app.handle, signed.guard(), command).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SymbolQuery {
    symbol: Option<String>,
}

pub async fn mass_cancel(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<SymbolQuery>,
    signed: Signed,
) -> OrderReply {
    let command = translate::mass_cancel(signed.require(Scope::Trade)?, query.symbol.as_deref())?;
    translate::execute_guarded(&app.handle, signed.guard(), command).await
}

pub async fn balances(State(app): State<AppState>, signed: Signed) -> OrderReply {
    let account = signed.require(Scope::Read)?;
    let balances = app.handle.balances(account).await?;
    Ok(JsonText::balances(account, &balances))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawRequest {
    asset: String,
    amount: String,
}

/// Takes funds out of the key's own account: needs `transfer`.
pub async fn withdraw(State(app): State<AppState>, signed: Signed) -> Reply {
    let account = signed.require(Scope::Transfer)?;
    let request: WithdrawRequest = parse_json(&signed.body)?;
    super::admin::transfer(
        &app,
        signed.guard(),
        account,
        &request.asset,
        &request.amount,
        false,
    )
    .await
}
