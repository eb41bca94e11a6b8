//! The gateway's side of the ingress: takes the commands its clients
//! submit, numbers them in its session and sends them to whichever
//! replica leads, and after a leader change sends what is still in flight
//! again (the replicated state applies each number once). When the log
//! shows its session closed while it runs, it opens a new one
//! ([`super::renew`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{select, unbounded, Receiver, Sender};
use exchange_replication::transport::channel::{Channel, ChannelReader, ChannelWriter};
use exchange_replication::transport::{ClusterKey, Dialer, PeerAddr};

use super::inflight::InFlight;
use super::renew::{self, SessionWatch};
use crate::entry::LogEntry;
use crate::ingress::wire::{decode_downstream, encode_submit, Downstream, Refusal};
use crate::ingress::PROTOCOL;
use crate::limits::MAX_BATCH;
use crate::pipeline::Submission;

/// A connection attempt gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// A keep-alive entry is sent when nothing else was for this long: it
/// keeps the gateway's session alive in the log (so the cluster does not
/// cancel what its clients protect) and is the leader's heartbeat...
const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);
/// ...and the leader is given up when it has sent nothing for this long.
const LEADER_SILENT: Duration = Duration::from_secs(3);
/// A command sent this long ago and still not in the log means the
/// replica taking it no longer leads (a deposed leader cut off from the
/// others keeps accepting): look for the leader again.
const UNCOMMITTED_FOR: Duration = Duration::from_secs(2);
/// Pause between rounds over every replica while none leads.
const RETRY_ROUND: Duration = Duration::from_millis(100);
/// Commands in flight at most; beyond it the submit queue fills and
/// clients hear `overloaded`.
pub const MAX_IN_FLIGHT: usize = 65_536;

pub(crate) struct Forwarder {
    pub(crate) submit: Receiver<Submission>,
    pub(crate) inflight: Arc<Mutex<InFlight>>,
    /// Every replica's ingress address by node id, resolved at each
    /// connection attempt.
    pub(crate) ingress: BTreeMap<u64, Dialer>,
    pub(crate) key: ClusterKey,
    pub(crate) my_id: u64,
    /// The leader this gateway sends to (0: none), for status readers.
    pub(crate) leader: Arc<std::sync::atomic::AtomicU64>,
    /// The session the core thread watches, and where it reports the
    /// session closed by the log.
    pub(crate) watch: Arc<SessionWatch>,
    pub(crate) closed: Receiver<u64>,
}

/// Why a connection to a leader ended.
enum Ended {
    /// Every handle is gone: the gateway stops.
    Stopped,
    /// Reconnect, to this node first if known.
    Lost(Option<u64>),
}

impl Forwarder {
    /// The forwarder of a gateway named `name`, in a fresh session, the
    /// table of its commands in flight that the follower answers, and the
    /// watch of its session for the core thread.
    pub(crate) fn new(
        submit: Receiver<Submission>,
        name: &str,
        ingress: &BTreeMap<u64, PeerAddr>,
        settings: &super::MirrorSettings,
        cluster: &crate::replication::ClusterShared,
    ) -> (Arc<Mutex<InFlight>>, Forwarder, Arc<SessionWatch>) {
        let grace = match settings.role {
            super::MirrorRole::Gateway {
                cancel_grace_ms, ..
            } => Some(cancel_grace_ms),
            super::MirrorRole::MarketData => None,
        };
        let session = super::new_session_id();
        let incarnation = super::new_incarnation();
        let inflight = Arc::new(Mutex::new(InFlight::new(session, name, grace, incarnation)));
        let (watch, closed) = SessionWatch::new(session);
        let forwarder = Forwarder {
            submit,
            inflight: inflight.clone(),
            ingress: ingress
                .iter()
                .map(|(id, addr)| (*id, Dialer::system(addr.clone())))
                .collect(),
            key: settings.key.clone(),
            my_id: settings.process_id,
            leader: cluster.forwarding_to.clone(),
            watch: watch.clone(),
            closed,
        };
        (inflight, forwarder, watch)
    }

