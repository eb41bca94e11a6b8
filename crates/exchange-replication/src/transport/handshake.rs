//! The handshake's I/O, both ends, within a deadline (see [`super::auth`]
//! for the wire and the proofs).

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use super::auth::{nonce, FrameMac, Refusal, Transcript, ANSWER, HELLO, MAGIC, NONCE, PROOF};
use super::TransportConfig;

/// Why a handshake ended without a session.
#[derive(Debug)]
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
fn parse_hello(bytes: &[u8]) -> Result<(u64, [u8; NONCE]), Refusal> {
    let (magic, rest) = bytes.split_at(MAGIC.len());
    if magic != MAGIC {
        return Err(Refusal::NotAHandshake);
    }
    let (id, rest) = rest.split_at(8);
    let id = u64::from_le_bytes(id.try_into().map_err(|_| Refusal::NotAHandshake)?);
    let nonce: [u8; NONCE] = rest[..NONCE]
        .try_into()
        .map_err(|_| Refusal::NotAHandshake)?;
    Ok((id, nonce))
}

fn hello(id: u64, nonce: &[u8; NONCE]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ANSWER);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(nonce);
    out
}

/// The accepting end: returns the initiator's node id and the session
/// that checks its frames. Nothing the initiator sends is believed
/// before its proof checks.
pub(crate) fn respond(
    stream: &mut TcpStream,
    config: &TransportConfig,
) -> Result<(u64, FrameMac), Failed> {
    let deadline = Instant::now() + config.handshake_timeout;
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
    let (id_i, nonce_i) = parse_hello(&buf)?;
    if id_i == 0 || id_i == config.node_id {
        return Err(Refusal::BadId.into());
    }
    let transcript = Transcript {
        nonce_i,
        nonce_r: nonce().map_err(|_| Failed::Io)?,
        id_i,
        id_r: config.node_id,
    };
    let mut answer = hello(config.node_id, &transcript.nonce_r);
    answer.extend_from_slice(&transcript.responder_proof(&config.key));
    write_by(stream, &answer, deadline)?;
    let mut proof = [0u8; PROOF];
    // An initiator that leaves here found our proof wrong: it holds
    // another key (or none).
    read_by(stream, &mut proof, deadline).map_err(|failed| match failed {
        Failed::Closed => Refusal::Abandoned.into(),
        other => other,
    })?;
    if !transcript.initiator_proved(&config.key, &proof) {
        return Err(Refusal::BadProof.into());
    }
    stream.set_read_timeout(None).map_err(|_| Failed::Io)?;
    Ok((id_i, transcript.session(&config.key)))
}

/// The connecting end, to node `peer`: returns the session that tags its
/// frames once the responder has proved it holds the key and is `peer`.
pub(crate) fn initiate(
    stream: &mut TcpStream,
    config: &TransportConfig,
    peer: u64,
) -> Result<FrameMac, Failed> {
    let deadline = Instant::now() + config.handshake_timeout;
    let nonce_i = nonce().map_err(|_| Failed::Io)?;
    write_by(stream, &hello(config.node_id, &nonce_i), deadline)?;
    let mut answer = [0u8; ANSWER];
    read_by(stream, &mut answer, deadline)?;
    let (id_r, nonce_r) = parse_hello(&answer[..HELLO])?;
    let transcript = Transcript {
        nonce_i,
        nonce_r,
        id_i: config.node_id,
        id_r,
    };
    if !transcript.responder_proved(&config.key, &answer[HELLO..]) {
        return Err(Refusal::BadProof.into());
    }
    if id_r != peer {
        return Err(Refusal::BadId.into());
    }
    write_by(stream, &transcript.initiator_proof(&config.key), deadline)?;
    stream.set_write_timeout(None).map_err(|_| Failed::Io)?;
    Ok(transcript.session(&config.key))
}
