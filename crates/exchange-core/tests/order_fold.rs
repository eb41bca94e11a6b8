//! The order fold (`exchange_types::lifecycle`) against the engine: over
//! random command streams, the orders it follows from the events alone
//! agree with the engine's open orders after every command, and every
//! order's quantity is accounted for (filled + open + canceled or expired
//! = what was asked).

use std::collections::BTreeMap;

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::prelude::*;

/// What the events said of one order, kept beside the fold's state to
/// check it: the quantity last asked (accepted or replaced) and what was
/// canceled or expired since.
struct Followed {
    state: OrderState,
    asked: u64,
    gone: u64,
}

fn follow(
    orders: &mut BTreeMap<OrderId, Followed>,
    update: &OrderUpdate<'_>,
) -> Result<(), String> {
    let id = update.order_id;
    if let Change::New(accepted) = update.change {
        let followed = Followed {
            state: OrderState::new(accepted),
            asked: accepted.qty,
            gone: 0,
        };
        if orders.insert(id, followed).is_some() {
            return Err(format!("order {id} accepted twice"));
        }
        return Ok(());
    }
    let order = orders
        .get_mut(&id)
        .ok_or(format!("update of order {id}, never accepted"))?;
    if !order.state.is_open() {
        return Err(format!("update of order {id} after it closed: {update:?}"));
    }
    if order.state.account != update.account || order.state.symbol != *update.symbol() {
        return Err(format!(
            "order {id}'s update names another owner: {update:?}"
        ));
    }
    order.state.apply(&update.change);
    match update.change {
        Change::Canceled(c) => order.gone += c.canceled_qty,
        Change::Expired(x) => order.gone += x.expired_qty,
        Change::Replaced(r) => (order.asked, order.gone) = (r.qty, 0),
        Change::New(_) | Change::Fill(_) | Change::Triggered(_) => {}
    }
    let progress = &order.state.progress;
    if order.state.leaves_qty() != update.leaves_qty() {
        return Err(format!(
            "order {id}: the fold leaves {} open, the event {}",
            order.state.leaves_qty(),
            update.leaves_qty()
        ));
    }
    if order.state.is_open() == update.closes() {
        return Err(format!(
            "order {id}: {:?} after {update:?}",
            progress.status
        ));
    }
    if progress.filled_qty + order.state.leaves_qty() + order.gone != order.asked {
        return Err(format!(
            "order {id}: filled {} + open {} + gone {} is not the {} asked",
            progress.filled_qty,
            order.state.leaves_qty(),
            order.gone,
            order.asked
        ));
    }
    Ok(())
}

/// The fold's open orders against the engine's.
fn agree(engine: &Engine, orders: &BTreeMap<OrderId, Followed>) -> Result<(), String> {
    let resting: BTreeMap<OrderId, _> = engine
        .open_orders()
        .into_iter()
        .map(|o| (o.order_id, o))
        .collect();
    for (id, order) in orders {
        let state = &order.state;
        match resting.get(id) {
            Some(view) => {
                let progress = &state.progress;
                // An untriggered stop market or market-if-touched order's
                // price is its protection (the lowest price for a sell,
                // the collar bound for a buy), which its `accepted` does
                // not report.
                let protection = matches!(
                    state.order_type,
                    OrderType::Stop | OrderType::MarketIfTouched
                ) && view.stop_price.is_some();
                let ours = (
                    view.account,
                    view.client_order_id,
                    view.side,
                    if protection {
                        progress.price
                    } else {
                        Some(view.price)
                    },
                    view.qty,
                    view.filled_qty,
                );
                let fold = (
                    state.account,
                    state.client_order_id,
                    state.side,
                    progress.price,
                    progress.qty,
                    progress.filled_qty,
                );
                if ours != fold || !state.is_open() {
                    return Err(format!("order {id}: engine {view:?}, fold {state:?}"));
                }
            }
            None if state.is_open() => {
                return Err(format!("order {id} is open in the fold only: {state:?}"));
            }
            None => {}
        }
    }
    match resting.keys().find(|id| !orders.contains_key(id)) {
        Some(id) => Err(format!("order {id} rests but was never accepted")),
        None => Ok(()),
    }
}

/// Follows the stream, checking after every command; returns how many
/// orders ended in each status.
fn check_stream(commands: &[Command]) -> Result<BTreeMap<&'static str, usize>, String> {
    let mut engine = Engine::new();
    let mut orders = BTreeMap::new();
    for (index, command) in commands.iter().enumerate() {
        let mut events = Vec::new();
        let stamped = Stamped {
            ts: index as u64 + 1,
            command: command.clone(),
        };
        engine.apply(&stamped, &mut events);
        let checked = events
            .iter()
            .flat_map(|e| order_updates(&e.kind))
            .try_for_each(|update| follow(&mut orders, &update))
            .and_then(|()| agree(&engine, &orders));
        if let Err(violation) = checked {
            return Err(format!(
                "{violation}\nafter command {index}:\n{}\nevents: {events:#?}",
                describe_all(&commands[..=index])
            ));
        }
    }
    let mut statuses = BTreeMap::new();
    for order in orders.values() {
        *statuses
            .entry(order.state.progress.status.as_str())
            .or_insert(0) += 1;
    }
    Ok(statuses)
}

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn the_fold_follows_every_order_as_the_engine_keeps_it(
        commands in prop_oneof![
            command_stream(Profile::Scarce),
            command_stream(Profile::Generous),
        ]
    ) {
        let checked = check_stream(&commands);
        prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
    }
}

/// The streams above end orders in every status, so each of the fold's
/// transitions is exercised.
#[test]
fn random_streams_end_orders_in_every_status() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeMap::new();
    for profile in [Profile::Scarce, Profile::Generous] {
        let strategy = command_stream(profile);
        for _ in 0..8 {
            let commands = strategy.new_tree(&mut runner).unwrap().current();
            for (status, count) in check_stream(&commands).unwrap() {
                *seen.entry(status).or_insert(0) += count;
            }
        }
    }
    for status in OrderStatus::ALL {
        assert!(
            seen.contains_key(status.as_str()),
            "no order ended {status:?}: {seen:?}"
        );
    }
}
