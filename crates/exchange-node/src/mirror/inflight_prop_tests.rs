//! Every command a gateway took is answered once, whatever the log shows
//! and whenever its session closes: `applied` iff the log showed it before
//! the closure, `session_expired` iff it was still pending then (so never
//! applied), dropped (`unavailable`) iff the log skipped it.

use std::sync::Arc;

use proptest::prelude::*;
use tokio::sync::oneshot;

use super::*;
use crate::mirror::renew;
use crate::state::Applied;

#[derive(Clone, Debug)]
enum Step {
    /// A client's command is taken into flight.
    Take,
    /// The log shows the oldest pending command of the current session;
    /// with `skip`, the one after it instead (a deposed leader dropped the
    /// first).
    Show { skip: bool },
    /// The log shows the current session closed: the gateway renews it.
    Close,
    /// A late copy of a command of a closed session reaches the log.
    LateCopy(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Take),
        3 => any::<bool>().prop_map(|skip| Step::Show { skip }),
        1 => Just(Step::Close),
        1 => any::<usize>().prop_map(Step::LateCopy),
    ]
}

#[derive(Debug, PartialEq)]
enum Fate {
    Pending,
    Applied,
    Expired,
    Dropped,
}

struct Command {
    entry: LogEntry,
    outcome: oneshot::Receiver<Arc<Applied>>,
    fate: Fate,
}

fn applied_marker() -> Arc<Applied> {
    Arc::new(Applied {
        command: "applied",
        ..Applied::default()
    })
}

/// Runs `steps`; returns the table (still holding what is pending) and
/// the commands with the fate the model expects.
fn run(steps: &[Step]) -> (InFlight, Vec<Command>) {
    let mut inflight = InFlight::new(1, "gw", Some(2_000), 1);
    // The log shows the session's open first, as it shows each later one.
    let opening = inflight.opening.clone().expect("the session opens");
    assert!(inflight.committed(&opening).is_none());
    let mut session = 1;
    let mut commands: Vec<Command> = Vec::new();
    for step in steps {
        match step {
            Step::Take => {
                let (tx, outcome) = oneshot::channel();
                let entry = inflight.take(LogEntry::SessionAlive { ts: 0 }, Reply::new(tx));
                let fate = Fate::Pending;
                commands.push(Command {
                    entry,
                    outcome,
                    fate,
                });
            }
            Step::Show { skip } => {
                let mut pending = commands.iter_mut().filter(|c| c.fate == Fate::Pending);
                let first = pending.next();
                let (shown, skipped) = match (skip, first) {
                    (true, Some(first)) => match pending.next() {
                        Some(second) => (second, Some(first)),
                        None => (first, None),
                    },
                    (_, Some(first)) => (first, None),
                    (_, None) => continue,
                };
                let reply = inflight.committed(&shown.entry).expect("a pending command");
                reply.tx.send(applied_marker()).expect("waiter");
                shown.fate = Fate::Applied;
                if let Some(skipped) = skipped {
                    skipped.fate = Fate::Dropped;
                }
            }
            Step::Close => {
                session += 1;
                for reply in inflight.reopen(session, session) {
                    reply.tx.send(renew::expired()).expect("waiter");
                }
                for command in &mut commands {
                    if command.fate == Fate::Pending {
                        command.fate = Fate::Expired;
                    }
                }
                let opening = inflight.opening.clone().expect("the new session opens");
                assert_eq!(inflight.resend().first(), Some(&opening));
                assert!(inflight.committed(&opening).is_none());
            }
            Step::LateCopy(pick) => {
                let old: Vec<&Command> = commands
                    .iter()
                    .filter(|c| c.fate != Fate::Pending)
                    .collect();
                if let Some(copy) = old.get(pick % old.len().max(1)) {
                    assert!(
                        inflight.committed(&copy.entry).is_none(),
                        "a command answered already is answered once"
                    );
                }
            }
        }
    }
    (inflight, commands)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn each_command_is_answered_once_by_what_the_log_shows(
        steps in proptest::collection::vec(step(), 0..80),
    ) {
        let (_inflight, commands) = run(&steps);
        for mut command in commands {
            let heard = command.outcome.try_recv();
            match command.fate {
                Fate::Applied => {
                    let applied = heard.expect("answered");
                    prop_assert_eq!(applied.command, "applied");
                }
                Fate::Expired => {
                    let applied = heard.expect("answered");
                    prop_assert!(applied.refused_unapplied(), "never applied");
                }
                Fate::Dropped => prop_assert_eq!(
                    heard.err(),
                    Some(oneshot::error::TryRecvError::Closed)
                ),
                Fate::Pending => prop_assert_eq!(
                    heard.err(),
                    Some(oneshot::error::TryRecvError::Empty)
                ),
            }
        }
    }
}
