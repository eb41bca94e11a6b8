//! The reporter process's decisions on what the stream hands it: entries
//! the store holds are not written again, a snapshot is taken only if the
//! store holds every command in it (else a gap, and nothing written), and
//! a restart resumes from a kept state only if the store holds it.

use std::sync::Arc;
use std::time::Duration;

use exchange_node::stream::StreamItem;
use exchange_node::{CoreState, LogEntry, ServerState};
use exchange_replication::transport::ClusterKey;
use exchange_reporting::{Store, Target};

use super::run::Remote;
use super::{shared, state, RemoteConfig, Status};
use crate::worker::Worker;

const COMMANDS: &[&str] = &[
    concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5,"#,
        r#""price_collar_pct":"10","reference_price":"100.00"}"#,
    ),
    r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#,
    r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"10"}"#,
    r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"5"}"#,
    r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"1"}"#,
];

fn entry(line: &str) -> LogEntry {
    LogEntry::Core(exchange_codec::decode_command(line).expect(line))
}

/// Commands `range` of [`COMMANDS`] as Raft entry `raft_index`.
fn entries(raft_index: u64, range: std::ops::Range<usize>) -> StreamItem {
    let commands = COMMANDS[range].iter().map(|line| entry(line)).collect();
    StreamItem::Entries(vec![(raft_index, 1, commands)])
}

/// A replica's snapshot after the first `commands` of [`COMMANDS`].
fn snapshot(raft_index: u64, commands: usize) -> StreamItem {
    let mut core = CoreState::new();
    for (n, line) in COMMANDS[..commands].iter().enumerate() {
        core.apply(n as u64 + 1, &entry(line));
    }
    StreamItem::Install {
        raft_index,
        term: 1,
        data: core.snapshot().expect("snapshot"),
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    target: Target,
    config: RemoteConfig,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = Target::Sqlite(dir.path().join("reporting.sqlite"));
    let config = RemoteConfig {
        target: target.clone(),
        data_dir: dir.path().to_path_buf(),
        stream: Vec::new(),
        key: ClusterKey::from_bytes([7; 32]),
        process_id: 1,
        max_batch: 64,
        linger: Duration::ZERO,
        state_every: 1,
        ready_lag: 0,
    };
    Fixture {
        _dir: dir,
        target,
        config,
    }
}

/// A reporter's thread state on the fixture's store, from the genesis.
fn remote(fixture: &Fixture) -> Remote {
    let store = Store::open(&fixture.target).expect("store");
    let reporter = shared(&fixture.target, 0, 0, 0);
    let worker = Worker::writer(store, &fixture.config, reporter);
    let mut genesis = ServerState::new();
    genesis.raft_index = 1;
    Remote::new(
        worker,
        genesis,
        0,
        Arc::new(Status::default()),
        &fixture.config,
    )
}

fn audited(target: &Target) -> Vec<u64> {
    let mut store = Store::open(target).expect("store");
    let dump = store.dump().expect("dump");
    dump.audit.iter().map(|row| row.log_index).collect()
}

#[test]
fn a_snapshot_past_the_store_is_a_gap_and_nothing_is_written() {
    let fixture = fixture();
    let mut remote = remote(&fixture);
    let mut batch = Vec::new();
    remote.take(entries(2, 0..3), &mut batch).expect("entries");
    remote.flush(&mut batch);
    let fault = remote
        .take(snapshot(9, 5), &mut batch)
        .expect_err("a snapshot holding commands 4 and 5 is a gap");
    assert_eq!((fault.store_position, fault.snapshot_command), (3, 5));
    assert_eq!(fault.missing(), 2);
    assert!(
        fault.message.contains("commands 4 to 5"),
        "{}",
        fault.message
    );
    remote.flush(&mut batch);
    assert_eq!(audited(&fixture.target), vec![1, 2, 3]);
}

#[test]
fn a_snapshot_the_store_holds_is_resumed_from_without_writing_twice() {
    let fixture = fixture();
    let mut remote = remote(&fixture);
    let mut batch = Vec::new();
    remote.take(entries(2, 0..3), &mut batch).expect("entries");
    remote.flush(&mut batch);
    // The log after Raft index 3 (commands 3 on) follows the snapshot.
    remote
        .take(snapshot(3, 2), &mut batch)
        .expect("a usable snapshot");
    remote.take(entries(4, 2..5), &mut batch).expect("entries");
    let fresh: Vec<u64> = batch.iter().map(|applied| applied.index).collect();
    assert_eq!(fresh, vec![4, 5], "command 3 is in the store already");
    remote.flush(&mut batch);
    assert_eq!(audited(&fixture.target), vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_restart_resumes_from_a_kept_state_only_if_the_store_holds_it() {
    let fixture = fixture();
    let dir = &fixture.config.data_dir;
    let mut core = CoreState::new();
    for (n, line) in COMMANDS[..4].iter().enumerate() {
        core.apply(n as u64 + 1, &entry(line));
    }
    core.state.raft_index = 7;
    state::save(dir, &mut core.state, 2).expect("saved");
    assert_eq!(core.state.raft_index, 7, "the state is kept as it was");
    let (kept, term) = state::starting_state(dir, 4).expect("kept state");
    assert_eq!((kept.applied_index, kept.raft_index, term), (4, 7, 2));
    let (genesis, _) = state::starting_state(dir, 3).expect("genesis");
    assert_eq!((genesis.applied_index, genesis.raft_index), (0, 1));
}
