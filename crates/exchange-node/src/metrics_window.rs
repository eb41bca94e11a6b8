//! What the node did over the last minute, second by second: commands
//! applied, acknowledgement latency (from a command entering the submit
//! queue to its answer leaving the core, so durable and applied) and fsync
//! latency. `/admin/status` reads it for the operator dashboard.
//!
//! Invariants: slot `s % SLOTS` holds second `s` (seconds since the window
//! was created) or is stale and reset before reuse, so a reader never mixes
//! two minutes; writers take the lock once per published group of answers
//! or per fsync, never per command.

use std::sync::Mutex;
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Seconds kept.
pub const SLOTS: u64 = 60;
/// Latencies are kept in microseconds, from 1 µs to a minute, with two
/// significant digits: plenty for percentiles, and small enough to keep
/// sixty seconds of two histograms (about 2 MB).
const MAX_MICROS: u64 = 60_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_MICROS, 2).expect("static bounds")
}

fn micros(nanos: u64) -> u64 {
    nanos.div_ceil(1_000).clamp(1, MAX_MICROS)
}

struct Slot {
    second: u64,
    commands: u64,
    ack: Histogram<u64>,
    fsync: Histogram<u64>,
}

pub struct RecentWindow {
    origin: Instant,
    slots: Mutex<Vec<Slot>>,
}

/// Percentiles of one latency over some seconds, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// One complete second.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SecondPoint {
    /// Seconds since the node started.
    pub second: u64,
    pub commands: u64,
    pub ack_p50_us: u64,
    pub ack_p99_us: u64,
    pub ack_max_us: u64,
    pub fsync_p99_us: u64,
}

/// A summary of the last `seconds` complete seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowSummary {
    pub seconds: u64,
    pub commands_per_sec: f64,
    pub ack_latency_us: Percentiles,
    pub fsync_latency_us: Percentiles,
}

impl Default for RecentWindow {
    fn default() -> Self {
        RecentWindow::new(Instant::now())
    }
}

impl RecentWindow {
    pub fn new(origin: Instant) -> RecentWindow {
        let slots = (0..SLOTS)
            .map(|_| Slot {
                second: u64::MAX,
                commands: 0,
                ack: histogram(),
                fsync: histogram(),
            })
            .collect();
        RecentWindow {
            origin,
            slots: Mutex::new(slots),
        }
    }

