//! The log stream's frames: each is one payload of the channel (which
//! authenticates it), a tag byte and its fields, integers little-endian.
//!
//! ```text
//! follower -> server  FOLLOW          1 from_raft_index(8)
//! server -> follower  SNAPSHOT_BEGIN  1 raft_index(8) term(8) len(8)
//!                     SNAPSHOT_DATA   2 bytes(..)           until len bytes came
//!                     ENTRIES         3 applied(8) first_raft_index(8) count(4)
//!                                       count × [term(8) len(4) payload(len)]
//!                     HEARTBEAT       4 applied(8)
//!                     REFUSED         5 reason(UTF-8, ..)
//! ```
//!
//! `applied` is the Raft index the server's core has applied: how far
//! the follower is behind. An entry's payload is its journal record's,
//! as `crate::replication::decode_entry_payload` reads it.

use thiserror::Error;

const FOLLOW: u8 = 1;
const SNAPSHOT_BEGIN: u8 = 1;
const SNAPSHOT_DATA: u8 = 2;
const ENTRIES: u8 = 3;
const HEARTBEAT: u8 = 4;
const REFUSED: u8 = 5;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("frame truncated")]
    Truncated,
    #[error("unknown frame tag {0}")]
    UnknownTag(u8),
    #[error("{0} bytes after the frame's last field")]
    Trailing(usize),
    #[error("a refusal's reason is not UTF-8")]
    BadText,
}

/// What a follower asks for: every committed entry from
/// `from_raft_index` on (it has applied those before; 0: it has nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Follow {
    pub from_raft_index: u64,
}

/// What the server sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A snapshot of `len` bytes follows in `SnapshotData` frames.
    SnapshotBegin {
        raft_index: u64,
        term: u64,
        len: u64,
    },
    SnapshotData(Vec<u8>),
    /// Committed entries from `first_raft_index` on: (term, payload) each.
    Entries {
        applied: u64,
        first_raft_index: u64,
        entries: Vec<(u64, Vec<u8>)>,
    },
    Heartbeat {
        applied: u64,
    },
    /// The server cannot serve this follower; it closes the connection.
    Refused(String),
}

pub fn encode_follow(follow: Follow) -> Vec<u8> {
    let mut out = vec![FOLLOW];
    out.extend_from_slice(&follow.from_raft_index.to_le_bytes());
    out
}

pub fn decode_follow(bytes: &[u8]) -> Result<Follow, WireError> {
    let mut reader = Reader(bytes);
    match reader.u8()? {
        FOLLOW => {
            let from_raft_index = reader.u64()?;
            reader.end()?;
            Ok(Follow { from_raft_index })
        }
        tag => Err(WireError::UnknownTag(tag)),
    }
}

pub fn encode_snapshot_begin(raft_index: u64, term: u64, len: u64) -> Vec<u8> {
    let mut out = vec![SNAPSHOT_BEGIN];
    for field in [raft_index, term, len] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out
}

pub fn encode_snapshot_data(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + bytes.len());
    out.push(SNAPSHOT_DATA);
    out.extend_from_slice(bytes);
    out
}

