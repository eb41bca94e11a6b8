//! The handshake's I/O, both ends, within a deadline (see [`super::auth`]
//! for the wire and the proofs).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::auth::{nonce, Protocol, Refusal, Transcript, ANSWER, HELLO, MAGIC, NONCE, PROOF};
use super::ClusterKey;

/// One end of a handshake: who it is, what it speaks, how long it waits.
pub(crate) struct Side<'a> {
    pub protocol: &'a Protocol,
    pub key: &'a ClusterKey,
    pub my_id: u64,
    pub timeout: Duration,
}

/// Why a handshake ended without a session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failed {
    /// Refused for a reason worth counting and logging.
    Refused(Refusal),
    /// The connection failed (reset, or closed before a byte came):
    /// nothing to report.
    Io,
    /// The other end closed it midway.
    Closed,
}

impl From<Refusal> for Failed {
    fn from(refusal: Refusal) -> Failed {
        Failed::Refused(refusal)
    }
}

/// Reads exactly `buf.len()` bytes before `deadline`: a peer that trickles
/// bytes cannot stretch the handshake past it.
fn read_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> Result<(), Failed> {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Refusal::Timeout.into());
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|_| Failed::Io)?;
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(Failed::Closed),
            Ok(n) => filled += n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Refusal::Timeout.into())
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(Failed::Io),
        }
    }
    Ok(())
}

fn write_by(stream: &mut TcpStream, bytes: &[u8], deadline: Instant) -> Result<(), Failed> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Refusal::Timeout.into());
    }
    stream
        .set_write_timeout(Some(left))
        .map_err(|_| Failed::Io)?;
    stream.write_all(bytes).map_err(|e| match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Refusal::Timeout.into(),
        _ => Failed::Io,
    })
}

/// Splits `MAGIC id nonce` off the front of a hello or answer.
fn parse_hello(bytes: &[u8], magic: &[u8; 8]) -> Result<(u64, [u8; NONCE]), Refusal> {
    let (got, rest) = bytes.split_at(MAGIC.len());
    if got != magic {
        return Err(Refusal::NotAHandshake);
    }
    let (id, rest) = rest.split_at(8);
    let id = u64::from_le_bytes(id.try_into().map_err(|_| Refusal::NotAHandshake)?);
    let nonce: [u8; NONCE] = rest[..NONCE]
        .try_into()
        .map_err(|_| Refusal::NotAHandshake)?;
    Ok((id, nonce))
}

fn hello(magic: &[u8; 8], id: u64, nonce: &[u8; NONCE]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ANSWER);
    out.extend_from_slice(magic);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(nonce);
    out
}

/// The accepting end: returns the initiator's node id and the transcript
/// both ends derive their sessions from. Nothing the initiator sends is
/// believed before its proof checks.
pub(crate) fn respond(stream: &mut TcpStream, side: &Side) -> Result<(u64, Transcript), Failed> {
    let deadline = Instant::now() + side.timeout;
    let mut buf = [0u8; HELLO];
    match read_by(stream, &mut buf[..1], deadline) {
        // Connected and left without a word: a port check, not an attack.
        Err(Failed::Closed) => return Err(Failed::Io),
        other => other?,
    }
    read_by(stream, &mut buf[1..], deadline).map_err(|failed| match failed {
        Failed::Closed => Refusal::NotAHandshake.into(),
        other => other,
    })?;
    let (id_i, nonce_i) = match parse_hello(&buf, &side.protocol.magic) {
        Ok(hello) => hello,
        Err(refusal) => {
            // Our MAGIC alone tells an initiator of another protocol why it
            // is refused; it proves nothing and reveals no secret.
            let _ = write_by(stream, &side.protocol.magic, deadline);
            return Err(refusal.into());
        }
    };
    if id_i == 0 || id_i == side.my_id {
        return Err(Refusal::BadId.into());
    }
    let transcript = Transcript {
        nonce_i,
        nonce_r: nonce().map_err(|_| Failed::Io)?,
        id_i,
        id_r: side.my_id,
    };
    let mut answer = hello(&side.protocol.magic, side.my_id, &transcript.nonce_r);
    answer.extend_from_slice(&transcript.responder_proof(side.key, side.protocol));
    write_by(stream, &answer, deadline)?;
    let mut proof = [0u8; PROOF];
    // An initiator that leaves here found our proof wrong: it holds
    // another key (or none).
    read_by(stream, &mut proof, deadline).map_err(|failed| match failed {
        Failed::Closed => Refusal::Abandoned.into(),
        other => other,
    })?;
    if !transcript.initiator_proved(side.key, side.protocol, &proof) {
        return Err(Refusal::BadProof.into());
    }
    stream.set_read_timeout(None).map_err(|_| Failed::Io)?;
    Ok((id_i, transcript))
}

/// The connecting end: returns the responder's node id and the
/// transcript once the responder has proved it holds the key (and, given
/// `peer`, that it is that node).
pub(crate) fn initiate(
    stream: &mut TcpStream,
    side: &Side,
    peer: Option<u64>,
) -> Result<(u64, Transcript), Failed> {
    let deadline = Instant::now() + side.timeout;
    let nonce_i = nonce().map_err(|_| Failed::Io)?;
    write_by(
        stream,
        &hello(&side.protocol.magic, side.my_id, &nonce_i),
        deadline,
    )?;
    let mut answer = [0u8; ANSWER];
    let magic = MAGIC.len();
    read_by(stream, &mut answer[..magic], deadline)?;
    if answer[..magic] != side.protocol.magic {
        return Err(Refusal::NotAHandshake.into());
    }
    read_by(stream, &mut answer[magic..], deadline)?;
    let (id_r, nonce_r) = parse_hello(&answer[..HELLO], &side.protocol.magic)?;
    let transcript = Transcript {
        nonce_i,
        nonce_r,
        id_i: side.my_id,
        id_r,
    };
    if !transcript.responder_proved(side.key, side.protocol, &answer[HELLO..]) {
        return Err(Refusal::BadProof.into());
    }
    let expected = peer.map_or(id_r != 0 && id_r != side.my_id, |peer| id_r == peer);
    if !expected {
        return Err(Refusal::BadId.into());
    }
    write_by(
        stream,
        &transcript.initiator_proof(side.key, side.protocol),
        deadline,
    )?;
    stream.set_write_timeout(None).map_err(|_| Failed::Io)?;
    Ok((id_r, transcript))
}
