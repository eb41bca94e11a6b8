//! The publisher thread: where the core thread's results go.
//!
//! The core thread only applies. What an applied entry sets off besides
//! happens on this thread: recording its events in the [`History`] (the
//! API's open orders and recent trades, and the order record the answer
//! carries), the waiting gateway's answer (a tokio oneshot: waking its
//! task is a system call when the worker sleeps), the events broadcast (a
//! lock its subscribers' tasks take too, and their wake-ups), the
//! counters and the acknowledgement latencies. The core hands over up to
//! [`PUBLISH_EVERY`] applied entries in one message, so it pays at most
//! one wake-up per message, and none while this thread is busy.
//!
//! The history lives here, so what reads it is answered here, through the
//! same queue: a read of the history (open orders; a market's recent
//! trades and last auction, beside the state's part the core filled in)
//! and a snapshot (the core's copy of the replicated state, to which the
//! history is added) reach this thread after every entry applied before
//! them, and so see the history as of the same command as the state. A
//! snapshot installed from the leader replaces the history the same way.
//!
//! Order: one queue with one reader, so entries are answered and
//! broadcast exactly in log order, each entry's answer before its
//! broadcast, as when the core thread did both. Whatever the core thread
//! does before it hands entries over (refreshing the credentials an entry
//! changed, recording the Raft index it applied) is done before their
//! answers go out. A closed gateway session is reported through the same
//! queue, after the answers of every entry applied before it was seen.
//!
//! The queue holds [`PUBLISH_QUEUE`] messages. When it is full the core
//! thread waits for room: nothing is dropped, since a lost answer would
//! leave its client waiting and a lost event would be a gap in every
//! market data feed and in the reporting store. The wait backs up into
//! the core queue and then the submit queue, whose gateways are told
//! `Overloaded`, as when the core itself falls behind.
//!
//! At shutdown the core thread drops its sender once its loop ends and
//! waits for this thread, which publishes everything queued, waits for
//! the snapshot writer (it holds its last snapshot) and then drops the
//! broadcast's sender: subscribers (the reporting service among them) see
//! `Closed` only after the last entry.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use exchange_types::EventKind;
use tokio::sync::broadcast;

use crate::core_state::HistoryNote;
use crate::history::History;
use crate::metrics::Metrics;
use crate::mirror::renew::SessionWatch;
use crate::parked;
use crate::pipeline::Reply;
use crate::reads::HistoryRead;
use crate::replication::RaftMeta;
use crate::snapshot_writer::SnapshotWriter;
use crate::state::{Applied, ReplicatedCopy, StateCopy};

/// An entry the core applied, with what the history needs of it and the
/// reply of the gateway waiting for it, if this node proposed it.
pub(crate) struct Outcome {
    pub(crate) applied: Applied,
    pub(crate) note: HistoryNote,
    pub(crate) reply: Option<Reply>,
}

/// Applied entries, in log order.
pub(crate) type Done = Vec<Outcome>;

/// Applied entries handed over together. Waking a gateway's task is a
/// system call when its worker sleeps; after each entry it would sleep
/// again in between, so the answers of a few entries go together, and
/// the core does not wait for a long Raft entry's end to hand its first
/// commands over.
pub(crate) const PUBLISH_EVERY: usize = 64;

/// Messages the queue to this thread holds: with [`PUBLISH_EVERY`], up to
/// 8192 entries, far more than the core applies while this thread is
/// scheduled out.
const PUBLISH_QUEUE: usize = 128;

/// Emptied vectors this thread hands back for reuse.
const SPARE_VECTORS: usize = 8;

enum Publication {
    Applied(Done),
    /// The session an order-entry gateway sends in was closed by the log.
    SessionClosed(u64),
    Read(HistoryRead),
    /// The core's copy of the replicated state as of `meta`, to be written
    /// with the history; `last`: at shutdown, and waited for.
    Snapshot {
        meta: RaftMeta,
        replicated: ReplicatedCopy,
        last: bool,
    },
    /// The history of a snapshot installed from the leader.
    Install(History),
}

/// The core thread's side.
pub(crate) struct Publisher {
    queue: Option<parked::Sender<Publication>>,
    spare: crossbeam_channel::Receiver<Done>,
    thread: Option<JoinHandle<()>>,
}

/// The publisher thread's side.
pub(crate) struct PublishLoop {
    queue: parked::Receiver<Publication>,
    spare: crossbeam_channel::Sender<Done>,
    history: History,
    /// The entries of a message between their recording and their
    /// answers (kept for its capacity).
    ready: Vec<(Arc<Applied>, Option<Reply>)>,
    snapshots: SnapshotWriter,
    events: broadcast::Sender<Arc<Applied>>,
    metrics: Arc<Metrics>,
    /// On an order-entry gateway: where a closed session is reported.
    watch: Option<Arc<SessionWatch>>,
}

/// Where the publisher thread's results go.
pub(crate) struct PublishTo {
    pub(crate) events: broadcast::Sender<Arc<Applied>>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) snapshots: SnapshotWriter,
    pub(crate) watch: Option<Arc<SessionWatch>>,
}

impl Publisher {
    /// Starts the thread `spawn` makes of the loop, which keeps `history`
    /// from here on.
    pub(crate) fn start(
        history: History,
        to: PublishTo,
        spawn: impl FnOnce(PublishLoop) -> JoinHandle<()>,
    ) -> Publisher {
        let (queue_tx, queue_rx) = parked::bounded(PUBLISH_QUEUE);
        let (spare_tx, spare_rx) = crossbeam_channel::bounded(SPARE_VECTORS);
        let thread = spawn(PublishLoop {
            queue: queue_rx,
            spare: spare_tx,
            history,
            ready: Vec::with_capacity(PUBLISH_EVERY),
            snapshots: to.snapshots,
            events: to.events,
            metrics: to.metrics,
            watch: to.watch,
        });
        Publisher {
            queue: Some(queue_tx),
            spare: spare_rx,
            thread: Some(thread),
        }
    }

