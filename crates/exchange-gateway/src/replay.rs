//! The replay guard: every signed request this gateway accepted, remembered
//! until its timestamp falls out of the receive window, so the same signed
//! request is accepted once. Past the window the timestamp check refuses it,
//! so nothing older needs remembering.
//!
//! A request is remembered by a fingerprint of its key and the exact bytes
//! its signature covers ([`super::signature::signed_string`]), not by the
//! signature's text: the same request with its hex signature in upper
//! case, or any other encoding of a valid signature, is the same request.
//! Nor by the request's parts: two requests whose parts differ but whose
//! signed bytes are the same carry the same signature, and must count as
//! one request, not two. Only requests whose
//! signature verified are remembered, so nobody without the secret can fill
//! the guard or make a client's next request look like a replay.
//!
//! The guard starts empty, so it refuses anything signed before it existed
//! (before this process started): a request accepted by an earlier run of
//! the node cannot be replayed to the restarted one.
//!
//! This guard is each gateway's own, a fast first check. What makes a
//! signed write accepted once across gateways is the replicated state's
//! guard ([`exchange_node::replay_guard`]): every signed write's command
//! goes to the log wrapped with its fingerprint and forget time
//! ([`RequestGuard`], [`submit`]), and a copy that reached the log through
//! another gateway is answered as a replay here would be.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use exchange_node::replay_guard::GuardRefusal;
use exchange_node::sequencer::Handle;
use exchange_node::{Applied, LogEntry};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// Why a request was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Seen before within the window.
    Replayed,
    /// Signed before the guard started remembering.
    BeforeStart,
    /// Remembering it would exceed the bound.
    Full,
}

#[derive(Default)]
struct Seen {
    fingerprints: HashSet<u128>,
    /// Arrival order, each with the time (ms) after which it may be
    /// forgotten. Arrival order is not expiry order, but an entry expires at
    /// most a window after it arrived, so one kept behind a later-expiring
    /// one costs memory for at most that long, never correctness.
    expiries: VecDeque<(u64, u128)>,
}

pub struct ReplayGuard {
    started_ms: u64,
    capacity: usize,
    seen: Mutex<Seen>,
}

impl ReplayGuard {
    pub fn new(started_ms: u64, capacity: usize) -> Self {
        ReplayGuard {
            started_ms,
            capacity: capacity.max(1),
            seen: Mutex::default(),
        }
    }

    /// Admits a request timestamped `timestamp_ms` once: remembers it until
    /// `forget_after_ms` (the last moment its timestamp passes the window
    /// check).
    pub fn admit(
        &self,
        fingerprint: u128,
        timestamp_ms: u64,
        forget_after_ms: u64,
        now_ms: u64,
    ) -> Result<(), Refusal> {
        if timestamp_ms < self.started_ms {
            return Err(Refusal::BeforeStart);
        }
        // A poisoned lock only means another request panicked mid-update;
        // the set is still usable.
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(&(expiry, old)) = seen.expiries.front() {
            if expiry >= now_ms {
                break;
            }
            seen.expiries.pop_front();
            seen.fingerprints.remove(&old);
        }
        if seen.fingerprints.contains(&fingerprint) {
            return Err(Refusal::Replayed);
        }
        if seen.fingerprints.len() >= self.capacity {
            return Err(Refusal::Full);
        }
        seen.fingerprints.insert(fingerprint);
        seen.expiries.push_back((forget_after_ms, fingerprint));
        Ok(())
    }

    /// Requests remembered now.
    pub fn len(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fingerprints
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A signed write's identity for the replicated guard: its fingerprint and
/// the last millisecond at which its timestamp passes the window check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestGuard {
    pub fingerprint: u128,
    pub forget_after_ms: u64,
}

impl RequestGuard {
    /// `entry`, to be applied only if the request was not applied before.
    pub fn wrap(self, entry: LogEntry) -> LogEntry {
        LogEntry::Guarded {
            fingerprint: self.fingerprint.to_le_bytes(),
            forget_after_ms: self.forget_after_ms,
            entry: Box::new(entry),
        }
    }
}

/// Sequences `entry`, wrapped in the request's guard when it has one (a
/// signed write), and answers the replicated guard's refusals as the
/// local guard answers its own.
pub async fn submit(
    handle: &Handle,
    guard: Option<RequestGuard>,
    entry: LogEntry,
) -> Result<Arc<Applied>, ApiError> {
    let entry = match guard {
        Some(guard) => guard.wrap(entry),
        None => entry,
    };
    let applied = handle.submit(entry).await?;
    match applied.guard_refusal {
        None => Ok(applied),
        Some(GuardRefusal::Replayed) => Err(replayed()),
        Some(GuardRefusal::Stale | GuardRefusal::TooFarAhead) => Err(ApiError::unauthorized(
            "stale_timestamp",
            "the receive window had passed when the request reached the exchange's log; \
             sign it again",
        )),
        Some(GuardRefusal::Full) => Err(overloaded()),
    }
}

pub fn replayed() -> ApiError {
    ApiError::unauthorized(
        "replayed_request",
        "this signed request was already accepted; sign every request afresh",
    )
}

pub fn overloaded() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "too many signed requests in the receive window; retry shortly",
    )
    .with_retry_after(1)
}

