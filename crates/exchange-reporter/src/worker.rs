//! The reporter thread's loop: takes applied entries from the core's
//! broadcast in batches, writes each batch in one transaction, and
//! re-derives from the committed log whatever the broadcast dropped.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use exchange_reporting::{EntryRecord, Position, Store, StoreError, Target};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::catch_up::{committed_entries_from, CatchUpError, Scratch};
use super::Inner;
use exchange_node::state::Applied;

/// How long the reporter waits for a live entry before it checks whether
/// the core has applied entries it never received.
const IDLE: Duration = Duration::from_millis(50);

/// The longest sleep of a batch's linger between looks at the channel (a
/// default linger is one sleep); at most this much more than a full batch
/// waits for its commit.
const LINGER_SLICE: Duration = Duration::from_millis(10);

/// The least time between two warnings that the receiver lagged.
const LAG_WARNING_EVERY: Duration = Duration::from_secs(5);

/// How often a pause between retries looks whether the node is stopping.
const STOP_CHECK: Duration = Duration::from_millis(50);

pub(super) struct Worker {
    pub(super) store: Store,
    pub(super) target: Target,
    pub(super) data_dir: PathBuf,
    pub(super) max_batch: usize,
    pub(super) linger: Duration,
    pub(super) inner: Arc<Inner>,
    /// See [`ReporterConfig::replica_of_many`].
    pub(super) replica_of_many: bool,
    /// Run in the background, on these CPUs, once caught up with recovery
    /// (see [`Worker::run`]).
    pub(super) background: Option<exchange_node::threads::CpuPlacement>,
    /// The scratch state the last catch-up ended with: the next one starts
    /// from it rather than from a snapshot when it can (a second lag soon
    /// after the first then replays only what came between). It holds a
    /// copy of the exchange's state as of that catch-up.
    pub(super) scratch: Option<Scratch>,
    /// When the last lag warning went out, and what was missed since.
    pub(super) lag_warned: Option<Instant>,
    pub(super) missed_unreported: u64,
    /// The store's position and the Raft index of the record holding it,
    /// as of this process's last write (unknown after a start).
    pub(super) position_raft: Option<(u64, u64)>,
}

impl Worker {
    /// A worker that only writes what it is given: the reporter process's
    /// ([`crate::remote`]), which has no journal to catch up from.
    pub(super) fn writer(
        store: Store,
        config: &crate::remote::RemoteConfig,
        inner: Arc<Inner>,
    ) -> Worker {
        Worker {
            store,
            target: config.target.clone(),
            data_dir: config.data_dir.clone(),
            max_batch: config.max_batch.max(1),
            linger: config.linger,
            inner,
            replica_of_many: true,
            background: None,
            scratch: None,
            lag_warned: None,
            missed_unreported: 0,
            position_raft: None,
        }
    }

    /// The last command the store holds.
    pub(super) fn position(&self) -> u64 {
        self.store.position().log_index
    }

    /// Catches up with `recovered` (what recovery applied) at normal
    /// priority, then goes to the background if configured: the node
    /// reports ready and opens its HTTP gateway only once the store holds
    /// what recovery applied, and an idle-policy thread on a busy machine
    /// (other processes, or a restart under load) could take minutes.
    pub(super) fn run(mut self, mut events: broadcast::Receiver<Arc<Applied>>, recovered: u64) {
        self.retry(&|| events.is_closed(), |worker| worker.catch_up(recovered));
        if let Some(cpus) = &self.background {
            exchange_node::threads::background(cpus);
        }
        // Only to wait for the next entry with a timeout.
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        else {
            tracing::error!(
                "the reporter cannot start its timer; the reporting store stays behind"
            );
            return;
        };
        let mut batch: Vec<Arc<Applied>> = Vec::with_capacity(self.max_batch);
        loop {
            let next = runtime.block_on(async { tokio::time::timeout(IDLE, events.recv()).await });
            match next {
                Ok(Ok(first)) => batch.push(first),
                Ok(Err(RecvError::Lagged(missed))) => {
                    self.lagged(missed);
                    continue;
                }
                Ok(Err(RecvError::Closed)) => break,
                // Idle: whatever the core applied and we did not receive
                // (applied before we subscribed, or lost to a lag with
                // nothing after it) comes from the journal.
                Err(_) => {
                    let applied = self.inner.core.applied_index.load(Ordering::Acquire);
                    if applied > self.store.position().log_index {
                        self.retry(&|| events.is_closed(), |worker| worker.catch_up(applied));
                    }
                    continue;
                }
            }
            // Take what else is waiting, and what arrives within the
            // linger: one transaction for all of it. A transaction writes
            // every page it touches, so a few large ones cost far less than
            // many small ones. The linger is slept through in short slices
            // rather than waiting on the channel: a receiver waiting on it
            // is woken by every publication (the core publishes entries in
            // bursts), a system call on the core thread each time, and the
            // entries are only written at the end anyway. The slices bound
            // how much can queue meanwhile, far below the channel's room,
            // however long the linger.
            let deadline = Instant::now() + self.linger;
            let mut closed = false;
            while batch.len() < self.max_batch {
                let next = match events.try_recv() {
                    Ok(next) => Ok(next),
                    Err(TryRecvError::Empty) => {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::sleep(left.min(LINGER_SLICE));
                        continue;
                    }
                    Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
                    Err(TryRecvError::Closed) => Err(RecvError::Closed),
                };
                match next {
                    Ok(next) => batch.push(next),
                    Err(RecvError::Lagged(missed)) => self.lagged(missed),
                    Err(RecvError::Closed) => {
                        closed = true;
                        break;
                    }
                }
            }
            self.retry(&|| events.is_closed(), |worker| worker.write_live(&batch));
            batch.clear();
            if closed {
                break;
            }
        }
    }

