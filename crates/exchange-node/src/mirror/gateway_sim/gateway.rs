//! A simulated order-entry gateway process: the real [`InFlight`] table,
//! [`SessionWatch`] and leader search of the forwarder, a mirror of the
//! state applying the committed log as the gateway's core thread does,
//! and clients waiting on the real replies. Only the transport and the
//! threads are the simulation's.

use std::sync::Arc;

use crossbeam_channel::Receiver;
use exchange_replication::sim::Rng;
use tokio::sync::oneshot;

use super::machine::apply_batch;
use super::{Ledger, Sim, TICK_NS};
use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::mirror::forwarder::{follow_name, search_round, Round};
use crate::mirror::inflight::InFlight;
use crate::mirror::renew::{self, SessionWatch};
use crate::pipeline::Reply;
use crate::state::Applied;

/// A command sent this many ticks ago and still not in the log: the
/// replica taking it no longer leads; look for the leader again.
const UNCOMMITTED_FOR: u64 = 40;
/// A keep-alive goes when nothing else was sent for this long.
const KEEP_ALIVE_EVERY: u64 = 20;
/// The sessions' grace: longer than any election, shorter than the
/// gateways' long isolations.
pub(super) const GRACE_TICKS: u64 = 150;
/// Commands in flight at most; clients wait beyond it.
const MAX_IN_FLIGHT: usize = 48;
/// Log entries a mirror applies per tick at most (it may fall behind).
const FOLLOW_PER_TICK: usize = 24;

/// One connection to a replica's ingress.
pub(super) struct Conn {
    pub(super) gateway: usize,
    pub(super) node: u64,
    pub(super) id: u64,
    /// When its last frame arrives: frames on one connection keep order.
    pub(super) last_at: u64,
}

pub(super) struct Gateway {
    pub(super) index: usize,
    pub(super) name: String,
    /// Its account, which its clients' orders trade for.
    pub(super) account: u64,
    /// Its side of the cluster's partition.
    pub(super) side: u8,
    /// Cut off from every replica until this tick.
    pub(super) isolated_until: u64,
    pub(super) process: Option<Process>,
}

pub(super) struct Process {
    gateway: usize,
    pub(super) inflight: InFlight,
    watch: Arc<SessionWatch>,
    closed: Receiver<u64>,
    mirror: CoreState,
    pub(super) conn: Option<Conn>,
    /// Whom to try first when searching for the leader.
    hint: Option<u64>,
    named: Vec<u64>,
    /// Client commands waiting for their answer.
    pub(super) clients: Vec<(u64, oneshot::Receiver<Arc<Applied>>)>,
    last_sent: u64,
    oldest_unseen: Option<u64>,
}

impl Gateway {
    /// Starts a new incarnation in a fresh session, its mirror installed
    /// from a replica's state.
    pub(super) fn start(&mut self, session: u64, mirror: CoreState, ledger: &mut Ledger) {
        let grace_ms = GRACE_TICKS * TICK_NS / 1_000_000;
        let (watch, closed) = SessionWatch::new(session);
        ledger.sessions.entry(self.index).or_default().push(session);
        self.process = Some(Process {
            gateway: self.index,
            inflight: InFlight::new(session, &self.name, Some(grace_ms), session),
            watch,
            closed,
            mirror,
            conn: None,
            hint: None,
            named: Vec::new(),
            clients: Vec::new(),
            last_sent: 0,
            oldest_unseen: None,
        });
    }

    /// The process dies: its clients never hear from it again.
    pub(super) fn crash(&mut self, ledger: &mut Ledger) {
        if let Some(process) = self.process.take() {
            for (id, _) in process.clients {
                ledger.unknown.insert(id);
            }
            ledger.gateway_crashes += 1;
        }
    }

    /// One tick of a live gateway: follow the log, renew a closed session,
    /// keep a connection to the leader, take its clients' new commands.
    pub(super) fn tick(&mut self, sim: &mut Sim<'_>, submit: bool) {
        let Some(process) = self.process.as_mut() else {
            return;
        };
        let reach = sim.reachable(self.side, self.isolated_until);
        process.follow(sim, &reach);
        process.renew(sim);
        process.keep_connected(sim, &reach);
        if submit && process.inflight.len() < MAX_IN_FLIGHT {
            let id = sim.ledger.next_command();
            let entry = order(self.account, id, sim.rng);
            let (tx, rx) = oneshot::channel();
            let sequenced = process.inflight.take(entry, Reply::new(tx));
            sim.ledger.sent.insert(id, process.inflight.session);
            process.clients.push((id, rx));
            process.send(sim, vec![sequenced]);
        }
        if process.conn.is_some() && sim.now >= process.last_sent + KEEP_ALIVE_EVERY {
            let alive = process
                .inflight
                .take(LogEntry::SessionAlive { ts: 0 }, None);
            process.send(sim, vec![alive]);
        }
        process.answer_clients(sim.ledger);
    }

    /// The replica that took a frame of connection `conn` no longer leads.
    pub(super) fn not_leader(&mut self, conn: u64, leader: Option<u64>) {
        if let Some(process) = self.process.as_mut() {
            if process.conn.as_ref().is_some_and(|c| c.id == conn) {
                process.conn = None;
                process.hint = leader;
            }
        }
    }
}

