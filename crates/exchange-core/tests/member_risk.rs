//! Member risk controls end to end in the core: what suspension and
//! market-maker protection emit, determinism and snapshots with risk state,
//! and random streams that must never let an order past a limit.

use std::collections::{BTreeMap, BTreeSet};

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::prelude::*;

fn canceled_with(events: &[Event], reason: CancelReason) -> Vec<OrderId> {
    cancels(events)
        .into_iter()
        .filter(|c| c.1 == reason)
        .map(|c| c.0)
        .collect()
}

#[test]
fn suspension_cancels_every_open_order_with_a_reason_and_allows_cancels() {
    let mut h = Harness::funded(2);
    h.run_checked(add(eth_usd()));
    h.run_checked(deposit(1, "ETH", "10"));
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "90", "1"));
    let b = place_ok(&mut h, limit(1, "b", Side::Sell, "110", "1"));
    let c = place_ok(
        &mut h,
        on("ETH-USD", limit(1, "c", Side::Sell, "3000", "1")),
    );
    let other = place_ok(&mut h, limit(2, "x", Side::Buy, "80", "1"));
    let events = h.run_checked(suspend(1));
    assert_eq!(
        canceled_with(&events, CancelReason::AccountSuspended),
        vec![a, b, c]
    );
    let status = events.last().map(|e| e.kind.clone());
    assert_eq!(
        status,
        Some(EventKind::AccountStatus(AccountStatus {
            account: 1,
            suspended: true,
            canceled: 3,
        }))
    );
    assert_eq!(open_ids(&h), vec![other]);
    // Funds are all available again.
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
    // Cancels and mass cancels are not refused for the suspension.
    let cancel = h.run_checked(cancel_client(1, "a"));
    assert_eq!(reject_reason(&cancel), Some(RejectReason::OrderNotOpen));
    let mass = h.run_checked(mass_cancel(1, None));
    assert_eq!(reject_reason(&mass), None);
    // Deposits and withdrawals still work.
    assert_eq!(reject_reason(&h.run_checked(withdraw(1, "USD", "1"))), None);
    let events = h.run_checked(reinstate(1));
    assert_eq!(
        events.last().map(|e| e.kind.clone()),
        Some(EventKind::AccountStatus(AccountStatus {
            account: 1,
            suspended: false,
            canceled: 0,
        }))
    );
}

#[test]
fn suspending_an_account_before_it_is_funded_holds_once_it_is() {
    let mut h = Harness::funded(0);
    h.run_checked(suspend(7));
    h.run_checked(deposit(7, "USD", "1000"));
    let events = h.run_checked(cmd(limit(7, "a", Side::Buy, "1", "1")));
    assert_eq!(reject_reason(&events), Some(RejectReason::AccountSuspended));
}

