//! The replica's end of the log stream: one acceptor thread, one thread
//! per follower, each reading the committed log from the files.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use exchange_journal::{CommittedCursor, CursorRead, JournalError};
use exchange_replication::transport::channel::{Channel, ChannelError, ChannelWriter};
use exchange_replication::transport::ClusterKey;
use thiserror::Error;

use super::wire::{self, Follow};
use super::{
    BATCH_BYTES, HANDSHAKE_TIMEOUT, HEARTBEAT, MAX_FOLLOWERS, PROTOCOL, SNAPSHOT_CHUNK,
    WRITE_TIMEOUT,
};
use crate::log_files::{self, LogFilesError, SnapshotState};
use crate::Handle;

#[derive(Debug, Error)]
enum ServeError {
    #[error(transparent)]
    Channel(#[from] ChannelError),
    #[error("the follower's request: {0}")]
    Wire(#[from] wire::WireError),
    #[error(transparent)]
    Files(#[from] LogFilesError),
    #[error("{0}")]
    Refused(String),
}

impl From<JournalError> for ServeError {
    fn from(error: JournalError) -> ServeError {
        ServeError::Files(error.into())
    }
}

struct Shared {
    key: ClusterKey,
    node_id: u64,
    data_dir: PathBuf,
    handle: Handle,
    /// Connections being served (or in their handshake).
    followers: AtomicUsize,
    stop: AtomicBool,
}

/// Serves the committed log to followers (mirrors) until dropped.
pub struct StreamServer {
    local: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl StreamServer {
    /// Listens on `addr` for followers that hold `key`, and serves them
    /// what the node behind `handle` has applied, from `data_dir`.
    pub fn start(
        addr: SocketAddr,
        key: ClusterKey,
        node_id: u64,
        data_dir: PathBuf,
        handle: Handle,
    ) -> std::io::Result<StreamServer> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let shared = Arc::new(Shared {
            key,
            node_id,
            data_dir,
            handle,
            followers: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        let acceptor = std::thread::Builder::new()
            .name("log-stream".into())
            .spawn(move || accept_loop(&listener, &accepting))?;
        Ok(StreamServer {
            local,
            shared,
            acceptor: Some(acceptor),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Followers connected now (those still in their handshake too).
    pub fn followers(&self) -> usize {
        self.shared.followers.load(Ordering::Acquire)
    }
}

impl Drop for StreamServer {
    /// Stops accepting; each follower's thread ends at its next heartbeat.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Wakes the acceptor from `accept`.
        let _ = TcpStream::connect_timeout(&self.local, HANDSHAKE_TIMEOUT);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// A follower's place among the bounded few; freed when dropped.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.followers.fetch_sub(1, Ordering::AcqRel);
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        // Each follower holds a thread and reads files: a bound keeps a
        // flood of connections from taking the node's threads and disk.
        if shared.followers.fetch_add(1, Ordering::AcqRel) >= MAX_FOLLOWERS {
            shared.followers.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!("log stream: follower refused, {MAX_FOLLOWERS} already connected");
            continue;
        }
        let slot = Slot(shared.clone());
        let spawned = std::thread::Builder::new()
            .name("log-stream-follower".into())
            .spawn(move || {
                let peer = stream
                    .peer_addr()
                    .map_or_else(|_| "?".to_string(), |a| a.to_string());
                let shared = slot.0.clone();
                if let Err(error) = serve(stream, &shared) {
                    tracing::info!(%peer, %error, "log stream: follower left");
                }
                drop(slot);
            });
        if spawned.is_err() {
            tracing::warn!("log stream: no thread for a follower");
        }
    }
}

fn serve(stream: TcpStream, shared: &Shared) -> Result<(), ServeError> {
    let mut channel = Channel::accept(
        stream,
        PROTOCOL,
        &shared.key,
        shared.node_id,
        HANDSHAKE_TIMEOUT,
    )?;
    channel
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(ChannelError::from)?;
    let Follow { from_raft_index } = wire::decode_follow(&channel.recv()?)?;
    channel
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .map_err(ChannelError::from)?;
    // Nothing more is read: the follower's leaving shows as a failed send
    // (a heartbeat at the latest).
    let (_reader, writer) = channel.split();
    let mut follower = Streamer {
        shared,
        writer,
        sent_snapshot: None,
    };
    match follower.stream(from_raft_index) {
        Err(ServeError::Refused(reason)) => {
            let _ = follower.writer.send(&wire::encode_refused(&reason));
            Err(ServeError::Refused(reason))
        }
        other => other,
    }
}

struct Streamer<'a> {
    shared: &'a Shared,
    writer: ChannelWriter,
    /// The Raft index of the last snapshot sent.
    sent_snapshot: Option<u64>,
}

impl Streamer<'_> {
    /// Sends the follower what it needs from `from` on, then follows the
    /// core as it applies more, until the server stops or a send fails.
    fn stream(&mut self, from: u64) -> Result<(), ServeError> {
        let mut cursor = match self.start_at(from)? {
            Some(next) => log_files::committed_cursor(&self.shared.data_dir, next),
            None => self.restart_from_snapshot()?,
        };
        let handle = &self.shared.handle;
        while !self.shared.stop.load(Ordering::Acquire) {
            let next = cursor.next_index();
            let mut applied = handle.applied_raft_index();
            if applied < next {
                applied = handle.wait_applied_raft(next - 1, HEARTBEAT);
                if applied < next {
                    self.writer.send(&wire::encode_heartbeat(applied))?;
                    continue;
                }
            }
            match cursor.read(applied, BATCH_BYTES)? {
                CursorRead::Entries(entries) => {
                    self.writer.send(&wire::encode_entries(applied, &entries))?;
                }
                // Compacted since (or the replica installed a snapshot):
                // the follower starts again from the newest snapshot.
                CursorRead::Gone { .. } => cursor = self.restart_from_snapshot()?,
            }
        }
        Ok(())
    }

    /// The first entry to send a follower that asks from `from`, or
    /// `None` when it must start from a snapshot.
    fn start_at(&self, from: u64) -> Result<Option<u64>, ServeError> {
        let data_dir = &self.shared.data_dir;
        if from > 1 {
            // The cursor tells whether the journal still holds it.
            return Ok(Some(from));
        }
        // From nothing: the newest snapshot, or the log from the genesis
        // (the empty state at Raft index 1) when it still starts there.
        if log_files::newest_snapshot(data_dir)?.is_some() {
            return Ok(None);
        }
        match log_files::first_raft_index(data_dir)? {
            None => Ok(Some(2)),
            Some(first) if first <= 2 => Ok(Some(first.max(from))),
            Some(first) => Err(ServeError::Refused(format!(
                "this replica's log starts at {first} and no snapshot holds what is before it"
            ))),
        }
    }

    /// Sends the newest snapshot, and returns the cursor after it.
    fn restart_from_snapshot(&mut self) -> Result<CommittedCursor, ServeError> {
        let Some(snapshot) = log_files::newest_snapshot(&self.shared.data_dir)? else {
            return Err(ServeError::Refused(
                "the entries asked for are compacted and no snapshot is left".into(),
            ));
        };
        // The log after a snapshot just sent is gone too: no newer one
        // would help now, and sending it again would never end.
        if self.sent_snapshot == Some(snapshot.raft_index) {
            return Err(ServeError::Refused(format!(
                "the log after snapshot {} is not in the journal",
                snapshot.raft_index
            )));
        }
        self.sent_snapshot = Some(snapshot.raft_index);
        self.send_snapshot(&snapshot)?;
        Ok(log_files::committed_cursor(
            &self.shared.data_dir,
            snapshot.raft_index + 1,
        ))
    }

    fn send_snapshot(&mut self, snapshot: &SnapshotState) -> Result<(), ServeError> {
        let len = snapshot.data.len() as u64;
        self.writer.send(&wire::encode_snapshot_begin(
            snapshot.raft_index,
            snapshot.term,
            len,
        ))?;
        for chunk in snapshot.data.chunks(SNAPSHOT_CHUNK) {
            self.writer.send(&wire::encode_snapshot_data(chunk))?;
        }
        Ok(())
    }
}
