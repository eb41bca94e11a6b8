//! A small seeded generator (SplitMix64) for the demo's choices. The demo
//! is outside the deterministic core, so it may be random; it is seeded
//! from the wall clock so two demo runs do not trade identically, and each
//! task gets its own stream so none needs a lock.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    pub fn from_clock() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Rng::new(nanos ^ u64::from(std::process::id()).rotate_left(32))
    }

    /// An independent stream for another task.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (the bias of a modulo is irrelevant here).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        let span = high - low;
        match span.checked_add(1) {
            Some(n) => low + self.next_u64() % n,
            None => self.next_u64(),
        }
    }

    /// Uniform in `low..=high` for signed bounds.
    pub fn between_signed(&mut self, low: i64, high: i64) -> i64 {
        if high <= low {
            return low;
        }
        let span = high.abs_diff(low);
        low.wrapping_add(self.between(0, span) as i64)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.between(0, 99) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_rng_is_seeded_and_stays_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut seen = [false; 5];
        for _ in 0..1_000 {
            let x = a.between(10, 14);
            assert!((10..=14).contains(&x));
            seen[(x - 10) as usize] = true;
            let y = a.between_signed(-3, 3);
            assert!((-3..=3).contains(&y));
        }
        assert!(
            seen.iter().all(|&s| s),
            "some value never came up: {seen:?}"
        );
        assert_eq!(a.between(5, 5), 5);
        assert_eq!(a.between(9, 2), 9);
    }
}
