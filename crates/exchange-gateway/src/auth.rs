//! Who is asking: HMAC-signed requests for trading, a bearer token for
//! administration.
//!
//! A signed request carries `EX-ACCESS-KEY`, `EX-ACCESS-TIMESTAMP` (Unix
//! milliseconds) and `EX-ACCESS-SIGN`: lowercase hex of HMAC-SHA256, keyed
//! with the API secret's UTF-8 bytes, over
//! `timestamp + "\n" + METHOD + "\n" + path?query + "\n" + body`
//! ([`super::signature::signed_string`]). The WebSocket `auth` message
//! signs the same way with `GET`, `/v1/ws` and no body. Signatures and
//! tokens are compared in constant time ([`super::signature`]); secrets
//! never leave the gateway except inside the MAC. An Ed25519 key signs the
//! same string instead: its 64-byte signature, in hex or standard base64.
//! `GET`, `DELETE` and `HEAD` carry no body: one sent with them is
//! refused (400 `body_not_allowed`), since a body the route ignores would
//! only give a captured request's bytes somewhere else to go.
//!
//! A key that signs correctly is then held to its expiry (401), its
//! allow-list of client addresses (403) and, route by route, its scopes
//! (403).
//!
//! The order of the checks is the point: a source address that has spent
//! its budget of failures is refused before anything else; then the cheap
//! checks (headers, a body on a method without one, timestamp, the key's
//! lookup, and whether its allowance has a request left, without taking
//! it); only then is the body read and the MAC computed; a verified request
//! is admitted once ([`super::replay`]), and only then does it spend one
//! request of its key's allowance. Key ids travel in clear, so anything
//! spent before the signature is verified could be spent by anyone on
//! anyone's key. Every refusal before that point (400, 401, 408, 413) is
//! charged to the source address instead.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_LENGTH};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use exchange_node::keys::{Scope, Scopes};
use exchange_node::limits::{MAX_API_KEY_LEN, MAX_TIMESTAMP_AHEAD_MS};
use exchange_node::reads::{Credential, Verifier};
use exchange_node::source::source_of;
use exchange_types::AccountId;

use super::error::{read_body, ApiError};
use super::replay::{self, Refusal, RequestGuard};
use super::AppState;

pub const KEY_HEADER: &str = "ex-access-key";
pub const TIMESTAMP_HEADER: &str = "ex-access-timestamp";
pub const SIGN_HEADER: &str = "ex-access-sign";

pub use super::signature::{ct_eq, ed25519_matches, sign, signature_matches, signed_string};

fn unix_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// On the log's clock (Unix nanoseconds), against which keys expire.
fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The account a verified key speaks for, and what the key may do there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub account: AccountId,
    pub scopes: Scopes,
    /// For a write (any method but GET and HEAD): what its command goes to
    /// the log with, so that it is applied once whichever gateway took it.
    pub guard: Option<RequestGuard>,
}

impl Caller {
    /// Refuses a route the key's scopes do not cover.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        require(self.scopes, scope)
    }
}

fn require(scopes: Scopes, scope: Scope) -> Result<(), ApiError> {
    if scopes.contains(scope) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            format!(
                "this API key lacks the `{}` scope (it has: {})",
                scope.as_str(),
                scopes.names().join(", ")
            ),
        ))
    }
}

fn expired() -> ApiError {
    ApiError::unauthorized("key_expired", "this API key has expired")
}

/// Refuses a key past its expiry or used from outside its allow-list (an
/// unspecified source is an unknown one).
fn check_use(credential: &Credential, source: IpAddr) -> Result<(), ApiError> {
    if credential.expires_at.is_some_and(|at| unix_now_ns() >= at) {
        return Err(expired());
    }
    let peer = Some(source).filter(|s| !s.is_unspecified());
    if !credential.allows(peer) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "address_not_allowed",
            match peer {
                Some(peer) => format!("this API key may not be used from {peer}"),
                None => "this API key has an allow-list and the client's address is unknown".into(),
            },
        ));
    }
    Ok(())
}

/// For a socket authenticated earlier: whether its key still exists,
/// has not expired, and has `scope` (a key revoked or expired since stops
/// the socket's order entry at once).
pub fn still_allows(app: &AppState, key: &str, scope: Scope) -> Result<(), ApiError> {
    let (scopes, expires_at) = app
        .handle
        .credential_grant(key)
        .ok_or_else(|| ApiError::unauthorized("invalid_api_key", "unknown API key"))?;
    if expires_at.is_some_and(|at| unix_now_ns() >= at) {
        return Err(expired());
    }
    require(scopes, scope)
}

/// Timestamps below this are not milliseconds of this era: most likely
/// seconds, which the protocol took before.
const FIRST_PLAUSIBLE_MS: u64 = 100_000_000_000;

