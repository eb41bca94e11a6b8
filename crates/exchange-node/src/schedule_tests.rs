use super::*;
use proptest::prelude::*;

fn xetra() -> ScheduleConfig {
    ScheduleConfig {
        name: "xetra".into(),
        symbols: vec!["SAP-EUR".into()],
        time_zone: Some("Europe/Berlin".into()),
        trading_days: None,
        pre_open: Some("08:00".into()),
        open: Some("09:00".into()),
        closing_call: Some("17:30".into()),
        close: Some("17:35".into()),
        closed: Some("20:00".into()),
        holidays: vec!["2026-12-24".into(), "2026-12-25".into()],
        cycle: None,
    }
}

/// Unix nanoseconds of a local time in `zone`.
fn at(zone: &str, text: &str) -> u64 {
    let civil: jiff::civil::DateTime = text.parse().unwrap();
    let zoned = civil.to_zoned(TimeZone::get(zone).unwrap()).unwrap();
    u64::try_from(zoned.timestamp().as_nanosecond()).unwrap()
}

fn berlin(text: &str) -> u64 {
    at("Europe/Berlin", text)
}

fn utc(text: &str) -> u64 {
    at("UTC", text)
}

#[test]
fn a_trading_day_runs_through_its_phases_in_local_time() {
    let s = Schedule::new(&xetra()).unwrap();
    // 2026-12-01 is a Tuesday.
    let cases = [
        (
            "2026-12-01T07:59:59",
            Phase::Closed,
            "2026-12-01T08:00",
            Phase::PreOpen,
        ),
        (
            "2026-12-01T08:00",
            Phase::PreOpen,
            "2026-12-01T09:00",
            Phase::Continuous,
        ),
        (
            "2026-12-01T12:00",
            Phase::Continuous,
            "2026-12-01T17:30",
            Phase::ClosingCall,
        ),
        (
            "2026-12-01T17:31",
            Phase::ClosingCall,
            "2026-12-01T17:35",
            Phase::PostClose,
        ),
        (
            "2026-12-01T17:35",
            Phase::PostClose,
            "2026-12-01T20:00",
            Phase::Closed,
        ),
        (
            "2026-12-01T21:00",
            Phase::Closed,
            "2026-12-02T08:00",
            Phase::PreOpen,
        ),
    ];
    for (now, phase, next, next_phase) in cases {
        assert_eq!(
            s.position(berlin(now)),
            Position {
                phase,
                next: Some((berlin(next), next_phase))
            },
            "at {now}"
        );
    }
    // Winter: Berlin is UTC+1.
    assert_eq!(berlin("2026-12-01T09:00"), utc("2026-12-01T08:00"));
}

#[test]
fn weekends_and_holidays_stay_closed() {
    let s = Schedule::new(&xetra()).unwrap();
    // Friday evening: next the Monday.
    let friday = s.position(berlin("2026-12-04T20:00"));
    assert_eq!(friday.phase, Phase::Closed);
    assert_eq!(
        friday.next,
        Some((berlin("2026-12-07T08:00"), Phase::PreOpen))
    );
    assert_eq!(s.position(berlin("2026-12-05T12:00")).phase, Phase::Closed);
    // Thursday and Friday are holidays, then the weekend.
    let before = s.position(berlin("2026-12-23T21:00"));
    assert_eq!(
        before.next,
        Some((berlin("2026-12-28T08:00"), Phase::PreOpen))
    );
    assert_eq!(s.position(berlin("2026-12-24T12:00")).phase, Phase::Closed);
}

