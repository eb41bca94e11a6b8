//! [`raft::Storage`] over the exchange journal.
//!
//! Layout of a replica's directories:
//! - `log_dir/*.log`: the journal; record index and term are the Raft
//!   entry's, the payload is one type byte followed by the entry's data;
//! - `log_dir/raft-state`: hard state and configuration ([`state_file`]);
//! - `snapshot_dir/snapshot-*.snap`: state-machine snapshots whose bytes
//!   start with the Raft snapshot metadata (index, term, configuration).
//!
//! Invariants: the journal's next index is always `last_index() + 1`;
//! `terms` holds the term of every entry in `first..=last`; the term of
//! `first - 1` is known (the snapshot's, or that of the last entry purged);
//! the term and vote on disk are never older than the ones Raft has acted
//! on, because [`DiskStorage::set_hard_state`] writes them before returning.
//! The commit index is written lazily: Raft's safety does not need it, and
//! on start it is recomputed from the snapshot and, for a single voter,
//! from the log itself.
//!
//! [`state_file`]: crate::state_file

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use exchange_journal::snapshots::{self, Snapshot as SnapshotFile};
use exchange_journal::{
    Journal, JournalOptions, LogSync, Recovery, DEFAULT_PREALLOCATE_AFTER, DEFAULT_SEGMENT_BYTES,
    MAX_PAYLOAD_BYTES,
};
use raft::eraftpb::{ConfState, Entry, EntryType, HardState, Snapshot, SnapshotMetadata};
use raft::{GetEntriesContext, RaftState, StorageError};

use crate::alarm::WriteFaults;
use crate::error::ReplicationError;
use crate::snapshot_file::{genesis, oldest_snapshot_index, snapshot_bytes, split_snapshot};
use crate::state_file::{self, DurableState};

/// How a replica's storage behaves.
#[derive(Clone, Debug)]
pub struct StorageOptions {
    /// Sync writes before acknowledging them. Only tests that simulate
    /// process crashes (the page cache survives) turn this off.
    pub fsync: bool,
    pub segment_bytes: u64,
    /// See [`JournalOptions::preallocate_after`].
    pub preallocate_after: Option<u64>,
    /// Snapshots kept on disk; the log is compacted below the oldest kept
    /// one, so a newest snapshot that proves unreadable is not fatal.
    pub keep_snapshots: usize,
    /// Writes to fail as a full disk would (tests; none by default).
    pub faults: WriteFaults,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            fsync: true,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            preallocate_after: Some(DEFAULT_PREALLOCATE_AFTER),
            keep_snapshots: 2,
            faults: WriteFaults::default(),
        }
    }
}

/// What opening the storage found, for the operator.
#[derive(Clone, Debug, Default)]
pub struct StorageRecovery {
    pub journal: Recovery,
    pub invalid_snapshots: Vec<PathBuf>,
    /// The log held entries that contradict the snapshot (a crash during a
    /// snapshot install) and was discarded.
    pub discarded_log: bool,
}

/// A Raft log, hard state and snapshots on disk.
pub struct DiskStorage {
    log_dir: PathBuf,
    snapshot_dir: PathBuf,
    options: StorageOptions,
    journal: Journal,
    first: u64,
    terms: VecDeque<u64>,
    term_before_first: u64,
    /// Indices of configuration-change entries in `first..=last`.
    conf_entries: BTreeSet<u64>,
    /// Current state; its commit may run ahead of `durable`.
    state: DurableState,
    durable: DurableState,
    /// Configurations with the index each took effect at, oldest first, so
    /// a snapshot at an older index records the configuration of its time.
    conf_history: Vec<(u64, ConfState)>,
    snapshot: SnapshotMetadata,
    /// Set when Raft asked for a snapshot the newest one cannot serve (it
    /// predates the receiver's membership): the state machine should take
    /// one now.
    snapshot_wanted: std::cell::Cell<bool>,
    /// The newest entries, contiguous and ending at the last one: Raft
    /// reads back what it just appended (to apply it, to send it to a
    /// follower), and this spares those reads the disk.
    recent: VecDeque<Entry>,
    recent_bytes: usize,
}

/// Entries and bytes the recent-entry cache holds at most.
const RECENT_ENTRIES: usize = 4_096;
const RECENT_BYTES: usize = 32 << 20;