/// Parses a timestamp (Unix milliseconds, plain digits) and refuses one
/// older than `window_ms` or further ahead of `now_ms` than the clocks of
/// client and server may differ ([`MAX_TIMESTAMP_AHEAD_MS`]).
pub fn check_timestamp(timestamp: &str, now_ms: u64, window_ms: u64) -> Result<u64, ApiError> {
    let valid = !timestamp.is_empty()
        && timestamp.len() <= 20
        && timestamp.bytes().all(|b| b.is_ascii_digit());
    let Some(ts) = timestamp.parse::<u64>().ok().filter(|_| valid) else {
        return Err(ApiError::unauthorized(
            "invalid_timestamp",
            "the timestamp must be Unix milliseconds, in decimal digits",
        ));
    };
    if ts < FIRST_PLAUSIBLE_MS {
        return Err(ApiError::unauthorized(
            "invalid_timestamp",
            "the timestamp must be Unix milliseconds (this looks like seconds)",
        ));
    }
    if ts.saturating_add(window_ms) < now_ms {
        return Err(ApiError::unauthorized(
            "stale_timestamp",
            format!("the timestamp is more than {window_ms} ms before server time ({now_ms} ms)"),
        ));
    }
    if ts > now_ms.saturating_add(MAX_TIMESTAMP_AHEAD_MS) {
        return Err(ApiError::unauthorized(
            "stale_timestamp",
            format!(
                "the timestamp is more than {MAX_TIMESTAMP_AHEAD_MS} ms ahead of server time \
                 ({now_ms} ms)"
            ),
        ));
    }
    Ok(ts)
}

/// Where a request came from, as the failure budget counts it: an IPv4
/// address, or an IPv6 address's /64 (what one host is usually given, so
/// a host cannot escape its budget by changing the low bits).
pub fn source_key(addr: IpAddr) -> String {
    match source_of(addr) {
        IpAddr::V6(prefix) => format!("{prefix}/64"),
        v4 => v4.to_string(),
    }
}

/// The peer address of the connection a request came on (the
/// unspecified address when the server was not given it, as in tests
/// that call the router directly).
pub struct Source(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for Source {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Source(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |info| info.0.ip()),
        ))
    }
}

/// Refuses, before any other work, a source that has spent its budget of
/// failed authentications ([`exchange_node::limits::AUTH_FAILURE_BURST`],
/// refilled at [`exchange_node::limits::AUTH_FAILURES_PER_SEC`]).
pub fn check_source(app: &AppState, source: IpAddr) -> Result<(), ApiError> {
    app.auth_failures
        .allows(&source_key(source), Instant::now())
        .map_err(|wait| {
            let mut error = ApiError::rate_limited(wait);
            error.message = "too many failed authentications from this address".into();
            error
        })
}

/// Charges a refused request to its source: any client error (400, 401,
/// 403, 408, 413) met while authenticating, whichever key it names. Not 429: the source's own
/// budget or a verified key's allowance, already spent. Not 5xx: the
/// server's state, not the client's fault.
fn counted<T>(app: &AppState, source: IpAddr, result: Result<T, ApiError>) -> Result<T, ApiError> {
    if let Err(error) = &result {
        if error.status.is_client_error() && error.status != StatusCode::TOO_MANY_REQUESTS {
            app.auth_failures.spend(&source_key(source), Instant::now());
        }
    }
    result
}

/// Whether requests of `method` carry a body. Those that do not are
/// refused one: the routes ignore it, so it could only ever be bytes a
/// replayer moved there from the path.
pub fn takes_body(method: &str) -> bool {
    !matches!(method, "GET" | "DELETE" | "HEAD")
}

fn body_not_allowed(method: &str) -> ApiError {
    ApiError::bad_request(
        "body_not_allowed",
        format!("a {method} request carries no body; send it (and sign it) with none"),
    )
}

/// Refuses, from the headers alone, a body declared on a method that has
/// none (a chunked one is refused once read: [`Signed`]).
fn check_declared_body(method: &str, headers: &HeaderMap) -> Result<(), ApiError> {
    let declared = headers.get(CONTENT_LENGTH).is_some_and(|len| {
        len.to_str()
            .ok()
            .and_then(|len| len.parse::<u64>().ok())
            .is_none_or(|len| len > 0)
    });
    if declared && !takes_body(method) {
        return Err(body_not_allowed(method));
    }
    Ok(())
}

/// One signed message to check.
pub struct SignedMessage<'a> {
    pub source: IpAddr,
    pub key: &'a str,
    pub timestamp: &'a str,
    pub signature: &'a str,
    pub method: &'a str,
    pub path_and_query: &'a str,
    pub body: &'a [u8],
}

/// A known key with a timely timestamp, its signature still to check.
pub struct Identified {
    credential: Credential,
    timestamp_ms: u64,
}

