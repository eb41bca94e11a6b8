//! Who is asking: signed requests for accounts, a bearer token for
//! administration.
//!
//! A signed request carries `EX-ACCESS-KEY`, `EX-ACCESS-TIMESTAMP` (Unix
//! seconds) and `EX-ACCESS-SIGN`, a signature over `timestamp + METHOD +
//! path?query + body`: for an HMAC key, lowercase hex of HMAC-SHA256 keyed
//! with the API secret's UTF-8 bytes; for an Ed25519 key, the 64-byte
//! Ed25519 signature in hex or standard base64. The WebSocket `auth`
//! message signs the same way with `GET` and `/v1/ws`. Signatures and
//! tokens are compared in constant time; secrets never leave this module
//! except inside the MAC.
//!
//! A key that signs correctly is then held to its expiry (401), its
//! allow-list of client addresses (403) and, route by route, its scopes
//! (403).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use exchange_node::keys::{Scope, Scopes};
use exchange_node::limits::MAX_API_KEY_LEN;
use exchange_node::reads::{Credential, Verifier};
use exchange_types::AccountId;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::error::{read_body, ApiError};
use super::AppState;

pub const KEY_HEADER: &str = "ex-access-key";
pub const TIMESTAMP_HEADER: &str = "ex-access-timestamp";
pub const SIGN_HEADER: &str = "ex-access-sign";

fn mac(
    secret: &str,
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(method.as_bytes());
    mac.update(path_and_query.as_bytes());
    mac.update(body);
    mac
}