pub(crate) fn entry_payload(entry: &Entry) -> Vec<u8> {
    let mut payload = Vec::with_capacity(1 + entry.data.len());
    payload.push(entry.get_entry_type() as u8);
    payload.extend_from_slice(&entry.data);
    payload
}

fn entry_type(byte: u8) -> Option<EntryType> {
    match byte {
        0 => Some(EntryType::EntryNormal),
        1 => Some(EntryType::EntryConfChange),
        2 => Some(EntryType::EntryConfChangeV2),
        _ => None,
    }
}

pub(crate) fn decode_record(record: exchange_journal::Entry) -> Result<Entry, ReplicationError> {
    let corrupt = |reason: &str| ReplicationError::CorruptEntry {
        index: record.index,
        reason: reason.into(),
    };
    let (&kind, data) = record
        .payload
        .split_first()
        .ok_or_else(|| corrupt("empty payload"))?;
    let kind = entry_type(kind).ok_or_else(|| corrupt("unknown entry type"))?;
    let mut entry = Entry::default();
    entry.set_entry_type(kind);
    entry.index = record.index;
    entry.term = record.term;
    entry.data = data.to_vec().into();
    Ok(entry)
}

/// Brings the log in line with the snapshot it continues; true when it
/// dropped entries that contradict the snapshot.
fn reconcile_log(journal: &mut Journal, meta: &SnapshotMetadata) -> Result<bool, ReplicationError> {
    let last = journal.next_index() - 1;
    let contradicts = meta.index > 0
        && last >= meta.index
        && journal.first_index() <= meta.index
        && journal
            .read(meta.index, 1)?
            .first()
            .is_some_and(|e| e.term != meta.term);
    if last < meta.index || contradicts {
        // Everything the log held up to the snapshot is in it; what
        // contradicts it was never committed.
        journal.reset(meta.index + 1)?;
    } else if journal.first_index() > meta.index + 1 {
        return Err(ReplicationError::Gap {
            snapshot: meta.index,
            log_first: journal.first_index(),
        });
    }
    Ok(contradicts)
}

/// The Raft state to start from: what was recorded, unless the snapshot
/// is newer, whose term, commit and configuration then win.
fn starting_state(durable: Option<&DurableState>, meta: &SnapshotMetadata) -> DurableState {
    let mut state = DurableState::default();
    match durable {
        Some(found) if found.conf_index >= meta.index => state = found.clone(),
        Some(found) => {
            state.hard = found.hard.clone();
            state.conf = meta.get_conf_state().clone();
            state.conf_index = meta.index;
        }
        None => {
            state.conf = meta.get_conf_state().clone();
            state.conf_index = meta.index;
        }
    }
    state.hard.term = state.hard.term.max(meta.term);
    state.hard.commit = state.hard.commit.max(meta.index);
    state
}

/// A snapshot the state machine restores from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotData {
    pub index: u64,
    pub term: u64,
    pub data: Vec<u8>,
}

impl DiskStorage {
    /// Opens (creating if needed) a replica's storage. `bootstrap` is the
    /// voter set of a brand-new cluster, used when nothing on disk says
    /// otherwise. Returns the newest valid snapshot's data too.
    pub fn open(
        log_dir: &Path,
        snapshot_dir: &Path,
        bootstrap: &[u64],
        options: StorageOptions,
    ) -> Result<(DiskStorage, Option<SnapshotData>, StorageRecovery), ReplicationError> {
        let mut recovery = StorageRecovery::default();
        let (snapshot, invalid) = snapshots::load_latest(snapshot_dir)?;
        recovery.invalid_snapshots = invalid;
        let (meta, data) = match &snapshot {
            Some(file) => {
                let (meta, data) = split_snapshot(file)?;
                (meta, Some(data.to_vec()))
            }
            None => (genesis(bootstrap), None),
        };
        let (mut journal, journal_recovery) = Journal::open_with(
            log_dir,
            meta.index + 1,
            JournalOptions {
                segment_bytes: options.segment_bytes,
                preallocate_after: options.preallocate_after,
            },
        )?;
        recovery.journal = journal_recovery;
        let durable = state_file::load(log_dir)?;
        recovery.discarded_log = reconcile_log(&mut journal, &meta)?;
        let first = meta.index + 1;
        let state = starting_state(durable.as_ref(), &meta);
        let mut storage = DiskStorage {
            log_dir: log_dir.to_path_buf(),
            snapshot_dir: snapshot_dir.to_path_buf(),
            options,
            journal,
            first,
            terms: VecDeque::new(),
            term_before_first: meta.term,
            conf_entries: BTreeSet::new(),
            conf_history: vec![(state.conf_index, state.conf.clone())],
            durable: durable.unwrap_or_default(),
            state,
            snapshot: meta,
            snapshot_wanted: std::cell::Cell::new(false),
            recent: VecDeque::new(),
            recent_bytes: 0,
        };
        storage.scan_terms()?;
        let last = storage.last();
        // A commit beyond the log means entries were lost (damage the
        // journal cut off, or a power cut took entries a leader's followers
        // had committed while its own sync was out): Raft re-learns the
        // commit from the leader.
        storage.state.hard.commit = storage.state.hard.commit.min(last);
        if storage.durable != storage.state {
            storage.persist()?;
        }
        let data = data.map(|data| SnapshotData {
            index: storage.snapshot.index,
            term: storage.snapshot.term,
            data,
        });
        Ok((storage, data, recovery))
    }

