//! History routes served from the reporting store: `GET /v1/fills`,
//! `GET /v1/orders?status=all|closed`, `GET /v1/orders/{id}` for an order
//! no longer open, and `GET /v1/markets/{symbol}/candles`.
//!
//! Read-your-writes: each handler first asks the core thread for its
//! applied index (which covers every command already acknowledged to
//! anyone), then waits for the store to reach it before reading, so an
//! order placed and answered is in the very next history read. A store
//! that does not get there within `[reporting] read_wait_ms` gets a 503.
//! Open orders are read from the live state, as trading needs them.

use axum::extract::State;
use axum::http::StatusCode;
use exchange_marketdata::{Candle, Interval};
use exchange_reporting::{FillRow, OrderFilter, OrderRow, Store, StoreError};
use exchange_types::{ClientOrderId, OrderType, Side, Symbol, TimeInForce};
use serde::Deserialize;

use exchange_node::keys::Scope;

use super::auth::Signed;
use super::error::{ApiError, ApiPath, ApiQuery};
use super::public::{self, CandlesQuery};
use super::rest_text::JsonText;
use super::wire::FillView;
use super::AppState;
use exchange_node::history::{Fill, OrderDetails, OrderRecord, OrderStatus};
use exchange_node::limits::{
    CLOSED_ORDERS_PER_ACCOUNT, DEFAULT_CANDLES_LIMIT, FILLS_PER_ACCOUNT, MAX_CANDLES_LIMIT,
};
use exchange_node::{MarketQuery, OrderQuery};
use exchange_reporter::ReadError;

/// Answers written by hand ([`super::rest_text`]).
type Reply = Result<JsonText, ApiError>;

/// Fills returned when the client gives no `limit`.
pub const DEFAULT_FILLS_LIMIT: usize = 100;

/// No Retry-After: a node without a reporting store stays without one.
fn reporting_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "reporting_disabled",
        "this node keeps no reporting store ([reporting] enabled = false), so it serves no history",
    )
}

impl From<ReadError> for ApiError {
    fn from(error: ReadError) -> Self {
        let code = match error {
            ReadError::Behind => "reporting_behind",
            ReadError::Store(_) | ReadError::Cancelled => "reporting_unavailable",
        };
        tracing::warn!(%error, "history read failed");
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, error.to_string()).with_retry_after(1)
    }
}

/// Reads the store once it holds everything the core had applied when
/// `applied` was taken.
async fn read<R: Send + 'static>(
    app: &AppState,
    applied: u64,
    read: impl FnOnce(&mut Store) -> Result<R, StoreError> + Send + 'static,
) -> Result<R, ApiError> {
    let reporting = app.reporting.as_ref().ok_or_else(reporting_unavailable)?;
    Ok(reporting.read_after(applied, read).await?)
}

/// An order as the store keeps it, in the record the live orders are
/// shown from. The store only holds what the core accepted, so a value
/// that does not read back is a damaged store, answered as an error
/// rather than shown wrong.
fn order_record(row: OrderRow) -> Result<OrderRecord, ApiError> {
    let unreadable = || {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the reporting store holds an order this server cannot read",
        )
    };
    let status = OrderStatus::parse(&row.status).unwrap_or(OrderStatus::New);
    let details = order_details(&row).ok_or_else(unreadable)?;
    Ok(OrderRecord {
        order_id: row.order_id,
        account: row.account,
        client_order_id: ClientOrderId::new(&row.client_order_id).map_err(|_| unreadable())?,
        symbol: Symbol::new(&row.symbol).map_err(|_| unreadable())?,
        side: Side::parse(&row.side).ok_or_else(unreadable)?,
        order_type: OrderType::parse(&row.order_type).ok_or_else(unreadable)?,
        price: row.price,
        qty: row.qty,
        filled_qty: row.filled_qty,
        status,
        tif: TimeInForce::parse(&row.tif).ok_or_else(unreadable)?,
        created_ts: row.created_ts,
        updated_ts: row.updated_ts,
        // Not shown by the REST API.
        fill_notional: 0,
        details,
    })
}

/// The order's rarer parts; `None` if its one-cancels-other id does not
/// read back.
fn order_details(row: &OrderRow) -> Option<Option<Box<OrderDetails>>> {
    let oco_with = match &row.oco_with {
        Some(id) => Some(ClientOrderId::new(id).ok()?),
        None => None,
    };
    let details = OrderDetails {
        stop_price: row.stop_price,
        trailing_amount: row.trailing_amount,
        trailing_bps: row.trailing_bps.and_then(|bps| u32::try_from(bps).ok()),
        display_qty: row.display_qty,
        funds: row.funds,
        expire_ts: row.expire_ts,
        oco_with,
        triggered_ts: row.triggered_ts,
        triggered_price: row.triggered_price,
        hidden: row.hidden,
        min_qty: row.min_qty,
    };
    Some((details != OrderDetails::default()).then(|| Box::new(details)))
}

