//! The SQLite writer's own checkpoints (see [`crate::writeback`]).

use std::path::{Path, PathBuf};

use crate::db::Val;
use crate::tests::{workload, write_in_batches, Entry};
use crate::{EntryRecord, Store, Target};

/// Pages the tests checkpoint after: small, so a few hundred entries make
/// several checkpoints.
const EVERY: i32 = 32;

fn log_bytes(database: &Path) -> u64 {
    let mut log = database.as_os_str().to_owned();
    log.push("-wal");
    std::fs::metadata(log).map(|m| m.len()).unwrap_or(0)
}

/// A fresh SQLite store checkpointing every [`EVERY`] pages (in a
/// directory that lasts as long as the first value), and `commands`
/// entries of the tests' workload.
fn fresh_store(commands: usize) -> (tempfile::TempDir, PathBuf, Vec<Entry>, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let database = dir.path().join("store.sqlite");
    let (entries, _) = workload(commands);
    let mut store = Store::open(&Target::Sqlite(database.clone())).expect("open");
    store
        .writeback
        .as_mut()
        .expect("a SQLite store paces its writes")
        .checkpoint_every(EVERY);
    (dir, database, entries, store)
}

fn checkpoints(store: &Store) -> u64 {
    store.writeback.as_ref().map_or(0, |w| w.checkpoints)
}

#[test]
fn the_writer_checkpoints_itself_and_its_log_stays_small() {
    let (_dir, database, entries, mut store) = fresh_store(1_500);
    let mut largest_log = 0;
    for chunk in entries.chunks(25) {
        let records: Vec<EntryRecord<'_>> = chunk.iter().map(Entry::record).collect();
        store.write(&records).expect("write");
        largest_log = largest_log.max(log_bytes(&database));
    }
    assert!(
        checkpoints(&store) >= 5,
        "{} checkpoints",
        checkpoints(&store)
    );
    let last = store.writeback.as_ref().and_then(|w| w.last).expect("one");
    assert_eq!(last.copied, last.log, "no reader held pages back");
    // Restarted after each complete checkpoint, the log never holds much
    // more than EVERY pages (4 KiB each, plus a 24-byte header per page);
    // SQLite's automatic checkpoint is off, so without the writer's own
    // it would hold every page written.
    let bound = 3 * EVERY as u64 * (4096 + 24);
    assert!(largest_log <= bound, "log grew to {largest_log} bytes");
    // Nothing was lost on the way.
    let reference = {
        let other = tempfile::tempdir().expect("temp dir");
        let mut store = Store::open(&Target::Sqlite(other.path().join("r.sqlite"))).expect("open");
        write_in_batches(&mut store, &entries, 10_000);
        store.dump().expect("dump")
    };
    assert_eq!(store.dump().expect("dump"), reference);
}

#[test]
fn a_checkpoint_leaves_the_database_file_complete_and_sync_at_normal() {
    let (_dir, database, entries, mut store) = fresh_store(600);
    let mut at_checkpoint = None;
    for chunk in entries.chunks(10) {
        let records: Vec<EntryRecord<'_>> = chunk.iter().map(Entry::record).collect();
        let before = checkpoints(&store);
        let position = store.write(&records).expect("write");
        if checkpoints(&store) > before {
            at_checkpoint = Some(position);
            break;
        }
    }
    let at_checkpoint = at_checkpoint.expect("a checkpoint within 600 entries");
    // The database file alone, without its log, holds every commit up to
    // the checkpoint: the pages were copied, not only synced.
    let copy = tempfile::tempdir().expect("temp dir");
    let alone = copy.path().join("alone.sqlite");
    std::fs::copy(&database, &alone).expect("copy");
    let copied = Store::open(&Target::Sqlite(alone)).expect("open the copy");
    assert_eq!(copied.position(), at_checkpoint);
    // The checkpoint ran with SQLite's syncs off; the writer's next
    // transaction may restart the log, so they must be back on.
    let synchronous = store.conn.query("PRAGMA synchronous", &[]).expect("pragma");
    assert_eq!(synchronous, vec![vec![Val::Int(1)]], "1 is NORMAL");
}

#[test]
fn a_checkpoint_a_reader_holds_back_is_retried_later_not_at_every_commit() {
    let (_dir, database, entries, mut store) = fresh_store(4_000);
    // Room for several one-entry commits between a held-back checkpoint
    // and its retry, a quarter of this later.
    let every = 256;
    if let Some(writeback) = store.writeback.as_mut() {
        writeback.checkpoint_every(every);
    }
    let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
    let mut one_by_one = records.chunks(1);
    let mut write_next = |store: &mut Store| {
        store
            .write(one_by_one.next().expect("entries left"))
            .expect("write");
    };
    write_next(&mut store);
    // A report reading while the writer goes on: its snapshot keeps the
    // pages written after it out of the database file.
    let reader = rusqlite::Connection::open(&database).expect("reader");
    reader.execute_batch("BEGIN").expect("begin");
    let _: i64 = reader
        .query_row("SELECT count(*) FROM audit", [], |row| row.get(0))
        .expect("read");
    let before = checkpoints(&store);
    while checkpoints(&store) == before {
        write_next(&mut store);
    }
    let held = store.writeback.as_ref().and_then(|w| w.last).expect("one");
    assert!(held.copied < held.log, "{held:?}");
    // Retrying at every commit would sync twice per commit for nothing.
    write_next(&mut store);
    assert_eq!(checkpoints(&store), before + 1);
    reader.execute_batch("COMMIT").expect("end the read");
    while checkpoints(&store) == before + 1 {
        write_next(&mut store);
    }
    let done = store.writeback.as_ref().and_then(|w| w.last).expect("two");
    assert_eq!(done.copied, done.log, "the retry copies everything");
    assert!(done.log >= held.log + every / 4, "{done:?} after {held:?}");
}

#[test]
fn a_store_not_in_wal_mode_is_written_without_pacing() {
    let (_dir, database, entries, mut store) = fresh_store(300);
    // What SQLite leaves where the file system cannot hold WAL's index.
    let mode = store
        .conn
        .query("PRAGMA journal_mode = DELETE", &[])
        .expect("pragma");
    assert_eq!(mode, vec![vec![Val::Text("delete".into())]]);
    write_in_batches(&mut store, &entries, 20);
    assert_eq!(checkpoints(&store), 0);
    assert_eq!(log_bytes(&database), 0, "no log file");
    assert_eq!(store.position().log_index, entries.len() as u64);
}
