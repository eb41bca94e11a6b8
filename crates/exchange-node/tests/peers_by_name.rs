//! Replicas given each other by name (`localhost:PORT`) rather than by
//! address: one started after the others is reached once it listens, and
//! a voter added by name is learned, kept in the data directory as its
//! name, and caught up.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use exchange_node::cluster_key::ClusterKey;
use exchange_node::master_key::MasterKey;
use exchange_node::recovery;
use exchange_node::replication::{ClusterSettings, ReplicationStatus};
use exchange_node::{Pipeline, PipelineConfig};
use exchange_replication::transport::PeerAddr;
use exchange_replication::Membership;

const KEY: [u8; 32] = [5; 32];

/// `localhost` and a port nothing listens on yet.
fn named_port() -> PeerAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = socket.local_addr().expect("addr").port();
    format!("localhost:{port}").parse().expect("a name")
}

fn start(dir: &Path, id: u64, peers: &BTreeMap<u64, PeerAddr>, join: bool) -> Pipeline {
    let config = PipelineConfig {
        submit_queue: 1_024,
        core_queue: 64,
        events_buffer: 1_024,
        snapshot_every: 0,
        snapshot_dir: dir.join("unused"),
        master_key: MasterKey::from_bytes([7; 32]),
    };
    let settings = ClusterSettings {
        node_id: id,
        peers: peers.clone(),
        tick: Duration::from_millis(20),
        election_ticks: 10,
        heartbeat_ticks: 2,
        join,
        preallocate_journal: false,
        key: Some(ClusterKey::from_bytes(KEY)),
    };
    recovery::start_cluster(dir, config, &settings)
        .expect("start node")
        .0
}

/// Waits until `done` holds of every node's status.
fn until(nodes: &[&Pipeline], what: &str, done: impl Fn(&[ReplicationStatus]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all: Vec<ReplicationStatus> = nodes
            .iter()
            .map(|n| n.handle.replication_status())
            .collect();
        if done(&all) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {all:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn one_leader(all: &[ReplicationStatus]) -> bool {
    let leader = all[0].leader_id;
    leader.is_some()
        && all
            .iter()
            .all(|s| s.leader_id == leader && s.term == all[0].term)
}

#[test]
fn replicas_named_by_host_name_elect_and_take_a_voter_added_by_name() {
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().expect("dir")).collect();
    let peers: BTreeMap<u64, PeerAddr> = (1..=3).map(|id| (id, named_port())).collect();
    let first = start(dirs[0].path(), 1, &peers, false);
    let second = start(dirs[1].path(), 2, &peers, false);
    until(&[&first, &second], "two of three elect", one_leader);
    // The third starts after the others tried it for a while.
    let third = start(dirs[2].path(), 3, &peers, false);
    let three = [&first, &second, &third];
    until(&three, "the third follows", |all| {
        one_leader(all) && all.iter().all(|s| s.voters == [1, 2, 3])
    });

    let fourth_addr = named_port();
    let mut with_fourth = peers.clone();
    with_fourth.insert(4, fourth_addr.clone());
    let fourth = start(dirs[3].path(), 4, &with_fourth, true);
    let leader = first
        .handle
        .replication_status()
        .leader_id
        .expect("a leader");
    let leading = three[usize::try_from(leader - 1).expect("small id")];
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime
        .block_on(
            leading
                .handle
                .change_membership(Membership::AddVoter(4), Some(fourth_addr.clone())),
        )
        .expect("proposed");
    until(
        &[&first, &second, &third, &fourth],
        "the fourth joins",
        |all| {
            one_leader(all)
                && all.iter().all(|s| s.voters == [1, 2, 3, 4])
                && all.iter().all(|s| s.commit_index == all[0].commit_index)
        },
    );
    for dir in &dirs[..3] {
        let learned = std::fs::read_to_string(recovery::learned_peers_file(dir.path()))
            .expect("learned peers");
        assert_eq!(learned, format!("4={fourth_addr}\n"));
    }
}
