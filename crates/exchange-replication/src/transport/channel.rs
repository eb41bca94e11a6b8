//! A duplex, blocking, framed channel between two holders of the cluster
//! key, for the services beside Raft (the log stream to mirrors, order
//! entry between gateways and replicas).
//!
//! It opens with Raft's handshake ([`super::auth`]) under the channel's
//! own 8-byte protocol name, which is both the MAGIC of the first bytes
//! and part of every label the proofs and session keys are derived under:
//! a connection of one protocol (or Raft's) is never taken for another's.
//! Each direction then has its own session key and implicit frame
//! counter; a frame is `len(4, LE) payload(len) tag(16)` as Raft's, so a
//! frame tampered with, dropped, reordered or replayed fails its check.
//! Like Raft's transport it authenticates and does not encrypt.
//!
//! A failed check, an oversize length or a broken connection leaves that
//! half of the channel broken: every later call returns an error.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

use super::addr::{DialError, Dialer};
use super::auth::{ClusterKey, FrameMac, Protocol, Refusal, TAG_BYTES};
use super::handshake::{self, Failed, Side};

/// Largest payload of one frame, either way. Larger values (a state
/// snapshot) are sent in pieces by the protocol above.
pub const MAX_FRAME_BYTES: usize = 64 << 20;
const LEN_BYTES: usize = 4;
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("channel i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The address did not resolve, or nothing accepted the connection.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// The handshake did not finish within its timeout.
    #[error("the handshake timed out")]
    HandshakeTimeout,
    /// The other end speaks another protocol (or another version).
    #[error("the other end speaks another protocol")]
    WrongProtocol,
    /// The other end does not hold the cluster key (or we do not hold its).
    #[error("the other end does not hold the cluster key")]
    WrongKey,
    /// It claimed an id it cannot have (0, or ours).
    #[error("the other end claimed an impossible node id")]
    BadId,
    /// The other end closed the connection (during the handshake: it
    /// refused us, for a reason it does not tell).
    #[error("the other end closed the connection")]
    Closed,
    /// No frame (or no whole frame) came within the read timeout; the
    /// channel stays usable and the next `recv` goes on where this one
    /// stopped.
    #[error("no frame within the read timeout")]
    TimedOut,
    /// A frame failed its MAC: tampered with, reordered or replayed.
    #[error("a frame failed its MAC (tampered, reordered or replayed)")]
    BadFrame,
    #[error("a frame of {len} bytes exceeds the limit of {max}")]
    FrameTooLarge { len: usize, max: usize },
    /// An earlier error broke this half of the channel.
    #[error("the channel is broken by an earlier error")]
    Broken,
}

impl From<Failed> for ChannelError {
    fn from(failed: Failed) -> ChannelError {
        match failed {
            Failed::Io => ChannelError::Io(std::io::Error::other("handshake i/o failed")),
            Failed::Closed => ChannelError::Closed,
            Failed::Refused(refusal) => match refusal {
                Refusal::Timeout => ChannelError::HandshakeTimeout,
                Refusal::NotAHandshake => ChannelError::WrongProtocol,
                Refusal::BadProof | Refusal::Abandoned => ChannelError::WrongKey,
                Refusal::BadId => ChannelError::BadId,
                Refusal::BadFrame | Refusal::TooManyPending => ChannelError::BadFrame,
            },
        }
    }
}

/// Both halves of an authenticated connection.
pub struct Channel {
    reader: ChannelReader,
    writer: ChannelWriter,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("peer_id", &self.reader.peer_id)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Connects to `addr` and runs the handshake as initiator; the
    /// responder must hold `key` and speak `protocol`.
    pub fn connect(
        addr: SocketAddr,
        protocol: [u8; 8],
        key: &ClusterKey,
        my_id: u64,
        timeout: Duration,
    ) -> Result<Channel, ChannelError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        Channel::initiate(stream, protocol, key, my_id, timeout)
    }

    /// Resolves the dialer's address now, connects and runs the handshake
    /// as initiator (see [`Channel::connect`]).
    pub fn dial(
        dialer: &Dialer,
        protocol: [u8; 8],
        key: &ClusterKey,
        my_id: u64,
        timeout: Duration,
    ) -> Result<Channel, ChannelError> {
        let stream = dialer.connect(timeout)?;
        Channel::initiate(stream, protocol, key, my_id, timeout)
    }

    fn initiate(
        mut stream: TcpStream,
        protocol: [u8; 8],
        key: &ClusterKey,
        my_id: u64,
        timeout: Duration,
    ) -> Result<Channel, ChannelError> {
        let _ = stream.set_nodelay(true);
        let protocol = Protocol::named(protocol);
        let side = Side {
            protocol: &protocol,
            key,
            my_id,
            timeout,
        };
        let (peer_id, transcript) = handshake::initiate(&mut stream, &side, None)?;
        let sending = transcript.session(key, &protocol);
        let receiving = transcript.session_back(key, &protocol);
        Channel::over(stream, peer_id, sending, receiving)
    }

    /// Runs the handshake as responder on an accepted connection.
    pub fn accept(
        mut stream: TcpStream,
        protocol: [u8; 8],
        key: &ClusterKey,
        my_id: u64,
        timeout: Duration,
    ) -> Result<Channel, ChannelError> {
        let _ = stream.set_nodelay(true);
        let protocol = Protocol::named(protocol);
        let side = Side {
            protocol: &protocol,
            key,
            my_id,
            timeout,
        };
        let (peer_id, transcript) = handshake::respond(&mut stream, &side)?;
        let sending = transcript.session_back(key, &protocol);
        let receiving = transcript.session(key, &protocol);
        Channel::over(stream, peer_id, sending, receiving)
    }

    fn over(
        stream: TcpStream,
        peer_id: u64,
        sending: FrameMac,
        receiving: FrameMac,
    ) -> Result<Channel, ChannelError> {
        stream.set_read_timeout(None)?;
        stream.set_write_timeout(None)?;
        let writer = ChannelWriter {
            stream: stream.try_clone()?,
            session: sending,
            frame: Vec::new(),
            broken: false,
        };
        let reader = ChannelReader {
            stream,
            peer_id,
            session: receiving,
            buf: Vec::new(),
            broken: false,
        };
        Ok(Channel { reader, writer })
    }

    /// The other end's id, as it proved in the handshake.
    pub fn peer_id(&self) -> u64 {
        self.reader.peer_id
    }

    pub fn send(&mut self, payload: &[u8]) -> Result<(), ChannelError> {
        self.writer.send(payload)
    }

    /// The next frame's payload, once its tag checks.
    pub fn recv(&mut self) -> Result<Vec<u8>, ChannelError> {
        self.reader.recv()
    }

    /// How long `recv` waits for a frame; `None` waits for ever.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.reader.set_read_timeout(t)
    }

    /// How long `send` may block on a peer that does not read.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.writer.set_write_timeout(t)
    }

    /// The halves, for a reader thread and a writer thread.
    pub fn split(self) -> (ChannelReader, ChannelWriter) {
        (self.reader, self.writer)
    }
}

