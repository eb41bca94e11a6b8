//! Differential tests: the engine against the reference matcher in
//! `model`, on random streams with generous funding and no collar. After
//! every command both must have said the same (accepts, rejects and their
//! reasons, trades, cancels, expiries, replaces, stops triggered) and hold
//! the same books and open orders (untriggered stops included).

#[path = "differential/midpoint.rs"]
mod midpoint_cases;
mod model;

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;
use model::published::{publish, published_book, Published};
use model::{Ev, Model, OpenOrder};
use proptest::prelude::*;

/// The engine's events as [`Ev`]s. Transfers and listings are not modeled,
/// so their events (rejects included) are dropped.
pub fn normalize(events: &[Event]) -> Vec<Ev> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Accepted(a) => Some(Ev::Accepted(a.order_id)),
            EventKind::Rejected(r) => {
                let modeled = !matches!(r.command, "deposit" | "withdraw" | "add_instrument");
                modeled.then_some(Ev::Rejected(r.command, r.reason))
            }
            EventKind::Trade(t) => Some(Ev::Trade {
                symbol: t.symbol,
                price: t.price,
                qty: t.qty,
                maker_order_id: t.maker_order_id,
                taker_order_id: t.taker_order_id,
                maker_account: t.maker_account,
                taker_account: t.taker_account,
                aggressor_side: t.aggressor_side,
            }),
            EventKind::Canceled(c) => Some(Ev::Canceled {
                order_id: c.order_id,
                reason: c.reason,
                canceled_qty: c.canceled_qty,
                filled_qty: c.filled_qty,
                leaves_qty: c.leaves_qty,
            }),
            EventKind::Expired(e) => Some(Ev::Expired {
                order_id: e.order_id,
                expired_qty: e.expired_qty,
                filled_qty: e.filled_qty,
            }),
            EventKind::Replaced(r) => Some(Ev::Replaced {
                order_id: r.order_id,
                client_order_id: r.client_order_id,
                price: r.price,
                qty: r.qty,
                leaves_qty: r.leaves_qty,
                stop_price: r.stop_price.map(std::num::NonZeroU64::get),
            }),
            EventKind::Status(s) => Some(Ev::Status(s.symbol, s.status)),
            EventKind::Triggered(t) => Some(Ev::Triggered {
                order_id: t.order_id,
                stop_price: t.stop_price,
                last_price: t.last_price,
            }),
            EventKind::InstrumentAdded(_)
            | EventKind::InstrumentRules(_)
            | EventKind::Balance(_)
            | EventKind::Book(_)
            | EventKind::MassCanceled(_)
            | EventKind::RiskLimits(_)
            | EventKind::AccountStatus(_)
            | EventKind::Mmp(_)
            | EventKind::SubAccountLinked(_)
            | EventKind::Phase(_)
            | EventKind::Indicative(_)
            | EventKind::Auction(_)
            | EventKind::ReferencePrice(_)
            | EventKind::Error(_) => None,
        })
        .collect()
}

fn engine_open_orders(engine: &Engine) -> Vec<OpenOrder> {
    let mut all: Vec<OpenOrder> = engine
        .open_orders()
        .into_iter()
        .map(|o| OpenOrder {
            order_id: o.order_id,
            account: o.account,
            client_order_id: o.client_order_id.to_string(),
            symbol: o.symbol.to_string(),
            side: o.side,
            price: o.price,
            qty: o.qty,
            filled_qty: o.filled_qty,
            stop_price: o.stop_price,
            hidden: o.hidden,
        })
        .collect();
    all.sort();
    all
}

/// Runs `commands` through both and describes the first disagreement.
/// Applies the stream's `index`th command, stamped with its position.
fn apply_at(engine: &mut Engine, index: usize, command: &Command) -> Vec<Event> {
    let mut events = Vec::new();
    let stamped = Stamped {
        ts: index as u64 + 1,
        command: command.clone(),
    };
    engine.apply(&stamped, &mut events);
    events
}

