//! The durability order `handle_ready` promises: a message that
//! acknowledges entries (an append response) or a vote leaves only once
//! what it acknowledges is in the files — checked from the send callback,
//! by reading the replica's journal and state file from disk.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use exchange_journal::{Journal, DEFAULT_SEGMENT_BYTES};
use exchange_replication::raft::eraftpb::MessageType;
use exchange_replication::{run_jobs, state_file, Message, ReplicaConfig, ReplicaNode, SyncJob};

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
            node.handle_ready_now(
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
            nodes[to].step(message).expect("step");
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

/// Three replicas in `root`, node 1 leading with an entry of its term
/// committed everywhere, every sync run inline.
fn settled_cluster(root: &Path) -> Vec<ReplicaNode> {
    let ids = [1u64, 2, 3];
    let mut nodes: Vec<ReplicaNode> = ids
        .iter()
        .map(|&id| {
            let dir = root.join(format!("n{id}"));
            let config = ReplicaConfig::new(id, ids.to_vec());
            ReplicaNode::open(&dir.join("log"), &dir.join("snapshots"), &config)
                .expect("open")
                .0
        })
        .collect();
    nodes[0].campaign().expect("campaign");
    for _ in 0..20 {
        let mut network = Vec::new();
        for node in &mut nodes {
            node.handle_ready_now(&mut |m| network.push(m), &mut |_, _| {})
                .expect("ready");
        }
        for message in network {
            let to = message.to as usize - 1;
            nodes[to].step(message).expect("step");
        }
    }
    assert!(nodes[0].is_leader());
    assert!(nodes[0].committed_in_current_term());
    let commit = nodes[0].commit_index();
    assert!(nodes.iter().all(|n| n.applied() == commit));
    nodes
}

/// One `handle_ready` without running its sync: what it sent, the indices
/// it handed over, and its job.
fn ready_unsynced(node: &mut ReplicaNode) -> (Vec<Message>, Vec<u64>, Option<SyncJob>) {
    let mut sent = Vec::new();
    let mut applied = Vec::new();
    let job = node
        .handle_ready(&mut |m| sent.push(m), &mut |_, outcome| {
            applied.extend(outcome.committed.iter().map(|c| c.index))
        })
        .expect("ready");
    (sent, applied, job)
}

fn answers(messages: &[Message]) -> Vec<&Message> {
    messages
        .iter()
        .filter(|m| m.get_msg_type() == MessageType::MsgAppendResponse)
        .collect()
}

/// With the sync left to the owner: a follower answers an append only
/// once its job is reported, and the leader, whose followers' answers
/// commit the entry while its own sync is still out, hands it over only
/// once that sync is reported too.
#[test]
fn acknowledgements_and_apply_wait_for_the_sync_report() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut nodes = settled_cluster(root.path());
    let index = nodes[0].propose(b"held".to_vec()).expect("propose").0;

    let (appends, applied, leader_job) = ready_unsynced(&mut nodes[0]);
    let leader_job = leader_job.expect("the leader's append needs a sync");
    assert!(applied.is_empty());
    assert_eq!(nodes[0].unsynced_jobs(), 1);

    let mut follower_answers = Vec::new();
    for message in appends {
        let to = message.to as usize - 1;
        nodes[to].step(message).expect("step append");
        let (sent, _, job) = ready_unsynced(&mut nodes[to]);
        assert!(
            answers(&sent).is_empty(),
            "node {} answered before its sync was reported",
            to + 1
        );
        let job = job.expect("a follower's append needs a sync");
        job.run().expect("sync");
        let mut released = Vec::new();
        nodes[to].synced(job.number(), &mut |m| released.push(m));
        let released = answers(&released).into_iter().cloned().collect::<Vec<_>>();
        assert_eq!(released.len(), 1, "one answer once the sync is reported");
        assert_eq!(released[0].index, index);
        assert!(!released[0].reject);
        follower_answers.extend(released);
    }
    assert_eq!(follower_answers.len(), 2);

    for answer in follower_answers {
        nodes[0].step(answer).expect("step answer");
    }
    let (_, applied, queued) = ready_unsynced(&mut nodes[0]);
    assert!(
        queued.is_some(),
        "a ready keeps its place behind a job that is out"
    );
    assert_eq!(
        nodes[0].commit_index(),
        index,
        "the followers' copies commit the entry"
    );
    assert!(
        !applied.contains(&index),
        "handed over before the leader's own sync was reported"
    );

    let jobs = [leader_job, queued.expect("checked")];
    let last = run_jobs(&jobs).expect("sync").expect("a number");
    nodes[0].synced(last, &mut |_| {});
    assert_eq!(nodes[0].unsynced_jobs(), 0);
    let (_, applied, _) = ready_unsynced(&mut nodes[0]);
    assert_eq!(applied, vec![index]);
}

/// Jobs reported together: one report releases every earlier job's
/// answers, in order, and `run_jobs` names the last job.
#[test]
fn one_report_releases_every_earlier_job() {
    let root = tempfile::tempdir().expect("temp dir");
    let mut nodes = settled_cluster(root.path());
    let mut jobs = Vec::new();
    let mut indices = Vec::new();
    for round in 0..3 {
        let index = nodes[0]
            .propose(format!("batch {round}").into_bytes())
            .expect("propose")
            .0;
        indices.push(index);
        let (appends, _, leader_job) = ready_unsynced(&mut nodes[0]);
        let _ = leader_job.expect("leader job");
        let append = appends
            .into_iter()
            .find(|m| m.to == 2 && m.get_msg_type() == MessageType::MsgAppend)
            .expect("an append to node 2");
        nodes[1].step(append).expect("step");
        let (sent, _, job) = ready_unsynced(&mut nodes[1]);
        assert!(answers(&sent).is_empty());
        jobs.push(job.expect("follower job"));
    }
    assert_eq!(nodes[1].unsynced_jobs(), 3);
    let last = run_jobs(&jobs).expect("sync").expect("a number");
    assert_eq!(last, jobs[2].number());
    let mut released = Vec::new();
    nodes[1].synced(last, &mut |m| released.push(m));
    let acknowledged: Vec<u64> = answers(&released).iter().map(|m| m.index).collect();
    assert_eq!(acknowledged, indices);
    assert_eq!(nodes[1].unsynced_jobs(), 0);
    assert_eq!(run_jobs(&[]).expect("nothing"), None);
}

/// A recorded commit index past the log's end: a leader's followers
/// committed entries while its own sync was out, a term change recorded the
/// hard state, and a power cut took the entries. The storage starts the
/// replica from the log's end instead of Raft refusing to start.
#[test]
fn a_commit_index_past_the_log_starts_from_its_end() {
    let root = tempfile::tempdir().expect("temp dir");
    let nodes = settled_cluster(root.path());
    let last = nodes[0].status().last_index;
    drop(nodes);
    let log = root.path().join("n1").join("log");
    let mut state = state_file::load(&log)
        .expect("state file")
        .expect("a state file");
    state.hard.commit = last + 50;
    state_file::store(&log, &state, true).expect("store");
    let config = ReplicaConfig::new(1, vec![1, 2, 3]);
    let (node, _, _) = ReplicaNode::open(&log, &root.path().join("n1").join("snapshots"), &config)
        .expect("reopen");
    assert_eq!(node.commit_index(), last);
}
