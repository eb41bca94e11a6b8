//! TCP transport between replicas: one connection per direction and peer,
//! each frame a little-endian `u32` length and a protobuf-encoded Raft
//! message.
//!
//! Sending never blocks the Raft thread: every peer has a bounded queue
//! and a thread that connects (lazily, reconnecting after errors) and
//! writes. A message that cannot be queued or written is dropped — Raft
//! retransmits — and reported through [`Feedback`], since a lost snapshot
//! must be reported or the leader waits for it forever. Nodes do not
//! authenticate each other: the Raft port belongs on a private network.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender, TrySendError};
use raft::eraftpb::Message;

use crate::conf::{decode_message, encode_message, is_snapshot};

/// Largest frame accepted (a snapshot travels in one message).
pub const MAX_FRAME_BYTES: usize = 1 << 30;
const QUEUE: usize = 4_096;
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failed connection, messages to that peer are dropped for this
/// long instead of trying again for each one.
const BACKOFF: Duration = Duration::from_millis(100);

/// What the transport tells the Raft thread about deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    Unreachable(u64),
    Snapshot { to: u64, delivered: bool },
}

pub struct Transport {
    peers: BTreeMap<u64, Sender<Message>>,
    feedback_tx: Sender<Feedback>,
    feedback: Receiver<Feedback>,
    local: SocketAddr,
}

impl Transport {
    /// Listens on `listen` and delivers every decoded message to `inbox`;
    /// `peers` are the other replicas' Raft addresses.
    pub fn start(
        listen: SocketAddr,
        peers: &BTreeMap<u64, SocketAddr>,
        inbox: Sender<Message>,
    ) -> std::io::Result<Transport> {
        let listener = TcpListener::bind(listen)?;
        let local = listener.local_addr()?;
        std::thread::Builder::new()
            .name("raft-listen".into())
            .spawn(move || accept_loop(listener, inbox))?;
        let (feedback_tx, feedback) = unbounded();
        let mut queues = BTreeMap::new();
        for (&id, &addr) in peers {
            let (tx, rx) = bounded(QUEUE);
            let feedback = feedback_tx.clone();
            std::thread::Builder::new()
                .name(format!("raft-peer-{id}"))
                .spawn(move || send_loop(id, addr, rx, feedback))?;
            queues.insert(id, tx);
        }
        Ok(Transport {
            peers: queues,
            feedback_tx,
            feedback,
            local,
        })
    }

    /// Starts talking to a peer added to the cluster (or at a new address).
    pub fn add_peer(&mut self, id: u64, addr: SocketAddr) -> std::io::Result<()> {
        let (tx, rx) = bounded(QUEUE);
        let feedback = self.feedback_tx.clone();
        std::thread::Builder::new()
            .name(format!("raft-peer-{id}"))
            .spawn(move || send_loop(id, addr, rx, feedback))?;
        // The old queue's sender thread ends when its sender is dropped.
        self.peers.insert(id, tx);
        Ok(())
    }

    pub fn has_peer(&self, id: u64) -> bool {
        self.peers.contains_key(&id)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Queues a message for its peer; drops it (with feedback) when the
    /// peer is unknown or its queue is full.
    pub fn send(&self, message: Message) {
        let to = message.to;
        let snapshot = is_snapshot(&message);
        let queued = match self.peers.get(&to) {
            Some(queue) => match queue.try_send(message) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if !queued {
            let _ = self.feedback_tx.send(Feedback::Unreachable(to));
            if snapshot {
                let _ = self.feedback_tx.send(Feedback::Snapshot {
                    to,
                    delivered: false,
                });
            }
        }
    }

    pub fn feedback(&self) -> &Receiver<Feedback> {
        &self.feedback
    }
}

fn accept_loop(listener: TcpListener, inbox: Sender<Message>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let inbox = inbox.clone();
        let _ = stream.set_nodelay(true);
        let spawned = std::thread::Builder::new()
            .name("raft-conn".into())
            .spawn(move || read_loop(stream, inbox));
        if spawned.is_err() {
            continue;
        }
    }
}

/// Reads frames until the connection fails, the peer sends garbage, or
/// the Raft thread is gone.
fn read_loop(stream: TcpStream, inbox: Sender<Message>) {
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let mut buf = Vec::new();
    loop {
        let mut len = [0u8; 4];
        if reader.read_exact(&mut len).is_err() {
            return;
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_FRAME_BYTES {
            return;
        }
        buf.resize(len, 0);
        if reader.read_exact(&mut buf).is_err() {
            return;
        }
        let Ok(message) = decode_message(&buf) else {
            return;
        };
        if inbox.send(message).is_err() {
            return;
        }
    }
}

fn send_loop(id: u64, addr: SocketAddr, queue: Receiver<Message>, feedback: Sender<Feedback>) {
    let mut stream: Option<BufWriter<TcpStream>> = None;
    let mut failed_at: Option<Instant> = None;
    let mut batch = Vec::new();
    let mut frame = Vec::new();
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < 256 {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if stream.is_none() && failed_at.is_none_or(|at| at.elapsed() >= BACKOFF) {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(connected) => {
                    let _ = connected.set_nodelay(true);
                    stream = Some(BufWriter::with_capacity(256 * 1024, connected));
                    failed_at = None;
                }
                Err(_) => failed_at = Some(Instant::now()),
            }
        }
        let mut ok = stream.is_some();
        if let Some(writer) = stream.as_mut() {
            for message in &batch {
                frame.clear();
                let bytes = encode_message(message);
                frame.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                frame.extend_from_slice(&bytes);
                if writer.write_all(&frame).is_err() {
                    ok = false;
                    break;
                }
            }
            if ok && writer.flush().is_err() {
                ok = false;
            }
        }
        if !ok {
            stream = None;
            failed_at = Some(Instant::now());
            let _ = feedback.send(Feedback::Unreachable(id));
        }
        for message in &batch {
            if is_snapshot(message) {
                let _ = feedback.send(Feedback::Snapshot {
                    to: id,
                    delivered: ok,
                });
            }
        }
        batch.clear();
    }
}
