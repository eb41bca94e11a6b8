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
//!
//! The messages the server resends in answer to a ResendRequest are
//! charged to the same bucket (`take_resend`): a ResendRequest is cheap to
//! send and asks for up to the whole store, so without a charge it would
//! let a session make the gateway send far more than the session's rate.
//!
//! Times are nanoseconds, as everywhere in the session, so that the
//! session stays a pure function of its inputs.

const NANOS_PER_SEC: f64 = 1e9;

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
    last: Option<u64>,
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

    /// Adds the tokens earned since the last look, at `now` (ns).
    fn refill(&mut self, now: u64) {
        let elapsed = self.last.map_or(0, |last| now.saturating_sub(last));
        // A clock that steps back earns nothing, and restarts from `now`.
        self.last = Some(now);
        #[allow(clippy::cast_precision_loss)] // nanoseconds: far below 2^53 apart
        let refill = elapsed as f64 / NANOS_PER_SEC * self.per_sec;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.overflow = (self.overflow - refill).max(0.0);
    }

    /// Takes one message's token at `now` (ns).
    pub fn take(&mut self, now: u64) -> Verdict {
        if self.per_sec <= 0.0 {
            return Verdict::Pass;
        }
        self.refill(now);
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

    /// Charges a ResendRequest covering `messages` sequence numbers at
    /// `now` (ns), if the bucket can take it. A range larger than the
    /// burst is served from a full bucket, and its excess becomes a debt
    /// the rate repays before anything else passes: recovery after a long
    /// disconnection stays possible in one request, while the resends a
    /// session can cause never outrun its rate. Refused, it costs nothing.
    pub fn take_resend(&mut self, now: u64, messages: u64) -> bool {
        if self.per_sec <= 0.0 {
            return true;
        }
        self.refill(now);
        #[allow(clippy::cast_precision_loss)] // at most the store's range
        let cost = messages as f64;
        if self.tokens < cost.min(self.burst) {
            return false;
        }
        self.tokens -= cost;
        true
    }

    /// The Text of a refused ResendRequest for `messages` messages.
    pub fn resend_refusal(&self, messages: u64) -> String {
        format!(
            "throttled: resending {messages} messages would exceed the session's rate \
             ({} messages per second, burst {}); ask again later",
            self.per_sec, self.burst
        )
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

    const START: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    fn run(throttle: &mut Throttle, start: u64, per_sec: u32, secs: u32) -> [usize; 3] {
        let mut seen = [0; 3];
        let messages = per_sec * secs;
        for i in 0..messages {
            let at = start + u64::from(i) * 1_000_000_000 / u64::from(per_sec);
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
        let now = START;
        let verdicts: Vec<Verdict> = (0..7).map(|_| throttle.take(now)).collect();
        assert_eq!(&verdicts[..5], &[Verdict::Pass; 5]);
        assert_eq!(&verdicts[5..], &[Verdict::Refuse; 2]);
        // A tenth of a second later, one more token.
        let later = now + 100 * MS;
        assert_eq!(throttle.take(later), Verdict::Pass);
        assert_eq!(throttle.take(later), Verdict::Refuse);
    }

    #[test]
    fn moderate_overuse_is_refused_but_never_logged_out() {
        let mut throttle = Throttle::new(100, 100);
        // Half as fast again as the limit, for a minute.
        let [passed, refused, logged_out] = run(&mut throttle, START, 150, 60);
        assert_eq!(logged_out, 0);
        assert!(refused > 0);
        assert!(passed >= 100 * 60, "{passed}");
    }

    #[test]
    fn a_flood_far_past_the_limit_is_logged_out() {
        let mut throttle = Throttle::new(100, 100);
        let [_, _, logged_out] = run(&mut throttle, START, 1_000, 2);
        assert!(logged_out > 0);
    }

    #[test]
    fn zero_turns_it_off() {
        let mut throttle = Throttle::new(0, 1);
        let now = START;
        assert!((0..10_000).all(|_| throttle.take(now) == Verdict::Pass));
    }

    #[test]
    fn resends_are_charged_to_the_bucket() {
        let mut throttle = Throttle::new(10, 20);
        // A full bucket serves even a range larger than the burst...
        assert!(throttle.take_resend(START, 50));
        // ...and the excess is owed: nothing passes until it is repaid.
        assert!(!throttle.take_resend(START, 1));
        assert_eq!(throttle.take(START + 3_000 * MS), Verdict::Refuse);
        assert!(!throttle.take_resend(START + 4_000 * MS, 20));
        assert!(throttle.take_resend(START + 4_000 * MS, 5));
        // A refused request costs nothing.
        let mut throttle = Throttle::new(10, 20);
        assert!(throttle.take_resend(START, 15));
        assert!(!throttle.take_resend(START, 10));
        assert!(throttle.take_resend(START, 5));
        assert!(Throttle::new(0, 1).take_resend(START, 100_000));
    }
}
