//! Trading-day schedules: which phase an instrument should be in at a
//! wall-clock instant, and when that next changes.
//!
//! A schedule has one of two forms. The **daily** form names a time zone
//! (IANA, with its daylight-saving rules, from the time-zone database
//! bundled into the binary so that every node computes the same instants
//! whatever the host has installed), the weekdays it trades, holidays, and
//! five local times of a trading day, after Xetra's day: `pre_open` (the
//! opening call), `open` (the opening uncross, then continuous trading),
//! `closing_call`, `close` (the closing uncross, then post-trading) and
//! `closed`. On a day that does not trade the instrument is closed
//! throughout.
//!
//! The **cycle** form (`[schedule.cycle]`) runs the same five phases
//! over and over, each for a fixed duration, around the clock: a trading
//! day compressed into minutes, for demonstrations and tests. Its cycles
//! start at the Unix epoch plus an offset plus whole cycles, so every node
//! computes the same instants from the configuration alone.
//!
//! Nothing here reads a clock: the scheduler task passes the instant in,
//! which is what lets the tests move time freely. The core never sees any
//! of this; it only receives the `set_phase` commands the scheduler logs.

use std::collections::BTreeSet;

use exchange_types::Phase;
use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[path = "schedule_cycle.rs"]
mod cycle;
use cycle::Cycle;

/// One `[[schedule]]` section, as written in the configuration file:
/// either the daily form (`time_zone` and the five times) or `cycle`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    /// Shown in errors and logs.
    pub name: String,
    /// The instruments that follow it (each in one schedule at most).
    pub symbols: Vec<String>,
    /// IANA time zone of the times below, e.g. `"Europe/Berlin"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// `"mon"` .. `"sun"`; default Monday to Friday.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trading_days: Option<Vec<String>>,
    /// `"HH:MM"` (or `"HH:MM:SS"`) local times, strictly increasing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_open: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closing_call: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<String>,
    /// `"YYYY-MM-DD"` local dates without trading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holidays: Vec<String>,
    /// The repeating form, instead of all of the above but the name and
    /// the symbols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<CycleConfig>,
}

/// `[schedule.cycle]`: how long each phase lasts, as durations such as
/// `"90s"`, `"4m"` or `"1h 30m"` (jiff's friendly format, or ISO 8601
/// `"PT4M"`), in the day's order. A cycle starts, in `pre_open`, at the
/// Unix epoch plus `offset` plus any whole number of cycles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CycleConfig {
    pub pre_open: String,
    pub continuous: String,
    pub closing_call: String,
    pub post_close: String,
    pub closed: String,
    /// Shifts every cycle later; default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    #[error("schedule {name:?}: {field}: {message}")]
    Field {
        name: String,
        field: &'static str,
        message: String,
    },
    #[error("symbol {symbol:?} is in both schedule {first:?} and schedule {second:?}")]
    Duplicate {
        symbol: String,
        first: String,
        second: String,
    },
}

/// The order of a trading day. The two auction phases are passed through
/// on the way (one `set_phase` each) and never last: the core uncrosses
/// on entering them.
pub const DAY_CYCLE: [Phase; 7] = [
    Phase::Closed,
    Phase::PreOpen,
    Phase::OpeningAuction,
    Phase::Continuous,
    Phase::ClosingCall,
    Phase::ClosingAuction,
    Phase::PostClose,
];

/// Phase each of the five daily times starts, in order; also the order of
/// a cycle's phases.
const DAILY: [Phase; 5] = [
    Phase::PreOpen,
    Phase::Continuous,
    Phase::ClosingCall,
    Phase::PostClose,
    Phase::Closed,
];

/// How far ahead the next trading day is looked for: a year of holidays
/// is the most a real calendar has.
const SEARCH_DAYS: usize = 400;

/// A checked schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub name: String,
    pub symbols: Vec<String>,
    form: Form,
}

#[derive(Clone, Debug)]
enum Form {
    Daily(Daily),
    Cycle(Cycle),
}

