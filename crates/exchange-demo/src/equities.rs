//! The demo's stock market: three made-up equities on a trading day
//! compressed into eight minutes, beside the configured crypto pairs,
//! which keep trading around the clock.
//!
//! `--demo` adds them to the configuration before the server starts, as
//! if the configuration file had listed them and scheduled them with the
//! cycle form of `[[schedule]]` (docs/schedule.md). Two sessions, the
//! second four minutes after the first, so that whenever a newcomer looks,
//! an auction is at most three minutes away and a call is running half the
//! time.

use std::collections::BTreeSet;

use exchange_node::config::{Config, InstrumentConfig};
use exchange_node::schedule::{CycleConfig, ScheduleConfig};

/// One demo equity, priced like a listed share: whole-share lots, a cent
/// or five-cent tick, a reference price, a collar and volatility bands.
struct Equity {
    symbol: &'static str,
    base: &'static str,
    quote: &'static str,
    tick: &'static str,
    reference: &'static str,
}

impl Equity {
    fn instrument(&self) -> InstrumentConfig {
        InstrumentConfig {
            symbol: self.symbol.into(),
            base: self.base.into(),
            quote: self.quote.into(),
            tick_size: self.tick.into(),
            lot_size: "1".into(),
            min_qty: Some("1".into()),
            max_qty: Some("50000".into()),
            price_collar_pct: Some("10".into()),
            reference_price: Some(self.reference.into()),
            maker_fee_bps: 0,
            taker_fee_bps: 2,
            min_notional: None,
            // Xetra-like bands, and a volatility call compressed like the
            // day (Xetra's lasts two minutes).
            static_band_pct: Some("5".into()),
            dynamic_band_pct: Some("2".into()),
            volatility_auction_ns: Some(10_000_000_000),
            // A new listing's default: Xetra's nearest-limit rule.
            reference_price_rule: None,
            // Listed continuous; the schedule moves it at once to the
            // phase its session is in.
            phase: None,
            hidden_min_notional: None,
        }
    }
}

/// A session: a schedule's name, its offset from the Unix epoch, and the
/// equities that follow it.
struct Session {
    name: &'static str,
    offset: Option<&'static str>,
    equities: &'static [Equity],
}

const SESSIONS: [Session; 2] = [
    Session {
        name: "demo-eu",
        offset: None,
        equities: &[
            Equity {
                symbol: "NRDL-EUR",
                base: "NRDL",
                quote: "EUR",
                tick: "0.01",
                reference: "38.40",
            },
            Equity {
                symbol: "VLTA-EUR",
                base: "VLTA",
                quote: "EUR",
                tick: "0.05",
                reference: "217.60",
            },
        ],
    },
    Session {
        name: "demo-us",
        offset: Some("4m"),
        equities: &[Equity {
            symbol: "ACME-USD",
            base: "ACME",
            quote: "USD",
            tick: "0.01",
            reference: "142.50",
        }],
    },
];

/// The phases of the demo's day and how long each lasts, in order: eight
/// minutes, so a day has a whole number of cycles and the sessions start
/// at the same minutes every hour.
pub const CYCLE: [(&str, &str); 5] = [
    ("pre_open", "60s"),
    ("continuous", "4m"),
    ("closing_call", "60s"),
    ("post_close", "30s"),
    ("closed", "90s"),
];

fn cycle(offset: Option<&str>) -> CycleConfig {
    CycleConfig {
        pre_open: CYCLE[0].1.into(),
        continuous: CYCLE[1].1.into(),
        closing_call: CYCLE[2].1.into(),
        post_close: CYCLE[3].1.into(),
        closed: CYCLE[4].1.into(),
        offset: offset.map(str::to_string),
    }
}

/// Adds the demo equities to `config`, each unless it lists that symbol
/// already, and their schedules, leaving out a symbol that one of its own
/// schedules names. Running it twice changes nothing more.
pub fn configure(config: &mut Config) {
    let scheduled: BTreeSet<String> = config
        .schedules
        .iter()
        .flat_map(|s| s.symbols.iter().cloned())
        .collect();
    for session in &SESSIONS {
        let mut symbols = Vec::new();
        for equity in session.equities {
            if !config.instruments.iter().any(|i| i.symbol == equity.symbol) {
                config.instruments.push(equity.instrument());
            }
            if !scheduled.contains(equity.symbol) {
                symbols.push(equity.symbol.to_string());
            }
        }
        if !symbols.is_empty() {
            config.schedules.push(ScheduleConfig {
                name: session.name.into(),
                symbols,
                cycle: Some(cycle(session.offset)),
                ..ScheduleConfig::default()
            });
        }
    }
}

