//! The replicated replay guard: its rules, the state's outcomes, and the
//! guarded entries' encodings.

use exchange_types::Stamped;

use crate::core_state::CoreState;
use crate::entry::{EntryError, LogEntry, GUARDED_HEADER_BYTES, GUARDED_TAG, SEQUENCED_TAG};
use crate::limits::MAX_GUARD_AHEAD_MS;
use crate::replay_guard::{GuardRefusal, ReplayGuard, NANOS_PER_MS};
use crate::replication::{decode_batch, encode_batch};
use crate::state::ServerState;

const A: [u8; 16] = [0xA; 16];
const B: [u8; 16] = [0xB; 16];
const C: [u8; 16] = [0xC; 16];

fn core(ts_ms: u64, line: &str) -> LogEntry {
    let mut stamped: Stamped = exchange_codec::decode_command(line).expect("command");
    stamped.ts = ts_ms * NANOS_PER_MS;
    LogEntry::Core(stamped)
}

fn deposit(ts_ms: u64, amount: u64) -> LogEntry {
    core(
        ts_ms,
        &format!(r#"{{"cmd":"deposit","account":1,"asset":"USD","amount":"{amount}"}}"#),
    )
}

fn guarded(fingerprint: [u8; 16], forget_after_ms: u64, entry: LogEntry) -> LogEntry {
    LogEntry::Guarded {
        fingerprint,
        forget_after_ms,
        entry: Box::new(entry),
    }
}

fn sequenced(session: u64, seq: u64, entry: LogEntry) -> LogEntry {
    LogEntry::Sequenced {
        session,
        seq,
        entry: Box::new(entry),
    }
}

fn next(core: &mut CoreState, entry: &LogEntry) -> crate::Applied {
    let index = core.state.applied_index + 1;
    core.apply(index, entry)
}

#[test]
fn a_fingerprint_is_admitted_once_within_its_time() {
    let mut guard = ReplayGuard::default();
    assert_eq!(guard.admit(A, 6_000, 1_000), Ok(()));
    assert_eq!(guard.admit(A, 6_000, 1_001), Err(GuardRefusal::Replayed));
    // Another gateway's window gives the same request another time.
    assert_eq!(guard.admit(A, 9_000, 6_000), Err(GuardRefusal::Replayed));
    assert_eq!(guard.admit(B, 6_000, 6_000), Ok(()));
    assert_eq!(guard.len(), 2);
}

#[test]
fn fingerprints_are_forgotten_by_the_log_time_only() {
    let mut guard = ReplayGuard::default();
    guard.admit(A, 6_000, 1_000).expect("new");
    // Nothing forgets without an entry whose time is past it.
    assert!(guard.contains(&A));
    guard.admit(B, 12_000, 6_000).expect("new");
    assert!(guard.contains(&A), "6000 has not passed at 6000");
    guard.admit(C, 12_000, 6_001).expect("new");
    assert!(!guard.contains(&A), "forgotten once its time passed");
    assert_eq!(guard.len(), 2);
    // Its copy is stale by then, not new.
    assert_eq!(guard.admit(A, 6_000, 6_002), Err(GuardRefusal::Stale));
}

/// Arrival order is not expiry order: a fingerprint is never forgotten
/// before its own time, whatever arrived before or after it.
#[test]
fn a_later_forget_time_ahead_in_the_queue_forgets_nothing_early() {
    let mut guard = ReplayGuard::default();
    guard.admit(A, 60_000, 1_000).expect("a long window");
    guard.admit(B, 2_000, 1_000).expect("a short one");
    for ts in [2_001, 30_000, 60_000] {
        assert_eq!(guard.admit(A, 60_000, ts), Err(GuardRefusal::Replayed));
    }
    // B's time has passed: its copy is stale even while it lingers.
    assert_eq!(guard.admit(B, 2_000, 2_001), Err(GuardRefusal::Stale));
    guard.admit(C, 61_000, 60_001).expect("new");
    assert!(!guard.contains(&A) && !guard.contains(&B));

    // The other order: the short one goes first, the long one stays.
    let mut guard = ReplayGuard::default();
    guard.admit(B, 2_000, 1_000).expect("a short window");
    guard.admit(A, 60_000, 1_000).expect("a long one");
    guard.admit(C, 60_000, 2_001).expect("new");
    assert!(!guard.contains(&B));
    assert_eq!(guard.admit(A, 60_000, 59_000), Err(GuardRefusal::Replayed));
}

/// An entry stamped before one already applied cannot bring a forgotten
/// fingerprint back into its window.
#[test]
fn the_guard_keeps_the_latest_entry_time() {
    let mut guard = ReplayGuard::default();
    guard.admit(A, 2_000, 1_000).expect("new");
    guard.admit(B, 9_000, 5_000).expect("new");
    assert!(!guard.contains(&A));
    assert_eq!(guard.admit(A, 2_000, 1_500), Err(GuardRefusal::Stale));
}

#[test]
fn a_forget_time_already_past_or_too_far_ahead_is_refused() {
    let mut guard = ReplayGuard::default();
    assert_eq!(guard.admit(A, 999, 1_000), Err(GuardRefusal::Stale));
    assert_eq!(
        guard.admit(A, 1_000 + MAX_GUARD_AHEAD_MS + 1, 1_000),
        Err(GuardRefusal::TooFarAhead)
    );
    assert!(!guard.contains(&A), "a refused entry is not remembered");
    assert_eq!(guard.admit(A, 1_000 + MAX_GUARD_AHEAD_MS, 1_000), Ok(()));
    assert_eq!(guard.admit(B, 1_000, 1_000), Ok(()), "its last moment");
}

#[test]
fn a_full_guard_refuses_rather_than_forgets() {
    let mut guard = ReplayGuard::with_limit(2);
    guard.admit(A, 5_000, 1_000).expect("room");
    guard.admit(B, 6_000, 1_000).expect("room");
    assert_eq!(guard.admit(C, 6_000, 1_000), Err(GuardRefusal::Full));
    assert_eq!(guard.admit(A, 5_000, 2_000), Err(GuardRefusal::Replayed));
    assert!(!guard.contains(&C));
    assert_eq!(guard.admit(C, 9_000, 5_001), Ok(()), "room once A passed");
    assert!(guard.contains(&B));
}

#[test]
fn the_guard_round_trips_through_its_snapshot_form() {
    let mut guard = ReplayGuard::default();
    assert!(guard.is_empty());
    guard.admit(B, 60_000, 1_000).expect("new");
    guard.admit(A, 6_000, 1_001).expect("new");
    let json = serde_json::to_string(&guard).unwrap();
    assert_eq!(
        json,
        format!(
            r#"{{"now_ms":1001,"remembered":[[60000,"{}"],[6000,"{}"]]}}"#,
            "0b".repeat(16),
            "0a".repeat(16)
        )
    );
    let mut restored: ReplayGuard = serde_json::from_str(&json).unwrap();
    assert_eq!(restored, guard);
    assert_eq!(restored.admit(A, 6_000, 5_000), Err(GuardRefusal::Replayed));
    let twice = format!(
        r#"{{"now_ms":1,"remembered":[[5,"{a}"],[6,"{a}"]]}}"#,
        a = "0a".repeat(16)
    );
    assert!(serde_json::from_str::<ReplayGuard>(&twice).is_err());
    assert!(
        serde_json::from_str::<ReplayGuard>(r#"{"now_ms":1,"remembered":[[5,"0a"]]}"#).is_err()
    );
}

#[test]
fn a_replayed_entry_is_not_applied_and_says_so() {
    let mut core = CoreState::new();
    let first = next(&mut core, &guarded(A, 6_000, deposit(1_000, 100)));
    let mut bare = CoreState::new();
    assert_eq!(
        first,
        next(&mut bare, &deposit(1_000, 100)),
        "as the bare one"
    );
    let engine = core.state.engine.snapshot();
    let again = next(&mut core, &guarded(A, 6_000, deposit(1_001, 100)));
    assert_eq!(again.command, "replayed");
    assert_eq!(again.guard_refusal, Some(GuardRefusal::Replayed));
    assert!(again.events.is_empty());
    assert!(again.refused_unapplied());
    assert_eq!(again.ts, 1_001 * NANOS_PER_MS);
    assert_eq!(core.state.engine.snapshot(), engine, "unchanged");

    let stale = next(&mut core, &guarded(B, 1_000, deposit(1_002, 100)));
    assert_eq!(
        (stale.command, stale.guard_refusal),
        ("stale_request", Some(GuardRefusal::Stale))
    );
    assert!(stale.events.is_empty());
    assert!(!core.state.replay_guard.contains(&B));
}

#[test]
fn a_guarded_entry_inside_a_session_is_held_to_both() {
    let mut core = CoreState::new();
    next(
        &mut core,
        &LogEntry::OpenSession {
            ts: 1,
            session: 7,
            gateway: "gw-a".into(),
            cancel_grace_ms: None,
            incarnation: None,
        },
    );
    let applied = next(
        &mut core,
        &sequenced(7, 1, guarded(A, 6_000, deposit(1_000, 5))),
    );
    assert_eq!(applied.command, "deposit");
    // A re-submission is the session's duplicate; the guard is not asked.
    let resent = next(
        &mut core,
        &sequenced(7, 1, guarded(A, 6_000, deposit(1_000, 5))),
    );
    assert_eq!(resent.command, "duplicate");
    assert_eq!(resent.guard_refusal, None);
    // The same request through another path is the guard's replay.
    let copy = next(
        &mut core,
        &sequenced(7, 2, guarded(A, 6_000, deposit(1_001, 5))),
    );
    assert_eq!(copy.command, "replayed");
    assert_eq!(core.state.session_last_seq(7), Some(2));
}

/// The guard's decisions are the log's: replicas fed the same entries
/// agree, and a snapshot carries what the guard remembers.
#[test]
fn replicas_agree_and_snapshots_keep_the_guard() {
    let log = [
        guarded(A, 6_000, deposit(1_000, 1)),
        guarded(B, 60_000, deposit(1_001, 2)),
        guarded(A, 6_000, deposit(1_002, 1)),
        guarded(C, 8_000, deposit(7_000, 3)),
        guarded(A, 9_000, deposit(7_001, 1)),
    ];
    let (mut one, mut two) = (CoreState::new(), CoreState::new());
    let mut commands = Vec::new();
    for entry in &log {
        commands.push(next(&mut one, entry).command);
        next(&mut two, entry);
    }
    assert_eq!(
        commands,
        ["deposit", "deposit", "replayed", "deposit", "deposit"],
        "A is forgotten by 7000, so the last is new"
    );
    let hash = one.state.state_hash().unwrap();
    assert_eq!(hash, two.state.state_hash().unwrap());

    // Without the replay applied, the engine and the hash differ.
    let mut no_guard = CoreState::new();
    for entry in &log {
        next(&mut no_guard, entry.inner());
    }
    assert_ne!(no_guard.state.state_hash().unwrap(), hash);

    let mut restored = CoreState::restore(&one.snapshot().unwrap()).unwrap();
    assert_eq!(restored.state.replay_guard, one.state.replay_guard);
    assert_eq!(restored.state.state_hash().unwrap(), hash);
    let copy = guarded(B, 60_000, deposit(7_002, 2));
    assert_eq!(next(&mut restored, &copy).command, "replayed");
    assert_eq!(next(&mut one, &copy).command, "replayed");
    assert_eq!(
        restored.state.state_hash().unwrap(),
        one.state.state_hash().unwrap()
    );
}

/// A state that never saw a guarded entry serialises (and hashes) as it
/// did before the guard existed, and such a snapshot restores.
#[test]
fn a_state_without_guarded_entries_is_as_before() {
    let mut core = CoreState::new();
    next(&mut core, &deposit(1, 1));
    let snapshot = core.snapshot().unwrap();
    let text = String::from_utf8_lossy(&snapshot);
    assert!(!text.contains("replay_guard"), "left out while empty");
    let restored = CoreState::restore(&snapshot).unwrap();
    assert!(restored.state.replay_guard.is_empty());

    next(&mut core, &guarded(A, 6_000, deposit(2, 1)));
    let text = String::from_utf8_lossy(&core.snapshot().unwrap()).into_owned();
    assert!(text.contains(r#""replay_guard":{"now_ms":2,"#), "{text}");
}

fn entries() -> Vec<LogEntry> {
    vec![
        guarded([0xFF; 16], u64::MAX, deposit(9, 12)),
        sequenced(1, 2, guarded(A, 3, deposit(4, 5))),
        guarded(
            B,
            7,
            LogEntry::RevokeKey {
                ts: 3,
                key_id: "k".into(),
                account: Some(1),
                by: None,
            },
        ),
        deposit(10, 1),
    ]
}

#[test]
fn guarded_entries_round_trip_in_every_form() {
    let entries = entries();
    assert_eq!(
        decode_batch(&encode_batch(&entries).unwrap()).unwrap(),
        entries
    );
    for entry in &entries {
        let bytes = entry.encode().unwrap();
        assert_eq!(&LogEntry::decode(&bytes).unwrap(), entry);
        let json = entry.to_json().unwrap();
        serde_json::from_slice::<serde_json::Value>(&json).expect("a JSON line");
        assert_eq!(&LogEntry::decode(&json).unwrap(), entry, "{json:?}");
    }
    let bytes = entries[0].encode().unwrap();
    assert_eq!(bytes[0], GUARDED_TAG);
    assert_eq!(bytes[1..17], [0xFF; 16]);
    assert_eq!(bytes[17..25], u64::MAX.to_le_bytes());
    assert_eq!(bytes[25..], deposit(9, 12).encode().unwrap());
    let in_session = entries[1].encode().unwrap();
    assert_eq!(in_session[0], SEQUENCED_TAG);
    assert_eq!(in_session[17], GUARDED_TAG);
    let json = String::from_utf8(entries[0].to_json().unwrap()).unwrap();
    let start = format!(
        r#"{{"cmd":"guarded","fingerprint":"{}","forget_after_ms":18446744073709551615,"entry":{{"#,
        "ff".repeat(16)
    );
    assert!(json.starts_with(&start), "{json}");
    assert_eq!(entries[1].inner(), &deposit(4, 5));
}

#[test]
fn guarded_entries_nest_one_way_only() {
    let wrong = [
        (
            guarded(A, 1, guarded(B, 1, deposit(1, 1))),
            EntryError::NestedGuarded,
        ),
        (
            guarded(A, 1, sequenced(1, 1, deposit(1, 1))),
            EntryError::NestedGuarded,
        ),
        (
            sequenced(1, 1, guarded(A, 1, guarded(B, 1, deposit(1, 1)))),
            EntryError::NestedGuarded,
        ),
    ];
    for (entry, expected) in &wrong {
        let error = entry.encode().expect_err("refused");
        assert_eq!(error.to_string(), expected.to_string());
        let error = entry.to_json().expect_err("refused");
        assert_eq!(error.to_string(), expected.to_string());
        let mut out = vec![1, 2];
        assert!(entry.encode_into(&mut out).is_err());
        assert_eq!(out, [1, 2], "nothing appended");
    }
    // Written by hand, they are refused when read, in either form.
    let inner = [guarded(B, 1, deposit(1, 1)), sequenced(1, 1, deposit(1, 1))];
    for inner in &inner {
        let mut bytes = vec![GUARDED_TAG];
        bytes.extend_from_slice(&[0; 24]);
        bytes.extend_from_slice(&inner.encode().unwrap());
        let error = LogEntry::decode(&bytes).expect_err("nested");
        assert!(matches!(error, EntryError::NestedGuarded), "{error}");
        let json = format!(
            r#"{{"cmd":"guarded","fingerprint":"{}","forget_after_ms":1,"entry":{}}}"#,
            "00".repeat(16),
            String::from_utf8(inner.to_json().unwrap()).unwrap()
        );
        let error = LogEntry::decode(json.as_bytes()).expect_err("nested");
        assert!(matches!(error, EntryError::NestedGuarded), "{error}");
    }
    // Deep nesting is refused at the second level, not recursed into.
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.push(GUARDED_TAG);
        deep.extend_from_slice(&[0; 24]);
    }
    deep.extend_from_slice(&deposit(1, 1).encode().unwrap());
    assert!(matches!(
        LogEntry::decode(&deep),
        Err(EntryError::NestedGuarded)
    ));
}

#[test]
fn a_truncated_or_malformed_guarded_entry_is_refused() {
    let bytes = entries()[0].encode().unwrap();
    for len in 1..=GUARDED_HEADER_BYTES {
        let error = LogEntry::decode(&bytes[..len]).expect_err("truncated");
        assert!(
            matches!(error, EntryError::GuardedTruncated),
            "{len}: {error}"
        );
    }
    for len in GUARDED_HEADER_BYTES + 1..bytes.len() {
        assert!(LogEntry::decode(&bytes[..len]).is_err(), "{len}");
    }
    for fingerprint in ["00", &"0g".repeat(16), &"00".repeat(17)] {
        let json = format!(
            r#"{{"cmd":"guarded","fingerprint":"{fingerprint}","forget_after_ms":1,"entry":{}}}"#,
            String::from_utf8(deposit(1, 1).to_json().unwrap()).unwrap()
        );
        let error = LogEntry::decode(json.as_bytes()).expect_err("bad fingerprint");
        assert!(matches!(error, EntryError::Fingerprint), "{error}");
    }
}

#[test]
fn the_log_clock_stamps_the_innermost_entry() {
    let mut entry = sequenced(1, 1, guarded(A, 1, deposit(0, 1)));
    entry.set_ts(42);
    assert_eq!(entry.ts(), 42);
    assert_eq!(entry.inner().ts(), 42);
    let key = guarded(
        A,
        1,
        LogEntry::RevokeKey {
            ts: 0,
            key_id: "k".into(),
            account: None,
            by: None,
        },
    );
    assert_eq!(key.key_ids(), ["k"]);
    let restored = ServerState::restore(&CoreState::new().snapshot().unwrap()).unwrap();
    assert!(restored.replay_guard.is_empty());
}

/// `exchange log dump --core-only` prints the commands the state applied:
/// its reading of sessions and the guard is the state's.
#[test]
fn admission_picks_the_commands_the_state_applies() {
    let log = [
        guarded(A, 6_000, deposit(1_000, 1)),
        guarded(A, 6_000, deposit(1_001, 1)),
        guarded(B, 10, deposit(1_002, 1)),
        sequenced(7, 1, guarded(C, 6_000, deposit(1_003, 1))),
        LogEntry::OpenSession {
            ts: 1_004 * NANOS_PER_MS,
            session: 7,
            gateway: "gw".into(),
            cancel_grace_ms: None,
            incarnation: None,
        },
        sequenced(7, 1, guarded(C, 6_000, deposit(1_005, 1))),
        sequenced(7, 1, guarded(C, 6_000, deposit(1_006, 1))),
        sequenced(7, 2, guarded(C, 6_000, deposit(1_007, 1))),
        deposit(1_008, 1),
    ];
    let mut state = CoreState::new();
    let mut admission = crate::admission::Admission::new();
    let mut printed = Vec::new();
    for (at, entry) in log.iter().enumerate() {
        let applied = next(&mut state, entry);
        let picked = admission.core_command(entry);
        assert_eq!(picked.is_some(), applied.command == "deposit", "entry {at}");
        if picked.is_some() {
            printed.push(at);
        }
    }
    assert_eq!(printed, [0, 5, 8]);
}

mod properties {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// One guarded entry: which of a few requests, how far the log's time
    /// moves before it, and its window (gateways may differ).
    fn step() -> impl Strategy<Value = (u8, u64, u64)> {
        (0..6u8, 0..3_000u64, 1..8_000u64)
    }

    proptest! {
        /// However the requests, times and windows interleave: a request
        /// admitted before whose window has not passed is never admitted
        /// again, one never admitted is, and a snapshot restores a guard
        /// that decides the rest alike.
        #[test]
        fn a_request_is_admitted_once_within_its_window(
            steps in proptest::collection::vec(step(), 1..80),
            cut in 0..80usize,
        ) {
            let mut guard = ReplayGuard::default();
            let mut restored: Option<ReplayGuard> = None;
            // Each request's latest admission: its forget time.
            let mut admitted: BTreeMap<u8, u64> = BTreeMap::new();
            let mut now = 1_000;
            for (at, (request, advance, window)) in steps.into_iter().enumerate() {
                if at == cut {
                    let json = serde_json::to_string(&guard).unwrap();
                    restored = Some(serde_json::from_str(&json).unwrap());
                }
                now += advance;
                // Signed up to a window before the log takes it.
                let forget_after = now - advance / 2 + window;
                let outcome = guard.admit([request; 16], forget_after, now);
                if let Some(other) = restored.as_mut() {
                    prop_assert_eq!(other.admit([request; 16], forget_after, now), outcome);
                }
                match admitted.get(&request) {
                    _ if forget_after < now => {
                        prop_assert_eq!(outcome, Err(GuardRefusal::Stale));
                    }
                    Some(&until) if until >= now => {
                        prop_assert_eq!(outcome, Err(GuardRefusal::Replayed));
                    }
                    None => prop_assert_eq!(outcome, Ok(())),
                    // Past its time it may linger behind a later one.
                    Some(_) => prop_assert!(matches!(
                        outcome,
                        Ok(()) | Err(GuardRefusal::Replayed)
                    )),
                }
                if outcome.is_ok() {
                    admitted.insert(request, forget_after);
                }
            }
        }
    }
}