/// The cheap checks, before the body is read: the key's length, the
/// timestamp, the key's credential (a map lookup, no core thread), then
/// whether the key's allowance has a request left (taken only once the
/// signature verified: [`verify`]). A key the node does not know is
/// `invalid_api_key` once the node has caught up (`catching_up` before);
/// allowances are kept only for keys that exist, so made-up keys cannot
/// crowd out real ones.
pub fn identify(app: &AppState, key: &str, timestamp: &str) -> Result<Identified, ApiError> {
    let invalid_key = || ApiError::unauthorized("invalid_api_key", "unknown API key");
    if key.is_empty() || key.len() > MAX_API_KEY_LEN {
        return Err(invalid_key());
    }
    let timestamp_ms = check_timestamp(timestamp, unix_now_ms(), app.gateway.recv_window_ms)?;
    let credential = match app.handle.credential(key) {
        Some(credential) => credential,
        // A restarted node or a new leader may not have applied the key's
        // creation yet: "try again", not "no such key", which a client
        // would take as final.
        None if !app.handle.settled() => return Err(ApiError::catching_up()),
        None => return Err(invalid_key()),
    };
    app.limiter
        .allows(key, Instant::now())
        .map_err(ApiError::rate_limited)?;
    Ok(Identified {
        credential,
        timestamp_ms,
    })
}

/// The signature, then that the request is new: not one this node has
/// accepted, nor (for a write) one signed before this node led, which the
/// previous leader may have accepted. A new, genuine request then spends
/// one request of its key's allowance: a replay of a captured one spends
/// nothing.
pub fn verify(
    app: &AppState,
    identified: &Identified,
    message: &SignedMessage<'_>,
) -> Result<Caller, ApiError> {
    let credential = &identified.credential;
    let signed = signed_string(
        message.timestamp,
        message.method,
        message.path_and_query,
        message.body,
    );
    let good = match &credential.verifier {
        Verifier::Hmac(secret) => signature_matches(secret, &signed, message.signature),
        Verifier::Ed25519(public_key) => ed25519_matches(public_key, &signed, message.signature),
    };
    if !good {
        return Err(ApiError::unauthorized(
            "invalid_signature",
            "the signature does not match the request",
        ));
    }
    // Only a genuine holder of the key learns that it expired or is bound
    // to other addresses.
    check_use(credential, message.source)?;
    let signed_ms = identified.timestamp_ms;
    if message.method != "GET" && signed_ms < app.handle.leader_since_ms() {
        return Err(ApiError::unauthorized(
            "stale_timestamp",
            "signed before this node became the leader; sign the request again",
        ));
    }
    let fingerprint = replay::fingerprint(message.key, &signed);
    let forget_after_ms = signed_ms.saturating_add(app.gateway.recv_window_ms);
    let write = !matches!(message.method, "GET" | "HEAD");
    let caller = Caller {
        account: credential.account,
        scopes: credential.scopes,
        guard: write.then_some(RequestGuard {
            fingerprint,
            forget_after_ms,
        }),
    };
    match app
        .replay
        .admit(fingerprint, signed_ms, forget_after_ms, unix_now_ms())
    {
        Ok(()) => rate_limit(app, message.key).map(|()| caller),
        Err(Refusal::Replayed) => Err(replay::replayed()),
        Err(Refusal::BeforeStart) => Err(ApiError::unauthorized(
            "stale_timestamp",
            "signed before this node started; sign the request again",
        )),
        Err(Refusal::Full) => Err(replay::overloaded()),
    }
}

/// Checks a signed message whose body is at hand (the WebSocket `auth`
/// message) and returns who it speaks for. Every refusal is charged to the
/// source.
pub fn authenticate(app: &AppState, message: &SignedMessage<'_>) -> Result<Caller, ApiError> {
    check_source(app, message.source)?;
    let checked = (|| {
        if !takes_body(message.method) && !message.body.is_empty() {
            return Err(body_not_allowed(message.method));
        }
        let identified = identify(app, message.key, message.timestamp)?;
        verify(app, &identified, message)
    })();
    counted(app, message.source, checked)
}

/// Spends one request of the key's allowance.
pub fn rate_limit(app: &AppState, key: &str) -> Result<(), ApiError> {
    app.limiter
        .check(key, Instant::now())
        .map_err(ApiError::rate_limited)
}

/// A verified, rate-limited request: its account, its key's scopes and
/// its raw body. Each route checks the scope it needs.
pub struct Signed {
    pub account: AccountId,
    pub caller: Caller,
    pub body: Bytes,
}

impl Signed {
    /// What a write's command goes to the log with (none for a read).
    pub fn guard(&self) -> Option<RequestGuard> {
        self.caller.guard
    }

