//! The path every command takes: gateway → Raft thread → core thread.
//!
//! The Raft thread ([`crate::replication`]) takes whatever commands have
//! queued, stamps them with the time, proposes them as one Raft entry,
//! makes it durable with one fsync (group commit: the batch is everything
//! that arrived while the previous one was written) and replicates it.
//! Only entries Raft reports committed reach the core thread, which applies
//! each command to the state and hands the outcomes to the publisher
//! thread ([`crate::publisher`]), which answers the waiting gateway and
//! publishes the events. The threads overlap: the core applies batch N
//! while Raft syncs and replicates batch N+1, and the publisher answers
//! batch N-1.
//!
//! Every queue is bounded. A gateway that finds the submit queue full gets
//! `Overloaded` at once instead of waiting; on a node that is not the
//! leader it gets `NotLeader`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender, TrySendError};
use exchange_replication::transport::Transport;
use exchange_replication::{Message, ReplicaNode};
use exchange_types::AccountId;
use tokio::sync::{broadcast, oneshot};

use crate::core_state::{CoreState, HistoryNote};
use crate::entry::LogEntry;
use crate::metrics::Metrics;
use crate::mirror::follow::Follow;
use crate::mirror::forwarder::Forwarder;
use crate::mirror::renew::SessionWatch;
use crate::mirror::{MirrorRole, MirrorSettings};
use crate::parked;
use crate::pipeline::{CommittedBatch, CoreMsg, Reply, Submission};
use crate::publisher::{Done, Outcome, PublishLoop, PublishTo, Publisher, PUBLISH_EVERY};
use crate::reads::{self, Read, SharedCredentials};
use crate::replication::{
    ClusterShared, MembershipError, RaftControl, RaftLoop, RaftMeta, ReplicationStatus,
};
use crate::snapshot_writer::{SnapshotWriter, SnapshotsIdle};
use crate::state::{Applied, ServerState};

// What a gateway or reader asks of a running node: the methods of
// [`Handle`], apart from the threads that serve them.
#[path = "sequencer_handle.rs"]
mod handle;

#[path = "submit_error.rs"]
mod submit_error;
pub use submit_error::SubmitError;

/// Tunables of the pipeline.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    pub submit_queue: usize,
    pub core_queue: usize,
    pub events_buffer: usize,
    /// Take a snapshot after this many entries (0: never).
    pub snapshot_every: u64,
    pub snapshot_dir: std::path::PathBuf,
    /// What HMAC API secrets are derived from ([`crate::master_key`]).
    pub master_key: crate::master_key::MasterKey,
}

/// What the Raft thread is started with.
pub(crate) struct ReplicaParts {
    pub node: ReplicaNode,
    pub transport: Option<Transport>,
    pub inbox: Receiver<Message>,
    pub tick: std::time::Duration,
    pub learned_peers: std::path::PathBuf,
}

/// A cloneable way in to a running node.
#[derive(Clone)]
pub struct Handle {
    submit: Sender<Submission>,
    core: parked::Sender<CoreMsg>,
    events: broadcast::Sender<Arc<Applied>>,
    pub metrics: Arc<Metrics>,
    failed: Arc<AtomicBool>,
    cluster: Arc<ClusterShared>,
    control: Sender<RaftControl>,
    credentials: Arc<SharedCredentials>,
    /// A gateway's mirror: writes go to whichever replica leads, so this
    /// process never answers `NotLeader`.
    forwards: bool,
}

/// Marks the pipeline failed if its thread unwinds or returns early, so
/// `/ready` stops claiming a node that can no longer sequence.
struct FailGuard {
    failed: Arc<AtomicBool>,
    clean: bool,
}

impl Drop for FailGuard {
    fn drop(&mut self) {
        if !self.clean || std::thread::panicking() {
            self.failed.store(true, Ordering::Release);
        }
    }
}

/// The running threads; dropping every [`Handle`] stops them.
pub struct Pipeline {
    pub handle: Handle,
    threads: Vec<JoinHandle<()>>,
    /// A mirror's: tells its stream thread to stop.
    stop: Option<Arc<AtomicBool>>,
}

