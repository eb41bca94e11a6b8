//! Client sessions: the table's rules, the state's outcomes, and the
//! entries' encodings.

use exchange_types::Stamped;

use crate::core_state::CoreState;
use crate::entry::{EntryError, LogEntry, SEQUENCED_HEADER_BYTES, SEQUENCED_TAG};
use crate::limits::{MAX_CLOSED_SESSIONS, MAX_GATEWAY_NAME_LEN, MAX_OPEN_SESSIONS};
use crate::replication::{decode_batch, encode_batch};
use crate::sessions::{SessionRefusal, Sessions};
use crate::state::ServerState;

fn core(ts: u64, line: &str) -> LogEntry {
    let mut stamped: Stamped = exchange_codec::decode_command(line).expect("command");
    stamped.ts = ts;
    LogEntry::Core(stamped)
}

fn deposit(ts: u64, amount: u64) -> LogEntry {
    core(
        ts,
        &format!(r#"{{"cmd":"deposit","account":1,"asset":"USD","amount":"{amount}"}}"#),
    )
}

fn open(session: u64, gateway: &str) -> LogEntry {
    LogEntry::OpenSession {
        ts: 1,
        session,
        gateway: gateway.into(),
        cancel_grace_ms: None,
        incarnation: None,
    }
}

fn sequenced(session: u64, seq: u64, entry: LogEntry) -> LogEntry {
    LogEntry::Sequenced {
        session,
        seq,
        entry: Box::new(entry),
    }
}

/// Applies `entry` as the state's next one.
fn next(core: &mut CoreState, entry: &LogEntry) -> crate::Applied {
    let index = core.state.applied_index + 1;
    core.apply(index, entry)
}

#[test]
fn a_sequenced_entry_applies_once_and_exactly_as_the_bare_one() {
    let mut with_session = CoreState::new();
    let mut bare = CoreState::new();
    let opened = next(&mut with_session, &open(7, "gw-a"));
    assert_eq!(opened.command, "open_session");
    assert_eq!(opened.session_refusal, None);
    assert_eq!(with_session.state.session_last_seq(7), Some(0));
    next(&mut bare, &open(8, "gw-other"));

    let applied = next(&mut with_session, &sequenced(7, 1, deposit(5, 100)));
    assert_eq!(applied, next(&mut bare, &deposit(5, 100)));
    assert_eq!(applied.command, "deposit");
    assert!(!applied.events.is_empty());
    assert_eq!(with_session.state.session_last_seq(7), Some(1));

    let engine = with_session.state.engine.snapshot();
    for seq in [1, 0] {
        let again = next(&mut with_session, &sequenced(7, seq, deposit(6, 100)));
        assert_eq!(again.command, "duplicate");
        assert_eq!(
            again.session_refusal,
            Some(SessionRefusal::Duplicate { last_seq: 1 })
        );
        assert!(again.events.is_empty());
        assert_eq!(again.ts, 6, "stamped as its command");
    }
    assert_eq!(with_session.state.engine.snapshot(), engine, "unchanged");

    // A gap is fine: the numbers only need to increase.
    let later = next(&mut with_session, &sequenced(7, 5, deposit(7, 1)));
    assert_eq!(later.command, "deposit");
    assert_eq!(with_session.state.session_last_seq(7), Some(5));
    // Opening it again is a re-submission: nothing changes.
    let reopened = next(&mut with_session, &open(7, "gw-a"));
    assert_eq!(reopened.session_refusal, None);
    assert_eq!(with_session.state.session_last_seq(7), Some(5));
}

#[test]
fn an_unknown_session_is_stale() {
    let mut core = CoreState::new();
    let applied = next(&mut core, &sequenced(3, 1, deposit(1, 1)));
    assert_eq!(applied.command, "stale_session");
    assert_eq!(
        applied.session_refusal,
        Some(SessionRefusal::UnknownSession)
    );
    assert!(applied.events.is_empty());
    assert_eq!(core.state.session_last_seq(3), None);
}

#[test]
fn reopening_a_gateway_closes_its_previous_sessions_for_good() {
    let mut core = CoreState::new();
    next(&mut core, &open(1, "gw-a"));
    next(&mut core, &open(2, "gw-b"));
    next(&mut core, &sequenced(1, 1, deposit(1, 1)));
    next(&mut core, &open(3, "gw-a"));

    assert_eq!(core.state.session_last_seq(1), None);
    assert_eq!(core.state.session_last_seq(2), Some(0), "another gateway");
    assert_eq!(core.state.session_last_seq(3), Some(0));
    let stale = next(&mut core, &sequenced(1, 2, deposit(2, 1)));
    assert_eq!(stale.command, "stale_session");
    assert_eq!(stale.session_refusal, Some(SessionRefusal::ClosedSession));
    assert!(stale.events.is_empty());

    // A late copy of the old incarnation's open does not bring it back.
    let late = next(&mut core, &open(1, "gw-a"));
    assert_eq!(late.session_refusal, Some(SessionRefusal::ClosedSession));
    assert_eq!(core.state.session_last_seq(1), None);
    assert_eq!(core.state.session_last_seq(3), Some(0));
    assert_eq!(core.state.sessions.open_count(), 2);
}

#[test]
fn a_full_table_refuses_new_gateways_but_not_restarts() {
    let mut sessions = Sessions::default();
    for id in 0..MAX_OPEN_SESSIONS as u64 {
        sessions.open(id, &format!("gw-{id}")).expect("room");
    }
    let before = sessions.clone();
    assert_eq!(
        sessions.open(u64::MAX, "gw-new"),
        Err(SessionRefusal::TableFull)
    );
    assert_eq!(sessions, before, "a refused open changes nothing");
    assert_eq!(sessions.last_seq(u64::MAX), None);
    // A restarted gateway takes its old session's place.
    sessions.open(u64::MAX, "gw-0").expect("replaces session 0");
    assert_eq!(sessions.last_seq(0), None);
    assert_eq!(sessions.open_count(), MAX_OPEN_SESSIONS);
}

#[test]
fn closed_sessions_are_remembered_up_to_the_bound_oldest_forgotten() {
    let mut sessions = Sessions::default();
    let opens = (MAX_CLOSED_SESSIONS + 3) as u64;
    for id in 1..=opens + 1 {
        sessions.open(id, "gw").expect("opens");
    }
    // Sessions 1..=opens are closed; the first three are forgotten.
    for id in 1..=3 {
        assert_eq!(sessions.get(id), None, "session {id}");
        assert_eq!(sessions.admit(id, 1), Err(SessionRefusal::UnknownSession));
    }
    assert_eq!(sessions.admit(4, 1), Err(SessionRefusal::ClosedSession));
    assert_eq!(sessions.admit(opens, 1), Err(SessionRefusal::ClosedSession));
    assert_eq!(sessions.admit(opens + 1, 1), Ok(()));
    assert_eq!(sessions.open_count(), 1);
}

#[test]
fn odd_opens_are_refused() {
    let mut sessions = Sessions::default();
    assert_eq!(sessions.open(1, ""), Err(SessionRefusal::GatewayName));
    let long = "g".repeat(MAX_GATEWAY_NAME_LEN + 1);
    assert_eq!(sessions.open(1, &long), Err(SessionRefusal::GatewayName));
    sessions.open(1, &long[1..]).expect("the longest name");
    assert_eq!(sessions.open(1, "gw-b"), Err(SessionRefusal::IdTaken));
    assert_eq!(sessions.last_seq(1), Some(0));
    assert!(Sessions::default().is_empty());
    assert!(!sessions.is_empty());
}

#[test]
fn the_log_clock_stamps_the_inner_entry() {
    let mut entry = sequenced(1, 1, deposit(0, 1));
    entry.set_ts(42);
    assert_eq!(entry.ts(), 42);
    let LogEntry::Sequenced { entry: inner, .. } = &entry else {
        panic!("still sequenced");
    };
    assert_eq!(**inner, deposit(42, 1));
    let mut opening = open(1, "gw");
    opening.set_ts(43);
    assert_eq!(opening.ts(), 43);
}

/// A place sent through a session lands in the history and is answered
/// with its order, as a bare one is; a duplicate of it is neither.
#[test]
fn a_sequenced_order_is_recorded_and_answered_like_a_bare_one() {
    let setup = [
        LogEntry::CreateAccount {
            ts: 1,
            api_key: "key-1".into(),
            legacy_secret: None,
        },
        core(
            2,
            concat!(
                r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
                r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
                r#""price_collar_pct":"50","reference_price":"100"}"#,
            ),
        ),
        deposit(3, 100_000),
        open(9, "gw"),
    ];
    let place = core(
        4,
        concat!(
            r#"{"cmd":"place","account":1,"client_order_id":"b","symbol":"BTC-USD","#,
            r#""side":"buy","type":"limit","price":"100","qty":"2","tif":"gtc"}"#,
        ),
    );
    let (mut with_session, mut bare) = (CoreState::new(), CoreState::new());
    for entry in &setup {
        next(&mut with_session, entry);
        next(&mut bare, entry);
    }
    let applied = next(&mut with_session, &sequenced(9, 1, place.clone()));
    assert!(applied.order.is_some(), "answered with its order");
    assert_eq!(applied, next(&mut bare, &place));
    assert_eq!(with_session.history, bare.history);
    assert_eq!(with_session.history.open_orders_of(1, None).len(), 1);

    let again = next(&mut with_session, &sequenced(9, 1, place));
    assert_eq!(again.command, "duplicate");
    assert_eq!(again.order, None);
    assert_eq!(with_session.history.open_orders_of(1, None).len(), 1);
}

#[test]
fn sessions_are_in_the_snapshot_and_the_hash_only_once_there_are_any() {
    let mut core = CoreState::new();
    next(&mut core, &deposit(1, 1));
    let without = core.snapshot().unwrap();
    assert!(
        !String::from_utf8_lossy(&without).contains("sessions"),
        "a state without sessions is written (and hashed) as before them"
    );
    let hash = core.state.state_hash().unwrap();

    let mut other = CoreState::restore(&without).unwrap();
    assert_eq!(other.state.state_hash().unwrap(), hash);
    next(&mut core, &open(5, "gw"));
    next(&mut other, &open(6, "gw"));
    assert_ne!(
        core.state.state_hash().unwrap(),
        other.state.state_hash().unwrap(),
        "the table is covered by the hash"
    );
    next(&mut core, &sequenced(5, 3, deposit(2, 1)));
    let restored = ServerState::restore(&core.snapshot().unwrap()).unwrap();
    assert_eq!(restored.session_last_seq(5), Some(3));
    assert_eq!(restored.sessions, core.state.sessions);
    assert_eq!(
        restored.state_hash().unwrap(),
        core.state.state_hash().unwrap()
    );
}

fn entries() -> Vec<LogEntry> {
    vec![
        open(u64::MAX, "gw-a"),
        sequenced(u64::MAX, u64::MAX - 1, deposit(9, 12)),
        sequenced(
            1,
            2,
            LogEntry::CreateAccount {
                ts: 3,
                api_key: "k".into(),
                legacy_secret: None,
            },
        ),
        sequenced(4, 5, open(6, "gw-b")),
        deposit(10, 1),
    ]
}

#[test]
fn session_entries_round_trip_in_every_form() {
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
    let bytes = entries[1].encode().unwrap();
    assert_eq!(bytes[0], SEQUENCED_TAG);
    assert_eq!(bytes[1..9], u64::MAX.to_le_bytes());
    assert_eq!(bytes[9..17], (u64::MAX - 1).to_le_bytes());
    assert_eq!(bytes[17..], deposit(9, 12).encode().unwrap());
    let json = String::from_utf8(entries[1].to_json().unwrap()).unwrap();
    assert!(json.starts_with(r#"{"cmd":"sequenced","session":18446744073709551615,"#));
}

#[test]
fn a_sequenced_entry_inside_another_is_refused() {
    let nested = sequenced(1, 1, sequenced(2, 2, deposit(1, 1)));
    assert!(matches!(nested.encode(), Err(EntryError::NestedSequenced)));
    assert!(matches!(nested.to_json(), Err(EntryError::NestedSequenced)));

    let inner = sequenced(2, 2, deposit(1, 1)).encode().unwrap();
    let mut bytes = vec![SEQUENCED_TAG];
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(&inner);
    assert!(matches!(
        LogEntry::decode(&bytes),
        Err(EntryError::NestedSequenced)
    ));
    let inner_json = String::from_utf8(sequenced(2, 2, deposit(1, 1)).to_json().unwrap());
    let json = format!(
        r#"{{"cmd":"sequenced","session":1,"seq":1,"entry":{}}}"#,
        inner_json.unwrap()
    );
    assert!(matches!(
        LogEntry::decode(json.as_bytes()),
        Err(EntryError::NestedSequenced)
    ));
    // Deep nesting is refused at the second level, not recursed into.
    let mut deep = Vec::new();
    for _ in 0..100_000 {
        deep.push(SEQUENCED_TAG);
        deep.extend_from_slice(&[0; 16]);
    }
    deep.extend_from_slice(&deposit(1, 1).encode().unwrap());
    assert!(matches!(
        LogEntry::decode(&deep),
        Err(EntryError::NestedSequenced)
    ));
}

#[test]
fn a_truncated_sequenced_entry_is_refused() {
    for entry in &entries()[1..4] {
        let bytes = entry.encode().unwrap();
        for len in 1..bytes.len() {
            let error = LogEntry::decode(&bytes[..len]).expect_err("truncated");
            if len <= SEQUENCED_HEADER_BYTES {
                assert!(matches!(error, EntryError::Truncated), "{len}: {error}");
            }
        }
    }
}

fn open_as(session: u64, gateway: &str, incarnation: Option<u64>) -> LogEntry {
    LogEntry::OpenSession {
        ts: 1,
        session,
        gateway: gateway.into(),
        cancel_grace_ms: None,
        incarnation,
    }
}

/// A gateway that crashed with its open on the way: the open arrives after
/// its successor's and must neither close the successor's session nor
/// let the dead incarnation's commands in.
#[test]
fn a_dead_incarnations_late_open_is_refused_and_changes_nothing() {
    let mut core = CoreState::new();
    let successor = next(&mut core, &open_as(20, "gw-a", Some(200)));
    assert_eq!(successor.session_refusal, None);
    let (sessions, engine) = (core.state.sessions.clone(), core.state.engine.snapshot());
    let late = next(&mut core, &open_as(10, "gw-a", Some(100)));
    assert_eq!(late.session_refusal, Some(SessionRefusal::Superseded));
    assert_eq!(core.state.sessions, sessions, "the table is unchanged");
    assert_eq!(
        core.state.engine.snapshot(),
        engine,
        "nothing was cancelled"
    );
    assert_eq!(core.state.session_last_seq(20), Some(0), "still open");
    let refused = next(&mut core, &sequenced(10, 1, deposit(5, 100)));
    assert_eq!(
        refused.session_refusal,
        Some(SessionRefusal::UnknownSession)
    );
    assert!(refused.events.is_empty());
    let applied = next(&mut core, &sequenced(20, 1, deposit(6, 100)));
    assert_eq!(applied.command, "deposit");

    // A later incarnation still takes over, and another gateway name is
    // not ordered against this one.
    let newer = next(&mut core, &open_as(30, "gw-a", Some(300)));
    assert_eq!(newer.session_refusal, None);
    let closed = next(&mut core, &sequenced(20, 2, deposit(7, 1)));
    assert_eq!(closed.session_refusal, Some(SessionRefusal::ClosedSession));
    let other = next(&mut core, &open_as(40, "gw-b", Some(1)));
    assert_eq!(other.session_refusal, None);
}

/// Opens logged before incarnations carry none and are never refused for
/// it, so old logs apply as they did.
#[test]
fn opens_without_an_incarnation_are_not_ordered() {
    let mut sessions = Sessions::default();
    sessions
        .open_at(20, "gw-a", 1, None, Some(200))
        .expect("the newer");
    sessions
        .open_at(10, "gw-a", 2, None, None)
        .expect("unordered");
    assert!(sessions.open_at(30, "gw-a", 3, None, Some(100)).is_err());
    let mut legacy = Sessions::default();
    legacy.open(1, "gw-a").expect("open");
    legacy.open(2, "gw-a").expect("open");
    legacy.open(3, "gw-a").expect("open");
    assert_eq!(legacy.open_count(), 1);
}