    fn scan_terms(&mut self) -> Result<(), ReplicationError> {
        let mut next = self.first;
        let end = self.journal.next_index();
        while next < end {
            let records = self.journal.read(next, 4_096)?;
            if records.is_empty() {
                break;
            }
            for record in records {
                if record.index != next {
                    return Err(ReplicationError::CorruptEntry {
                        index: next,
                        reason: format!("found index {}", record.index),
                    });
                }
                let entry = decode_record(record)?;
                if entry.get_entry_type() != EntryType::EntryNormal {
                    self.conf_entries.insert(entry.index);
                }
                self.terms.push_back(entry.term);
                next += 1;
            }
        }
        Ok(())
    }

    fn last(&self) -> u64 {
        self.first + self.terms.len() as u64 - 1
    }

    fn persist(&mut self) -> Result<(), ReplicationError> {
        self.options
            .faults
            .check(&state_file::path(&self.log_dir))?;
        state_file::store(&self.log_dir, &self.state, self.options.fsync)?;
        self.durable = self.state.clone();
        Ok(())
    }

    pub fn hard_state(&self) -> &HardState {
        &self.state.hard
    }

    pub fn conf_state(&self) -> &ConfState {
        &self.state.conf
    }

    /// Index of the last configuration change the configuration includes.
    pub fn conf_index(&self) -> u64 {
        self.state.conf_index
    }

    /// Configuration-change entries in the log after `index`.
    pub fn conf_entries_after(&self, index: u64) -> Vec<u64> {
        self.conf_entries.range(index + 1..).copied().collect()
    }

    /// Whether Raft needed a newer snapshot than the newest one since the
    /// last call.
    pub fn take_snapshot_request(&self) -> bool {
        self.snapshot_wanted.replace(false)
    }

    /// Index and term of the newest snapshot (0, 0 without one).
    pub fn snapshot_index(&self) -> (u64, u64) {
        (self.snapshot.index, self.snapshot.term)
    }

    pub fn first(&self) -> u64 {
        self.first
    }

    pub fn last_index_now(&self) -> u64 {
        self.last()
    }

    /// Appends entries from a Ready, first dropping any conflicting suffix,
    /// and makes them durable.
    pub fn append(&mut self, entries: &[Entry]) -> Result<(), ReplicationError> {
        if let Some(sync) = self.append_unsynced(entries)? {
            sync.run()?;
        }
        Ok(())
    }