/// The daily form, checked.
#[derive(Clone, Debug)]
struct Daily {
    zone: TimeZone,
    days: [bool; 7],
    holidays: BTreeSet<Date>,
    times: [Time; 5],
}

/// The weekdays a schedule trades on, Monday first.
fn trading_days(config: &ScheduleConfig) -> Result<[bool; 7], ScheduleError> {
    let Some(names) = &config.trading_days else {
        return Ok([true, true, true, true, true, false, false]);
    };
    let mut days = [false; 7];
    for day in names {
        let index = match day.to_ascii_lowercase().as_str() {
            "mon" => 0,
            "tue" => 1,
            "wed" => 2,
            "thu" => 3,
            "fri" => 4,
            "sat" => 5,
            "sun" => 6,
            _ => {
                return Err(field_error(
                    config,
                    "trading_days",
                    format!("{day:?} is not one of mon, tue, wed, thu, fri, sat, sun"),
                ))
            }
        };
        days[index] = true;
    }
    if !days.contains(&true) {
        return Err(field_error(config, "trading_days", "names no day".into()));
    }
    Ok(days)
}

fn field_error(config: &ScheduleConfig, field: &'static str, message: String) -> ScheduleError {
    ScheduleError::Field {
        name: config.name.clone(),
        field,
        message,
    }
}

/// Where a schedule puts an instrument at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub phase: Phase,
    /// The next change (Unix nanoseconds) and the phase it starts; `None`
    /// when none follows: a daily schedule with no trading day within
    /// [`SEARCH_DAYS`], or a change past the largest Unix time.
    pub next: Option<(u64, Phase)>,
}

impl Schedule {
    pub fn new(config: &ScheduleConfig) -> Result<Schedule, ScheduleError> {
        if config.symbols.is_empty() {
            return Err(field_error(config, "symbols", "names no instrument".into()));
        }
        let form = match &config.cycle {
            Some(cycle) => Form::Cycle(Cycle::new(config, cycle)?),
            None => Form::Daily(Daily::new(config)?),
        };
        Ok(Schedule {
            name: config.name.clone(),
            symbols: config.symbols.clone(),
            form,
        })
    }

    /// The phase at `now_ns` (Unix nanoseconds) and the next change.
    pub fn position(&self, now_ns: u64) -> Position {
        match &self.form {
            Form::Daily(daily) => daily.position(now_ns),
            Form::Cycle(cycle) => cycle.position(now_ns),
        }
    }
}

