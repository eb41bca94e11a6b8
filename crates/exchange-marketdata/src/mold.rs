//! MoldUDP64 packets, and the TCP requests of the retransmission and
//! snapshot service.
//!
//! A packet is a 20-byte header — session (10 ASCII bytes), sequence
//! number of its first message (u64), message count (u16), big-endian —
//! then `count` blocks of a u16 length and the message. A heartbeat has
//! count 0 and carries the sequence number of the next message; count
//! 0xFFFF ends the session.
//!
//! Over TCP the client sends fixed 21-byte requests (a kind byte,
//! session, sequence, count) and the server answers each with one frame: a
//! u32 length, then `P` and a MoldUDP64 packet (retransmission), or `S`
//! and a snapshot ([`SnapshotBody`]).

use std::io::{self, Read, Write};

use thiserror::Error;

pub const SESSION_LEN: usize = 10;
pub const HEADER_LEN: usize = 20;
/// Message count that ends a session.
pub const END_OF_SESSION: u16 = 0xFFFF;
pub const REQUEST_LEN: usize = 21;

pub type Session = [u8; SESSION_LEN];

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MoldError {
    #[error("packet shorter than its header")]
    ShortHeader,
    #[error("packet holds fewer messages than its count says")]
    Truncated,
    #[error("packet has {0} bytes after its last message")]
    Trailing(usize),
    #[error("unknown request kind {0:#04x}")]
    UnknownRequest(u8),
    #[error("malformed snapshot")]
    Snapshot,
}

/// A session name: `text` space-padded or cut to ten bytes.
pub fn session_from(text: &str) -> Session {
    let mut session = [b' '; SESSION_LEN];
    for (slot, byte) in session.iter_mut().zip(text.bytes()) {
        *slot = byte;
    }
    session
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(raw)
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// A parsed packet, borrowing its messages from the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    pub session: Session,
    pub seq: u64,
    pub count: u16,
    pub messages: Vec<&'a [u8]>,
}

impl<'a> Packet<'a> {
    pub fn parse(buf: &'a [u8]) -> Result<Packet<'a>, MoldError> {
        if buf.len() < HEADER_LEN {
            return Err(MoldError::ShortHeader);
        }
        let mut session = [0u8; SESSION_LEN];
        session.copy_from_slice(&buf[..SESSION_LEN]);
        let seq = u64_at(buf, 10);
        let count = u16_at(buf, 18);
        let mut messages = Vec::new();
        let mut at = HEADER_LEN;
        if count != END_OF_SESSION {
            for _ in 0..count {
                if at + 2 > buf.len() {
                    return Err(MoldError::Truncated);
                }
                let len = usize::from(u16_at(buf, at));
                at += 2;
                let message = buf.get(at..at + len).ok_or(MoldError::Truncated)?;
                messages.push(message);
                at += len;
            }
        }
        if at != buf.len() {
            return Err(MoldError::Trailing(buf.len() - at));
        }
        Ok(Packet {
            session,
            seq,
            count,
            messages,
        })
    }

    pub fn is_heartbeat(&self) -> bool {
        self.count == 0
    }

    pub fn is_end_of_session(&self) -> bool {
        self.count == END_OF_SESSION
    }
}

/// Builds one packet of at most `max_bytes`.
#[derive(Clone, Debug)]
pub struct PacketWriter {
    buf: Vec<u8>,
    count: u16,
    max_bytes: usize,
}

impl PacketWriter {
    pub fn new(session: &Session, first_seq: u64, max_bytes: usize) -> PacketWriter {
        let mut buf = Vec::with_capacity(max_bytes.min(65_536));
        buf.extend_from_slice(session);
        buf.extend_from_slice(&first_seq.to_be_bytes());
        buf.extend_from_slice(&0u16.to_be_bytes());
        PacketWriter {
            buf,
            count: 0,
            max_bytes,
        }
    }

    /// Whether a message of `len` bytes still fits. An empty packet always
    /// takes one message, so an oversized message cannot stall the feed.
    pub fn fits(&self, len: usize) -> bool {
        self.count == 0
            || (self.buf.len() + 2 + len <= self.max_bytes && self.count < END_OF_SESSION - 1)
    }

    pub fn push(&mut self, message: &[u8]) {
        // Messages are at most a few dozen bytes; a u16 length always fits.
        self.buf
            .extend_from_slice(&(message.len() as u16).to_be_bytes());
        self.buf.extend_from_slice(message);
        self.count += 1;
    }

    pub fn count(&self) -> u16 {
        self.count
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.buf[18..20].copy_from_slice(&self.count.to_be_bytes());
        self.buf
    }
}

/// A heartbeat: no messages, the sequence number of the next message.
pub fn heartbeat(session: &Session, next_seq: u64) -> Vec<u8> {
    PacketWriter::new(session, next_seq, HEADER_LEN).finish()
}

/// A request to the TCP retransmission and snapshot service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `R`: up to `count` messages from `seq` of `session`.
    Retransmit {
        session: Session,
        seq: u64,
        count: u16,
    },
    /// `S`: every book as of now, with the sequence to continue from.
    Snapshot,
}