    /// Appends entries from a Ready, first dropping any conflicting suffix.
    /// They are durable once the returned sync has run (`None`: nothing to
    /// sync). Reads see them at once.
    pub fn append_unsynced(
        &mut self,
        entries: &[Entry],
    ) -> Result<Option<LogSync>, ReplicationError> {
        let Some(head) = entries.first() else {
            return Ok(None);
        };
        if head.index < self.first || head.index > self.last() + 1 {
            return Err(ReplicationError::CorruptEntry {
                index: head.index,
                reason: format!("append outside the log {}..={}", self.first, self.last()),
            });
        }
        if head.index <= self.last() {
            self.journal.truncate_from(head.index)?;
            self.terms.truncate((head.index - self.first) as usize);
            self.conf_entries.split_off(&head.index);
            while self.recent.back().is_some_and(|e| e.index >= head.index) {
                if let Some(dropped) = self.recent.pop_back() {
                    self.recent_bytes -= dropped.data.len();
                }
            }
        }
        let mut at = 0;
        while at < entries.len() {
            let term = entries[at].term;
            let run = entries[at..].iter().take_while(|e| e.term == term).count();
            let mut payloads = Vec::with_capacity(run);
            for entry in &entries[at..at + run] {
                let payload = entry_payload(entry);
                if payload.len() > MAX_PAYLOAD_BYTES {
                    return Err(ReplicationError::CorruptEntry {
                        index: entry.index,
                        reason: "entry exceeds the record limit".into(),
                    });
                }
                payloads.push(payload);
            }
            self.options.faults.check(&self.log_dir)?;
            self.journal.append(term, &payloads)?;
            for entry in &entries[at..at + run] {
                self.terms.push_back(entry.term);
                if entry.get_entry_type() != EntryType::EntryNormal {
                    self.conf_entries.insert(entry.index);
                }
            }
            at += run;
        }
        for entry in entries {
            self.recent_bytes += entry.data.len();
            self.recent.push_back(entry.clone());
        }
        while self.recent.len() > RECENT_ENTRIES || self.recent_bytes > RECENT_BYTES {
            if let Some(dropped) = self.recent.pop_front() {
                self.recent_bytes -= dropped.data.len();
            }
        }
        Ok(if self.options.fsync {
            self.journal.take_sync()
        } else {
            None
        })
    }

    /// Takes Raft's new hard state. A changed term or vote is on disk when
    /// this returns; a changed commit only in memory.
    pub fn set_hard_state(&mut self, hard: &HardState) -> Result<(), ReplicationError> {
        self.state.hard = hard.clone();
        if hard.term != self.durable.hard.term || hard.vote != self.durable.hard.vote {
            self.persist()?;
        }
        Ok(())
    }

    pub fn set_commit(&mut self, commit: u64) {
        self.state.hard.commit = commit;
    }

    /// Records the configuration in effect from `index` on, durably.
    pub fn set_conf_state(&mut self, conf: ConfState, index: u64) -> Result<(), ReplicationError> {
        self.state.conf = conf.clone();
        self.state.conf_index = index;
        self.conf_history.push((index, conf));
        if self.conf_history.len() > 8 {
            self.conf_history.remove(0);
        }
        self.persist()
    }

    /// Writes the commit index too (at shutdown and after snapshots).
    pub fn flush(&mut self) -> Result<(), ReplicationError> {
        if self.durable != self.state {
            self.persist()?;
        }
        Ok(())
    }

    /// Installs a snapshot received from the leader: the snapshot file
    /// first, then the state, then the log restarts after it.
    pub fn apply_snapshot(&mut self, snapshot: &Snapshot) -> Result<(), ReplicationError> {
        let meta = snapshot.get_metadata().clone();
        let file = SnapshotFile {
            index: meta.index,
            term: meta.term,
            state: snapshot_bytes(&meta, &snapshot.data),
        };
        snapshots::save(&self.snapshot_dir, &file, self.options.keep_snapshots)?;
        self.state.hard.term = self.state.hard.term.max(meta.term);
        self.state.hard.commit = self.state.hard.commit.max(meta.index);
        self.state.conf = meta.get_conf_state().clone();
        self.state.conf_index = meta.index;
        self.conf_history = vec![(meta.index, self.state.conf.clone())];
        self.persist()?;
        self.journal.reset(meta.index + 1)?;
        self.first = meta.index + 1;
        self.terms.clear();
        self.recent.clear();
        self.recent_bytes = 0;
        self.conf_entries.clear();
        self.term_before_first = meta.term;
        self.snapshot = meta;
        Ok(())
    }

    /// Saves the state machine's snapshot as of `index` (which it has
    /// applied) and compacts the log below the oldest snapshot kept.
    /// Returns false when `index` is not in the log any more.
    pub fn save_snapshot(&mut self, index: u64, data: &[u8]) -> Result<bool, ReplicationError> {
        if index <= self.snapshot.index {
            return Ok(false);
        }
        let term = match raft::Storage::term(self, index) {
            Ok(term) => term,
            Err(_) => return Ok(false),
        };
        let Some(conf) = self
            .conf_history
            .iter()
            .rev()
            .find(|(at, _)| *at <= index)
            .map(|(_, conf)| conf.clone())
        else {
            return Ok(false);
        };
        let meta = SnapshotMetadata {
            index,
            term,
            conf_state: Some(conf).into(),
            ..SnapshotMetadata::default()
        };
        let file = SnapshotFile {
            index,
            term,
            state: snapshot_bytes(&meta, data),
        };
        snapshots::save(&self.snapshot_dir, &file, self.options.keep_snapshots)?;
        self.snapshot = meta;
        self.flush()?;
        // Nothing but Raft reads a log saved this way.
        self.compact(u64::MAX)?;
        Ok(true)
    }

