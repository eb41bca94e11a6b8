//! The whole simulation: the cluster, the gateways, the ingress between
//! them, and the checks at the end of a run.

use exchange_replication::sim::{Cluster, Faults, Machine, Rng};

use super::gateway::{Gateway, GRACE_TICKS};
use super::{reachable, Ledger, Net, Report, Sim, World};
use super::{DIGEST_EVERY, GATEWAY_CRASH, GATEWAY_RESTART, ISOLATE, SUBMIT, TICK_NS};
use crate::entry::LogEntry;
use crate::replication::encode_batch;

/// Gateways of a run.
const GATEWAYS: usize = 3;
/// Acknowledged commands a run must reach, so that it proves something.
pub(super) const MIN_ACKED: usize = 40;

/// Runs seed `seed` for `steps` ticks of faults, then heals everything and
/// checks; panics, naming the seed, on a violation.
pub(super) fn run(seed: u64, steps: u64) -> (Report, Vec<(u64, u64, u64)>) {
    let mut world = World::new(seed);
    for _ in 0..steps {
        world.step(true);
    }
    world.calm();
    let report = world.check(seed);
    (report, world.cluster.trace.clone())
}

impl World {
    fn new(seed: u64) -> World {
        let dir = tempfile::tempdir().expect("temp dir");
        let quiet = Faults {
            propose: 0,
            ..Faults::none()
        };
        let mut cluster = Cluster::new(dir.path(), 3, seed, quiet);
        cluster.digest_every = DIGEST_EVERY;
        cluster.snapshot_every = 50;
        let gateways = (0..GATEWAYS)
            .map(|index| Gateway {
                index,
                name: format!("gw-{index}"),
                account: index as u64 + 1,
                side: 0,
                isolated_until: 0,
                process: None,
            })
            .collect();
        let mut world = World {
            cluster,
            gateways,
            // The gateways' choices draw from a generator of their own, so
            // that the cluster's draws are the replication simulation's.
            rng: Rng::new(seed ^ 0x6761_7465_7761_7973),
            net: Net::default(),
            ledger: Ledger::default(),
            partitioned: false,
            early_crashes: std::env::var_os("SIM_EARLY_CRASHES").is_some(),
            _dir: dir,
        };
        world.list_and_fund();
        for index in 0..GATEWAYS {
            world.restart(index);
        }
        world.cluster.faults = Faults {
            propose: 0,
            ..Faults::nemesis()
        };
        world
    }