fn fill(row: FillRow) -> Fill {
    Fill {
        trade_id: row.trade_id,
        order_id: row.order_id,
        symbol: row.symbol,
        side: row.side,
        price: row.price,
        qty: row.qty,
        fee: row.fee,
        liquidity: row.liquidity,
        ts: row.ts,
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StatusFilter {
    #[default]
    Open,
    Closed,
    All,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrdersQuery {
    status: Option<StatusFilter>,
    symbol: Option<String>,
}

/// The account's orders, newest first: open ones from the live state;
/// `closed` and `all` from the store (at most
/// [`CLOSED_ORDERS_PER_ACCOUNT`] closed ones).
pub async fn list_orders(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<OrdersQuery>,
    signed: Signed,
) -> Result<JsonText, ApiError> {
    let account = signed.require(Scope::Read)?;
    let live = app
        .handle
        .orders(OrderQuery::Open {
            accounts: vec![account],
            symbol: query.symbol.clone(),
        })
        .await?;
    let filter = query.status.unwrap_or_default();
    if matches!(filter, StatusFilter::Open) {
        return Ok(JsonText::orders(live.orders.iter().map(|o| &**o)));
    }
    let symbol = query.symbol;
    let closed = read(&app, live.applied_index, move |store| {
        store.orders(
            account,
            OrderFilter::Closed,
            symbol.as_deref(),
            CLOSED_ORDERS_PER_ACCOUNT as u64,
        )
    })
    .await?;
    let closed = closed
        .into_iter()
        .map(order_record)
        .collect::<Result<Vec<OrderRecord>, ApiError>>()?;
    if matches!(filter, StatusFilter::Closed) {
        return Ok(JsonText::orders(closed.iter()));
    }
    let open = live.orders.iter().map(|o| &**o);
    let mut all: Vec<&OrderRecord> = open.chain(&closed).collect();
    // Newest first across both: order ids rise with time.
    all.sort_by_key(|o| std::cmp::Reverse(o.order_id));
    Ok(JsonText::orders(all.into_iter()))
}

/// One of the account's orders: live while open, else from the store.
pub async fn get_order(
    State(app): State<AppState>,
    ApiPath(order_id): ApiPath<u64>,
    signed: Signed,
) -> Result<JsonText, ApiError> {
    let account = signed.require(Scope::Read)?;
    let live = app
        .handle
        .orders(OrderQuery::One { account, order_id })
        .await?;
    if let Some(order) = live.orders.first() {
        return Ok(JsonText::order(order));
    }
    let applied = live.applied_index;
    let stored = read(&app, applied, move |store| store.order(order_id)).await?;
    let row = stored
        .filter(|o| o.account == account)
        .ok_or_else(ApiError::unknown_order)?;
    Ok(JsonText::order(&order_record(row)?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FillsQuery {
    symbol: Option<String>,
    limit: Option<usize>,
}

/// The account's fills, newest first.
pub async fn fills(
    State(app): State<AppState>,
    ApiQuery(query): ApiQuery<FillsQuery>,
    signed: Signed,
) -> Reply {
    let account = signed.require(Scope::Read)?;
    let limit = query
        .limit
        .unwrap_or(DEFAULT_FILLS_LIMIT)
        .min(FILLS_PER_ACCOUNT);
    let applied = app.handle.position().await?.applied_index;
    let rows = read(&app, applied, move |store| {
        store.recent_fills(account, query.symbol.as_deref(), limit as u64)
    })
    .await?;
    let fills: Vec<Fill> = rows.into_iter().map(fill).collect();
    let views: Vec<FillView<'_>> = fills.iter().map(FillView::from).collect();
    Ok(JsonText::fills(&views))
}

/// Candles from the store, newest first; from the market-data service on
/// a node without a reporting service.
pub async fn candles(
    State(app): State<AppState>,
    ApiPath(symbol): ApiPath<String>,
    ApiQuery(query): ApiQuery<CandlesQuery>,
) -> Reply {
    if app.reporting.is_none() {
        return public::candles(State(app), ApiPath(symbol), ApiQuery(query)).await;
    }
    let symbol = Symbol::new(&symbol).map_err(|_| ApiError::unknown_instrument())?;
    let interval = match query.interval.as_deref() {
        None => Interval::M1,
        Some(text) => Interval::parse(text).ok_or_else(|| {
            ApiError::bad_request("invalid_query", "`interval` must be 1m, 5m, 1h or 1d")
        })?,
    };
    let limit = query
        .limit
        .unwrap_or(DEFAULT_CANDLES_LIMIT)
        .min(MAX_CANDLES_LIMIT);
    let (start, end) = (query.start.unwrap_or(0), query.end.unwrap_or(u64::MAX));
    let markets = app
        .handle
        .markets(MarketQuery {
            symbol: Some(symbol),
            ..MarketQuery::default()
        })
        .await?;
    if markets.markets.is_empty() {
        return Err(ApiError::unknown_instrument());
    }
    let applied = markets.applied_index;
    let rows = read(&app, applied, move |store| {
        store.candles(symbol.as_str(), interval.nanos(), start, end, limit as u64)
    })
    .await?;
    let candles: Vec<Candle> = rows
        .iter()
        .map(|row| Candle {
            start: row.start,
            open: row.open,
            high: row.high,
            low: row.low,
            close: row.close,
            volume: u128::from(row.volume),
            trades: row.trades,
        })
        .collect();
    Ok(JsonText::candles(
        symbol.as_str(),
        interval.as_str(),
        &candles,
    ))
}
