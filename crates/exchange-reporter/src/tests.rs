//! The reporter on a real node: it starts behind (catch-up from the
//! journal), is held back by a locked store while the core runs on (its
//! event receiver lags, snapshots are taken), and still ends with exactly
//! what a replay of the journal gives.

use std::time::{Duration, Instant};

use exchange_journal::snapshots;
use exchange_reporting::{EntryRecord, Store, Target};

use super::catch_up::{committed_entries, committed_entries_from};
use super::{entry_record, ReporterConfig, Reporting};
use exchange_node::recovery;
use exchange_node::Applied;
use exchange_node::LogEntry;
use exchange_node::{Handle, Pipeline, PipelineConfig};

const DEADLINE: Duration = Duration::from_secs(60);

/// Lists BTC-USD around 100 and funds account 1 with USD, 2 with BTC.
const SETUP: &[&str] = &[
    concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5,"#,
        r#""price_collar_pct":"10","reference_price":"100.00"}"#,
    ),
    r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#,
    r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"10"}"#,
];

async fn submit(handle: &Handle, line: &str) {
    let entry = LogEntry::Core(exchange_codec::decode_command(line).expect(line));
    handle.submit(entry).await.expect("submitted");
}

/// Orders `numbers`, all submitted at once (so the sequencer puts
/// several in one log record and the core applies them back to back).
async fn burst(handle: &Handle, numbers: std::ops::Range<u64>) {
    let sent: Vec<_> = numbers
        .map(|n| {
            let handle = handle.clone();
            tokio::spawn(async move { orders(&handle, n, 1).await })
        })
        .collect();
    for order in sent {
        order.await.expect("order");
    }
}

async fn orders(handle: &Handle, from: u64, count: u64) {
    for n in from..from + count {
        let (account, side) = if n % 2 == 0 { (1, "buy") } else { (2, "sell") };
        let price = 99 + n % 3;
        submit(
            handle,
            &format!(
                concat!(
                    r#"{{"cmd":"place","account":{account},"client_order_id":"o{n}","#,
                    r#""symbol":"BTC-USD","side":"{side}","price":"{price}","qty":"0.1"}}"#,
                ),
                account = account,
                n = n,
                side = side,
                price = price,
            ),
        )
        .await;
    }
}

fn metric(reporting: &Reporting, name: &str) -> u64 {
    metric_as(reporting, name)
}

fn metric_as<T: std::str::FromStr>(reporting: &Reporting, name: &str) -> T {
    let mut page = exchange_node::prometheus::Exposition::new();
    reporting.write_metrics(&mut page);
    page.finish()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name}"))
}

async fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn replayed(data_dir: &std::path::Path, through: u64) -> exchange_reporting::Dump {
    let mut store = Store::open(&Target::Sqlite(data_dir.join("replayed.sqlite"))).expect("open");
    let mut all: Vec<Applied> = Vec::new();
    committed_entries(data_dir, 0, through, |applied| {
        all.push(applied);
        Ok(())
    })
    .expect("replay");
    let records: Vec<EntryRecord<'_>> = all.iter().map(entry_record).collect();
    store.write(&records).expect("write");
    store.dump().expect("dump")
}

/// A node with a tiny event buffer (a held-up reporter loses live
/// messages at once), BTC-USD listed and accounts funded.
async fn start_node(dir: &std::path::Path, snapshot_every: u64) -> (Pipeline, Handle) {
    // The reporter's log shows in a failure's output.
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer: 8,
        snapshot_every,
        snapshot_dir: dir.join("snapshots"),
        master_key: exchange_node::master_key::MasterKey::from_bytes([1; 32]),
    };
    let (pipeline, _) = recovery::start(dir, config).expect("start a node");
    let handle = pipeline.handle.clone();
    for line in SETUP {
        submit(&handle, line).await;
    }
    (pipeline, handle)
}

/// A reporter in the foreground writing `reporting.sqlite` in `dir`.
fn start_reporter(
    handle: &Handle,
    dir: &std::path::Path,
    max_batch: usize,
    linger: Duration,
) -> (Reporting, super::Reporter, std::path::PathBuf) {
    let path = dir.join("reporting.sqlite");
    let (reporting, reporter) = Reporting::start(
        handle,
        ReporterConfig {
            target: Target::Sqlite(path.clone()),
            data_dir: dir.to_path_buf(),
            max_batch,
            linger,
            read_wait: Duration::from_secs(30),
            background: false,
            cpus: exchange_node::threads::CpuPlacement::Any,
            journal_tail_dropped: false,
            replica_of_many: false,
        },
    )
    .expect("start reporting");
    (reporting, reporter, path)
}

