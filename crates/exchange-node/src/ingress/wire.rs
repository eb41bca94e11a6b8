//! The ingress frames (see the module above for the layout).

use thiserror::Error;

use crate::entry::LogEntry;
use crate::replication::{decode_batch, encode_batch, BatchError};

#[derive(Debug, Error)]
pub enum WireError {
    #[error("empty ingress frame")]
    Empty,
    #[error("unknown ingress frame type {0}")]
    UnknownType(u8),
    #[error("ingress frame is truncated")]
    Truncated,
    #[error("ingress frame has {0} bytes after its end")]
    Trailing(usize),
    #[error("ingress batch: {0}")]
    Batch(#[from] BatchError),
    #[error("ingress batch does not encode: {0}")]
    Encode(#[from] crate::entry::EntryError),
}

/// Why the leader did not take a command into its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its queue was full: the gateway answers `overloaded`.
    Overloaded,
    /// It is stopping or its journal failed.
    Stopped,
}

/// Gateway to replica.
#[derive(Debug, PartialEq, Eq)]
pub enum Upstream {
    Heartbeat,
    Submit(Vec<LogEntry>),
}

/// Replica to gateway.
#[derive(Debug, PartialEq, Eq)]
pub enum Downstream {
    Heartbeat,
    Ready {
        node_id: u64,
    },
    NotLeader {
        leader: Option<u64>,
    },
    Refused {
        why: Refusal,
        session: u64,
        seqs: Vec<u64>,
    },
}

const HEARTBEAT: u8 = 0;
const SUBMIT: u8 = 1;
const NOT_LEADER: u8 = 1;
const REFUSED: u8 = 2;
const READY: u8 = 3;

/// A submit frame for `entries`.
pub fn encode_submit(entries: &[LogEntry]) -> Result<Vec<u8>, WireError> {
    let batch = encode_batch(entries)?;
    let mut frame = Vec::with_capacity(1 + batch.len());
    frame.push(SUBMIT);
    frame.extend_from_slice(&batch);
    Ok(frame)
}

// Gateways now keep their sessions alive with log entries instead; the
// frame is still read from gateways that send it.
#[cfg_attr(not(test), allow(dead_code))]
pub fn encode_heartbeat() -> Vec<u8> {
    vec![HEARTBEAT]
}

pub fn decode_upstream(frame: &[u8]) -> Result<Upstream, WireError> {
    match frame.split_first() {
        None => Err(WireError::Empty),
        Some((&HEARTBEAT, [])) => Ok(Upstream::Heartbeat),
        Some((&HEARTBEAT, rest)) => Err(WireError::Trailing(rest.len())),
        Some((&SUBMIT, batch)) => Ok(Upstream::Submit(decode_batch(batch)?)),
        Some((&other, _)) => Err(WireError::UnknownType(other)),
    }
}

pub fn encode_downstream(message: &Downstream) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    match message {
        Downstream::Heartbeat => out.push(HEARTBEAT),
        Downstream::Ready { node_id } => {
            out.push(READY);
            out.extend_from_slice(&node_id.to_le_bytes());
        }
        Downstream::NotLeader { leader } => {
            out.push(NOT_LEADER);
            out.extend_from_slice(&leader.unwrap_or(0).to_le_bytes());
        }
        Downstream::Refused { why, session, seqs } => {
            out.push(REFUSED);
            out.push(match why {
                Refusal::Overloaded => 1,
                Refusal::Stopped => 2,
            });
            out.extend_from_slice(&session.to_le_bytes());
            out.extend_from_slice(&(seqs.len() as u32).to_le_bytes());
            for seq in seqs {
                out.extend_from_slice(&seq.to_le_bytes());
            }
        }
    }
    out
}

/// Reads little-endian integers off the front of a frame.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(WireError::Truncated)?;
        self.0 = rest;
        Ok(*head)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        self.take::<8>().map(u64::from_le_bytes)
    }

    fn end(&self) -> Result<(), WireError> {
        match self.0.len() {
            0 => Ok(()),
            extra => Err(WireError::Trailing(extra)),
        }
    }
}

pub fn decode_downstream(frame: &[u8]) -> Result<Downstream, WireError> {
    let (&kind, rest) = frame.split_first().ok_or(WireError::Empty)?;
    let mut cursor = Cursor(rest);
    let message = match kind {
        HEARTBEAT => Downstream::Heartbeat,
        READY => Downstream::Ready {
            node_id: cursor.u64()?,
        },
        NOT_LEADER => Downstream::NotLeader {
            leader: Some(cursor.u64()?).filter(|id| *id != 0),
        },
        REFUSED => {
            let why = match cursor.take::<1>()?[0] {
                1 => Refusal::Overloaded,
                2 => Refusal::Stopped,
                other => return Err(WireError::UnknownType(other)),
            };
            let session = cursor.u64()?;
            let count = u32::from_le_bytes(cursor.take::<4>()?) as usize;
            // A count cannot claim more seqs than there are bytes for.
            if count > cursor.0.len() / 8 {
                return Err(WireError::Truncated);
            }
            let seqs = (0..count).map(|_| cursor.u64()).collect::<Result<_, _>>()?;
            Downstream::Refused { why, session, seqs }
        }
        other => return Err(WireError::UnknownType(other)),
    };
    cursor.end()?;
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downstream_frames_round_trip() {
        let messages = [
            Downstream::Heartbeat,
            Downstream::Ready { node_id: 3 },
            Downstream::NotLeader { leader: None },
            Downstream::NotLeader { leader: Some(2) },
            Downstream::Refused {
                why: Refusal::Overloaded,
                session: 77,
                seqs: vec![4, 5, 9],
            },
            Downstream::Refused {
                why: Refusal::Stopped,
                session: 1,
                seqs: Vec::new(),
            },
        ];
        for message in messages {
            let frame = encode_downstream(&message);
            assert_eq!(decode_downstream(&frame).expect("decodes"), message);
        }
    }

    #[test]
    fn malformed_frames_are_typed_errors() {
        assert!(matches!(decode_downstream(&[]), Err(WireError::Empty)));
        assert!(matches!(
            decode_downstream(&[9]),
            Err(WireError::UnknownType(9))
        ));
        assert!(matches!(
            decode_downstream(&[3, 1, 2]),
            Err(WireError::Truncated)
        ));
        let mut refused = encode_downstream(&Downstream::Refused {
            why: Refusal::Overloaded,
            session: 1,
            seqs: vec![1],
        });
        refused[10] = 200; // a count far beyond the bytes
        assert!(matches!(
            decode_downstream(&refused),
            Err(WireError::Truncated)
        ));
        let mut ready = encode_downstream(&Downstream::Ready { node_id: 1 });
        ready.push(0);
        assert!(matches!(
            decode_downstream(&ready),
            Err(WireError::Trailing(1))
        ));
        assert!(matches!(
            decode_upstream(&[0, 1]),
            Err(WireError::Trailing(1))
        ));
        assert!(matches!(
            decode_upstream(&[7]),
            Err(WireError::UnknownType(7))
        ));
        assert!(decode_upstream(&[1, 5, 0, 0, 0]).is_err());
    }

    #[test]
    fn submit_frames_carry_the_batch() {
        let entries = vec![LogEntry::CreateAccount {
            ts: 5,
            api_key: "k".into(),
            legacy_secret: None,
        }];
        let frame = encode_submit(&entries).expect("encodes");
        assert_eq!(
            decode_upstream(&frame).expect("decodes"),
            Upstream::Submit(entries)
        );
        assert_eq!(
            decode_upstream(&encode_heartbeat()).expect("decodes"),
            Upstream::Heartbeat
        );
    }
}