#[test]
fn daylight_saving_moves_the_utc_instants() {
    let s = Schedule::new(&xetra()).unwrap();
    // Berlin moves to UTC+2 on 2026-03-29: the Friday before opens at
    // 08:00 UTC, the Monday after at 07:00 UTC.
    let friday = s.position(utc("2026-03-27T07:30"));
    assert_eq!(
        friday.next,
        Some((utc("2026-03-27T08:00"), Phase::Continuous))
    );
    let monday = s.position(utc("2026-03-30T06:30"));
    assert_eq!(
        monday.next,
        Some((utc("2026-03-30T07:00"), Phase::Continuous))
    );
    assert_eq!(s.position(utc("2026-03-30T07:00")).phase, Phase::Continuous);
    // New York changes three weeks earlier (2026-03-08): in between, the
    // two markets are an hour closer than usual.
    let mut nyse = xetra();
    nyse.time_zone = Some("America/New_York".into());
    nyse.pre_open = Some("04:00".into());
    nyse.open = Some("09:30".into());
    nyse.closing_call = Some("15:50".into());
    nyse.close = Some("16:00".into());
    let nyse = Schedule::new(&nyse).unwrap();
    let open = nyse.position(utc("2026-03-16T12:00")).next;
    assert_eq!(open, Some((utc("2026-03-16T13:30"), Phase::Continuous)));
    let open = nyse.position(utc("2026-03-06T12:00")).next;
    assert_eq!(open, Some((utc("2026-03-06T14:30"), Phase::Continuous)));
}

#[test]
fn skipped_and_repeated_local_times_have_one_instant_each() {
    let mut config = xetra();
    config.trading_days = Some(vec![
        "mon".into(),
        "tue".into(),
        "wed".into(),
        "thu".into(),
        "fri".into(),
        "sat".into(),
        "SUN".into(),
    ]);
    config.pre_open = Some("01:00".into());
    config.open = Some("02:00".into());
    config.closing_call = Some("02:30".into());
    config.close = Some("03:00".into());
    config.closed = Some("04:00".into());
    let s = Schedule::new(&config).unwrap();
    // 2026-03-29: 02:00-03:00 does not exist in Berlin. Times in it move
    // an hour on (02:30 is 03:30 CEST, 01:30 UTC), and the close at 03:00
    // CEST, now before the call, comes a nanosecond after it.
    let open = s.position(utc("2026-03-29T00:30")).next.unwrap();
    assert_eq!(open, (utc("2026-03-29T01:00"), Phase::Continuous));
    let call = s.position(open.0).next.unwrap();
    assert_eq!(call, (utc("2026-03-29T01:30"), Phase::ClosingCall));
    let close = s.position(call.0).next.unwrap();
    assert_eq!(close, (call.0 + 1, Phase::PostClose));
    // 2026-10-25: 02:00-03:00 happens twice; the first one counts.
    let open = s.position(utc("2026-10-24T23:30")).next.unwrap();
    assert_eq!(open, (utc("2026-10-25T00:00"), Phase::Continuous));
    let close = s.position(utc("2026-10-25T00:40")).next.expect("close");
    assert_eq!(close, (utc("2026-10-25T02:00"), Phase::PostClose));
}

#[test]
fn invalid_schedules_name_the_field() {
    type Change = fn(&mut ScheduleConfig);
    let cases: [(Change, &str); 9] = [
        (
            |c| c.time_zone = Some("Europe/Atlantis".into()),
            "time_zone",
        ),
        (
            |c| c.open = Some("07:00".into()),
            "open: 07:00 is not after pre_open",
        ),
        (
            |c| c.closed = Some("17:35".into()),
            "closed: 17:35 is not after close",
        ),
        (
            |c| c.close = Some("25:00".into()),
            "close: \"25:00\" is not a time",
        ),
        (
            |c| c.trading_days = Some(vec!["monday".into()]),
            "trading_days",
        ),
        (
            |c| c.trading_days = Some(Vec::new()),
            "trading_days: names no day",
        ),
        (|c| c.holidays = vec!["24.12.2026".into()], "holidays"),
        (|c| c.time_zone = None, "time_zone: missing"),
        (|c| c.close = None, "close: missing (give it, or a cycle)"),
    ];
    for (change, expected) in cases {
        let mut config = xetra();
        change(&mut config);
        let error = Schedule::new(&config).unwrap_err().to_string();
        assert!(error.starts_with("schedule \"xetra\": "), "{error}");
        assert!(error.contains(expected), "{error} lacks {expected}");
    }
    let mut empty = xetra();
    empty.symbols.clear();
    assert!(Schedule::new(&empty)
        .unwrap_err()
        .to_string()
        .contains("symbols"));
    let mut twice = xetra();
    twice.name = "other".into();
    let error = build(&[xetra(), twice]).unwrap_err().to_string();
    assert!(error.contains("\"SAP-EUR\" is in both schedule \"xetra\" and schedule \"other\""));
    let mut bad = xetra();
    bad.symbols = vec!["SAP EUR".into()];
    assert!(build(&[bad]).unwrap_err().to_string().contains("symbols"));
}

