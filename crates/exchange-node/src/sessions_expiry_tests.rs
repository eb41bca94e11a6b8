//! Sessions that expire: the cluster keeps cancel-on-disconnect when a
//! whole gateway dies, by the log's time alone, once, on every replica.

use exchange_types::{Command, Stamped};

use crate::core_state::CoreState;
use crate::entry::{LogEntry, SEQUENCED_HEADER_BYTES};
use crate::sessions::SessionRefusal;
use crate::Applied;

pub(crate) const MS: u64 = 1_000_000;
pub(crate) const GRACE_MS: u64 = 1_000;
/// The gateway's session opens at this time.
pub(crate) const T0: u64 = 10_000 * MS;

pub(crate) fn core(ts: u64, line: &str) -> LogEntry {
    let mut stamped: Stamped = exchange_codec::decode_command(line).expect("command");
    stamped.ts = ts;
    LogEntry::Core(stamped)
}

pub(crate) fn tick(ts: u64) -> LogEntry {
    LogEntry::Core(Stamped {
        ts,
        command: Command::Tick,
    })
}

pub(crate) fn open(ts: u64, session: u64, gateway: &str) -> LogEntry {
    LogEntry::OpenSession {
        ts,
        session,
        gateway: gateway.into(),
        cancel_grace_ms: Some(GRACE_MS),
        incarnation: None,
    }
}

pub(crate) fn sequenced(session: u64, seq: u64, entry: LogEntry) -> LogEntry {
    LogEntry::Sequenced {
        session,
        seq,
        entry: Box::new(entry),
    }
}

pub(crate) fn protect(ts: u64, account: u64, on: bool) -> LogEntry {
    LogEntry::SessionProtect { ts, account, on }
}

/// A resting buy of `account` (it never trades: nobody sells).
pub(crate) fn place(ts: u64, account: u64, id: &str) -> LogEntry {
    core(
        ts,
        &format!(
            concat!(
                r#"{{"cmd":"place","account":{},"client_order_id":"{}","symbol":"BTC-USD","#,
                r#""side":"buy","type":"limit","price":"90","qty":"1","tif":"gtc"}}"#,
            ),
            account, id
        ),
    )
}

/// Applies `entry` as the state's next one.
pub(crate) fn next(core: &mut CoreState, entry: &LogEntry) -> Applied {
    let index = core.state.applied_index + 1;
    core.apply(index, entry)
}

