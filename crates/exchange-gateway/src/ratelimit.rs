//! Per-API-key token buckets: `burst` requests at once, refilled at
//! `per_sec`. Shared by REST and WebSocket order entry, so a key gets one
//! allowance however it connects.
//!
//! Buckets are keyed by verified API keys only (the check runs after the
//! signature), so the map grows with the number of accounts, not with what
//! strangers send.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Bucket {
    tokens: f64,
    last: Instant,
}

pub struct RateLimiter {
    per_sec: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl RateLimiter {
    /// `per_sec == 0` turns limiting off.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        RateLimiter {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
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
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => buckets.entry(key.to_owned()).or_insert(Bucket {
                tokens: self.burst,
                last: now,
            }),
        };
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_sec).min(self.burst);
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
    fn zero_rate_disables_limiting() {
        let limiter = RateLimiter::new(0, 0);
        let now = Instant::now();
        assert!((0..10_000).all(|_| limiter.check("k", now).is_ok()));
    }
}