#[test]
fn mmp_trips_on_the_fill_that_exceeds_and_cancels_within_the_same_command() {
    let mut h = Harness::funded(3);
    h.run_checked(add(eth_usd()));
    h.run_checked(deposit(1, "ETH", "10"));
    // Quantity above 1.5 trips; the maker quotes three levels.
    h.run_checked(set_mmp(1, "BTC-USD", 1_000, Some("1.5"), None));
    let q1 = place_ok(&mut h, limit(1, "q1", Side::Sell, "100", "1"));
    let q2 = place_ok(&mut h, limit(1, "q2", Side::Sell, "101", "1"));
    let q3 = place_ok(&mut h, limit(1, "q3", Side::Sell, "102", "1"));
    let bid = place_ok(&mut h, limit(1, "bid", Side::Buy, "90", "1"));
    let eth = place_ok(
        &mut h,
        on("ETH-USD", limit(1, "e", Side::Sell, "3000", "1")),
    );
    // The taker's order matches to its end: 1 at 100 then 0.6 at 101.
    let events = h.run_checked(cmd(limit(2, "t", Side::Buy, "101", "1.6")));
    let fills: Vec<_> = trades(&events).iter().map(|t| (t.0, t.1)).collect();
    assert_eq!(
        fills,
        vec![(units("100"), units("1")), (units("101"), units("0.6"))]
    );
    let tripped = events.iter().position(|e| {
        matches!(&e.kind, EventKind::Mmp(m) if m.account == 1
            && m.state == MmpState::Tripped { filled_qty: units("1.6"), fills: 2 })
    });
    let tripped = tripped.expect("a tripped event");
    let last_trade = events
        .iter()
        .rposition(|e| matches!(e.kind, EventKind::Trade(_)))
        .expect("trades");
    assert!(tripped > last_trade);
    // What the maker still had on BTC-USD is canceled, ETH-USD is not.
    assert_eq!(canceled_with(&events, CancelReason::Mmp), vec![q2, q3, bid]);
    assert_eq!(open_ids(&h), vec![eth]);
    assert!(open_order(&h, q1).is_none());
    // New orders on the instrument are refused, elsewhere not.
    let refused = h.run_checked(cmd(limit(1, "n", Side::Sell, "100", "1")));
    assert_eq!(reject_reason(&refused), Some(RejectReason::MmpTripped));
    let elsewhere = h.run_checked(cmd(on("ETH-USD", limit(1, "n", Side::Sell, "3001", "1"))));
    assert_eq!(reject_reason(&elsewhere), None);
    // The account resets it itself.
    let reset = h.run_checked(reset_mmp(1, "BTC-USD"));
    assert!(matches!(
        &reset[0].kind,
        EventKind::Mmp(m) if m.state == MmpState::Reset
    ));
    place_ok(&mut h, limit(1, "n2", Side::Sell, "100", "1"));
}

#[test]
fn mmp_counts_fills_per_window_of_log_time() {
    let mut h = Harness::funded(2);
    // More than 2 fills within 5 ns of log time trips; the harness clock
    // ticks once per command.
    h.run_checked(set_mmp(1, "BTC-USD", 5, None, Some(2)));
    for i in 0..3 {
        place_ok(&mut h, limit(1, &format!("q{i}"), Side::Sell, "100", "1"));
    }
    let fill = |h: &mut Harness, id: &str| {
        let events = h.run_checked(cmd(ioc(limit(2, id, Side::Buy, "100", "0.1"))));
        assert_eq!(trades(&events).len(), 1);
        events
    };
    fill(&mut h, "t1");
    fill(&mut h, "t2");
    // Five commands later the window has closed: the third fill opens a
    // new one instead of tripping.
    for _ in 0..5 {
        h.run_checked(deposit(2, "USD", "1"));
    }
    let events = fill(&mut h, "t3");
    assert!(!events.iter().any(|e| matches!(e.kind, EventKind::Mmp(_))));
    fill(&mut h, "t4");
    let events = fill(&mut h, "t5");
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::Mmp(m)
            if m.state == MmpState::Tripped { filled_qty: units("0.3"), fills: 3 }
    )));
    assert!(open_ids(&h).is_empty());
}

#[test]
fn a_taker_that_trips_its_own_protection_is_canceled_if_it_rests() {
    let mut h = Harness::funded(2);
    h.run_checked(set_mmp(2, "BTC-USD", 100, None, Some(1)));
    place_ok(&mut h, limit(1, "s1", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "s2", Side::Sell, "100", "1"));
    let events = h.run_checked(cmd(limit(2, "t", Side::Buy, "100", "3")));
    assert_eq!(trades(&events).len(), 2);
    let taker = order_id(&events).expect("accepted");
    assert_eq!(canceled_with(&events, CancelReason::Mmp), vec![taker]);
    assert!(open_ids(&h).is_empty());
}

