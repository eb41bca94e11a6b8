//! The cursor follows a journal as it grows: across segments, onto
//! preallocated spares, and past compaction (which it reports).

use std::path::Path;

use exchange_journal::{CommittedCursor, CursorRead, Entry, Journal, JournalOptions};

fn payload(i: u64) -> Vec<u8> {
    format!("command {i:06} {}", "y".repeat((i % 7) as usize * 10)).into_bytes()
}

fn entries(read: CursorRead) -> Vec<Entry> {
    match read {
        CursorRead::Entries(entries) => entries,
        CursorRead::Gone { first } => panic!("gone, the journal starts at {first:?}"),
    }
}

/// Reads everything through `through` in batches of about `max_bytes`,
/// checking each entry.
fn read_through(cursor: &mut CommittedCursor, through: u64, max_bytes: usize) {
    while cursor.next_index() <= through {
        let from = cursor.next_index();
        let batch = entries(cursor.read(through, max_bytes).expect("read"));
        assert!(!batch.is_empty());
        for (entry, index) in batch.iter().zip(from..) {
            assert_eq!(entry.index, index);
            assert_eq!(entry.term, 2);
            assert_eq!(entry.payload, payload(index));
        }
    }
    assert_eq!(cursor.next_index(), through + 1);
    assert!(entries(cursor.read(through, max_bytes).expect("read")).is_empty());
}

fn append(journal: &mut Journal, count: u64) {
    for _ in 0..count {
        let next = journal.next_index();
        journal.append(2, &[payload(next)]).expect("append");
    }
    journal.sync().expect("sync");
}

fn follow_while_appending(dir: &Path, options: JournalOptions) {
    let (mut journal, _) = Journal::open_with(dir, 1, options).expect("open");
    let mut cursor = CommittedCursor::new(dir, 1);
    for round in 1..=40 {
        append(&mut journal, round * 3);
        read_through(&mut cursor, journal.next_index() - 1, 300);
    }
}

#[test]
fn it_follows_a_growing_journal_across_segments() {
    let dir = tempfile::tempdir().expect("dir");
    follow_while_appending(dir.path(), JournalOptions::plain(4_000));
    assert!(std::fs::read_dir(dir.path()).expect("dir").count() > 10);
}

#[test]
fn it_follows_a_journal_onto_preallocated_spares() {
    let dir = tempfile::tempdir().expect("dir");
    let options = JournalOptions {
        segment_bytes: 16 << 10,
        preallocate_after: Some(2 << 10),
    };
    follow_while_appending(dir.path(), options);
}

#[test]
fn it_starts_anywhere_and_reports_compacted_entries() {
    let dir = tempfile::tempdir().expect("dir");
    let (mut journal, _) = Journal::open(dir.path(), 1, 4_000).expect("open");
    append(&mut journal, 300);
    let mut late = CommittedCursor::new(dir.path(), 123);
    read_through(&mut late, 200, 1 << 20);

    // A cursor inside a segment compaction deletes reads on through its
    // open file; one that must find a segment finds the entry gone.
    let mut reading = CommittedCursor::new(dir.path(), 1);
    read_through(&mut reading, 1, 1);
    journal.purge_before(250).expect("purge");
    let first = journal.first_index();
    assert!(first > 2 && first <= 250, "{first}");
    let read = reading.read(300, 1 << 20).expect("read");
    let CursorRead::Entries(batch) = read else {
        panic!("the open segment is still readable: {read:?}")
    };
    assert!(!batch.is_empty() && batch.len() < 299);
    let next = reading.next_index();
    assert!(next < first);
    assert!(matches!(
        reading.read(300, 1 << 20).expect("read"),
        CursorRead::Gone { first: Some(f) } if f == first
    ));
    let mut fresh = CommittedCursor::new(dir.path(), 2);
    assert!(matches!(
        fresh.read(300, 1 << 20).expect("read"),
        CursorRead::Gone { first: Some(f) } if f == first
    ));
    let mut kept = CommittedCursor::new(dir.path(), first);
    read_through(&mut kept, 300, 1_000);
}
