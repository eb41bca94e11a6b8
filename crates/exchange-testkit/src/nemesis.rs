//! A nemesis for a venue under load: faults drawn in random order from a
//! printed seed, each held for a while and then healed, one at a time, so
//! that a run can be repeated from its seed (`EXCHANGE_NEMESIS_SEED`).
//!
//! What a fault does is the venue's business ([`Faults`]): a compose
//! venue kills a container, disconnects it from a network, pauses it,
//! fills the filesystem of its data directory. The plan keeps to one
//! faulty process at a time and at most one replica, so a majority of
//! three always stays: the nemesis tests that nothing acknowledged is
//! lost and the venue heals, not what a lost majority does (the Raft
//! simulation covers that).

use std::time::{Duration, Instant};

use crate::rng::Rng;

/// A process of the venue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Replica `1..=n`.
    Replica(u64),
    /// Order-entry gateway `1..=n`.
    Gateway(u64),
    /// Market-data gateway `1..=n`.
    MdGateway(u64),
}

/// One fault, held and then healed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL, then started again.
    Kill(Target),
    /// Cut off every network it is on, then connected again.
    Isolate(Target),
    /// Frozen (SIGSTOP, or the cgroup freezer), then thawed.
    Pause(Target),
    /// The replica's data filesystem filled up, then freed.
    FillDisk(u64),
    /// The replica's clock set off by this many seconds, then restored.
    SkewClock(u64, i64),
}

/// How many processes of each kind the venue has.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub replicas: u64,
    pub gateways: u64,
    pub md_gateways: u64,
    /// Whether the venue can fill a replica's disk and skew its clock.
    pub disk: bool,
    pub clock: bool,
}

/// The venue side of the nemesis: how each fault is done and undone.
pub trait Faults {
    fn inject(&mut self, fault: Fault) -> Result<(), String>;
    fn heal(&mut self, fault: Fault) -> Result<(), String>;
    /// Whether the venue is whole again: every process up, ready and
    /// caught up. The nemesis waits for it before the next fault.
    fn healed(&mut self) -> bool;
}

/// The seed from `EXCHANGE_NEMESIS_SEED`, else one from the clock; it is
/// printed either way.
pub fn seed() -> u64 {
    let seed = std::env::var("EXCHANGE_NEMESIS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("nemesis seed {seed} (EXCHANGE_NEMESIS_SEED={seed} repeats this run)");
    seed
}

/// `rounds` faults drawn from `seed`: first each kind the venue supports
/// once, in random order (so a short run still meets every kind), then
/// kinds at random; each on a random process.
pub fn plan(seed: u64, rounds: usize, shape: Shape) -> Vec<Fault> {
    let mut rng = Rng(seed);
    let mut kinds: Vec<u64> = (0..5)
        .filter(|&kind| match kind {
            3 => shape.disk,
            4 => shape.clock,
            _ => true,
        })
        .collect();
    // Fisher-Yates, from the seed.
    for i in (1..kinds.len()).rev() {
        let j = usize::try_from(rng.below(i as u64 + 1)).unwrap_or(0);
        kinds.swap(i, j);
    }
    (0..rounds)
        .map(|round| {
            let kind = match kinds.get(round) {
                Some(&kind) => kind,
                None => kinds[usize::try_from(rng.below(kinds.len() as u64)).unwrap_or(0)],
            };
            fault_of_kind(kind, &mut rng, shape)
        })
        .collect()
}

fn fault_of_kind(kind: u64, rng: &mut Rng, shape: Shape) -> Fault {
    let replica = |rng: &mut Rng| 1 + rng.below(shape.replicas);
    let target = |rng: &mut Rng| match rng.below(3) {
        1 if shape.gateways > 0 => Target::Gateway(1 + rng.below(shape.gateways)),
        2 if shape.md_gateways > 0 => Target::MdGateway(1 + rng.below(shape.md_gateways)),
        _ => Target::Replica(replica(rng)),
    };
    match kind {
        0 => Fault::Kill(target(rng)),
        1 => Fault::Isolate(Target::Replica(replica(rng))),
        2 => Fault::Pause(target(rng)),
        3 => Fault::FillDisk(replica(rng)),
        _ => {
            let seconds = 5 + i64::try_from(rng.below(55)).unwrap_or(0);
            let sign = if rng.below(2) == 0 { -1 } else { 1 };
            Fault::SkewClock(replica(rng), sign * seconds)
        }
    }
}

/// What happened in a run, round by round.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rounds: Vec<(Fault, Duration)>,
    /// Faults the venue could not inject or heal, with why.
    pub errors: Vec<String>,
}