    /// Hands `done`'s entries over, leaving it empty; waits while the
    /// queue is full. False when the publisher thread is gone.
    pub(crate) fn send(&self, done: &mut Done) -> bool {
        if done.is_empty() {
            return true;
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PUBLISH_EVERY));
        let batch = std::mem::replace(done, next);
        self.enqueue(Publication::Applied(batch))
    }

    /// Reports `session` closed once every entry handed over before is
    /// answered. False when the publisher thread is gone.
    pub(crate) fn session_closed(&self, session: u64) -> bool {
        self.enqueue(Publication::SessionClosed(session))
    }

    /// Has the history answer its part of a read, after the entries
    /// handed over before. False when the publisher thread is gone.
    pub(crate) fn read(&self, read: HistoryRead) -> bool {
        self.enqueue(Publication::Read(read))
    }

    /// Has the snapshot writer write `replicated` (the state as of
    /// `meta`, the last entry handed over) with the history as of the
    /// same entry; `last`: the writer takes it even if busy. False when
    /// the publisher thread is gone.
    pub(crate) fn snapshot(&self, meta: RaftMeta, replicated: ReplicatedCopy, last: bool) -> bool {
        self.enqueue(Publication::Snapshot {
            meta,
            replicated,
            last,
        })
    }

    /// Replaces the history, after the entries handed over before.
    pub(crate) fn install(&self, history: History) -> bool {
        self.enqueue(Publication::Install(history))
    }

    fn enqueue(&self, publication: Publication) -> bool {
        self.queue
            .as_ref()
            .is_some_and(|queue| queue.send(publication).is_ok())
    }

    /// Waits until everything handed over is published and the thread
    /// has ended (which closes the broadcast, unless a handle still holds
    /// a sender).
    pub(crate) fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Publisher {
    /// A core thread that unwinds still lets what it handed over go out.
    fn drop(&mut self) {
        self.stop();
    }
}

impl PublishLoop {
    /// Publishes until the core thread's sender is gone and the queue is
    /// empty, then waits for the snapshot writer.
    pub(crate) fn run(mut self) {
        let mut last = None;
        while let Ok(publication) = self.queue.recv() {
            match publication {
                Publication::Applied(mut done) => {
                    self.publish(&mut done);
                    let _ = self.spare.try_send(done);
                }
                Publication::SessionClosed(session) => {
                    if let Some(watch) = &self.watch {
                        watch.report(session);
                    }
                }
                Publication::Read(read) => read.answer(&self.history),
                Publication::Snapshot {
                    meta,
                    replicated,
                    last: false,
                } => {
                    let history = &self.history;
                    self.snapshots.offer(meta, || StateCopy {
                        replicated,
                        history: history.clone(),
                    });
                }
                Publication::Snapshot {
                    meta, replicated, ..
                } => {
                    let history = self.history.clone();
                    last = Some((
                        meta,
                        StateCopy {
                            replicated,
                            history,
                        },
                    ));
                }
                Publication::Install(history) => self.history = history,
            }
        }
        let PublishLoop {
            snapshots, events, ..
        } = self;
        match last {
            Some((meta, copy)) => snapshots.finish(meta, copy),
            None => snapshots.finish_without(),
        }
        // Last: a subscriber that sees the broadcast closed finds the
        // final snapshot written.
        drop(events);
    }

    /// Records the entries in the history, counts them, answers the
    /// waiting gateways and publishes the entries, in log order, and
    /// records how long each answered sender waited.
    fn publish(&mut self, done: &mut Done) {
        let now = Instant::now();
        let mut acks = [0u64; PUBLISH_EVERY];
        let (mut answered, commands) = (0, done.len() as u64);
        let mut ready = std::mem::take(&mut self.ready);
        for outcome in done.drain(..) {
            let Outcome {
                mut applied,
                note,
                reply,
            } = outcome;
            note.record(&mut self.history, &mut applied);
            ready.push((Arc::new(applied), reply));
        }
        // Before the answers: whoever hears one finds it counted.
        count(&ready, &self.metrics);
        for (applied, reply) in ready.drain(..) {
            if let Some(reply) = reply {
                let _ = reply.tx.send(applied.clone());
                if let Some(slot) = acks.get_mut(answered) {
                    *slot = now.saturating_duration_since(reply.since).as_nanos() as u64;
                    answered += 1;
                }
            }
            // No subscriber is fine; a lagging one loses messages and is
            // told so by its receiver.
            let _ = self.events.send(applied);
        }
        self.ready = ready;
        self.metrics
            .window
            .record_commands(now, commands, &acks[..answered]);
    }
}

/// The counters the status page and the scheduler read.
fn count(ready: &[(Arc<Applied>, Option<Reply>)], metrics: &Metrics) {
    let Some((last, _)) = ready.last() else {
        return;
    };
    let mut events = 0;
    for (applied, _) in ready {
        events += applied.events.len() as u64;
        for event in &applied.events {
            if let EventKind::Rejected(rejected) = &event.kind {
                metrics.record_reject(rejected.reason.as_str());
            }
        }
    }
    metrics
        .commands
        .fetch_add(ready.len() as u64, Ordering::Relaxed);
    metrics.applied_ts.store(last.ts, Ordering::Relaxed);
    metrics.events.fetch_add(events, Ordering::Relaxed);
}
