//! The throughput targets `bench e2e` judges a run by (BENCHMARKS.md,
//! *Targets*), chosen by the server measured and the load's shape:
//!
//! - a single node under a closed loop: at least 150,000 acknowledged
//!   orders a second;
//! - a single node paced at 100,000 orders a second or more, keeping its
//!   schedule and acknowledging the pace: p99 at most 2 ms;
//! - a cluster, paced or not: at least 100,000 orders a second with p99 at
//!   most 5 ms, since every answer waits for a second replica's sync.
//!
//! Each also needs the reporting store, where there is one, to keep up
//! (`report.rs`).

/// The share of a paced run's pace it must acknowledge: orders a gateway
/// refused (429, 503) were not carried.
const PACE_CARRIED: f64 = 0.99;
/// Orders a second a single node acknowledges under a closed loop.
pub const SINGLE_NODE_PER_SEC: u64 = 150_000;
/// The pace, in orders a second, at which a single node's p99 is judged,
/// and the rate a cluster sustains.
pub const PACED_PER_SEC: u64 = 100_000;
pub const SINGLE_NODE_P99_NS: u64 = 2_000_000;
pub const CLUSTER_P99_NS: u64 = 5_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Orders a second: acknowledged by a closed loop, or asked of a paced
    /// run that kept its schedule.
    pub per_sec: u64,
    pub paced: bool,
    /// The bound on the p99 acknowledgement latency, if the target has one.
    pub p99_ns: Option<u64>,
}

impl Target {
    /// The target of a run against `voters` replicas, paced at `rate`
    /// orders a second (0: a closed loop).
    pub fn of(voters: usize, rate: u64) -> Target {
        let paced = rate > 0;
        match (voters > 1, paced) {
            (true, _) => Target {
                per_sec: PACED_PER_SEC,
                paced,
                p99_ns: Some(CLUSTER_P99_NS),
            },
            (false, false) => Target {
                per_sec: SINGLE_NODE_PER_SEC,
                paced,
                p99_ns: None,
            },
            (false, true) => Target {
                per_sec: PACED_PER_SEC,
                paced,
                p99_ns: Some(SINGLE_NODE_P99_NS),
            },
        }
    }

    /// Whether a run's rate and latency meet the target. `rate` is the
    /// pace asked, `acked_per_sec` what was acknowledged, `behind` whether
    /// a paced run fell behind its schedule.
    pub fn met_by(&self, rate: u64, acked_per_sec: f64, behind: bool, p99_ns: u64) -> bool {
        let fast_enough = if self.paced {
            rate >= self.per_sec && !behind && acked_per_sec >= PACE_CARRIED * rate as f64
        } else {
            acked_per_sec >= self.per_sec as f64
        };
        fast_enough && self.p99_ns.is_none_or(|bound| p99_ns <= bound)
    }

    /// The target in words, for the verdict line.
    pub fn describe(&self, voters: usize) -> String {
        let rate = thousands(self.per_sec);
        let mut parts = vec![if self.paced {
            format!("paced at >= {rate}/s on schedule")
        } else {
            format!(">= {rate}/s")
        }];
        if let Some(bound) = self.p99_ns {
            parts.push(format!("p99 <= {} ms", bound / 1_000_000));
        }
        if voters > 1 {
            parts.push(format!("{voters} voters"));
        }
        parts.push("store keeping up".to_owned());
        parts.join(", ")
    }
}

/// `150000` as `150,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_of_run_has_its_target() {
        let closed = Target::of(1, 0);
        assert_eq!((closed.per_sec, closed.p99_ns), (150_000, None));
        let paced = Target::of(1, 100_000);
        assert_eq!((paced.per_sec, paced.p99_ns), (100_000, Some(2_000_000)));
        for rate in [0, 120_000] {
            let cluster = Target::of(3, rate);
            assert_eq!(
                (cluster.per_sec, cluster.p99_ns),
                (100_000, Some(5_000_000))
            );
        }
    }

    #[test]
    fn a_closed_loop_is_judged_on_its_rate_a_paced_run_on_its_schedule() {
        let closed = Target::of(1, 0);
        assert!(closed.met_by(0, 150_000.0, false, 9_000_000));
        assert!(!closed.met_by(0, 149_999.0, false, 1_000));
        let paced = Target::of(1, 100_000);
        assert!(paced.met_by(100_000, 99_500.0, false, 2_000_000));
        assert!(!paced.met_by(100_000, 99_500.0, false, 2_000_001));
        assert!(!paced.met_by(100_000, 99_500.0, true, 1_000_000));
        assert!(!paced.met_by(90_000, 90_000.0, false, 1_000_000));
        // On schedule, but a tenth refused by the gateway.
        assert!(!paced.met_by(100_000, 90_000.0, false, 1_000_000));
        let cluster = Target::of(3, 0);
        assert!(cluster.met_by(0, 100_000.0, false, 5_000_000));
        assert!(!cluster.met_by(0, 100_000.0, false, 5_100_000));
    }

    #[test]
    fn the_target_reads_as_the_venue_states_it() {
        assert_eq!(
            Target::of(1, 0).describe(1),
            ">= 150,000/s, store keeping up"
        );
        assert_eq!(
            Target::of(1, 100_000).describe(1),
            "paced at >= 100,000/s on schedule, p99 <= 2 ms, store keeping up"
        );
        assert_eq!(
            Target::of(3, 0).describe(3),
            ">= 100,000/s, p99 <= 5 ms, 3 voters, store keeping up"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
