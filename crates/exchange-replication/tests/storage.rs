//! `DiskStorage` on its own: what survives a reopen, what is durable when,
//! and how a snapshot install and a crash in the middle of one are handled.

use exchange_replication::raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use exchange_replication::raft::Storage;
use exchange_replication::{
    write_snapshot, DiskStorage, SnapshotData, StorageOptions, StorageRecovery,
};

fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
    Entry {
        index,
        term,
        data: data.to_vec().into(),
        ..Entry::default()
    }
}

/// Opens the storage of a three-voter cluster kept in `dir`, with what
/// recovery found there.
fn reopen(dir: &std::path::Path) -> (DiskStorage, Option<SnapshotData>, StorageRecovery) {
    DiskStorage::open(
        &dir.join("log"),
        &dir.join("snapshots"),
        &[1, 2, 3],
        StorageOptions::default(),
    )
    .expect("open storage")
}

fn open(dir: &std::path::Path) -> DiskStorage {
    reopen(dir).0
}

fn data(storage: &DiskStorage, from: u64, to: u64) -> Vec<Vec<u8>> {
    storage
        .read(from, to, usize::MAX)
        .expect("read")
        .into_iter()
        .map(|e| e.data.to_vec())
        .collect()
}

#[test]
fn a_new_log_starts_after_the_genesis_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    assert_eq!(
        (
            storage.first_index().unwrap(),
            storage.last_index().unwrap()
        ),
        (2, 1)
    );
    assert_eq!(storage.term(1).unwrap(), 1, "the genesis term");
    assert_eq!(
        storage.initial_state().unwrap().conf_state.voters,
        vec![1, 2, 3]
    );
    storage
        .append(&[entry(2, 1, b"a"), entry(3, 1, b"b"), entry(4, 2, b"c")])
        .unwrap();
    drop(storage);
    let storage = open(dir.path());
    assert_eq!(storage.last_index().unwrap(), 4);
    assert_eq!(storage.term(4).unwrap(), 2);
    assert_eq!(
        data(&storage, 2, 4),
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
    let ranged = storage
        .entries(
            3,
            5,
            None,
            exchange_replication::raft::GetEntriesContext::empty(false),
        )
        .unwrap();
    assert_eq!(ranged.len(), 2);
}

#[test]
fn a_conflicting_append_replaces_the_suffix_on_disk_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    storage
        .append(&[entry(2, 1, b"a"), entry(3, 1, b"b"), entry(4, 1, b"c")])
        .unwrap();
    storage.append(&[entry(3, 2, b"B")]).unwrap();
    assert_eq!(storage.last_index().unwrap(), 3);
    // The cache and the disk agree.
    let cached = storage
        .entries(
            2,
            4,
            None,
            exchange_replication::raft::GetEntriesContext::empty(false),
        )
        .unwrap();
    assert_eq!(cached[1].data.to_vec(), b"B".to_vec());
    drop(storage);
    let storage = open(dir.path());
    assert_eq!(storage.last_index().unwrap(), 3);
    assert_eq!(storage.term(3).unwrap(), 2);
    assert_eq!(data(&storage, 2, 3), vec![b"a".to_vec(), b"B".to_vec()]);
}

#[test]
fn term_and_vote_are_durable_at_once_and_the_commit_at_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    storage
        .append(&[entry(2, 3, b"a"), entry(3, 3, b"b")])
        .unwrap();
    let hard = HardState {
        term: 3,
        vote: 2,
        commit: 2,
        ..HardState::default()
    };
    storage.set_hard_state(&hard).unwrap();
    storage.set_commit(3);
    drop(storage);
    let mut storage = open(dir.path());
    let state = storage.initial_state().unwrap().hard_state;
    assert_eq!(
        (state.term, state.vote, state.commit),
        (3, 2, 2),
        "commit 3 was not flushed"
    );
    storage.set_commit(3);
    storage.flush().unwrap();
    drop(storage);
    let state = open(dir.path()).initial_state().unwrap().hard_state;
    assert_eq!(state.commit, 3);
}

#[test]
fn an_installed_snapshot_restarts_the_log_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    storage.append(&[entry(2, 1, b"old")]).unwrap();
    let mut snapshot = Snapshot {
        data: b"state".to_vec().into(),
        ..Snapshot::default()
    };
    let meta = snapshot.mut_metadata();
    meta.index = 40;
    meta.term = 4;
    meta.mut_conf_state().voters = vec![1, 2, 3];
    storage.apply_snapshot(&snapshot).unwrap();
    assert_eq!(
        (
            storage.first_index().unwrap(),
            storage.last_index().unwrap()
        ),
        (41, 40)
    );
    assert_eq!(storage.term(40).unwrap(), 4);
    storage.append(&[entry(41, 4, b"next")]).unwrap();
    drop(storage);
    let (storage, restored, _) = reopen(dir.path());
    let restored = restored.expect("the snapshot");
    assert_eq!(
        (restored.index, restored.term, restored.data),
        (40, 4, b"state".to_vec())
    );
    assert_eq!(storage.first_index().unwrap(), 41);
    assert_eq!(data(&storage, 41, 41), vec![b"next".to_vec()]);
    assert!(storage.initial_state().unwrap().hard_state.commit >= 40);
}

#[test]
fn a_log_that_contradicts_the_snapshot_is_discarded_on_open() {
    // A crash between writing an installed snapshot and resetting the log
    // leaves a log whose entry at the snapshot's index has another term.
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    storage
        .append(&[entry(2, 1, b"a"), entry(3, 1, b"b"), entry(4, 1, b"c")])
        .unwrap();
    drop(storage);
    let conf = ConfState {
        voters: vec![1, 2, 3],
        ..ConfState::default()
    };
    write_snapshot(&dir.path().join("snapshots"), 3, 2, &conf, b"s", 2).unwrap();
    let (storage, _, recovery) = reopen(dir.path());
    assert!(recovery.discarded_log);
    assert_eq!(
        (
            storage.first_index().unwrap(),
            storage.last_index().unwrap()
        ),
        (4, 3)
    );
    assert_eq!(storage.term(3).unwrap(), 2);

    // A snapshot the log agrees with keeps the entries after it.
    let dir = tempfile::tempdir().unwrap();
    let mut storage = open(dir.path());
    storage
        .append(&[entry(2, 1, b"a"), entry(3, 1, b"b"), entry(4, 1, b"c")])
        .unwrap();
    drop(storage);
    write_snapshot(&dir.path().join("snapshots"), 3, 1, &conf, b"s", 2).unwrap();
    let (storage, _, recovery) = reopen(dir.path());
    assert!(!recovery.discarded_log);
    assert_eq!(
        (
            storage.first_index().unwrap(),
            storage.last_index().unwrap()
        ),
        (4, 4)
    );
    assert_eq!(data(&storage, 4, 4), vec![b"c".to_vec()]);
}
