//! Calling the router as a client would: signed, admin and plain requests.

use std::sync::atomic::AtomicBool;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use super::auth::sign;
use super::config::GatewayConfig;
use super::test_support::{keys, TestNode};
use super::{router, AppState, Config};
use std::sync::Arc;

pub const ADMIN: &str = "admin-token";

pub fn app(node: &TestNode, tweak: impl FnOnce(&mut GatewayConfig)) -> AppState {
    let mut gateway = GatewayConfig::default();
    tweak(&mut gateway);
    static STORES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let handle = node.pipeline.handle.clone();
    let data_dir = node._dir.path().to_path_buf();
    // History routes read the reporting store, as on a real node; each app
    // has its own store (two writers of one store would step on each other).
    let n = STORES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (reporting, _detached) = exchange_reporter::Reporting::start(
        &handle,
        exchange_reporter::ReporterConfig {
            target: exchange_reporting::Target::Sqlite(
                data_dir.join(format!("reporting-{n}.sqlite")),
            ),
            data_dir,
            max_batch: 1_024,
            linger: std::time::Duration::from_millis(2),
            read_wait: std::time::Duration::from_secs(30),
            background: false,
            cpus: exchange_node::threads::CpuPlacement::Any,
            journal_tail_dropped: false,
            replica_of_many: false,
        },
    )
    .expect("reporting store");
    AppState::new(
        handle,
        Config::default(),
        gateway,
        ADMIN.into(),
        Arc::new(AtomicBool::new(true)),
    )
    .with_reporting(reporting)
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub json: Value,
}

pub async fn call(app: &AppState, request: Request<Body>) -> Reply {
    let response = router(app.clone())
        .oneshot(request)
        .await
        .expect("infallible");
    let (parts, body) = response.into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .expect("body")
        .to_bytes();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Reply {
        status: parts.status,
        headers: parts.headers,
        json,
    }
}

/// Unix milliseconds, distinct on every call: two identical requests
/// signed in the same millisecond would be one request to the replay guard.
pub fn now() -> String {
    exchange_testkit::unix_now_ms().to_string()
}

pub fn signed_at(
    account: usize,
    timestamp: &str,
    method: Method,
    path: &str,
    body: &str,
) -> Request<Body> {
    let (key, secret) = keys()[account - 1].clone();
    signed_with(key, &secret, timestamp, method, path, body)
}

/// Signed with any key and secret, known to the exchange or not.
pub fn signed_with(
    key: &str,
    secret: &str,
    timestamp: &str,
    method: Method,
    path: &str,
    body: &str,
) -> Request<Body> {
    let signature = sign(secret, timestamp, method.as_str(), path, body.as_bytes());
    Request::builder()
        .method(method)
        .uri(path)
        .header("EX-ACCESS-KEY", key)
        .header("EX-ACCESS-TIMESTAMP", timestamp)
        .header("EX-ACCESS-SIGN", signature)
        .body(Body::from(body.to_owned()))
        .expect("request")
}

pub fn signed(account: usize, method: Method, path: &str, body: &str) -> Request<Body> {
    signed_at(account, &now(), method, path, body)
}

/// The request as if it came from `ip` (what the server's listener records).
pub fn from(ip: &str, mut request: Request<Body>) -> Request<Body> {
    let addr = std::net::SocketAddr::new(ip.parse().expect("ip"), 40_000);
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(addr));
    request
}

pub fn admin(path: &str, body: Value) -> Request<Body> {
    Request::post(path)
        .header("Authorization", format!("Bearer {ADMIN}"))
        .body(Body::from(body.to_string()))
        .expect("request")
}

/// A `GET` with the admin token.
pub fn admin_get(path: &str) -> Request<Body> {
    Request::get(path)
        .header("Authorization", format!("Bearer {ADMIN}"))
        .body(Body::empty())
        .expect("request")
}

pub fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).expect("request")
}