impl Pipeline {
    /// Starts the Raft and core threads over a recovered state and the
    /// replica it was recovered from.
    pub(crate) fn start(
        state: CoreState,
        replica: ReplicaParts,
        config: PipelineConfig,
        metrics: Arc<Metrics>,
    ) -> Pipeline {
        let (submit_tx, submit_rx) = bounded(config.submit_queue);
        let (core_tx, core_rx) = parked::bounded(config.core_queue);
        let (events, _) = broadcast::channel(config.events_buffer);
        let failed = Arc::new(AtomicBool::new(false));
        let cluster = Arc::new(ClusterShared::default());
        cluster.publish(&replica.node);
        cluster.set_disk_alarm(replica.node.disk_alarm().clone());
        cluster.set_raft_applied(state.state.raft_index);
        let (control_tx, control_rx) = bounded(64);
        let credentials = Arc::new(SharedCredentials::new(
            &state.state.credentials,
            config.master_key.clone(),
        ));
        let handle = Handle {
            control: control_tx,
            submit: submit_tx,
            core: core_tx.clone(),
            events: events.clone(),
            metrics: metrics.clone(),
            failed: failed.clone(),
            cluster: cluster.clone(),
            credentials: credentials.clone(),
            forwards: false,
        };
        let raft_failed = failed.clone();
        // Snapshots written by the writer thread, for Raft to compact below.
        let (done_tx, done_rx) = unbounded();
        let snapshots =
            SnapshotWriter::start(config.snapshot_dir.clone(), done_tx, metrics.clone());
        let raft = RaftLoop {
            node: replica.node,
            transport: replica.transport,
            inbox: replica.inbox,
            submit: submit_rx,
            core: core_tx,
            snapshots_done: done_rx,
            control: control_rx,
            learned_peers: replica.learned_peers,
            shared: cluster.clone(),
            metrics: metrics.clone(),
            tick: replica.tick,
            last_ts: state.state.engine_now(),
        };
        let raft_thread = spawn_raft_thread(raft, raft_failed);
        let outlets = Outlets {
            events,
            metrics,
            snapshots,
            cluster,
            credentials,
            watch: None,
        };
        let core_thread = spawn_core_thread(state, core_rx, config, outlets, failed);
        Pipeline {
            handle,
            threads: vec![raft_thread, core_thread],
            stop: None,
        }
    }

    /// Starts a mirror ([`crate::mirror`]): the core thread over the
    /// empty state, fed from a replica's log stream, and for a gateway the
    /// forwarder of its submissions. It writes nothing to disk.
    pub fn start_mirror(settings: MirrorSettings, mut config: PipelineConfig) -> Pipeline {
        config.snapshot_every = 0;
        let (submit_tx, submit_rx) = bounded(config.submit_queue);
        let (core_tx, core_rx) = parked::bounded(config.core_queue);
        let (events, _) = broadcast::channel(config.events_buffer);
        let failed = Arc::new(AtomicBool::new(false));
        let cluster = Arc::new(ClusterShared::default());
        let metrics = Arc::new(Metrics::default());
        let state = CoreState::new();
        let credentials = Arc::new(SharedCredentials::new(
            &state.state.credentials,
            config.master_key.clone(),
        ));
        let handle = Handle {
            control: bounded(1).0,
            submit: submit_tx,
            core: core_tx.clone(),
            events: events.clone(),
            metrics: metrics.clone(),
            failed: failed.clone(),
            cluster: cluster.clone(),
            credentials: credentials.clone(),
            forwards: matches!(settings.role, MirrorRole::Gateway { .. }),
        };
        let mut threads = Vec::new();
        let (inflight, watch) = match &settings.role {
            MirrorRole::Gateway { name, ingress, .. } => {
                let (inflight, forwarder, watch) =
                    Forwarder::new(submit_rx, name, ingress, &settings, &cluster);
                threads.push(spawn_named("forwarder", move || forwarder.run()));
                (Some(inflight), Some(watch))
            }
            MirrorRole::MarketData => (None, None),
        };
        cluster.set_mirror_role(settings.role.as_str());
        let stop = Arc::new(AtomicBool::new(false));
        let follow = Follow {
            follower: crate::stream::follow(
                settings.stream.clone(),
                settings.key.clone(),
                settings.process_id,
                0,
            ),
            core: core_tx,
            inflight,
            cluster: cluster.clone(),
            stop: stop.clone(),
        };
        threads.push(spawn_named("follow", move || follow.run()));
        let (done_tx, _) = unbounded();
        let snapshots =
            SnapshotWriter::start(config.snapshot_dir.clone(), done_tx, metrics.clone());
        let outlets = Outlets {
            events,
            metrics,
            snapshots,
            cluster,
            credentials,
            watch,
        };
        threads.push(spawn_core_thread(state, core_rx, config, outlets, failed));
        Pipeline {
            handle,
            threads,
            stop: Some(stop),
        }
    }