    /// Counts entries the broadcast dropped for this receiver; says so at
    /// most once every [`LAG_WARNING_EVERY`], with the total since it last
    /// did: under a sustained lag the receiver lags between every batch,
    /// and a line each time would flood the log.
    fn lagged(&mut self, missed: u64) {
        self.inner.stats.missed.fetch_add(missed, Ordering::Relaxed);
        self.missed_unreported += missed;
        let due = self
            .lag_warned
            .is_none_or(|at| at.elapsed() >= LAG_WARNING_EVERY);
        if due {
            tracing::warn!(
                missed = self.missed_unreported,
                "reporter fell behind the core; catching up from the journal"
            );
            self.missed_unreported = 0;
            self.lag_warned = Some(Instant::now());
        }
    }

    /// Runs `step` until it succeeds, reconnecting in between with a
    /// growing pause: a store that is down delays the record, never loses
    /// it, and never slows the core. Once the node is stopping it gives up
    /// at the first failure, and a pause ends as the node stops: the next
    /// start catches up from the journal, and a store that is down must not
    /// hold up the shutdown.
    pub(super) fn retry(
        &mut self,
        stopping: &dyn Fn() -> bool,
        mut step: impl FnMut(&mut Worker) -> Result<(), CatchUpError>,
    ) {
        let mut pause = Duration::from_millis(50);
        loop {
            match step(self) {
                Ok(()) => return,
                Err(error) => {
                    self.inner.stats.errors.fetch_add(1, Ordering::Relaxed);
                    if stopping() {
                        tracing::error!(
                            %error,
                            "reporting store unavailable at shutdown; \
                             the next start catches up from the journal"
                        );
                        return;
                    }
                    tracing::error!(
                        %error,
                        retry_in_ms = pause.as_millis() as u64,
                        "reporting store write failed"
                    );
                    let until = Instant::now() + pause;
                    while !stopping() {
                        let left = until.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        std::thread::sleep(left.min(STOP_CHECK));
                    }
                    pause = (pause * 2).min(Duration::from_secs(5));
                    match Store::open(&self.target) {
                        Ok(store) => self.store = store,
                        Err(error) => tracing::error!(%error, "reporting store reconnect failed"),
                    }
                }
            }
        }
    }

    /// Writes a batch received live, first re-deriving from the journal
    /// whatever is missing before each run of consecutive entries in it: a
    /// lag while the batch filled up leaves a gap inside the batch, not
    /// only before it.
    fn write_live(&mut self, batch: &[Arc<Applied>]) -> Result<(), CatchUpError> {
        for run in batch.chunk_by(|before, after| after.index == before.index + 1) {
            let first = run[0].index;
            if first > self.store.position().log_index + 1 {
                self.catch_up(first - 1)?;
            }
            self.write(run.iter().map(|a| &**a), false)?;
        }
        Ok(())
    }

    /// Brings the store up to `through` from the journal.
    fn catch_up(&mut self, through: u64) -> Result<(), CatchUpError> {
        let after = self.store.position().log_index;
        if through <= after {
            return Ok(());
        }
        let started = Instant::now();
        // Batches as large as the live path's largest: a catch-up only runs
        // behind, and each transaction has a fixed cost (on SQLite its
        // commit writes every page it dirtied, about 0.4 ms of CPU), so 1,024
        // entries a transaction cost 15-20% more CPU per entry than 4,096
        // (the throughput example, FLOW=e2e).
        let mut pending: Vec<Applied> = Vec::with_capacity(self.max_batch.min(4_096));
        let data_dir = self.data_dir.clone();
        let mut scratch = self.scratch.take();
        let mut read = |worker: &mut Worker, after: u64| {
            let after_raft = worker.raft_index_of(after);
            let replayed = committed_entries_from(
                &data_dir,
                after,
                through,
                after_raft,
                &mut scratch,
                |applied| {
                    pending.push(applied);
                    if pending.len() >= worker.max_batch {
                        worker.write(pending.iter(), true)?;
                        pending.clear();
                    }
                    Ok(())
                },
            )?;
            worker
                .inner
                .stats
                .replayed
                .fetch_add(replayed, Ordering::Relaxed);
            Ok::<_, CatchUpError>(replayed)
        };
        let replayed = match read(self, after) {
            // A replica that joined by snapshot never had what came
            // before it, and a new store on a node that ran without one
            // ([reporting] enabled = false) finds the log compacted: the
            // store's history starts at the oldest state kept. A store
            // that has a position on a single node never gets here (the
            // log is kept from its position on), so there it is an error.
            Err(CatchUpError::BeforeOldestState {
                command, event_seq, ..
            }) if self.replica_of_many || after == 0 => {
                tracing::warn!(
                    from = after + 1,
                    through = command,
                    "entries before the oldest snapshot are no longer on this node; its \
                     reporting store starts after them"
                );
                let skipped = self.store.skip_to(command, event_seq)?;
                self.inner.written.send_replace(skipped.log_index);
                read(self, skipped.log_index)?
            }
            other => other?,
        };
        self.write(pending.iter(), true)?;
        self.scratch = scratch;
        tracing::info!(
            from = after + 1,
            through,
            replayed,
            ms = started.elapsed().as_millis() as u64,
            "reporting store caught up from the journal"
        );
        Ok(())
    }