fn compare(commands: &[Command]) -> Result<(), String> {
    let mut engine = Engine::new();
    let mut model = Model::default();
    let mut published = Published::new();
    for (index, command) in commands.iter().enumerate() {
        let events = apply_at(&mut engine, index, command);
        publish(&mut published, &events);
        let expected = model.apply(command);
        let actual = normalize(&events);
        let context = || {
            format!(
                "after command {index}:\n{}",
                describe_all(&commands[..=index])
            )
        };
        if expected != actual {
            return Err(format!(
                "events differ {}\nmodel:  {expected:?}\nengine: {actual:?}",
                context()
            ));
        }
        for symbol in model.symbols() {
            let (expected, actual) = (model.book(&symbol), engine.book(&symbol, usize::MAX));
            if expected != actual {
                return Err(format!(
                    "{symbol} books differ {}\nmodel:  {expected:?}\nengine: {actual:?}",
                    context()
                ));
            }
            // Market data, built from the events alone, shows the model's
            // book too: never a hidden order.
            let events_book = published_book(&published, symbol);
            if expected.as_ref() != Some(&events_book) {
                return Err(format!(
                    "{symbol} published levels differ {}\nmodel:  {expected:?}\n\
                     events: {events_book:?}",
                    context()
                ));
            }
        }
        let (expected, actual) = (model.open_orders(), engine_open_orders(&engine));
        if expected != actual {
            return Err(format!(
                "open orders differ {}\nmodel:  {expected:?}\nengine: {actual:?}",
                context()
            ));
        }
        engine
            .audit()
            .and_then(|()| check_icebergs(&engine, &model))
            .map_err(|broken| format!("{broken} {}", context()))?;
    }
    Ok(())
}

