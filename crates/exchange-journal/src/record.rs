//! One log record on disk.
//!
//! Layout (little endian): `len: u32 | crc: u32 | index: u64 | term: u64 |
//! payload[len]`. The CRC32C covers index, term and payload, so a record
//! that was torn by a crash, or garbled since, is recognised and never
//! applied. `index` makes every record self-describing: a record found at
//! the wrong place is corruption too.

/// Bytes before the payload.
pub const HEADER_BYTES: usize = 24;
/// Largest payload a record may carry: the server's largest group commit
/// fits (exchange-server checks it at compile time), and a length above it
/// marks a garbled header rather than a record to read.
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;

/// A log entry: position, Raft term (0 for a single node that never
/// elected) and opaque payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub index: u64,
    pub term: u64,
    pub payload: Vec<u8>,
}

fn checksum(index: u64, term: u64, payload: &[u8]) -> u32 {
    let mut crc = crc32c::crc32c(&index.to_le_bytes());
    crc = crc32c::crc32c_append(crc, &term.to_le_bytes());
    crc32c::crc32c_append(crc, payload)
}

/// Appends the encoded record to `buf`.
pub fn encode(index: u64, term: u64, payload: &[u8], buf: &mut Vec<u8>) {
    debug_assert!(payload.len() <= MAX_PAYLOAD_BYTES);
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&checksum(index, term, payload).to_le_bytes());
    buf.extend_from_slice(&index.to_le_bytes());
    buf.extend_from_slice(&term.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Why the bytes at some offset are not a valid record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Fewer bytes than a header or than the header's length announces:
    /// the write was cut short.
    Torn,
    /// The length field is impossible.
    BadLength(u32),
    /// The checksum does not match.
    BadChecksum,
    /// A valid record, but not the index expected here.
    WrongIndex { expected: u64, found: u64 },
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::Torn => write!(f, "record cut short"),
            Invalid::BadLength(len) => write!(f, "impossible record length {len}"),
            Invalid::BadChecksum => write!(f, "checksum mismatch"),
            Invalid::WrongIndex { expected, found } => {
                write!(f, "expected index {expected}, found {found}")
            }
        }
    }
}

/// Decodes the record at the start of `bytes`, which must carry `expected`
/// index. Returns the entry and the bytes it took.
pub fn decode(bytes: &[u8], expected: u64) -> Result<(Entry, usize), Invalid> {
    if bytes.len() < HEADER_BYTES {
        return Err(Invalid::Torn);
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let long = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let len = word(0);
    if len as usize > MAX_PAYLOAD_BYTES {
        return Err(Invalid::BadLength(len));
    }
    let total = HEADER_BYTES + len as usize;
    if bytes.len() < total {
        return Err(Invalid::Torn);
    }
    let (crc, index, term) = (word(4), long(8), long(16));
    let payload = &bytes[HEADER_BYTES..total];
    if checksum(index, term, payload) != crc {
        return Err(Invalid::BadChecksum);
    }
    if index != expected {
        return Err(Invalid::WrongIndex {
            expected,
            found: index,
        });
    }
    Ok((
        Entry {
            index,
            term,
            payload: payload.to_vec(),
        },
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_corruption_is_caught() {
        let mut buf = Vec::new();
        encode(7, 2, b"hello", &mut buf);
        let (entry, used) = decode(&buf, 7).unwrap();
        assert_eq!(
            entry,
            Entry {
                index: 7,
                term: 2,
                payload: b"hello".to_vec()
            }
        );
        assert_eq!(used, buf.len());
        assert_eq!(decode(&buf[..buf.len() - 1], 7), Err(Invalid::Torn));
        assert_eq!(decode(&buf[..10], 7), Err(Invalid::Torn));
        assert_eq!(
            decode(&buf, 8),
            Err(Invalid::WrongIndex {
                expected: 8,
                found: 7
            })
        );
        for at in 4..buf.len() {
            let mut garbled = buf.clone();
            garbled[at] ^= 0x40;
            assert_eq!(
                decode(&garbled, 7),
                Err(Invalid::BadChecksum),
                "flip at byte {at}"
            );
        }
        let mut huge = buf.clone();
        huge[3] = 0xff;
        assert!(matches!(decode(&huge, 7), Err(Invalid::BadLength(_))));
    }
}
