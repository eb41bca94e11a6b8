//! A whole cluster in one thread, for deterministic simulation tests
//! (behind the `sim` feature): a seeded network (loss, delay, reordering,
//! duplication, partitions) and process crashes with restarts from the
//! replicas' own directories, over any [`Machine`].
//!
//! Checked on every step: no two replicas ever hand over different entries
//! at one index; each replica hands over indices in order; replicas that
//! applied the same index have the same [`Machine::digest`] there; a
//! proposal acknowledged to its proposer carries the payload proposed.
//! The machine checks what it knows (the toy: no payload applied twice).
//!
//! A run is a function of its seed alone: one thread, ordered maps, and
//! time in ticks. Every run prints its seed; `SIM_SEED=N` replays one.

mod cluster;
mod toy;

pub use cluster::{Cluster, Live};
pub use toy::Toy;

use crate::StorageOptions;

/// A replicated state machine the simulated cluster drives.
pub trait Machine: Sized {
    /// What replicas that applied the same entries agree on.
    type Digest: Clone + Eq + std::fmt::Debug;

    /// The empty state, as of `index` (the genesis snapshot's).
    fn empty(index: u64) -> Self;
    /// The state a snapshot taken at `index` holds.
    fn restore(index: u64, data: &[u8]) -> Self;
    fn snapshot(&self) -> Vec<u8>;
    /// The last index handed over.
    fn applied(&self) -> u64;
    /// Hands over the committed entry at `index` on node `node`: a
    /// proposal's payload (empty for the entry a new leader appends), or
    /// none for a membership change.
    fn apply(&mut self, node: u64, index: u64, payload: Option<&[u8]>);
    fn digest(&self) -> Self::Digest;
    /// The payload of the cluster's own `n`th random proposal.
    fn proposal(n: u64) -> Vec<u8>;
}

/// A small seeded generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// True with probability `per_mille`/1000.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// The seed: `SIM_SEED` if set, else one derived from the clock. Printed
/// so that a failure can be replayed.
pub fn seed(name: &str) -> u64 {
    let seed = env_seed().unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    eprintln!("{name}: seed {seed} (rerun with SIM_SEED={seed})");
    seed
}

/// `SIM_SEED`, when set.
pub fn env_seed() -> Option<u64> {
    std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok())
}

/// `SIM_STEPS`, else `default`.
pub fn steps(default: u64) -> u64 {
    std::env::var("SIM_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Network and crash behaviour of a run, in chances per mille per tick
/// (`max_delay` in ticks).
#[derive(Clone, Debug)]
pub struct Faults {
    pub loss: u64,
    pub duplicate: u64,
    pub max_delay: u64,
    pub crash: u64,
    pub restart: u64,
    pub partition: u64,
    pub heal: u64,
    pub propose: u64,
}

impl Faults {
    pub fn none() -> Faults {
        Faults {
            loss: 0,
            duplicate: 0,
            max_delay: 1,
            crash: 0,
            restart: 0,
            partition: 0,
            heal: 0,
            propose: 300,
        }
    }
    pub fn nemesis() -> Faults {
        Faults {
            loss: 50,
            duplicate: 10,
            max_delay: 4,
            crash: 4,
            restart: 40,
            partition: 4,
            heal: 30,
            propose: 300,
        }
    }
}

/// The replicas' storage in a simulation.
pub fn options() -> StorageOptions {
    StorageOptions {
        // Crashes here are process crashes: the page cache survives them.
        fsync: false,
        segment_bytes: 2_048,
        // No spare-writing threads in a deterministic simulation.
        preallocate_after: None,
        keep_snapshots: 2,
        faults: Default::default(),
    }
}