    pub fn require(&self, scope: Scope) -> Result<AccountId, ApiError> {
        self.caller.require(scope)?;
        Ok(self.account)
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<&'a str, ApiError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::unauthorized(
            "missing_credentials",
            "signed routes need the EX-ACCESS-KEY, EX-ACCESS-TIMESTAMP and EX-ACCESS-SIGN headers",
        )
        })
}

impl FromRequest<AppState> for Signed {
    type Rejection = ApiError;

    /// The source's budget first, then the headers and the key, and only
    /// for a known key with a timely timestamp the body and the MAC.
    async fn from_request(req: Request, app: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let Ok(Source(source)) = Source::from_request_parts(&mut parts, app).await;
        check_source(app, source)?;
        let method = parts.method.as_str();
        let headers = (|| {
            let found = (
                header(&parts.headers, KEY_HEADER)?,
                header(&parts.headers, TIMESTAMP_HEADER)?,
                header(&parts.headers, SIGN_HEADER)?,
            );
            check_declared_body(method, &parts.headers)?;
            Ok::<_, ApiError>(found)
        })();
        let (key, timestamp, signature) = counted(app, source, headers)?;
        let identified = counted(app, source, identify(app, key, timestamp))?;
        let body = read_body(&parts.headers, body, app.gateway.max_body_bytes)
            .await
            .and_then(|body| {
                if takes_body(method) || body.is_empty() {
                    Ok(body)
                } else {
                    Err(body_not_allowed(method))
                }
            });
        let body = counted(app, source, body)?;
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path(), |pq| pq.as_str());
        let message = SignedMessage {
            source,
            key,
            timestamp,
            signature,
            method,
            path_and_query,
            body: &body,
        };
        let caller = counted(app, source, verify(app, &identified, &message))?;
        Ok(Signed {
            account: caller.account,
            caller,
            body,
        })
    }
}

/// A request carrying the admin bearer token.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, ApiError> {
        let Some(value) = parts.headers.get(AUTHORIZATION) else {
            return Err(ApiError::unauthorized(
                "missing_token",
                "admin routes need Authorization: Bearer TOKEN",
            ));
        };
        let token = value
            .as_bytes()
            .strip_prefix(b"Bearer ")
            .unwrap_or_default();
        if ct_eq(token, app.admin_token.as_bytes()) {
            Ok(Admin)
        } else {
            Err(ApiError::unauthorized(
                "invalid_token",
                "the admin token is not valid",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_methods_with_a_body_take_one() {
        for method in ["POST", "PUT", "PATCH"] {
            assert!(takes_body(method), "{method}");
        }
        for method in ["GET", "DELETE", "HEAD"] {
            assert!(!takes_body(method), "{method}");
            let mut headers = HeaderMap::new();
            assert!(check_declared_body(method, &headers).is_ok());
            headers.insert(CONTENT_LENGTH, "0".parse().unwrap());
            assert!(check_declared_body(method, &headers).is_ok());
            headers.insert(CONTENT_LENGTH, "2".parse().unwrap());
            let refused = check_declared_body(method, &headers).unwrap_err();
            assert_eq!(
                (refused.status, refused.code),
                (StatusCode::BAD_REQUEST, "body_not_allowed")
            );
        }
    }

    #[test]
    fn timestamps_are_milliseconds_within_the_window() {
        let now = 1_700_000_000_000;
        assert_eq!(check_timestamp("1700000000000", now, 5_000), Ok(now));
        assert!(check_timestamp("1699999995000", now, 5_000).is_ok());
        assert!(check_timestamp("1700000001000", now, 5_000).is_ok());
        assert_eq!(
            check_timestamp("1699999994999", now, 5_000).map_err(|e| e.code),
            Err("stale_timestamp")
        );
        // Ahead of server time by more than clocks may differ.
        assert_eq!(
            check_timestamp("1700000001001", now, 5_000).map_err(|e| e.code),
            Err("stale_timestamp")
        );
        // Seconds, as the protocol once took, are named as such.
        let seconds = check_timestamp("1700000000", now, 5_000).unwrap_err();
        assert_eq!(seconds.code, "invalid_timestamp");
        assert!(
            seconds.message.contains("milliseconds"),
            "{}",
            seconds.message
        );
        for bad in [
            "",
            "+1700000000000",
            "17e11",
            "-1",
            "1700000000000.5",
            "99999999999999999999999",
        ] {
            assert_eq!(
                check_timestamp(bad, now, 5_000).map_err(|e| e.code),
                Err("invalid_timestamp"),
                "{bad}"
            );
        }
    }

    #[test]
    fn sources_are_counted_by_address_and_ipv6_by_its_64() {
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(source_key(v4), "192.0.2.7");
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_key(a), source_key(b));
        assert_ne!(source_key(a), source_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(source_key(mapped), "192.0.2.7");
    }
}
