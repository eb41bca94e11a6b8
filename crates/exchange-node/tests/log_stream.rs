//! The log stream: a mirror that follows a node's committed log, from
//! the start or from a snapshot, and from one server or the next, reaches
//! the node's state exactly; a mirror without the cluster key gets
//! nothing.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use exchange_node::cluster_key::ClusterKey;
use exchange_node::master_key::MasterKey;
use exchange_node::recovery;
use exchange_node::stream::{follow, Follower, StreamItem, StreamServer, PROTOCOL};
use exchange_node::{CoreState, Handle, LogEntry, Pipeline, PipelineConfig};
use exchange_replication::transport::channel::{Channel, ChannelError};
use exchange_replication::transport::PeerAddr;
use tokio::runtime::Runtime;

const KEY: [u8; 32] = [5; 32];
/// Long enough for anything this test waits for; a hang fails instead.
const PATIENCE: Duration = Duration::from_secs(60);

fn key() -> ClusterKey {
    ClusterKey::from_bytes(KEY)
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().expect("addr")
}

/// A port nothing listens on.
fn closed_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind(any_port()).expect("bind");
    socket.local_addr().expect("addr")
}

fn start(dir: &Path, snapshot_every: u64) -> Pipeline {
    let config = PipelineConfig {
        submit_queue: 4_096,
        core_queue: 64,
        events_buffer: 4_096,
        snapshot_every,
        snapshot_dir: dir.join("unused"),
        master_key: MasterKey::from_bytes([7; 32]),
    };
    recovery::start(dir, config).expect("start node").0
}

/// The `n`-th of a day's commands: accounts, a listing and deposits
/// first, then orders on both sides that trade.
fn nth_command(n: u64) -> LogEntry {
    let account = |n| LogEntry::CreateAccount {
        ts: 0,
        api_key: format!("key-{n}"),
        legacy_secret: None,
    };
    common::nth_command(n, account, false)
}

/// Submits commands `from..to` in groups (each group a few Raft entries)
/// and waits until all are applied.
fn submit(runtime: &Runtime, handle: &Handle, from: u64, to: u64) {
    for group in (from..to).collect::<Vec<_>>().chunks(37) {
        let answers: Vec<_> = group
            .iter()
            .map(|&n| handle.enqueue_entry(nth_command(n)).expect("queued"))
            .collect();
        runtime.block_on(async {
            for answer in answers {
                answer.await.expect("applied");
            }
        });
    }
}

/// The node's Raft index applied and state hash.
fn node_hash(runtime: &Runtime, handle: &Handle) -> (u64, String) {
    let (position, hash) = runtime.block_on(handle.state_hash()).expect("hash");
    (position.raft_index, hash)
}

/// Applies what the follower hands over until the mirror is at
/// `raft_index`; returns the items' kinds, in order ('S' for a snapshot,
/// 'E' for entries).
fn mirror_until(follower: &Follower, mirror: &mut CoreState, raft_index: u64) -> String {
    let mut kinds = String::new();
    while mirror.state.raft_index < raft_index {
        let item = follower.items().recv_timeout(PATIENCE).unwrap_or_else(|_| {
            panic!(
                "no item: the mirror is at {}, not {raft_index}; following {:?}",
                mirror.state.raft_index,
                follower.following()
            )
        });
        if let StreamItem::Entries(entries) = &item {
            let first = entries.first().expect("not empty").0;
            assert!(
                first == mirror.state.raft_index + 1 || mirror.state.raft_index <= 1,
                "entries from {first} after {}",
                mirror.state.raft_index
            );
        }
        kinds.push(match item {
            StreamItem::Install { .. } => 'S',
            StreamItem::Entries(_) => 'E',
        });
        item.apply_to(mirror).expect("applies");
    }
    assert_eq!(mirror.state.raft_index, raft_index);
    kinds
}

#[test]
fn a_mirror_follows_the_log_live_and_from_the_next_server() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = Runtime::new().expect("runtime");
    let pipeline = start(dir.path(), 0);
    let handle = pipeline.handle.clone();
    let first = StreamServer::start(any_port(), key(), 1, dir.path().into(), handle.clone())
        .expect("server");
    let second = StreamServer::start(any_port(), key(), 1, dir.path().into(), handle.clone())
        .expect("server");
    submit(&runtime, &handle, 0, 150);

    // A replica whose name does not resolve (`.invalid` never does) and
    // one that does not answer are passed over; a name that resolves is
    // followed.
    let first_by_name: PeerAddr = format!("localhost:{}", first.local_addr().port())
        .parse()
        .expect("name");
    let replicas = vec![
        "replica-0.invalid:7200".parse().expect("name"),
        closed_port().into(),
        first_by_name.clone(),
        second.local_addr().into(),
    ];
    let follower = follow(replicas, key(), 100, 0);
    let mut mirror = CoreState::new();
    let (at, hash) = node_hash(&runtime, &handle);
    let kinds = mirror_until(&follower, &mut mirror, at);
    assert!(!kinds.contains('S'), "no snapshot on disk: {kinds}");
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);
    assert_eq!(follower.following(), Some(&first_by_name));

    // Live: what the node applies next reaches the mirror.
    submit(&runtime, &handle, 150, 300);
    let (at, hash) = node_hash(&runtime, &handle);
    mirror_until(&follower, &mut mirror, at);
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);
    assert_eq!(follower.delivered_raft_index(), at);

    // The server goes away: the follower resumes from the next one.
    drop(first);
    submit(&runtime, &handle, 300, 400);
    let (at, hash) = node_hash(&runtime, &handle);
    mirror_until(&follower, &mut mirror, at);
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);
    assert_eq!(follower.following(), Some(&second.local_addr().into()));
    assert_eq!(follower.behind(), 0);

    // A mirror that has the first entries asks for the rest only.
    let from = at / 2;
    assert!(from > 2, "the log has a few entries: {at}");
    let later = follow(vec![second.local_addr().into()], key(), 101, from);
    let item = later.items().recv_timeout(PATIENCE).expect("an item");
    let StreamItem::Entries(entries) = item else {
        panic!("entries expected, not {item:?}");
    };
    assert_eq!(entries.first().map(|e| e.0), Some(from));
    follower.stop();
    later.stop();
    drop(second);
    drop(handle);
    pipeline.join();
}