/// Stops the node and its reporter (which writes what the core published
/// last) and reads the whole store.
fn stop_and_dump(
    pipeline: Pipeline,
    handle: Handle,
    reporting: Reporting,
    reporter: super::Reporter,
    path: std::path::PathBuf,
) -> exchange_reporting::Dump {
    drop(handle);
    drop(reporting);
    pipeline.join();
    reporter.join();
    Store::open(&Target::Sqlite(path))
        .expect("open")
        .dump()
        .expect("dump")
}

fn snapshots_taken(handle: &Handle) -> u64 {
    handle
        .metrics
        .snapshots
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// The Raft indexes of the snapshot files in the node's directory, in
/// order.
fn kept_snapshots(dir: &std::path::Path) -> Vec<u64> {
    let mut kept: Vec<u64> = std::fs::read_dir(dir.join("snapshots"))
        .expect("snapshots")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("snapshot-")?
                .strip_suffix(".snap")?
                .parse()
                .ok()
        })
        .collect();
    kept.sort_unstable();
    kept
}

/// A reporter held at `held_at` keeps the log and the snapshot it would
/// catch up from.
fn assert_floor_kept(handle: &Handle, dir: &std::path::Path, held_at: u64) {
    assert_eq!(
        handle
            .metrics
            .retain_from
            .load(std::sync::atomic::Ordering::Relaxed),
        held_at
    );
    // Snapshot files are named by Raft index: the floor is kept as one too.
    let held_raft = handle
        .metrics
        .retain_from_raft
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(held_raft > 1 && held_raft < u64::MAX, "{held_raft}");
    // The snapshot it needs to catch up from is kept, beside the newest two.
    let kept = kept_snapshots(dir);
    assert!(
        kept.len() >= 3 && kept[0] <= held_raft,
        "kept {kept:?}, reporter's floor at Raft index {held_raft}"
    );
    assert!(
        kept[1] > held_raft,
        "kept {kept:?}, reporter's floor at Raft index {held_raft}"
    );
    let needed = snapshots::load_at_or_before(&dir.join("snapshots"), held_raft).expect("load");
    assert_eq!(needed.map(|s| s.index), Some(kept[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reporter_behind_and_lagging_still_writes_every_entry_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pipeline, handle) = start_node(dir.path(), 10).await;
    orders(&handle, 0, 30).await;

    // Started behind: everything so far comes from the journal.
    let (reporting, reporter, path) =
        start_reporter(&handle, dir.path(), 64, Duration::from_millis(2));
    let applied = handle.position().await.expect("read").applied_index;
    assert!(reporting.wait_until(applied, DEADLINE).await, "caught up");
    // (The very last entry may still arrive live: it is published just
    // after its answer.)
    let caught_up = metric(&reporting, "exchange_reporting_caught_up_entries_total");
    assert!(
        caught_up + 1 >= applied,
        "{caught_up} of {applied} from the journal"
    );

    // Hold the store: the reporter blocks in its next write while the core
    // applies 100 more entries and takes snapshots.
    let lock = rusqlite::Connection::open(&path).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("lock the store");
    let held_at = reporting.written();
    let snapshots_before = snapshots_taken(&handle);
    orders(&handle, 30, 100).await;
    wait("snapshots past the reporter", || {
        snapshots_taken(&handle) >= snapshots_before + 3
    })
    .await;
    assert_eq!(reporting.written(), held_at, "the reporter is held");
    assert_floor_kept(&handle, dir.path(), held_at);
    // Behind in entries and in log time: the entries applied since span
    // some time after the last one written.
    let lag = reporting.lag();
    assert!(lag.entries >= 100, "{lag:?}");
    assert!(lag.seconds_ns > 0, "{lag:?}");
    assert!(
        lag.seconds() < 60.0,
        "log time, not since the epoch: {lag:?}"
    );

    lock.execute_batch("ROLLBACK").expect("unlock");
    let applied = handle.position().await.expect("read").applied_index;
    assert!(
        reporting.wait_until(applied, DEADLINE).await,
        "caught up again"
    );
    assert!(
        metric(&reporting, "exchange_reporting_caught_up_entries_total") > caught_up + 20,
        "the lost live messages came from the journal"
    );
    assert_eq!(metric(&reporting, "exchange_reporting_lag_entries"), 0);
    assert_eq!(
        metric_as::<f64>(&reporting, "exchange_reporting_lag_seconds"),
        0.0
    );
    assert_eq!(reporting.lag(), crate::Lag::default());

    let dump = stop_and_dump(pipeline, handle, reporting, reporter, path);
    assert_eq!(dump.position.log_index, applied);
    assert!(
        dump.trades.len() > 20,
        "the orders traded ({})",
        dump.trades.len()
    );
    assert_eq!(dump, replayed(dir.path(), applied));
}

/// A burst bigger than the event buffer arrives while the reporter lingers
/// over a batch it has begun: the batch it writes has a gap inside it,
/// which the journal fills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lag_in_the_middle_of_a_batch_is_filled_from_the_journal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pipeline, handle) = start_node(dir.path(), 1_000).await;
    // A linger long enough that the burst below lands inside it.
    let (reporting, reporter, path) =
        start_reporter(&handle, dir.path(), 10_000, Duration::from_secs(2));
    let applied = handle.position().await.expect("read").applied_index;
    assert!(reporting.wait_until(applied, DEADLINE).await, "caught up");
    let caught_up = metric(&reporting, "exchange_reporting_caught_up_entries_total");

    // One entry starts a batch; the burst (sent at once, so it is applied
    // back to back) overflows the buffer while the batch lingers.
    orders(&handle, 0, 1).await;
    burst(&handle, 1..40).await;
    let applied = handle.position().await.expect("read").applied_index;
    assert!(
        reporting.wait_until(applied, DEADLINE).await,
        "caught up after the burst"
    );
    assert!(
        metric(&reporting, "exchange_reporting_caught_up_entries_total") > caught_up,
        "the entries lost to the lag came from the journal"
    );

    let dump = stop_and_dump(pipeline, handle, reporting, reporter, path);
    assert_eq!(dump.position.log_index, applied);
    assert_eq!(dump, replayed(dir.path(), applied));
}

/// Holds the store while `count` orders from `from` are applied (the
/// reporter blocks in its next write and its receiver lags), then lets it
/// catch up; returns the applied index it reached.
async fn lag_once(
    handle: &Handle,
    reporting: &Reporting,
    path: &std::path::Path,
    from: u64,
) -> u64 {
    let lock = rusqlite::Connection::open(path).expect("open");
    lock.execute_batch("BEGIN IMMEDIATE")
        .expect("lock the store");
    let caught_up = metric(reporting, "exchange_reporting_caught_up_entries_total");
    let missed = metric(reporting, "exchange_reporting_missed_entries_total");
    orders(handle, from, 40).await;
    lock.execute_batch("ROLLBACK").expect("unlock");
    let applied = handle.position().await.expect("read").applied_index;
    assert!(reporting.wait_until(applied, DEADLINE).await, "caught up");
    assert!(
        metric(reporting, "exchange_reporting_caught_up_entries_total") > caught_up,
        "the lag was filled from the journal"
    );
    assert!(
        metric(reporting, "exchange_reporting_missed_entries_total") > missed,
        "the entries the receiver lost are counted"
    );
    applied
}

/// With no snapshot to start from, every catch-up would replay the log
/// from its beginning; the scratch state the first one ended with is kept,
/// so the second replays only what came after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_lag_replays_from_where_the_first_catch_up_ended() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pipeline, handle) = start_node(dir.path(), 1_000_000).await;
    let (reporting, reporter, path) =
        start_reporter(&handle, dir.path(), 64, Duration::from_millis(2));
    let replayed_so_far = || metric(&reporting, "exchange_reporting_replayed_commands_total");

    orders(&handle, 0, 200).await;
    let first = lag_once(&handle, &reporting, &path, 200).await;
    let after_first = replayed_so_far();
    assert!(
        after_first >= 200,
        "the first catch-up replays the orders before the lag ({after_first})"
    );
    orders(&handle, 240, 200).await;
    let second = lag_once(&handle, &reporting, &path, 440).await;
    let replayed_second = replayed_so_far() - after_first;
    // From the first catch-up's end: the 200 orders written live and the
    // 40 of the second lag, not all the `second` entries of the log again.
    assert!(
        replayed_second >= 40 && replayed_second + 100 < second,
        "replayed {replayed_second} commands to catch up to {second} (the first catch-up \
         reached about {first})"
    );

    let dump = stop_and_dump(pipeline, handle, reporting, reporter, path);
    assert_eq!(dump.position.log_index, second);
    assert_eq!(dump, replayed(dir.path(), second));
}