/// The signature a client sends (lowercase hex).
pub fn sign(
    secret: &str,
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> String {
    hex::encode(
        mac(secret, timestamp, method, path_and_query, body)
            .finalize()
            .into_bytes(),
    )
}

/// Whether `signature` (hex) is right, compared in constant time.
pub fn signature_matches(
    secret: &str,
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
    signature: &str,
) -> bool {
    match hex::decode(signature) {
        Ok(given) => mac(secret, timestamp, method, path_and_query, body)
            .verify_slice(&given)
            .is_ok(),
        Err(_) => false,
    }
}

/// Whether `signature` (hex or standard base64 of the 64 signature bytes)
/// is the Ed25519 signature of the message by `public_key`. Strict
/// verification refuses the malleable and small-order forms.
pub fn ed25519_matches(
    public_key: &[u8; 32],
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
    signature: &str,
) -> bool {
    let Ok(key) = ed25519_dalek::VerifyingKey::from_bytes(public_key) else {
        return false;
    };
    let bytes = if signature.len() == 128 {
        hex::decode(signature).ok()
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(signature)
            .ok()
    };
    let Some(signature) = bytes.and_then(|b| <[u8; 64]>::try_from(b).ok()) else {
        return false;
    };
    let signature = ed25519_dalek::Signature::from_bytes(&signature);
    let mut message =
        Vec::with_capacity(timestamp.len() + method.len() + path_and_query.len() + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.extend_from_slice(method.as_bytes());
    message.extend_from_slice(path_and_query.as_bytes());
    message.extend_from_slice(body);
    key.verify_strict(&message, &signature).is_ok()
}

/// Constant-time equality of two secrets of any length: comparing their
/// digests hides where (and whether the lengths) differ.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    let (da, db) = (Sha256::digest(a), Sha256::digest(b));
    da.iter()
        .zip(db.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

fn unix_now() -> u64 {
    unix_now_ns() / 1_000_000_000
}

/// On the log's clock (Unix nanoseconds), against which keys expire.
fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Refuses a timestamp that is not plain digits or is further than
/// `window` seconds from `now`, so a captured request cannot be replayed
/// later.
pub fn check_timestamp(timestamp: &str, now: u64, window: u64) -> Result<(), ApiError> {
    let valid = !timestamp.is_empty()
        && timestamp.len() <= 20
        && timestamp.bytes().all(|b| b.is_ascii_digit());
    let Some(ts) = timestamp.parse::<u64>().ok().filter(|_| valid) else {
        return Err(ApiError::unauthorized(
            "invalid_timestamp",
            "the timestamp must be Unix seconds",
        ));
    };
    if ts.abs_diff(now) > window {
        return Err(ApiError::unauthorized(
            "stale_timestamp",
            format!("the timestamp is more than {window} seconds from server time ({now})"),
        ));
    }
    Ok(())
}

/// One signed message to check.
pub struct SignedMessage<'a> {
    pub key: &'a str,
    pub timestamp: &'a str,
    pub signature: &'a str,
    pub method: &'a str,
    pub path_and_query: &'a str,
    pub body: &'a [u8],
    /// The client's address, when the listener gives it.
    pub peer: Option<IpAddr>,
}

/// The account a verified key speaks for, and what the key may do there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub account: AccountId,
    pub scopes: Scopes,
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

/// Refuses a key past its expiry or used from outside its allow-list.
fn check_use(credential: &Credential, peer: Option<IpAddr>) -> Result<(), ApiError> {
    if credential.expires_at.is_some_and(|at| unix_now_ns() >= at) {
        return Err(expired());
    }
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
    let credential = app
        .handle
        .credential(key)
        .ok_or_else(|| ApiError::unauthorized("invalid_api_key", "unknown API key"))?;
    if credential.expires_at.is_some_and(|at| unix_now_ns() >= at) {
        return Err(expired());
    }
    require(credential.scopes, scope)
}

/// The client's address, if the listener recorded it.
pub struct PeerAddr(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddr {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Infallible> {
        Ok(PeerAddr(peer_of(parts)))
    }
}

fn peer_of(parts: &Parts) -> Option<IpAddr> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())
}

/// Checks a signed message and returns who it speaks for. It
/// spends one request of the key's allowance first, whether or not the key
/// turns out to exist: a client cycling through made-up keys is limited
/// like any other, per key, before its keys are looked up.
pub fn authenticate(app: &AppState, message: &SignedMessage<'_>) -> Result<Caller, ApiError> {
    let invalid_key = || ApiError::unauthorized("invalid_api_key", "unknown API key");
    if message.key.is_empty() || message.key.len() > MAX_API_KEY_LEN {
        return Err(invalid_key());
    }
    rate_limit(app, message.key)?;
    check_timestamp(
        message.timestamp,
        unix_now(),
        app.config.signature_window_secs,
    )?;
    let credential = match app.handle.credential(message.key) {
        Some(credential) => credential,
        None if !app.handle.caught_up() => return Err(ApiError::catching_up()),
        None => {
            // A write on a follower is the leader's to take, and the leader
            // knows every account the cluster created; this node may have
            // restarted with a commit index it does not yet know is behind.
            if message.method != "GET" {
                app.handle.check_leader()?;
            }
            return Err(invalid_key());
        }
    };
    let good = match &credential.verifier {
        Verifier::Hmac(secret) => signature_matches(
            secret,
            message.timestamp,
            message.method,
            message.path_and_query,
            message.body,
            message.signature,
        ),
        Verifier::Ed25519(public_key) => ed25519_matches(
            public_key,
            message.timestamp,
            message.method,
            message.path_and_query,
            message.body,
            message.signature,
        ),
    };
    if !good {
        return Err(ApiError::unauthorized(
            "invalid_signature",
            "the signature does not match the request",
        ));
    }
    // Only a genuine holder of the key learns that it expired or is bound
    // to other addresses.
    check_use(&credential, message.peer)?;
    Ok(Caller {
        account: credential.account,
        scopes: credential.scopes,
    })
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

    async fn from_request(req: Request, app: &AppState) -> Result<Self, ApiError> {
        let (parts, body) = req.into_parts();
        let (key, timestamp, signature) = (
            header(&parts.headers, KEY_HEADER)?,
            header(&parts.headers, TIMESTAMP_HEADER)?,
            header(&parts.headers, SIGN_HEADER)?,
        );
        let body = read_body(&parts.headers, body, app.config.max_body_bytes).await?;
        let path_and_query = parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path(), |pq| pq.as_str());
        let message = SignedMessage {
            key,
            timestamp,
            signature,
            method: parts.method.as_str(),
            path_and_query,
            body: &body,
            peer: peer_of(&parts),
        };
        let caller = authenticate(app, &message)?;
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

    const SECRET: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const BODY: &str =
        r#"{"symbol":"BTC-USD","side":"buy","type":"limit","price":"60000.00","qty":"0.5"}"#;

    // Expected values computed independently with Python's hmac/hashlib
    // (and the WebSocket one with `openssl dgst -sha256 -hmac abc`).
    #[test]
    fn signatures_match_an_independent_implementation() {
        assert_eq!(
            sign(SECRET, "1700000000", "POST", "/v1/orders", BODY.as_bytes()),
            "d48f10d186eb8c79791cd733eb2c6d4eee260dadd767121480a4b9bcc7d5b0bc"
        );
        assert_eq!(
            sign(
                SECRET,
                "1700000000",
                "GET",
                "/v1/orders?status=all&symbol=BTC-USD",
                b""
            ),
            "ebc6a925095ee09523b7ba6c7f546890a5aa026e142199b54248248b9f7b11ab"
        );
        assert_eq!(
            sign("abc", "1700000000", "GET", "/v1/ws", b""),
            "cb82575a9902acaf74a491a3214721676aaed65f0c291db4069979d43305d278"
        );
    }

    #[test]
    fn verification_refuses_any_change() {
        let good = "d48f10d186eb8c79791cd733eb2c6d4eee260dadd767121480a4b9bcc7d5b0bc";
        let check = |ts: &str, method: &str, path: &str, body: &str, sig: &str| {
            signature_matches(SECRET, ts, method, path, body.as_bytes(), sig)
        };
        assert!(check("1700000000", "POST", "/v1/orders", BODY, good));
        assert!(check(
            "1700000000",
            "POST",
            "/v1/orders",
            BODY,
            &good.to_uppercase()
        ));
        assert!(!check("1700000001", "POST", "/v1/orders", BODY, good));
        assert!(!check("1700000000", "PUT", "/v1/orders", BODY, good));
        assert!(!check("1700000000", "POST", "/v1/orders?x=1", BODY, good));
        assert!(!check(
            "1700000000",
            "POST",
            "/v1/orders",
            &BODY.replace("0.5", "5"),
            good
        ));
        assert!(!check(
            "1700000000",
            "POST",
            "/v1/orders",
            BODY,
            &good[..62]
        ));
        assert!(!check("1700000000", "POST", "/v1/orders", BODY, "not hex"));
        assert!(!signature_matches(
            "other",
            "1700000000",
            "POST",
            "/v1/orders",
            BODY.as_bytes(),
            good
        ));
    }

    #[test]
    fn timestamps_outside_the_window_are_stale() {
        let now = 1_700_000_000;
        assert!(check_timestamp("1700000000", now, 30).is_ok());
        assert!(check_timestamp("1699999970", now, 30).is_ok());
        assert!(check_timestamp("1700000030", now, 30).is_ok());
        assert_eq!(
            check_timestamp("1699999969", now, 30).map_err(|e| e.code),
            Err("stale_timestamp")
        );
        assert_eq!(
            check_timestamp("1700000031", now, 30).map_err(|e| e.code),
            Err("stale_timestamp")
        );
        for bad in [
            "",
            "+1700000000",
            "17e8",
            "-1",
            "1700000000.5",
            "99999999999999999999999",
        ] {
            assert_eq!(
                check_timestamp(bad, now, 30).map_err(|e| e.code),
                Err("invalid_timestamp"),
                "{bad}"
            );
        }
    }

    #[test]
    fn constant_time_equality() {
        assert!(ct_eq(b"token", b"token"));
        assert!(!ct_eq(b"token", b"tokeN"));
        assert!(!ct_eq(b"token", b"token2"));
        assert!(!ct_eq(b"", b"token"));
    }
}