impl Request {
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut out = [0u8; REQUEST_LEN];
        match *self {
            Request::Retransmit {
                session,
                seq,
                count,
            } => {
                out[0] = b'R';
                out[1..11].copy_from_slice(&session);
                out[11..19].copy_from_slice(&seq.to_be_bytes());
                out[19..21].copy_from_slice(&count.to_be_bytes());
            }
            Request::Snapshot => {
                out[0] = b'S';
                out[1..11].copy_from_slice(&[b' '; SESSION_LEN]);
            }
        }
        out
    }

    pub fn decode(bytes: &[u8; REQUEST_LEN]) -> Result<Request, MoldError> {
        match bytes[0] {
            b'R' => {
                let mut session = [0u8; SESSION_LEN];
                session.copy_from_slice(&bytes[1..11]);
                Ok(Request::Retransmit {
                    session,
                    seq: u64_at(bytes, 11),
                    count: u16_at(bytes, 19),
                })
            }
            b'S' => Ok(Request::Snapshot),
            other => Err(MoldError::UnknownRequest(other)),
        }
    }
}

/// A TCP frame: the body's length (u32, big-endian), then the body.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

pub fn write_frame(writer: &mut impl Write, body: &[u8]) -> io::Result<()> {
    writer.write_all(&frame(body))
}

/// Reads one frame, refusing bodies over `max_bytes`.
pub fn read_frame(reader: &mut impl Read, max_bytes: usize) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    reader.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds {max_bytes}"),
        ));
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// The snapshot service's answer: the messages that rebuild every book,
/// consistent with the feed just before message `next_seq`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SnapshotBody {
    pub session: Session,
    pub next_seq: u64,
    pub messages: Vec<Vec<u8>>,
}

impl SnapshotBody {
    /// `S`, session, next sequence (u64), count (u32), length-prefixed
    /// messages.
    pub fn encode(&self) -> Vec<u8> {
        let size: usize = self.messages.iter().map(|m| m.len() + 2).sum();
        let mut out = Vec::with_capacity(23 + size);
        out.push(b'S');
        out.extend_from_slice(&self.session);
        out.extend_from_slice(&self.next_seq.to_be_bytes());
        out.extend_from_slice(&(self.messages.len() as u32).to_be_bytes());
        for message in &self.messages {
            out.extend_from_slice(&(message.len() as u16).to_be_bytes());
            out.extend_from_slice(message);
        }
        out
    }

    pub fn decode(body: &[u8]) -> Result<SnapshotBody, MoldError> {
        if body.len() < 23 || body[0] != b'S' {
            return Err(MoldError::Snapshot);
        }
        let mut session = [0u8; SESSION_LEN];
        session.copy_from_slice(&body[1..11]);
        let next_seq = u64_at(body, 11);
        let count = u32::from_be_bytes([body[19], body[20], body[21], body[22]]);
        let mut messages = Vec::new();
        let mut at = 23;
        for _ in 0..count {
            let len_bytes = body.get(at..at + 2).ok_or(MoldError::Snapshot)?;
            let len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
            at += 2;
            messages.push(body.get(at..at + len).ok_or(MoldError::Snapshot)?.to_vec());
            at += len;
        }
        if at != body.len() {
            return Err(MoldError::Snapshot);
        }
        Ok(SnapshotBody {
            session,
            next_seq,
            messages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_respect_their_size() {
        let session = session_from("20260101");
        assert_eq!(&session, b"20260101  ");
        let mut writer = PacketWriter::new(&session, 42, HEADER_LEN + 12);
        assert!(writer.fits(5));
        writer.push(b"hello");
        assert!(!writer.fits(5), "a second such message would overflow");
        assert!(writer.fits(1));
        writer.push(b"x");
        let bytes = writer.finish();
        let packet = Packet::parse(&bytes).unwrap();
        assert_eq!((packet.seq, packet.count), (42, 2));
        assert_eq!(packet.messages, vec![&b"hello"[..], &b"x"[..]]);
        assert_eq!(
            Packet::parse(&bytes[..bytes.len() - 1]),
            Err(MoldError::Truncated)
        );
        let beat = heartbeat(&session, 44);
        let parsed = Packet::parse(&beat).unwrap();
        assert!(parsed.is_heartbeat() && parsed.seq == 44);
    }

    #[test]
    fn requests_and_snapshots_round_trip() {
        let request = Request::Retransmit {
            session: session_from("s"),
            seq: 7,
            count: 3,
        };
        assert_eq!(Request::decode(&request.encode()), Ok(request));
        assert_eq!(
            Request::decode(&Request::Snapshot.encode()),
            Ok(Request::Snapshot)
        );
        let body = SnapshotBody {
            session: session_from("s"),
            next_seq: 9,
            messages: vec![vec![1, 2], vec![3]],
        };
        assert_eq!(SnapshotBody::decode(&body.encode()), Ok(body.clone()));
        let mut framed = std::io::Cursor::new(frame(&body.encode()));
        assert_eq!(read_frame(&mut framed, 1 << 20).unwrap(), body.encode());
    }
}