#[test]
fn risk_limits_events_carry_units_and_clearing_restores_the_plain_state() {
    let mut h = Harness::funded(1);
    let plain = h.engine.snapshot();
    let events = h.run_checked(set_limits(1, Some("2"), Some("1000"), Some(5), Some(100)));
    assert_eq!(
        events[0].kind,
        EventKind::RiskLimits(RiskLimits {
            account: 1,
            max_order_qty: Some(units("2")),
            max_order_notional: Some(units("1000")),
            max_open_orders: Some(5),
            price_band_bps: Some(100),
        })
    );
    let cleared = h.run_checked(set_limits(1, None, None, None, None));
    assert!(matches!(&cleared[0].kind, EventKind::RiskLimits(l) if l.max_order_qty.is_none()));
    // Only the sequence and the clock moved: the state bytes are those of
    // an account that never had limits.
    let after = h.engine.snapshot();
    assert_eq!(plain.len(), after.len());
    assert_eq!(plain[24..], after[24..]);
}

/// A script touching every control, with trades, for the determinism and
/// snapshot tests.
fn script() -> Vec<Command> {
    vec![
        add(btc_usd()),
        deposit(1, "USD", "100000"),
        deposit(1, "BTC", "100"),
        deposit(2, "USD", "100000"),
        deposit(2, "BTC", "100"),
        set_limits(1, Some("5"), Some("50000"), Some(3), Some(2000)),
        set_mmp(2, "BTC-USD", 50, Some("3"), Some(10)),
        cmd(limit(2, "a", Side::Sell, "100", "1")),
        cmd(limit(2, "b", Side::Sell, "101", "2")),
        cmd(limit(1, "x", Side::Buy, "100", "1.5")),
        cmd(limit(1, "y", Side::Buy, "99", "1")),
        suspend(3),
        cmd(limit(1, "z", Side::Buy, "130", "1")),
        cmd(limit(1, "w", Side::Buy, "101", "2")),
        cmd(limit(2, "c", Side::Sell, "99", "1")),
        reset_mmp(2, "BTC-USD"),
        cmd(limit(2, "d", Side::Sell, "102", "1")),
        suspend(1),
        reinstate(1),
        cmd(limit(1, "v", Side::Buy, "102", "0.5")),
    ]
}

fn events_of(engine: &mut Engine, commands: &[Command], from_ts: u64) -> Vec<Event> {
    let mut out = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        engine.apply(
            &Stamped {
                ts: from_ts + i as u64,
                command: command.clone(),
            },
            &mut out,
        );
    }
    out
}

#[test]
fn same_commands_give_the_same_events_and_state_hash() {
    let commands = script();
    let (mut a, mut b) = (Engine::new(), Engine::new());
    let (ea, eb) = (
        events_of(&mut a, &commands, 1),
        events_of(&mut b, &commands, 1),
    );
    assert_eq!(ea, eb);
    assert_eq!(a.state_hash(), b.state_hash());
    // The script does exercise the controls.
    let names: BTreeSet<_> = ea.iter().map(|e| e.kind.name()).collect();
    for name in ["risk_limits", "account_status", "mmp", "trade", "canceled"] {
        assert!(names.contains(name), "no {name} event");
    }
}

#[test]
fn snapshot_restore_continues_exactly_at_every_point() {
    let commands = script();
    for split in 0..=commands.len() {
        let mut original = Engine::new();
        events_of(&mut original, &commands[..split], 1);
        let snapshot = original.snapshot();
        let mut restored = Engine::restore(&snapshot).expect("restore");
        assert_eq!(restored.snapshot(), snapshot, "at {split}");
        let rest = &commands[split..];
        let ts = split as u64 + 1;
        assert_eq!(
            events_of(&mut original, rest, ts),
            events_of(&mut restored, rest, ts),
            "after restoring at {split}"
        );
        assert_eq!(original.state_hash(), restored.state_hash());
    }
}

#[test]
fn a_damaged_risk_section_is_refused() {
    let mut engine = Engine::new();
    events_of(&mut engine, &script(), 1);
    let snapshot = engine.snapshot();
    // Each cut inside the trailing section must be refused, not misread.
    let mut plain = Engine::new();
    events_of(&mut plain, &script()[..5], 1);
    for cut in 1..40 {
        let short = &snapshot[..snapshot.len() - cut];
        assert!(Engine::restore(short).is_err(), "cut {cut}");
    }
    let mut extra = snapshot.clone();
    extra.push(0);
    assert!(Engine::restore(&extra).is_err());
}

