//! Migrations keep what a store holds: a store written at an older schema
//! version reads the same after migrating, and writing on from it gives
//! the rows a store written at the latest version throughout has.

use std::collections::HashSet;

use crate::db::Val;
use crate::ledger_tests::balance_changes;
use crate::tests::{on_both, workload, write_in_batches, Entry};
use crate::{schema, Dump, Store, Target};

/// Every table of the first schema, with its columns (the same in every
/// version since).
const V1_TABLES: &[(&str, &str)] = &[
    (
        "orders",
        "order_id, account, client_order_id, symbol, side, order_type, price, qty, filled_qty, \
         status, tif, created_ts, updated_ts, log_index",
    ),
    (
        "trades",
        "trade_id, seq, log_index, ts, symbol, price, qty, notional, aggressor_side, \
         maker_order_id, taker_order_id, maker_account, taker_account, maker_fee, taker_fee",
    ),
    (
        "fills",
        "trade_id, liquidity, order_id, account, symbol, side, price, qty, notional, fee, ts",
    ),
    (
        "ledger",
        "seq, log_index, ts, account, asset, total, available, delta, cause",
    ),
    (
        "audit",
        "log_index, ts, command, account, outcome, reason, reason_code, order_id, \
         client_order_id, symbol, trades, first_seq, last_seq, events",
    ),
];

fn rows(store: &mut Store, sql: &str) -> Vec<Vec<Val>> {
    store.conn.query(sql, &[]).expect("query")
}

/// Copies what `current` holds into `old`, a store at an older version,
/// as that version's writer would have written it: the columns of the
/// first schema, `balances` from version 2 on, and the position. (The
/// writer of this version writes columns an older store lacks, so it
/// cannot fill one directly.)
fn copy_as_old(current: &mut Store, old: &mut Store, version: usize) {
    let balances = ("balances", "account, asset, total, available, seq");
    let tables = V1_TABLES.iter().chain((version >= 2).then_some(&balances));
    old.conn.script("BEGIN").expect("begin");
    for (table, columns) in tables {
        let placeholders = vec!["?"; columns.split(',').count()].join(", ");
        let insert = format!("INSERT INTO {table} ({columns}) VALUES ({placeholders})");
        for row in rows(current, &format!("SELECT {columns} FROM {table}")) {
            old.conn.exec(&insert, &row).expect("copy a row");
        }
    }
    let position = current.position();
    for (name, value) in [
        ("log_index", position.log_index),
        ("event_seq", position.event_seq),
    ] {
        old.conn
            .exec(
                "UPDATE report_meta SET value = ? WHERE name = ?",
                &[Val::Int(value as i64), name.into()],
            )
            .expect("position");
    }
    old.conn.script("COMMIT").expect("commit");
}

