//! Exactly-once under an unreliable path: gateways re-send what they had
//! in flight, copies arrive late and twice, and every replica (including
//! one restored from a snapshot part-way) applies each command once.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::Applied;

const SESSIONS: usize = 3;

/// One step of the network towards the log.
#[derive(Clone, Debug)]
enum Step {
    /// The session's next command, the first time it is sent.
    Fresh(usize),
    /// Copies of the session's commands sent so far, from the `from`-th
    /// (of those sent), as a gateway re-sends what was in flight when the
    /// leader changed.
    Resend { session: usize, from: usize },
    /// A late copy of one command already sent (the `nth` sent).
    Late { session: usize, nth: usize },
    /// A copy of the session's open.
    Reopen(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..SESSIONS).prop_map(Step::Fresh),
        1 => (0..SESSIONS, 0..16usize).prop_map(|(session, from)| Step::Resend { session, from }),
        1 => (0..SESSIONS, 0..16usize).prop_map(|(session, nth)| Step::Late { session, nth }),
        1 => (0..SESSIONS).prop_map(Step::Reopen),
    ]
}

fn session_id(session: usize) -> u64 {
    // Far apart and not in order, as random ids are.
    (session as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The command a session sends as `seq`: a deposit whose amount names
/// both, so its events say which command was applied.
fn command(session: usize, seq: u64) -> LogEntry {
    let amount = seq * 10 + session as u64 + 1;
    let line = format!(r#"{{"cmd":"deposit","account":1,"asset":"USD","amount":"{amount}"}}"#);
    LogEntry::Core(exchange_codec::decode_command(&line).expect("command"))
}

/// The log the steps make, and each session's sequence numbers in the
/// order first sent. `gaps[s][i]`: how far the `i`-th number is above
/// the one before (commands refused before the log are never sent).
fn build_log(steps: &[Step], gaps: &[Vec<u64>]) -> (Vec<LogEntry>, Vec<Vec<u64>>) {
    let mut log = Vec::new();
    let mut sent: Vec<Vec<u64>> = vec![Vec::new(); SESSIONS];
    for session in 0..SESSIONS {
        log.push(open_entry(session));
    }
    let push = |log: &mut Vec<LogEntry>, session: usize, seq: u64| {
        log.push(LogEntry::Sequenced {
            session: session_id(session),
            seq,
            entry: Box::new(command(session, seq)),
        });
    };
    for step in steps {
        match *step {
            Step::Fresh(session) => {
                let Some(gap) = gaps[session].get(sent[session].len()) else {
                    continue;
                };
                let seq = sent[session].last().copied().unwrap_or(0) + gap;
                sent[session].push(seq);
                push(&mut log, session, seq);
            }
            Step::Resend { session, from } => {
                for &seq in sent[session].iter().skip(from) {
                    push(&mut log, session, seq);
                }
            }
            Step::Late { session, nth } => {
                if let Some(&seq) = sent[session].get(nth) {
                    push(&mut log, session, seq);
                }
            }
            Step::Reopen(session) => log.push(open_entry(session)),
        }
    }
    for (n, entry) in log.iter_mut().enumerate() {
        entry.set_ts(n as u64 + 1);
    }
    (log, sent)
}

fn open_entry(session: usize) -> LogEntry {
    LogEntry::OpenSession {
        ts: 0,
        session: session_id(session),
        gateway: format!("gateway-{session}"),
        cancel_grace_ms: None,
        incarnation: None,
    }
}

/// Each session's sequence numbers whose commands were applied, in order.
fn applied_seqs(log: &[LogEntry], outcomes: &[Applied]) -> BTreeMap<u64, Vec<u64>> {
    let mut applied: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (entry, outcome) in log.iter().zip(outcomes) {
        if let LogEntry::Sequenced { session, seq, .. } = entry {
            match outcome.command {
                "deposit" => applied.entry(*session).or_default().push(*seq),
                "duplicate" => {}
                other => panic!("a sequenced deposit answered {other}"),
            }
        }
    }
    applied
}

fn apply_all(core: &mut CoreState, entries: &[LogEntry]) -> Vec<Applied> {
    entries
        .iter()
        .map(|entry| {
            let index = core.state.applied_index + 1;
            core.apply(index, entry)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_command_sent_is_applied_once_in_order_on_every_replica(
        steps in proptest::collection::vec(step(), 0..60),
        gaps in proptest::collection::vec(
            proptest::collection::vec(1..4u64, 0..12), SESSIONS..=SESSIONS),
        cut in any::<proptest::sample::Index>(),
    ) {
        let (log, sent) = build_log(&steps, &gaps);
        let mut first = CoreState::new();
        let outcomes = apply_all(&mut first, &log);

        let applied = applied_seqs(&log, &outcomes);
        for (session, seqs) in sent.iter().enumerate() {
            let id = session_id(session);
            let got = applied.get(&id).cloned().unwrap_or_default();
            prop_assert_eq!(&got, seqs, "session {}", session);
            prop_assert_eq!(
                first.state.session_last_seq(id),
                Some(seqs.last().copied().unwrap_or(0))
            );
        }
        for outcome in &outcomes {
            if outcome.command == "duplicate" {
                prop_assert!(outcome.events.is_empty());
            }
        }

        // Another replica fed the same log ends in the same state.
        let mut second = CoreState::new();
        prop_assert_eq!(&apply_all(&mut second, &log), &outcomes);
        let hash = first.state.state_hash().unwrap();
        prop_assert_eq!(&second.state.state_hash().unwrap(), &hash);

        // One restored from a snapshot part-way goes on identically.
        let cut = cut.index(log.len() + 1);
        let mut before = CoreState::new();
        apply_all(&mut before, &log[..cut]);
        let mut restored = CoreState::restore(&before.snapshot().unwrap()).unwrap();
        prop_assert_eq!(&apply_all(&mut restored, &log[cut..]), &outcomes[cut..].to_vec());
        prop_assert_eq!(&restored.state.state_hash().unwrap(), &hash);
    }
}