#[test]
fn steps_walk_the_day_forward_through_the_auctions() {
    use Phase::*;
    assert_eq!(
        steps(Closed, Continuous),
        [PreOpen, OpeningAuction, Continuous]
    );
    assert_eq!(steps(PreOpen, Continuous), [OpeningAuction, Continuous]);
    assert_eq!(
        steps(Continuous, Closed),
        [ClosingCall, ClosingAuction, PostClose, Closed]
    );
    assert_eq!(steps(ClosingCall, PostClose), [ClosingAuction, PostClose]);
    // A node down over a whole close and open runs both.
    assert_eq!(
        steps(Continuous, PreOpen),
        [ClosingCall, ClosingAuction, PostClose, Closed, PreOpen]
    );
    assert!(steps(Continuous, Continuous).is_empty());
    assert!(steps(Halted, Continuous).is_empty());
    assert!(steps(VolatilityAuction, Closed).is_empty());
}

const ZONES: [&str; 5] = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Sydney",
    "Asia/Tokyo",
    "UTC",
];

fn hhmm(minute: u32) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

prop_compose! {
    fn schedules()(
        zone in 0..ZONES.len(),
        days in 1u8..128,
        mut minutes in proptest::collection::btree_set(0u32..1440, 5),
        holidays in proptest::collection::vec((2026i16..2028, 1i8..13, 1i8..29), 0..20),
    ) -> ScheduleConfig {
        let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
        let minutes: Vec<u32> = std::mem::take(&mut minutes).into_iter().collect();
        ScheduleConfig {
            name: "p".into(),
            symbols: vec!["X".into()],
            time_zone: Some(ZONES[zone].into()),
            trading_days: Some((0..7)
                .filter(|i| days & (1 << i) != 0)
                .map(|i| names[i].to_string())
                .collect()),
            pre_open: Some(hhmm(minutes[0])),
            open: Some(hhmm(minutes[1])),
            closing_call: Some(hhmm(minutes[2])),
            close: Some(hhmm(minutes[3])),
            closed: Some(hhmm(minutes[4])),
            holidays: holidays
                .into_iter()
                .map(|(y, m, d)| format!("{y}-{m:02}-{d:02}"))
                .collect(),
            cycle: None,
        }
    }
}

/// The phase each daily change leads to after `phase`.
pub(super) fn successor(phase: Phase) -> Phase {
    let i = DAILY.iter().position(|p| *p == phase).unwrap();
    DAILY[(i + 1) % DAILY.len()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// From any instant, the changes come strictly later each time, in
    /// the day's order, and the phase holds until the next one.
    #[test]
    fn changes_are_later_in_order_and_hold_until_the_next(
        config in schedules(),
        start in utc("2026-01-01T00:00")..utc("2028-12-31T00:00"),
        fractions in proptest::collection::vec(0u64..1000, 12),
    ) {
        let s = Schedule::new(&config).unwrap();
        let mut now = start;
        let mut position = s.position(now);
        for fraction in fractions {
            let (next, phase) = position.next.expect("a trading day within a year");
            prop_assert!(next > now);
            let between = now + ((u128::from(next - now - 1) * u128::from(fraction)) / 1000) as u64;
            prop_assert_eq!(s.position(between).phase, position.phase);
            prop_assert_eq!(s.position(next - 1).phase, position.phase);
            prop_assert_eq!(phase, successor(position.phase));
            let old = position.phase;
            now = next;
            position = s.position(now);
            prop_assert_eq!(position.phase, phase);
            // The scheduler's steps from the old phase end in the new one,
            // through at most the auction between them.
            let walk = steps(old, phase);
            prop_assert_eq!(walk.last(), Some(&phase));
            prop_assert!(walk.len() <= 2, "{:?}", walk);
        }
    }
}