/// An instrument, and accounts 1 to 3 with dollars, before any session.
pub(crate) fn market_log() -> Vec<LogEntry> {
    let listing = concat!(
        r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
        r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
        r#""price_collar_pct":"50","reference_price":"100"}"#,
    );
    let mut log = vec![core_entry(1, listing)];
    for n in 1..=3 {
        log.push(LogEntry::CreateAccount {
            ts: 2,
            api_key: format!("key-{n}"),
            legacy_secret: None,
        });
        let deposit =
            format!(r#"{{"cmd":"deposit","account":{n},"asset":"USD","amount":"1000000"}}"#);
        log.push(core_entry(3, &deposit));
    }
    log
}

/// The state after [`market_log`].
pub(crate) fn market() -> CoreState {
    let mut core = CoreState::new();
    for entry in market_log() {
        next(&mut core, &entry);
    }
    core
}

fn core_entry(ts: u64, line: &str) -> LogEntry {
    core(ts, line)
}

fn open_orders(core: &CoreState, account: u64) -> usize {
    core.history.open_orders_of(account, None).len()
}

/// Session 7 of gateway "gw-a" protects account 1 and places an order of
/// accounts 1 and 2 (only 1 protected); account 3 places one directly.
/// Its last entry is at `T0 + 2 ms`.
fn protected_session(core: &mut CoreState) {
    assert_eq!(next(core, &open(T0, 7, "gw-a")).session_refusal, None);
    let registered = next(core, &sequenced(7, 1, protect(T0, 1, true)));
    assert_eq!(registered.command, "session_protect");
    assert_eq!(registered.session_refusal, None);
    next(core, &sequenced(7, 2, place(T0 + MS, 1, "p1")));
    next(core, &sequenced(7, 3, place(T0 + 2 * MS, 2, "u2")));
    next(core, &place(T0 + 2 * MS, 3, "u3"));
    for account in 1..=3 {
        assert_eq!(open_orders(core, account), 1);
    }
}

#[test]
fn a_silent_session_expires_at_the_first_entry_past_its_grace() {
    let mut core = market();
    protected_session(&mut core);
    let last = T0 + 2 * MS;
    // However many entries come, none later than the grace: alive.
    for _ in 0..50 {
        let applied = next(&mut core, &tick(last + GRACE_MS * MS));
        assert_eq!(applied.expiry_events, 0);
    }
    assert_eq!(open_orders(&core, 1), 1);

    let expired = next(&mut core, &tick(last + GRACE_MS * MS + 1));
    assert!(expired.expiry_events > 0, "{expired:?}");
    assert_eq!(expired.command, "tick");
    assert_eq!(open_orders(&core, 1), 0, "protected: cancelled");
    assert_eq!(open_orders(&core, 2), 1, "placed through it, unprotected");
    assert_eq!(open_orders(&core, 3), 1, "not through it");

    // Closed: its late entries are stale; nothing is cancelled again.
    let late = next(
        &mut core,
        &sequenced(7, 4, place(last + 2 * GRACE_MS * MS, 1, "p2")),
    );
    assert_eq!(late.session_refusal, Some(SessionRefusal::ClosedSession));
    assert_eq!(late.expiry_events, 0);
    let again = next(&mut core, &tick(last + 10 * GRACE_MS * MS));
    assert_eq!(again.expiry_events, 0);
    assert!(again
        .events
        .iter()
        .all(|e| !format!("{e:?}").contains("Cancel")));
}

#[test]
fn keep_alives_keep_a_session_alive() {
    let mut core = market();
    protected_session(&mut core);
    let mut ts = T0 + 2 * MS;
    for seq in 4..44 {
        ts += GRACE_MS * MS / 2;
        let alive = next(&mut core, &sequenced(7, seq, LogEntry::SessionAlive { ts }));
        assert_eq!(alive.command, "session_alive");
        assert_eq!(alive.session_refusal, None);
        assert!(alive.events.is_empty());
        let ticked = next(&mut core, &tick(ts + GRACE_MS * MS / 4));
        assert_eq!(ticked.expiry_events, 0);
    }
    assert_eq!(open_orders(&core, 1), 1);
    // A duplicate (re-sent) entry counts too: its gateway lives.
    ts += GRACE_MS * MS;
    let dup = next(&mut core, &sequenced(7, 1, LogEntry::SessionAlive { ts }));
    assert_eq!(dup.command, "duplicate");
    assert_eq!(next(&mut core, &tick(ts + GRACE_MS * MS)).expiry_events, 0);
    // Then silence.
    assert!(next(&mut core, &tick(ts + GRACE_MS * MS + 1)).expiry_events > 0);
    assert_eq!(open_orders(&core, 1), 0);
}

#[test]
fn a_restarted_gateway_has_its_old_sessions_protection_cancelled_at_once() {
    let mut core = market();
    protected_session(&mut core);
    next(&mut core, &open(T0 + 3 * MS, 9, "gw-b"));
    let reopened = next(&mut core, &open(T0 + 4 * MS, 8, "gw-a"));
    assert_eq!(reopened.session_refusal, None);
    assert!(reopened.expiry_events > 0);
    assert_eq!(reopened.expiry_events, reopened.events.len());
    assert_eq!(open_orders(&core, 1), 0);
    assert_eq!(open_orders(&core, 2), 1);
    // The new session protects nothing yet, and the other gateway's
    // session is untouched.
    assert!(next(&mut core, &tick(T0 + 5 * MS)).events.is_empty());
    assert_eq!(core.state.session_last_seq(9), Some(0));
}

#[test]
fn protection_counts_connections_and_ends_with_the_last() {
    let mut core = market();
    next(&mut core, &open(T0, 7, "gw-a"));
    next(&mut core, &sequenced(7, 1, protect(T0, 1, true)));
    next(&mut core, &sequenced(7, 2, protect(T0, 1, true)));
    next(&mut core, &sequenced(7, 3, protect(T0, 2, true)));
    next(&mut core, &sequenced(7, 4, place(T0, 1, "a")));
    next(&mut core, &sequenced(7, 5, place(T0, 2, "b")));
    // One of account 1's two connections closed; account 2's only one.
    next(&mut core, &sequenced(7, 6, protect(T0, 1, false)));
    next(&mut core, &sequenced(7, 7, protect(T0, 2, false)));
    // Closing one never opened changes nothing.
    let unknown = next(&mut core, &sequenced(7, 8, protect(T0, 3, false)));
    assert_eq!(unknown.session_refusal, None);
    assert!(next(&mut core, &tick(T0 + GRACE_MS * MS + 1)).expiry_events > 0);
    assert_eq!(open_orders(&core, 1), 0);
    assert_eq!(open_orders(&core, 2), 1);
}

#[test]
fn session_entries_outside_a_session_change_nothing() {
    let mut core = market();
    let hash = core.state.state_hash().unwrap();
    let alive = next(&mut core, &LogEntry::SessionAlive { ts: T0 });
    assert_eq!(alive.session_refusal, Some(SessionRefusal::NotSequenced));
    let protect = next(&mut core, &protect(T0, 1, true));
    assert_eq!(protect.session_refusal, Some(SessionRefusal::NotSequenced));
    // Only the applied index moved.
    let mut same = market();
    next(&mut same, &tick(1));
    next(&mut same, &tick(1));
    assert_eq!(
        core.state.state_hash().unwrap(),
        same.state.state_hash().unwrap()
    );
    assert_ne!(core.state.state_hash().unwrap(), hash);
}

#[test]
fn a_session_without_a_grace_never_expires_and_hashes_as_before() {
    let mut core = market();
    let mut legacy = LogEntry::OpenSession {
        ts: T0,
        session: 7,
        gateway: "gw-a".into(),
        cancel_grace_ms: None,
        incarnation: None,
    };
    next(&mut core, &legacy);
    next(&mut core, &sequenced(7, 1, protect(T0, 1, true)));
    next(&mut core, &sequenced(7, 2, place(T0, 1, "a")));
    assert_eq!(next(&mut core, &tick(u64::MAX / 2)).expiry_events, 0);
    assert_eq!(open_orders(&core, 1), 1);
    // Its JSON line is the one written before grace times existed.
    legacy.set_ts(1);
    let line = String::from_utf8(legacy.encode().unwrap()).unwrap();
    assert_eq!(
        line,
        r#"{"cmd":"open_session","ts":1,"session":7,"gateway":"gw-a"}"#
    );
}

#[test]
fn the_new_entries_encode_and_decode_in_both_forms() {
    let entries = [
        open(T0, 7, "gw-a"),
        sequenced(7, 3, LogEntry::SessionAlive { ts: T0 + 5 }),
        sequenced(7, 4, protect(T0 + 6, 42, true)),
        protect(T0 + 7, 42, false),
        LogEntry::SessionAlive { ts: 9 },
    ];
    for entry in entries {
        let bytes = entry.encode().unwrap();
        assert_eq!(LogEntry::decode(&bytes).unwrap(), entry);
        let json = entry.to_json().unwrap();
        assert_eq!(
            LogEntry::decode(&json).unwrap(),
            entry,
            "{}",
            String::from_utf8_lossy(&json)
        );
    }
    let alive = sequenced(7, 3, LogEntry::SessionAlive { ts: 1 });
    assert_eq!(alive.encode().unwrap().len(), SEQUENCED_HEADER_BYTES + 9);
    let json = String::from_utf8(alive.to_json().unwrap()).unwrap();
    assert_eq!(
        json,
        r#"{"cmd":"sequenced","session":7,"seq":3,"entry":{"cmd":"session_alive","ts":1}}"#
    );
    // A keep-alive cut short is an error, not another entry.
    let mut cut = alive.encode().unwrap();
    cut.pop();
    assert!(LogEntry::decode(&cut).is_err());
}
