use std::fs::{self, OpenOptions};
use std::path::Path;

use exchange_journal::snapshots::{self, Snapshot};
use exchange_journal::{Journal, JournalError};
use exchange_testkit::segments;

fn payload(i: u64) -> Vec<u8> {
    format!("command number {i}").into_bytes()
}

fn filled(dir: &Path, count: u64, segment_bytes: u64) -> Journal {
    let (mut journal, _) = Journal::open(dir, 1, segment_bytes).unwrap();
    for i in 1..=count {
        journal.append(1, &[payload(i)]).unwrap();
    }
    journal.sync().unwrap();
    journal
}

#[test]
fn entries_survive_reopen_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let journal = filled(dir.path(), 500, 2_000);
    assert_eq!(journal.next_index(), 501);
    drop(journal);
    assert!(segments(dir.path()).len() > 3, "small segments roll over");
    let (journal, recovery) = Journal::open(dir.path(), 1, 2_000).unwrap();
    assert_eq!(recovery.entries, 500);
    assert_eq!(recovery.truncated_bytes, 0);
    let all = journal.read(1, usize::MAX).unwrap();
    assert_eq!(all.len(), 500);
    for (i, entry) in all.iter().enumerate() {
        assert_eq!(entry.index, i as u64 + 1);
        assert_eq!(entry.payload, payload(i as u64 + 1));
    }
    let some = journal.read(250, 10).unwrap();
    assert_eq!(
        some.iter().map(|e| e.index).collect::<Vec<_>>(),
        (250..260).collect::<Vec<_>>()
    );
}

#[test]
fn batch_append_is_one_range() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path(), 10, 1 << 20).unwrap();
    let first = journal
        .append(3, &[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()])
        .unwrap();
    journal.sync().unwrap();
    assert_eq!(first, 10);
    assert_eq!(journal.next_index(), 13);
    let read = journal.read(10, 10).unwrap();
    assert_eq!(read.len(), 3);
    assert!(read.iter().all(|e| e.term == 3));
}

/// A batch with a payload over the limit is refused whole: nothing of it
/// is counted, so the next batch takes its indices and the log reopens.
#[test]
fn an_oversized_payload_refuses_its_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open(dir.path(), 1, 1 << 20).unwrap();
    journal.append(1, &[payload(1)]).unwrap();
    let huge = vec![0u8; exchange_journal::MAX_PAYLOAD_BYTES + 1];
    let refused = journal.append(1, &[payload(2), huge, payload(3)]);
    assert!(matches!(refused, Err(JournalError::TooLarge(len)) if len == MAX + 1));
    assert_eq!(journal.next_index(), 2);
    assert_eq!(journal.append(1, &[payload(2)]).unwrap(), 2);
    journal.sync().unwrap();
    assert_eq!(journal.read(1, 10).unwrap().len(), 2);
    drop(journal);
    let (journal, recovery) = Journal::open(dir.path(), 1, 1 << 20).unwrap();
    assert_eq!((recovery.entries, recovery.truncated_bytes), (2, 0));
    let read = journal.read(1, 10).unwrap();
    assert_eq!(
        read.iter()
            .map(|e| (e.index, e.payload.clone()))
            .collect::<Vec<_>>(),
        vec![(1, payload(1)), (2, payload(2))]
    );
}

const MAX: usize = exchange_journal::MAX_PAYLOAD_BYTES;

#[test]
fn torn_tail_is_cut_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 20, 1 << 20));
    let last = segments(dir.path()).pop().unwrap();
    let len = fs::metadata(&last).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&last)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let (mut journal, recovery) = Journal::open(dir.path(), 1, 1 << 20).unwrap();
    assert_eq!(recovery.entries, 19);
    assert!(recovery.truncated_bytes > 0);
    assert!(recovery.truncated_reason.unwrap().contains("cut short"));
    assert_eq!(journal.next_index(), 20);
    // The log goes on from the cut.
    journal.append(1, &[b"after".to_vec()]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    let (journal, recovery) = Journal::open(dir.path(), 1, 1 << 20).unwrap();
    assert_eq!(recovery.entries, 20);
    assert_eq!(journal.read(20, 1).unwrap()[0].payload, b"after");
}

#[test]
fn garbled_last_record_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 20, 1 << 20));
    let last = segments(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&last).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0xff;
    fs::write(&last, &bytes).unwrap();
    let (journal, recovery) = Journal::open(dir.path(), 1, 1 << 20).unwrap();
    assert_eq!(recovery.entries, 19);
    assert!(recovery.truncated_reason.unwrap().contains("checksum"));
    assert_eq!(journal.next_index(), 20);
}

