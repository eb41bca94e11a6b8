//! The cycle form of a schedule: the five phases of a trading day, each
//! for a fixed duration, repeated around the clock. Its instants are plain
//! arithmetic on Unix nanoseconds (no time zone, no calendar), so every
//! node derives the same ones from the configuration.

use exchange_types::Phase;
use jiff::SignedDuration;

use super::{field_error, CycleConfig, Position, ScheduleConfig, ScheduleError, DAILY};

/// A checked cycle.
#[derive(Clone, Debug)]
pub(super) struct Cycle {
    /// Nanoseconds from a cycle's start to each of its five changes (the
    /// first is 0), strictly increasing.
    starts: [u64; 5],
    /// The whole cycle, nanoseconds.
    length: u64,
    /// Where a cycle starts, as a remainder of the Unix epoch modulo
    /// `length`.
    offset: u64,
}

/// Nanoseconds of a configured duration.
fn nanos(config: &ScheduleConfig, field: &'static str, text: &str) -> Result<u64, ScheduleError> {
    let duration: SignedDuration = text.parse().map_err(|_| {
        field_error(
            config,
            field,
            format!("{text:?} is not a duration such as \"90s\" or \"4m\""),
        )
    })?;
    u64::try_from(duration.as_nanos())
        .map_err(|_| field_error(config, field, format!("{text} is negative or too long")))
}

/// The fields of the daily form, which a cycle replaces.
fn daily_fields(config: &ScheduleConfig) -> [(&'static str, bool); 8] {
    [
        ("time_zone", config.time_zone.is_some()),
        ("trading_days", config.trading_days.is_some()),
        ("pre_open", config.pre_open.is_some()),
        ("open", config.open.is_some()),
        ("closing_call", config.closing_call.is_some()),
        ("close", config.close.is_some()),
        ("closed", config.closed.is_some()),
        ("holidays", !config.holidays.is_empty()),
    ]
}

impl Cycle {
    pub(super) fn new(
        config: &ScheduleConfig,
        cycle: &CycleConfig,
    ) -> Result<Cycle, ScheduleError> {
        // A schedule that mixed the two forms would leave the reader
        // guessing which one runs.
        if let Some((name, _)) = daily_fields(config).into_iter().find(|(_, given)| *given) {
            return Err(field_error(
                config,
                name,
                "is for a daily schedule; a schedule with a cycle has none".into(),
            ));
        }
        let phases = [
            ("cycle.pre_open", &cycle.pre_open),
            ("cycle.continuous", &cycle.continuous),
            ("cycle.closing_call", &cycle.closing_call),
            ("cycle.post_close", &cycle.post_close),
            ("cycle.closed", &cycle.closed),
        ];
        let mut starts = [0u64; 5];
        let mut length = 0u64;
        for (slot, (field, text)) in starts.iter_mut().zip(phases) {
            let duration = nanos(config, field, text)?;
            if duration == 0 {
                // Every phase must hold for a while, so each change has an
                // instant of its own.
                return Err(field_error(
                    config,
                    field,
                    "must be longer than zero".into(),
                ));
            }
            *slot = length;
            length = length
                .checked_add(duration)
                .ok_or_else(|| field_error(config, field, "the cycle is too long".into()))?;
        }
        let offset = match &cycle.offset {
            Some(text) => nanos(config, "cycle.offset", text)? % length,
            None => 0,
        };
        Ok(Cycle {
            starts,
            length,
            offset,
        })
    }

    pub(super) fn position(&self, now_ns: u64) -> Position {
        // Computed in i128: the cycle under way may have started before
        // the epoch, and the next change may lie past `u64::MAX`.
        let now = i128::from(now_ns);
        let into = (now - i128::from(self.offset)).rem_euclid(i128::from(self.length));
        let start = now - into;
        let mut phase = Phase::Closed;
        let mut next = (start + i128::from(self.length), Phase::PreOpen);
        for (&at, change) in self.starts.iter().zip(DAILY) {
            if i128::from(at) <= into {
                phase = change;
            } else {
                next = (start + i128::from(at), change);
                break;
            }
        }
        Position {
            phase,
            next: u64::try_from(next.0).ok().map(|at| (at, next.1)),
        }
    }
}
