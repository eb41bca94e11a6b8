//! HTTP and WebSocket gateway (axum).
//!
//! Handlers translate requests into log entries or state queries on the
//! [`Handle`]; they never touch the state directly. Data flows one way:
//! request → sequencer → events → response. Every route, header, status and
//! error code is documented in docs/server.md and in `/openapi.json`.
//!
//! Layout: [`auth`] (signatures, admin token), [`ratelimit`], [`error`]
//! (the JSON error shape and rejection-mapping extractors), [`translate`]
//! (requests ↔ commands and events, shared by REST and WebSocket), the
//! route groups [`admin`], [`trading`], [`records`] (history, from the
//! reporting store) and [`public`], [`ws`] (and its
//! public market-data channels, [`ws_market`]), [`openapi`].

pub mod admin;
#[cfg(test)]
mod admin_tests;
pub mod auth;
mod cluster;
pub mod error;
pub mod keys;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod md_public_tests;
#[cfg(test)]
mod md_test_support;
#[cfg(test)]
mod md_tests;
pub mod openapi;
mod private;
pub mod public;
pub mod ratelimit;
pub mod records;
#[cfg(test)]
mod rest_client;
#[cfg(test)]
mod router_tests;
pub mod stats;
pub mod status;
#[cfg(test)]
mod test_support;
pub mod trading;
pub mod translate;
pub mod ui;
pub mod wire;
pub mod ws;
mod ws_entry;
mod ws_market;
#[cfg(test)]
mod ws_tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;

use error::ApiError;
use exchange_marketdata_service::MarketData;
use exchange_node::config::Config;
use exchange_node::sequencer::Handle;
use exchange_reporter::Reporting;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub handle: Handle,
    pub config: Arc<Config>,
    pub admin_token: Arc<str>,
    pub ready: Arc<AtomicBool>,
    pub limiter: Arc<ratelimit::RateLimiter>,
    pub stats: Arc<stats::HttpStats>,
    /// Each WebSocket's private stream, routed by account.
    pub private: Arc<private::PrivateStreams>,
    /// The market-data service, when the node runs one (see
    /// [`AppState::with_market_data`]).
    pub market: Option<MarketData>,
    /// What `/admin/status` keeps between polls.
    pub status: Arc<status::StatusCache>,
    /// The reporting service, which serves the history routes
    /// ([`records`]); see [`AppState::with_reporting`].
    pub reporting: Option<Reporting>,
}

impl AppState {
    pub fn new(
        handle: Handle,
        config: Config,
        admin_token: String,
        ready: Arc<AtomicBool>,
    ) -> Self {
        let limiter =
            ratelimit::RateLimiter::new(config.rate_limit_per_sec, config.rate_limit_burst);
        let private = private::PrivateStreams::new(handle.clone(), config.events_buffer);
        AppState {
            handle,
            private,
            config: Arc::new(config),
            admin_token: admin_token.into(),
            ready,
            limiter: Arc::new(limiter),
            stats: Arc::default(),
            market: None,
            status: Arc::default(),
            reporting: None,
        }
    }

    /// Serves fills, closed orders and candles from the reporting store.
    pub fn with_reporting(mut self, reporting: Reporting) -> Self {
        self.reporting = Some(reporting);
        self
    }

    /// Serves the public channels and candles from `market`.
    pub fn with_market_data(mut self, market: MarketData) -> Self {
        self.market = Some(market);
        self
    }
}

pub fn router(app: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi::serve))
        .route("/admin/accounts", post(admin::create_account))
        .route(
            "/admin/accounts/{account_id}/keys",
            post(keys::admin_create).get(keys::admin_list),
        )
        .route("/admin/keys/{key_id}", delete(keys::admin_revoke))
        .route("/admin/keys/{key_id}/rotate", post(keys::admin_rotate))
        .route("/admin/replication", get(cluster::replication))
        .route("/admin/replication/voters", post(cluster::change_voters))
        .route("/admin/deposits", post(admin::deposit))
        .route("/admin/withdrawals", post(admin::withdraw))
        .route("/admin/instruments", post(admin::add_instrument))
        .route("/admin/instruments/{symbol}/halt", post(admin::halt))
        .route("/admin/instruments/{symbol}/resume", post(admin::resume))
        .route("/admin/status", get(status::status))
        .route(
            "/v1/orders",
            post(trading::place)
                .get(records::list_orders)
                .delete(trading::mass_cancel),
        )
        .route(
            "/v1/orders/by-client-id/{client_order_id}",
            delete(trading::cancel_by_client_id),
        )
        .route(
            "/v1/orders/{order_id}",
            get(records::get_order).delete(trading::cancel),
        )
        .route("/v1/orders/{order_id}/replace", post(trading::replace))
        .route("/v1/fills", get(records::fills))
        .route("/v1/balances", get(trading::balances))
        .route("/v1/withdrawals", post(trading::withdraw))
        .route("/v1/keys", post(keys::own_create).get(keys::own_list))
        .route("/v1/keys/{key_id}", delete(keys::own_revoke))
        .route("/v1/keys/{key_id}/rotate", post(keys::own_rotate))
        .route("/v1/instruments", get(public::instruments))
        .route("/v1/markets/{symbol}/book", get(public::book))
        .route("/v1/markets/{symbol}/trades", get(public::trades))
        .route("/v1/markets/{symbol}/candles", get(records::candles))
        .route("/v1/ws", get(ws::handler))
        .merge(ui::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(app.clone(), gate))
        .with_state(app)
}

/// Routes that answer while the node is still starting.
fn always_open(path: &str) -> bool {
    matches!(path, "/health" | "/ready" | "/metrics" | "/openapi.json")
}

/// Refuses traffic until the node is ready, and counts every response.
async fn gate(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let response = if always_open(request.uri().path()) || app.ready.load(Ordering::Acquire) {
        next.run(request).await
    } else {
        ApiError::not_ready().into_response()
    };
    app.stats.record_response(response.status().as_u16());
    response
}

async fn not_found() -> ApiError {
    ApiError::not_found("not_found", "no route for this path")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take this method",
    )
}

async fn health() -> &'static str {
    "ok"
}

async fn ready(State(app): State<AppState>) -> (StatusCode, &'static str) {
    if !app.handle.is_healthy() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "failed: the sequencer stopped; see the log",
        )
    } else if app.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "recovering")
    }
}

async fn metrics(State(app): State<AppState>) -> impl IntoResponse {
    let mut text = app.handle.metrics.render();
    text.push_str(&app.stats.render());
    if let Some(market) = &app.market {
        text.push_str(&market.render_metrics());
    }
    if let Some(reporting) = &app.reporting {
        text.push_str(&reporting.render_metrics());
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
}
