//! Where a session keeps its sequence numbers and the application messages
//! it sent (for resends), so both survive a restart of the exchange.
//!
//! On disk, one directory per session under `DATA_DIR/fix/`:
//! - `seqnums`: the next outgoing and next expected incoming MsgSeqNum,
//!   fixed width, rewritten in place with one write;
//! - `messages`: sent application messages, appended as
//!   `SEQ LEN\n<LEN bytes>\n` records.
//!
//! Writes go to the operating system without fsync: they survive the
//! process being killed, and a torn tail left by a machine crash is cut off
//! when the file is opened again (the counterparty's resend request then
//! gets a gap fill for what was lost). Admin messages are not stored: a
//! resend replaces them with a gap fill anyway.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("FIX store {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("FIX store {path}: unreadable sequence numbers {text:?}")]
    Corrupt { path: PathBuf, text: String },
}

/// What the session state machine needs from its persistence.
pub trait Store: Send {
    fn next_sender_seq(&self) -> u64;
    fn next_target_seq(&self) -> u64;
    fn set_next_sender_seq(&mut self, seq: u64);
    fn set_next_target_seq(&mut self, seq: u64);
    /// Keeps a sent application message for resends.
    fn save(&mut self, seq: u64, raw: &[u8]);
    /// The stored messages with `begin <= seq <= end`, in order.
    fn load(&mut self, begin: u64, end: u64) -> Vec<(u64, Vec<u8>)>;
    /// Both sequence numbers back to 1 and every stored message gone.
    fn reset(&mut self);
    /// The first write that failed; the session stops when there is one.
    fn failure(&self) -> Option<String>;
}

/// A store in memory, for tests and tools.
#[derive(Debug)]
pub struct MemoryStore {
    pub sender: u64,
    pub target: u64,
    pub messages: BTreeMap<u64, Vec<u8>>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            sender: 1,
            target: 1,
            messages: BTreeMap::new(),
        }
    }
}

impl Store for MemoryStore {
    fn next_sender_seq(&self) -> u64 {
        self.sender
    }
    fn next_target_seq(&self) -> u64 {
        self.target
    }
    fn set_next_sender_seq(&mut self, seq: u64) {
        self.sender = seq;
    }
    fn set_next_target_seq(&mut self, seq: u64) {
        self.target = seq;
    }
    fn save(&mut self, seq: u64, raw: &[u8]) {
        self.messages.insert(seq, raw.to_vec());
    }
    fn load(&mut self, begin: u64, end: u64) -> Vec<(u64, Vec<u8>)> {
        if begin > end {
            return Vec::new();
        }
        self.messages
            .range(begin..=end)
            .map(|(s, m)| (*s, m.clone()))
            .collect()
    }
    fn reset(&mut self) {
        *self = MemoryStore::default();
    }
    fn failure(&self) -> Option<String> {
        None
    }
}

const SEQNUMS_LEN: usize = 42;

/// The on-disk store of one session.
#[derive(Debug)]
pub struct FileStore {
    dir: PathBuf,
    seqnums: File,
    messages: File,
    /// Stored message offsets and lengths by sequence number.
    index: BTreeMap<u64, (u64, usize)>,
    end: u64,
    sender: u64,
    target: u64,
    failure: Option<String>,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads `SEQ LEN\n<bytes>\n` records; returns the index and where the last
/// whole record ends (anything after it is a torn tail).
fn scan(bytes: &[u8]) -> (BTreeMap<u64, (u64, usize)>, usize) {
    let mut index = BTreeMap::new();
    let mut at = 0usize;
    while let Some(newline) = bytes[at..].iter().position(|b| *b == b'\n') {
        let header = std::str::from_utf8(&bytes[at..at + newline]).unwrap_or_default();
        let mut parts = header.split(' ');
        let (Some(Ok(seq)), Some(Ok(len)), None) = (
            parts.next().map(str::parse::<u64>),
            parts.next().map(str::parse::<usize>),
            parts.next(),
        ) else {
            break;
        };
        let start = at + newline + 1;
        let Some(stop) = start.checked_add(len) else {
            break;
        };
        if bytes.get(stop) != Some(&b'\n') {
            break;
        }
        index.insert(seq, (start as u64, len));
        at = stop + 1;
    }
    (index, at)
}

impl FileStore {
    pub fn open(dir: &Path) -> Result<FileStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let seq_path = dir.join("seqnums");
        let mut seqnums = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&seq_path)
            .map_err(io_error(&seq_path))?;
        let mut text = String::new();
        seqnums
            .read_to_string(&mut text)
            .map_err(io_error(&seq_path))?;
        let (mut sender, target) = if text.trim().is_empty() {
            (1, 1)
        } else {
            let mut numbers = text.split_whitespace().map(str::parse::<u64>);
            match (numbers.next(), numbers.next(), numbers.next()) {
                (Some(Ok(s)), Some(Ok(t)), None) if s > 0 && t > 0 => (s, t),
                _ => {
                    return Err(StoreError::Corrupt {
                        path: seq_path,
                        text,
                    })
                }
            }
        };
        let msg_path = dir.join("messages");
        let mut messages = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&msg_path)
            .map_err(io_error(&msg_path))?;
        let mut bytes = Vec::new();
        messages
            .read_to_end(&mut bytes)
            .map_err(io_error(&msg_path))?;
        let (index, whole) = scan(&bytes);
        if whole < bytes.len() {
            tracing::warn!(path = %msg_path.display(), dropped = bytes.len() - whole, "cut a torn tail off the FIX message store");
            messages
                .set_len(whole as u64)
                .map_err(io_error(&msg_path))?;
        }
        // A message stored just before a crash may be newer than the
        // sequence numbers written after it.
        if let Some((last, _)) = index.last_key_value() {
            sender = sender.max(last + 1);
        }
        let mut store = FileStore {
            dir: dir.to_path_buf(),
            seqnums,
            messages,
            index,
            end: whole as u64,
            sender,
            target,
            failure: None,
        };
        store.write_seqnums();
        match store.failure.take() {
            Some(text) => Err(StoreError::Io {
                path: seq_path,
                source: std::io::Error::other(text),
            }),
            None => Ok(store),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn fail(&mut self, what: &str, error: std::io::Error) {
        if self.failure.is_none() {
            tracing::error!(dir = %self.dir.display(), %error, "FIX store {what} failed");
            self.failure = Some(format!("{what}: {error}"));
        }
    }

    fn write_seqnums(&mut self) {
        let text = format!("{:020} {:020}\n", self.sender, self.target);
        debug_assert_eq!(text.len(), SEQNUMS_LEN);
        if let Err(error) = self.seqnums.write_all_at(text.as_bytes(), 0) {
            self.fail("writing sequence numbers", error);
        }
    }
}

