//! TCP transport between replicas, members of the cluster only: one
//! connection per direction and peer, each opened with a mutual
//! challenge-response handshake on the shared cluster key, each Raft
//! message after it a frame that carries a MAC.
//!
//! Every member holds one 32-byte cluster key ([`ClusterKey`]). On
//! connect both ends send a fresh random nonce and their node id, and
//! each proves it holds the key with an HMAC-SHA256 over both nonces,
//! both ids and its direction; nothing else of a connection is read
//! before the initiator's proof checks. Both then derive a session key
//! for this connection alone, and every frame — a little-endian `u32`
//! length, a protobuf-encoded Raft message, a 16-byte tag — carries the
//! session's MAC over a frame counter, the length and the message: a
//! frame cannot be forged, altered, reordered, or replayed from this
//! connection or another. [`auth`] has the wire format. A failed
//! handshake or frame closes the connection, is counted
//! ([`AuthCounters`]) and logged (at most one line per few seconds,
//! never key material). A handshake must finish within
//! [`TransportConfig::handshake_timeout`], and at most
//! [`TransportConfig::max_pending_handshakes`] connections wait for
//! theirs at a time.
//!
//! A shared key rather than mutual TLS: one secret file to distribute,
//! as MongoDB's keyfile or Erlang's cookie, and no certificate authority
//! to run. The key authenticates; it does not encrypt: the log's
//! contents travel in clear, and what crosses an untrusted network
//! belongs in a tunnel (TLS, WireGuard, IPsec), which this transport
//! does not provide.
//!
//! Sending never blocks the Raft thread: every peer has a bounded queue
//! and a thread that connects (lazily, reconnecting after errors, the
//! peer's name resolved again at each attempt: [`addr`]) and writes. A
//! message that cannot be queued or written is dropped — Raft retransmits
//! — and reported through [`Feedback`], since a lost snapshot must be
//! reported or the leader waits for it forever.

use std::collections::BTreeMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender, TrySendError};
use raft::eraftpb::Message;

use crate::conf::{decode_message, encode_message, is_snapshot};

pub mod addr;
pub mod auth;
pub mod channel;
mod handshake;

pub use addr::{AddrError, DialError, Dialer, PeerAddr, Resolve, SystemResolver};
pub use auth::{AuthCounters, ClusterKey, Refusal, TAG_BYTES};
use auth::{FrameMac, Protocol};
use handshake::{Failed, Side};

/// Largest frame accepted (a snapshot travels in one message).
pub const MAX_FRAME_BYTES: usize = 1 << 30;
const QUEUE: usize = 4_096;
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failed connection, messages to that peer are dropped for this
/// long instead of trying again for each one.
const BACKOFF: Duration = Duration::from_millis(100);
/// A link whose sent bytes stay unacknowledged this long (or whose peer
/// reads nothing for this long) is closed, and the peer's name resolved
/// again at the next attempt. Without it, a peer that vanished without
/// closing its connections (its machine lost, its pod rescheduled at
/// another IP) would hold the link for the kernel's retransmission
/// timeout, a quarter of an hour. Far above any election timeout: a
/// closed link costs a reconnection, and Raft retransmits.
const UNACKED_LIMIT: Duration = Duration::from_secs(10);

/// Who this node is to its peers, and how it tells them from strangers.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    pub node_id: u64,
    pub key: ClusterKey,
    /// How long a new connection has to complete its handshake.
    pub handshake_timeout: Duration,
    /// Accepted connections waiting for their handshake at a time; more
    /// are closed at once.
    pub max_pending_handshakes: usize,
    /// Turns peers' host names into addresses, at each connection attempt.
    pub resolver: Arc<dyn Resolve>,
}

impl TransportConfig {
    pub fn new(node_id: u64, key: ClusterKey) -> TransportConfig {
        TransportConfig {
            node_id,
            key,
            handshake_timeout: Duration::from_secs(5),
            max_pending_handshakes: 32,
            resolver: Arc::new(SystemResolver),
        }
    }
}

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
    config: Arc<TransportConfig>,
    counters: Arc<AuthCounters>,
}