    /// The instrument and the gateways' accounts' funds, committed on
    /// every replica before the faults start.
    fn list_and_fund(&mut self) {
        let mut lines = vec![concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
            r#""price_collar_pct":"50","reference_price":"100"}"#,
        )
        .to_string()];
        for account in 1..=GATEWAYS {
            for (asset, amount) in [("USD", 1_000_000_000), ("BTC", 10_000_000)] {
                lines.push(format!(
                    concat!(
                        r#"{{"cmd":"deposit","account":{},"asset":"{}","#,
                        r#""amount":"{}"}}"#,
                    ),
                    account, asset, amount
                ));
            }
        }
        let entries: Vec<LogEntry> = lines
            .iter()
            .map(|line| LogEntry::Core(exchange_codec::decode_command(line).expect("setup")))
            .collect();
        let payload = encode_batch(&entries).expect("setup encodes");
        let mut proposed = None;
        for _ in 0..2_000 {
            self.cluster.step();
            let committed = proposed.and_then(|index| {
                let (_, data) = self.cluster.log.get(&index)?;
                Some((index, data.as_deref() == Some(payload.as_slice())))
            });
            match committed {
                Some((index, true))
                    if self
                        .cluster
                        .machines()
                        .iter()
                        .all(|(_, m)| m.applied() >= index) =>
                {
                    return;
                }
                // Another entry took its index: proposed again below.
                Some((_, false)) => proposed = None,
                _ => {}
            }
            if proposed.is_none() {
                if let Some(leader) = self.cluster.leader() {
                    proposed = self
                        .cluster
                        .propose_payload(leader, payload.clone())
                        .map(|(index, _)| index);
                }
            }
        }
        panic!("the setup never committed");
    }

    /// One tick: the ingress, the cluster, the gateways' faults, then each
    /// gateway's own tick.
    fn step(&mut self, faults: bool) {
        self.deliver();
        self.cluster.step();
        if faults {
            self.gateway_faults();
        }
        self.take_sides();
        for index in 0..self.gateways.len() {
            let submit = faults && self.rng.chance(SUBMIT);
            let mut sim = Sim {
                cluster: &self.cluster,
                rng: &mut self.rng,
                net: &mut self.net,
                ledger: &mut self.ledger,
                now: self.cluster.now,
            };
            self.gateways[index].tick(&mut sim, submit);
        }
    }

    /// Frames due reach the replica's ingress, which proposes them if it
    /// leads and answers `NotLeader` if not; a connection the partition
    /// cut, or to a crashed replica, loses them.
    fn deliver(&mut self) {
        let now = self.cluster.now;
        let (mut due, later): (Vec<_>, Vec<_>) =
            self.net.frames.drain(..).partition(|f| f.at <= now);
        self.net.frames = later;
        due.sort_by_key(|f| (f.at, f.order));
        for frame in due {
            let gateway = &self.gateways[frame.gateway];
            let reach = reachable(&self.cluster, gateway.side, gateway.isolated_until, now);
            if !reach.contains(&frame.node) {
                continue;
            }
            let Some(Some(live)) = self.cluster.nodes.get(&frame.node) else {
                continue;
            };
            if !live.replica.is_leader() {
                let leader = live.replica.leader();
                self.gateways[frame.gateway].not_leader(frame.conn, leader);
                continue;
            }
            let mut entries = frame.entries;
            for entry in &mut entries {
                entry.set_ts(now * TICK_NS);
            }
            let payload = encode_batch(&entries).expect("a batch encodes");
            if self.cluster.propose_payload(frame.node, payload).is_none() {
                self.gateways[frame.gateway].not_leader(frame.conn, None);
            }
        }
    }

    /// Gateways crash (and restart), and are cut off from every replica.
    ///
    /// A gateway may crash with its open still on the way; held back, that
    /// open arrives after its next incarnation's and must be refused by
    /// its incarnation, or it would close the new session and let the old
    /// incarnation's late commands be applied. `SIM_EARLY_CRASHES` makes
    /// gateways crash ten times as often and always holds their last
    /// frames back, which reaches that case within a few seeds.
    fn gateway_faults(&mut self) {
        let now = self.cluster.now;
        let (crash, hold_back) = if self.early_crashes {
            (10 * GATEWAY_CRASH, 1_000)
        } else {
            (GATEWAY_CRASH, 500)
        };
        for index in 0..self.gateways.len() {
            let gateway = &mut self.gateways[index];
            if gateway.process.is_none() {
                if self.rng.chance(GATEWAY_RESTART) {
                    self.restart(index);
                }
                continue;
            }
            if self.rng.chance(crash) {
                gateway.crash(&mut self.ledger);
                // Its relay on the replica stalled as it died: its last
                // frames arrive late, after its next incarnation's first.
                if self.rng.chance(hold_back) {
                    self.net.hold_back(index, now + 20 + self.rng.below(200));
                }
            } else if now >= gateway.isolated_until && self.rng.chance(ISOLATE) {
                // Longer than the session's grace, mostly.
                gateway.isolated_until = now + GRACE_TICKS / 2 + self.rng.below(3 * GRACE_TICKS);
            }
        }
    }

    /// Starts gateway `index` in a new session, its mirror from a replica
    /// it reaches (none: it tries again later).
    fn restart(&mut self, index: usize) {
        let now = self.cluster.now;
        let gateway = &self.gateways[index];
        let reach = reachable(&self.cluster, gateway.side, gateway.isolated_until, now);
        let Some(Some(live)) = reach.first().and_then(|id| self.cluster.nodes.get(id)) else {
            return;
        };
        let mirror = live.machine.core_copy();
        let session = self.ledger.next_session();
        self.gateways[index].start(session, mirror, &mut self.ledger);
    }

    /// Gateways take a side when the cluster partitions.
    fn take_sides(&mut self) {
        let partitioned = !self.cluster.side.is_empty();
        if partitioned && !self.partitioned {
            for gateway in &mut self.gateways {
                gateway.side = self.rng.below(2) as u8;
            }
        }
        self.partitioned = partitioned;
    }

    /// Ends every fault and runs until every waiting client is answered,
    /// then until every replica applied the whole log.
    fn calm(&mut self) {
        for gateway in &mut self.gateways {
            gateway.isolated_until = 0;
        }
        self.cluster.heal_and_converge(3_000);
        for _ in 0..3_000 {
            self.step(false);
            if self.settled() {
                break;
            }
        }
        // The gateways stop here (their keep-alives would go on), so the
        // replicas end at one index.
        self.cluster.heal_and_converge(3_000);
    }

    fn settled(&self) -> bool {
        self.net.frames.is_empty()
            && self
                .gateways
                .iter()
                .filter_map(|g| g.process.as_ref())
                .all(|p| p.clients.is_empty())
    }
}
