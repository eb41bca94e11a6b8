//! Batch encoding and peer parsing.
use super::*;

fn account(n: u64) -> LogEntry {
    LogEntry::CreateAccount {
        ts: n,
        api_key: format!("key{n}"),
        legacy_secret: None,
    }
}

#[test]
fn core_commands_and_accounts_share_a_batch() {
    let place = exchange_codec::decode_command(concat!(
        r#"{"cmd":"place","account":1,"client_order_id":"c\"1","symbol":"BTC-USD","#,
        r#""side":"buy","type":"limit","price":"100.5","qty":"1.5","tif":"gtc","#,
        r#""post_only":false,"stp":"cancel_newest","ts":4}"#,
    ))
    .expect("a place line");
    // A client order id may be any word, the gateway command's name too:
    // such an order once stopped every follower that read it.
    let named = exchange_codec::decode_command(concat!(
        r#"{"cmd":"place","account":1,"client_order_id":"create_account","symbol":"BTC-USD","#,
        r#""side":"sell","type":"limit","price":"101","qty":"1","tif":"gtc","post_only":false,"#,
        r#""stp":"cancel_newest","ts":5}"#,
    ))
    .expect("a place line");
    let entries = vec![
        account(1),
        LogEntry::Core(place),
        LogEntry::Core(named),
        account(2),
    ];
    assert_eq!(
        decode_batch(&encode_batch(&entries).unwrap()).unwrap(),
        entries
    );
    // The gateway command is read strictly, as core commands are.
    let odd = br#"{"cmd":"create_account","ts":1,"api_key":"k","api_secret":"s","extra":1}"#;
    assert!(LogEntry::decode(odd).is_err());
    let unknown = br#"{"cmd":"open_account","ts":1}"#;
    assert!(matches!(
        LogEntry::decode(unknown),
        Err(EntryError::Command(_))
    ));
}

/// A journal written before commands were binary holds them as JSON
/// lines; entries of both forms read alike, and new ones are binary.
#[test]
fn json_and_binary_commands_read_alike() {
    let line = concat!(
        r#"{"cmd":"place","account":7,"client_order_id":"a1","symbol":"BTC-USD","#,
        r#""side":"buy","type":"limit","price":"100.5","qty":"2","tif":"gtc","#,
        r#""post_only":false,"stp":"cancel_newest","ts":9}"#,
    );
    let from_json = LogEntry::decode(line.as_bytes()).expect("a JSON entry");
    let binary = from_json.encode().unwrap();
    assert!(exchange_codec::binary::is_binary(&binary));
    assert!(binary.len() < line.len());
    assert_eq!(LogEntry::decode(&binary).unwrap(), from_json);
    assert_eq!(
        LogEntry::decode(&from_json.to_json().unwrap()).unwrap(),
        from_json
    );

    let mut mixed = Vec::new();
    mixed.extend_from_slice(&2u32.to_le_bytes());
    for body in [line.as_bytes(), &binary] {
        mixed.extend_from_slice(&(body.len() as u32).to_le_bytes());
        mixed.extend_from_slice(body);
    }
    assert_eq!(
        decode_batch(&mixed).unwrap(),
        vec![from_json.clone(), from_json]
    );

    let mut damaged = binary.clone();
    damaged[1] = 0;
    assert!(matches!(
        LogEntry::decode(&damaged),
        Err(EntryError::Binary(_))
    ));
}

#[test]
fn batches_round_trip_and_damage_is_refused() {
    let entries: Vec<LogEntry> = (1..=3).map(account).collect();
    let bytes = encode_batch(&entries).unwrap();
    assert_eq!(decode_batch(&bytes).unwrap(), entries);
    assert!(decode_batch(&encode_batch(&[]).unwrap())
        .unwrap()
        .is_empty());
    assert!(matches!(
        decode_batch(&bytes[..bytes.len() - 1]),
        Err(BatchError::Truncated)
    ));
    let mut longer = bytes.clone();
    longer.push(b' ');
    assert!(matches!(
        decode_batch(&longer),
        Err(BatchError::Trailing(1))
    ));
    let mut huge_count = bytes.clone();
    huge_count[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        decode_batch(&huge_count),
        Err(BatchError::Truncated)
    ));
    let mut payload = vec![0u8];
    payload.extend_from_slice(&bytes);
    assert_eq!(decode_entry_payload(&payload).unwrap(), entries);
    assert!(decode_entry_payload(&[0]).unwrap().is_empty());
    assert!(decode_entry_payload(&[1, 9, 9]).unwrap().is_empty());
    assert!(matches!(decode_entry_payload(&[]), Err(BatchError::Empty)));
}

