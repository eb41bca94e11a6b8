//! The one shape every refusal takes: `{"code": "snake_case", "message":
//! "..."}` with an HTTP status, and the extractors that turn axum's own
//! rejections (path, query, body) into it.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, RawPathParams, Request};
use axum::http::header::{CONTENT_LENGTH, RETRY_AFTER};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use exchange_types::RejectReason;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;

use super::rest_text::JsonText;
use super::AppState;
use exchange_node::reads::StateHashError;
use exchange_node::sequencer::SubmitError;

/// A refusal: HTTP status, stable snake_case code, human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Seconds, sent as `Retry-After` (429 and 503).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, code, message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn unknown_order() -> Self {
        ApiError::not_found("unknown_order", RejectReason::UnknownOrder.message())
    }

    pub fn unknown_instrument() -> Self {
        ApiError::not_found(
            "unknown_instrument",
            RejectReason::UnknownInstrument.message(),
        )
    }

    /// A request this kind of process does not serve.
    pub fn tier_refusal(refused: exchange_node::tiers_config::TierRefusal) -> Self {
        use exchange_node::tiers_config::TierRefusal;
        match refused {
            TierRefusal::ClientsAtGateways => ApiError::new(
                StatusCode::FORBIDDEN,
                "clients_at_gateways",
                "this replica serves operators only; clients connect to the gateways",
            ),
            TierRefusal::MarketDataOnly => ApiError::new(
                StatusCode::FORBIDDEN,
                "market_data_only",
                "this is a market-data gateway; send orders to an order-entry gateway",
            ),
        }
    }

    /// The process is shutting down (its drain): nothing was applied;
    /// send to another gateway.
    pub fn draining() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining",
            "this gateway is shutting down; nothing was applied: send to another",
        )
        .with_retry_after(1)
    }

    pub fn not_ready() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "the exchange is starting; retry shortly",
        )
        .with_retry_after(1)
    }

    pub fn catching_up() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "catching_up",
            "this node is still applying the log; retry shortly",
        )
        .with_retry_after(1)
    }

    pub fn rate_limited(wait: Duration) -> Self {
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests for this API key",
        )
        .with_retry_after(secs.max(1))
    }

    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// A business refusal by the core. The reasons a client acts on
    /// differently get their own status; every other one is 422.
    pub fn reject(reason: RejectReason) -> Self {
        let status = match reason {
            RejectReason::DuplicateClientOrderId => StatusCode::CONFLICT,
            RejectReason::UnknownOrder => StatusCode::NOT_FOUND,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError::new(status, reason.as_str(), reason.message())
    }

    /// A JSON body that is not the object the route expects.
    pub fn from_json(error: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let text = error.to_string();
        let code = match error.classify() {
            Category::Data if text.starts_with("unknown field") => "unknown_field",
            Category::Data if text.starts_with("missing field") => "missing_field",
            Category::Data if text.starts_with("duplicate field") => "duplicate_field",
            Category::Data if text.starts_with("invalid type") => "invalid_type",
            Category::Data => "invalid_value",
            Category::Syntax | Category::Eof | Category::Io => "malformed_json",
        };
        ApiError::bad_request(code, text)
    }
}

impl From<SubmitError> for ApiError {
    fn from(error: SubmitError) -> Self {
        let code = match error {
            SubmitError::Overloaded => "overloaded",
            SubmitError::Stopped => "unavailable",
            SubmitError::NotLeader { .. } => "not_leader",
            SubmitError::NoSpace => "nospace",
            SubmitError::SessionExpired => "session_expired",
        };
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code, error.to_string()).with_retry_after(1)
    }
}

impl From<StateHashError> for ApiError {
    fn from(error: StateHashError) -> Self {
        match error {
            StateHashError::Submit(error) => error.into(),
            StateHashError::Section(error) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                error.to_string(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // A refused order is answered this body: written by hand, it
        // skips building a `serde_json::Value` per refusal.
        let body = JsonText::error(self.code, &self.message);
        let mut response = (self.status, body).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// Parses a JSON body, mapping every failure to an [`ApiError`].
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // Serde would also read a struct from a JSON array; only objects are
    // part of the protocol.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::bad_request(
            "malformed_json",
            "the request body must be a JSON object",
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        // serde_json reports a wrong-typed enum field (`"side": 1`) as a
        // syntax error; if the body is well-formed JSON, it was the type.
        let well_formed = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
        if e.classify() == serde_json::error::Category::Syntax && well_formed {
            ApiError::bad_request("invalid_type", e.to_string())
        } else {
            ApiError::from_json(&e)
        }
    })
}

/// Reads a whole body, refusing more than `limit` bytes with 413.
pub async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body exceeds {limit} bytes"),
        )
    };
    // Refuse early when the client says up front that the body is too big.
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(too_large());
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Err(error) if crate::listener::is_body_timeout(error.as_ref()) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "the request body did not arrive in time",
        )),
        Err(error) => Err(ApiError::bad_request(
            "malformed_body",
            format!("cannot read the request body: {error}"),
        )),
    }
}

