//! The container venue of deploy/compose under load: first a rolling
//! upgrade of every exchange container to a new image, driven by
//! `exchange cluster upgrade --node ... --replace 'docker-compose up -d
//! --no-deps {name}'`; then a nemesis from a printed seed (kill a replica,
//! a gateway or the market-data gateway; cut a replica off the cluster
//! network; pause a container; fill a replica's disk; skew a replica's
//! clock), each fault held
//! and healed, the venue
//! whole again before the next. The upgrade must cost the clients no
//! error and no dropped connection; the nemesis may cost errors, never
//! an acknowledged order. Then the history checker: every acknowledged
//! order is on both gateways and in every replica's journal exactly once,
//! no order is there that no client sent, the replicas end with the same
//! state hash, and every account's balances are its deposits.
//!
//! `EXCHANGE_NEMESIS_SEED` repeats a run, `EXCHANGE_NEMESIS_ROUNDS` (5)
//! makes it longer (docs/deploy.md, "A nemesis across containers").
//! Needs docker and docker-compose: without them the test says `SKIPPED`
//! and passes, unless CI=true.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use exchange_testkit::compose::{skip_unless_ci, ComposeVenue, Network};
use exchange_testkit::load::{place_until_done, History};
use exchange_testkit::nemesis::{self, Fault, Faults, Shape, Target};
use exchange_testkit::{
    each_process_holds_orders_as_expected, percentile, wait_until, Account, Client, Expected,
    ADMIN_TOKEN,
};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const WORKERS: usize = 4;
/// Between one client's orders: a steady load, not a flood, so that a
/// restarted process's catching up is not what the test measures.
const PACE: Duration = Duration::from_millis(20);
/// Each replica's disk: room for two journal segments of 64 MiB and the
/// snapshots of a short run.
const DISK_MB: u64 = 512;

fn service(target: Target) -> String {
    match target {
        Target::Replica(n) => format!("replica-{n}"),
        Target::Gateway(n) => format!("gateway-{n}"),
        Target::MdGateway(n) => format!("md-gateway-{n}"),
    }
}

/// The nemesis's faults on the compose venue.
struct ComposeFaults<'a>(&'a ComposeVenue);

impl Faults for ComposeFaults<'_> {
    fn inject(&mut self, fault: Fault) -> Result<(), String> {
        match fault {
            Fault::Kill(t) => self.0.kill(&service(t)),
            Fault::Isolate(t) => self.0.disconnect(&service(t), Network::Cluster),
            Fault::Pause(t) => self.0.pause(&service(t)),
            Fault::FillDisk(n) => return self.0.fill_disk(n),
            Fault::SkewClock(n, seconds) => self.0.skew_clock(&format!("replica-{n}"), seconds),
        }
        Ok(())
    }

    fn heal(&mut self, fault: Fault) -> Result<(), String> {
        match fault {
            Fault::Kill(t) => self.0.start(&service(t)),
            Fault::Isolate(t) => self.0.connect(&service(t), Network::Cluster),
            Fault::Pause(t) => self.0.unpause(&service(t)),
            Fault::FillDisk(n) => return self.0.free_disk(n),
            Fault::SkewClock(n, _) => self.0.skew_clock(&format!("replica-{n}"), 0),
        }
        Ok(())
    }

    fn healed(&mut self) -> bool {
        exchange_testkit::compose::SERVICES
            .iter()
            .all(|s| self.0.health(s) == "healthy")
    }
}

/// Runs `during` while `WORKERS` clients place orders through both
/// gateways, their ids `wI-PHASE-N`; their histories.
fn under_load(
    gateways: &[Client],
    accounts: &[Account],
    phase: &str,
    during: impl FnOnce(),
) -> Vec<History> {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, account)| {
                let done = &done;
                let name = format!("w{i}-{phase}");
                scope.spawn(move || place_until_done(gateways, i, account, &name, (done, PACE)))
            })
            .collect();
        std::thread::sleep(Duration::from_secs(1));
        during();
        std::thread::sleep(Duration::from_secs(1));
        done.store(true, Ordering::SeqCst);
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    })
}