    /// The log showed `closed` closed: if it is still the session this
    /// gateway sends in, continues in a new one, and answers what was in
    /// flight in the old one (never applied) `session_expired`. True when
    /// the new session's opening is to be sent.
    fn renew(&self, closed: u64) -> bool {
        let mut inflight = lock(&self.inflight);
        if inflight.session != closed {
            return false;
        }
        let session = super::new_session_id();
        let unapplied = inflight.reopen(session, super::new_incarnation());
        self.watch.watch(session);
        drop(inflight);
        tracing::warn!(
            unapplied = unapplied.len(),
            "gateway: the cluster closed this gateway's session (silent past its grace); \
             opening a new one"
        );
        let outcome = renew::expired();
        for reply in unapplied {
            let _ = reply.tx.send(outcome.clone());
        }
        true
    }

    pub(crate) fn run(self) {
        let mut hint = None;
        loop {
            let Some((node, channel)) = self.find_leader(hint) else {
                return;
            };
            self.leader
                .store(node, std::sync::atomic::Ordering::Release);
            tracing::info!(leader = node, "gateway: sending to the leader");
            match self.serve(channel) {
                Ended::Stopped => return,
                Ended::Lost(next) => hint = next.filter(|id| *id != node),
            }
            self.leader.store(0, std::sync::atomic::Ordering::Release);
        }
    }

    /// Tries the hinted node, then every replica, until one leads; None
    /// once the gateway is stopping.
    fn find_leader(&self, mut hint: Option<u64>) -> Option<(u64, Channel)> {
        let mut named = Vec::new();
        loop {
            let order: Vec<u64> = hint
                .into_iter()
                .chain(self.ingress.keys().copied().filter(|id| Some(*id) != hint))
                .collect();
            let round = search_round(&order, |node| match self.ingress.get(&node) {
                Some(dialer) => self.try_replica(dialer),
                None => Err(None),
            });
            hint = match round {
                Round::Leader(node, channel) => return Some((node, channel)),
                Round::Named(leader) if follow_name(&mut named, leader) => Some(leader),
                Round::Named(_) | Round::Nobody => {
                    named.clear();
                    std::thread::sleep(RETRY_ROUND);
                    None
                }
            };
            if self.stopping() {
                return None;
            }
        }
    }

    /// A channel to the replica if it leads; else the leader it names.
    fn try_replica(&self, dialer: &Dialer) -> Result<Channel, Option<u64>> {
        let mut channel = Channel::dial(dialer, PROTOCOL, &self.key, self.my_id, CONNECT_TIMEOUT)
            .map_err(|_| None)?;
        channel
            .set_read_timeout(Some(CONNECT_TIMEOUT))
            .map_err(|_| None)?;
        let frame = channel.recv().map_err(|_| None)?;
        match decode_downstream(&frame) {
            Ok(Downstream::Ready { .. }) => Ok(channel),
            Ok(Downstream::NotLeader { leader }) => Err(leader),
            _ => Err(None),
        }
    }

    /// While no leader is known, commands clients submit are taken into
    /// flight (up to its bound) and sent once one is: an election costs
    /// them latency, not an error. True once every handle is gone.
    fn stopping(&self) -> bool {
        // The next leader gets the new session's opening with the rest.
        while let Ok(closed) = self.closed.try_recv() {
            self.renew(closed);
        }
        let mut inflight = lock(&self.inflight);
        while inflight.len() < MAX_IN_FLIGHT {
            match self.submit.try_recv() {
                Ok(submission) => {
                    inflight.take(submission.entry, submission.reply);
                }
                Err(crossbeam_channel::TryRecvError::Empty) => return false,
                Err(crossbeam_channel::TryRecvError::Disconnected) => return true,
            }
        }
        false
    }

