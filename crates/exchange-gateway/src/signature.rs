//! The signature primitives of the signed-request protocol: HMAC-SHA256
//! with the API secret, Ed25519 with the client's key pair, both over
//! `timestamp + METHOD + path?query + body`, and the constant-time
//! comparison of secrets. Who may sign and when is [`super::auth`]'s.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

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