/// A JSON body of type `T` (unsigned routes: admin).
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = req.into_parts();
        let bytes = read_body(&parts.headers, body, app.gateway.max_body_bytes).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Path parameters, with malformed ones answered 400 `invalid_path`.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        if let Ok(raw) = RawPathParams::from_request_parts(parts, app).await {
            crate::ids::check_path(&raw)?;
        }
        match Path::<T>::from_request_parts(parts, app).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(ApiError::bad_request("invalid_path", rejection.body_text())),
        }
    }
}

/// Query parameters, with malformed or unknown ones answered 400
/// `invalid_query`.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, app).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::bad_request(
                "invalid_query",
                rejection.body_text(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        qty: String,
        post_only: Option<bool>,
    }

    fn code_of(body: &str) -> &'static str {
        parse_json::<Probe>(body.as_bytes())
            .map(|_| "ok")
            .unwrap_or_else(|e| e.code)
    }

    #[test]
    fn json_failures_get_distinct_codes() {
        assert_eq!(code_of(r#"{"qty":"1"}"#), "ok");
        assert_eq!(code_of(r#"{"qty":"1""#), "malformed_json");
        assert_eq!(code_of(""), "malformed_json");
        assert_eq!(code_of(r#"["1"]"#), "malformed_json");
        assert_eq!(code_of(r#"{"qty":"1","pirce":"2"}"#), "unknown_field");
        assert_eq!(code_of(r#"{"post_only":true}"#), "missing_field");
        assert_eq!(code_of(r#"{"qty":1.5}"#), "invalid_type");
        assert_eq!(code_of(r#"{"qty":"1","qty":"2"}"#), "duplicate_field");
    }

    #[test]
    fn rejects_map_to_statuses() {
        assert_eq!(
            ApiError::reject(RejectReason::DuplicateClientOrderId).status,
            StatusCode::CONFLICT
        );
        assert_eq!(
            ApiError::reject(RejectReason::UnknownOrder).status,
            StatusCode::NOT_FOUND
        );
        let funds = ApiError::reject(RejectReason::InsufficientFunds);
        assert_eq!(
            (funds.status, funds.code),
            (StatusCode::UNPROCESSABLE_ENTITY, "insufficient_funds")
        );
        assert_eq!(funds.message, RejectReason::InsufficientFunds.message());
        let busy = ApiError::from(SubmitError::Overloaded);
        assert_eq!(
            (busy.status, busy.code, busy.retry_after),
            (StatusCode::SERVICE_UNAVAILABLE, "overloaded", Some(1))
        );
    }

    #[test]
    fn retry_after_rounds_up_and_is_sent() {
        assert_eq!(
            ApiError::rate_limited(Duration::from_millis(1)).retry_after,
            Some(1)
        );
        assert_eq!(
            ApiError::rate_limited(Duration::from_millis(2_100)).retry_after,
            Some(3)
        );
        let response = ApiError::rate_limited(Duration::from_secs(2)).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok()),
            Some("2")
        );
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_413() {
        let headers = HeaderMap::new();
        let big = read_body(&headers, Body::from(vec![b'x'; 101]), 100).await;
        assert_eq!(
            big.map_err(|e| e.status),
            Err(StatusCode::PAYLOAD_TOO_LARGE)
        );
        let fits = read_body(&headers, Body::from(vec![b'x'; 100]), 100).await;
        assert_eq!(fits.map(|b| b.len()), Ok(100));
        let mut declared = HeaderMap::new();
        declared.insert(CONTENT_LENGTH, HeaderValue::from(5000u64));
        let early = read_body(&declared, Body::empty(), 100).await;
        assert_eq!(early.map_err(|e| e.code), Err("body_too_large"));
    }
}
