//! HTTP and WebSocket gateway (axum).
//!
//! Handlers translate requests into log entries or state queries on the
//! [`Handle`]; they never touch the state directly. Data flows one way:
//! request → sequencer → events → response. Every route, header, status and
//! error code is documented in docs/server.md and in `/openapi.json`.
//!
//! Layout: [`auth`] (signatures, admin token), [`ratelimit`], [`replay`], [`error`]
//! (the JSON error shape and rejection-mapping extractors), [`translate`]
//! (requests ↔ commands and events, shared by REST and WebSocket), the
//! route groups [`admin`] (and its member risk controls, [`admin_risk`]),
//! [`trading`], [`records`] (history, from the
//! reporting store) and [`public`], [`ws`] (and its
//! public market-data channels, [`ws_market`]), [`openapi`]; and
//! [`listener`], which accepts connections and bounds them in number and
//! time.

pub mod admin;
pub mod admin_risk;
#[cfg(test)]
mod admin_risk_tests;
pub mod admin_rules;
#[cfg(test)]
mod admin_rules_tests;
#[cfg(test)]
mod admin_tests;
pub mod auth;
#[cfg(test)]
mod auth_tests;
mod cluster;
pub mod config;
mod conn_io;
pub mod error;
#[cfg(test)]
mod guard_tests;
pub mod ids;
#[cfg(test)]
mod json_strategies;
mod json_text;
pub mod keys;
#[cfg(test)]
mod keys_tests;
pub mod listener;
#[cfg(test)]
mod md_public_tests;
#[cfg(test)]
mod md_test_support;
#[cfg(test)]
mod md_tests;
pub mod openapi;
#[cfg(test)]
mod order_types_tests;
mod private;
pub mod public;
pub mod ratelimit;
pub mod records;
pub mod replay;
#[cfg(test)]
mod rest_client;
pub mod rest_text;
#[cfg(test)]
mod router_tests;
pub mod signature;
pub mod stats;
pub mod status;
#[cfg(test)]
mod test_support;
pub mod trading;
pub mod translate;
pub mod ui;
pub mod wire;
mod wire_text;
pub mod ws;
mod ws_commands;
mod ws_entry;
mod ws_key;
mod ws_kind;
mod ws_live;
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
use axum::routing::{delete, get, post, put};
use axum::Router;

use config::GatewayConfig;
use error::ApiError;
use exchange_marketdata_service::MarketData;
use exchange_node::config::Config;
use exchange_node::limits;
use exchange_node::prometheus::Exposition;
use exchange_node::sequencer::Handle;
use exchange_reporter::Reporting;

/// Shared by every handler.
/// What every handler shares, behind one reference count: axum clones the
/// state for each extractor of each request, and cloning a struct of a
/// dozen `Arc`s cost a dozen contended atomic operations each time (about
/// 7% of a REST request's CPU).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

#[derive(Clone)]
pub struct Shared {
    pub handle: Handle,
    pub config: Arc<Config>,
    /// The API's limits and the listener's settings ([`crate::config`]).
    pub gateway: Arc<GatewayConfig>,
    pub admin_token: Arc<str>,
    pub ready: Arc<AtomicBool>,
    /// Set on SIGTERM for the drain (`[tiers] drain_ms`): clients are
    /// answered `503 draining` and `/ready` says so, so they move away
    /// before the listeners close.
    pub draining: Arc<AtomicBool>,
    pub limiter: Arc<ratelimit::RateLimiter>,
    /// Failed authentications per source address ([`auth::check_source`]).
    pub auth_failures: Arc<ratelimit::RateLimiter>,
    /// Signed requests accepted within the receive window.
    pub replay: Arc<replay::ReplayGuard>,
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
    /// Set when the server stops: every WebSocket closes (see
    /// [`AppState::close_sockets`]).
    pub closing: Arc<tokio::sync::watch::Sender<bool>>,
}

