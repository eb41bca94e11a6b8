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

/// Appends the encoded record to `buf`. The payload must be at most
/// [`MAX_PAYLOAD_BYTES`] (callers refuse larger ones first).
pub fn encode(index: u64, term: u64, payload: &[u8], buf: &mut Vec<u8>) {
    // A longer payload's length would not fit the `u32` field, or would
    // be refused as impossible when read: an acknowledged record that
    // recovery then cuts off as a torn tail.
    assert!(
        payload.len() <= MAX_PAYLOAD_BYTES,
        "encoding a payload of {} bytes",
        payload.len()
    );
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(&checksum(index, term, payload).to_le_bytes());
    buf.extend_from_slice(&index.to_le_bytes());
    buf.extend_from_slice(&term.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Panics unless `written` is exactly one record that reads back as
/// `index`, `term` and `payload`: length, checksum and all. Run on every
/// record before it is written, because a record that does not read back
/// is only found when recovery meets it, after it was acknowledged, and
/// is then cut off as a torn tail or refuses the whole log.
pub fn assert_reads_back(written: &[u8], index: u64, term: u64, payload: &[u8]) {
    match parse(written, index) {
        Ok((read_term, read_payload, used))
            if read_term == term && read_payload == payload && used == written.len() => {}
        other => panic!(
            "record {index} does not read back as written: {:?}",
            other.map(|(term, payload, used)| (term, payload.len(), used))
        ),
    }
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
    let (term, payload, total) = parse(bytes, expected)?;
    Ok((
        Entry {
            index: expected,
            term,
            payload: payload.to_vec(),
        },
        total,
    ))
}

/// Checks the record at the start of `bytes` as [`decode`] does, without
/// copying its payload: its term, payload and the bytes it takes.
pub fn parse(bytes: &[u8], expected: u64) -> Result<(u64, &[u8], usize), Invalid> {
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
    Ok((term, payload, total))
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

    #[test]
    fn an_encoded_record_reads_back() {
        let mut buf = Vec::new();
        for (index, payload) in [(1, &b""[..]), (2, b"x"), (u64::MAX, &[7; 1000][..])] {
            buf.clear();
            encode(index, 3, payload, &mut buf);
            assert_reads_back(&buf, index, 3, payload);
        }
    }

    #[test]
    #[should_panic(expected = "record 7 does not read back as written: Err(BadChecksum)")]
    fn a_record_garbled_before_its_write_is_caught() {
        let mut buf = Vec::new();
        encode(7, 2, b"hello", &mut buf);
        buf[HEADER_BYTES] ^= 1;
        assert_reads_back(&buf, 7, 2, b"hello");
    }

    #[test]
    #[should_panic(expected = "record 7 does not read back as written: Ok((3, 5, 29))")]
    fn a_record_of_the_wrong_term_is_caught() {
        let mut buf = Vec::new();
        encode(7, 3, b"hello", &mut buf);
        assert_reads_back(&buf, 7, 2, b"hello");
    }

    #[test]
    #[should_panic(expected = "record 7 does not read back as written: Ok((2, 5, 29))")]
    fn bytes_after_the_record_are_caught() {
        let mut buf = Vec::new();
        encode(7, 2, b"hello", &mut buf);
        buf.push(0);
        assert_reads_back(&buf, 7, 2, b"hello");
    }

    #[test]
    #[should_panic(expected = "encoding a payload of 4194305 bytes")]
    fn a_payload_over_the_limit_is_never_encoded() {
        encode(1, 1, &vec![0; MAX_PAYLOAD_BYTES + 1], &mut Vec::new());
    }
}
