//! HTTP and WebSocket gateway (axum).
//!
//! Handlers translate requests into log entries or state queries on the
//! [`Handle`]; they never touch the state directly. Data flows one way:
//! request → sequencer → events → response.

pub mod ws;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;

use crate::config::Config;
use crate::sequencer::Handle;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub handle: Handle,
    pub config: Arc<Config>,
    pub admin_token: Arc<str>,
    pub ready: Arc<AtomicBool>,
}

impl AppState {
    pub fn new(handle: Handle, config: Config, admin_token: String, ready: Arc<AtomicBool>) -> Self {
        AppState { handle, config: Arc::new(config), admin_token: admin_token.into(), ready }
    }
}

pub fn router(app: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/v1/ws", get(ws::handler))
        .with_state(app)
}

async fn health() -> &'static str {
    "ok"
}

async fn ready(State(app): State<AppState>) -> (StatusCode, &'static str) {
    if app.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "recovering")
    }
}
