//! The web pages: the trading screen at `/`, the operator dashboard at
//! `/ops`, and their scripts and styles under `/ui/` (docs/ui.md).
//!
//! Every file is compiled into the binary, so the pages always match the
//! server that serves them and need no build step or file on disk. They
//! are plain HTML, CSS and JavaScript modules written for this project; the
//! browser talks to the same public REST, WebSocket and admin routes as any
//! other client, signing its own requests.
//!
//! Caching: each answer carries a strong `ETag` (a digest of the file) and
//! `Cache-Control: no-cache`, so a browser revalidates and gets `304 Not
//! Modified` until the binary changes, and never runs a stale script.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::ApiError;
use crate::AppState;

/// Scripts, styles and connections from this origin only; no inline
/// script, no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
                   img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
                   form-action 'self'; frame-ancestors 'none'";

struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!($name),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("ops.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("common.js", JS),
    asset!("sign.js", JS),
    asset!("market.js", JS),
    asset!("charts.js", JS),
    asset!("trade.js", JS),
    asset!("orders.js", JS),
    asset!("entry.js", JS),
    asset!("status.js", JS),
    asset!("ops.js", JS),
    asset!("ops_risk.js", JS),
    asset!("ops_phases.js", JS),
];

/// Each asset's ETag, in the order of [`ASSETS`].
static ETAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| {
            let digest = blake3::hash(asset.body).to_hex();
            HeaderValue::from_str(&format!("\"{}\"", &digest[..20]))
                .expect("hex is a valid header value")
        })
        .collect()
});

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/",
            get(|headers: HeaderMap| async move { serve("index.html", &headers) }),
        )
        .route(
            "/ops",
            get(|headers: HeaderMap| async move { serve("ops.html", &headers) }),
        )
        .route(
            "/ui/{file}",
            get(|Path(file): Path<String>, headers: HeaderMap| async move {
                // Pages are served at their routes only.
                if file.ends_with(".html") {
                    return ApiError::not_found("not_found", "no such file").into_response();
                }
                serve(&file, &headers)
            }),
        )
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(index) = ASSETS.iter().position(|a| a.name == name) else {
        return ApiError::not_found("not_found", "no such file").into_response();
    };
    let (asset, etag) = (&ASSETS[index], &ETAGS[index]);
    let fresh = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim().as_bytes() == etag.as_bytes())
        });
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(ETAG, etag.clone());
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if asset.content_type.starts_with("text/html") {
        headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
        headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    }
    response
}

#[cfg(test)]
mod tests;