/// Walks resumed from the scratch state the previous one ended with, each
/// stopping wherever it is asked to (in the middle of a log record that
/// holds several commands too), give exactly the entries one walk gives,
/// and replay nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn walks_resumed_from_a_kept_scratch_state_give_the_same_entries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pipeline, handle) = start_node(dir.path(), 1_000_000).await;
    // Submitted at once: the sequencer puts several in one log record.
    burst(&handle, 0..60).await;
    let applied = handle.position().await.expect("read").applied_index;
    drop(handle);
    pipeline.join();

    let mut whole: Vec<Applied> = Vec::new();
    committed_entries(dir.path(), 0, applied, |a| {
        whole.push(a);
        Ok(())
    })
    .expect("one walk");
    assert_eq!(whole.len() as u64, applied);
    let records = {
        let mut raft: Vec<u64> = whole.iter().map(|a| a.raft_index).collect();
        raft.dedup();
        raft
    };
    let inside_a_record: Vec<u64> = whole
        .windows(2)
        .filter(|w| w[0].raft_index == w[1].raft_index)
        .map(|w| w[0].index)
        .collect();
    assert!(
        records.len() < whole.len() && !inside_a_record.is_empty(),
        "some log record holds several commands ({} records, {} commands)",
        records.len(),
        whole.len()
    );

    // Stops inside a record, at its end, and one command at a time.
    let mid = inside_a_record[inside_a_record.len() / 2];
    let mut stops = vec![2, mid, mid + 1, mid + 2, applied];
    stops.sort_unstable();
    stops.dedup();
    let mut scratch = None;
    let mut pieces: Vec<Applied> = Vec::new();
    let mut after = 0;
    for through in stops {
        let replayed =
            committed_entries_from(dir.path(), after, through, None, &mut scratch, |a| {
                pieces.push(a);
                Ok(())
            })
            .expect("a walk");
        // From the genesis the first time, from where the last one
        // stopped after that.
        assert_eq!(replayed, through - after, "walk {after}..={through}");
        assert_eq!(scratch.as_ref().map(|s| s.applied_index()), Some(through));
        after = through;
    }
    assert_eq!(pieces, whole);

    // A kept state past the entries asked for is of no use: the walk
    // starts from the beginning again.
    let mut again = Vec::new();
    let replayed = committed_entries_from(dir.path(), 10, 12, None, &mut scratch, |a| {
        again.push(a);
        Ok(())
    })
    .expect("a walk");
    assert_eq!(replayed, 12);
    assert_eq!(again, whole[10..12]);
}

