//! The signature primitives of the signed-request protocol: HMAC-SHA256
//! with the API secret, Ed25519 with the client's key pair, both over the
//! signed string ([`signed_string`]), and the constant-time comparison of
//! secrets. Who may sign and when is [`super::auth`]'s.
//!
//! The parts of the signed string are separated by newlines. Written
//! together with nothing between them, one request's bytes could be cut
//! into another's: `DELETE /v1/orders/12` and `DELETE /v1/orders/1` with
//! the body `2` signed the same. A timestamp is digits, and neither a
//! method nor a request target can hold a newline (HTTP forbids it), so
//! each of the first three parts ends at its newline and the body is
//! everything after the third.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What a request signs: `timestamp + "\n" + METHOD + "\n" +
/// path_and_query + "\n" + body`.
pub fn signed_string(timestamp: &str, method: &str, path_and_query: &str, body: &[u8]) -> Vec<u8> {
    let mut signed =
        Vec::with_capacity(timestamp.len() + method.len() + path_and_query.len() + body.len() + 3);
    for part in [timestamp, method, path_and_query] {
        signed.extend_from_slice(part.as_bytes());
        signed.push(b'\n');
    }
    signed.extend_from_slice(body);
    signed
}

fn mac(secret: &str, signed: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(signed);
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
    let signed = signed_string(timestamp, method, path_and_query, body);
    hex::encode(mac(secret, &signed).finalize().into_bytes())
}

/// Whether `signature` (hex) is the HMAC of `signed` (a
/// [`signed_string`]), compared in constant time.
pub fn signature_matches(secret: &str, signed: &[u8], signature: &str) -> bool {
    match hex::decode(signature) {
        Ok(given) => mac(secret, signed).verify_slice(&given).is_ok(),
        Err(_) => false,
    }
}