impl Transport {
    /// Listens on `listen` and delivers every authenticated message to
    /// `inbox`; `peers` are the other replicas' Raft addresses, names
    /// resolved at each connection attempt (one that does not resolve yet
    /// is a peer not reachable yet, not an error).
    pub fn start(
        listen: SocketAddr,
        peers: &BTreeMap<u64, PeerAddr>,
        inbox: Sender<Message>,
        config: TransportConfig,
    ) -> std::io::Result<Transport> {
        let listener = TcpListener::bind(listen)?;
        let local = listener.local_addr()?;
        let config = Arc::new(config);
        let counters = Arc::new(AuthCounters::default());
        let (accept_config, accept_counters) = (config.clone(), counters.clone());
        std::thread::Builder::new()
            .name("raft-listen".into())
            .spawn(move || accept_loop(listener, inbox, accept_config, accept_counters))?;
        let (feedback_tx, feedback) = unbounded();
        let mut transport = Transport {
            peers: BTreeMap::new(),
            feedback_tx,
            feedback,
            local,
            config,
            counters,
        };
        for (&id, addr) in peers {
            transport.add_peer(id, addr.clone())?;
        }
        Ok(transport)
    }

    /// Refused connections and frames so far.
    pub fn counters(&self) -> &Arc<AuthCounters> {
        &self.counters
    }