/// A walk told the Raft record of its starting command never reads a
/// snapshot past that record (restoring one costs as much as the state is
/// large, and it is too new anyway): here the newest snapshot cannot be
/// read at all, and only the walk told the record succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_told_its_record_reads_no_snapshot_past_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (pipeline, handle) = start_node(dir.path(), 25).await;
    orders(&handle, 0, 120).await;
    let applied = handle.position().await.expect("read").applied_index;
    drop(handle);
    pipeline.join();
    let kept = kept_snapshots(dir.path());
    let (older, newest) = match kept[..] {
        [.., older, newest] => (older, newest),
        _ => panic!("two snapshots kept: {kept:?}"),
    };
    // Every command from the older snapshot on, with its record.
    let snapshot_dir = dir.path().join("snapshots");
    let file = snapshots::load_at_or_before(&snapshot_dir, older)
        .expect("load")
        .expect("the older snapshot");
    let data = exchange_replication::snapshot_state(&file).expect("its state");
    let from = exchange_node::state::ServerState::restore(data)
        .expect("restores")
        .applied_index;
    let mut after_older = Vec::new();
    committed_entries(dir.path(), from, applied, |a| {
        after_older.push(a);
        Ok(())
    })
    .expect("a walk");
    let start = after_older
        .iter()
        .rev()
        .find(|a| a.raft_index < newest)
        .expect("a command between the two snapshots");
    let (after, after_raft) = (start.index, start.raft_index);

    let newest_file = snapshot_dir.join(format!("snapshot-{newest:020}.snap"));
    assert!(newest_file.exists(), "{newest_file:?}");
    std::fs::remove_file(&newest_file).expect("remove");
    std::fs::create_dir(&newest_file).expect("an unreadable snapshot in its place");

    let walk = |after_raft| {
        let mut entries = Vec::new();
        committed_entries_from(dir.path(), after, applied, after_raft, &mut None, |a| {
            entries.push(a);
            Ok(())
        })
        .map(|_| entries)
    };
    let told = walk(Some(after_raft)).expect("the walk told its record");
    let from_after: Vec<_> = after_older
        .into_iter()
        .filter(|a| a.index > after)
        .collect();
    assert_eq!(told, from_after);
    assert!(
        walk(None).is_err(),
        "a walk not told its record reads the newest snapshot first"
    );
}
