//! FIX sessions' numbers in the state: the entries' encodings, how the
//! state applies them, and the snapshot.

use exchange_types::Stamped;

use crate::admission::Admission;
use crate::core_state::CoreState;
use crate::entry::{EntryError, LogEntry, FIX_SEQUENCED_TAG};
use crate::fix_links::{FixApplied, FixLinks};

fn deposit(ts: u64, amount: u64) -> LogEntry {
    let line = format!(r#"{{"cmd":"deposit","account":1,"asset":"USD","amount":"{amount}"}}"#);
    let mut stamped: Stamped = exchange_codec::decode_command(&line).expect("command");
    stamped.ts = ts;
    LogEntry::Core(stamped)
}

fn fix(seq: u64, entry: LogEntry) -> LogEntry {
    LogEntry::FixSequenced {
        link: 42,
        seq,
        entry: Box::new(entry),
    }
}

fn logon(owner: u64, reset: bool) -> LogEntry {
    LogEntry::FixLogon {
        ts: 3,
        link: 42,
        owner,
        reset,
        reserve: 1_000,
    }
}

fn next(core: &mut CoreState, entry: &LogEntry) -> crate::Applied {
    let index = core.state.applied_index + 1;
    core.apply(index, entry)
}

#[test]
fn fix_entries_read_back_from_both_forms() {
    let entries = [
        logon(9, false),
        logon(9, true),
        LogEntry::FixReserve {
            ts: 4,
            link: 42,
            owner: 9,
            reserve: 500,
        },
        fix(7, deposit(5, 100)),
        LogEntry::Sequenced {
            session: 1,
            seq: 2,
            entry: Box::new(fix(7, deposit(5, 100))),
        },
    ];
    for entry in entries {
        let bytes = entry.encode().expect("encode");
        assert_eq!(LogEntry::decode(&bytes).expect("decode"), entry);
        let json = entry.to_json().expect("json");
        assert_eq!(LogEntry::decode(&json).expect("decode json"), entry);
    }
    let bytes = fix(7, deposit(5, 100)).encode().expect("encode");
    assert_eq!(bytes[0], FIX_SEQUENCED_TAG);
    assert!(matches!(
        LogEntry::decode(&bytes[..10]),
        Err(EntryError::FixTruncated)
    ));
}

#[test]
fn a_fix_entry_holds_a_core_command_only_and_is_held_by_a_session_only() {
    let nested = [
        fix(1, logon(9, false)),
        fix(1, fix(2, deposit(5, 1))),
        LogEntry::Guarded {
            fingerprint: [1; 16],
            forget_after_ms: 1,
            entry: Box::new(fix(1, deposit(5, 1))),
        },
    ];
    for entry in nested {
        assert!(entry.encode().is_err(), "{entry:?}");
    }
    // The JSON form of a command inside is checked too.
    let line = r#"{"cmd":"fix_sequenced","link":1,"seq":1,"entry":{"cmd":"session_alive","ts":1}}"#;
    assert!(matches!(
        LogEntry::decode(line.as_bytes()),
        Err(EntryError::NestedFix)
    ));
}

#[test]
fn a_command_applies_once_whichever_process_sends_it_again() {
    let mut state = CoreState::new();
    let mut bare = CoreState::new();
    let logged = next(&mut state, &logon(9, false));
    assert_eq!(logged.command, "fix_logon");
    assert!(matches!(
        logged.fix,
        Some(FixApplied::Logon {
            previous_owner: 0,
            out_from: 1,
            out_to: 1_001,
            ..
        })
    ));
    // An entry without events in its place.
    let open = LogEntry::OpenSession {
        ts: 3,
        session: 8,
        gateway: "gw".into(),
        cancel_grace_ms: None,
        incarnation: None,
    };
    next(&mut bare, &open);

    let applied = next(&mut state, &fix(2, deposit(5, 100)));
    let plain = next(&mut bare, &deposit(5, 100));
    assert_eq!(applied.events, plain.events);
    assert_eq!(
        applied.fix,
        Some(FixApplied::Sequenced { link: 42, seq: 2 })
    );
    assert!(!applied.refused_unapplied());

    // The same message again, as another process would send it.
    let copy = next(&mut state, &fix(2, deposit(5, 100)));
    assert!(copy.refused_unapplied());
    assert_eq!(copy.command, "fix_duplicate");
    assert!(copy.events.is_empty());

    // A process taking over learns the last number applied.
    let taken = next(&mut state, &logon(10, false));
    assert!(matches!(
        taken.fix,
        Some(FixApplied::Logon {
            previous_owner: 9,
            last_in: 2,
            out_from: 1_001,
            ..
        })
    ));

    // The numbers are part of the snapshot and of the state hash.
    let mut restored = CoreState::restore(&state.snapshot().expect("snapshot")).expect("restore");
    assert_eq!(restored.state.fix_links, state.state.fix_links);
    let hash = state.state.state_hash().expect("hash");
    assert_eq!(restored.state.state_hash().expect("hash"), hash);
    restored.state.fix_links = FixLinks::default();
    assert_ne!(restored.state.state_hash().expect("hash"), hash);
}

#[test]
fn admission_prints_only_the_fix_commands_the_state_applied() {
    let log = [
        logon(9, false),
        fix(2, deposit(5, 1)),
        fix(2, deposit(5, 1)),
        fix(3, deposit(5, 2)),
        logon(10, true),
        fix(2, deposit(5, 3)),
    ];
    let mut admission = Admission::new();
    let printed: Vec<LogEntry> = log
        .iter()
        .flat_map(|entry| admission.core_commands(entry))
        .map(LogEntry::Core)
        .collect();
    assert_eq!(printed, vec![deposit(5, 1), deposit(5, 2), deposit(5, 3)]);
}