/// An `Entries` frame of journal records `entries` (consecutive indices),
/// without copying their payloads twice.
pub fn encode_entries(applied: u64, entries: &[exchange_journal::Entry]) -> Vec<u8> {
    let size: usize = entries.iter().map(|e| 12 + e.payload.len()).sum();
    let mut out = Vec::with_capacity(21 + size);
    out.push(ENTRIES);
    out.extend_from_slice(&applied.to_le_bytes());
    let first = entries.first().map_or(0, |e| e.index);
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for entry in entries {
        out.extend_from_slice(&entry.term.to_le_bytes());
        out.extend_from_slice(&(entry.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&entry.payload);
    }
    out
}

pub fn encode_heartbeat(applied: u64) -> Vec<u8> {
    let mut out = vec![HEARTBEAT];
    out.extend_from_slice(&applied.to_le_bytes());
    out
}

pub fn encode_refused(reason: &str) -> Vec<u8> {
    let mut out = vec![REFUSED];
    out.extend_from_slice(reason.as_bytes());
    out
}

pub fn decode_frame(bytes: &[u8]) -> Result<Frame, WireError> {
    let mut reader = Reader(bytes);
    let frame = match reader.u8()? {
        SNAPSHOT_BEGIN => Frame::SnapshotBegin {
            raft_index: reader.u64()?,
            term: reader.u64()?,
            len: reader.u64()?,
        },
        SNAPSHOT_DATA => Frame::SnapshotData(reader.rest().to_vec()),
        ENTRIES => {
            let applied = reader.u64()?;
            let first_raft_index = reader.u64()?;
            let count = reader.u32()? as usize;
            // Not sized from `count`: each entry takes at least 12 bytes.
            let mut entries = Vec::with_capacity(count.min(reader.0.len() / 12));
            for _ in 0..count {
                let term = reader.u64()?;
                let len = reader.u32()? as usize;
                entries.push((term, reader.take(len)?.to_vec()));
            }
            Frame::Entries {
                applied,
                first_raft_index,
                entries,
            }
        }
        HEARTBEAT => Frame::Heartbeat {
            applied: reader.u64()?,
        },
        REFUSED => Frame::Refused(
            String::from_utf8(reader.rest().to_vec()).map_err(|_| WireError::BadText)?,
        ),
        tag => return Err(WireError::UnknownTag(tag)),
    };
    reader.end()?;
    Ok(frame)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, WireError> {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(bytes))
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(bytes))
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }

    fn end(&self) -> Result<(), WireError> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let follow = Follow {
            from_raft_index: 77,
        };
        assert_eq!(decode_follow(&encode_follow(follow)), Ok(follow));
        let records = [
            exchange_journal::Entry {
                index: 5,
                term: 2,
                payload: vec![0, 1, 2],
            },
            exchange_journal::Entry {
                index: 6,
                term: 3,
                payload: vec![],
            },
        ];
        let frames = [
            (
                encode_snapshot_begin(9, 2, 1_000),
                Frame::SnapshotBegin {
                    raft_index: 9,
                    term: 2,
                    len: 1_000,
                },
            ),
            (
                encode_snapshot_data(b"abc"),
                Frame::SnapshotData(b"abc".to_vec()),
            ),
            (
                encode_entries(8, &records),
                Frame::Entries {
                    applied: 8,
                    first_raft_index: 5,
                    entries: vec![(2, vec![0, 1, 2]), (3, vec![])],
                },
            ),
            (encode_heartbeat(4), Frame::Heartbeat { applied: 4 }),
            (encode_refused("no"), Frame::Refused("no".into())),
        ];
        for (bytes, frame) in frames {
            assert_eq!(decode_frame(&bytes), Ok(frame));
        }
    }

    #[test]
    fn malformed_frames_are_errors() {
        let entries = encode_entries(
            8,
            &[exchange_journal::Entry {
                index: 5,
                term: 2,
                payload: vec![7; 10],
            }],
        );
        for cut in 0..entries.len() {
            assert_eq!(decode_frame(&entries[..cut]), Err(WireError::Truncated));
        }
        let mut long = encode_heartbeat(1);
        long.push(0);
        assert_eq!(decode_frame(&long), Err(WireError::Trailing(1)));
        assert_eq!(decode_frame(&[9]), Err(WireError::UnknownTag(9)));
        assert_eq!(decode_frame(&[5, 0xff]), Err(WireError::BadText));
        // A count no bytes back does not allocate for it.
        let mut huge = vec![3];
        huge.extend_from_slice(&[0; 16]);
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_frame(&huge), Err(WireError::Truncated));
        assert_eq!(decode_follow(&[1, 0]), Err(WireError::Truncated));
    }
}