/// Runs `faults` in order: inject, hold for `hold`, heal, then wait until
/// the venue is whole (at most `recover`) before the next. Stops at the
/// first fault the venue does not heal from in time.
pub fn run(
    faults: &[Fault],
    venue: &mut impl Faults,
    (hold, recover): (Duration, Duration),
) -> Outcome {
    let mut outcome = Outcome::default();
    for (round, &fault) in faults.iter().enumerate() {
        let started = Instant::now();
        eprintln!("nemesis round {}: {fault:?}", round + 1);
        if let Err(why) = venue.inject(fault) {
            outcome.errors.push(format!("{fault:?}: inject: {why}"));
            continue;
        }
        std::thread::sleep(hold);
        if let Err(why) = venue.heal(fault) {
            outcome.errors.push(format!("{fault:?}: heal: {why}"));
            return outcome;
        }
        let deadline = Instant::now() + recover;
        while !venue.healed() {
            if Instant::now() > deadline {
                outcome.errors.push(format!(
                    "{fault:?}: not whole again {} s after healing",
                    recover.as_secs()
                ));
                return outcome;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        outcome.rounds.push((fault, started.elapsed()));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    const VENUE: Shape = Shape {
        replicas: 3,
        gateways: 2,
        md_gateways: 1,
        disk: true,
        clock: true,
    };

    #[test]
    fn a_seed_gives_the_same_plan_and_another_seed_another() {
        assert_eq!(plan(7, 20, VENUE), plan(7, 20, VENUE));
        assert_ne!(plan(7, 20, VENUE), plan(8, 20, VENUE));
    }

    #[test]
    fn every_kind_of_fault_and_process_comes_up_and_stays_in_range() {
        let faults = plan(42, 400, VENUE);
        let kinds = |f: &Fault| match f {
            Fault::Kill(_) => 0,
            Fault::Isolate(_) => 1,
            Fault::Pause(_) => 2,
            Fault::FillDisk(_) => 3,
            Fault::SkewClock(..) => 4,
        };
        for kind in 0..5 {
            assert!(
                faults.iter().any(|f| kinds(f) == kind),
                "kind {kind} never drawn"
            );
        }
        let in_range = |t: &Target| match *t {
            Target::Replica(n) => (1..=3).contains(&n),
            Target::Gateway(n) => (1..=2).contains(&n),
            Target::MdGateway(n) => n == 1,
        };
        for fault in &faults {
            match fault {
                Fault::Kill(t) | Fault::Isolate(t) | Fault::Pause(t) => assert!(in_range(t)),
                Fault::FillDisk(n) => assert!((1..=3).contains(n)),
                Fault::SkewClock(n, s) => {
                    assert!((1..=3).contains(n) && (5..60).contains(&s.abs()));
                }
            }
        }
        assert!(
            faults.contains(&Fault::Kill(Target::MdGateway(1))),
            "the market-data gateway is never killed"
        );
    }

    #[test]
    fn a_short_run_meets_every_kind_once() {
        for seed in 0..50 {
            let mut kinds: Vec<u8> = plan(seed, 5, VENUE)
                .iter()
                .map(|f| match f {
                    Fault::Kill(_) => 0,
                    Fault::Isolate(_) => 1,
                    Fault::Pause(_) => 2,
                    Fault::FillDisk(_) => 3,
                    Fault::SkewClock(..) => 4,
                })
                .collect();
            kinds.sort_unstable();
            assert_eq!(kinds, [0, 1, 2, 3, 4], "seed {seed}");
        }
    }

    #[test]
    fn a_venue_without_disk_or_clock_faults_gets_none() {
        let shape = Shape {
            disk: false,
            clock: false,
            ..VENUE
        };
        let faults = plan(3, 300, shape);
        assert!(faults
            .iter()
            .all(|f| !matches!(f, Fault::FillDisk(_) | Fault::SkewClock(..))));
    }

    /// A venue that records what it was asked, and heals after a while.
    #[derive(Default)]
    struct Recorder {
        log: Vec<String>,
        unhealed_polls: usize,
    }

    impl Faults for Recorder {
        fn inject(&mut self, fault: Fault) -> Result<(), String> {
            self.log.push(format!("inject {fault:?}"));
            self.unhealed_polls = 2;
            Ok(())
        }
        fn heal(&mut self, fault: Fault) -> Result<(), String> {
            self.log.push(format!("heal {fault:?}"));
            Ok(())
        }
        fn healed(&mut self) -> bool {
            self.unhealed_polls = self.unhealed_polls.saturating_sub(1);
            self.unhealed_polls == 0
        }
    }

    #[test]
    fn each_fault_is_healed_and_the_venue_whole_before_the_next() {
        let faults = plan(5, 3, VENUE);
        let mut venue = Recorder::default();
        let outcome = run(
            &faults,
            &mut venue,
            (Duration::ZERO, Duration::from_secs(5)),
        );
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        assert_eq!(outcome.rounds.len(), 3);
        let expected: Vec<String> = faults
            .iter()
            .flat_map(|f| [format!("inject {f:?}"), format!("heal {f:?}")])
            .collect();
        assert_eq!(venue.log, expected);
    }
}
