//! An attacker who reaches the Raft ports of a running three-node cluster
//! but holds no cluster key changes nothing: not the leader, not the
//! term. The same message sent with the key does depose the leader, which
//! shows the attack is a real one.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use exchange_node::cluster_key::ClusterKey;
use exchange_node::master_key::MasterKey;
use exchange_node::prometheus::Exposition;
use exchange_node::recovery;
use exchange_node::replication::{ClusterSettings, ReplicationStatus};
use exchange_node::{Pipeline, PipelineConfig};
use exchange_replication::raft::eraftpb::MessageType;
use exchange_replication::transport::{PeerAddr, Transport, TransportConfig};
use exchange_replication::{encode_message, Message};

const KEY: [u8; 32] = [3; 32];

fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    socket.local_addr().expect("addr")
}

fn peer_addrs(peers: &BTreeMap<u64, SocketAddr>) -> BTreeMap<u64, PeerAddr> {
    peers
        .iter()
        .map(|(id, addr)| (*id, (*addr).into()))
        .collect()
}

fn start(dir: &Path, id: u64, peers: &BTreeMap<u64, SocketAddr>) -> Pipeline {
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
        peers: peer_addrs(peers),
        tick: Duration::from_millis(20),
        election_ticks: 10,
        heartbeat_ticks: 2,
        join: false,
        preallocate_journal: false,
        key: Some(ClusterKey::from_bytes(KEY)),
    };
    recovery::start_cluster(dir, config, &settings)
        .expect("start node")
        .0
}

/// A heartbeat from a "leader" of a much later term: a follower takes
/// its word, a leader steps down to follow it.
fn usurping_heartbeat(from: u64, to: u64, term: u64) -> Message {
    let mut message = Message::default();
    message.set_msg_type(MessageType::MsgHeartbeat);
    message.from = from;
    message.to = to;
    message.term = term;
    message
}

fn statuses(nodes: &[Pipeline]) -> Vec<ReplicationStatus> {
    nodes
        .iter()
        .map(|n| n.handle.replication_status())
        .collect()
}

/// The leader and term every node agrees on, once they do.
fn settled(nodes: &[Pipeline]) -> (u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = statuses(nodes);
        let leader = all[0].leader_id;
        if leader.is_some()
            && all
                .iter()
                .all(|s| s.leader_id == leader && s.term == all[0].term)
        {
            return (leader.unwrap_or_default(), all[0].term);
        }
        assert!(Instant::now() < deadline, "no leader: {all:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_attacker_without_the_key_changes_nothing() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("dir")).collect();
    let peers: BTreeMap<u64, SocketAddr> = (1..=3).map(|id| (id, free_port())).collect();
    let nodes: Vec<Pipeline> = (1..=3u64)
        .map(|id| start(dirs[id as usize - 1].path(), id, &peers))
        .collect();
    let (leader, term) = settled(&nodes);
    let forged = term + 100;

    // Bare frames, as the transport took them before it authenticated.
    for (&id, &addr) in &peers {
        let bytes = encode_message(&usurping_heartbeat(4, id, forged));
        let mut frame = (bytes.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&bytes);
        if let Ok(mut raw) = TcpStream::connect(addr) {
            let _ = raw.write_all(&frame);
        }
    }
    // A node that speaks the protocol, with a key of its own.
    let (inbox, _) = crossbeam_channel::unbounded();
    let stranger = Transport::start(
        free_port(),
        &peer_addrs(&peers),
        inbox,
        TransportConfig::new(4, ClusterKey::from_bytes([9; 32])),
    )
    .expect("stranger");
    for _ in 0..25 {
        for &id in peers.keys() {
            stranger.send(usurping_heartbeat(4, id, forged));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    for status in statuses(&nodes) {
        assert_eq!(
            (status.leader_id, status.term),
            (Some(leader), term),
            "node {} was moved",
            status.node_id
        );
    }
    // Every node counted its refusals, and says so at /metrics.
    for node in &nodes {
        let mut page = Exposition::new();
        node.handle.metrics.write_metrics(&mut page);
        let text = page.finish();
        let refused = text
            .lines()
            .find_map(|l| l.strip_prefix("exchange_raft_handshakes_refused_total "))
            .and_then(|v| v.trim().parse::<u64>().ok());
        assert!(refused.is_some_and(|n| n >= 2), "{text}");
    }

    // The control: with the key, the same heartbeat deposes the leader.
    let (inbox, _) = crossbeam_channel::unbounded();
    let member = Transport::start(
        free_port(),
        &peer_addrs(&peers),
        inbox,
        TransportConfig::new(4, ClusterKey::from_bytes(KEY)),
    )
    .expect("member");
    let deadline = Instant::now() + Duration::from_secs(10);
    let index = usize::try_from(leader - 1).expect("small id");
    while nodes[index].handle.replication_status().term < forged {
        assert!(
            Instant::now() < deadline,
            "the control did not depose the leader"
        );
        member.send(usurping_heartbeat(4, leader, forged));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop((stranger, member));
    for node in nodes {
        node.join();
    }
}