// ---- random streams ----

fn price(offset: i64) -> String {
    format!("{}", 100 + offset)
}

fn risk_command() -> impl Strategy<Value = Command> {
    let account = 1u64..=3;
    prop_oneof![
        4 => (
            account.clone(),
            prop::option::of(prop::sample::select(vec!["0.5", "1", "3"])),
            prop::option::of(prop::sample::select(vec!["60", "150", "400"])),
            prop::option::of(1u32..=3),
            prop::option::of(prop::sample::select(vec![100u32, 500, 2000])),
        )
            .prop_map(|(a, q, n, o, b)| set_limits(a, q, n, o, b)),
        2 => account.clone().prop_map(suspend),
        3 => account.clone().prop_map(reinstate),
        3 => (
            account.clone(),
            1u64..=8,
            prop::option::of(prop::sample::select(vec!["0.5", "2"])),
            prop::option::of(1u32..=3),
        )
            .prop_map(|(a, w, q, c)| set_mmp(a, "BTC-USD", w, q, c)),
        3 => account.clone().prop_map(|a| reset_mmp(a, "BTC-USD")),
        1 => (account.clone(), account.clone()).prop_map(|(o, s)| link_sub(o, s)),
        2 => (
            account.clone(),
            account,
            prop::sample::select(vec!["USD", "BTC"]),
            prop::sample::select(vec!["0.5", "100", "5000"]),
        )
            .prop_map(|(f, t, asset, amount)| internal_transfer(f, t, asset, amount)),
    ]
}

fn trading_command() -> impl Strategy<Value = Command> {
    let coid = (0u8..5).prop_map(|i| format!("c{i}"));
    prop_oneof![
        10 => (
            1u64..=3,
            coid.clone(),
            any::<bool>(),
            -6i64..=6,
            prop::sample::select(vec!["0.3", "1", "2", "4"]),
            0u8..4,
        )
            .prop_map(|(a, id, buy, off, qty, kind)| {
                let side = if buy { Side::Buy } else { Side::Sell };
                let place = limit(a, &id, side, &price(off), qty);
                cmd(match kind {
                    0 => ioc(place),
                    1 => market(a, &id, side, qty),
                    _ => place,
                })
            }),
        4 => (
            1u64..=3,
            coid.clone(),
            prop::option::of(-6i64..=6),
            prop::option::of(prop::sample::select(vec!["0.5", "1", "3"])),
        )
            .prop_map(|(a, id, p, q)| replace(a, &id, p.map(price).as_deref(), q)),
        2 => (1u64..=3, coid).prop_map(|(a, id)| cancel_client(a, &id)),
    ]
}

/// What the events have said about each account's controls so far.
#[derive(Default)]
struct Model {
    limits: BTreeMap<AccountId, RiskLimits>,
    suspended: BTreeSet<AccountId>,
    tripped: BTreeSet<AccountId>,
    last_trade: Option<u64>,
}

impl Model {
    fn band_ok(&self, account: AccountId, price: u64) -> bool {
        let Some(bps) = self.limits.get(&account).and_then(|l| l.price_band_bps) else {
            return true;
        };
        let Some(reference) = self.last_trade else {
            return true;
        };
        let width = u128::from(reference) * u128::from(bps) / 10_000;
        let (low, high) = (
            u128::from(reference).saturating_sub(width),
            u128::from(reference) + width,
        );
        (low..=high).contains(&u128::from(price))
    }