    /// Sends to one leader until it is lost.
    fn serve(&self, channel: Channel) -> Ended {
        if channel.set_read_timeout(Some(LEADER_SILENT)).is_err() {
            return Ended::Lost(None);
        }
        let (reader, mut writer) = channel.split();
        let (down_tx, down) = unbounded();
        let reading = spawn_reader(reader, down_tx);
        let resend = lock(&self.inflight).resend();
        let ended = match send_all(&mut writer, resend) {
            Ok(()) => self.forward(&mut writer, &down),
            Err(()) => Ended::Lost(None),
        };
        // Closing the connection ends the reader.
        writer.shutdown();
        if let Some(reading) = reading {
            let _ = reading.join();
        }
        ended
    }

    fn forward(&self, writer: &mut ChannelWriter, down: &Receiver<Downstream>) -> Ended {
        let mut last_sent = Instant::now();
        let mut oldest_unseen: Option<Instant> = None;
        loop {
            let room = MAX_IN_FLIGHT.saturating_sub(lock(&self.inflight).len());
            let submit = if room > 0 {
                &self.submit
            } else {
                &crossbeam_channel::never()
            };
            select! {
                recv(submit) -> submission => match submission {
                    Ok(first) => {
                        if self.send_batch(writer, first, room).is_err() {
                            return Ended::Lost(None);
                        }
                        last_sent = Instant::now();
                        oldest_unseen.get_or_insert(last_sent);
                    }
                    Err(_) => return Ended::Stopped,
                },
                recv(self.closed) -> closed => {
                    let opening = closed.is_ok_and(|closed| self.renew(closed));
                    if opening && send_all(writer, lock(&self.inflight).resend()).is_err() {
                        return Ended::Lost(None);
                    }
                }
                recv(down) -> message => match message {
                    // A replica that stops refuses what it had not logged:
                    // kept, and sent again to whoever leads next, as when
                    // a leader dies.
                    Ok(Downstream::Refused { why: Refusal::Stopped, .. }) => {
                        return Ended::Lost(None);
                    }
                    Ok(Downstream::Refused { seqs, .. }) => lock(&self.inflight).refuse(&seqs),
                    Ok(Downstream::NotLeader { leader }) => return Ended::Lost(leader),
                    Ok(_) => {}
                    Err(_) => return Ended::Lost(None),
                },
                default(HEARTBEAT_EVERY) => {}
            }
            if last_sent.elapsed() >= HEARTBEAT_EVERY {
                let alive = lock(&self.inflight).take(LogEntry::SessionAlive { ts: 0 }, None);
                if send_all(writer, vec![alive]).is_err() {
                    return Ended::Lost(None);
                }
                last_sent = Instant::now();
                oldest_unseen.get_or_insert(last_sent);
            }
            if lock(&self.inflight).len() == 0 {
                oldest_unseen = None;
            } else if oldest_unseen.is_some_and(|since| since.elapsed() >= UNCOMMITTED_FOR) {
                tracing::warn!("gateway: commands sent to the leader are not committing");
                return Ended::Lost(None);
            }
        }
    }

    /// Numbers and sends `first` and whatever else is queued (a batch).
    fn send_batch(
        &self,
        writer: &mut ChannelWriter,
        first: Submission,
        room: usize,
    ) -> Result<(), ()> {
        let mut batch = Vec::with_capacity(64);
        let mut inflight = lock(&self.inflight);
        batch.push(inflight.take(first.entry, first.reply));
        let most = room.min(MAX_BATCH);
        while batch.len() < most {
            match self.submit.try_recv() {
                Ok(next) => batch.push(inflight.take(next.entry, next.reply)),
                Err(_) => break,
            }
        }
        drop(inflight);
        send_all(writer, batch)
    }
}

/// What one round over the replicas found.
#[derive(Debug, PartialEq)]
pub(super) enum Round<T> {
    /// This node leads; here is the connection to it.
    Leader(u64, T),
    /// A replica named this node as the leader, not tried yet this round.
    Named(u64),
    /// None leads, or the one named cannot be reached: pause, then again.
    Nobody,
}