/// Adds the hold rows a writer before version 3 wrote for `entries` (a
/// `balance` event that left the total as it was, `delta` 0), which the
/// current writer leaves out; returns how many.
fn add_old_hold_rows(store: &mut Store, entries: &[Entry]) -> usize {
    let (table, columns) = V1_TABLES[3];
    assert_eq!(table, "ledger");
    let insert = format!("INSERT INTO ledger ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    store.conn.script("BEGIN").expect("begin");
    let mut added = 0;
    for change in balance_changes(entries).iter().filter(|c| c.delta == 0) {
        store
            .conn
            .exec(&insert, &change.ledger_row())
            .expect("a hold row");
        added += 1;
    }
    store.conn.script("COMMIT").expect("commit");
    added
}

/// What `dump` holds as a writer before version 6 would have left it: the
/// orders `old` (the ids in the store written by that writer) without their
/// hidden flag and minimum quantity, which it dropped. Orders placed
/// after the migration keep theirs.
fn without_v6_facts(mut dump: Dump, old: &HashSet<u64>) -> Dump {
    for order in dump.orders.iter_mut().filter(|o| old.contains(&o.order_id)) {
        order.hidden = false;
        order.min_qty = None;
    }
    dump
}

/// The ids of the orders `store` holds.
fn order_ids(store: &mut Store) -> HashSet<u64> {
    let orders = store.all_orders().expect("orders");
    orders.iter().map(|o| o.order_id).collect()
}

fn count(store: &mut Store, table: &str) -> i64 {
    rows(store, &format!("SELECT COUNT(*) FROM {table}"))[0][0]
        .int()
        .expect("a count")
}

fn balances(store: &mut Store) -> Vec<Vec<Val>> {
    rows(
        store,
        "SELECT account, asset, total, available, seq FROM balances ORDER BY account, asset",
    )
}

/// The test workload, where its halves split, and a store of the current
/// version in `dir` holding the first half.
fn first_half_written(dir: &std::path::Path) -> (Vec<Entry>, usize, Store) {
    let (entries, _) = workload(400);
    let half = entries.len() / 2;
    let mut current = Store::open(&Target::Sqlite(dir.join("current.sqlite"))).expect("open");
    write_in_batches(&mut current, &entries[..half], 50);
    (entries, half, current)
}

/// The migrated store holds the rows the current writer wrote, less what
/// version 6 added (an older writer never kept it); returns its orders.
fn holds_the_old_rows(migrated: &mut Store, current: &mut Store) -> HashSet<u64> {
    let old = order_ids(migrated);
    assert_eq!(
        migrated.dump().expect("dump"),
        without_v6_facts(current.dump().expect("dump"), &old)
    );
    old
}

/// Writing on after the migration: the rows match a store written in one
/// go (the facts version 6 added aside on the `old` orders), which is
/// returned.
fn writes_on_as_one_store(
    migrated: &mut Store,
    entries: &[Entry],
    half: usize,
    dir: &std::path::Path,
    old: &HashSet<u64>,
) -> Store {
    write_in_batches(migrated, &entries[half..], 50);
    let mut whole = Store::open(&Target::Sqlite(dir.join("whole.sqlite"))).expect("open");
    write_in_batches(&mut whole, entries, 1_000);
    assert_eq!(
        migrated.dump().expect("dump"),
        without_v6_facts(whole.dump().expect("dump"), old)
    );
    whole
}

#[test]
fn a_store_written_at_version_1_migrates_with_its_rows() {
    on_both("a_store_written_at_version_1_migrates", |target| {
        let dir = tempfile::tempdir().expect("temp dir");
        // What version 1 would hold after the first half: the same rows
        // (its tables have the same columns), copied into a store at
        // version 1.
        let (entries, half, mut current) = first_half_written(dir.path());
        {
            let mut old = Store::open_at(target, 1).expect("open at version 1");
            copy_as_old(&mut current, &mut old, 1);
            // Version 1 also recorded holds; `balances` (version 2) is made
            // from the last ledger row, a hold's included.
            assert!(add_old_hold_rows(&mut old, &entries[..half]) > 50);
            let version = rows(
                &mut old,
                "SELECT value FROM report_meta WHERE name = 'schema_version'",
            );
            assert_eq!(version, vec![vec![Val::Int(1)]]);
        }

        let mut migrated = Store::open(target).expect("migrate");
        let version = rows(
            &mut migrated,
            "SELECT value FROM report_meta WHERE name = 'schema_version'",
        );
        assert_eq!(version, vec![vec![Val::Int(schema::LATEST as i64)]]);
        assert_eq!(migrated.position(), current.position());
        let old = holds_the_old_rows(&mut migrated, &mut current);
        let expected = balances(&mut current);
        assert!(
            expected.len() >= 12,
            "every account and asset has a balance"
        );
        assert_eq!(balances(&mut migrated), expected);

        // Writing on: each ledger row's change comes from the migrated
        // balances, and every row matches a store written in one go.
        let mut whole = writes_on_as_one_store(&mut migrated, &entries, half, dir.path(), &old);
        assert_eq!(balances(&mut migrated), balances(&mut whole));
    });
}

#[test]
fn version_3_drops_the_hold_rows_of_an_older_writer() {
    on_both("version_3_drops_the_hold_rows", |target| {
        let dir = tempfile::tempdir().expect("temp dir");
        let (entries, half, mut current) = first_half_written(dir.path());
        let changes = count(&mut current, "ledger");
        {
            // A store at version 2 as its writer left it: the same rows,
            // holds included in the ledger.
            let mut old = Store::open_at(target, 2).expect("open at version 2");
            copy_as_old(&mut current, &mut old, 2);
            let holds = add_old_hold_rows(&mut old, &entries[..half]);
            assert!(holds > 50, "the workload holds ({holds})");
            assert_eq!(count(&mut old, "ledger"), changes + holds as i64);
        }
        let mut migrated = Store::open(target).expect("migrate");
        assert_eq!(count(&mut migrated, "ledger"), changes);
        let old = holds_the_old_rows(&mut migrated, &mut current);
        writes_on_as_one_store(&mut migrated, &entries, half, dir.path(), &old);
    });
}

#[test]
fn version_4_adds_the_order_type_and_auction_columns_empty() {
    on_both("version_4_adds_columns", |target| {
        let dir = tempfile::tempdir().expect("temp dir");
        let (entries, half, mut current) = first_half_written(dir.path());
        {
            let mut old = Store::open_at(target, 3).expect("open at version 3");
            copy_as_old(&mut current, &mut old, 3);
            let columns = rows(&mut old, "SELECT * FROM orders LIMIT 1");
            assert_eq!(columns[0].len(), 14, "version 3 has the first columns only");
        }
        let mut migrated = Store::open(target).expect("migrate");
        let version = rows(
            &mut migrated,
            "SELECT value FROM report_meta WHERE name = 'schema_version'",
        );
        assert_eq!(version, vec![vec![Val::Int(schema::LATEST as i64)]]);
        let filled = rows(
            &mut migrated,
            "SELECT COUNT(*) FROM orders WHERE stop_price IS NOT NULL OR display_qty IS NOT NULL \
             OR funds IS NOT NULL OR expire_ts IS NOT NULL OR triggered_ts IS NOT NULL",
        );
        assert_eq!(filled, vec![vec![Val::Int(0)]]);
        assert!(count(&mut migrated, "orders") > 100);
        let flagged = rows(
            &mut migrated,
            "SELECT COUNT(*) FROM trades WHERE auction IS NOT NULL",
        );
        assert_eq!(flagged, vec![vec![Val::Int(0)]]);
        let old = holds_the_old_rows(&mut migrated, &mut current);
        writes_on_as_one_store(&mut migrated, &entries, half, dir.path(), &old);
    });
}

#[test]
fn version_6_adds_hidden_and_min_qty_as_not_hidden_and_no_minimum() {
    on_both("version_6_adds_hidden_and_min_qty", |target| {
        let dir = tempfile::tempdir().expect("temp dir");
        let (entries, half, mut current) = first_half_written(dir.path());
        let facts = current.all_orders().expect("orders");
        assert!(
            facts.iter().any(|o| o.hidden) && facts.iter().any(|o| o.min_qty.is_some()),
            "the workload has hidden orders and minimum quantities"
        );
        {
            let mut old = Store::open_at(target, 5).expect("open at version 5");
            copy_as_old(&mut current, &mut old, 5);
            let columns = rows(&mut old, "SELECT * FROM orders LIMIT 1");
            assert_eq!(columns[0].len(), 23, "version 5 has no hidden or min_qty");
        }
        let mut migrated = Store::open(target).expect("migrate");
        let version = rows(
            &mut migrated,
            "SELECT value FROM report_meta WHERE name = 'schema_version'",
        );
        assert_eq!(version, vec![vec![Val::Int(schema::LATEST as i64)]]);
        let orders = migrated.all_orders().expect("orders");
        assert_eq!(orders.len(), facts.len());
        assert!(
            orders.iter().all(|o| !o.hidden && o.min_qty.is_none()),
            "rows of an older writer read as not hidden, without a minimum"
        );
        let old = holds_the_old_rows(&mut migrated, &mut current);
        // Orders placed from now on keep both.
        writes_on_as_one_store(&mut migrated, &entries, half, dir.path(), &old);
        let after = migrated.all_orders().expect("orders");
        assert!(after.iter().any(|o| !old.contains(&o.order_id) && o.hidden));
    });
}

/// The REST history reads of one account find its rows through an index,
/// already in the order asked (SQLite's plan; PostgreSQL plans by table
/// statistics).
#[test]
fn account_history_reads_use_an_index_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store = Store::open(&Target::Sqlite(dir.path().join("store.sqlite"))).expect("open");
    for (sql, index) in [
        (
            "SELECT order_id FROM orders WHERE account = 1 ORDER BY order_id DESC LIMIT 10",
            "orders_by_account",
        ),
        (
            "SELECT trade_id FROM fills WHERE account = 1 ORDER BY trade_id DESC, liquidity DESC \
             LIMIT 10",
            "fills_by_account",
        ),
        (
            "SELECT total FROM balances WHERE account = 1 AND asset = 'USD'",
            "PRIMARY KEY",
        ),
    ] {
        let plan: Vec<String> = rows(&mut store, &format!("EXPLAIN QUERY PLAN {sql}"))
            .into_iter()
            .map(|row| row[3].text().expect("detail"))
            .collect();
        let plan = plan.join("; ");
        assert!(plan.contains(index), "{sql}: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{sql}: {plan}");
    }
}

