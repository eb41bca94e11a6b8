//! The reporter process's thread: takes the log from the stream, applies
//! it to its state, writes the outcomes in batches, and snapshots its
//! state now and then.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use exchange_node::state::Applied;
use exchange_node::stream::{self, Follower, StreamItem};
use exchange_node::ServerState;

use super::{state, Fault, RemoteConfig, Status};
use crate::worker::Worker;

/// How long the thread waits for the stream before it looks whether it
/// is stopped.
const IDLE: Duration = Duration::from_millis(100);

pub(super) struct Remote {
    worker: Worker,
    /// The state after every command received; the store holds all of
    /// them once a batch is written.
    state: ServerState,
    /// The term of the Raft entry at `state.raft_index`.
    term: u64,
    status: Arc<Status>,
    config: RemoteConfig,
    /// The command the newest kept snapshot holds through.
    snapshotted: u64,
}

impl Remote {
    pub(super) fn new(
        worker: Worker,
        state: ServerState,
        term: u64,
        status: Arc<Status>,
        config: &RemoteConfig,
    ) -> Remote {
        let snapshotted = state.applied_index;
        status
            .written_raft
            .store(state.raft_index, Ordering::Release);
        Remote {
            worker,
            state,
            term,
            status,
            config: config.clone(),
            snapshotted,
        }
    }

    fn stopping(&self) -> bool {
        self.status.stop.load(Ordering::Acquire)
    }