    /// Checks an accepted order against its account's controls.
    fn check_accepted(
        &self,
        a: &Accepted,
        open_before: &BTreeMap<AccountId, u32>,
    ) -> Result<(), String> {
        if self.suspended.contains(&a.account) || self.tripped.contains(&a.account) {
            return Err(format!(
                "accepted order {} of a blocked account",
                a.order_id
            ));
        }
        let Some(l) = self.limits.get(&a.account) else {
            return Ok(());
        };
        if l.max_order_qty.is_some_and(|m| a.qty > m) {
            return Err(format!("order {} above the quantity limit", a.order_id));
        }
        if let (Some(m), Some(p)) = (l.max_order_notional, a.price) {
            if u128::from(p) * u128::from(a.qty) / u128::from(UNITS_PER_WHOLE) > u128::from(m) {
                return Err(format!("order {} above the notional limit", a.order_id));
            }
        }
        if a.price.is_some_and(|p| !self.band_ok(a.account, p)) {
            return Err(format!("order {} outside the band", a.order_id));
        }
        if a.tif == TimeInForce::Gtc
            && l.max_open_orders
                .is_some_and(|m| open_before.get(&a.account).copied().unwrap_or(0) >= m)
        {
            return Err(format!("order {} above the open-order limit", a.order_id));
        }
        Ok(())
    }

    /// Checks one command's events against the controls as they stood
    /// before it, then learns what they changed.
    fn check(
        &mut self,
        events: &[Event],
        open_before: &BTreeMap<AccountId, u32>,
        engine: &Engine,
    ) -> Result<(), String> {
        for event in events {
            match &event.kind {
                EventKind::Accepted(a) => self.check_accepted(a, open_before)?,
                EventKind::Replaced(r)
                    if self.suspended.contains(&r.account) || self.tripped.contains(&r.account) =>
                {
                    return Err(format!(
                        "replaced order {} of a blocked account",
                        r.order_id
                    ));
                }
                EventKind::Trade(t) => self.last_trade = Some(t.price),
                EventKind::RiskLimits(l) => {
                    self.limits.insert(l.account, l.clone());
                }
                EventKind::AccountStatus(s) => {
                    if s.suspended {
                        self.suspended.insert(s.account);
                    } else {
                        self.suspended.remove(&s.account);
                    }
                }
                EventKind::Mmp(m) => match m.state {
                    MmpState::Tripped { .. } => {
                        self.tripped.insert(m.account);
                    }
                    MmpState::Reset | MmpState::Removed => {
                        self.tripped.remove(&m.account);
                    }
                    MmpState::Set { .. } => {}
                },
                _ => {}
            }
        }
        for order in engine.open_orders() {
            if self.suspended.contains(&order.account) || self.tripped.contains(&order.account) {
                return Err(format!(
                    "order {} open for a blocked account",
                    order.order_id
                ));
            }
        }
        Ok(())
    }
}

fn open_counts(engine: &Engine) -> BTreeMap<AccountId, u32> {
    let mut counts = BTreeMap::new();
    for order in engine.open_orders() {
        *counts.entry(order.account).or_default() += 1;
    }
    counts
}

proptest! {
    #![proptest_config(proptest_config(64))]

    #[test]
    fn random_streams_with_controls_keep_invariants_and_never_pass_a_limit(
        body in prop::collection::vec(
            prop_oneof![1 => risk_command(), 4 => trading_command()],
            50..200,
        )
    ) {
        let mut engine = Engine::new();
        let mut setup = vec![add(btc_usd())];
        for account in 1..=3 {
            setup.push(deposit(account, "USD", "100000"));
            setup.push(deposit(account, "BTC", "100"));
        }
        events_of(&mut engine, &setup, 1);
        let mut model = Model::default();
        for (i, command) in body.iter().enumerate() {
            let before = open_counts(&engine);
            let mut out = Vec::new();
            engine.apply(&Stamped { ts: 100 + i as u64, command: command.clone() }, &mut out);
            if let Err(violation) = engine.audit() {
                prop_assert!(false, "after {}: {}", describe(command), violation);
            }
            if let Err(violation) = model.check(&out, &before, &engine) {
                prop_assert!(
                    false,
                    "after {}: {}\n{}",
                    describe(command),
                    violation,
                    describe_all(&body[..=i])
                );
            }
        }
        let restored = Engine::restore(&engine.snapshot());
        prop_assert!(restored.is_ok());
        prop_assert_eq!(restored.map(|r| r.state_hash()).unwrap_or_default(), engine.state_hash());
    }
}
