//! The durability order `handle_ready` promises: a message that
//! acknowledges entries (an append response) or a vote leaves only once
//! what it acknowledges is in the files — checked from the send callback,
//! by reading the replica's journal and state file from disk.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use exchange_journal::{Journal, DEFAULT_SEGMENT_BYTES};
use exchange_replication::raft::eraftpb::MessageType;
use exchange_replication::{state_file, Message, ReplicaConfig, ReplicaNode};

/// Asserts that `message`, about to leave `dir`'s replica, acknowledges
/// only what is on disk.
fn check_durable(dir: &Path, message: &Message) {
    match message.get_msg_type() {
        MessageType::MsgAppendResponse if !message.reject => {
            let (journal, _) =
                Journal::open(&dir.join("log"), 2, DEFAULT_SEGMENT_BYTES).expect("read journal");
            assert!(
                journal.next_index() > message.index,
                "append of {} acknowledged before it was written (log ends at {})",
                message.index,
                journal.next_index() - 1
            );
            let entry = journal.read(message.index, 1).expect("read");
            if let Some(entry) = entry.first() {
                assert_eq!(entry.index, message.index);
            }
        }
        MessageType::MsgRequestVoteResponse if !message.reject => {
            let state = state_file::load(&dir.join("log"))
                .expect("state file")
                .expect("a state file before a vote");
            assert_eq!(
                (state.hard.term, state.hard.vote),
                (message.term, message.to),
                "vote granted before it was written"
            );
        }
        _ => {}
    }
}

#[test]
fn acknowledgements_leave_only_after_the_write() {
    let root = tempfile::tempdir().expect("temp dir");
    let ids = [1u64, 2, 3];
    let dirs: Vec<PathBuf> = ids
        .iter()
        .map(|id| root.path().join(format!("n{id}")))
        .collect();
    let mut nodes: Vec<ReplicaNode> = ids
        .iter()
        .zip(&dirs)
        .map(|(&id, dir)| {
            let config = ReplicaConfig::new(id, ids.to_vec());
            ReplicaNode::open(&dir.join("log"), &dir.join("snapshots"), &config)
                .expect("open")
                .0
        })
        .collect();
    nodes[0].campaign().expect("campaign");
    let mut network: VecDeque<Message> = VecDeque::new();
    let mut checked = (0usize, 0usize);
    let mut committed = 0usize;
    for round in 0..200 {
        if nodes[0].is_leader() && round % 3 == 0 {
            nodes[0]
                .propose(format!("payload {round}").into_bytes())
                .expect("propose");
        }
        for (node, dir) in nodes.iter_mut().zip(&dirs) {
            let mut out = Vec::new();
            node.handle_ready(
                &mut |message| {
                    check_durable(dir, &message);
                    out.push(message);
                },
                &mut |_, outcome| committed += outcome.committed.len(),
            )
            .expect("ready");
            for message in &out {
                match message.get_msg_type() {
                    MessageType::MsgAppendResponse if !message.reject => checked.0 += 1,
                    MessageType::MsgRequestVoteResponse if !message.reject => checked.1 += 1,
                    _ => {}
                }
            }
            network.extend(out);
        }
        while let Some(message) = network.pop_front() {
            let to = message.to as usize - 1;
            let _ = nodes[to].step(message);
        }
        for node in &mut nodes {
            node.tick();
        }
    }
    assert!(nodes[0].is_leader());
    assert!(
        checked.0 > 50,
        "only {} append responses checked",
        checked.0
    );
    assert!(checked.1 >= 2, "only {} votes checked", checked.1);
    assert!(committed > 100, "only {committed} entries committed");
}