    /// The Raft index of the log record holding command `index`, when it is
    /// the last command this process wrote.
    fn raft_index_of(&self, index: u64) -> Option<u64> {
        self.position_raft
            .filter(|&(written, _)| written == index)
            .map(|(_, raft_index)| raft_index)
    }

    /// Writes one batch; `from_journal` counts it as caught up.
    pub(super) fn write<'a>(
        &mut self,
        entries: impl Iterator<Item = &'a Applied>,
        from_journal: bool,
    ) -> Result<(), CatchUpError> {
        let mut raft_index = None;
        let records: Vec<EntryRecord<'_>> = entries
            .inspect(|a| raft_index = Some((a.index, a.raft_index)))
            .map(crate::entry_record)
            .collect();
        let last_ts = records.last().map(|r| (r.index, r.ts));
        if records.is_empty() {
            return Ok(());
        }
        let before = self.store.position().log_index;
        let started = Instant::now();
        let position = match self.store.write(&records) {
            Ok(position) => position,
            Err(error) => self.write_apart(&records, error)?,
        };
        let stats = &self.inner.stats;
        stats
            .commit_ns_total
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if position.log_index > before {
            let fresh = records.iter().filter(|r| r.index > before);
            let events: usize = fresh.map(|r| r.events.len()).sum();
            stats
                .entries
                .fetch_add(position.log_index - before, Ordering::Relaxed);
            stats.events.fetch_add(events as u64, Ordering::Relaxed);
            if from_journal {
                stats
                    .caught_up
                    .fetch_add(position.log_index - before, Ordering::Relaxed);
            }
            stats.batches.fetch_add(1, Ordering::Relaxed);
            self.inner
                .core
                .retain_from
                .store(position.log_index, Ordering::Release);
            // A snapshot before the last entry's Raft entry replays to
            // it. Index 1 is the virtual genesis snapshot, never on disk:
            // a reader that far back needs the whole log (floor 0).
            let base = raft_index.map(|(_, index)| index.saturating_sub(1));
            if let Some(base) = base.filter(|&base| base > 1) {
                self.inner
                    .core
                    .retain_from_raft
                    .store(base, Ordering::Release);
            }
            // Before the position: a reader may pair the old position with
            // the new time (understating the lag by one batch, briefly),
            // never the new position with an older time.
            if let Some((_, ts)) = last_ts.filter(|&(index, _)| index == position.log_index) {
                self.inner.written_ts.store(ts, Ordering::Relaxed);
            }
            self.inner.written.send_replace(position.log_index);
            self.position_raft = raft_index.filter(|&(index, _)| index == position.log_index);
        }
        Ok(())
    }

    /// A batch that failed, written entry by entry, so that an entry the
    /// store cannot take is found and skipped rather than retried forever
    /// with everything after it.
    fn write_apart(
        &mut self,
        records: &[EntryRecord<'_>],
        batch_error: StoreError,
    ) -> Result<Position, CatchUpError> {
        let mut position = self.store.position();
        if records.len() == 1 {
            return self.undeliverable(&records[0], batch_error);
        }
        for record in records {
            if record.index <= position.log_index {
                continue;
            }
            position = match self.store.write(std::slice::from_ref(record)) {
                Ok(position) => position,
                Err(error) => self.undeliverable(record, error)?,
            };
        }
        Ok(position)
    }

    /// `record` failed on its own with `error`: skipped into the store's
    /// dead letters when the error is the entry's own (a value or a
    /// constraint the store refuses, which no retry changes); otherwise
    /// the error, for the caller to retry (the store may be down, and an
    /// entry is never skipped for that). If the store cannot take the dead
    /// letter either, the error too.
    fn undeliverable(
        &mut self,
        record: &EntryRecord<'_>,
        error: StoreError,
    ) -> Result<Position, CatchUpError> {
        if !error.is_entry_error() {
            return Err(error.into());
        }
        let why = error.to_string();
        match self.store.dead_letter(record, &why) {
            Ok(position) => {
                self.inner
                    .stats
                    .dead_letters
                    .fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    index = record.index,
                    command = record.command,
                    error = %why,
                    "reporting store cannot write this log entry: skipped, recorded in its \
                     dead_letters table"
                );
                Ok(position)
            }
            Err(_) => Err(error.into()),
        }
    }
}