#[test]
fn version_5_adds_an_empty_dead_letter_table() {
    on_both("version_5_adds_dead_letters", |target| {
        drop(Store::open_at(target, 4).expect("open at version 4"));
        let mut migrated = Store::open(target).expect("migrate");
        assert_eq!(migrated.dead_letter_count().expect("count"), 0);
        assert!(migrated.dead_letters().expect("dead letters").is_empty());
    });
}

/// A reader beside the store's writer opens only a store the writer has
/// created and migrated, and changes nothing.
#[test]
fn opening_an_existing_store_creates_and_migrates_nothing() {
    on_both("open_existing", |target| {
        if let Target::Sqlite(path) = target {
            assert!(Store::open_existing(target).is_err(), "no store yet");
            assert!(!path.exists(), "the reader created the file");
        }
        let old = Store::open_at(target, 1).expect("open at version 1");
        drop(old);
        let refused = Store::open_existing(target).err().map(|e| e.to_string());
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("schema version 1")),
            "{refused:?}"
        );
        // Still at version 1: the writer migrates it.
        let mut writer = Store::open_at(target, 1).expect("reopen at version 1");
        let version = rows(
            &mut writer,
            "SELECT value FROM report_meta WHERE name = 'schema_version'",
        );
        assert_eq!(version, vec![vec![Val::Int(1)]]);
        drop(writer);
        drop(Store::open(target).expect("migrated"));
        let reader = Store::open_existing(target).expect("a migrated store");
        assert_eq!(reader.position().log_index, 0);
    });
}