    fn second_at(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.origin).as_secs()
    }

    fn with_slot(&self, now: Instant, update: impl FnOnce(&mut Slot)) {
        let second = self.second_at(now);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut slots[(second % SLOTS) as usize];
        if slot.second != second {
            slot.second = second;
            slot.commands = 0;
            slot.ack.reset();
            slot.fsync.reset();
        }
        update(slot);
    }

    /// `commands` applied, of which some were answered after the given
    /// latencies (nanoseconds).
    pub fn record_commands(&self, now: Instant, commands: u64, ack_nanos: &[u64]) {
        self.with_slot(now, |slot| {
            slot.commands += commands;
            for &nanos in ack_nanos {
                slot.ack.saturating_record(micros(nanos));
            }
        });
    }

    pub fn record_fsync(&self, now: Instant, nanos: u64) {
        self.with_slot(now, |slot| slot.fsync.saturating_record(micros(nanos)));
    }

    /// Every complete second still kept, oldest first. Seconds in which
    /// nothing happened are there with zeros, so a chart's time axis has no
    /// holes.
    pub fn series(&self, now: Instant) -> Vec<SecondPoint> {
        let current = self.second_at(now);
        let first = current.saturating_sub(SLOTS - 1);
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        (first..current)
            .map(|second| {
                let slot = &slots[(second % SLOTS) as usize];
                if slot.second != second {
                    return SecondPoint {
                        second,
                        commands: 0,
                        ack_p50_us: 0,
                        ack_p99_us: 0,
                        ack_max_us: 0,
                        fsync_p99_us: 0,
                    };
                }
                let ack = Percentiles::of(&slot.ack);
                SecondPoint {
                    second,
                    commands: slot.commands,
                    ack_p50_us: ack.p50,
                    ack_p99_us: ack.p99,
                    ack_max_us: ack.max,
                    fsync_p99_us: Percentiles::of(&slot.fsync).p99,
                }
            })
            .collect()
    }

    /// The last `seconds` complete seconds (fewer just after start).
    pub fn summary(&self, now: Instant, seconds: u64) -> WindowSummary {
        let current = self.second_at(now);
        let seconds = seconds.clamp(1, SLOTS - 1);
        let first = current.saturating_sub(seconds);
        let span = current - first;
        let (mut ack, mut fsync, mut commands) = (histogram(), histogram(), 0);
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        for second in first..current {
            let slot = &slots[(second % SLOTS) as usize];
            if slot.second == second {
                commands += slot.commands;
                // Same bounds on both sides, so adding cannot fail.
                let _ = ack.add(&slot.ack);
                let _ = fsync.add(&slot.fsync);
            }
        }
        WindowSummary {
            seconds: span,
            commands_per_sec: if span == 0 {
                0.0
            } else {
                commands as f64 / span as f64
            },
            ack_latency_us: Percentiles::of(&ack),
            fsync_latency_us: Percentiles::of(&fsync),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn summarises_complete_seconds_only() {
        let origin = Instant::now();
        let window = RecentWindow::new(origin);
        let at = |ms: u64| origin + Duration::from_millis(ms);
        // Second 0: 100 commands, 99 answered in 100 µs and one in 5 ms.
        let mut acks = vec![100_000; 99];
        acks.push(5_000_000);
        window.record_commands(at(100), 100, &acks);
        window.record_fsync(at(200), 2_000_000);
        // Second 1: 50 commands, none answered (detached).
        window.record_commands(at(1_500), 50, &[]);
        // Second 2 is still running: not part of any summary.
        window.record_commands(at(2_100), 1_000, &[1_000_000_000]);

        let summary = window.summary(at(2_500), 10);
        assert_eq!(summary.seconds, 2);
        assert_eq!(summary.commands_per_sec, 75.0);
        assert_eq!(summary.ack_latency_us.count, 100);
        assert_eq!(summary.ack_latency_us.p50, 100);
        assert!(
            (4_950..=5_050).contains(&summary.ack_latency_us.max),
            "{summary:?}"
        );
        assert!(summary.ack_latency_us.p999 >= 4_950, "{summary:?}");
        assert!(
            (1_980..=2_020).contains(&summary.fsync_latency_us.p50),
            "{summary:?}"
        );

        let series = window.series(at(2_500));
        assert_eq!(
            series
                .iter()
                .map(|p| (p.second, p.commands))
                .collect::<Vec<_>>(),
            vec![(0, 100), (1, 50)]
        );
        assert_eq!(series[0].ack_p50_us, 100);
        assert_eq!(series[1].ack_max_us, 0);
    }

    #[test]
    fn a_reused_slot_forgets_the_minute_before() {
        let origin = Instant::now();
        let window = RecentWindow::new(origin);
        let at = |s: u64| origin + Duration::from_secs(s);
        window.record_commands(at(3), 7, &[1_000]);
        // Second 63 lands in the same slot as second 3.
        window.record_commands(at(SLOTS + 3), 2, &[]);
        let series = window.series(at(SLOTS + 4));
        assert_eq!(series.len() as u64, SLOTS - 1);
        assert_eq!(series.first().map(|p| p.second), Some(5));
        let last = series.last().expect("points");
        assert_eq!((last.second, last.commands, last.ack_max_us), (63, 2, 0));
        assert!(series.iter().all(|p| p.second == 63 || p.commands == 0));
        let summary = window.summary(at(SLOTS + 4), 100);
        assert_eq!(summary.seconds, SLOTS - 1);
        assert_eq!(summary.ack_latency_us, Percentiles::default());
    }
}
