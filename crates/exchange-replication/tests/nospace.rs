//! The `nospace` alarm of a replica whose writes fail for lack of space
//! (`WriteFaults` stands in for a full disk): the write is retried until
//! space returns, the alarm is up meanwhile, a leader hands leadership
//! over, and no entry is lost or applied twice.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

use exchange_replication::{
    CommittedKind, Message, ReadyOutcome, ReplicaConfig, ReplicaNode, WriteFaults,
};

/// A replica, the faults of its storage, and the payloads it applied.
struct Member {
    node: ReplicaNode,
    faults: WriteFaults,
    applied: Vec<Vec<u8>>,
}

fn open(dir: &Path, id: u64, voters: &[u64]) -> Member {
    let faults = WriteFaults::armed();
    let mut config = ReplicaConfig::new(id, voters.to_vec());
    config.storage.faults = faults.clone();
    config.nospace_retry = Duration::from_millis(1);
    let dir = dir.join(id.to_string());
    let (node, _, _) =
        ReplicaNode::open(&dir.join("log"), &dir.join("snapshots"), &config).expect("open");
    Member {
        node,
        faults,
        applied: Vec::new(),
    }
}

fn keep_payloads(applied: &mut Vec<Vec<u8>>, outcome: ReadyOutcome) {
    for committed in outcome.committed {
        if let CommittedKind::Normal(data) = committed.kind {
            if !data.is_empty() {
                applied.push(data);
            }
        }
    }
}

impl Member {
    /// Runs what the node has ready, its syncs included; the messages it
    /// sends are returned.
    fn ready(&mut self) -> Vec<Message> {
        let mut sent = Vec::new();
        let applied = &mut self.applied;
        self.node
            .handle_ready_now(&mut |m| sent.push(m), &mut |_, outcome| {
                keep_payloads(applied, outcome)
            })
            .expect("ready");
        sent
    }
}

/// Runs every node's readies and delivers their messages until nothing
/// moves.
fn settle(members: &mut BTreeMap<u64, Member>) {
    let mut queue: VecDeque<Message> = VecDeque::new();
    for _ in 0..1_000 {
        for member in members.values_mut() {
            queue.extend(member.ready());
        }
        if queue.is_empty() {
            return;
        }
        while let Some(message) = queue.pop_front() {
            if let Some(member) = members.get_mut(&message.to) {
                let _ = member.node.step(message);
            }
        }
    }
    panic!("the cluster did not settle");
}

#[test]
fn a_write_waits_for_space_with_the_alarm_up_and_then_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut member = open(dir.path(), 1, &[1]);
    member.node.campaign().expect("campaign");
    member.ready();
    member.node.propose(b"a".to_vec()).expect("propose");
    member.ready();
    let alarm = member.node.disk_alarm().clone();
    let faults = member.faults.clone();
    faults.fail_next(u64::MAX);
    member.node.propose(b"b".to_vec()).expect("propose");
    let waiting = std::thread::spawn(move || {
        member.ready();
        member
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !alarm.is_raised() {
        assert!(Instant::now() < deadline, "the alarm never went up");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!waiting.is_finished(), "the write went on without space");
    // Space returns.
    faults.fail_next(0);
    let mut member = waiting.join().expect("the node's thread");
    assert!(!alarm.is_raised());
    assert_eq!(alarm.raised_total(), 1);
    assert_eq!(member.applied, [b"a".to_vec(), b"b".to_vec()]);
    member.node.propose(b"c".to_vec()).expect("propose");
    member.ready();
    assert_eq!(member.applied.len(), 3);
    drop(member);
    // On disk, each entry once and in order.
    let member = open(dir.path(), 1, &[1]);
    let on_disk: Vec<Vec<u8>> = member
        .node
        .read_committed(1, usize::MAX)
        .expect("read")
        .into_iter()
        .filter_map(|c| match c.kind {
            CommittedKind::Normal(data) if !data.is_empty() => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(on_disk, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
}

#[test]
fn a_stopping_node_stops_waiting_and_reports_the_disk_full() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut member = open(dir.path(), 1, &[1]);
    member.node.campaign().expect("campaign");
    member.ready();
    member.faults.fail_next(u64::MAX);
    member.node.disk_alarm().stop_retrying();
    member.node.propose(b"a".to_vec()).expect("propose");
    let error = member
        .node
        .handle_ready(&mut |_| {}, &mut |_, _| {})
        .expect_err("no space");
    assert!(error.is_no_space(), "{error}");
}

#[test]
fn a_leader_out_of_space_hands_over_and_nothing_is_lost() {
    let dir = tempfile::tempdir().expect("temp dir");
    let voters = [1, 2, 3];
    let mut members: BTreeMap<u64, Member> = voters
        .iter()
        .map(|&id| (id, open(dir.path(), id, &voters)))
        .collect();
    let first = members.get_mut(&1).expect("node 1");
    first.node.campaign().expect("campaign");
    settle(&mut members);
    let leader = members.get_mut(&1).expect("node 1");
    assert!(leader.node.is_leader());
    leader.node.propose(b"x".to_vec()).expect("propose");
    settle(&mut members);
    // The leader's next writes fail for lack of space, a few times.
    let leader = members.get_mut(&1).expect("node 1");
    leader.faults.fail_next(3);
    leader.node.propose(b"y".to_vec()).expect("propose");
    settle(&mut members);
    let alarm = members[&1].node.disk_alarm().clone();
    assert_eq!(alarm.raised_total(), 1);
    assert!(!alarm.is_raised());
    assert!(
        !members[&1].node.is_leader(),
        "the full leader kept leading"
    );
    let new_leader = members
        .values_mut()
        .find(|m| m.node.is_leader())
        .expect("a new leader");
    new_leader.node.propose(b"z".to_vec()).expect("propose");
    settle(&mut members);
    let want = [b"x".to_vec(), b"y".to_vec(), b"z".to_vec()];
    for (id, member) in &members {
        assert_eq!(member.applied, want, "node {id}");
    }
}