impl Process {
    fn send(&mut self, sim: &mut Sim<'_>, entries: Vec<LogEntry>) {
        let Some(conn) = self.conn.as_mut() else {
            // Sent once a leader is found, with the rest in flight.
            return;
        };
        sim.net.send(sim.now, sim.rng, conn, entries);
        self.last_sent = sim.now;
        self.oldest_unseen.get_or_insert(sim.now);
    }

    /// Applies what the replicas it can reach have committed, as the
    /// gateway's follower and core thread do: a command of its own is
    /// answered with the outcome the mirror computes.
    fn follow(&mut self, sim: &mut Sim<'_>, reach: &[u64]) {
        let upto = sim.committed_reachable(reach);
        for _ in 0..FOLLOW_PER_TICK {
            let index = self.mirror.state.raft_index + 1;
            if index > upto {
                break;
            }
            let (_, payload) = sim
                .cluster
                .log
                .get(&index)
                .unwrap_or_else(|| panic!("index {index} committed but never handed over"));
            let inflight = &mut self.inflight;
            apply_batch(
                &mut self.mirror,
                index,
                payload.as_deref(),
                |entry, applied| {
                    if let Some(reply) = inflight.committed(entry) {
                        let _ = reply.tx.send(Arc::new(applied));
                    }
                },
            );
            self.watch.check(&self.mirror.state.sessions);
            sim.check_mirror(index, &self.mirror);
        }
        if self.inflight.len() == 0 {
            self.oldest_unseen = None;
        }
    }

    /// The forwarder's renewal: the log closed the session this gateway
    /// sends in (it expired while the gateway was cut off); continue in a
    /// new one, answering what was in flight in the old one as expired.
    fn renew(&mut self, sim: &mut Sim<'_>) {
        while let Ok(closed) = self.closed.try_recv() {
            if self.inflight.session != closed {
                continue;
            }
            let session = sim.ledger.next_session();
            let gateway = sim.ledger.gateway_of(closed);
            sim.ledger
                .sessions
                .entry(gateway)
                .or_default()
                .push(session);
            sim.ledger.renewals += 1;
            for reply in self.inflight.reopen(session, session) {
                let _ = reply.tx.send(renew::expired());
            }
            self.watch.watch(session);
            let opening = self.inflight.resend();
            self.send(sim, opening);
        }
    }

    /// Drops a connection the leader is lost on; searches for the leader
    /// (a round of the forwarder's search per tick) while there is none.
    fn keep_connected(&mut self, sim: &mut Sim<'_>, reach: &[u64]) {
        if let Some(conn) = &self.conn {
            let stuck = self
                .oldest_unseen
                .is_some_and(|since| sim.now >= since + UNCOMMITTED_FOR);
            if !reach.contains(&conn.node) || stuck {
                self.conn = None;
                self.hint = None;
            }
        }
        if self.conn.is_some() {
            return;
        }
        let order: Vec<u64> = self
            .hint
            .into_iter()
            .chain(
                sim.cluster
                    .ids
                    .iter()
                    .copied()
                    .filter(|id| Some(*id) != self.hint),
            )
            .collect();
        let round = search_round(&order, |node| {
            let replica = match sim.cluster.nodes.get(&node) {
                Some(Some(live)) if reach.contains(&node) => &live.replica,
                _ => return Err(None),
            };
            if replica.is_leader() {
                Ok(())
            } else {
                Err(replica.leader())
            }
        });
        self.hint = match round {
            Round::Leader(node, ()) => {
                self.named.clear();
                self.conn = Some(sim.net.connect(self.gateway, node, sim.now));
                self.oldest_unseen = None;
                let resend = self.inflight.resend();
                if !resend.is_empty() {
                    self.send(sim, resend);
                }
                None
            }
            Round::Named(leader) if follow_name(&mut self.named, leader) => Some(leader),
            Round::Named(_) | Round::Nobody => {
                self.named.clear();
                None
            }
        };
    }

    /// What the clients heard, for the checks.
    fn answer_clients(&mut self, ledger: &mut Ledger) {
        self.clients.retain_mut(|(id, rx)| match rx.try_recv() {
            Ok(applied) if applied.refused_unapplied() => {
                ledger.refused.insert(*id, applied.command);
                false
            }
            Ok(applied) => {
                ledger.acked.insert(*id, applied.raft_index);
                false
            }
            Err(oneshot::error::TryRecvError::Closed) => {
                ledger.refused.insert(*id, "unavailable");
                false
            }
            Err(oneshot::error::TryRecvError::Empty) => true,
        });
    }
}

/// A client's limit order; `id` is in its client order id.
fn order(account: u64, id: u64, rng: &mut Rng) -> LogEntry {
    let side = if rng.chance(500) { "buy" } else { "sell" };
    let price = 95 + rng.below(11);
    let qty = 1 + rng.below(3);
    let line = format!(
        concat!(
            r#"{{"cmd":"place","account":{},"client_order_id":"c{}","symbol":"BTC-USD","#,
            r#""side":"{}","type":"limit","price":"{}","qty":"{}","tif":"gtc"}}"#,
        ),
        account, id, side, price, qty
    );
    LogEntry::Core(exchange_codec::decode_command(&line).expect("an order decodes"))
}
