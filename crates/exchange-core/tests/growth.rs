//! More open orders than the order indexes' first room (6,144): the
//! indexes grow by moving their entries a few at a time over the next
//! thousand or so inserts. Copies and snapshots taken while that move is
//! under way must continue exactly like the engine they came from, and
//! orders still in the old table must be found.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

const ACCOUNTS: u64 = 4;
/// Copies are taken after these many resting orders: the indexes start
/// growing with order 6,145, and moving their 16,384 buckets takes 1,024
/// inserts, so each of these falls inside the move.
const CUTS: [u64; 3] = [6_200, 6_600, 7_000];

/// Order `n`: buys at 50-89 and sells at 150-189 from four accounts, so
/// nothing crosses while the books fill.
fn resting(n: u64) -> Place {
    let account = 1 + n % ACCOUNTS;
    let (side, price) = if n.is_multiple_of(2) {
        (Side::Buy, 50 + n % 40)
    } else {
        (Side::Sell, 150 + n % 40)
    };
    limit(
        account,
        &format!("o{n}"),
        side,
        &price.to_string(),
        "0.0001",
    )
}

fn account_of(n: u64) -> u64 {
    1 + n % ACCOUNTS
}

fn cancel_id(account: u64, id: OrderId) -> Command {
    Command::Cancel(Cancel {
        account,
        order: OrderRef::Id(id),
    })
}

/// Orders placed after the continuation's cancels: enough for the move
/// to finish in every copy.
const MORE: u64 = 1_100;

/// What follows the cut: cancels by id and by client id reaching the
/// oldest orders, replaces, orders filled on arrival, and then new orders
/// that finish the move.
fn continuation(ids: &[OrderId]) -> Vec<Command> {
    let mut commands = Vec::new();
    for n in (0..3_000u64).step_by(3) {
        let account = account_of(n);
        match n % 4 {
            0 => commands.push(cancel_id(account, ids[n as usize])),
            1 => commands.push(cancel_client(account, &format!("o{n}"))),
            _ => commands.push(replace(account, &format!("o{n}"), None, Some("0.0002"))),
        }
        if n.is_multiple_of(300) {
            // A bid above the rest, filled at once by a market sell: an
            // order indexed and unindexed by a trade.
            let bid = limit(5, &format!("b{n}"), Side::Buy, "95", "0.0001");
            commands.push(Command::Place(bid));
            commands.push(Command::Place(market(
                6,
                &format!("s{n}"),
                Side::Sell,
                "0.0001",
            )));
            commands.push(Command::Place(resting(10_000 + n)));
        }
    }
    commands.extend((0..MORE).map(|k| Command::Place(resting(20_000 + k))));
    commands
}

fn run(engine: &mut Engine, first_ts: u64, commands: &[Command]) -> Vec<Vec<Event>> {
    let mut all = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let mut out = Vec::new();
        let stamped = Stamped {
            ts: first_ts + i as u64,
            command: command.clone(),
        };
        engine.apply(&stamped, &mut out);
        all.push(out);
    }
    all
}

#[test]
fn copies_and_snapshots_taken_while_the_indexes_grow_continue_alike() {
    let mut h = Harness::funded(ACCOUNTS + 2);
    let mut ids = Vec::new();
    let mut placed = 0;
    for cut in CUTS {
        while placed < cut {
            let events = h.place(resting(placed));
            ids.push(order_id(&events).expect("a resting order is accepted"));
            placed += 1;
        }
        assert_eq!(h.engine.open_order_count(), cut as usize);
        let commands = continuation(&ids);
        let mut copy = h.engine.clone();
        let mut restored = Engine::restore(&h.engine.snapshot()).expect("own snapshot restores");
        let mut original = h.engine.clone();
        let ts = h.ts + 1;
        let expected = run(&mut original, ts, &commands);
        assert_eq!(run(&mut copy, ts, &commands), expected);
        assert_eq!(run(&mut restored, ts, &commands), expected);
        for engine in [&copy, &restored] {
            assert_eq!(engine.state_hash(), original.state_hash());
            assert_eq!(engine.snapshot(), original.snapshot());
        }
        // Every cancel and replace reached its order, wherever it was, and
        // each market sell traded.
        let rejects = expected.iter().filter_map(|events| reject_reason(events));
        assert_eq!(rejects.count(), 0);
        let traded: usize = expected.iter().map(|events| trades(events).len()).sum();
        assert_eq!(traded, 10);
        let open = cut - 500 + 10 + MORE;
        assert_eq!(original.open_order_count(), open as usize);
        if let Err(violation) = original.audit() {
            panic!("invariant broken after the cut at {cut}: {violation}");
        }
    }
}
