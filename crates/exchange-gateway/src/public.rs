//! Public market routes: no credentials, read-only, each one consistent
//! read on the core thread (candles: a read of the market-data service).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use exchange_core::InstrumentView;
use exchange_marketdata::{json as market_json, Interval};
use exchange_node::limits::{
    DEFAULT_BOOK_DEPTH, DEFAULT_CANDLES_LIMIT, DEFAULT_TRADES_LIMIT, MAX_BOOK_DEPTH,
    MAX_CANDLES_LIMIT, TRADES_PER_SYMBOL,
};
use exchange_types::{format_units, Symbol};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::{ApiError, ApiPath, ApiQuery};
use super::rest_text::JsonText;
use super::AppState;
use exchange_node::MarketQuery;

type Reply = Result<Json<Value>, ApiError>;

pub fn instrument_json(view: &InstrumentView) -> Value {
    json!({
        "symbol": view.symbol.as_str(),
        "base": view.base.as_str(),
        "quote": view.quote.as_str(),
        "tick_size": format_units(view.tick_size),
        "lot_size": format_units(view.lot_size),
        "status": view.status.as_str(),
        // The core's phase (docs/market-model.md).
        "phase": view.phase.as_str(),
        "reference_price": view.reference_price.map(format_units),
        "min_qty": format_units(view.min_qty),
        "max_qty": format_units(view.max_qty),
        // Zero: no minimum beyond the minimum quantity.
        "min_notional": format_units(view.min_notional),
        "maker_fee_bps": view.maker_fee_bps,
        "taker_fee_bps": view.taker_fee_bps,
        // Zero: no collar.
        "collar_bps": view.collar_bps,
        // Zero: no such band (and no volatility auctions without either).
        "static_band_bps": view.static_band_bps,
        "dynamic_band_bps": view.dynamic_band_bps,
        "volatility_auction_ns": view.volatility_auction_ns,
        // The static band's centre: the last auction price, or the
        // listing's reference before any; null without a static band.
        "static_reference_price": view.static_reference_price.map(format_units),
        // How an auction uses the reference price (docs/market-model.md).
        "reference_price_rule": view.reference_price_rule.as_str(),
        // The smallest value of a hidden order; null: none are taken.
        "hidden_min_notional": view.hidden_min_notional.map(format_units),
    })
}

pub async fn instruments(State(app): State<AppState>) -> Reply {
    let list: Vec<Value> = app
        .handle
        .markets(MarketQuery::default())
        .await?
        .markets
        .iter()
        .map(|m| instrument_json(&m.instrument))
        .collect();
    Ok(Json(json!({ "instruments": list })))
}

/// A symbol too long or malformed to exist is simply not listed.
fn listed_symbol(text: &str) -> Result<Symbol, ApiError> {
    Symbol::new(text).map_err(|_| ApiError::unknown_instrument())
}

fn levels(levels: &[(u64, u64)]) -> Vec<[String; 2]> {
    levels
        .iter()
        .map(|&(price, qty)| [format_units(price), format_units(qty)])
        .collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepthQuery {
    depth: Option<usize>,
}

pub async fn book(
    State(app): State<AppState>,
    ApiPath(symbol): ApiPath<String>,
    ApiQuery(query): ApiQuery<DepthQuery>,
) -> Reply {
    let symbol = listed_symbol(&symbol)?;
    let depth = query
        .depth
        .unwrap_or(DEFAULT_BOOK_DEPTH)
        .min(MAX_BOOK_DEPTH);
    // The level2 channel's sequence for this very book (one consistent read).
    let market = app
        .handle
        .markets(MarketQuery {
            symbol: Some(symbol),
            depth,
            trades: 0,
        })
        .await?
        .into_one()
        .ok_or_else(ApiError::unknown_instrument)?;
    let (view, sequence) = (market.book, market.sequences.book);
    Ok(Json(json!({
        "symbol": symbol.as_str(),
        "sequence": sequence,
        "bids": levels(&view.bids),
        "asks": levels(&view.asks),
    })))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitQuery {
    limit: Option<usize>,
}

pub async fn trades(
    State(app): State<AppState>,
    ApiPath(symbol): ApiPath<String>,
    ApiQuery(query): ApiQuery<LimitQuery>,
) -> Reply {
    let symbol = listed_symbol(&symbol)?;
    let limit = query
        .limit
        .unwrap_or(DEFAULT_TRADES_LIMIT)
        .min(TRADES_PER_SYMBOL);
    let market = app
        .handle
        .markets(MarketQuery {
            symbol: Some(symbol),
            depth: 0,
            trades: limit,
        })
        .await?
        .into_one()
        .ok_or_else(ApiError::unknown_instrument)?;
    let trades: Vec<Value> = market
        .trades
        .iter()
        .map(|t| {
            let mut trade = json!({
                "trade_id": t.trade_id,
                "price": format_units(t.price),
                "qty": format_units(t.qty),
                "side": t.aggressor.as_str(),
                "ts": t.ts,
            });
            if let Some(kind) = t.auction {
                trade["auction"] = kind.as_str().into();
            }
            trade
        })
        .collect();
    Ok(Json(json!({ "symbol": symbol.as_str(), "trades": trades })))
}

/// The phase, the indicative uncrossing during a call and the last
/// auction: the `status` channel's message without `type` and `channel`,
/// as of one command (`ts` is the core's time then).
pub async fn status(State(app): State<AppState>, ApiPath(symbol): ApiPath<String>) -> Reply {
    let symbol = listed_symbol(&symbol)?;
    let markets = app
        .handle
        .markets(MarketQuery {
            symbol: Some(symbol),
            depth: 0,
            trades: 0,
        })
        .await?;
    let now = markets.now;
    let market = markets
        .into_one()
        .ok_or_else(ApiError::unknown_instrument)?;
    Ok(Json(market_json::status_value(
        symbol.as_str(),
        market.sequences.status,
        now,
        &market.status,
    )))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandlesQuery {
    pub interval: Option<String>,
    /// Nanoseconds since the Unix epoch; candles starting at or after it.
    pub start: Option<u64>,
    /// Candles starting before it.
    pub end: Option<u64>,
    pub limit: Option<usize>,
}

fn market_data_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "this node does not serve market data",
    )
    .with_retry_after(1)
}

/// Candles from the market-data projection, newest first.
pub async fn candles(
    State(app): State<AppState>,
    ApiPath(symbol): ApiPath<String>,
    ApiQuery(query): ApiQuery<CandlesQuery>,
) -> Result<JsonText, ApiError> {
    let symbol = listed_symbol(&symbol)?;
    let interval = match query.interval.as_deref() {
        None => Interval::M1,
        Some(text) => Interval::parse(text).ok_or_else(|| {
            ApiError::bad_request("invalid_query", "`interval` must be 1m, 5m, 1h or 1d")
        })?,
    };
    let market = app.market.as_ref().ok_or_else(market_data_unavailable)?;
    let limit = query
        .limit
        .unwrap_or(DEFAULT_CANDLES_LIMIT)
        .min(MAX_CANDLES_LIMIT);
    let start = query.start.unwrap_or(0);
    let end = query.end.unwrap_or(u64::MAX);
    let found = market
        .candles(symbol.as_str(), interval, start, end, limit)
        .await
        .map_err(|_| market_data_unavailable())?;
    let candles = found.ok_or_else(ApiError::unknown_instrument)?;
    Ok(JsonText::candles(
        symbol.as_str(),
        interval.as_str(),
        &candles,
    ))
}
