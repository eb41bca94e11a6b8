//! A blocking receiver of the binary feed that keeps rebuilt books.
//!
//! It binds the UDP port first (joining the multicast group if asked),
//! then takes a snapshot over TCP, so every packet after the snapshot is
//! already queued on the socket. Messages are applied strictly in
//! sequence order; a packet that arrives ahead of a gap is held, and the
//! gap is fetched from the TCP retransmission service. Should the server
//! no longer hold the missing messages, the client starts over from a
//! fresh snapshot. A heartbeat whose next sequence is ahead of ours is a
//! gap too, so even the loss of the last packet is noticed.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use thiserror::Error;

use crate::mold::{read_frame, MoldError, Packet, Request, Session, SnapshotBody};
use crate::rebuild::{RebuildError, Rebuilder};

/// Largest TCP frame accepted (a snapshot of very deep books).
const MAX_FRAME: usize = 1 << 30;
/// How long the TCP service may take to answer.
const TCP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// UDP address to receive on (the group's port for multicast).
    pub listen: SocketAddr,
    /// Multicast group and local interface to join, if any.
    pub multicast: Option<(Ipv4Addr, Ipv4Addr)>,
    /// The TCP retransmission and snapshot service.
    pub service: SocketAddr,
    /// Drop one received packet in this many, at random (0: none): to
    /// exercise recovery.
    pub drop_one_in: u32,
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    pub packets: u64,
    pub dropped: u64,
    pub gaps: u64,
    pub retransmitted: u64,
    pub snapshots: u64,
    pub heartbeats: u64,
}

#[derive(Debug, Error)]
pub enum FeedError {
    #[error("I/O: {0}")]
    Io(#[from] io::Error),
    #[error("malformed feed data: {0}")]
    Mold(#[from] MoldError),
    #[error(transparent)]
    Rebuild(#[from] RebuildError),
    #[error("the retransmission service answered with something else")]
    UnexpectedReply,
}

pub struct FeedClient {
    udp: UdpSocket,
    tcp: TcpStream,
    service: SocketAddr,
    session: Session,
    next_seq: u64,
    pending: BTreeMap<u64, Vec<u8>>,
    books: Rebuilder,
    stats: ClientStats,
    drop_one_in: u32,
    rng: u64,
    buf: Vec<u8>,
    ended: bool,
}

impl FeedClient {
    pub fn connect(config: &ClientConfig) -> Result<FeedClient, FeedError> {
        let udp = UdpSocket::bind(config.listen)?;
        if let Some((group, interface)) = config.multicast {
            udp.join_multicast_v4(&group, &interface)?;
        }
        let mut client = FeedClient {
            udp,
            tcp: connect_tcp(config.service)?,
            service: config.service,
            session: [0; 10],
            next_seq: 1,
            pending: BTreeMap::new(),
            books: Rebuilder::default(),
            stats: ClientStats::default(),
            drop_one_in: config.drop_one_in,
            rng: config.seed | 1,
            buf: vec![0u8; 65_536],
            ended: false,
        };
        client.snapshot()?;
        Ok(client)
    }

    /// Where the UDP socket is bound (to configure the server's targets).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.udp.local_addr()
    }

    pub fn books(&self) -> &Rebuilder {
        &self.books
    }

    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Sequence number of the next message to apply.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// True once the server announced the end of its session.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Waits up to `timeout` for one packet and applies what it allows.
    /// Returns whether a packet came.
    pub fn poll(&mut self, timeout: Duration) -> Result<bool, FeedError> {
        self.udp
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        let len = match self.udp.recv(&mut self.buf) {
            Ok(len) => len,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e.into()),
        };
        self.stats.packets += 1;
        if self.drop_one_in > 0
            && self
                .next_random()
                .is_multiple_of(u64::from(self.drop_one_in))
        {
            self.stats.dropped += 1;
            return Ok(true);
        }
        let bytes = self.buf[..len].to_vec();
        self.on_packet(&bytes)?;
        Ok(true)
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64: reproducible loss for a given seed.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn on_packet(&mut self, bytes: &[u8]) -> Result<(), FeedError> {
        let packet = Packet::parse(bytes)?;
        if packet.session != self.session {
            // A new session (the server restarted): start over from it.
            self.tcp = connect_tcp(self.service)?;
            self.snapshot()?;
            if packet.session != self.session {
                return Ok(());
            }
        }
        if packet.is_end_of_session() {
            self.ended = true;
            return Ok(());
        }
        if packet.is_heartbeat() {
            self.stats.heartbeats += 1;
        }
        for (offset, message) in packet.messages.iter().enumerate() {
            let seq = packet.seq + offset as u64;
            if seq >= self.next_seq {
                self.pending.insert(seq, message.to_vec());
            }
        }
        self.drain()?;
        let end = packet.seq + packet.messages.len() as u64;
        let known = self
            .pending
            .keys()
            .next_back()
            .map_or(end, |&s| end.max(s + 1));
        if self.next_seq < known {
            self.stats.gaps += 1;
            self.recover(known)?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), FeedError> {
        while let Some(message) = self.pending.remove(&self.next_seq) {
            self.books.apply_bytes(&message)?;
            self.next_seq += 1;
        }
        Ok(())
    }

    fn request(&mut self, request: Request) -> Result<Vec<u8>, FeedError> {
        self.tcp.write_all(&request.encode())?;
        Ok(read_frame(&mut self.tcp, MAX_FRAME)?)
    }

    /// Fetches every message before `until` that has not been applied.
    fn recover(&mut self, until: u64) -> Result<(), FeedError> {
        while self.next_seq < until {
            let wanted = (until - self.next_seq).min(u64::from(u16::MAX - 1)) as u16;
            let reply = self.request(Request::Retransmit {
                session: self.session,
                seq: self.next_seq,
                count: wanted,
            })?;
            let body = reply.strip_prefix(b"P").ok_or(FeedError::UnexpectedReply)?;
            let packet = Packet::parse(body)?;
            if packet.messages.is_empty() {
                if packet.seq > self.next_seq || packet.session != self.session {
                    // Gone from the server's window: start over.
                    return self.snapshot();
                }
                // Not sent yet: the packets will come.
                return Ok(());
            }
            self.stats.retransmitted += packet.messages.len() as u64;
            for (offset, message) in packet.messages.iter().enumerate() {
                let seq = packet.seq + offset as u64;
                if seq >= self.next_seq {
                    self.pending.insert(seq, message.to_vec());
                }
            }
            self.drain()?;
        }
        Ok(())
    }

    /// Replaces every book with a fresh snapshot and continues after it.
    fn snapshot(&mut self) -> Result<(), FeedError> {
        let reply = self.request(Request::Snapshot)?;
        let snapshot = SnapshotBody::decode(&reply)?;
        self.books.reset();
        if snapshot.session != self.session {
            self.pending.clear();
        }
        for message in &snapshot.messages {
            self.books.apply_bytes(message)?;
        }
        self.session = snapshot.session;
        self.next_seq = snapshot.next_seq;
        let next = self.next_seq;
        self.pending.retain(|&seq, _| seq >= next);
        self.stats.snapshots += 1;
        self.drain()
    }
}

fn connect_tcp(service: SocketAddr) -> io::Result<TcpStream> {
    let tcp = TcpStream::connect_timeout(&service, TCP_TIMEOUT)?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(TCP_TIMEOUT))?;
    Ok(tcp)
}
