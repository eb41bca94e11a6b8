//! The bulk paths (large batches: PostgreSQL's `COPY` and staged upserts,
//! SQLite's long transactions) store exactly what writing entry by entry
//! stores, and a failure anywhere in a batch's transaction, its final
//! statements included, leaves the store at its last committed position,
//! from which resuming neither duplicates nor misses an entry. On both
//! backends.

use std::collections::HashSet;

use exchange_types::{order_updates, Change};

use crate::tests::{on_both, workload, write_in_batches, Entry};
use crate::{EntryRecord, Store, StoreError, Target};

/// The store written entry by entry on SQLite: one single-row statement
/// per row, every order updated in place, the slowest and plainest path.
fn one_by_one(entries: &[Entry]) -> crate::Dump {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&Target::Sqlite(dir.path().join("r.sqlite"))).expect("open");
    write_in_batches(&mut store, entries, 1);
    store.dump().expect("dump")
}

/// Orders accepted before `split` that entries from `split` on change:
/// the batch from `split` updates that many stored rows at once.
fn stored_orders_changed_after(entries: &[Entry], split: usize) -> usize {
    // Each order's id, and whether the change created it.
    fn updates(entries: &[Entry]) -> Vec<(u64, bool)> {
        entries
            .iter()
            .flat_map(|e| &e.events)
            .flat_map(|event| {
                order_updates(&event.kind).map(|u| (u.order_id, matches!(u.change, Change::New(_))))
            })
            .collect()
    }
    let created: HashSet<u64> = updates(&entries[..split])
        .into_iter()
        .filter_map(|(id, new)| new.then_some(id))
        .collect();
    let changed: HashSet<u64> = updates(&entries[split..])
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| created.contains(id))
        .collect();
    changed.len()
}

#[test]
fn large_batches_store_exactly_what_entries_one_by_one_do() {
    let (entries, _) = workload(2_400);
    let batch = 1_024;
    // The second batch updates enough rows the first stored for
    // PostgreSQL to stage them by COPY.
    let stored = stored_orders_changed_after(&entries, batch);
    assert!(
        stored >= crate::batch::COPY_FROM,
        "stored orders changed by the second batch: {stored}"
    );
    let reference = one_by_one(&entries);
    assert_eq!(reference.audit.len(), entries.len());
    // So the bulk paths are compared on every column, these too.
    crate::order_types_tests::assert_hidden_and_min_qty_kept(&entries, &reference);
    on_both("large_batches_store_exactly", |target| {
        let mut store = Store::open(target).expect("open");
        let position = write_in_batches(&mut store, &entries, batch);
        assert_eq!(position.log_index, entries.len() as u64);
        assert_eq!(store.dump().expect("dump"), reference);
    });
}

#[test]
fn a_failure_in_a_batchs_last_statements_leaves_nothing_and_resuming_is_exact() {
    let (entries, _) = workload(1_200);
    let reference = one_by_one(&entries);
    on_both("a_failure_in_a_batchs_last_statements", |target| {
        let records: Vec<EntryRecord<'_>> = entries.iter().map(Entry::record).collect();
        let mut store = Store::open(target).expect("open");
        store.write(&records[..400]).expect("first batch");
        let committed = store.dump().expect("dump");
        for step in 1..=4 {
            store.fail_in_flush(step);
            let failed = store.write(&records[400..1_000]);
            assert!(
                matches!(failed, Err(StoreError::Failpoint(s)) if s == step),
                "step {step}: {failed:?}"
            );
            assert_eq!(store.position().log_index, 400, "step {step}");
            // What a restarted process sees: only the committed batch,
            // none of the rows the failed transaction had written.
            let mut reopened = Store::open(target).expect("reopen");
            assert_eq!(reopened.dump().expect("dump"), committed, "step {step}");
        }
        // The same connection goes on (its caches dropped, PostgreSQL's
        // staging table gone with the rollback that took its creation).
        store.write(&records[400..1_000]).expect("the batch again");
        // Resume on a new connection, with overlapping input as a reporter
        // catching up from the journal gives it.
        let mut reopened = Store::open(target).expect("reopen");
        write_in_batches(&mut reopened, &entries[900..], 512);
        assert_eq!(reopened.dump().expect("dump"), reference);
    });
}
