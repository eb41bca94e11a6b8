//! WebSocket gateway (being built).

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::State;
use axum::response::Response;

use super::AppState;

pub async fn handler(upgrade: WebSocketUpgrade, State(_app): State<AppState>) -> Response {
    upgrade.on_upgrade(|_socket| async {})
}