/// Tries the nodes of `order` in turn until one leads. A replica that
/// names another as the leader sends the search there at once, unless
/// that one already failed this round: a leader this gateway cannot reach
/// while the replicas still can (a partition between the two) would
/// otherwise be tried again without pause each time a replica names it.
pub(super) fn search_round<T>(
    order: &[u64],
    mut attempt: impl FnMut(u64) -> Result<T, Option<u64>>,
) -> Round<T> {
    let mut failed = Vec::new();
    for &node in order {
        match attempt(node) {
            Ok(channel) => return Round::Leader(node, channel),
            Err(Some(leader)) if leader != node && !failed.contains(&leader) => {
                return Round::Named(leader)
            }
            Err(Some(_)) => {}
            Err(None) => failed.push(node),
        }
    }
    Round::Nobody
}

/// Whether to follow a replica's word that `leader` leads at once: not
/// if an earlier round of this search already followed it there, as when
/// two replicas with stale views name each other during an election.
pub(super) fn follow_name(named: &mut Vec<u64>, leader: u64) -> bool {
    if named.contains(&leader) {
        return false;
    }
    named.push(leader);
    true
}

fn lock(inflight: &Mutex<InFlight>) -> std::sync::MutexGuard<'_, InFlight> {
    // The table stays consistent at every await-free step, so a panic
    // elsewhere leaves it usable.
    inflight
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends `entries` in frames of a batch's size.
fn send_all(writer: &mut ChannelWriter, entries: Vec<crate::LogEntry>) -> Result<(), ()> {
    for chunk in entries.chunks(MAX_BATCH) {
        let frame = encode_submit(chunk).map_err(|error| {
            tracing::error!(%error, "gateway: a command does not encode");
        })?;
        writer.send(&frame).map_err(|_| ())?;
    }
    Ok(())
}

/// Reads the leader's frames on a thread of its own, so that a slow or
/// silent leader never holds up sending.
fn spawn_reader(
    mut reader: ChannelReader,
    down: Sender<Downstream>,
) -> Option<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ingress-read".into())
        .spawn(move || loop {
            let Ok(frame) = reader.recv() else { return };
            let Ok(message) = decode_downstream(&frame) else {
                tracing::warn!("gateway: a frame from the leader does not decode; reconnecting");
                return;
            };
            if down.send(message).is_err() {
                return;
            }
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node 1 leads but cannot be reached; 2 and 3 name it.
    fn partitioned_from_1(node: u64, tried: &mut Vec<u64>) -> Result<(), Option<u64>> {
        tried.push(node);
        if node == 1 {
            Err(None)
        } else {
            Err(Some(1))
        }
    }

    #[test]
    fn a_leader_named_after_it_failed_ends_the_round_without_a_detour() {
        let mut tried = Vec::new();
        let round = search_round(&[1, 2, 3], |node| partitioned_from_1(node, &mut tried));
        assert_eq!(round, Round::Nobody);
        assert_eq!(tried, [1, 2, 3], "each replica is tried once a round");
    }

    #[test]
    fn a_leader_not_yet_tried_is_followed_once_then_the_search_pauses() {
        let mut tried = Vec::new();
        let first = search_round(&[2, 3, 1], |node| partitioned_from_1(node, &mut tried));
        assert_eq!(first, Round::Named(1));
        let second = search_round(&[1, 2, 3], |node| partitioned_from_1(node, &mut tried));
        assert_eq!(second, Round::Nobody, "the named leader failed: pause");
        assert_eq!(tried, [2, 1, 2, 3]);
    }

    #[test]
    fn replicas_naming_each_other_are_followed_once_each() {
        let mut named = Vec::new();
        assert!(follow_name(&mut named, 2));
        assert!(follow_name(&mut named, 3));
        assert!(!follow_name(&mut named, 2), "back to 2: pause instead");
    }

    #[test]
    fn the_replica_that_leads_ends_the_search() {
        let round = search_round(&[3, 1, 2], |node| match node {
            3 => Err(Some(2)),
            _ => Ok(node),
        });
        assert_eq!(round, Round::Named(2));
        let round = search_round(&[2, 1, 3], |node| match node {
            2 => Ok("channel"),
            _ => Err(Some(2)),
        });
        assert_eq!(round, Round::Leader(2, "channel"));
    }
}