#[test]
fn peers_parse_strictly() {
    let peers = parse_peers(&["1=127.0.0.1:7001", " 2 = 127.0.0.1:7002 "]).unwrap();
    assert_eq!(peers.len(), 2);
    assert_eq!(
        parse_peers(&["1=127.0.0.1:7001", "1=127.0.0.1:7002"]),
        Err(ClusterError::DuplicatePeer(1))
    );
    assert_eq!(
        parse_peers(&["0=127.0.0.1:7001"]),
        Err(ClusterError::ZeroId)
    );
    assert!(matches!(
        parse_peers(&["127.0.0.1:7001"]),
        Err(ClusterError::BadPeer(_))
    ));
    assert!(matches!(
        parse_peers(&["1=nowhere"]),
        Err(ClusterError::BadAddress {
            source: AddrError::NoPort(_),
            ..
        })
    ));
    assert!(matches!(
        parse_peers(&["1=::1:7001"]),
        Err(ClusterError::BadAddress {
            source: AddrError::UnbracketedIpv6(_),
            ..
        })
    ));
}

#[test]
fn peers_keep_names_unresolved_and_literals_as_they_are() {
    // `.invalid` never resolves: a peer list naming it is still valid.
    let peers = parse_peers(&[
        "1=replica-1.replica.invalid:7000",
        "2=10.0.0.2:7000",
        "3=[fd00::3]:7000",
    ])
    .unwrap();
    let text: Vec<String> = peers.values().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "replica-1.replica.invalid:7000",
            "10.0.0.2:7000",
            "[fd00::3]:7000"
        ]
    );
    assert_eq!(peers[&1].name(), Some("replica-1.replica.invalid"));
    assert_eq!(peers[&2].socket_addr(), Some(([10, 0, 0, 2], 7000).into()));
}

#[test]
fn learned_peers_are_saved_as_text_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learned_peers");
    let peers = parse_peers(&["4=replica-4.replica:7000", "5=10.0.0.5:7000"]).unwrap();
    save_learned_peers(&path, &peers).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, "4=replica-4.replica:7000\n5=10.0.0.5:7000\n");
    assert_eq!(load_learned_peers(&path), peers);
}

#[tokio::test]
async fn a_lone_voter_leads_and_numbers_commands_densely_in_rising_raft_entries() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::sequencer::PipelineConfig {
        submit_queue: 64,
        core_queue: 16,
        events_buffer: 64,
        snapshot_every: 0,
        snapshot_dir: dir.path().join("snapshots"),
        master_key: crate::master_key::MasterKey::from_bytes([1; 32]),
    };
    let (pipeline, _) = crate::recovery::start(dir.path(), config).unwrap();
    let handle = pipeline.handle.clone();
    let status = handle.replication_status();
    assert_eq!(
        (status.role.as_str(), status.voters.clone()),
        ("leader", vec![1])
    );
    let mut raft_indices = Vec::new();
    for n in 1..=3 {
        let applied = handle.submit(account(n)).await.unwrap();
        assert_eq!(applied.index, n, "commands are numbered densely");
        raft_indices.push(applied.raft_index);
    }
    assert!(
        raft_indices.windows(2).all(|w| w[0] < w[1]),
        "{raft_indices:?}"
    );
    drop(handle);
    pipeline.join();
}

