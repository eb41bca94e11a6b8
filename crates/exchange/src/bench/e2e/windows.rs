//! When the slowest acknowledgements happened: spread over the run, or
//! bunched in short windows.
//!
//! A histogram cannot tell the two apart, and they call for different
//! work: a tail spread evenly is the order path's own (queueing, CPU per
//! order); a tail bunched in a few windows is an event (a stall, a slow
//! spell of the disk). The run is cut into [`WINDOW_US`] windows by send
//! time; the slowest 1% of orders are counted per window, and a window
//! holding more than [`SLOW_SHARE_PCT`]% of its orders among them (three
//! times their share of the run) is a slow window.

use super::record::Sample;

/// The windows' length, by send time.
pub const WINDOW_US: i64 = 100_000;

/// A window is slow when more than this percentage of its orders are
/// among the run's slowest 1%.
pub const SLOW_SHARE_PCT: u64 = 3;

/// Windows with fewer orders than this are never slow: a handful of
/// orders says nothing about a window.
const MIN_ORDERS: u64 = 100;

#[derive(Clone, Debug, PartialEq)]
pub struct SlowWindows {
    pub windows: usize,
    pub slow_windows: usize,
    /// Share of the slowest 1% of orders sent in slow windows (0 to 1).
    pub share_in_slow: f64,
    /// The p99 of the orders sent outside slow windows, in µs.
    pub p99_outside_us: u64,
}

/// `None` for fewer than 100 samples.
pub fn slow_windows(samples: &[Sample]) -> Option<SlowWindows> {
    if samples.len() < 100 {
        return None;
    }
    let window = |sample: &Sample| sample.sent_us.div_euclid(WINDOW_US);
    let mut latencies: Vec<u64> = samples.iter().map(|sample| sample.latency_us).collect();
    latencies.sort_unstable();
    let slowest = samples.len().div_ceil(100);
    // The slowest 1% by count: every order above the threshold, and an
    // equal part of what is left for each order at it, so that ties (a
    // run where every order took the same time) spread over the windows
    // as they are rather than landing in whichever sort last.
    let threshold = latencies[samples.len() - slowest];
    let above = latencies.iter().filter(|l| **l > threshold).count();
    let at = latencies.iter().filter(|l| **l == threshold).count();
    let tie_weight = (slowest - above) as f64 / at as f64;
    let mut counts: std::collections::BTreeMap<i64, (u64, f64)> = Default::default();
    for sample in samples {
        let entry = counts.entry(window(sample)).or_default();
        entry.0 += 1;
        if sample.latency_us > threshold {
            entry.1 += 1.0;
        } else if sample.latency_us == threshold {
            entry.1 += tie_weight;
        }
    }
    let is_slow = |(orders, slow): (u64, f64)| {
        orders >= MIN_ORDERS && slow * 100.0 > (orders * SLOW_SHARE_PCT) as f64
    };
    let slow_windows = counts.values().filter(|c| is_slow(**c)).count();
    let in_slow: f64 = counts.values().filter(|c| is_slow(**c)).map(|c| c.1).sum();
    let mut outside: Vec<u64> = samples
        .iter()
        .filter(|sample| counts.get(&window(sample)).is_none_or(|c| !is_slow(*c)))
        .map(|sample| sample.latency_us)
        .collect();
    outside.sort_unstable();
    let p99_outside_us = match outside.len() {
        0 => 0,
        n => outside[(n * 99 / 100).min(n - 1)],
    };
    Some(SlowWindows {
        windows: counts.len(),
        slow_windows,
        share_in_slow: in_slow / slowest as f64,
        p99_outside_us,
    })
}

impl SlowWindows {
    pub fn line(&self) -> String {
        format!(
            "slow windows    {} of {} {} ms windows hold {:.0}% of the slowest 1% of orders; \
             p99 outside them {} us",
            self.slow_windows,
            self.windows,
            WINDOW_US / 1_000,
            self.share_in_slow * 100.0,
            self.p99_outside_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(slow: &[(i64, usize, u64)]) -> Vec<Sample> {
        // Ten windows of 1,000 orders at 500 µs, then the slow ones
        // replace the first orders of their window.
        let mut samples = Vec::new();
        for w in 0..10i64 {
            for i in 0..1_000usize {
                let latency_us = slow
                    .iter()
                    .find(|(at, n, _)| *at == w && i < *n)
                    .map_or(500, |(_, _, latency)| *latency);
                samples.push(Sample {
                    sent_us: w * WINDOW_US + i as i64 * 100,
                    latency_us,
                });
            }
        }
        samples
    }

    #[test]
    fn finds_the_window_the_tail_bunches_in() {
        // The slowest 1% (100 orders): 80 in window 3 (8% of it, slow),
        // 20 in window 7 (2%, not slow).
        let figures = slow_windows(&run(&[(3, 80, 5_000), (7, 20, 3_000)])).unwrap();
        assert_eq!(
            figures,
            SlowWindows {
                windows: 10,
                slow_windows: 1,
                share_in_slow: 0.8,
                p99_outside_us: 500,
            }
        );
        assert_eq!(
            figures.line(),
            "slow windows    1 of 10 100 ms windows hold 80% of the slowest 1% of orders; \
             p99 outside them 500 us"
        );
    }

    #[test]
    fn a_tail_spread_evenly_has_no_slow_window() {
        let spread: Vec<(i64, usize, u64)> = (0..10).map(|w| (w, 10, 4_000)).collect();
        let figures = slow_windows(&run(&spread)).unwrap();
        assert_eq!((figures.slow_windows, figures.share_in_slow), (0, 0.0));
        // Nothing is left out, so the p99 outside is the run's.
        assert_eq!(figures.p99_outside_us, 4_000);
    }

    #[test]
    fn equal_latencies_do_not_make_every_window_slow() {
        let figures = slow_windows(&run(&[])).unwrap();
        assert_eq!(figures.slow_windows, 0);
    }

    #[test]
    fn warm_up_sends_fall_in_windows_before_zero_and_few_samples_say_nothing() {
        let mut samples = run(&[(0, 60, 9_000)]);
        for sample in samples.iter_mut().take(1_000) {
            sample.sent_us -= WINDOW_US;
        }
        let figures = slow_windows(&samples).unwrap();
        assert_eq!((figures.windows, figures.slow_windows), (10, 1));
        assert_eq!(slow_windows(&samples[..99]), None);
    }

    #[test]
    fn a_short_last_window_is_never_slow() {
        let mut samples = run(&[]);
        for i in 0..50i64 {
            samples.push(Sample {
                sent_us: 10 * WINDOW_US + i,
                latency_us: if i < 10 { 8_000 } else { 500 },
            });
        }
        let figures = slow_windows(&samples).unwrap();
        assert_eq!((figures.windows, figures.slow_windows), (11, 0));
    }
}