#[test]
fn damage_before_the_tail_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 20, 1 << 20));
    let last = segments(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&last).unwrap();
    // Inside the payload of the third record: later records are intact, so
    // acknowledged data would be lost by cutting here.
    bytes[8 + 2 * 40 + 30] ^= 0xff;
    fs::write(&last, &bytes).unwrap();
    let err = Journal::open(dir.path(), 1, 1 << 20).unwrap_err();
    assert!(matches!(err, JournalError::Corrupt { .. }), "{err}");
}

#[test]
fn damage_in_an_older_segment_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(filled(dir.path(), 200, 1_000));
    let first = segments(dir.path()).remove(0);
    let len = fs::metadata(&first).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    assert!(matches!(
        Journal::open(dir.path(), 1, 1_000),
        Err(JournalError::Corrupt { .. })
    ));
}

#[test]
fn truncate_from_and_purge_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = filled(dir.path(), 300, 1_000);
    journal.truncate_from(150).unwrap();
    assert_eq!(journal.next_index(), 150);
    journal.append(2, &[b"new".to_vec()]).unwrap();
    journal.sync().unwrap();
    let entry = &journal.read(150, 1).unwrap()[0];
    assert_eq!(
        (entry.term, entry.payload.as_slice()),
        (2, b"new".as_slice())
    );
    let before = segments(dir.path()).len();
    let removed = journal.purge_before(100).unwrap();
    assert!(removed > 0);
    assert_eq!(segments(dir.path()).len(), before - removed);
    assert!(journal.first_index() <= 100);
    drop(journal);
    let (journal, _) = Journal::open(dir.path(), 1, 1_000).unwrap();
    assert_eq!(journal.next_index(), 151);
    assert_eq!(journal.read(100, 1).unwrap()[0].index, 100);
}

/// Purged segments leave the log at once and their files soon after; one
/// a crash left behind is ignored and deleted by the next open.
#[test]
fn purged_segment_files_are_deleted_and_leftovers_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = filled(dir.path(), 300, 1_000);
    let removed = journal.purge_before(200).unwrap();
    assert!(removed > 0);
    let leftovers = || {
        fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".purged")
            })
            .count()
    };
    let started = std::time::Instant::now();
    while leftovers() > 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "purged files were not deleted"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let first = journal.first_index();
    drop(journal);

    // As a crash between the rename and the delete leaves it.
    let stale = dir.path().join(format!("{:020}.log.purged", 1));
    fs::write(&stale, b"not a segment").unwrap();
    let (journal, _) = Journal::open(dir.path(), 1, 1_000).unwrap();
    assert_eq!(journal.first_index(), first);
    assert_eq!(journal.read(first, 1).unwrap()[0].index, first);
    let started = std::time::Instant::now();
    while stale.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "a purged file left by a crash stayed"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn snapshots_keep_the_newest_valid_one() {
    let dir = tempfile::tempdir().unwrap();
    let snap = |index| Snapshot {
        index,
        term: 1,
        state: vec![index as u8; 64],
    };
    snapshots::save(dir.path(), &snap(10), 2).unwrap();
    snapshots::save(dir.path(), &snap(20), 2).unwrap();
    let newest = snapshots::save(dir.path(), &snap(30), 2).unwrap();
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    let (loaded, invalid) = snapshots::load_latest(dir.path()).unwrap();
    assert_eq!(loaded, Some(snap(30)));
    assert!(invalid.is_empty());
    let mut bytes = fs::read(&newest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&newest, bytes).unwrap();
    let (loaded, invalid) = snapshots::load_latest(dir.path()).unwrap();
    assert_eq!(loaded, Some(snap(20)));
    assert_eq!(invalid, vec![newest]);
}

#[test]
fn reset_restarts_the_log_after_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut journal = filled(dir.path(), 50, 1_000);
    journal.reset(80).unwrap();
    assert_eq!((journal.first_index(), journal.next_index()), (80, 80));
    journal.append(1, &[b"x".to_vec()]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(segments(dir.path()).len(), 1);
    let (journal, recovery) = Journal::open(dir.path(), 1, 1_000).unwrap();
    assert_eq!(recovery.entries, 1);
    assert_eq!(journal.read(80, 5).unwrap()[0].payload, b"x");
}
