//! A tiny seeded PRNG (SplitMix64) so a workload is reproducible from its
//! seed on every platform, without pulling in a random-number crate whose
//! output could change between versions.

/// SplitMix64: one 64-bit state word, full period, passes BigCrush when
/// used as here (one output per step).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`). Multiply-shift instead of `%`: no
    /// division, and the bias (< n / 2^64) is far below anything measured.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_million / 1_000_000`. Integer odds keep
    /// the stream identical across platforms (no float rounding).
    pub fn chance(&mut self, per_million: u64) -> bool {
        self.below(1_000_000) < per_million
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_rng_is_reproducible_and_in_range() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(SplitMix64::new(43).next_u64(), xs[0]);
        let mut r = SplitMix64::new(7);
        let mut seen = [false; 10];
        for _ in 0..10_000 {
            let v = r.range(3, 12);
            assert!((3..=12).contains(&v));
            seen[(v - 3) as usize] = true;
        }
        assert!(
            seen.iter().all(|s| *s),
            "every value of a small range appears"
        );
    }
}