    /// Waits for the threads after every handle is gone.
    pub fn join(self) {
        self.handle.stop_disk_retries();
        drop(self.handle);
        if let Some(stop) = &self.stop {
            stop.store(true, Ordering::Release);
        }
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

fn spawn_named(name: &str, run: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(run)
        .expect("spawn a mirror thread")
}

/// A thread on the order path (short scheduling slice, see
/// [`crate::threads`]) running `run`; a panic, or `run` returning false,
/// marks the pipeline failed.
fn spawn_order_path_thread(
    name: &'static str,
    failed: Arc<AtomicBool>,
    run: impl FnOnce() -> bool + Send + 'static,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            crate::threads::latency_sensitive();
            let mut guard = FailGuard {
                failed,
                clean: false,
            };
            guard.clean = run();
        })
        .unwrap_or_else(|error| panic!("spawn the {name} thread: {error}"))
}

/// The Raft thread; a failure marks the pipeline failed.
fn spawn_raft_thread(raft: RaftLoop, failed: Arc<AtomicBool>) -> JoinHandle<()> {
    spawn_order_path_thread("raft", failed, move || raft.run())
}

/// The core thread, and the publisher thread it hands its results to
/// (and waits for when it ends), which keeps the history from here on; a
/// failure of either marks the pipeline failed.
fn spawn_core_thread(
    state: CoreState,
    core: parked::Receiver<CoreMsg>,
    config: PipelineConfig,
    outlets: Outlets,
    failed: Arc<AtomicBool>,
) -> JoinHandle<()> {
    let Outlets {
        events,
        metrics,
        snapshots,
        cluster,
        credentials,
        watch,
    } = outlets;
    let CoreState { state, history } = state;
    let snapshots_idle = snapshots.idle_probe();
    let to = PublishTo {
        events,
        metrics: metrics.clone(),
        snapshots,
        watch: watch.clone(),
    };
    let publish_failed = failed.clone();
    let publisher = Publisher::start(history, to, |publish| {
        spawn_publisher_thread(publish, publish_failed)
    });
    let sides = CoreSides {
        publisher,
        metrics,
        snapshots_idle,
        cluster,
        credentials,
        watch,
    };
    spawn_order_path_thread("core", failed, move || {
        core_loop(state, core, config, sides)
    })
}

/// The publisher thread; a failure marks the pipeline failed. It wakes
/// the gateways: on the order path as much as the core.
fn spawn_publisher_thread(publish: PublishLoop, failed: Arc<AtomicBool>) -> JoinHandle<()> {
    spawn_order_path_thread("publish", failed, move || {
        publish.run();
        true
    })
}

/// Where the core thread's results go besides the waiting gateways.
struct Outlets {
    events: broadcast::Sender<Arc<Applied>>,
    metrics: Arc<Metrics>,
    snapshots: SnapshotWriter,
    cluster: Arc<ClusterShared>,
    credentials: Arc<SharedCredentials>,
    /// On an order-entry gateway: the session its forwarder sends in.
    watch: Option<Arc<SessionWatch>>,
}

/// What the core thread works with besides its state: the [`Outlets`]
/// with the broadcast and the snapshot writer moved to the publisher
/// thread.
struct CoreSides {
    publisher: Publisher,
    metrics: Arc<Metrics>,
    snapshots_idle: SnapshotsIdle,
    cluster: Arc<ClusterShared>,
    credentials: Arc<SharedCredentials>,
    watch: Option<Arc<SessionWatch>>,
}

/// Returns false when the state cannot go on (a snapshot from the leader
/// that does not restore) or its results have nowhere to go (the
/// publisher thread failed).
fn core_loop(
    state: ServerState,
    core: parked::Receiver<CoreMsg>,
    config: PipelineConfig,
    sides: CoreSides,
) -> bool {
    let CoreSides {
        publisher,
        metrics,
        snapshots_idle,
        cluster,
        credentials,
        watch,
    } = sides;
    let mut thread = CoreThread {
        state,
        since_snapshot: 0,
        last_meta: None,
        done: Vec::with_capacity(PUBLISH_EVERY),
        snapshot_every: config.snapshot_every,
        snapshots_idle,
        publisher,
        published: true,
        metrics: &metrics,
        cluster: &cluster,
        credentials: &credentials,
    };
    while let Ok(message) = core.recv() {
        match message {
            CoreMsg::Read(read) => {
                // The history's part, if any, after the entries applied
                // so far: as of the same command as the state's.
                if let Some(rest) = reads::answer_state(read, &thread.state) {
                    thread.published &= thread.publisher.read(rest);
                }
            }
            CoreMsg::SnapshotNow => thread.snapshot_now(),
            CoreMsg::Install { meta, data } => {
                if !thread.install(meta, &data) {
                    return false;
                }
            }
            CoreMsg::Entries(batches) => thread.apply(batches),
        }
        if let Some(watch) = &watch {
            // Reported by the publisher, after the answers of the entries
            // applied before: the forwarder then answers what the closed
            // session left unapplied.
            if let Some(session) = watch.closed(&thread.state.sessions) {
                thread.published &= thread.publisher.session_closed(session);
            }
        }
        if !thread.published {
            tracing::error!("the publisher thread stopped; stopping");
            return false;
        }
    }
    let CoreThread {
        state,
        since_snapshot,
        last_meta,
        publisher,
        ..
    } = thread;
    // Leave a snapshot behind on a clean shutdown so the next start is
    // fast; the publisher hands it to the writer, and waits for it.
    if let Some(meta) = last_meta {
        if since_snapshot > 0 && config.snapshot_every > 0 {
            publisher.snapshot(meta, state.replicated(), true);
        }
    }
    publisher.finish();
    true
}

