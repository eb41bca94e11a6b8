//! The follower's end of the log stream: a thread that keeps one replica
//! streaming to it, moves to the next on failure, and hands the decoded
//! log over on a bounded channel.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver, SendTimeoutError, Sender};
use exchange_replication::transport::channel::{Channel, ChannelError};
use exchange_replication::transport::{ClusterKey, DialError, Dialer, PeerAddr};
use thiserror::Error;

use super::wire::{self, Follow, Frame};
use super::{StreamItem, CONNECT_TIMEOUT, HEARTBEAT, ITEMS, PROTOCOL, RETRY_PAUSE};
use crate::replication::{decode_entry_payload, BatchError};

/// A server silent for this long (several heartbeats) is taken for dead.
const SILENCE: Duration = Duration::from_millis(HEARTBEAT.as_millis() as u64 * 4);
/// How often a blocked hand-over looks whether the follower was stopped.
const STOP_POLL: Duration = Duration::from_millis(100);
const NONE: usize = usize::MAX;

#[derive(Debug, Error)]
enum FollowError {
    #[error(transparent)]
    Channel(#[from] ChannelError),
    #[error("the server's frame: {0}")]
    Wire(#[from] wire::WireError),
    #[error("log entry {index}: {source}")]
    Batch { index: u64, source: BatchError },
    #[error("the server refused: {0}")]
    Refused(String),
    #[error("the server broke the protocol: {0}")]
    Protocol(String),
    /// The follower was stopped, or whoever took the items is gone.
    #[error("stopped")]
    Stopped,
}

/// What the following thread shares with its [`Follower`].
struct Status {
    replicas: Vec<Dialer>,
    /// The replica streaming now (an index into `replicas`), or `NONE`.
    following: AtomicUsize,
    /// The last Raft index handed over.
    delivered: AtomicU64,
    /// The last Raft index the replica said it has applied.
    server_applied: AtomicU64,
    stop: AtomicBool,
}

/// A running follower of the log; dropping it stops its thread.
pub struct Follower {
    items: Receiver<StreamItem>,
    status: Arc<Status>,
    thread: Option<JoinHandle<()>>,
}

/// Follows the committed log of the first of `replicas` that answers,
/// from Raft index `from_raft_index` (every entry before it applied
/// already; 0: nothing applied), trying the next replica whenever one
/// fails or falls silent, and resuming where the items handed over end.
/// A replica's name is resolved at each attempt: one that does not
/// resolve yet is a replica that does not answer yet.
pub fn follow(
    replicas: Vec<PeerAddr>,
    key: ClusterKey,
    my_id: u64,
    from_raft_index: u64,
) -> Follower {
    let (tx, items) = bounded(ITEMS);
    let status = Arc::new(Status {
        replicas: replicas.into_iter().map(Dialer::system).collect(),
        following: AtomicUsize::new(NONE),
        delivered: AtomicU64::new(from_raft_index.saturating_sub(1)),
        server_applied: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let shared = status.clone();
    let thread = std::thread::Builder::new()
        .name("log-follower".into())
        .spawn(move || run(&shared, &key, my_id, from_raft_index, &tx))
        .map_err(|error| tracing::error!(%error, "log follower: no thread"))
        .ok();
    Follower {
        items,
        status,
        thread,
    }
}

impl Follower {
    /// The log, in order: a snapshot to install, or entries to apply.
    pub fn items(&self) -> &Receiver<StreamItem> {
        &self.items
    }

    /// The replica streaming now, if one is.
    pub fn following(&self) -> Option<&PeerAddr> {
        let at = self.status.following.load(Ordering::Acquire);
        self.status.replicas.get(at).map(Dialer::addr)
    }

    /// The last Raft index handed over (0: none yet).
    pub fn delivered_raft_index(&self) -> u64 {
        self.status.delivered.load(Ordering::Acquire)
    }

    /// How many Raft entries the replica has applied that were not
    /// handed over yet, as of its last frame.
    pub fn behind(&self) -> u64 {
        let applied = self.status.server_applied.load(Ordering::Acquire);
        applied.saturating_sub(self.delivered_raft_index())
    }

    /// Stops the thread and waits for it (at most a few heartbeats).
    pub fn stop(mut self) {
        self.status.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.status.stop.store(true, Ordering::Release);
    }
}

fn run(status: &Status, key: &ClusterKey, my_id: u64, from: u64, items: &Sender<StreamItem>) {
    let mut next = from;
    let count = status.replicas.len();
    let mut failed_in_a_row = 0usize;
    for at in (0..count).cycle() {
        if status.stop.load(Ordering::Acquire) {
            break;
        }
        let dialer = &status.replicas[at];
        let mut session = Session {
            status,
            items,
            next: &mut next,
            at,
            progressed: false,
        };
        let result = session.run(dialer, key, my_id);
        let progressed = session.progressed;
        status.following.store(NONE, Ordering::Release);
        match result {
            Err(FollowError::Stopped) => break,
            // The dialer says when a name starts or stops resolving; a
            // line per attempt would repeat it every pause.
            Err(FollowError::Channel(ChannelError::Dial(DialError::Unresolved { .. }))) => {}
            Err(error) => {
                tracing::info!(addr = %dialer.addr(), %error, "log follower: replica left");
            }
            Ok(()) => {}
        }
        failed_in_a_row = if progressed { 0 } else { failed_in_a_row + 1 };
        // Every replica tried once without a frame: pause before the
        // next round rather than spin.
        if failed_in_a_row >= count {
            failed_in_a_row = 0;
            std::thread::sleep(RETRY_PAUSE);
        }
    }
}

/// One connection to one replica.
struct Session<'a> {
    status: &'a Status,
    items: &'a Sender<StreamItem>,
    /// The next Raft index needed (0 or 1: nothing applied yet).
    next: &'a mut u64,
    at: usize,
    /// Whether the replica sent anything usable.
    progressed: bool,
}

/// A snapshot whose bytes are still coming.
struct Partial {
    raft_index: u64,
    term: u64,
    len: u64,
    data: Vec<u8>,
}

impl Session<'_> {
    fn run(&mut self, dialer: &Dialer, key: &ClusterKey, my_id: u64) -> Result<(), FollowError> {
        let mut channel = Channel::dial(dialer, PROTOCOL, key, my_id, CONNECT_TIMEOUT)?;
        channel
            .set_read_timeout(Some(SILENCE))
            .map_err(ChannelError::from)?;
        channel.send(&wire::encode_follow(Follow {
            from_raft_index: *self.next,
        }))?;
        self.status.following.store(self.at, Ordering::Release);
        let mut partial: Option<Partial> = None;
        loop {
            if self.status.stop.load(Ordering::Acquire) {
                return Err(FollowError::Stopped);
            }
            match wire::decode_frame(&channel.recv()?)? {
                Frame::SnapshotBegin {
                    raft_index,
                    term,
                    len,
                } => {
                    partial = Some(Partial {
                        raft_index,
                        term,
                        len,
                        data: Vec::new(),
                    });
                }
                Frame::SnapshotData(bytes) => {
                    let Some(mut taking) = partial.take() else {
                        return Err(FollowError::Protocol("snapshot data unannounced".into()));
                    };
                    taking.data.extend_from_slice(&bytes);
                    partial = Some(taking);
                }
                Frame::Entries {
                    applied,
                    first_raft_index,
                    entries,
                } => {
                    self.note_applied(applied);
                    self.entries(first_raft_index, entries)?;
                }
                Frame::Heartbeat { applied } => self.note_applied(applied),
                Frame::Refused(reason) => return Err(FollowError::Refused(reason)),
            }
            // A whole snapshot is handed over as soon as its last byte came.
            if let Some(done) = partial.take_if(|p| p.data.len() as u64 >= p.len) {
                self.install(done)?;
            }
        }
    }

    fn note_applied(&self, applied: u64) {
        self.status.server_applied.store(applied, Ordering::Release);
    }

    fn install(&mut self, snapshot: Partial) -> Result<(), FollowError> {
        if snapshot.data.len() as u64 != snapshot.len {
            return Err(FollowError::Protocol(
                "snapshot longer than announced".into(),
            ));
        }
        let raft_index = snapshot.raft_index;
        self.deliver(
            StreamItem::Install {
                raft_index,
                term: snapshot.term,
                data: snapshot.data,
            },
            raft_index,
        )?;
        *self.next = raft_index + 1;
        Ok(())
    }

    fn entries(&mut self, first: u64, entries: Vec<(u64, Vec<u8>)>) -> Result<(), FollowError> {
        // From nothing, the log starts at the genesis' next entry.
        let expected = first == *self.next || (*self.next <= 1 && first <= 2);
        if !expected {
            return Err(FollowError::Protocol(format!(
                "entries from {first} when {} was asked for",
                self.next
            )));
        }
        let mut decoded = Vec::with_capacity(entries.len());
        for (index, (term, payload)) in (first..).zip(entries) {
            let commands = decode_entry_payload(&payload)
                .map_err(|source| FollowError::Batch { index, source })?;
            decoded.push((index, term, commands));
        }
        let Some(&(last, _, _)) = decoded.last() else {
            return Ok(());
        };
        self.deliver(StreamItem::Entries(decoded), last)?;
        *self.next = last + 1;
        Ok(())
    }

    /// Hands an item over, waiting while the channel is full.
    fn deliver(&mut self, mut item: StreamItem, through: u64) -> Result<(), FollowError> {
        // Counted before it is taken, so that whoever takes it sees it
        // counted; if it never is, the follower has stopped anyway.
        self.status.delivered.store(through, Ordering::Release);
        loop {
            if self.status.stop.load(Ordering::Acquire) {
                return Err(FollowError::Stopped);
            }
            match self.items.send_timeout(item, STOP_POLL) {
                Ok(()) => break,
                Err(SendTimeoutError::Timeout(back)) => item = back,
                Err(SendTimeoutError::Disconnected(_)) => return Err(FollowError::Stopped),
            }
        }
        self.progressed = true;
        Ok(())
    }
}