/// A node whose state may lack what the cluster committed says so: a new
/// leader is caught up only once its first entry has committed and the
/// core has applied up to it. And it notes when it became leader, the
/// moment before which writes may have gone to the previous one.
#[test]
fn a_new_leader_is_caught_up_once_its_first_entry_is_applied() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = ReplicaConfig::new(1, vec![1]);
    let (mut node, _, _) = ReplicaNode::open(
        &dir.path().join("log"),
        &dir.path().join("snapshots"),
        &config,
    )
    .expect("open");
    node.campaign().expect("campaign");
    assert!(node.is_leader());
    let shared = ClusterShared::default();
    assert_eq!(shared.leader_since_ms(), 0, "never led");
    let before_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    // The core has applied all the node knew committed at start.
    shared.raft_applied.store(node.applied(), Ordering::Release);
    shared.publish(&node);
    assert_eq!(node.applied(), node.commit_index());
    assert!(!node.committed_in_current_term());
    assert!(!shared.caught_up(), "a leader before its first commit");
    assert!(!shared.settled(), "a new leader before its first commit");
    // The time it became leader: writes signed earlier may have gone to
    // the previous leader.
    let since = shared.leader_since_ms();
    assert!(since >= before_ms, "{since} < {before_ms}");
    shared.publish(&node);
    assert_eq!(shared.leader_since_ms(), since, "still the same leadership");
    for _ in 0..4 {
        node.handle_ready_now(&mut |_| {}, &mut |_, _| {})
            .expect("ready");
    }
    assert!(node.committed_in_current_term());
    shared.publish(&node);
    assert!(!shared.caught_up(), "committed but not yet applied");
    assert!(
        !shared.settled(),
        "a new leader before it applied its first commit"
    );
    shared
        .raft_applied
        .store(node.commit_index(), Ordering::Release);
    assert!(shared.caught_up());
    assert!(shared.settled());
    // Under load the commit index runs ahead of the core: not caught up,
    // but a key still missing was never created.
    shared
        .complete_at
        .store(node.commit_index() + 5, Ordering::Release);
    assert!(!shared.caught_up());
    assert!(shared.settled(), "a busy node stays settled");
}

/// A replica restarted from disk holds only the commit index it saved,
/// which may be behind what the cluster committed (a key created since).
/// Until it hears a leader it must not settle, or it would call that key
/// unknown (401) rather than not applied yet (503); once the leader's
/// commit index reaches it, it settles after the core applies up to there.
#[test]
fn a_restarted_replica_settles_only_after_hearing_the_leader() {
    use exchange_replication::raft::eraftpb::{Entry, MessageType};
    use exchange_replication::Message;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = ReplicaConfig::new(2, vec![1, 2, 3]);
    let (mut node, _, _) = ReplicaNode::open(
        &dir.path().join("log"),
        &dir.path().join("snapshots"),
        &config,
    )
    .expect("open");
    let shared = ClusterShared::default();
    // The core has replayed all the node saved as committed.
    shared
        .raft_applied
        .store(node.commit_index(), Ordering::Release);
    shared.publish(&node);
    assert_eq!(node.leader(), None);
    assert!(
        !shared.settled(),
        "no leader heard: what it saved may be stale"
    );
    // The leader sends what was committed while this node was down,
    // after the entry the node saved last.
    let saved = node.status().last_index;
    let mut append = Message::default();
    append.set_msg_type(MessageType::MsgAppend);
    append.from = 1;
    append.to = 2;
    append.term = node.term();
    append.index = saved;
    append.log_term = node.term();
    append.commit = saved + 3;
    append.entries = (saved + 1..=saved + 3)
        .map(|index| Entry {
            index,
            term: node.term(),
            ..Entry::default()
        })
        .collect();
    node.step(append).expect("step");
    assert_eq!(node.leader(), Some(1));
    assert_eq!(node.commit_index(), saved + 3);
    shared.publish(&node);
    assert!(
        !shared.settled(),
        "the leader's commits are not applied yet"
    );
    shared.raft_applied.store(saved + 3, Ordering::Release);
    assert!(shared.settled());
    // Losing the leader later does not unsettle a node that caught up.
    for _ in 0..100 {
        node.tick();
    }
    assert_eq!(node.leader(), None, "the election timeout passed");
    shared.publish(&node);
    assert!(shared.settled());
}
