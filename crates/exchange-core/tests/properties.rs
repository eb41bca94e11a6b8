//! Properties of the engine on random command streams with scarce,
//! random funding: after every command the engine's own audit passes, and
//! the event stream, followed over the whole run, keeps every order's
//! quantity and every asset's supply accounted for.

use std::collections::BTreeMap;

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// One order as its events describe it, in units.
#[derive(Debug)]
struct Tracked {
    side: Side,
    /// The limit as accepted or last replaced; `None` for a market order.
    price: Option<u64>,
    /// Total quantity as accepted, or as the last replace set it.
    original: u64,
    filled: u64,
    /// Canceled and expired since `original` was set.
    gone: u64,
}

#[derive(Default)]
struct Ledger {
    orders: BTreeMap<OrderId, Tracked>,
    /// Deposits minus withdrawals per asset, from the commands that were
    /// not refused.
    supply: BTreeMap<AssetCode, u64>,
    /// Maker and taker fee in basis points per listed instrument.
    fees: BTreeMap<Symbol, (i32, i32)>,
}

impl Ledger {
    fn order(&mut self, id: OrderId) -> Result<&mut Tracked, String> {
        self.orders
            .get_mut(&id)
            .ok_or(format!("event for order {id} before it was accepted"))
    }

    /// Follows one command's events; checks what each event alone implies.
    fn follow(&mut self, command: &Command, events: &[Event]) -> Result<(), String> {
        let refused = events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Rejected(_)));
        match command {
            Command::Deposit(t) if !refused => {
                *self.supply.entry(t.asset).or_default() += t.amount.to_units().unwrap();
            }
            Command::AddInstrument(spec) if !refused => {
                let bps = (spec.maker_fee_bps, spec.taker_fee_bps);
                self.fees.insert(spec.symbol, bps);
            }
            Command::Withdraw(t) if !refused => {
                let supply = self.supply.entry(t.asset).or_default();
                *supply = supply
                    .checked_sub(t.amount.to_units().unwrap())
                    .ok_or("withdrew more than deposited")?;
            }
            _ => {}
        }
        for event in events {
            self.follow_event(&event.kind)?;
        }
        Ok(())
    }

    fn follow_event(&mut self, kind: &EventKind) -> Result<(), String> {
        match kind {
            EventKind::Accepted(accepted) => {
                let tracked = Tracked {
                    side: accepted.side,
                    price: accepted.price,
                    original: accepted.qty,
                    filled: 0,
                    gone: 0,
                };
                let id = accepted.order_id;
                if self.orders.insert(id, tracked).is_some() {
                    return Err(format!("order id {id} accepted twice"));
                }
            }
            EventKind::Trade(t) => self.follow_trade(t)?,
            EventKind::Canceled(c) => {
                let order = self.order(c.order_id)?;
                order.gone += c.canceled_qty;
                check_filled(c.order_id, order, c.filled_qty)?;
                check_leaves(c.order_id, order, c.leaves_qty)?;
            }
            EventKind::Expired(e) => {
                let order = self.order(e.order_id)?;
                order.gone += e.expired_qty;
                check_filled(e.order_id, order, e.filled_qty)?;
                check_leaves(e.order_id, order, 0)?;
            }
            EventKind::Replaced(r) => {
                let order = self.order(r.order_id)?;
                order.price = Some(r.price);
                order.original = r.qty;
                order.gone = 0;
                check_leaves(r.order_id, order, r.leaves_qty)?;
            }
            EventKind::Balance(b) if b.available > b.total => {
                return Err(format!(
                    "account {} {}: available {} above total {}",
                    b.account, b.asset, b.available, b.total
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks a trade against both orders as their events left them.
    fn follow_trade(&mut self, t: &Trade) -> Result<(), String> {
        let (price, qty) = (t.price, t.qty);
        let (maker_id, taker_id) = (t.maker_order_id, t.taker_order_id);
        let (maker_bps, taker_bps) = self.fees[&t.symbol];
        // A tick times a lot is a whole number of quote units, so the
        // notional is exact; fees round toward zero.
        let notional = i128::from(price) * i128::from(qty) / 100_000_000;
        let fee = |bps: i32| i64::try_from(notional * i128::from(bps) / 10_000).unwrap();
        if (t.maker_fee, t.taker_fee) != (fee(maker_bps), fee(taker_bps)) {
            return Err(format!(
                "fees {}/{} on notional {notional} at {maker_bps}/{taker_bps} bps",
                t.maker_fee, t.taker_fee
            ));
        }
        if t.maker_account == t.taker_account {
            return Err(format!("account {} traded with itself", t.maker_account));
        }
        let maker = self.order(maker_id)?;
        if maker.price != Some(price) {
            return Err(format!(
                "trade at {price} but maker {maker_id} rests at {:?}",
                maker.price
            ));
        }
        maker.filled += qty;
        check_leaves(maker_id, maker, t.maker_leaves_qty)?;
        let taker = self.order(taker_id)?;
        if taker.side != t.aggressor_side {
            return Err(format!(
                "taker {taker_id} is a {:?} but the aggressor a {:?}",
                taker.side, t.aggressor_side
            ));
        }
        let within = match (taker.side, taker.price) {
            (_, None) => true,
            (Side::Buy, Some(limit)) => price <= limit,
            (Side::Sell, Some(limit)) => price >= limit,
        };
        if !within {
            return Err(format!(
                "trade at {price} beyond taker {taker_id}'s limit {:?}",
                taker.price
            ));
        }
        taker.filled += qty;
        check_leaves(taker_id, taker, t.taker_leaves_qty)?;
        Ok(())
    }

    /// Checks the ledger against the engine's state after a command.
    fn reconcile(&self, engine: &Engine) -> Result<(), String> {
        let open: BTreeMap<OrderId, _> = engine
            .open_orders()
            .into_iter()
            .map(|o| (o.order_id, o))
            .collect();
        for (id, order) in &self.orders {
            let (leaves, filled) = match open.get(id) {
                Some(o) => (o.qty - o.filled_qty, o.filled_qty),
                None => (0, order.filled),
            };
            if filled != order.filled || order.filled + leaves + order.gone != order.original {
                return Err(format!(
                    "order {id}: filled {} (engine {filled}) + open {leaves} \
                     + canceled/expired {} != {}",
                    order.filled, order.gone, order.original
                ));
            }
        }
        if let Some(id) = open.keys().find(|id| !self.orders.contains_key(id)) {
            return Err(format!("order {id} is open but was never accepted"));
        }
        let mut held: BTreeMap<AssetCode, u64> = BTreeMap::new();
        for b in engine.balances() {
            *held.entry(b.asset).or_default() += b.total;
        }
        let moved: BTreeMap<AssetCode, u64> = self
            .supply
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| (*k, *v))
            .collect();
        if held != moved {
            return Err(format!(
                "balances sum to {held:?} but deposits minus withdrawals are {moved:?}"
            ));
        }
        Ok(())
    }
}

fn check_leaves(id: OrderId, order: &Tracked, leaves: u64) -> Result<(), String> {
    if order.filled + order.gone + leaves != order.original {
        return Err(format!(
            "order {id}: event says {leaves} open but {order:?}"
        ));
    }
    Ok(())
}

fn check_filled(id: OrderId, order: &Tracked, filled: u64) -> Result<(), String> {
    if order.filled != filled {
        return Err(format!(
            "order {id}: event says {filled} filled but trades say {}",
            order.filled
        ));
    }
    Ok(())
}

/// The last balance and book event of a command must describe the state it
/// left: the event stream alone can rebuild balances and books.
fn events_match_state(engine: &Engine, events: &[Event]) -> Result<(), String> {
    let mut balances = BTreeMap::new();
    let mut levels = BTreeMap::new();
    for event in events {
        match &event.kind {
            EventKind::Balance(b) => {
                balances.insert((b.account, b.asset), (b.total, b.available));
            }
            EventKind::Book(b) => {
                levels.insert((b.symbol, b.side, b.price), b.qty);
            }
            _ => {}
        }
    }
    for ((account, asset), reported) in balances {
        if engine.balance(account, &asset) != Some(reported) {
            return Err(format!(
                "account {account} {asset}: last event {reported:?} but state {:?}",
                engine.balance(account, &asset)
            ));
        }
    }
    for ((symbol, side, price), reported) in levels {
        let book = engine
            .book(&symbol, usize::MAX)
            .ok_or("book event for an unknown symbol")?;
        let side_levels = if side == Side::Buy {
            book.bids
        } else {
            book.asks
        };
        let actual = side_levels
            .iter()
            .find(|(p, _)| *p == price)
            .map_or(0, |(_, q)| *q);
        if actual != reported {
            return Err(format!(
                "{symbol} {side:?} {price}: last event {reported} but level holds {actual}"
            ));
        }
    }
    Ok(())
}

/// Where a snapshot's header (magic, last event number, time) ends.
const HEADER_END: usize = 24;

/// The whole state but the event counter and the clock: what a refused
/// command must leave exactly as it was, down to the byte.
fn state_without_clock(engine: &Engine) -> Vec<u8> {
    engine.snapshot()[HEADER_END..].to_vec()
}

fn check_stream(commands: &[Command]) -> Result<(), String> {
    let mut engine = Engine::new();
    let mut ledger = Ledger::default();
    let mut last_seq = 0;
    for (index, command) in commands.iter().enumerate() {
        let before = state_without_clock(&engine);
        let mut events = Vec::new();
        engine.apply(
            &Stamped {
                ts: index as u64 + 1,
                command: command.clone(),
            },
            &mut events,
        );
        let checked = events
            .iter()
            .try_for_each(|e| {
                last_seq += 1;
                if e.seq != last_seq || e.ts != index as u64 + 1 {
                    return Err(format!(
                        "event seq {} ts {} as event {last_seq} of command {index}",
                        e.seq, e.ts
                    ));
                }
                Ok(())
            })
            .and_then(|()| engine.audit())
            .and_then(|()| {
                let refused = matches!(
                    &events[..],
                    [Event {
                        kind: EventKind::Rejected(_),
                        ..
                    }]
                );
                if refused && state_without_clock(&engine) != before {
                    return Err("a refused command changed the state".to_string());
                }
                Ok(())
            })
            .and_then(|()| ledger.follow(command, &events))
            .and_then(|()| ledger.reconcile(&engine))
            .and_then(|()| events_match_state(&engine, &events));
        if let Err(violation) = checked {
            return Err(format!(
                "{violation}\nafter command {index}:\n{}\nevents: {events:#?}",
                describe_all(&commands[..=index])
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn every_command_keeps_the_books_and_the_money_straight(
        commands in command_stream(Profile::Scarce)
    ) {
        if let Err(violation) = check_stream(&commands) {
            prop_assert!(false, "{}", violation);
        }
    }

    #[test]
    fn generous_streams_keep_the_same_invariants(commands in command_stream(Profile::Generous)) {
        if let Err(violation) = check_stream(&commands) {
            prop_assert!(false, "{}", violation);
        }
    }
}

/// How often each interesting outcome occurs over some streams, so that a
/// change to the generator cannot quietly stop exercising a rule.
fn outcome_counts(profile: Profile, streams: usize) -> BTreeMap<String, usize> {
    let mut runner = TestRunner::deterministic();
    let strategy = command_stream(profile);
    let mut counts = BTreeMap::new();
    for _ in 0..streams {
        let commands = strategy.new_tree(&mut runner).unwrap().current();
        let mut engine = Engine::new();
        for events in run_all(&mut engine, &commands) {
            for event in &events {
                let key = match &event.kind {
                    EventKind::Rejected(r) => format!("{}:{}", r.command, r.reason),
                    EventKind::Canceled(c) => {
                        format!(
                            "canceled:{}{}",
                            c.reason.as_str(),
                            if c.leaves_qty > 0 { ":partial" } else { "" }
                        )
                    }
                    EventKind::Expired(x) if x.filled_qty == 0 => "expired:unfilled".to_string(),
                    EventKind::Trade(t) if t.maker_leaves_qty == 0 => {
                        "trade:maker_done".to_string()
                    }
                    EventKind::Accepted(a) if a.order_type == OrderType::MarketToLimit => {
                        "accepted:market_to_limit".to_string()
                    }
                    EventKind::Accepted(a) => match a.ext.as_deref() {
                        Some(x) if x.display_qty.is_some() => "accepted:iceberg".to_string(),
                        Some(x) if x.funds.is_some() => "accepted:funds".to_string(),
                        _ => "accepted".to_string(),
                    },
                    other => other.name().to_string(),
                };
                *counts.entry(key).or_insert(0) += 1;
            }
            let replace_traded = events
                .iter()
                .any(|e| matches!(e.kind, EventKind::Replaced(_)))
                && events.iter().any(|e| matches!(e.kind, EventKind::Trade(_)));
            if replace_traded {
                *counts.entry("replace_then_trade".to_string()).or_insert(0) += 1;
            }
        }
    }
    counts
}

#[test]
fn random_streams_reach_every_interesting_outcome() {
    let scarce = outcome_counts(Profile::Scarce, 24);
    let generous = outcome_counts(Profile::Generous, 24);
    eprintln!("scarce: {scarce:#?}\ngenerous: {generous:#?}");
    let common = [
        "trade",
        "trade:maker_done",
        "replaced",
        "replace_then_trade",
        "expired",
        "expired:unfilled",
        "canceled:requested",
        "canceled:mass_cancel",
        "canceled:self_trade_prevention",
        "canceled:self_trade_prevention:partial",
        "status",
        "place:duplicate_client_order_id",
        "place:post_only_would_take",
        "place:post_only_not_allowed",
        "place:instrument_halted",
        "place:unknown_account",
        "place:fee_account_cannot_trade",
        "place:price_not_on_tick",
        "cancel:order_not_open",
        "cancel:unknown_order",
        "replace:replace_below_filled",
        "replace:nothing_to_replace",
        "replace:duplicate_client_order_id",
        "accepted:iceberg",
        "accepted:funds",
        "place:invalid_display_qty",
        "place:funds_not_allowed",
        "triggered",
        "canceled:one_cancels_other",
        "place:stop_would_trigger_immediately",
        "replace:stop_price_not_allowed",
        "accepted:market_to_limit",
        "place:market_to_limit_no_opposite",
        "place:invalid_min_qty",
    ];
    for key in common {
        assert!(
            scarce.get(key).copied().unwrap_or(0) > 0,
            "scarce streams never produce {key}: {scarce:#?}"
        );
        assert!(
            generous.get(key).copied().unwrap_or(0) > 0,
            "generous streams never produce {key}: {generous:#?}"
        );
    }
    for key in [
        "place:insufficient_funds",
        "withdraw:insufficient_funds",
        "place:price_outside_collar",
    ] {
        assert!(
            scarce.get(key).copied().unwrap_or(0) > 0,
            "scarce streams never produce {key}: {scarce:#?}"
        );
    }
    for key in [
        "place:insufficient_funds",
        "replace:insufficient_funds",
        "place:price_outside_collar",
    ] {
        assert_eq!(
            generous.get(key),
            None,
            "generous streams must not produce {key}"
        );
    }
}

#[test]
fn a_snapshot_header_is_magic_then_event_number_then_time() {
    let fresh = Engine::new();
    let mut refused = fresh.clone();
    let mut out = Vec::new();
    let cancel = Command::Cancel(Cancel {
        account: 1,
        order: OrderRef::Id(7),
    });
    refused.apply(
        &Stamped {
            ts: 5,
            command: cancel,
        },
        &mut out,
    );
    assert_eq!(reject_reason(&out), Some(RejectReason::UnknownOrder));
    let (before, after) = (fresh.snapshot(), refused.snapshot());
    assert_eq!(before[..8], after[..8]);
    assert_eq!(after[8..16], 1u64.to_le_bytes());
    assert_eq!(after[16..HEADER_END], 5u64.to_le_bytes());
    assert_eq!(before[HEADER_END..], after[HEADER_END..]);
}
