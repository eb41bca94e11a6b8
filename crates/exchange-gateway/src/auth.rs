//! Who is asking: HMAC-signed requests for trading, a bearer token for
//! administration.
//!
//! A signed request carries `EX-ACCESS-KEY`, `EX-ACCESS-TIMESTAMP` (Unix
//! seconds) and `EX-ACCESS-SIGN`: lowercase hex of HMAC-SHA256, keyed with
//! the API secret's UTF-8 bytes, over `timestamp + METHOD + path?query +
//! body`. The WebSocket `auth` message signs the same way with `GET` and
//! `/v1/ws`. Signatures and tokens are compared in constant time; secrets
//! never leave this module except inside the MAC.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use exchange_node::limits::MAX_API_KEY_LEN;
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
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
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
}

/// Checks a signed message and returns the account it speaks for. It
/// spends one request of the key's allowance first, whether or not the key
/// turns out to exist: a client cycling through made-up keys is limited
/// like any other, per key, before its keys are looked up.
pub fn authenticate(app: &AppState, message: &SignedMessage<'_>) -> Result<AccountId, ApiError> {
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
    let good = signature_matches(
        &credential.secret,
        message.timestamp,
        message.method,
        message.path_and_query,
        message.body,
        message.signature,
    );
    if !good {
        return Err(ApiError::unauthorized(
            "invalid_signature",
            "the signature does not match the request",
        ));
    }
    Ok(credential.account)
}

/// Spends one request of the key's allowance.
pub fn rate_limit(app: &AppState, key: &str) -> Result<(), ApiError> {
    app.limiter
        .check(key, Instant::now())
        .map_err(ApiError::rate_limited)
}

/// A verified, rate-limited trading request: its account and raw body.
pub struct Signed {
    pub account: AccountId,
    pub body: Bytes,
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
        };
        let account = authenticate(app, &message)?;
        Ok(Signed { account, body })
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
