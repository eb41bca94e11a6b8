//! Reads by time go through key ranges (`query::span`): they find exactly
//! the rows a scan filtering on `ts` finds, whatever the gaps between keys,
//! and the writer keeps an audit row's time from running back.

use proptest::prelude::*;

use crate::db::Val;
use crate::tests::{on_both, Entry};
use crate::{Store, Target};

/// Audit rows keyed `log_index` with times that never decrease, inserted
/// as they are (gaps between keys, as dead letters leave).
fn audit_rows(store: &mut Store, rows: &[(i64, i64)]) {
    store.conn.script("BEGIN").expect("begin");
    for &(log_index, ts) in rows {
        store
            .conn
            .exec(
                "INSERT INTO audit (log_index, ts, command, outcome, trades, events) \
                 VALUES (?, ?, 'deposit', 'accepted', 0, 0)",
                &[Val::Int(log_index), Val::Int(ts)],
            )
            .expect("insert an audit row");
    }
    store.conn.script("COMMIT").expect("commit");
}

/// Keys rising by 1 to 4, times by 0 to 3 (runs of equal times included).
fn keyed_times() -> impl Strategy<Value = Vec<(i64, i64)>> {
    prop::collection::vec((1i64..5, 0i64..4), 0..60).prop_map(|steps| {
        let (mut key, mut ts) = (0, 100);
        steps
            .into_iter()
            .map(|(key_step, ts_step)| {
                key += key_step;
                ts += ts_step;
                (key, ts)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_time_range_finds_what_a_scan_of_the_times_finds(
        rows in keyed_times(),
        from in 90u64..300,
        width in 0u64..120,
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store = Store::open(&Target::Sqlite(dir.path().join("span.sqlite")))
            .expect("open");
        audit_rows(&mut store, &rows);
        let to = from + width;
        let found: Vec<u64> = store
            .audit(from, to)
            .expect("read")
            .iter()
            .map(|row| row.log_index)
            .collect();
        let scanned: Vec<u64> = rows
            .iter()
            .filter(|(_, ts)| (from..to).contains(&(*ts as u64)))
            .map(|(key, _)| *key as u64)
            .collect();
        prop_assert_eq!(found, scanned);
        let everything = store.audit(0, u64::MAX).expect("read all");
        prop_assert_eq!(everything.len(), rows.len());
    }
}

#[test]
fn an_audit_clock_that_runs_back_is_written_at_the_latest_time_before_it() {
    on_both("audit_clock_runs_back", |target| {
        let mut store = Store::open(target).expect("open");
        let entry = |index: u64, ts: u64| Entry {
            index,
            ts,
            command: "deposit",
            account: None,
            events: Vec::new(),
        };
        // A new leader's clock 5 behind the old one's, in the second batch.
        let first = [entry(1, 10), entry(2, 20)];
        let second = [entry(3, 15), entry(4, 18), entry(5, 30)];
        for batch in [&first[..], &second[..]] {
            let records: Vec<_> = batch.iter().map(Entry::record).collect();
            store.write(&records).expect("write");
        }
        let times: Vec<(u64, u64)> = store
            .audit(0, u64::MAX)
            .expect("read")
            .iter()
            .map(|row| (row.log_index, row.ts))
            .collect();
        assert_eq!(times, vec![(1, 10), (2, 20), (3, 20), (4, 20), (5, 30)]);
        let from_20: Vec<u64> = store
            .audit(20, 30)
            .expect("read")
            .iter()
            .map(|row| row.log_index)
            .collect();
        assert_eq!(from_20, vec![2, 3, 4]);
        // A writer opened afresh reads the clock back from the store.
        drop(store);
        let mut reopened = Store::open(target).expect("reopen");
        let third = [entry(6, 25)];
        let records: Vec<_> = third.iter().map(Entry::record).collect();
        reopened.write(&records).expect("write");
        let last = reopened.audit(0, u64::MAX).expect("read");
        assert_eq!(
            last.last().map(|row| (row.log_index, row.ts)),
            Some((6, 30))
        );
    });
}