impl AppState {
    pub fn new(
        handle: Handle,
        config: Config,
        gateway: GatewayConfig,
        admin_token: String,
        ready: Arc<AtomicBool>,
    ) -> Self {
        let limiter =
            ratelimit::RateLimiter::new(gateway.rate_limit_per_sec, gateway.rate_limit_burst);
        let private = private::PrivateStreams::new(handle.clone(), config.events_buffer);
        AppState(Arc::new(Shared {
            handle,
            private,
            config: Arc::new(config),
            gateway: Arc::new(gateway),
            admin_token: admin_token.into(),
            ready,
            draining: Arc::new(AtomicBool::new(false)),
            limiter: Arc::new(limiter),
            auth_failures: Arc::new(ratelimit::RateLimiter::with_max_keys(
                limits::AUTH_FAILURES_PER_SEC,
                limits::AUTH_FAILURE_BURST,
                limits::MAX_LIMITED_ADDRESSES,
            )),
            replay: Arc::new(replay::ReplayGuard::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                limits::MAX_REPLAY_ENTRIES,
            )),
            stats: Arc::default(),
            market: None,
            status: Arc::default(),
            reporting: None,
            closing: Arc::new(tokio::sync::watch::channel(false).0),
        }))
    }

    /// Closes every WebSocket (code 1001): each holds a sequencer handle,
    /// and the node stops only once they are gone.
    pub fn close_sockets(&self) {
        self.closing.send_replace(true);
    }

    /// Serves fills, closed orders and candles from the reporting store.
    pub fn with_reporting(mut self, reporting: Reporting) -> Self {
        Arc::make_mut(&mut self.0).reporting = Some(reporting);
        self
    }

    /// Serves the public channels and candles from `market`.
    pub fn with_market_data(mut self, market: MarketData) -> Self {
        Arc::make_mut(&mut self.0).market = Some(market);
        self
    }
}

pub fn router(app: AppState) -> Router {
    let routes = Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(guarded_metrics))
        .route("/openapi.json", get(guarded_openapi));
    account_routes(admin_routes(routes))
        .route("/v1/instruments", get(public::instruments))
        .route("/v1/markets/{symbol}/book", get(public::book))
        .route("/v1/markets/{symbol}/trades", get(public::trades))
        .route("/v1/markets/{symbol}/status", get(public::status))
        .route("/v1/markets/{symbol}/candles", get(records::candles))
        .route("/v1/ws", get(ws::handler))
        .merge(ui::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            app.clone(),
            listener::body_deadline,
        ))
        .layer(middleware::from_fn_with_state(app.clone(), gate))
        .with_state(app)
}

/// The operator's routes, behind the admin token.
fn admin_routes(routes: Router<AppState>) -> Router<AppState> {
    routes
        .route("/admin/accounts", post(admin::create_account))
        .route(
            "/admin/accounts/{account_id}/keys",
            post(keys::admin_create).get(keys::admin_list),
        )
        .route("/admin/keys/{key_id}", delete(keys::admin_revoke))
        .route("/admin/keys/{key_id}/rotate", post(keys::admin_rotate))
        .route("/admin/replication", get(cluster::replication))
        .route("/admin/replication/voters", post(cluster::change_voters))
        .route("/admin/replication/leader", post(cluster::transfer_leader))
        .route("/admin/deposits", post(admin::deposit))
        .route("/admin/withdrawals", post(admin::withdraw))
        .route("/admin/instruments", post(admin::add_instrument))
        .route("/admin/instruments/{symbol}/halt", post(admin::halt))
        .route("/admin/instruments/{symbol}/resume", post(admin::resume))
        .route(
            "/admin/instruments/{symbol}/rules",
            put(admin_rules::put_rules),
        )
        .route(
            "/admin/instruments/{symbol}/delist",
            post(admin_rules::delist),
        )
        .route(
            "/admin/instruments/{symbol}/reference_price",
            post(admin_rules::set_reference_price),
        )
        .route("/admin/status", get(status::status))
        .route(
            "/admin/accounts/{account}/risk-limits",
            put(admin_risk::put_limits).delete(admin_risk::delete_limits),
        )
        .route(
            "/admin/accounts/{account}/suspend",
            post(admin_risk::suspend),
        )
        .route(
            "/admin/accounts/{account}/reinstate",
            post(admin_risk::reinstate),
        )
        .route(
            "/admin/accounts/{account}/mmp/{symbol}",
            put(admin_risk::put_mmp).delete(admin_risk::delete_mmp),
        )
        .route(
            "/admin/accounts/{account}/mmp/{symbol}/reset",
            post(admin_risk::admin_reset_mmp),
        )
        .route(
            "/admin/accounts/{account}/sub-accounts",
            post(admin_risk::link_sub_account),
        )
}

