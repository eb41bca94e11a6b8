//! What the core applies is published whole and in order: every command
//! submitted is answered, the broadcast carries every applied entry once,
//! in log order, across many batches handed from the core thread to the
//! publisher, with the very outcome its sender was answered with; and a
//! stop under load leaves nothing applied unpublished before the
//! broadcast closes. The history, kept beside the publication, is read
//! and written to snapshots as of the same command as the state.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use exchange_node::master_key::MasterKey;
use exchange_node::replication::decode_entry_payload;
use exchange_node::{log_files, recovery};
use exchange_node::{
    Applied, CoreState, Handle, LogEntry, MarketQuery, OrderQuery, PipelineConfig,
};
use tokio::sync::broadcast::error::RecvError;

const TASKS: u64 = 6;
const GROUPS: u64 = 12;
const GROUP: u64 = 40;
/// Commands queued just before the stop, without waiting for them.
const BURST: u64 = 600;

fn account(tag: &str, n: u64) -> LogEntry {
    LogEntry::CreateAccount {
        ts: 0,
        api_key: format!("key-{tag}-{n}"),
        legacy_secret: None,
    }
}

/// One client's load: groups of commands, every fifth detached (no one
/// waits for it), the others awaited once the group is queued. The last
/// of a group is awaited, so the detached ones before it were applied
/// too (one caller's commands are sequenced in the order queued).
async fn client(handle: Handle, task: u64) -> Vec<Arc<Applied>> {
    let mut answered = Vec::new();
    for group in 0..GROUPS {
        let mut waiting = Vec::new();
        for n in 0..GROUP {
            let entry = account(&format!("{task}-{group}"), n);
            if n % 5 == 2 {
                handle.submit_detached(entry).expect("queued");
            } else {
                waiting.push(handle.enqueue_entry(entry).expect("queued"));
            }
        }
        for answer in waiting {
            answered.push(answer.await.expect("every command is answered"));
        }
    }
    answered
}

/// Everything the broadcast carries until it closes, gathered on a
/// thread of its own.
fn gather(handle: &Handle) -> std::thread::JoinHandle<Vec<Arc<Applied>>> {
    let mut events = handle.subscribe();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        loop {
            match events.blocking_recv() {
                Ok(applied) => seen.push(applied),
                Err(RecvError::Closed) => return seen,
                Err(RecvError::Lagged(n)) => panic!("the subscriber lost {n} entries"),
            }
        }
    })
}

/// The outcomes `TASKS` clients were answered with.
fn load(runtime: &tokio::runtime::Runtime, handle: &Handle) -> Vec<Arc<Applied>> {
    runtime.block_on(async {
        let clients: Vec<_> = (0..TASKS)
            .map(|task| tokio::spawn(client(handle.clone(), task)))
            .collect();
        let mut answered = Vec::new();
        for client in clients {
            answered.extend(client.await.expect("client"));
        }
        answered
    })
}

/// Each answer is the very outcome published at its index, and no index
/// is answered twice.
fn check_answers(answered: &[Arc<Applied>], seen: &[Arc<Applied>]) {
    let mut indices = Vec::new();
    for outcome in answered {
        let index = usize::try_from(outcome.index).expect("index");
        let published = seen.get(index - 1).expect("an answered entry is published");
        assert!(Arc::ptr_eq(published, outcome), "entry {index}");
        indices.push(index);
    }
    indices.sort_unstable();
    indices.dedup();
    assert_eq!(indices.len(), answered.len(), "each answered once");
}

/// The pipeline both tests start: its broadcast holds every entry of a
/// run, so a receiver that misses one shows a lost publication, not a lag.
fn config(dir: &std::path::Path, snapshot_every: u64, snapshot_dir: &str) -> PipelineConfig {
    PipelineConfig {
        submit_queue: 4_096,
        core_queue: 16,
        events_buffer: 1 << 16,
        snapshot_every,
        snapshot_dir: dir.join(snapshot_dir),
        master_key: MasterKey::from_bytes([3; 32]),
    }
}

#[test]
fn every_command_is_answered_and_published_in_log_order_up_to_the_stop() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), 0, "snapshots");
    let (pipeline, _) = recovery::start(dir.path(), config).expect("start node");
    let handle = pipeline.handle.clone();
    let metrics = handle.metrics.clone();
    let subscriber = gather(&handle);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut answered = load(&runtime, &handle);
    let loaded = TASKS * GROUPS * GROUP;
    assert_eq!(answered.len() as u64, loaded - TASKS * GROUPS * 8);
    assert_eq!(
        metrics.applied_index.load(Ordering::Relaxed),
        loaded,
        "every command of the load was applied"
    );

    // A burst still in the pipeline when every handle goes.
    let burst: Vec<_> = (0..BURST)
        .map(|n| handle.enqueue_entry(account("burst", n)).expect("queued"))
        .collect();
    drop(handle);
    pipeline.join();
    let burst_applied: Vec<_> = runtime.block_on(async {
        let mut applied = Vec::new();
        for answer in burst {
            // Dropped unanswered only if it never committed.
            if let Ok(outcome) = answer.await {
                applied.push(outcome);
            }
        }
        applied
    });
    answered.extend(burst_applied.iter().cloned());

    let seen = subscriber.join().expect("the broadcast closed");
    let applied = metrics.applied_index.load(Ordering::Relaxed);
    assert_eq!(seen.len() as u64, applied, "every applied entry published");
    assert_eq!(applied, loaded + burst_applied.len() as u64);
    assert_eq!(metrics.commands.load(Ordering::Relaxed), applied);
    for (expected, entry) in (1..).zip(&seen) {
        assert_eq!(entry.index, expected, "published in log order, once");
    }
    assert!(
        seen.windows(2).all(|w| w[0].raft_index <= w[1].raft_index),
        "Raft entries in order"
    );
    let raft_entries = seen.iter().map(|e| e.raft_index).collect::<BTreeSet<_>>();
    assert!(
        raft_entries.len() > 20,
        "many batches: {}",
        raft_entries.len()
    );
    check_answers(&answered, &seen);
}

