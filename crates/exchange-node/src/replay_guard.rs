//! The replay guard of the replicated state: what makes a signed request
//! applied once, whichever gateway it was sent to and however often.
//!
//! A gateway wraps a signed write's command in `LogEntry::Guarded` with
//! the request's fingerprint (a digest of its key and the bytes it signed)
//! and `forget_after_ms`, the last millisecond at which a gateway still
//! takes its timestamp. The state remembers the fingerprint of every
//! guarded entry it admits until `forget_after_ms` has passed by the log's
//! time, and refuses an entry whose fingerprint it remembers (`replayed`)
//! or whose `forget_after_ms` has passed already (`stale_request`: the
//! guard could no longer remember it, so admitting it would let a later
//! copy through).
//!
//! Time is the entries' own (the log's), never a clock, so every replica
//! forgets the same fingerprints at the same entry. The guard keeps the
//! largest entry time it has seen, so an entry stamped earlier than one
//! before it cannot bring a forgotten fingerprint back into its window.
//!
//! The fingerprints sit in a hash set that is only probed, and in a queue
//! in arrival order, which is what expiry walks and what the snapshot
//! holds: nothing depends on the set's order. Arrival order is not
//! expiry order (requests are signed up to a window apart), so the queue
//! forgets a fingerprint only once every one ahead of it may be forgotten
//! too. That keeps some past their time, never one short of it; and since
//! an entry's `forget_after_ms` may be at most [`MAX_GUARD_AHEAD_MS`] past
//! its time (further ahead is refused as stale too), none is kept longer
//! than that after it arrived, which is what the bound
//! [`MAX_GUARDED_REQUESTS`] is sized for. A full guard refuses new
//! requests (`replay_guard_full`) rather than forget any early.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::limits::{MAX_GUARDED_REQUESTS, MAX_GUARD_AHEAD_MS};

/// What identifies a signed request: 128 bits of a digest of its key and
/// the bytes it signed (computed by the gateway).
pub type Fingerprint = [u8; 16];

/// Log time is Unix nanoseconds; the guard's times are milliseconds.
pub const NANOS_PER_MS: u64 = 1_000_000;

/// Why a guarded entry was not applied. Every replica decides alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardRefusal {
    /// The same signed request was applied within its window.
    #[error("this signed request was applied already")]
    Replayed,
    /// Its window had passed by the time the log took it.
    #[error("the request's receive window had passed when the log took it")]
    Stale,
    /// Its window ends further past the log's time than any gateway gives.
    #[error("the request's window ends too far past the log's time")]
    TooFarAhead,
    /// The guard holds [`MAX_GUARDED_REQUESTS`] fingerprints.
    #[error("too many signed requests within their windows")]
    Full,
}

