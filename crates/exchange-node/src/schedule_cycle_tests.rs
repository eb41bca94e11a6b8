use super::tests::successor;
use super::*;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;

/// The demo's cycle: eight minutes, a whole number of them in a day.
fn eight_minutes(offset: Option<&str>) -> ScheduleConfig {
    ScheduleConfig {
        name: "demo".into(),
        symbols: vec!["ACME-EUR".into()],
        cycle: Some(CycleConfig {
            pre_open: "60s".into(),
            continuous: "4m".into(),
            closing_call: "1m".into(),
            post_close: "30s".into(),
            closed: "PT1M30S".into(),
            offset: offset.map(str::to_string),
        }),
        ..ScheduleConfig::default()
    }
}

/// 2026-12-01T00:00:00Z, a whole number of eight-minute cycles after the
/// epoch.
const MIDNIGHT: u64 = 1_796_083_200 * S;

#[test]
fn a_cycle_runs_the_day_in_minutes_from_the_epoch_and_repeats() {
    let s = Schedule::new(&eight_minutes(None)).unwrap();
    assert_eq!(MIDNIGHT % (480 * S), 0);
    let cases = [
        (0, Phase::PreOpen, 60, Phase::Continuous),
        (59, Phase::PreOpen, 60, Phase::Continuous),
        (60, Phase::Continuous, 300, Phase::ClosingCall),
        (299, Phase::Continuous, 300, Phase::ClosingCall),
        (300, Phase::ClosingCall, 360, Phase::PostClose),
        (360, Phase::PostClose, 390, Phase::Closed),
        (390, Phase::Closed, 480, Phase::PreOpen),
        (479, Phase::Closed, 480, Phase::PreOpen),
        (480, Phase::PreOpen, 540, Phase::Continuous),
    ];
    for (cycles, base) in [(0, MIDNIGHT), (1, MIDNIGHT + 480 * S), (0, 0)] {
        for (at, phase, next, next_phase) in cases {
            assert_eq!(
                s.position(base + at * S),
                Position {
                    phase,
                    next: Some((base + next * S, next_phase)),
                },
                "{at} s into cycle {cycles} from {base}"
            );
        }
    }
    // A nanosecond before a change is still the phase before it.
    assert_eq!(s.position(MIDNIGHT + 60 * S - 1).phase, Phase::PreOpen);
    assert_eq!(s.position(MIDNIGHT - 1).phase, Phase::Closed);
}

#[test]
fn an_offset_shifts_every_cycle_and_wraps_around_it() {
    let shifted = Schedule::new(&eight_minutes(Some("4m"))).unwrap();
    // Four minutes into the unshifted cycle, the shifted one starts.
    assert_eq!(
        shifted.position(MIDNIGHT + 240 * S),
        Position {
            phase: Phase::PreOpen,
            next: Some((MIDNIGHT + 300 * S, Phase::Continuous)),
        }
    );
    // At midnight it is four minutes in: continuous, a minute to the call.
    assert_eq!(
        shifted.position(MIDNIGHT),
        Position {
            phase: Phase::Continuous,
            next: Some((MIDNIGHT + 60 * S, Phase::ClosingCall)),
        }
    );
    // The cycle before the epoch's first is where the offset counts from.
    assert_eq!(shifted.position(0).phase, Phase::Continuous);
    // A minute later, not a minute earlier (half a cycle cannot tell).
    let late = Schedule::new(&eight_minutes(Some("1m"))).unwrap();
    assert_eq!(
        late.position(MIDNIGHT),
        Position {
            phase: Phase::Closed,
            next: Some((MIDNIGHT + 60 * S, Phase::PreOpen)),
        }
    );
    assert_eq!(late.position(MIDNIGHT + 60 * S).phase, Phase::PreOpen);
    assert_eq!(late.position(MIDNIGHT + 120 * S).phase, Phase::Continuous);
    let wrapped = Schedule::new(&eight_minutes(Some("9m"))).unwrap();
    for at in [0, 1, 59 * S, MIDNIGHT + 123 * S, MIDNIGHT + 479 * S] {
        assert_eq!(wrapped.position(at), late.position(at), "at {at}");
    }
}