/// What the core thread keeps between messages, and where its results go.
struct CoreThread<'a> {
    /// The replicated state; its history is the publisher's.
    state: ServerState,
    since_snapshot: u64,
    last_meta: Option<RaftMeta>,
    /// Applied entries waiting to be handed to the publisher together.
    done: Done,
    snapshot_every: u64,
    snapshots_idle: SnapshotsIdle,
    publisher: Publisher,
    /// False once the publisher thread could not be handed a result.
    published: bool,
    metrics: &'a Metrics,
    cluster: &'a ClusterShared,
    credentials: &'a SharedCredentials,
}

impl CoreThread<'_> {
    /// Offers the writer a snapshot as of the last entry applied, unless
    /// it is still busy with the previous one (the next one will do).
    /// Copying the replicated state is the only part on the core thread;
    /// the publisher adds the history as of the same entry, and
    /// serialising and the disk work happen on the writer's.
    fn snapshot_now(&mut self) {
        if let Some(meta) = &self.last_meta {
            self.since_snapshot = 0;
            if self.snapshots_idle.idle() {
                self.published &=
                    self.publisher
                        .snapshot(meta.clone(), self.state.replicated(), false);
            }
        }
    }

    /// Replaces the state with the leader's snapshot, and the publisher's
    /// history with the snapshot's; false when it does not restore.
    fn install(&mut self, meta: RaftMeta, data: &[u8]) -> bool {
        let restored = if data.is_empty() {
            Ok(CoreState::new())
        } else {
            CoreState::restore(data)
        };
        match restored {
            Ok(CoreState { mut state, history }) => {
                state.raft_index = meta.index;
                self.state = state;
                self.published &= self.publisher.install(history);
                self.credentials.replace(&self.state.credentials);
                tracing::info!(index = meta.index, "installed a snapshot from the leader");
                self.cluster.set_raft_applied(meta.index);
                self.metrics
                    .applied_index
                    .store(self.state.applied_index, Ordering::Relaxed);
                self.last_meta = Some(meta);
                true
            }
            Err(error) => {
                tracing::error!(%error, "the leader's snapshot does not restore; stopping");
                false
            }
        }
    }

    /// Applies what Raft committed, hands it to the publisher, and offers
    /// a snapshot when one is due.
    fn apply(&mut self, batches: Vec<CommittedBatch>) {
        for batch in batches {
            let mut items = batch.items.into_iter().peekable();
            while let Some((entry, reply)) = items.next() {
                if let Some((next, _)) = items.peek() {
                    self.state.prefetch(next);
                }
                self.apply_entry(&entry, reply, batch.meta.index);
            }
            self.state.raft_index = batch.meta.index;
            self.last_meta = Some(batch.meta);
        }
        self.metrics
            .applied_index
            .store(self.state.applied_index, Ordering::Relaxed);
        // Before the answers: a gateway hearing of a revoked key
        // must find this node caught up, and so call the key
        // unknown rather than not yet known.
        self.cluster.set_raft_applied(self.state.raft_index);
        self.hand_over();
        if self.snapshot_every > 0 && self.since_snapshot >= self.snapshot_every {
            self.snapshot_now();
        }
    }

    fn apply_entry(&mut self, entry: &LogEntry, reply: Option<Reply>, raft_index: u64) {
        let index = self.state.applied_index + 1;
        let mut applied = self.state.apply(index, entry);
        let note = HistoryNote::of(entry, &applied);
        applied.raft_index = raft_index;
        // Before the answer goes out: whoever hears of a new key can sign
        // with it at once, and a revoked one is refused from then on.
        let key_ids = entry.key_ids();
        if !key_ids.is_empty() {
            self.credentials.refresh(&key_ids, &self.state.credentials);
        }
        self.done.push(Outcome {
            applied,
            note,
            reply,
        });
        if self.done.len() == PUBLISH_EVERY {
            self.hand_over();
        }
        self.since_snapshot += 1;
    }

    /// Sends the entries applied since the last time to the publisher.
    fn hand_over(&mut self) {
        self.published &= self.publisher.send(&mut self.done);
    }
}