impl Store for FileStore {
    fn next_sender_seq(&self) -> u64 {
        self.sender
    }
    fn next_target_seq(&self) -> u64 {
        self.target
    }
    fn set_next_sender_seq(&mut self, seq: u64) {
        self.sender = seq;
        self.write_seqnums();
    }
    fn set_next_target_seq(&mut self, seq: u64) {
        self.target = seq;
        self.write_seqnums();
    }
    fn save(&mut self, seq: u64, raw: &[u8]) {
        let mut record = format!("{seq} {}\n", raw.len()).into_bytes();
        let start = self.end + record.len() as u64;
        record.extend_from_slice(raw);
        record.push(b'\n');
        match self.messages.write_all(&record) {
            Ok(()) => {
                self.index.insert(seq, (start, raw.len()));
                self.end += record.len() as u64;
            }
            Err(error) => self.fail("appending a message", error),
        }
    }
    fn load(&mut self, begin: u64, end: u64) -> Vec<(u64, Vec<u8>)> {
        if begin > end {
            return Vec::new();
        }
        let wanted: Vec<(u64, (u64, usize))> = self
            .index
            .range(begin..=end)
            .map(|(s, at)| (*s, *at))
            .collect();
        let mut out = Vec::with_capacity(wanted.len());
        for (seq, (offset, len)) in wanted {
            let mut raw = vec![0u8; len];
            match self.messages.read_exact_at(&mut raw, offset) {
                Ok(()) => out.push((seq, raw)),
                Err(error) => {
                    // Resending what can be read beats refusing the whole
                    // range; the unreadable one is gap-filled.
                    tracing::error!(seq, %error, "FIX store could not read a sent message");
                }
            }
        }
        out
    }
    fn reset(&mut self) {
        if let Err(error) = self.messages.set_len(0) {
            self.fail("truncating messages", error);
        }
        self.index.clear();
        self.end = 0;
        self.sender = 1;
        self.target = 1;
        self.write_seqnums();
    }
    fn failure(&self) -> Option<String> {
        self.failure.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopening_and_cuts_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = FileStore::open(dir.path()).unwrap();
            assert_eq!((store.next_sender_seq(), store.next_target_seq()), (1, 1));
            store.save(1, b"first\n message");
            store.save(2, b"second");
            store.set_next_sender_seq(3);
            store.set_next_target_seq(9);
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join("messages"))
            .unwrap();
        file.write_all(b"3 100\npartial").unwrap();
        let mut store = FileStore::open(dir.path()).unwrap();
        assert_eq!((store.next_sender_seq(), store.next_target_seq()), (3, 9));
        assert_eq!(
            store.load(1, 10),
            vec![(1, b"first\n message".to_vec()), (2, b"second".to_vec())]
        );
        assert_eq!(store.load(2, 2).len(), 1);
        assert!(store.load(3, 2).is_empty());
        store.save(3, b"third");
        assert_eq!(store.load(3, 3), vec![(3, b"third".to_vec())]);
        store.reset();
        drop(store);
        let mut store = FileStore::open(dir.path()).unwrap();
        assert_eq!((store.next_sender_seq(), store.next_target_seq()), (1, 1));
        assert!(store.load(1, 100).is_empty());
    }

    #[test]
    fn a_message_newer_than_the_seqnums_moves_the_sender_on() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut store = FileStore::open(dir.path()).unwrap();
            store.save(5, b"x");
        }
        let store = FileStore::open(dir.path()).unwrap();
        assert_eq!(store.next_sender_seq(), 6);
    }

    #[test]
    fn unreadable_seqnums_refuse_to_open() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("seqnums"), "garbage").unwrap();
        assert!(matches!(
            FileStore::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