/// The iceberg rule, after every command: a resting iceberg shows
/// `min(display, open)` and hides the rest, unless a fill took part of its
/// slice and stopped inside it; the rest of that slice then stays shown
/// until it fills (TSX, Xetra, Coinbase). The split is the model's too.
fn check_icebergs(engine: &Engine, model: &Model) -> Result<(), String> {
    let expected = model.icebergs();
    let mut seen = 0;
    for order in engine.open_orders() {
        let id = order.order_id;
        let (actual, want) = (engine.iceberg(id), expected.get(&id));
        let (Some(view), Some(&(display, shown, hidden, cut))) = (actual, want) else {
            if actual.is_some() || want.is_some() {
                return Err(format!("order {id}: engine {actual:?}, model {want:?}"));
            }
            continue;
        };
        seen += 1;
        let split = (view.display_qty, view.shown_qty, view.hidden_qty);
        if split != (display, shown, hidden) {
            return Err(format!(
                "iceberg {id}: engine {split:?}, model {:?}",
                (display, shown, hidden)
            ));
        }
        let open = order.qty - order.filled_qty;
        let full = display.min(open);
        let whole = view.shown_qty + view.hidden_qty == open;
        if !whole
            || view.shown_qty == 0
            || view.shown_qty > full
            || (!cut && view.shown_qty != full)
        {
            return Err(format!(
                "iceberg {id} of {open} open, display {display}: shows {}, hides {}",
                view.shown_qty, view.hidden_qty
            ));
        }
    }
    if seen != expected.len() {
        return Err(format!(
            "the model has icebergs the engine does not: {expected:?}"
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(256))]

    #[test]
    fn engine_agrees_with_the_reference_model(
        commands in command_stream_with_midpoint(Profile::Generous)
    ) {
        if let Err(divergence) = compare(&commands) {
            prop_assert!(false, "{}", divergence);
        }
    }
}

/// Hand-written streams that pin down each self-trade prevention mode and
/// fill-or-kill; both sides must agree and the model must say what the
/// documentation says.
fn setup() -> Vec<Command> {
    vec![
        Command::AddInstrument(Box::new(btc_usd())),
        deposit(1, "USD", "1000000"),
        deposit(1, "BTC", "100"),
        deposit(2, "USD", "1000000"),
        deposit(2, "BTC", "100"),
    ]
}

fn with_stp(mut place: Place, stp: SelfTradePrevention) -> Command {
    place.stp = stp;
    Command::Place(place)
}

fn model_events(commands: &[Command]) -> Vec<Vec<Ev>> {
    let mut model = Model::default();
    commands.iter().map(|c| model.apply(c)).collect()
}

fn canceled(order_id: OrderId, canceled: &str, leaves: &str) -> Ev {
    Ev::Canceled {
        order_id,
        reason: CancelReason::SelfTrade,
        canceled_qty: units(canceled),
        filled_qty: 0,
        leaves_qty: units(leaves),
    }
}

#[test]
fn decrement_reduces_both_by_the_smaller_and_cancels_the_smaller() {
    let mut commands = setup();
    commands.push(Command::Place(limit(
        1,
        "rest",
        Side::Sell,
        "100",
        "0.0005",
    )));
    commands.push(with_stp(
        limit(1, "take", Side::Buy, "100", "0.0002"),
        SelfTradePrevention::Decrement,
    ));
    compare(&commands).unwrap();
    let last = model_events(&commands).pop().unwrap();
    assert_eq!(
        last,
        vec![
            Ev::Accepted(2),
            canceled(1, "0.0002", "0.0003"),
            canceled(2, "0.0002", "0"),
        ]
    );
}

#[test]
fn cancel_oldest_keeps_matching_behind_the_canceled_order() {
    let mut commands = setup();
    commands.push(Command::Place(limit(1, "own", Side::Sell, "100", "0.0001")));
    commands.push(Command::Place(limit(
        2,
        "other",
        Side::Sell,
        "100",
        "0.0001",
    )));
    commands.push(with_stp(
        limit(1, "take", Side::Buy, "100", "0.0001"),
        SelfTradePrevention::CancelOldest,
    ));
    compare(&commands).unwrap();
    let last = model_events(&commands).pop().unwrap();
    assert_eq!(last.len(), 3, "{last:?}");
    assert_eq!(last[1], canceled(1, "0.0001", "0"));
    assert!(matches!(
        last[2],
        Ev::Trade {
            maker_order_id: 2,
            taker_order_id: 3,
            ..
        }
    ));
}

#[test]
fn cancel_both_and_cancel_newest_stop_the_taker() {
    for (stp, resting_survives) in [
        (SelfTradePrevention::CancelBoth, false),
        (SelfTradePrevention::CancelNewest, true),
    ] {
        let mut commands = setup();
        commands.push(Command::Place(limit(1, "own", Side::Sell, "100", "0.0001")));
        commands.push(Command::Place(limit(
            2,
            "other",
            Side::Sell,
            "100",
            "0.0001",
        )));
        commands.push(with_stp(limit(1, "take", Side::Buy, "100", "0.0002"), stp));
        compare(&commands).unwrap();
        let last = model_events(&commands).pop().unwrap();
        assert!(
            !last.iter().any(|e| matches!(e, Ev::Trade { .. })),
            "{last:?}"
        );
        let resting_canceled = last.contains(&canceled(1, "0.0001", "0"));
        assert_eq!(resting_canceled, !resting_survives, "{stp:?}: {last:?}");
        assert_eq!(last.last(), Some(&canceled(3, "0.0002", "0")));
    }
}

#[test]
fn fill_or_kill_that_would_decrement_expires_whole() {
    let mut commands = setup();
    commands.push(Command::Place(limit(
        2,
        "other",
        Side::Sell,
        "100",
        "0.0001",
    )));
    commands.push(Command::Place(limit(1, "own", Side::Sell, "100", "0.0001")));
    let mut fok = limit(1, "fok", Side::Buy, "100", "0.0002");
    fok.tif = TimeInForce::Fok;
    commands.push(with_stp(fok.clone(), SelfTradePrevention::Decrement));
    compare(&commands).unwrap();
    let last = model_events(&commands).pop().unwrap();
    let expired = Ev::Expired {
        order_id: 3,
        expired_qty: units("0.0002"),
        filled_qty: 0,
    };
    assert_eq!(last, vec![Ev::Accepted(3), expired]);

    // Canceling the resting order only skips it: with one lot from others
    // it still expires, with two it fills and the own order is canceled.
    commands.pop();
    commands.push(with_stp(fok, SelfTradePrevention::CancelOldest));
    commands.push(Command::Place(limit(
        2,
        "more",
        Side::Sell,
        "100",
        "0.0001",
    )));
    let mut fok = limit(1, "fok2", Side::Buy, "100", "0.0002");
    fok.tif = TimeInForce::Fok;
    commands.push(with_stp(fok, SelfTradePrevention::CancelOldest));
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let first = &events[events.len() - 3];
    assert!(
        matches!(first.last(), Some(Ev::Expired { order_id: 3, .. })),
        "{first:?}"
    );
    let last = events.last().unwrap();
    assert_eq!(last.len(), 4, "{last:?}");
    assert!(matches!(
        last[1],
        Ev::Trade {
            maker_order_id: 1,
            taker_order_id: 5,
            ..
        }
    ));
    assert_eq!(last[2], canceled(2, "0.0001", "0"));
    assert!(matches!(
        last[3],
        Ev::Trade {
            maker_order_id: 4,
            taker_order_id: 5,
            ..
        }
    ));
}

/// Icebergs and a funds buy against the model: shown lots first, hidden in
/// refill order, and a budget that stops part-way through a level.
#[test]
fn icebergs_and_funds_buys_agree_with_the_model() {
    let mut commands = setup();
    commands.extend([
        deposit(3, "USD", "1000000"),
        deposit(3, "BTC", "100"),
        cmd(iceberg(
            limit(1, "a", Side::Sell, "100", "0.0005"),
            "0.0001",
        )),
        cmd(limit(2, "b", Side::Sell, "100", "0.0001")),
        cmd(iceberg(
            limit(2, "c", Side::Sell, "100", "0.0003"),
            "0.0002",
        )),
        cmd(limit(2, "d", Side::Sell, "101", "0.0002")),
        cmd(limit(3, "t", Side::Buy, "100", "0.0006")),
        replace(2, "c", None, Some("0.0002")),
        cmd(funds_buy(3, "f", "0.0404")),
        cmd(iceberg(limit(3, "g", Side::Buy, "99", "0.0009"), "0.0002")),
        cmd(limit(1, "s", Side::Sell, "99", "0.0005")),
    ]);
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let makers = |evs: &[Ev]| -> Vec<OrderId> {
        evs.iter()
            .filter_map(|e| match e {
                Ev::Trade { maker_order_id, .. } => Some(*maker_order_id),
                _ => None,
            })
            .collect()
    };
    // Shown a, b, c (2 lots), then a's hidden: 1 + 1 + 2 + 2 = 6.
    assert_eq!(makers(&events[11]), [1, 2, 3, 1]);
    // 0.0404 buys a's last 2 lots at 100 (its slice, then its refill) for
    // 0.02001 and 2 lots at 101 for 0.0202101: a third would cost more
    // than is left.
    assert_eq!(makers(&events[13]), [1, 1, 4]);
}

/// Market-to-limit orders and minimum quantities against the model: the
/// best opposite level only, the rest resting where it traded, a minimum
/// missed (nothing changes), met over two makers, with fill-or-kill, and
/// the refusals of an empty side and a misshapen minimum.
#[test]
fn market_to_limit_and_min_qty_agree_with_the_model() {
    let mut commands = setup();
    commands.extend([
        cmd(market_to_limit(1, "none", Side::Buy, "0.0001")),
        cmd(limit(2, "a1", Side::Sell, "100", "0.0001")),
        cmd(limit(2, "a2", Side::Sell, "100", "0.0001")),
        cmd(limit(2, "a3", Side::Sell, "101", "0.0004")),
        cmd(market_to_limit(1, "m", Side::Buy, "0.0003")),
        cmd(with_min_qty(
            limit(2, "short", Side::Sell, "100", "0.0003"),
            "0.0002",
        )),
        cmd(with_min_qty(
            ioc(limit(1, "met", Side::Buy, "101", "0.0005")),
            "0.0004",
        )),
        cmd(fok(with_min_qty(
            limit(2, "fk", Side::Sell, "1", "0.0009"),
            "0.0001",
        ))),
        cmd(with_min_qty(
            limit(1, "bad", Side::Buy, "99", "0.0001"),
            "0.0002",
        )),
    ]);
    compare(&commands).unwrap();
    let events = model_events(&commands);
    assert_eq!(
        events[5],
        [Ev::Rejected("place", RejectReason::MarketToLimitNoOpposite)]
    );
    let trades = |evs: &[Ev]| evs.iter().filter(|e| matches!(e, Ev::Trade { .. })).count();
    // Two makers at 100, none at 101; then the buy rests at 100.
    assert_eq!(trades(&events[9]), 2);
    assert_eq!(
        trades(&events[10]),
        0,
        "0.0001 rests at 100, short of 0.0002"
    );
    assert_eq!(trades(&events[11]), 1, "0.0004 at 101 meets the minimum");
    assert_eq!(trades(&events[12]), 0, "fill-or-kill needs it all");
    assert_eq!(
        events[13],
        [Ev::Rejected("place", RejectReason::InvalidMinQty)]
    );
}

fn stop_place(
    mut place: Place,
    order_type: OrderType,
    stop: &str,
    oco_with: Option<&str>,
) -> Command {
    place.order_type = order_type;
    if matches!(order_type, OrderType::Stop | OrderType::MarketIfTouched) {
        place.price = None;
    }
    place.ext = Some(Box::new(PlaceExt {
        stop_price: Some(dec(stop)),
        oco_with: oco_with.map(coid),
        ..PlaceExt::default()
    }));
    Command::Place(place)
}

fn triggered_ids(events: &[Ev]) -> Vec<OrderId> {
    events
        .iter()
        .filter_map(|e| match e {
            Ev::Triggered { order_id, .. } => Some(*order_id),
            _ => None,
        })
        .collect()
}

/// Three buy stops, a fill-or-kill sell stop and a pair of account 2,
/// then the print at 101 that starts the cascade.
fn stops_and_pairs() -> Vec<Command> {
    vec![
        deposit(3, "USD", "1000000"),
        deposit(3, "BTC", "100"),
        cmd(limit(1, "p1", Side::Sell, "100", "0.0001")),
        cmd(limit(2, "p2", Side::Buy, "100", "0.0001")),
        // Ids 3..=5: buy stops at 102, 101, and 103 (moved to 101.5).
        stop_place(
            limit(3, "a", Side::Buy, "105", "0.0001"),
            OrderType::StopLimit,
            "102",
            None,
        ),
        stop_place(
            limit(3, "b", Side::Buy, "105", "0.0001"),
            OrderType::StopLimit,
            "101",
            None,
        ),
        stop_place(
            limit(3, "c", Side::Buy, "105", "0.0001"),
            OrderType::StopLimit,
            "103",
            None,
        ),
        replace_stop(3, "c", "101.5"),
        // Id 6: a fill-or-kill sell stop that will find too little.
        stop_place(
            fok(limit(3, "k", Side::Sell, "90", "0.0009")),
            OrderType::StopLimit,
            "95",
            None,
        ),
        // Ids 7, 8: a take-profit and a stop loss of account 2, paired.
        cmd(limit(2, "tp", Side::Sell, "104", "0.0001")),
        stop_place(
            limit(2, "sl", Side::Sell, "1", "0.0001"),
            OrderType::Stop,
            "96",
            Some("tp"),
        ),
        // Liquidity for the triggered buys, then a print at 101: b, c, a.
        cmd(limit(1, "ask", Side::Sell, "103", "0.0003")),
        cmd(limit(1, "x", Side::Sell, "101", "0.0001")),
        cmd(limit(2, "y", Side::Buy, "101", "0.0001")),
    ]
}

/// Stops against the model: stops reached together trigger lowest buy
/// stop first, a triggered stop's trades reach further stops in the same
/// command, a moved stop triggers where it now stands, a fill-or-kill stop
/// is judged when it triggers, and the partner of a pair is canceled.
#[test]
fn stops_and_pairs_agree_with_the_model() {
    let mut commands = setup();
    commands.extend(stops_and_pairs());
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let last = events.last().unwrap();
    // b (101) is reached by the print; its trade at 103 reaches c (101.5)
    // and a (102).
    assert_eq!(triggered_ids(last), [4, 5, 3], "{last:?}");
    // The take-profit trades (a buy at 104): the stop loss is canceled.
    commands.push(cmd(limit(3, "lift", Side::Buy, "104", "0.0001")));
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let last = events.last().unwrap();
    assert!(
        last.contains(&Ev::Canceled {
            order_id: 8,
            reason: CancelReason::OneCancelsOther,
            canceled_qty: units("0.0001"),
            filled_qty: 0,
            leaves_qty: 0,
        }),
        "{last:?}"
    );
    // A print at 95 triggers the fill-or-kill stop, which expires whole.
    commands.push(cmd(limit(1, "bid", Side::Buy, "95", "0.0002")));
    commands.push(cmd(limit(2, "hit", Side::Sell, "95", "0.0001")));
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let last = events.last().unwrap();
    assert_eq!(triggered_ids(last), [6], "{last:?}");
    assert_eq!(
        last.last(),
        Some(&Ev::Expired {
            order_id: 6,
            expired_qty: units("0.0009"),
            filled_qty: 0,
        })
    );
}

/// If-touched orders against the model: a fall triggers the buy
/// take-profit and not the sell stop loss further down; a rise then
/// triggers the market sell take-profit and the limit one, whose trigger
/// cancels the stop loss it is paired with.
#[test]
fn if_touched_orders_agree_with_the_model() {
    let mut commands = setup();
    commands.extend([
        deposit(3, "USD", "1000000"),
        deposit(3, "BTC", "100"),
        cmd(limit(1, "p1", Side::Sell, "100", "0.0001")),
        cmd(limit(2, "p2", Side::Buy, "100", "0.0001")),
        // Ids 3..=6.
        stop_place(
            limit(3, "tp", Side::Sell, "104", "0.0001"),
            OrderType::LimitIfTouched,
            "105",
            None,
        ),
        stop_place(
            limit(3, "sl", Side::Sell, "1", "0.0001"),
            OrderType::Stop,
            "90",
            Some("tp"),
        ),
        stop_place(
            limit(3, "bt", Side::Buy, "99", "0.0001"),
            OrderType::LimitIfTouched,
            "98",
            None,
        ),
        stop_place(
            limit(3, "ms", Side::Sell, "1", "0.0001"),
            OrderType::MarketIfTouched,
            "102",
            None,
        ),
        // Refused: already touched.
        stop_place(
            limit(3, "no", Side::Buy, "99", "0.0001"),
            OrderType::LimitIfTouched,
            "100",
            None,
        ),
        cmd(limit(1, "x", Side::Sell, "98", "0.0001")),
        cmd(limit(2, "y", Side::Buy, "98", "0.0001")),
    ]);
    compare(&commands).unwrap();
    let events = model_events(&commands);
    assert_eq!(
        events[13],
        [Ev::Rejected(
            "place",
            RejectReason::StopWouldTriggerImmediately
        )]
    );
    assert_eq!(triggered_ids(events.last().unwrap()), [5]);
    commands.extend([
        cmd(limit(1, "x2", Side::Sell, "105", "0.0001")),
        cmd(limit(2, "y2", Side::Buy, "105", "0.0001")),
    ]);
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let last = events.last().unwrap();
    // The rise reaches the market sell at 102 first (it finds no bid and
    // expires, so the last price stays), then the take-profit at 105,
    // which cancels its stop loss.
    assert_eq!(triggered_ids(last), [6, 3], "{last:?}");
    assert!(
        last.contains(&Ev::Canceled {
            order_id: 4,
            reason: CancelReason::OneCancelsOther,
            canceled_qty: units("0.0001"),
            filled_qty: 0,
            leaves_qty: 0,
        }),
        "{last:?}"
    );
}

/// The edges refuse with `exchange_types::validate::place` before the log;
/// that must never refuse an order the core would take, or a client could
/// not send what the venue trades.
fn edge_refusals_are_core_refusals(commands: &[Command]) -> Result<usize, String> {
    let mut engine = Engine::new();
    let mut refused_at_edge = 0;
    for (index, command) in commands.iter().enumerate() {
        let events = apply_at(&mut engine, index, command);
        let Command::Place(place) = command else {
            continue;
        };
        if exchange_types::validate::place(place).is_ok() {
            continue;
        }
        refused_at_edge += 1;
        let rejected = matches!(events.last().map(|e| &e.kind), Some(EventKind::Rejected(_)));
        if !rejected || events.len() != 1 {
            return Err(format!(
                "command {index} fails validation ({:?}) but the core gave {events:?}",
                exchange_types::validate::place(place)
            ));
        }
    }
    Ok(refused_at_edge)
}

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn what_the_edge_refuses_the_core_refuses(
        commands in command_stream_with_midpoint(Profile::Generous)
    ) {
        match edge_refusals_are_core_refusals(&commands) {
            Ok(_) => {}
            Err(divergence) => prop_assert!(false, "{}", divergence),
        }
    }
}