/// The `n`-th of a day's commands: accounts, a listing and deposits
/// first, then orders on both sides that trade, and cancels of some.
fn nth_command(n: u64) -> LogEntry {
    common::nth_command(n, |n| account("trader", n), true)
}

/// What the reads of the history answer: every account's open orders and
/// the market with its recent trades.
fn history_reads(
    runtime: &tokio::runtime::Runtime,
    handle: &Handle,
) -> (exchange_node::reads::Orders, exchange_node::reads::Markets) {
    runtime.block_on(async {
        let orders = handle
            .orders(OrderQuery::Open {
                accounts: vec![1, 2, 3, 4],
                symbol: None,
            })
            .await
            .expect("orders");
        let markets = handle
            .markets(MarketQuery {
                symbol: None,
                depth: 10,
                trades: 1_000,
            })
            .await
            .expect("markets");
        (orders, markets)
    })
}

/// The history as of each Raft index, replaying the whole log.
fn histories_by_raft_index(dir: &std::path::Path) -> BTreeMap<u64, (u64, serde_json::Value)> {
    let mut core = CoreState::new();
    let mut histories = BTreeMap::new();
    let first = log_files::first_raft_index(dir)
        .expect("journal")
        .expect("entries");
    // The snapshot left at the stop is as of the last entry applied.
    let last = log_files::newest_snapshot(dir)
        .expect("read")
        .expect("a snapshot")
        .raft_index;
    log_files::for_each_committed(dir, first, last, |record| {
        for entry in decode_entry_payload(&record.payload).expect("a batch") {
            core.apply(core.state.applied_index + 1, &entry);
        }
        let history = serde_json::to_value(&core.history).expect("json");
        histories.insert(record.index, (core.state.applied_index, history));
        Ok::<(), exchange_journal::JournalError>(())
    })
    .expect("the whole log");
    histories
}

/// Copies the snapshots written since the last call to `kept`'s
/// snapshot directory, before the node prunes them.
fn keep_snapshots(dir: &std::path::Path, kept: &std::path::Path) {
    let into = recovery::snapshot_dir(kept);
    std::fs::create_dir_all(&into).expect("mkdir");
    // None before the first.
    let Ok(items) = std::fs::read_dir(recovery::snapshot_dir(dir)) else {
        return;
    };
    for item in items {
        let path = item.expect("entry").path();
        let Some(name) = path.file_name() else {
            continue;
        };
        // A file being written has a name of its own until it is whole;
        // one pruned meanwhile is simply not kept.
        if path.extension().is_some_and(|e| e == "tmp") || into.join(name).exists() {
            continue;
        }
        let _ = std::fs::copy(&path, into.join(name));
    }
}

#[test]
fn snapshots_and_reads_see_the_history_as_of_the_state() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), 37, "unused");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (pipeline, _) = recovery::start(dir.path(), config.clone()).expect("start node");
    let handle = pipeline.handle.clone();
    let kept = dir.path().join("kept");
    for group in (0..900).collect::<Vec<_>>().chunks(45) {
        keep_snapshots(dir.path(), &kept);
        let answers: Vec<_> = group
            .iter()
            .map(|&n| handle.enqueue_entry(nth_command(n)).expect("queued"))
            .collect();
        runtime.block_on(async {
            for (answer, &n) in answers.into_iter().zip(group) {
                let outcome = answer.await.expect("applied");
                if n >= 9 && !n.is_multiple_of(7) {
                    let order = outcome.order.as_ref().expect("a place's order");
                    assert_eq!(order.client_order_id.as_str(), format!("o{n}"));
                }
            }
        });
    }
    let before = history_reads(&runtime, &handle);
    assert!(!before.0.orders.is_empty(), "open orders");
    let trades = before.1.markets.first().map_or(0, |m| m.trades.len());
    assert!(trades > 50, "trades: {trades}");
    drop(handle);
    pipeline.join();
    keep_snapshots(dir.path(), &kept);

    // Every snapshot holds the history as of its own state's entry.
    let histories = histories_by_raft_index(dir.path());
    let mut checked = 0;
    let mut below = u64::MAX;
    while let Some(snapshot) = log_files::snapshot_at_or_before(&kept, below).expect("read") {
        let restored = CoreState::restore(&snapshot.data).expect("restores");
        let (applied, history) = &histories[&snapshot.raft_index];
        assert_eq!(restored.state.applied_index, *applied);
        assert_eq!(
            &serde_json::to_value(&restored.history).expect("json"),
            history,
            "snapshot at {}",
            snapshot.raft_index
        );
        checked += 1;
        below = snapshot.raft_index - 1;
    }
    assert!(checked > 5, "snapshots: {checked}");

    // A restart reads what the node read before it stopped.
    let (pipeline, _) = recovery::start(dir.path(), config).expect("restart");
    assert_eq!(history_reads(&runtime, &pipeline.handle), before);
    pipeline.join();
}