impl Daily {
    fn new(config: &ScheduleConfig) -> Result<Daily, ScheduleError> {
        let field = |field: &'static str, message: String| field_error(config, field, message);
        let required = |name: &'static str, value: &Option<String>| {
            value
                .clone()
                .ok_or_else(|| field(name, "missing (give it, or a cycle)".into()))
        };
        let zone_name = required("time_zone", &config.time_zone)?;
        let zone = TimeZone::get(&zone_name).map_err(|_| {
            field(
                "time_zone",
                format!("{zone_name:?} is not a known IANA time zone"),
            )
        })?;
        let days = trading_days(config)?;
        let names = ["pre_open", "open", "closing_call", "close", "closed"];
        let fields = [
            &config.pre_open,
            &config.open,
            &config.closing_call,
            &config.close,
            &config.closed,
        ];
        let mut texts = Vec::with_capacity(names.len());
        for (name, value) in names.iter().zip(fields) {
            texts.push(required(name, value)?);
        }
        let mut times = [Time::midnight(); 5];
        for (i, (name, text)) in names.iter().zip(&texts).enumerate() {
            let time: Time = text
                .parse()
                .map_err(|_| field(name, format!("{text:?} is not a time of day HH:MM")))?;
            if i > 0 && time <= times[i - 1] {
                return Err(field(
                    name,
                    format!("{text} is not after {} ({})", names[i - 1], texts[i - 1]),
                ));
            }
            times[i] = time;
        }
        let mut holidays = BTreeSet::new();
        for text in &config.holidays {
            let date: Date = text
                .parse()
                .map_err(|_| field("holidays", format!("{text:?} is not a date YYYY-MM-DD")))?;
            holidays.insert(date);
        }
        Ok(Daily {
            zone,
            days,
            holidays,
            times,
        })
    }

    fn trades_on(&self, date: Date) -> bool {
        let day = date.weekday().to_monday_zero_offset() as usize;
        self.days[day] && !self.holidays.contains(&date)
    }

    /// The instants of a trading day's five changes. A local time that a
    /// daylight-saving change skips is taken as the same time after the
    /// change (02:30 on a spring-forward day is 03:30); one that occurs
    /// twice is taken the first time, as RFC 5545 calendars do.
    fn instants(&self, date: Date) -> Option<[i128; 5]> {
        let mut out = [0i128; 5];
        let mut previous = i128::MIN;
        for (slot, time) in out.iter_mut().zip(self.times) {
            let zoned = self.zone.to_zoned(date.to_datetime(time)).ok()?;
            // Two times inside one skipped hour land on the same instant:
            // keep them a nanosecond apart so every change has its own.
            *slot = zoned.timestamp().as_nanosecond().max(previous + 1);
            previous = *slot;
        }
        Some(out)
    }

    fn position(&self, now_ns: u64) -> Position {
        let now = i128::from(now_ns);
        let Ok(stamp) = Timestamp::from_nanosecond(now) else {
            return Position {
                phase: Phase::Closed,
                next: None,
            };
        };
        let today = stamp.to_zoned(self.zone.clone()).date();
        let mut phase = Phase::Closed;
        // Yesterday's changes matter too: a zone's offset change can move
        // one past local midnight.
        let mut date = today.yesterday().unwrap_or(today);
        for _ in 0..SEARCH_DAYS {
            if self.trades_on(date) {
                if let Some(instants) = self.instants(date) {
                    for (at, next) in instants.iter().zip(DAILY) {
                        if *at <= now {
                            phase = next;
                        } else if let Ok(at) = u64::try_from(*at) {
                            return Position {
                                phase,
                                next: Some((at, next)),
                            };
                        }
                    }
                }
            }
            match date.tomorrow() {
                Ok(next) => date = next,
                Err(_) => break,
            }
        }
        Position { phase, next: None }
    }
}

/// The `set_phase` commands that take an instrument from `from` to `to`
/// along the trading day, in order, each a single step the core accepts:
/// a node that missed the open still runs the opening call and auction.
/// Empty when it is there already, and for phases the schedule does not
/// own (`halted` is the operator's, `volatility_auction` the core's).
pub fn steps(from: Phase, to: Phase) -> Vec<Phase> {
    let position = |phase| DAY_CYCLE.iter().position(|p| *p == phase);
    let (Some(start), Some(end)) = (position(from), position(to)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = start;
    while at != end {
        at = (at + 1) % DAY_CYCLE.len();
        out.push(DAY_CYCLE[at]);
    }
    out
}

/// Checks every schedule and that no symbol is in two.
pub fn build(configs: &[ScheduleConfig]) -> Result<Vec<Schedule>, ScheduleError> {
    let mut owner: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    let mut out = Vec::with_capacity(configs.len());
    for config in configs {
        for symbol in &config.symbols {
            if let Some(first) = owner.insert(symbol, &config.name) {
                return Err(ScheduleError::Duplicate {
                    symbol: symbol.clone(),
                    first: first.to_string(),
                    second: config.name.clone(),
                });
            }
            if exchange_types::Symbol::new(symbol).is_err() {
                return Err(ScheduleError::Field {
                    name: config.name.clone(),
                    field: "symbols",
                    message: format!("{symbol:?} is not a valid symbol"),
                });
            }
        }
        out.push(Schedule::new(config)?);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "schedule_cycle_tests.rs"]
mod cycle_tests;
