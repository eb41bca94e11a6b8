//! Operator routes that change a listed instrument: its rules
//! (`PUT /admin/instruments/{symbol}/rules`), delisting
//! (`POST /admin/instruments/{symbol}/delist`) and its reference price
//! (`POST /admin/instruments/{symbol}/reference_price`). Each goes through
//! the log; the reply to the first two is the rules as they now stand and
//! what was canceled, to the last the reference price now in force.

use axum::extract::State;
use axum::Json;
use exchange_types::{format_units, Command, Event, EventKind, SetInstrumentRules};
use serde::Deserialize;
use serde_json::{json, Value};

use super::admin_risk::percent_to_bps;
use super::auth::Admin;
use super::error::{ApiError, ApiPath, JsonBody};
use super::translate::{decimal, entry, identifier, rejection};
use super::AppState;

/// Every field optional: a field left out keeps its rule. Decimals are
/// strings, as everywhere in the API.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesRequest {
    tick_size: Option<String>,
    lot_size: Option<String>,
    min_qty: Option<String>,
    max_qty: Option<String>,
    /// `"0"` removes the minimum.
    min_notional: Option<String>,
    maker_fee_bps: Option<i32>,
    taker_fee_bps: Option<i32>,
    /// `"0"` removes the collar.
    price_collar_pct: Option<String>,
    static_band_pct: Option<String>,
    dynamic_band_pct: Option<String>,
    volatility_auction_ns: Option<u64>,
    /// The smallest value of a hidden order (`"0"`: any value).
    hidden_min_notional: Option<String>,
}

fn rules_command(symbol: &str, r: &RulesRequest) -> Result<SetInstrumentRules, ApiError> {
    let dec =
        |field: &str, text: &Option<String>| text.as_deref().map(|t| decimal(field, t)).transpose();
    let pct = |field: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| percent_to_bps(field, t))
            .transpose()
    };
    Ok(SetInstrumentRules {
        symbol: identifier("symbol", symbol)?,
        tick_size: dec("tick_size", &r.tick_size)?,
        lot_size: dec("lot_size", &r.lot_size)?,
        min_qty: dec("min_qty", &r.min_qty)?,
        max_qty: dec("max_qty", &r.max_qty)?,
        min_notional: dec("min_notional", &r.min_notional)?,
        maker_fee_bps: r.maker_fee_bps,
        taker_fee_bps: r.taker_fee_bps,
        collar_bps: pct("price_collar_pct", &r.price_collar_pct)?,
        static_band_bps: pct("static_band_pct", &r.static_band_pct)?,
        dynamic_band_bps: pct("dynamic_band_pct", &r.dynamic_band_pct)?,
        volatility_auction_ns: r.volatility_auction_ns,
        hidden_min_notional: dec("hidden_min_notional", &r.hidden_min_notional)?,
    })
}

/// The `instrument_rules` event of an applied command, with the number of
/// orders it canceled.
pub(crate) fn rules_json(events: &[Event]) -> Value {
    let canceled = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Canceled(_)))
        .count();
    let rules = events.iter().find_map(|e| match &e.kind {
        EventKind::InstrumentRules(r) => Some(r),
        _ => None,
    });
    let Some(r) = rules else {
        return json!({ "canceled": canceled });
    };
    json!({
        "symbol": r.symbol.as_str(),
        "base": r.base.as_str(),
        "quote": r.quote.as_str(),
        "tick_size": format_units(r.tick_size),
        "lot_size": format_units(r.lot_size),
        "min_qty": format_units(r.min_qty),
        "max_qty": format_units(r.max_qty),
        "min_notional": format_units(r.min_notional),
        "maker_fee_bps": r.maker_fee_bps,
        "taker_fee_bps": r.taker_fee_bps,
        "collar_bps": r.collar_bps,
        "static_band_bps": r.static_band_bps,
        "dynamic_band_bps": r.dynamic_band_bps,
        "volatility_auction_ns": r.volatility_auction_ns,
        "status": r.status.as_str(),
        "canceled": canceled,
    })
}

async fn submit(app: &AppState, command: Command) -> Result<Json<Value>, ApiError> {
    let applied = app.handle.submit(entry(command)).await?;
    if let Some(reason) = rejection(&applied.events) {
        return Err(ApiError::reject(reason));
    }
    Ok(Json(rules_json(&applied.events)))
}

pub async fn put_rules(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(symbol): ApiPath<String>,
    JsonBody(request): JsonBody<RulesRequest>,
) -> Result<Json<Value>, ApiError> {
    let set = rules_command(&symbol, &request)?;
    submit(&app, Command::SetInstrumentRules(Box::new(set))).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferencePriceRequest {
    price: String,
}

pub async fn set_reference_price(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(symbol): ApiPath<String>,
    JsonBody(request): JsonBody<ReferencePriceRequest>,
) -> Result<Json<Value>, ApiError> {
    let symbol = identifier("symbol", &symbol)?;
    let price = decimal("price", &request.price)?;
    let command = Command::SetReferencePrice { symbol, price };
    let applied = app.handle.submit(entry(command)).await?;
    if let Some(reason) = rejection(&applied.events) {
        return Err(ApiError::reject(reason));
    }
    let set = applied.events.iter().find_map(|e| match &e.kind {
        EventKind::ReferencePrice(r) => Some(format_units(r.price)),
        _ => None,
    });
    Ok(Json(
        json!({ "symbol": symbol.as_str(), "reference_price": set }),
    ))
}

pub async fn delist(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(symbol): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let symbol = identifier("symbol", &symbol)?;
    submit(&app, Command::Delist { symbol }).await
}
