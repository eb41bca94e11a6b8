//! What a cancel or replace costs when it names an order that is not open
//! (never existed, or already closed) against a real replace, per command:
//! `cargo run --release -p exchange-core --example reject_path`.
//!
//! A refusal should be the cheap path: it changes nothing and emits one
//! event. Figures go to BENCHMARKS.md.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a timing harness outside the core: the clock never reaches the engine"
)]

use std::hint::black_box;
use std::time::Instant;

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

const ACCOUNTS: u64 = 1_000;
const RESTING: u64 = 100_000;
const OPS: usize = 200_000;

fn stamped(ts: u64, command: Command) -> Stamped {
    Stamped { ts, command }
}

fn setup() -> (Engine, u64) {
    let mut engine = Engine::new();
    let mut out = Vec::new();
    let mut ts = 0;
    let mut run = |engine: &mut Engine, command: Command| {
        ts += 1;
        out.clear();
        engine.apply(&stamped(ts, command), &mut out);
    };
    run(&mut engine, add(btc_usd()));
    for account in 1..=ACCOUNTS {
        run(&mut engine, deposit(account, "USD", "100000000"));
        run(&mut engine, deposit(account, "BTC", "100000"));
    }
    // Bids from 90.00 down, asks from 110.00 up: nothing crosses.
    for n in 0..RESTING {
        let account = 1 + n % ACCOUNTS;
        let (side, price) = if n % 2 == 0 {
            (Side::Buy, 9_000 - (n / 2) % 1_000)
        } else {
            (Side::Sell, 11_000 + (n / 2) % 1_000)
        };
        let price = format!("{}.{:02}", price / 100, price % 100);
        run(
            &mut engine,
            cmd(limit(account, &format!("o{n}"), side, &price, "1")),
        );
    }
    // The first tenth closed, so that they are remembered as closed.
    for n in 0..RESTING / 10 {
        run(
            &mut engine,
            cancel_client(1 + n % ACCOUNTS, &format!("o{n}")),
        );
    }
    (engine, ts)
}

/// The sample at `per_mille` thousandths (999 = p99.9) of the sorted
/// samples.
fn percentile(sorted: &[u64], per_mille: usize) -> u64 {
    sorted[(sorted.len() - 1) * per_mille / 1_000]
}

fn measure(name: &str, base: &Engine, ts: u64, commands: &[Command]) {
    let mut engine = base.clone();
    let mut out = Vec::with_capacity(64);
    let mut samples = Vec::with_capacity(commands.len());
    for (i, command) in commands.iter().enumerate() {
        let stamped = stamped(ts + 1 + i as u64, command.clone());
        let start = Instant::now();
        engine.apply(black_box(&stamped), &mut out);
        samples.push(start.elapsed().as_nanos() as u64);
        black_box(&out);
        out.clear();
    }
    samples.sort_unstable();
    println!(
        "{name:<34} p50 {:>5} ns  p99 {:>6} ns  p99.9 {:>7} ns  max {:>9} ns",
        percentile(&samples, 500),
        percentile(&samples, 990),
        percentile(&samples, 999),
        samples[samples.len() - 1]
    );
}

fn main() {
    let (base, ts) = setup();
    let open = |i: usize| RESTING / 10 + (i as u64 * 7_919) % (RESTING * 9 / 10);
    let closed = |i: usize| (i as u64 * 7_919) % (RESTING / 10);
    let account = |n: u64| 1 + n % ACCOUNTS;
    // A real replace: a new price on the same side, to the back of a level.
    let replaces: Vec<Command> = (0..OPS)
        .map(|i| {
            let n = open(i);
            let price = if n % 2 == 0 {
                format!("{}", 80 + i % 5)
            } else {
                format!("{}", 120 + i % 5)
            };
            replace(account(n), &format!("o{n}"), Some(&price), None)
        })
        .collect();
    let unknown_cancels: Vec<Command> = (0..OPS)
        .map(|i| cancel_client(account(i as u64), &format!("never-{i}")))
        .collect();
    let closed_cancels: Vec<Command> = (0..OPS)
        .map(|i| {
            let n = closed(i);
            cancel_client(account(n), &format!("o{n}"))
        })
        .collect();
    let closed_cancels_by_id: Vec<Command> = (0..OPS)
        .map(|i| cancel_id(account(closed(i)), closed(i) + 1))
        .collect();
    let closed_replaces: Vec<Command> = (0..OPS)
        .map(|i| {
            let n = closed(i);
            replace(account(n), &format!("o{n}"), Some("85"), None)
        })
        .collect();
    for _ in 0..2 {
        measure("replace (real, new price)", &base, ts, &replaces);
        measure("cancel unknown client id", &base, ts, &unknown_cancels);
        measure("cancel closed client id", &base, ts, &closed_cancels);
        measure("cancel closed order id", &base, ts, &closed_cancels_by_id);
        measure("replace closed client id", &base, ts, &closed_replaces);
        println!();
    }
}
