//! Per-API-key token buckets: `burst` requests at once, refilled at
//! `per_sec`. Shared by REST and WebSocket, so a key gets one allowance
//! however it connects.
//!
//! A key's allowance is looked at ([`RateLimiter::allows`]) once the key
//! is found, before its body is read and its signature checked, but spent
//! ([`RateLimiter::check`]) only by a request whose signature verified:
//! key ids travel in clear, so whatever is spent before that could be
//! spent by anyone on anyone's key ([`super::auth`]). The number of
//! buckets is bounded all the same ([`MAX_RATE_LIMITED_KEYS`]). A bucket refilled to
//! the full burst is the same as no bucket, so when the map is full those
//! are dropped; while none can be, a key without a bucket is refused
//! (keys that have one keep their allowance). The map is swept only when
//! it is full, and at most once per [`SWEEP_EVERY`], so a flood of new
//! keys costs one pass over it per period, not one per request.

use exchange_node::limits::MAX_RATE_LIMITED_KEYS;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sweeps of a full map at most this often.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

struct Bucket {
    tokens: f64,
    last: Instant,
}

#[derive(Default)]
struct Buckets {
    by_key: HashMap<String, Bucket>,
    /// No sweep before this (a sweep that left the map full sets it).
    next_sweep: Option<Instant>,
}

pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    max_keys: usize,
    buckets: Mutex<Buckets>,
}