/// Where each demo schedule is now and what comes next, for the banner.
pub(crate) fn describe(config: &Config, now_ns: u64) -> Vec<String> {
    let names: BTreeSet<&str> = SESSIONS.iter().map(|s| s.name).collect();
    let Ok(schedules) = exchange_node::schedule::build(&config.schedules) else {
        return Vec::new();
    };
    schedules
        .iter()
        .filter(|s| names.contains(s.name.as_str()))
        .map(|schedule| {
            let position = schedule.position(now_ns);
            let next = position.next.map_or(String::new(), |(at, phase)| {
                let seconds = at.saturating_sub(now_ns).div_ceil(1_000_000_000);
                format!("; {} in {seconds} s", phase.as_str())
            });
            format!(
                "{}: {} now{next}",
                schedule.symbols.join(", "),
                position.phase.as_str()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_equities_are_listed_and_scheduled_once() {
        let mut config = Config::default();
        configure(&mut config);
        let symbols: Vec<&str> = config
            .instruments
            .iter()
            .map(|i| i.symbol.as_str())
            .collect();
        assert_eq!(
            symbols,
            ["BTC-USD", "ETH-USD", "NRDL-EUR", "VLTA-EUR", "ACME-USD"]
        );
        assert_eq!(config.schedules.len(), 2);
        config.check().unwrap();
        let again = {
            let mut twice = config.clone();
            configure(&mut twice);
            twice
        };
        assert_eq!(again, config, "configuring twice adds nothing");
        // The crypto pairs stay in no schedule: around the clock.
        let scheduler = config.scheduler().unwrap();
        let scheduled: Vec<&String> = scheduler
            .schedules
            .iter()
            .flat_map(|s| &s.symbols)
            .collect();
        assert_eq!(scheduled, ["NRDL-EUR", "VLTA-EUR", "ACME-USD"]);
    }

    #[test]
    fn the_two_sessions_are_half_a_cycle_apart() {
        let mut config = Config::default();
        configure(&mut config);
        let scheduler = config.scheduler().unwrap();
        let (eu, us) = (&scheduler.schedules[0], &scheduler.schedules[1]);
        // 2026-12-01T00:00:00Z: a cycle starts for the first session.
        let midnight = 1_796_083_200 * 1_000_000_000u64;
        let minute = 60_000_000_000u64;
        let phases = |at: u64| (eu.position(at).phase, us.position(at).phase);
        use exchange_types::Phase::*;
        assert_eq!(phases(midnight), (PreOpen, Continuous));
        assert_eq!(phases(midnight + minute), (Continuous, ClosingCall));
        assert_eq!(phases(midnight + 2 * minute), (Continuous, PostClose));
        assert_eq!(phases(midnight + 4 * minute), (Continuous, PreOpen));
        assert_eq!(phases(midnight + 5 * minute), (ClosingCall, Continuous));
        assert_eq!(phases(midnight + 6 * minute), (PostClose, Continuous));
        assert_eq!(phases(midnight + 7 * minute), (Closed, Continuous));
        let lines = describe(&config, midnight + 30 * 1_000_000_000);
        assert_eq!(
            lines,
            [
                "NRDL-EUR, VLTA-EUR: pre_open now; continuous in 30 s",
                "ACME-USD: continuous now; closing_call in 30 s",
            ]
        );
    }

    #[test]
    fn a_configured_schedule_keeps_its_symbol() {
        let mut config = Config::default();
        config.schedules.push(ScheduleConfig {
            name: "mine".into(),
            symbols: vec!["ACME-USD".into()],
            cycle: Some(cycle(None)),
            ..ScheduleConfig::default()
        });
        configure(&mut config);
        let names: Vec<&str> = config.schedules.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mine", "demo-eu"]);
        config.check().unwrap();
    }
}