impl GuardRefusal {
    /// `Applied::command` for a guarded entry refused for this reason.
    pub fn command(self) -> &'static str {
        match self {
            GuardRefusal::Replayed => "replayed",
            GuardRefusal::Stale | GuardRefusal::TooFarAhead => "stale_request",
            GuardRefusal::Full => "replay_guard_full",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ReplayGuard {
    /// The largest entry time seen (Unix milliseconds).
    now_ms: u64,
    seen: FxHashSet<Fingerprint>,
    /// Each fingerprint of `seen` with its `forget_after_ms`, in arrival
    /// order.
    arrivals: VecDeque<(u64, Fingerprint)>,
    /// Not part of the state: [`MAX_GUARDED_REQUESTS`] but in tests.
    limit: usize,
}

impl Default for ReplayGuard {
    fn default() -> Self {
        ReplayGuard::with_limit(MAX_GUARDED_REQUESTS)
    }
}

/// Equal when they would decide every future entry alike.
impl PartialEq for ReplayGuard {
    fn eq(&self, other: &Self) -> bool {
        self.now_ms == other.now_ms && self.arrivals == other.arrivals
    }
}

impl Eq for ReplayGuard {}

impl ReplayGuard {
    pub fn with_limit(limit: usize) -> Self {
        ReplayGuard {
            now_ms: 0,
            seen: FxHashSet::default(),
            arrivals: VecDeque::new(),
            limit,
        }
    }

    /// No guarded entry was ever applied: the snapshot leaves the guard
    /// out, so the state hash of a log without them is what it was before.
    pub fn is_empty(&self) -> bool {
        self.now_ms == 0 && self.arrivals.is_empty()
    }

    /// Fingerprints remembered (some may be past their time: see the
    /// module's documentation).
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn contains(&self, fingerprint: &Fingerprint) -> bool {
        self.seen.contains(fingerprint)
    }

    /// Admits the request `fingerprint` in an entry of time `ts_ms`: it is
    /// remembered until `forget_after_ms` has passed, and the command is
    /// to be applied.
    pub fn admit(
        &mut self,
        fingerprint: Fingerprint,
        forget_after_ms: u64,
        ts_ms: u64,
    ) -> Result<(), GuardRefusal> {
        self.now_ms = self.now_ms.max(ts_ms);
        self.expire();
        if forget_after_ms < self.now_ms {
            return Err(GuardRefusal::Stale);
        }
        if forget_after_ms - self.now_ms > MAX_GUARD_AHEAD_MS {
            return Err(GuardRefusal::TooFarAhead);
        }
        if self.seen.len() >= self.limit {
            // The rare path probes twice: a copy is still a copy when full.
            return Err(if self.seen.contains(&fingerprint) {
                GuardRefusal::Replayed
            } else {
                GuardRefusal::Full
            });
        }
        if !self.seen.insert(fingerprint) {
            return Err(GuardRefusal::Replayed);
        }
        self.arrivals.push_back((forget_after_ms, fingerprint));
        Ok(())
    }

    /// Forgets, from the front of the arrival order, every fingerprint
    /// whose time has passed.
    fn expire(&mut self) {
        while let Some(&(forget_after_ms, fingerprint)) = self.arrivals.front() {
            if forget_after_ms >= self.now_ms {
                break;
            }
            self.arrivals.pop_front();
            self.seen.remove(&fingerprint);
        }
    }
}

/// The guard as the snapshot holds it: the time, and each remembered
/// fingerprint with its forget time in arrival order (the set is rebuilt
/// from them).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct GuardWire<A> {
    now_ms: u64,
    remembered: A,
}

#[derive(Serialize, Deserialize)]
struct Remembered(u64, #[serde(with = "hex_fingerprint")] Fingerprint);

struct Arrivals<'a>(&'a VecDeque<(u64, Fingerprint)>);

impl Serialize for Arrivals<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|&(at, f)| Remembered(at, f)))
    }
}

impl Serialize for ReplayGuard {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        GuardWire {
            now_ms: self.now_ms,
            remembered: Arrivals(&self.arrivals),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ReplayGuard {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = GuardWire::<Vec<Remembered>>::deserialize(deserializer)?;
        let mut guard = ReplayGuard {
            now_ms: wire.now_ms,
            ..ReplayGuard::default()
        };
        guard.seen.reserve(wire.remembered.len());
        guard.arrivals.reserve(wire.remembered.len());
        for Remembered(forget_after_ms, fingerprint) in wire.remembered {
            if !guard.seen.insert(fingerprint) {
                return Err(D::Error::custom("a fingerprint is remembered twice"));
            }
            guard.arrivals.push_back((forget_after_ms, fingerprint));
        }
        Ok(guard)
    }
}

/// A fingerprint as 32 lowercase hex digits.
mod hex_fingerprint {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Fingerprint;

    pub fn serialize<S: Serializer>(f: &Fingerprint, serializer: S) -> Result<S::Ok, S::Error> {
        let mut text = [0u8; 32];
        hex::encode_to_slice(f, &mut text).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Fingerprint, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let mut f = [0u8; 16];
        hex::decode_to_slice(text.as_bytes(), &mut f)
            .map_err(|_| D::Error::custom("a fingerprint is 32 hex digits"))?;
        Ok(f)
    }
}