#[test]
fn invalid_cycles_name_the_field() {
    type Change = fn(&mut ScheduleConfig);
    let cases: [(Change, &str); 8] = [
        (
            |c| c.time_zone = Some("UTC".into()),
            "time_zone: is for a daily schedule",
        ),
        (
            |c| c.holidays = vec!["2026-12-24".into()],
            "holidays: is for a daily schedule",
        ),
        (
            |c| c.trading_days = Some(vec!["mon".into()]),
            "trading_days: is for a daily schedule",
        ),
        (
            |c| c.open = Some("09:00".into()),
            "open: is for a daily schedule",
        ),
        (
            |c| cycle(c).continuous = "0s".into(),
            "cycle.continuous: must be longer than zero",
        ),
        (
            |c| cycle(c).closed = "soon".into(),
            "cycle.closed: \"soon\" is not a duration",
        ),
        (
            |c| cycle(c).pre_open = "-5s".into(),
            "cycle.pre_open: -5s is negative",
        ),
        (
            |c| {
                cycle(c).pre_open = "3000000h".into();
                cycle(c).continuous = "3000000h".into();
            },
            "cycle.continuous: the cycle is too long",
        ),
    ];
    for (change, expected) in cases {
        let mut config = eight_minutes(None);
        change(&mut config);
        let error = Schedule::new(&config).unwrap_err().to_string();
        assert!(error.starts_with("schedule \"demo\": "), "{error}");
        assert!(error.contains(expected), "{error} lacks {expected}");
    }
}

fn cycle(config: &mut ScheduleConfig) -> &mut CycleConfig {
    config.cycle.as_mut().expect("a cycle")
}

#[test]
fn a_cycle_is_configured_as_a_table_of_durations() {
    let text = r#"
[[schedule]]
name = "demo"
symbols = ["ACME-EUR"]

[schedule.cycle]
pre_open = "60s"
continuous = "4m"
closing_call = "1m"
post_close = "30s"
closed = "PT1M30S"
"#;
    let parsed: crate::config::Config = toml::from_str(text).unwrap();
    assert_eq!(parsed.schedules, [eight_minutes(None)]);
    parsed.check().unwrap();
    // What the configuration writes out, it reads back.
    let written = toml::to_string(&parsed).unwrap();
    let again: crate::config::Config = toml::from_str(&written).unwrap();
    assert_eq!(again.schedules, parsed.schedules);
    let typo = text.replace("post_close", "post_closed");
    assert!(toml::from_str::<crate::config::Config>(&typo).is_err());
}

prop_compose! {
    fn cycles()(
        seconds in proptest::collection::vec(1u64..600, 5),
        offset in proptest::option::of(0u64..5_000),
    ) -> ScheduleConfig {
        let text = |s: u64| format!("{s}s");
        ScheduleConfig {
            name: "p".into(),
            symbols: vec!["X".into()],
            cycle: Some(CycleConfig {
                pre_open: text(seconds[0]),
                continuous: text(seconds[1]),
                closing_call: text(seconds[2]),
                post_close: text(seconds[3]),
                closed: text(seconds[4]),
                offset: offset.map(text),
            }),
            ..ScheduleConfig::default()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// From any instant the changes come strictly later, in the day's
    /// order, the phase holds until the next, and a whole cycle later
    /// everything is the same, a cycle later.
    #[test]
    fn cycle_changes_are_later_in_order_and_repeat(
        config in cycles(),
        start in 0u64..4_000_000_000 * S,
        fractions in proptest::collection::vec(0u64..1000, 12),
    ) {
        let s = Schedule::new(&config).unwrap();
        let length: u64 = config
            .cycle
            .as_ref()
            .map(|c| [&c.pre_open, &c.continuous, &c.closing_call, &c.post_close, &c.closed])
            .unwrap()
            .iter()
            .map(|t| t.trim_end_matches('s').parse::<u64>().unwrap() * S)
            .sum();
        let mut now = start;
        let mut position = s.position(now);
        for fraction in fractions {
            let (next, phase) = position.next.expect("a cycle always has a next change");
            prop_assert!(next > now);
            prop_assert!(next - now <= length);
            let between = now + ((u128::from(next - now - 1) * u128::from(fraction)) / 1000) as u64;
            prop_assert_eq!(s.position(between).phase, position.phase);
            prop_assert_eq!(s.position(next - 1).phase, position.phase);
            prop_assert_eq!(phase, successor(position.phase));
            let later = s.position(now + length);
            prop_assert_eq!(later.phase, position.phase);
            prop_assert_eq!(later.next, Some((next + length, phase)));
            let old = position.phase;
            now = next;
            position = s.position(now);
            prop_assert_eq!(position.phase, phase);
            let walk = steps(old, phase);
            prop_assert_eq!(walk.last(), Some(&phase));
            prop_assert!(walk.len() <= 2, "{:?}", walk);
        }
    }
}
