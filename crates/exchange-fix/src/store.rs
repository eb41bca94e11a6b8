//! Where a session keeps its sequence numbers and the application messages
//! it sent (for resends), so both survive a restart of the exchange.
//!
//! On disk, one directory per session under `DATA_DIR/fix/`:
//! - `seqnums`: the next outgoing and next expected incoming MsgSeqNum,
//!   fixed width, rewritten in place with one write;
//! - `messages`: sent application messages, appended as
//!   `SEQ LEN\n<LEN bytes>\n` records.
//!
//! Both files are readable by the exchange's user only (0600, in a 0700
//! directory): they hold the counterparty's orders. The newest
//! `FIX_STORE_RETAINED` messages are kept; older ones are dropped (the
//! file is rewritten once it holds twice that many), and a resend request
//! for them gets a gap fill, as FIX allows for messages not resent.
//!
//! Writes go to the operating system without fsync: they survive the
//! process being killed, and a torn tail left by a machine crash is cut off
//! when the file is opened again (the counterparty's resend request then
//! gets a gap fill for what was lost). Admin messages are not stored: a
//! resend replaces them with a gap fill anyway.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use exchange_node::limits::FIX_STORE_RETAINED;

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
    /// Records in the messages file, kept or dropped.
    records: usize,
    /// How many messages are kept for resends.
    retain: usize,
    sender: u64,
    target: u64,
    failure: Option<String>,
}

/// Opens (creating it 0600) a file of the store, and makes an existing
/// one 0600 too.
fn open_private(path: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    let file = options
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error(path))?;
    file.set_permissions(Permissions::from_mode(0o600))
        .map_err(io_error(path))?;
    Ok(file)
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

/// The sequence numbers file, and the next sender and target numbers it
/// holds (1 and 1 when it is new).
fn open_seqnums(seq_path: &Path) -> Result<(File, u64, u64), StoreError> {
    let mut seqnums = open_private(
        seq_path,
        OpenOptions::new().read(true).write(true).truncate(false),
    )?;
    let mut text = String::new();
    seqnums
        .read_to_string(&mut text)
        .map_err(io_error(seq_path))?;
    if text.trim().is_empty() {
        return Ok((seqnums, 1, 1));
    }
    let mut numbers = text.split_whitespace().map(str::parse::<u64>);
    match (numbers.next(), numbers.next(), numbers.next()) {
        (Some(Ok(s)), Some(Ok(t)), None) if s > 0 && t > 0 => Ok((seqnums, s, t)),
        _ => Err(StoreError::Corrupt {
            path: seq_path.to_path_buf(),
            text,
        }),
    }
}

impl FileStore {
    pub fn open(dir: &Path) -> Result<FileStore, StoreError> {
        FileStore::open_retaining(dir, FIX_STORE_RETAINED)
    }

    /// A store that keeps the newest `retain` sent messages.
    pub fn open_retaining(dir: &Path, retain: usize) -> Result<FileStore, StoreError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_error(dir))?;
        std::fs::set_permissions(dir, Permissions::from_mode(0o700)).map_err(io_error(dir))?;
        let seq_path = dir.join("seqnums");
        let (seqnums, mut sender, target) = open_seqnums(&seq_path)?;
        let msg_path = dir.join("messages");
        let mut messages = open_private(&msg_path, OpenOptions::new().read(true).append(true))?;
        let mut bytes = Vec::new();
        messages
            .read_to_end(&mut bytes)
            .map_err(io_error(&msg_path))?;
        let (mut index, whole) = scan(&bytes);
        let records = index.len();
        if whole < bytes.len() {
            tracing::warn!(
                path = %msg_path.display(),
                dropped = bytes.len() - whole,
                "cut a torn tail off the FIX message store"
            );
            messages
                .set_len(whole as u64)
                .map_err(io_error(&msg_path))?;
        }
        // A message stored just before a crash may be newer than the
        // sequence numbers written after it.
        if let Some((last, _)) = index.last_key_value() {
            sender = sender.max(last + 1);
        }
        while index.len() > retain.max(1) {
            index.pop_first();
        }
        let mut store = FileStore {
            dir: dir.to_path_buf(),
            seqnums,
            messages,
            index,
            end: whole as u64,
            records,
            retain: retain.max(1),
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

    /// Drops the oldest messages beyond what is kept, and rewrites the
    /// file once it holds twice as many records as are kept.
    fn enforce_retention(&mut self) {
        while self.index.len() > self.retain {
            self.index.pop_first();
        }
        if self.records > 2 * self.retain {
            if let Err(error) = self.compact() {
                self.fail("rewriting the messages without the dropped ones", error);
            }
        }
    }

    fn compact(&mut self) -> std::io::Result<()> {
        let (first, last) = match (self.index.first_key_value(), self.index.last_key_value()) {
            (Some((first, _)), Some((last, _))) => (*first, *last),
            _ => (1, 0),
        };
        let kept = self.load(first, last);
        let path = self.dir.join("messages");
        let fresh = self.dir.join("messages.new");
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&fresh)?;
        let mut index = BTreeMap::new();
        let mut end = 0u64;
        let mut bytes = Vec::new();
        for (seq, raw) in &kept {
            let header = format!("{seq} {}\n", raw.len());
            index.insert(*seq, (end + header.len() as u64, raw.len()));
            bytes.extend_from_slice(header.as_bytes());
            bytes.extend_from_slice(raw);
            bytes.push(b'\n');
            end = bytes.len() as u64;
        }
        file.write_all(&bytes)?;
        std::fs::rename(&fresh, &path)?;
        self.messages = OpenOptions::new().read(true).append(true).open(&path)?;
        self.index = index;
        self.end = end;
        self.records = kept.len();
        Ok(())
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
                self.records += 1;
                self.enforce_retention();
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
        self.records = 0;
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
    fn files_are_private_to_the_exchange_user() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("fix").join("A-EX");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join("messages"), "").unwrap();
        std::fs::set_permissions(session.join("messages"), Permissions::from_mode(0o644)).unwrap();
        let mut store = FileStore::open(&session).unwrap();
        store.save(1, b"report");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&session.join("seqnums")), 0o600);
        assert_eq!(mode(&session.join("messages")), 0o600);
        assert_eq!(mode(&session), 0o700);
    }

    #[test]
    fn only_the_newest_messages_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = FileStore::open_retaining(dir.path(), 3).unwrap();
        for seq in 1..=20u64 {
            store.save(seq, format!("message {seq}").as_bytes());
        }
        let kept: Vec<u64> = store.load(1, 100).into_iter().map(|(s, _)| s).collect();
        assert_eq!(kept, vec![18, 19, 20]);
        assert_eq!(store.failure(), None);
        // The file is rewritten rather than growing without bound.
        let len = std::fs::metadata(dir.path().join("messages"))
            .unwrap()
            .len();
        assert!(len < 7 * 20, "{len} bytes");
        drop(store);
        let mut store = FileStore::open_retaining(dir.path(), 3).unwrap();
        assert_eq!(store.load(18, 18), vec![(18, b"message 18".to_vec())]);
        assert_eq!(store.load(1, 17), vec![]);
        assert_eq!(store.next_sender_seq(), 21);
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
