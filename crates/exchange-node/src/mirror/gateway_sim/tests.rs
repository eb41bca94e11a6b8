//! The gateway simulation's runs. `SIM_SEED=N` replays one seed,
//! `SIM_STEPS=N` runs each longer, `SIM_SEEDS=N` runs more seeds.

use exchange_replication::sim::{env_seed, seed, steps};

use super::world::run;
use super::Report;

/// Ticks of faults per seed.
const STEPS: u64 = 1_200;
/// Seeds per run of the many-seeds test.
const SEEDS: u64 = 20;

/// Runs one seed, naming it in any failure.
fn run_seed(seed: u64, steps: u64) -> (Report, Vec<(u64, u64, u64)>) {
    eprintln!("gateway simulation: seed {seed} (rerun with SIM_SEED={seed})");
    let outcome = std::panic::catch_unwind(|| run(seed, steps));
    match outcome {
        Ok(done) => done,
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            panic!("seed {seed} (rerun with SIM_SEED={seed}): {why}");
        }
    }
}

#[test]
fn gateways_apply_each_command_exactly_once_under_faults_for_many_seeds() {
    let started = std::time::Instant::now();
    let steps = steps(STEPS);
    let seeds: Vec<u64> = match env_seed() {
        Some(seed) => vec![seed],
        None => {
            let count = std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(SEEDS);
            let base = seed("gateway simulation, first seed");
            (0..count).map(|n| base.wrapping_add(n)).collect()
        }
    };
    let mut total = Report::default();
    for seed in &seeds {
        let (report, _) = run_seed(*seed, steps);
        eprintln!("  {report:?}");
        total.acked += report.acked;
        total.refused += report.refused;
        total.unknown += report.unknown;
        total.gateway_crashes += report.gateway_crashes;
        total.renewals += report.renewals;
        total.stale += report.stale;
        total.duplicates += report.duplicates;
    }
    eprintln!(
        "gateway simulation: {} seeds of {steps} ticks in {:?}: {total:?}",
        seeds.len(),
        started.elapsed()
    );
    // Over many seeds every path the checks guard is taken: gateways
    // crash, sessions expire and are renewed, late and re-sent copies are
    // refused.
    if seeds.len() >= 8 {
        assert!(
            total.gateway_crashes > 0,
            "no gateway ever crashed: {total:?}"
        );
        // Crashing ten times as often, gateways rarely live past a grace.
        let early_crashes = std::env::var_os("SIM_EARLY_CRASHES").is_some();
        assert!(
            early_crashes || total.renewals > 0,
            "no session was ever renewed: {total:?}"
        );
        assert!(total.stale > 0, "no stale copy was ever refused: {total:?}");
        assert!(
            total.duplicates > 0,
            "no duplicate was ever refused: {total:?}"
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_gateway_run() {
    let seed = seed("the_same_seed_gives_the_same_gateway_run");
    let first = run_seed(seed, 400);
    let second = run_seed(seed, 400);
    assert!(first.0.acked > 0, "seed {seed}: nothing acknowledged");
    assert_eq!(first, second, "seed {seed}: two runs of one seed differ");
}