    /// Starts talking to a peer added to the cluster (or at a new address).
    pub fn add_peer(&mut self, id: u64, addr: impl Into<PeerAddr>) -> std::io::Result<()> {
        let (tx, rx) = bounded(QUEUE);
        let feedback = self.feedback_tx.clone();
        let link = Link {
            id,
            dialer: Dialer::new(addr.into(), self.config.resolver.clone()),
            config: self.config.clone(),
            counters: self.counters.clone(),
            stream: None,
            failed_at: None,
        };
        std::thread::Builder::new()
            .name(format!("raft-peer-{id}"))
            .spawn(move || send_loop(link, rx, feedback))?;
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

/// One connection waiting for its handshake; frees its slot when dropped.
struct PendingSlot(Arc<AtomicUsize>);

impl Drop for PendingSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn accept_loop(
    listener: TcpListener,
    inbox: Sender<Message>,
    config: Arc<TransportConfig>,
    counters: Arc<AuthCounters>,
) {
    let pending = Arc::new(AtomicUsize::new(0));
    let protocol = Arc::new(Protocol::raft());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        // Each waiting connection holds a thread until its handshake ends
        // or times out: a bound keeps a flood of them from taking every
        // thread and every descriptor of the node.
        if pending.fetch_add(1, Ordering::AcqRel) >= config.max_pending_handshakes {
            pending.fetch_sub(1, Ordering::AcqRel);
            counters.refuse(Refusal::TooManyPending, &peer);
            continue;
        }
        let slot = PendingSlot(pending.clone());
        let (inbox, config, counters) = (inbox.clone(), config.clone(), counters.clone());
        let protocol = protocol.clone();
        let _ = stream.set_nodelay(true);
        let spawned = std::thread::Builder::new()
            .name("raft-conn".into())
            .spawn(move || {
                let mut stream = stream;
                let side = Side {
                    protocol: &protocol,
                    key: &config.key,
                    my_id: config.node_id,
                    timeout: config.handshake_timeout,
                };
                match handshake::respond(&mut stream, &side) {
                    Ok((_, transcript)) => {
                        drop(slot);
                        let session = transcript.session(&config.key, &protocol);
                        if let Err(refusal) = read_loop(stream, session, &inbox) {
                            counters.refuse(refusal, &peer);
                        }
                    }
                    Err(Failed::Refused(refusal)) => counters.refuse(refusal, &peer),
                    Err(Failed::Io | Failed::Closed) => {}
                }
            });
        if spawned.is_err() {
            continue;
        }
    }
}

/// Reads authenticated frames until the connection fails, a frame fails
/// its MAC (`Err`), the peer sends garbage, or the Raft thread is gone.
/// No byte of a frame is decoded before its tag checks.
fn read_loop(
    stream: TcpStream,
    mut session: FrameMac,
    inbox: &Sender<Message>,
) -> Result<(), Refusal> {
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let mut buf = Vec::new();
    let mut tag = [0u8; TAG_BYTES];
    loop {
        let mut len = [0u8; 4];
        if reader.read_exact(&mut len).is_err() {
            return Ok(());
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_FRAME_BYTES {
            return Err(Refusal::BadFrame);
        }
        // Grown as bytes arrive, not sized up front from a length nobody
        // has vouched for yet.
        buf.clear();
        let read = (&mut reader).take(len as u64).read_to_end(&mut buf);
        if read.is_err() || buf.len() != len || reader.read_exact(&mut tag).is_err() {
            return Ok(());
        }
        if !session.open(&buf, &tag) {
            return Err(Refusal::BadFrame);
        }
        let Ok(message) = decode_message(&buf) else {
            return Ok(());
        };
        if inbox.send(message).is_err() {
            return Ok(());
        }
    }
}

/// A peer's sender: its connection (with the session that tags its
/// frames) and when the last attempt failed.
struct Link {
    id: u64,
    dialer: Dialer,
    config: Arc<TransportConfig>,
    counters: Arc<AuthCounters>,
    stream: Option<(BufWriter<TcpStream>, FrameMac)>,
    failed_at: Option<Instant>,
}

impl Link {
    /// Resolves the peer's address again, connects and authenticates,
    /// unless the last attempt failed lately.
    fn connect(&mut self) {
        if self.stream.is_some() || self.failed_at.is_some_and(|at| at.elapsed() < BACKOFF) {
            return;
        }
        let Ok(mut connected) = self.dialer.connect(CONNECT_TIMEOUT) else {
            self.failed_at = Some(Instant::now());
            return;
        };
        tune_link(&connected);
        let protocol = Protocol::raft();
        let side = Side {
            protocol: &protocol,
            key: &self.config.key,
            my_id: self.config.node_id,
            timeout: self.config.handshake_timeout,
        };
        match handshake::initiate(&mut connected, &side, Some(self.id)) {
            Ok((_, transcript)) => {
                let session = transcript.session(&self.config.key, &protocol);
                let writer = BufWriter::with_capacity(256 * 1024, connected);
                self.stream = Some((writer, session));
                self.failed_at = None;
            }
            Err(failed) => {
                if let Failed::Refused(refusal) = failed {
                    self.counters
                        .refuse(refusal, &self.dialer.addr().to_string());
                }
                self.failed_at = Some(Instant::now());
            }
        }
    }

    /// Writes the batch, each message one tagged frame; false if the
    /// connection failed (it is dropped then).
    fn write(&mut self, batch: &[Message], frame: &mut Vec<u8>) -> bool {
        let Some((writer, session)) = self.stream.as_mut() else {
            return false;
        };
        let mut ok = true;
        for message in batch {
            frame.clear();
            let bytes = encode_message(message);
            frame.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            frame.extend_from_slice(&bytes);
            frame.extend_from_slice(&session.seal(&bytes));
            if writer.write_all(frame).is_err() {
                ok = false;
                break;
            }
        }
        if ok && writer.flush().is_err() {
            ok = false;
        }
        if !ok {
            self.stream = None;
            self.failed_at = Some(Instant::now());
        }
        ok
    }
}

/// No Nagle delay; and, where the system has it, a bound on how long sent
/// bytes may stay unacknowledged ([`UNACKED_LIMIT`]).
fn tune_link(stream: &TcpStream) {
    let _ = stream.set_nodelay(true);
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
    let _ = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(UNACKED_LIMIT));
}

fn send_loop(mut link: Link, queue: Receiver<Message>, feedback: Sender<Feedback>) {
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
        link.connect();
        let ok = link.write(&batch, &mut frame);
        if !ok {
            let _ = feedback.send(Feedback::Unreachable(link.id));
        }
        for message in &batch {
            if is_snapshot(message) {
                let _ = feedback.send(Feedback::Snapshot {
                    to: link.id,
                    delivered: ok,
                });
            }
        }
        batch.clear();
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_link_gives_up_on_bytes_left_unacknowledged() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let stream = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        tune_link(&stream);
        let sock = socket2::SockRef::from(&stream);
        assert_eq!(
            sock.tcp_user_timeout().expect("option"),
            Some(UNACKED_LIMIT)
        );
        assert!(stream.nodelay().expect("nodelay"));
    }
}
