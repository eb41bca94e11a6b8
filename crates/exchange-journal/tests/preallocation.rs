//! Preallocated segments: the log moves onto spares written full of zeros,
//! and a zero remainder is room, never damage.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use exchange_journal::{reader, Entry, Journal, JournalError, JournalOptions};
use exchange_testkit::segments;

const SEGMENT: u64 = 64 << 10;

fn options() -> JournalOptions {
    JournalOptions {
        segment_bytes: SEGMENT,
        preallocate_after: Some(4 << 10),
    }
}

/// Ends in a non-zero byte, so the last non-zero byte of a segment is the
/// last byte of its last record.
fn payload(i: u64) -> Vec<u8> {
    format!("command {i:06} {}", "x".repeat(80)).into_bytes()
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

/// Appends one entry at a time until the log has moved onto a spare (the
/// spare is written on another thread), then `extra` more. Returns the
/// index after the last.
fn fill_onto_a_spare(journal: &mut Journal, dir: &Path, extra: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut next = journal.next_index();
    loop {
        journal.append(1, &[payload(next)]).unwrap();
        next += 1;
        let all = segments(dir);
        if all.len() >= 2 && file_len(all.last().unwrap()) == SEGMENT {
            break;
        }
        assert!(Instant::now() < deadline, "no spare was taken: {all:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    for _ in 0..extra {
        journal.append(1, &[payload(next)]).unwrap();
        next += 1;
    }
    journal.sync().unwrap();
    next
}

fn all_entries(journal: &Journal) -> Vec<Entry> {
    journal
        .read(journal.first_index(), usize::MAX)
        .expect("read the log")
}

#[test]
fn the_log_moves_onto_a_spare_and_reopens_without_repairs() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open_with(dir.path(), 1, options()).unwrap();
    let next = fill_onto_a_spare(&mut journal, dir.path(), 20);
    let before = all_entries(&journal);
    assert_eq!(before.len() as u64, next - 1);
    let active = segments(dir.path()).pop().unwrap();
    drop(journal);

    // The spare took the appends in place: it did not grow, and what
    // follows the records is zeros.
    assert_eq!(file_len(&active), SEGMENT);
    let bytes = fs::read(&active).unwrap();
    assert_eq!(bytes[bytes.len() - 1024..], [0u8; 1024]);

    let (mut journal, recovery) = Journal::open_with(dir.path(), 1, options()).unwrap();
    assert_eq!(recovery.entries, next - 1);
    assert_eq!(recovery.truncated_bytes, 0, "{recovery:?}");
    assert_eq!(recovery.truncated_reason, None);
    assert_eq!(all_entries(&journal), before);
    assert_eq!(journal.next_index(), next);

    // Appending goes on at the records' end, not the file's.
    journal.append(1, &[payload(next)]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    assert_eq!(file_len(&active), SEGMENT);
    let (journal, recovery) = Journal::open_with(dir.path(), 1, options()).unwrap();
    assert_eq!(recovery.truncated_bytes, 0, "{recovery:?}");
    let after = all_entries(&journal);
    assert_eq!(after.len() as u64, next);
    assert_eq!(after.last().unwrap().payload, payload(next));

    // So does a reader beside the log, across the zeros.
    let mut read = Vec::new();
    reader::for_each_committed::<JournalError>(dir.path(), 1, next, |entry| {
        read.push(entry);
        Ok(())
    })
    .unwrap();
    assert_eq!(read, after);
    let past_the_end =
        reader::for_each_committed::<JournalError>(dir.path(), 1, next + 1, |_| Ok(()));
    assert!(past_the_end.is_err(), "an entry not yet written is missing");
}

#[test]
fn a_damaged_record_in_a_spare_is_cut_and_only_it_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open_with(dir.path(), 1, options()).unwrap();
    let next = fill_onto_a_spare(&mut journal, dir.path(), 5);
    let last_record = 24 + payload(next - 1).len() as u64;
    drop(journal);

    let active = segments(dir.path()).pop().unwrap();
    let mut bytes = fs::read(&active).unwrap();
    let end = bytes.iter().rposition(|&b| b != 0).unwrap();
    bytes[end] ^= 0x5a;
    fs::write(&active, &bytes).unwrap();

    let (mut journal, recovery) = Journal::open_with(dir.path(), 1, options()).unwrap();
    assert_eq!(recovery.truncated_bytes, last_record, "{recovery:?}");
    let reason = recovery.truncated_reason.expect("reported");
    assert!(reason.contains("checksum mismatch"), "{reason}");
    assert_eq!(journal.next_index(), next - 1);
    assert_eq!(
        all_entries(&journal).last().unwrap().payload,
        payload(next - 2)
    );

    // The index of the dropped record is taken again, and the repaired
    // log opens clean.
    journal.append(1, &[b"again".to_vec()]).unwrap();
    journal.sync().unwrap();
    drop(journal);
    let (journal, recovery) = Journal::open_with(dir.path(), 1, options()).unwrap();
    assert_eq!(recovery.truncated_bytes, 0, "{recovery:?}");
    assert_eq!(all_entries(&journal).last().unwrap().payload, b"again");
}

#[test]
fn unfinished_spares_are_deleted_and_plain_journals_write_none() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("spare.123.4.tmp"), b"half written").unwrap();
    let (mut journal, _) = Journal::open_with(dir.path(), 1, options()).unwrap();
    assert!(!dir.path().join("spare.123.4.tmp").exists());
    fill_onto_a_spare(&mut journal, dir.path(), 0);
    drop(journal);

    let plain = tempfile::tempdir().unwrap();
    let (mut journal, _) = Journal::open_with(plain.path(), 1, JournalOptions::plain(SEGMENT))
        .expect("open a plain journal");
    for i in 1..=2_000 {
        journal.append(1, &[payload(i)]).unwrap();
    }
    journal.sync().unwrap();
    let names: Vec<String> = fs::read_dir(plain.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.ends_with(".log")),
        "no spare beside a plain journal: {names:?}"
    );
    for segment in segments(plain.path()) {
        let bytes = fs::read(&segment).unwrap();
        assert_ne!(bytes.last(), Some(&0), "{}", segment.display());
    }
}