/// What identifies a signed request: 128 bits of SHA-256 over its key
/// (behind its length, so that key and signed bytes cannot run together)
/// and the bytes it signed.
pub fn fingerprint(key: &str, signed: &[u8]) -> u128 {
    let mut hash = Sha256::new();
    hash.update((key.len() as u64).to_le_bytes());
    hash.update(key.as_bytes());
    hash.update(signed);
    let digest = hash.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::signed_string;

    fn request(key: &str, timestamp: &str, method: &str, path: &str, body: &[u8]) -> u128 {
        fingerprint(key, &signed_string(timestamp, method, path, body))
    }

    #[test]
    fn a_request_is_admitted_once_within_its_window() {
        let guard = ReplayGuard::new(1_000, 10);
        let a = request("k", "1500", "POST", "/v1/orders", b"{}");
        assert_eq!(guard.admit(a, 1_500, 6_500, 1_600), Ok(()));
        assert_eq!(guard.admit(a, 1_500, 6_500, 1_601), Err(Refusal::Replayed));
        assert_eq!(guard.admit(a, 1_500, 6_500, 6_500), Err(Refusal::Replayed));
        // Another request of the same key and time is another request.
        let b = request("k", "1500", "POST", "/v1/orders", b"{ }");
        assert_eq!(guard.admit(b, 1_500, 6_500, 1_602), Ok(()));
        // Once past the window it is forgotten (the timestamp check refuses
        // it by then).
        assert_eq!(guard.admit(b, 7_000, 12_000, 7_000), Ok(()));
        assert_eq!(guard.len(), 1);
    }

    #[test]
    fn nothing_signed_before_the_guard_started_is_admitted() {
        let guard = ReplayGuard::new(1_000, 10);
        let a = request("k", "999", "GET", "/v1/ws", b"");
        assert_eq!(guard.admit(a, 999, 5_999, 1_001), Err(Refusal::BeforeStart));
        assert!(guard.is_empty());
    }

    #[test]
    fn a_full_guard_refuses_rather_than_forgets() {
        let guard = ReplayGuard::new(0, 2);
        for (i, body) in [b"1", b"2"].iter().enumerate() {
            let f = request("k", "10", "POST", "/v1/orders", *body);
            assert_eq!(guard.admit(f, 10, 100, 10 + i as u64), Ok(()));
        }
        let third = request("k", "10", "POST", "/v1/orders", b"3");
        assert_eq!(guard.admit(third, 10, 100, 20), Err(Refusal::Full));
        assert_eq!(guard.admit(third, 10, 100, 101), Ok(()));
    }

    #[test]
    fn fingerprints_separate_the_parts() {
        let base = request("k", "1", "GET", "/a", b"");
        assert_ne!(base, request("k1", "", "GET", "/a", b""));
        assert_ne!(base, request("k", "1", "GET", "/", b"a"));
        assert_ne!(base, request("k", "1", "POST", "/a", b""));
        assert_eq!(base, request("k", "1", "GET", "/a", b""));
        // The key cannot borrow from the signed bytes either.
        assert_ne!(fingerprint("k", b"1\nGET"), fingerprint("k1", b"\nGET"));
    }

    /// What was signed is what is remembered: the same bytes are the same
    /// request however they are cut into parts.
    #[test]
    fn fingerprints_are_of_the_signed_bytes() {
        let signed = signed_string("1", "DELETE", "/v1/orders/12", b"");
        assert_eq!(
            fingerprint("k", &signed),
            request("k", "1", "DELETE", "/v1/orders/12", b"")
        );
        assert_ne!(
            fingerprint("k", &signed),
            request("k", "1", "DELETE", "/v1/orders/1", b"2")
        );
    }
}