/// `exchange cluster upgrade` of every exchange container to a new image
/// of the same binary; its verdict line.
fn rolling_upgrade(venue: &ComposeVenue) -> String {
    let next = venue.build_image(EXCHANGE);
    let replace = venue.replace_command(&next);
    let mut args: Vec<String> = vec!["cluster".into(), "upgrade".into()];
    for (name, url) in venue.replica_urls() {
        args.extend(["--node".into(), format!("{name}={url}")]);
    }
    let gateways = [
        ("gateway-1", venue.gateway_ports[0]),
        ("gateway-2", venue.gateway_ports[1]),
        ("md-gateway-1", venue.md_gateway_ports[0]),
    ];
    let reporter = venue.fixed_ip("reporter-1").unwrap_or_default();
    args.extend([
        "--gateway".into(),
        format!("reporter-1=http://{reporter}:8080"),
    ]);
    for (name, port) in gateways {
        args.extend([
            "--gateway".into(),
            format!("{name}=http://127.0.0.1:{port}"),
        ]);
    }
    args.extend([
        "--replace".into(),
        replace,
        "--healthy-for-ms".into(),
        "2000".into(),
    ]);
    let output = std::process::Command::new(EXCHANGE)
        .args(&args)
        .envs(venue.env())
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .output()
        .expect("run exchange cluster upgrade");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "upgrade failed:\n{out}\n{err}");
    for service in [
        "replica-1",
        "replica-3",
        "reporter-1",
        "gateway-2",
        "md-gateway-1",
    ] {
        assert_eq!(
            venue.image_of(service),
            next,
            "{service} runs the new image"
        );
    }
    out.lines()
        .find(|l| l.starts_with("upgrade done: 7 processes"))
        .unwrap_or_else(|| panic!("no verdict:\n{out}\n{err}"))
        .to_string()
}