    /// Until stopped, or until the store cannot be completed. A replica
    /// that offers only a snapshot past the store may just be behind the
    /// others (it installed its leader's snapshot): the next replica is
    /// asked, and the gap is declared only once every one offered that.
    pub(super) fn run(mut self) {
        let replicas = self.config.stream.clone();
        let mut first = 0;
        let mut gaps_in_a_row = 0;
        while !self.stopping() {
            let mut order = replicas.clone();
            order.rotate_left(first % replicas.len().max(1));
            let follower = stream::follow(
                order,
                self.config.key.clone(),
                self.config.process_id,
                self.state.raft_index + 1,
            );
            let ended = self.follow(&follower, &mut gaps_in_a_row);
            follower.stop();
            let Err(fault) = ended else { break };
            gaps_in_a_row += 1;
            if gaps_in_a_row >= replicas.len() {
                self.fail(fault);
                break;
            }
            tracing::warn!(
                missing = fault.missing(),
                "reporter: a replica offers only a snapshot past the store; asking the next"
            );
            first += 1;
        }
        self.snapshot();
        *self
            .status
            .following
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Writes what `follower` hands over until stopped; a fault when it
    /// offers what the store cannot be completed from.
    fn follow(&mut self, follower: &Follower, gaps_in_a_row: &mut usize) -> Result<(), Fault> {
        let mut batch: Vec<Applied> = Vec::with_capacity(self.config.max_batch);
        while !self.stopping() {
            let first = match follower.items().recv_timeout(IDLE) {
                Ok(item) => item,
                Err(RecvTimeoutError::Timeout) => {
                    self.note(follower);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    tracing::error!("reporter: the log follower is gone; writing stops");
                    break;
                }
            };
            let gathered = self.gather(first, follower, &mut batch);
            self.flush(&mut batch);
            gathered?;
            *gaps_in_a_row = 0;
            self.note(follower);
            if self.state.applied_index >= self.snapshotted + self.config.state_every {
                self.snapshot();
            }
        }
        self.flush(&mut batch);
        Ok(())
    }

    /// Takes `first` and whatever else comes within the linger, up to a
    /// batch: one transaction for all of it.
    fn gather(
        &mut self,
        first: StreamItem,
        follower: &Follower,
        batch: &mut Vec<Applied>,
    ) -> Result<(), Fault> {
        self.take(first, batch)?;
        let deadline = Instant::now() + self.config.linger;
        while batch.len() < self.config.max_batch && !self.stopping() {
            let left = deadline.saturating_duration_since(Instant::now());
            match follower.items().recv_timeout(left) {
                Ok(item) => self.take(item, batch)?,
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Applies one item of the stream, adding the commands the store does
    /// not hold yet to `batch`.
    pub(super) fn take(&mut self, item: StreamItem, batch: &mut Vec<Applied>) -> Result<(), Fault> {
        match item {
            StreamItem::Install {
                raft_index,
                term,
                data,
            } => {
                // The store's position must account for what was applied.
                self.flush(batch);
                self.install(raft_index, term, &data)
            }
            StreamItem::Entries(entries) => {
                let position = self.worker.position();
                for (raft_index, term, commands) in entries {
                    for command in &commands {
                        let index = self.state.applied_index + 1;
                        let mut applied = self.state.apply(index, command);
                        applied.raft_index = raft_index;
                        if index > position {
                            batch.push(applied);
                        }
                    }
                    self.state.raft_index = raft_index;
                    self.term = term;
                }
                Ok(())
            }
        }
    }

    /// The replicas no longer hold the log asked for and offer their
    /// snapshot instead: usable only if the store holds every command in
    /// it, since the store needs each command's events, not a state.
    fn install(&mut self, raft_index: u64, term: u64, data: &[u8]) -> Result<(), Fault> {
        let position = self.worker.position();
        let restored = if data.is_empty() {
            Ok(ServerState::new())
        } else {
            ServerState::restore(data)
        };
        let mut restored = restored.map_err(|error| Fault {
            store_position: position,
            snapshot_command: 0,
            snapshot_raft_index: raft_index,
            message: format!("the replica's snapshot at Raft index {raft_index}: {error}"),
        })?;
        let command = restored.applied_index;
        if command > position {
            return Err(Fault {
                store_position: position,
                snapshot_command: command,
                snapshot_raft_index: raft_index,
                message: format!(
                    "gap: the store holds commands through {position}, but the replicas' log \
                     now starts after their snapshot at Raft index {raft_index} (command \
                     {command}); commands {} to {command} are no longer in any replica's log \
                     and cannot be written",
                    position + 1
                ),
            });
        }
        tracing::info!(
            raft_index,
            command,
            position,
            "reporter: resuming from the replica's snapshot (the store holds all it covers)"
        );
        restored.raft_index = raft_index;
        self.state = restored;
        self.term = term;
        Ok(())
    }

    /// Writes `batch` (retrying while the store fails), and then notes how
    /// far the store holds the log.
    pub(super) fn flush(&mut self, batch: &mut Vec<Applied>) {
        if !batch.is_empty() {
            let status = self.status.clone();
            let stopping = move || status.stop.load(Ordering::Acquire);
            self.worker
                .retry(&stopping, |worker| worker.write(batch.iter(), false));
            batch.clear();
        }
        if self.worker.position() >= self.state.applied_index {
            self.status
                .written_raft
                .store(self.state.raft_index, Ordering::Release);
        }
    }

    /// Keeps the state as a snapshot to resume from, if the store holds
    /// all of it (a write given up at shutdown leaves it behind).
    fn snapshot(&mut self) {
        let applied = self.state.applied_index;
        if applied == self.snapshotted || self.worker.position() < applied {
            return;
        }
        match state::save(&self.config.data_dir, &mut self.state, self.term) {
            Ok(()) => self.snapshotted = applied,
            Err(error) => tracing::warn!(%error, "reporter: state snapshot not written"),
        }
    }

    fn note(&self, follower: &Follower) {
        let status = &self.status;
        *status.following.lock().unwrap_or_else(|e| e.into_inner()) = follower.following().cloned();
        let applied = follower.delivered_raft_index() + follower.behind();
        status.replica_applied.store(applied, Ordering::Release);
    }

    fn fail(&self, fault: Fault) {
        tracing::error!(
            store_position = fault.store_position,
            missing = fault.missing(),
            "reporter stopped writing: {}",
            fault.message
        );
        *self.status.fault.lock().unwrap_or_else(|e| e.into_inner()) = Some(fault);
    }
}