/// Whether `signature` (hex or standard base64 of the 64 signature bytes)
/// is the Ed25519 signature of `signed` (a [`signed_string`]) by
/// `public_key`. Strict verification refuses the malleable and small-order
/// forms.
pub fn ed25519_matches(public_key: &[u8; 32], signed: &[u8], signature: &str) -> bool {
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
    key.verify_strict(signed, &signature).is_ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const BODY: &str =
        r#"{"symbol":"BTC-USD","side":"buy","type":"limit","price":"60000.00","qty":"0.5"}"#;

    // Expected values computed independently with Python's hmac and
    // hashlib over the documented string, e.g.
    // `hmac.new(secret, b"1700000000000\nGET\n/v1/ws\n", hashlib.sha256)`
    // (and the WebSocket one again with
    // `printf '1700000000000\nGET\n/v1/ws\n' | openssl dgst -sha256 -hmac abc`).
    #[test]
    fn signatures_match_an_independent_implementation() {
        assert_eq!(
            sign(
                SECRET,
                "1700000000000",
                "POST",
                "/v1/orders",
                BODY.as_bytes()
            ),
            "5272fac8f9434ff56c8fd8764189f268ea3cf86ef7af471d55e9acebdf6aa8c1"
        );
        assert_eq!(
            sign(
                SECRET,
                "1700000000000",
                "GET",
                "/v1/orders?status=all&symbol=BTC-USD",
                b""
            ),
            "c5e5c2d3227031574ee460e54f489e5c89d58ca7605e8a589a59a7b3d3112486"
        );
        assert_eq!(
            sign("abc", "1700000000000", "GET", "/v1/ws", b""),
            "621d3d97516bb7ec6a006dafcc4a36b28cc140d438eaffcad73de86ce469783d"
        );
        // Moving the boundary between path and body changes the signature.
        assert_eq!(
            sign(SECRET, "1700000000000", "DELETE", "/v1/orders/12", b""),
            "7a2010021c7aae519b295746e9aefa74efefe70666b8652981520dc64b51daf4"
        );
        assert_eq!(
            sign(SECRET, "1700000000000", "DELETE", "/v1/orders/1", b"2"),
            "e28c804c73136f35a5ea33f31996d0e2f015e4e37494b85eb33fc58be126c6c8"
        );
    }

    /// The worked example of docs/server.md and docs/protocol.md, its
    /// values computed with Python's hmac and hashlib.
    #[test]
    fn the_documented_example_signs_as_documented() {
        let body =
            r#"{"symbol":"BTC-USD","side":"buy","type":"limit","price":"60000","qty":"0.01"}"#;
        assert_eq!(
            signed_string("1700000000123", "POST", "/v1/orders", body.as_bytes()),
            format!("1700000000123\nPOST\n/v1/orders\n{body}").into_bytes()
        );
        for (method, path, body, expected) in [
            (
                "POST",
                "/v1/orders",
                body,
                "e009276d084eab369e262f5d48183ebaad01540757724bf8669a75fad5c05565",
            ),
            (
                "DELETE",
                "/v1/orders/12",
                "",
                "98020b7a7dab5d9e96d619f31756af9cc45e7197c3277789bb820d8ae3449500",
            ),
            (
                "GET",
                "/v1/ws",
                "",
                "bb228cdd4adf5350093e542f037f7733ee88e4b7a249c1240c5a65b02fb79b51",
            ),
        ] {
            assert_eq!(
                sign("abc", "1700000000123", method, path, body.as_bytes()),
                expected,
                "{method} {path}"
            );
        }
    }

    #[test]
    fn ed25519_signs_the_same_string() {
        use ed25519_dalek::Signer as _;
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let public = key.verifying_key().to_bytes();
        let signed = signed_string("1700000000123", "DELETE", "/v1/orders/12", b"");
        let signature = hex::encode(key.sign(&signed).to_bytes());
        assert!(ed25519_matches(&public, &signed, &signature));
        let recut = signed_string("1700000000123", "DELETE", "/v1/orders/1", b"2");
        assert!(!ed25519_matches(&public, &recut, &signature));
        // A signature of the old, separator-free string is refused.
        let old = key.sign(b"1700000000123DELETE/v1/orders/12").to_bytes();
        assert!(!ed25519_matches(&public, &signed, &hex::encode(old)));
    }

    #[test]
    fn verification_refuses_any_change() {
        let good = "5272fac8f9434ff56c8fd8764189f268ea3cf86ef7af471d55e9acebdf6aa8c1";
        let check = |ts: &str, method: &str, path: &str, body: &str, sig: &str| {
            signature_matches(
                SECRET,
                &signed_string(ts, method, path, body.as_bytes()),
                sig,
            )
        };
        let ts = "1700000000000";
        assert!(check(ts, "POST", "/v1/orders", BODY, good));
        assert!(check(ts, "POST", "/v1/orders", BODY, &good.to_uppercase()));
        assert!(!check("1700000000001", "POST", "/v1/orders", BODY, good));
        assert!(!check(ts, "PUT", "/v1/orders", BODY, good));
        assert!(!check(ts, "POST", "/v1/orders?x=1", BODY, good));
        assert!(!check(
            ts,
            "POST",
            "/v1/orders",
            &BODY.replace("0.5", "5"),
            good
        ));
        assert!(!check(ts, "POST", "/v1/orders", BODY, &good[..62]));
        assert!(!check(ts, "POST", "/v1/orders", BODY, "not hex"));
        // The same bytes cut elsewhere.
        assert!(!check(ts, "POST", "/v1/order", &format!("s{BODY}"), good));
        assert!(!signature_matches(
            "other",
            &signed_string(ts, "POST", "/v1/orders", BODY.as_bytes()),
            good
        ));
    }

    #[test]
    fn constant_time_equality() {
        assert!(ct_eq(b"token", b"token"));
        assert!(!ct_eq(b"token", b"tokeN"));
        assert!(!ct_eq(b"token", b"token2"));
        assert!(!ct_eq(b"", b"token"));
    }
}
