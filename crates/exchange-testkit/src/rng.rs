//! A small deterministic generator for load and fault schedules: a seed
//! gives the same run again, with no dependency.

/// A linear congruential generator (Knuth's MMIX constants).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n` (`0` when `n` is `0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}