#[test]
fn a_mirror_from_nothing_starts_from_the_newest_snapshot() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = Runtime::new().expect("runtime");
    let pipeline = start(dir.path(), 40);
    let handle = pipeline.handle.clone();
    let server = StreamServer::start(any_port(), key(), 1, dir.path().into(), handle.clone())
        .expect("server");
    submit(&runtime, &handle, 0, 300);
    let snapshots = std::fs::read_dir(recovery::snapshot_dir(dir.path()))
        .expect("snapshots")
        .count();
    assert!(snapshots > 0, "snapshots were written");

    let follower = follow(vec![server.local_addr().into()], key(), 100, 0);
    let mut mirror = CoreState::new();
    let (at, hash) = node_hash(&runtime, &handle);
    let kinds = mirror_until(&follower, &mut mirror, at);
    assert!(kinds.starts_with('S'), "{kinds}");
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);

    submit(&runtime, &handle, 300, 420);
    let (at, hash) = node_hash(&runtime, &handle);
    mirror_until(&follower, &mut mirror, at);
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);
    follower.stop();
    drop(server);
    drop(handle);
    pipeline.join();
}

/// The log before the newest snapshot compacted away, as Raft does once
/// snapshots cover it: the journal starts right after the snapshot.
fn compact_to_newest_snapshot(dir: &Path) -> u64 {
    let snapshot = exchange_node::log_files::newest_snapshot(dir)
        .expect("read")
        .expect("a snapshot");
    let journal = recovery::journal_dir(dir);
    for item in std::fs::read_dir(&journal).expect("journal") {
        let path = item.expect("entry").path();
        if path.extension().is_some_and(|e| e == "log") {
            std::fs::remove_file(path).expect("remove");
        }
    }
    exchange_journal::Journal::open(&journal, snapshot.raft_index + 1, 1 << 20).expect("open");
    snapshot.raft_index
}

#[test]
fn a_mirror_whose_next_entry_is_compacted_gets_the_snapshot_first() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = Runtime::new().expect("runtime");
    let pipeline = start(dir.path(), 40);
    submit(&runtime, &pipeline.handle, 0, 200);
    pipeline.join();
    let snapshot = compact_to_newest_snapshot(dir.path());

    let pipeline = start(dir.path(), 0);
    let handle = pipeline.handle.clone();
    submit(&runtime, &handle, 200, 260);
    let server = StreamServer::start(any_port(), key(), 1, dir.path().into(), handle.clone())
        .expect("server");
    // It has applied the first entries, and needs the next, long gone.
    let follower = follow(vec![server.local_addr().into()], key(), 100, 3);
    let first = follower.items().recv_timeout(PATIENCE).expect("an item");
    let StreamItem::Install { raft_index, .. } = first else {
        panic!("a snapshot expected, not {first:?}");
    };
    assert_eq!(raft_index, snapshot);
    let mut mirror = CoreState::new();
    first.apply_to(&mut mirror).expect("installs");
    let (at, hash) = node_hash(&runtime, &handle);
    assert!(at > snapshot);
    let kinds = mirror_until(&follower, &mut mirror, at);
    assert!(!kinds.contains('S'), "{kinds}");
    assert_eq!(mirror.state.state_hash().expect("hash"), hash);
    follower.stop();
    drop(server);
    drop(handle);
    pipeline.join();
}

#[test]
fn a_follower_without_the_cluster_key_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let runtime = Runtime::new().expect("runtime");
    let pipeline = start(dir.path(), 0);
    let handle = pipeline.handle.clone();
    let server = StreamServer::start(any_port(), key(), 1, dir.path().into(), handle.clone())
        .expect("server");
    submit(&runtime, &handle, 0, 20);
    let wrong = ClusterKey::from_bytes([6; 32]);
    let refused = Channel::connect(
        server.local_addr(),
        PROTOCOL,
        &wrong,
        100,
        Duration::from_secs(5),
    );
    assert!(
        matches!(refused, Err(ChannelError::WrongKey)),
        "{refused:?}"
    );
    let other_protocol = Channel::connect(
        server.local_addr(),
        *b"EXINGR01",
        &key(),
        100,
        Duration::from_secs(5),
    );
    assert!(
        matches!(other_protocol, Err(ChannelError::WrongProtocol)),
        "{other_protocol:?}"
    );

    // The follower keeps trying and is handed nothing.
    let follower = follow(vec![server.local_addr().into()], wrong, 100, 0);
    assert!(follower
        .items()
        .recv_timeout(Duration::from_secs(2))
        .is_err());
    assert_eq!(follower.delivered_raft_index(), 0);
    follower.stop();
    drop(server);
    drop(handle);
    pipeline.join();
}
