//! The publisher thread: where the core thread's results go.
//!
//! The core thread only applies. What an applied entry sets off besides
//! happens on this thread: the waiting gateway's answer (a tokio oneshot:
//! waking its task is a system call when the worker sleeps), the events
//! broadcast (a lock its subscribers' tasks take too, and their
//! wake-ups), the counters and the acknowledgement latencies. The core
//! hands over up to [`PUBLISH_EVERY`] applied entries in one message, so
//! it pays at most one wake-up per message, and none while this thread
//! is busy.
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
//! waits for this thread, which publishes everything queued and then
//! drops the broadcast's sender: subscribers (the reporting service among
//! them) see `Closed` only after the last entry.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use exchange_types::EventKind;
use tokio::sync::broadcast;

use crate::metrics::Metrics;
use crate::mirror::renew::SessionWatch;
use crate::parked;
use crate::pipeline::Reply;
use crate::state::Applied;

/// Applied entries, in log order, with the replies of those this node
/// proposed.
pub(crate) type Done = Vec<(Arc<Applied>, Option<Reply>)>;

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
    events: broadcast::Sender<Arc<Applied>>,
    metrics: Arc<Metrics>,
    /// On an order-entry gateway: where a closed session is reported.
    watch: Option<Arc<SessionWatch>>,
}

impl Publisher {
    /// Starts the thread `spawn` makes of the loop, which publishes to
    /// `events` and reports closed sessions to `watch`.
    pub(crate) fn start(
        events: broadcast::Sender<Arc<Applied>>,
        metrics: Arc<Metrics>,
        watch: Option<Arc<SessionWatch>>,
        spawn: impl FnOnce(PublishLoop) -> JoinHandle<()>,
    ) -> Publisher {
        let (queue_tx, queue_rx) = parked::bounded(PUBLISH_QUEUE);
        let (spare_tx, spare_rx) = crossbeam_channel::bounded(SPARE_VECTORS);
        let thread = spawn(PublishLoop {
            queue: queue_rx,
            spare: spare_tx,
            events,
            metrics,
            watch,
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
    /// empty.
    pub(crate) fn run(self) {
        while let Ok(publication) = self.queue.recv() {
            match publication {
                Publication::Applied(mut done) => {
                    publish(&mut done, &self.events, &self.metrics);
                    let _ = self.spare.try_send(done);
                }
                Publication::SessionClosed(session) => {
                    if let Some(watch) = &self.watch {
                        watch.report(session);
                    }
                }
            }
        }
    }
}

/// Counts the entries, answers the waiting gateways and publishes the
/// entries, in log order, and records how long each answered sender
/// waited.
fn publish(done: &mut Done, events: &broadcast::Sender<Arc<Applied>>, metrics: &Metrics) {
    count(done, metrics);
    let now = Instant::now();
    let mut acks = [0u64; PUBLISH_EVERY];
    let (mut answered, commands) = (0, done.len() as u64);
    for (applied, reply) in done.drain(..) {
        if let Some(reply) = reply {
            let _ = reply.tx.send(applied.clone());
            if let Some(slot) = acks.get_mut(answered) {
                *slot = now.saturating_duration_since(reply.since).as_nanos() as u64;
                answered += 1;
            }
        }
        // No subscriber is fine; a lagging one loses messages and is told
        // so by its receiver.
        let _ = events.send(applied);
    }
    metrics
        .window
        .record_commands(now, commands, &acks[..answered]);
}

/// The counters the status page and the scheduler read, before the
/// entries are answered.
fn count(done: &Done, metrics: &Metrics) {
    let Some((last, _)) = done.last() else {
        return;
    };
    let mut events = 0;
    for (applied, _) in done {
        events += applied.events.len() as u64;
        for event in &applied.events {
            if let EventKind::Rejected(rejected) = &event.kind {
                metrics.record_reject(rejected.reason.as_str());
            }
        }
    }
    metrics
        .commands
        .fetch_add(done.len() as u64, Ordering::Relaxed);
    metrics.applied_ts.store(last.ts, Ordering::Relaxed);
    metrics.events.fetch_add(events, Ordering::Relaxed);
}