impl RateLimiter {
    /// `per_sec == 0` turns limiting off.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        RateLimiter::with_max_keys(per_sec, burst, MAX_RATE_LIMITED_KEYS)
    }

    pub fn with_max_keys(per_sec: u32, burst: u32, max_keys: usize) -> Self {
        RateLimiter {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst.max(1)),
            max_keys: max_keys.max(1),
            buckets: Mutex::default(),
        }
    }

    /// Takes one token for `key`, or says how long until one is available.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        // A poisoned lock only means another request panicked mid-update;
        // the buckets are still usable.
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.by_key.contains_key(key) {
            if buckets.by_key.len() >= self.max_keys {
                self.sweep(&mut buckets, now)?;
            }
            buckets.by_key.insert(
                key.to_owned(),
                Bucket {
                    tokens: self.burst,
                    last: now,
                },
            );
        }
        let Some(bucket) = buckets.by_key.get_mut(key) else {
            return Ok(());
        };
        bucket.tokens = self.refilled(bucket, now);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - bucket.tokens) / self.per_sec,
            ))
        }
    }

    /// Whether `key` has a token now, without taking it: for budgets
    /// spent only by failures ([`RateLimiter::spend`]), checked before the
    /// work that could fail.
    pub fn allows(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if self.per_sec <= 0.0 {
            return Ok(());
        }
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        match buckets.by_key.get(key) {
            Some(bucket) => {
                let tokens = self.refilled(bucket, now);
                if tokens >= 1.0 {
                    Ok(())
                } else {
                    Err(Duration::from_secs_f64((1.0 - tokens) / self.per_sec))
                }
            }
            None => Ok(()),
        }
    }

    /// Takes a token from `key` if it has one. A key that cannot get a
    /// bucket (the map full of spent ones) goes uncounted rather than
    /// refused: the budget only ever slows down a key that spent it.
    pub fn spend(&self, key: &str, now: Instant) {
        if self.per_sec <= 0.0 {
            return;
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !buckets.by_key.contains_key(key) {
            if buckets.by_key.len() >= self.max_keys && self.sweep(&mut buckets, now).is_err() {
                return;
            }
            buckets.by_key.insert(
                key.to_owned(),
                Bucket {
                    tokens: self.burst,
                    last: now,
                },
            );
        }
        if let Some(bucket) = buckets.by_key.get_mut(key) {
            bucket.tokens = (self.refilled(bucket, now) - 1.0).max(0.0);
            bucket.last = now;
        }
    }

    /// Keys with a bucket now.
    pub fn keys(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .by_key
            .len()
    }

    fn refilled(&self, bucket: &Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        (bucket.tokens + elapsed * self.per_sec).min(self.burst)
    }

    /// Drops the buckets that have refilled; refuses (with the time to
    /// the next sweep) when that leaves no room.
    fn sweep(&self, buckets: &mut Buckets, now: Instant) -> Result<(), Duration> {
        if let Some(next) = buckets.next_sweep.filter(|next| now < *next) {
            return Err(next - now);
        }
        buckets
            .by_key
            .retain(|_, bucket| self.refilled(bucket, now) < self.burst);
        buckets.next_sweep = Some(now + SWEEP_EVERY);
        if buckets.by_key.len() < self.max_keys {
            Ok(())
        } else {
            Err(SWEEP_EVERY)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill_at_the_rate() {
        let limiter = RateLimiter::new(10, 3);
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.check("k", start), Ok(()));
        }
        let wait = limiter.check("k", start).expect_err("the burst is spent");
        assert!(
            wait > Duration::from_millis(90) && wait <= Duration::from_millis(100),
            "{wait:?}"
        );
        // Another key has its own bucket.
        assert_eq!(limiter.check("other", start), Ok(()));
        // A tenth of a second later one token has come back, and only one.
        let later = start + Duration::from_millis(100);
        assert_eq!(limiter.check("k", later), Ok(()));
        assert!(limiter.check("k", later).is_err());
        // The bucket never holds more than the burst.
        let much_later = start + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(limiter.check("k", much_later), Ok(()));
        }
        assert!(limiter.check("k", much_later).is_err());
    }

    #[test]
    fn the_number_of_keys_is_bounded() {
        let limiter = RateLimiter::with_max_keys(10, 2, 3);
        let start = Instant::now();
        for key in ["a", "b", "c"] {
            assert_eq!(limiter.check(key, start), Ok(()));
        }
        // Full, and every bucket still spent in part: a new key is refused
        // until the next sweep, a known one keeps its allowance.
        assert_eq!(limiter.check("d", start), Err(SWEEP_EVERY));
        assert_eq!(limiter.check("a", start), Ok(()));
        let soon = start + Duration::from_millis(500);
        assert_eq!(
            limiter.check("e", soon),
            Err(SWEEP_EVERY - Duration::from_millis(500))
        );
        assert_eq!(limiter.keys(), 3);
        // A second later every bucket has refilled: the sweep drops them
        // all and new keys get buckets of their own.
        let later = start + SWEEP_EVERY;
        assert_eq!(limiter.check("d", later), Ok(()));
        assert_eq!(limiter.keys(), 1);
        for key in ["e", "f"] {
            assert_eq!(limiter.check(key, later), Ok(()));
        }
        // A key that lost its bucket to a sweep starts with a full one.
        assert_eq!(limiter.check("a", later), Err(SWEEP_EVERY));
        let after = later + SWEEP_EVERY;
        for _ in 0..2 {
            assert_eq!(limiter.check("a", after), Ok(()));
        }
        assert!(limiter.check("a", after).is_err());
        assert!(limiter.keys() <= 3);
    }

    #[test]
    fn a_failure_budget_is_checked_without_spending_and_spent_on_failure() {
        let limiter = RateLimiter::with_max_keys(10, 2, 2);
        let start = Instant::now();
        // Checking never spends.
        assert!((0..100).all(|_| limiter.allows("a", start).is_ok()));
        assert_eq!(limiter.keys(), 0);
        limiter.spend("a", start);
        assert_eq!(limiter.allows("a", start), Ok(()));
        limiter.spend("a", start);
        let wait = limiter
            .allows("a", start)
            .expect_err("two failures spent it");
        assert!(wait <= Duration::from_millis(100), "{wait:?}");
        // Other keys are not affected, and refill at the rate.
        assert_eq!(limiter.allows("b", start), Ok(()));
        assert_eq!(
            limiter.allows("a", start + Duration::from_millis(100)),
            Ok(())
        );
        // A full map of spent buckets leaves a new key uncounted, never refused.
        limiter.spend("b", start);
        limiter.spend("c", start);
        assert_eq!(limiter.keys(), 2);
        assert_eq!(limiter.allows("c", start), Ok(()));
    }

    #[test]
    fn zero_rate_disables_limiting() {
        let limiter = RateLimiter::new(0, 0);
        let now = Instant::now();
        assert!((0..10_000).all(|_| limiter.check("k", now).is_ok()));
    }
}