    /// Takes note of a snapshot written by another thread with
    /// [`write_snapshot`], and compacts the log below the kept ones.
    pub fn snapshot_written(
        &mut self,
        index: u64,
        term: u64,
        conf: &ConfState,
        keep_log_from: u64,
    ) -> Result<(), ReplicationError> {
        if index <= self.snapshot.index || index > self.last() {
            return Ok(());
        }
        self.snapshot = SnapshotMetadata {
            index,
            term,
            conf_state: Some(conf.clone()).into(),
            ..SnapshotMetadata::default()
        };
        self.flush()?;
        self.compact(keep_log_from)
    }

    /// Drops log segments every kept snapshot covers, none from
    /// `keep_log_from` on.
    fn compact(&mut self, keep_log_from: u64) -> Result<(), ReplicationError> {
        let oldest = oldest_snapshot_index(&self.snapshot_dir)?;
        let Some(oldest) = oldest else {
            return Ok(());
        };
        self.journal.purge_before(oldest.min(keep_log_from))?;
        let new_first = self.journal.first_index();
        if new_first > self.first {
            let drop = (new_first - self.first) as usize;
            self.term_before_first = self.terms[drop - 1];
            self.terms.drain(..drop);
            self.first = new_first;
            self.conf_entries = self.conf_entries.split_off(&new_first);
        }
        Ok(())
    }

    /// Entries `from..=to` as stored (for replay after a restart and for
    /// readers of the committed log).
    pub fn read(&self, from: u64, to: u64, max: usize) -> Result<Vec<Entry>, ReplicationError> {
        if from > to || from < self.first || to > self.last() {
            return Ok(Vec::new());
        }
        let count = ((to - from + 1) as usize).min(max);
        self.journal
            .read(from, count)?
            .into_iter()
            .map(decode_record)
            .collect()
    }

    fn latest_snapshot(&self) -> Result<Snapshot, ReplicationError> {
        let (file, _) = snapshots::load_latest(&self.snapshot_dir)?;
        let mut snapshot = Snapshot::default();
        match file {
            Some(file) => {
                let (meta, data) = split_snapshot(&file)?;
                snapshot.data = data.to_vec().into();
                snapshot.set_metadata(meta);
            }
            // The genesis snapshot: empty data stands for the empty state.
            None => snapshot.set_metadata(self.snapshot.clone()),
        }
        Ok(snapshot)
    }
}

fn other(error: ReplicationError) -> raft::Error {
    raft::Error::Store(StorageError::Other(Box::new(error)))
}

impl raft::Storage for DiskStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(
            self.state.hard.clone(),
            self.state.conf.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < self.first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        if let Some(front) = self.recent.front() {
            let (from, to) = (
                low.saturating_sub(front.index) as usize,
                high.saturating_sub(front.index) as usize,
            );
            if low >= front.index && to <= self.recent.len() {
                let mut entries: Vec<Entry> = self.recent.range(from..to).cloned().collect();
                raft::util::limit_size(&mut entries, max_size.into());
                return Ok(entries);
            }
        }
        let mut entries = self
            .journal
            .read(low, (high - low) as usize)
            .map_err(|e| other(e.into()))?
            .into_iter()
            .map(decode_record)
            .collect::<Result<Vec<_>, _>>()
            .map_err(other)?;
        raft::util::limit_size(&mut entries, max_size.into());
        Ok(entries)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx + 1 == self.first {
            return Ok(self.term_before_first);
        }
        if idx < self.first {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        self.terms
            .get((idx - self.first) as usize)
            .copied()
            .ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let snapshot = self.latest_snapshot().map_err(other)?;
        let meta = snapshot.get_metadata();
        let conf = meta.get_conf_state();
        // A node refuses a snapshot whose configuration lacks it, as one
        // taken before it was added does: ask for a newer one.
        let member = conf.voters.contains(&to) || conf.learners.contains(&to);
        if meta.index < request_index || meta.index == 0 || !member {
            self.snapshot_wanted.set(true);
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(snapshot)
    }
}