/// The indexes by time, as the backend lists them.
fn time_indexes(store: &mut Store) -> Vec<Vec<Val>> {
    let sql = if store.conn.is_postgres() {
        "SELECT CAST(indexname AS TEXT) AS name FROM pg_indexes \
         WHERE schemaname = current_schema() AND indexname LIKE '%by_time' ORDER BY indexname"
    } else {
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE '%by_time' \
         ORDER BY name"
    };
    rows(store, sql)
}

/// Version 7 drops the indexes by time: reads by time find the same rows
/// through the keys, and an audit row whose log clock ran back takes the
/// latest time before it.
#[test]
fn version_7_reads_by_time_through_keys_and_mends_an_audit_clock_that_ran_back() {
    on_both("version_7_reads_by_time", |target| {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_, _, mut current) = first_half_written(dir.path());
        let ran_back;
        {
            let mut old = Store::open_at(target, 6).expect("open at version 6");
            copy_as_old(&mut current, &mut old, 6);
            assert_eq!(time_indexes(&mut old).len(), 3, "version 6 indexes by time");
            let audit = old.audit(0, u64::MAX).expect("audit");
            assert!(audit.len() > 10, "the workload wrote audit rows");
            ran_back = audit[audit.len() / 2].log_index;
            old.conn
                .exec(
                    "UPDATE audit SET ts = ? WHERE log_index = ?",
                    &[Val::Int(audit[0].ts as i64), Val::Int(ran_back as i64)],
                )
                .expect("a clock that ran back");
        }
        let mut migrated = Store::open(target).expect("migrate");
        assert!(time_indexes(&mut migrated).is_empty(), "no index by time");
        let audit = migrated.audit(0, u64::MAX).expect("audit");
        let expected = current.audit(0, u64::MAX).expect("audit");
        assert_eq!(audit.len(), expected.len());
        let at = audit.iter().position(|row| row.log_index == ran_back);
        let at = at.expect("the row is still there");
        assert_eq!(
            audit[at].ts,
            audit[at - 1].ts,
            "mended to the time before it"
        );
        assert!(audit.windows(2).all(|pair| pair[0].ts <= pair[1].ts));
        // Every read by time finds what a scan of all rows finds.
        let trades = migrated.trades(None, 0, u64::MAX).expect("trades");
        let fills = migrated.fills(None, 0, u64::MAX).expect("fills");
        assert!(
            !trades.is_empty() && !fills.is_empty(),
            "the workload traded"
        );
        let (low, high) = (audit[0].ts, audit[audit.len() - 1].ts);
        for (from, to) in [(low, high), (low + 1, high / 2 + low / 2), (high, high + 1)] {
            let in_range = |ts: u64| (from..to).contains(&ts);
            let read = migrated.audit(from, to).expect("audit");
            assert_eq!(read.len(), audit.iter().filter(|r| in_range(r.ts)).count());
            let read = migrated.trades(None, from, to).expect("trades");
            assert_eq!(read.len(), trades.iter().filter(|r| in_range(r.ts)).count());
            let read = migrated.fills(None, from, to).expect("fills");
            assert_eq!(read.len(), fills.iter().filter(|r| in_range(r.ts)).count());
        }
    });
}