/// The receiving half.
pub struct ChannelReader {
    stream: TcpStream,
    peer_id: u64,
    session: FrameMac,
    /// Bytes read and not yet taken: a frame cut by a read timeout is
    /// finished by the next `recv`.
    buf: Vec<u8>,
    broken: bool,
}

impl ChannelReader {
    pub fn peer_id(&self) -> u64 {
        self.peer_id
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.stream.set_read_timeout(t)
    }

    /// Closes both directions of the connection: the other end, and a
    /// thread blocked on this connection, see it closed.
    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// The next frame's payload, once its tag checks.
    pub fn recv(&mut self) -> Result<Vec<u8>, ChannelError> {
        if self.broken {
            return Err(ChannelError::Broken);
        }
        let result = self.next_frame();
        if let Err(e) = &result {
            if !matches!(e, ChannelError::TimedOut) {
                self.broken = true;
            }
        }
        result
    }

    fn next_frame(&mut self) -> Result<Vec<u8>, ChannelError> {
        loop {
            if let Some(len) = self.frame_len()? {
                let total = LEN_BYTES + len + TAG_BYTES;
                if self.buf.len() >= total {
                    let payload = self.buf[LEN_BYTES..LEN_BYTES + len].to_vec();
                    let checked = self
                        .session
                        .open(&payload, &self.buf[LEN_BYTES + len..total]);
                    self.buf.drain(..total);
                    return if checked {
                        Ok(payload)
                    } else {
                        Err(ChannelError::BadFrame)
                    };
                }
            }
            self.fill()?;
        }
    }

    /// The payload length of the frame at the front, once its length is in.
    fn frame_len(&self) -> Result<Option<usize>, ChannelError> {
        let Some(len) = self.buf.get(..LEN_BYTES) else {
            return Ok(None);
        };
        let mut bytes = [0u8; LEN_BYTES];
        bytes.copy_from_slice(len);
        let len = u32::from_le_bytes(bytes) as usize;
        if len > MAX_FRAME_BYTES {
            return Err(ChannelError::FrameTooLarge {
                len,
                max: MAX_FRAME_BYTES,
            });
        }
        Ok(Some(len))
    }

    /// Reads what the socket has (at most a chunk): the buffer grows as
    /// bytes arrive, never ahead from a length nobody has vouched for.
    fn fill(&mut self) -> Result<(), ChannelError> {
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ChannelError::Closed),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(());
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(ChannelError::TimedOut)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The sending half.
pub struct ChannelWriter {
    stream: TcpStream,
    session: FrameMac,
    frame: Vec<u8>,
    broken: bool,
}

impl ChannelWriter {
    pub fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.stream.set_write_timeout(t)
    }

    /// Closes both directions of the connection (see
    /// [`ChannelReader::shutdown`]).
    pub fn shutdown(&self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Sends one frame. A payload over [`MAX_FRAME_BYTES`] is refused and
    /// sends nothing; a write that fails (or times out) midway breaks the
    /// writer, since the other end can no longer find the frames' bounds.
    pub fn send(&mut self, payload: &[u8]) -> Result<(), ChannelError> {
        if self.broken {
            return Err(ChannelError::Broken);
        }
        if payload.len() > MAX_FRAME_BYTES {
            return Err(ChannelError::FrameTooLarge {
                len: payload.len(),
                max: MAX_FRAME_BYTES,
            });
        }
        self.frame.clear();
        self.frame
            .extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.frame.extend_from_slice(payload);
        self.frame.extend_from_slice(&self.session.seal(payload));
        if let Err(e) = self.stream.write_all(&self.frame) {
            self.broken = true;
            return Err(e.into());
        }
        // A large frame's buffer is not kept for the connection's life.
        if self.frame.capacity() > 4 * READ_CHUNK {
            self.frame = Vec::new();
        }
        Ok(())
    }
}