fn rounds() -> usize {
    std::env::var("EXCHANGE_NEMESIS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
}

#[test]
fn a_rolling_upgrade_and_a_nemesis_lose_no_acknowledged_order() {
    // Each replica's data on a disk of its own the nemesis can fill.
    let venue = match ComposeVenue::up_with_disks(EXCHANGE, DISK_MB) {
        Ok(venue) => venue,
        Err(why) => return skip_unless_ci(&format!("no docker venue here ({why})")),
    };
    let gateways: Vec<Client> = venue
        .gateway_ports
        .iter()
        .map(|&port| Client { port })
        .collect();
    let accounts = funded_accounts(&gateways);

    let mut verdict = String::new();
    let upgrade = under_load(&gateways, &accounts, "u", || {
        verdict = rolling_upgrade(&venue);
    });
    let errors: Vec<&String> = upgrade.iter().flat_map(|h| &h.errors).collect();
    assert!(
        errors.is_empty(),
        "the upgrade cost clients errors: {errors:?}"
    );

    let seed = nemesis::seed();
    let shape = Shape {
        replicas: 3,
        gateways: 2,
        md_gateways: 1,
        disk: venue.has_disks(),
        clock: venue.can_skew_clocks(),
    };
    let plan = nemesis::plan(seed, rounds(), shape);
    let mut outcome = nemesis::Outcome::default();
    let storm = under_load(&gateways, &accounts, "n", || {
        let hold_and_recover = (Duration::from_secs(3), Duration::from_secs(90));
        outcome = nemesis::run(&plan, &mut ComposeFaults(&venue), hold_and_recover);
    });
    assert!(
        outcome.errors.is_empty(),
        "seed {seed}: {:?}",
        outcome.errors
    );

    check_history(&venue, &gateways, &accounts, [&upgrade, &storm]);
    report(&verdict, &upgrade, &storm, seed, &outcome);
}

/// One funded account per worker, each known to both gateways.
fn funded_accounts(gateways: &[Client]) -> Vec<Account> {
    let accounts: Vec<Account> = (0..WORKERS)
        .map(|i| gateways[i % 2].funded_account())
        .collect();
    for account in &accounts {
        for gateway in gateways {
            wait_until("both gateways knowing every key", || {
                gateway
                    .try_signed(account, "GET", "/v1/balances", "")
                    .is_ok_and(|r| r.status == 200)
            });
        }
    }
    accounts
}

/// The history checker (module doc).
fn check_history(
    venue: &ComposeVenue,
    gateways: &[Client],
    accounts: &[Account],
    phases: [&[History]; 2],
) {
    let merged: Vec<(Vec<String>, Vec<String>, Vec<String>)> = (0..accounts.len())
        .map(|i| {
            let both = phases.map(|p| &p[i]);
            let all = |pick: fn(&History) -> &Vec<String>| {
                both.iter().flat_map(|h| pick(h).clone()).collect()
            };
            (all(|h| &h.acked), all(|h| &h.absent), all(|h| &h.unknown))
        })
        .collect();
    let expected: Vec<Expected<'_>> = merged
        .iter()
        .map(|(acked, absent, unknown)| Expected {
            acked,
            absent,
            at_most_once: unknown,
        })
        .collect();
    each_process_holds_orders_as_expected(&venue.gateway_ports, accounts, &expected);
    for replica in 1..=3 {
        let placed = venue.placed_in_journal(replica);
        for (acked, absent, unknown) in &merged {
            for id in acked {
                assert_eq!(
                    placed.get(id),
                    Some(&1),
                    "replica {replica}: order {id} once"
                );
            }
            for id in absent {
                assert!(
                    !placed.contains_key(id),
                    "replica {replica}: {id} drained, yet applied"
                );
            }
            for id in unknown {
                assert!(
                    placed.get(id).copied().unwrap_or(0) <= 1,
                    "replica {replica}: {id} twice"
                );
            }
        }
        let sent = |id: &String| {
            merged
                .iter()
                .any(|(a, b, c)| a.contains(id) || b.contains(id) || c.contains(id))
        };
        let unsent: Vec<&String> = placed.keys().filter(|id| !sent(id)).collect();
        assert!(
            unsent.is_empty(),
            "replica {replica}: orders no client sent: {unsent:?}"
        );
    }
    replicas_end_equal(venue);
    balances_are_deposits(gateways, accounts);
}

/// Every replica at the same applied index with the same state hash.
fn replicas_end_equal(venue: &ComposeVenue) {
    let url = &venue.replica_urls()[0].1;
    let mut last = Value::Null;
    wait_until("the replicas at one index with one state hash", || {
        let out = std::process::Command::new(EXCHANGE)
            .args(["cluster", "status", "--url", url])
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .output();
        let Ok(out) = out else { return false };
        last = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let nodes = last["nodes"].as_array().cloned().unwrap_or_default();
        let hashes: Vec<&Value> = nodes.iter().map(|n| &n["state_hash"]).collect();
        let indices: Vec<&Value> = nodes.iter().map(|n| &n["applied_index"]).collect();
        nodes.len() == 3
            && hashes.iter().all(|h| h.is_string() && *h == hashes[0])
            && indices.iter().all(|i| *i == indices[0])
    });
    eprintln!("replicas: {last}");
}

/// Resting orders never trade: each account holds what it was deposited.
fn balances_are_deposits(gateways: &[Client], accounts: &[Account]) {
    let plain = |units: &str| {
        let units = units.to_string();
        match units.contains('.') {
            true => units
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            false => units,
        }
    };
    for (i, account) in accounts.iter().enumerate() {
        let balances = gateways[i % 2]
            .signed(account, "GET", "/v1/balances", "")
            .json();
        for (asset, deposited) in [("USD", "100000000"), ("BTC", "10000")] {
            let total = balances["balances"]
                .as_array()
                .and_then(|all| all.iter().find(|b| b["asset"] == asset))
                .and_then(|b| b["total"].as_str())
                .map(plain);
            assert_eq!(
                total.as_deref(),
                Some(deposited),
                "account {i} {asset}: {balances}"
            );
        }
    }
}

fn report(
    verdict: &str,
    upgrade: &[History],
    storm: &[History],
    seed: u64,
    outcome: &nemesis::Outcome,
) {
    let count =
        |phase: &[History], pick: fn(&History) -> usize| phase.iter().map(pick).sum::<usize>();
    let mut latencies: Vec<Duration> = upgrade.iter().flat_map(|h| h.latencies.clone()).collect();
    latencies.sort_unstable();
    eprintln!(
        "{verdict}\nduring the upgrade: {} orders acknowledged, 0 lost, 0 connections dropped, \
         {} moves between gateways; latency p50 {:?} p99 {:?} max {:?}",
        count(upgrade, |h| h.acked.len()),
        count(upgrade, |h| h.moves),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
    );
    let rounds: Vec<String> = outcome
        .rounds
        .iter()
        .map(|(fault, took)| format!("{fault:?} {:.1} s", took.as_secs_f64()))
        .collect();
    // The kinds of error the clients saw: the first words of each.
    let mut kinds: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for error in storm.iter().flat_map(|h| &h.errors) {
        let said = error
            .split_once(": ")
            .map_or(error.as_str(), |(_, said)| said);
        *kinds.entry(said.chars().take(60).collect()).or_default() += 1;
    }
    eprintln!(
        "nemesis seed {seed}: {}\nduring it: {} orders acknowledged, 0 lost, \
         {} answers unknown; errors by kind: {kinds:?}",
        rounds.join(", "),
        count(storm, |h| h.acked.len()),
        count(storm, |h| h.unknown.len()),
    );
}