/// The signed routes of an account: its orders, fills, balances, keys and funds.
fn account_routes(routes: Router<AppState>) -> Router<AppState> {
    routes
        .route(
            "/v1/mmp/{symbol}/reset",
            post(admin_risk::account_reset_mmp),
        )
        .route("/v1/transfers", post(admin_risk::internal_transfer))
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
}

/// The `[http] metrics_bind` listener: `/metrics`, `/openapi.json` and
/// `/health`, without the admin token; bind it where only the scraper
/// reaches.
pub fn metrics_router(app: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi::serve))
        .fallback(not_found)
        .with_state(app)
}

/// `/metrics` and `/openapi.json` on the main listener need the admin
/// token unless `[http] metrics_auth = false`: both tell an attacker more
/// than a trader needs.
fn metrics_allowed(app: &AppState, admin: Result<auth::Admin, ApiError>) -> Result<(), ApiError> {
    if app.gateway.http.metrics_auth {
        admin.map(|_| ())
    } else {
        Ok(())
    }
}

async fn guarded_metrics(
    State(app): State<AppState>,
    admin: Result<auth::Admin, ApiError>,
) -> Response {
    match metrics_allowed(&app, admin) {
        Ok(()) => metrics(State(app)).await.into_response(),
        Err(error) => error.into_response(),
    }
}

async fn guarded_openapi(
    State(app): State<AppState>,
    admin: Result<auth::Admin, ApiError>,
) -> Response {
    match metrics_allowed(&app, admin) {
        Ok(()) => openapi::serve().await.into_response(),
        Err(error) => error.into_response(),
    }
}

/// Routes that answer while the node is still starting.
fn always_open(path: &str) -> bool {
    matches!(path, "/health" | "/ready" | "/metrics" | "/openapi.json")
}

/// Routes a draining process still serves: its probes and its operators.
fn operator_path(path: &str) -> bool {
    always_open(path) || path.starts_with("/admin")
}

/// Refuses traffic until the node is ready, and counts every response.
async fn gate(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let refused = exchange_node::tiers_config::refusal(
        &app.config.tiers,
        request.method().as_str(),
        request.uri().path(),
    );
    let response = if let Some(refused) = refused {
        ApiError::tier_refusal(refused).into_response()
    } else if app.draining.load(Ordering::Acquire) && !operator_path(request.uri().path()) {
        let mut response = ApiError::draining().into_response();
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
        response
    } else if always_open(request.uri().path()) || app.ready.load(Ordering::Acquire) {
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

/// 503 naming the alarms up on this replica (`nospace`), if any: a
/// balancer or orchestrator then sends clients elsewhere, and the operator
/// sees why.
fn alarm_response(app: &AppState) -> Option<Response> {
    let alarms = app.handle.alarms();
    if alarms.is_empty() {
        return None;
    }
    let body = serde_json::json!({
        "status": "alarm",
        "alarms": alarms,
        "message": exchange_node::sequencer::SubmitError::NoSpace.to_string(),
    });
    Some((StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response())
}

async fn health(State(app): State<AppState>) -> Response {
    alarm_response(&app).unwrap_or_else(|| "ok".into_response())
}

async fn ready(State(app): State<AppState>) -> Response {
    if !app.handle.is_healthy() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "failed: the sequencer stopped; see the log",
        )
            .into_response()
    } else if app.draining.load(Ordering::Acquire) {
        (StatusCode::SERVICE_UNAVAILABLE, "draining: shutting down").into_response()
    } else if let Some(alarm) = alarm_response(&app) {
        alarm
    } else if app.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "recovering").into_response()
    }
}

async fn metrics(State(app): State<AppState>) -> impl IntoResponse {
    let mut page = Exposition::new();
    app.handle.metrics.write_metrics(&mut page);
    app.handle.write_alarm_metrics(&mut page);
    app.stats.write_metrics(&mut page);
    if let Some(market) = &app.market {
        market.write_metrics(&mut page);
    }
    if let Some(reporting) = &app.reporting {
        reporting.write_metrics(&mut page);
    }
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        page.finish(),
    )
}
