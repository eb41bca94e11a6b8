//! A session's application message rate, as REST and WebSocket limit an
//! API key's: a token bucket of `burst` messages refilled at `per_sec`.
//! A message without a token is refused, not queued. The refusals fill a
//! second bucket, drained at the same rate: a session that goes on sending
//! far faster than the limit (about twice it, long enough to be refused
//! `burst` more messages than the rate would have let through) is logged
//! out, while one that is over the limit now and then only sees refusals.
//!
//! The state belongs to the session, not to one connection, so logging on
//! again does not refill it.

use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Within the limit: handle the message.
    Pass,
    /// Over the limit: refuse the message.
    Refuse,
    /// So far over it for so long: refuse the message and log out.
    LogOut,
}

#[derive(Clone, Debug)]
pub struct Throttle {
    per_sec: f64,
    burst: f64,
    tokens: f64,
    /// Refusals not yet drained.
    overflow: f64,
    last: Option<Instant>,
}

impl Throttle {
    /// `per_sec == 0` turns limiting off.
    pub fn new(per_sec: u32, burst: u32) -> Throttle {
        let burst = f64::from(burst.max(1));
        Throttle {
            per_sec: f64::from(per_sec),
            burst,
            tokens: burst,
            overflow: 0.0,
            last: None,
        }
    }

    /// Takes one message's token at `now`.
    pub fn take(&mut self, now: Instant) -> Verdict {
        if self.per_sec <= 0.0 {
            return Verdict::Pass;
        }
        let elapsed = self.last.map_or(0.0, |last| {
            now.saturating_duration_since(last).as_secs_f64()
        });
        self.last = Some(now);
        let refill = elapsed * self.per_sec;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.overflow = (self.overflow - refill).max(0.0);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Verdict::Pass;
        }
        self.overflow += 1.0;
        if self.overflow > self.burst {
            Verdict::LogOut
        } else {
            Verdict::Refuse
        }
    }

    /// The Text of a refusal.
    pub fn refusal(&self) -> String {
        format!(
            "throttled: more than {} messages per second (burst {}); message not processed",
            self.per_sec, self.burst
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(throttle: &mut Throttle, start: Instant, per_sec: u32, secs: u32) -> [usize; 3] {
        let mut seen = [0; 3];
        let messages = per_sec * secs;
        for i in 0..messages {
            let at = start + Duration::from_secs_f64(f64::from(i) / f64::from(per_sec));
            let slot = match throttle.take(at) {
                Verdict::Pass => 0,
                Verdict::Refuse => 1,
                Verdict::LogOut => 2,
            };
            seen[slot] += 1;
        }
        seen
    }

    #[test]
    fn a_burst_passes_then_the_rate() {
        let mut throttle = Throttle::new(10, 5);
        let now = Instant::now();
        let verdicts: Vec<Verdict> = (0..7).map(|_| throttle.take(now)).collect();
        assert_eq!(&verdicts[..5], &[Verdict::Pass; 5]);
        assert_eq!(&verdicts[5..], &[Verdict::Refuse; 2]);
        // A tenth of a second later, one more token.
        let later = now + Duration::from_millis(100);
        assert_eq!(throttle.take(later), Verdict::Pass);
        assert_eq!(throttle.take(later), Verdict::Refuse);
    }

    #[test]
    fn moderate_overuse_is_refused_but_never_logged_out() {
        let mut throttle = Throttle::new(100, 100);
        // Half as fast again as the limit, for a minute.
        let [passed, refused, logged_out] = run(&mut throttle, Instant::now(), 150, 60);
        assert_eq!(logged_out, 0);
        assert!(refused > 0);
        assert!(passed >= 100 * 60, "{passed}");
    }

    #[test]
    fn a_flood_far_past_the_limit_is_logged_out() {
        let mut throttle = Throttle::new(100, 100);
        let [_, _, logged_out] = run(&mut throttle, Instant::now(), 1_000, 2);
        assert!(logged_out > 0);
    }

    #[test]
    fn zero_turns_it_off() {
        let mut throttle = Throttle::new(0, 1);
        let now = Instant::now();
        assert!((0..10_000).all(|_| throttle.take(now) == Verdict::Pass));
    }
}
