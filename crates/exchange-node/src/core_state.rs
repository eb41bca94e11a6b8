//! What a node holds: the replicated [`ServerState`] and, beside it, the
//! [`History`], the API's view of open orders and recent trades.
//!
//! The history is a projection of the events the state's entries produce,
//! updated from each applied entry's events after the entry is applied,
//! entry by entry in log order ([`HistoryNote`]). [`CoreState::apply`]
//! does both on one thread (recovery, mirrors' tests); a running node
//! keeps the history on its publisher thread ([`crate::publisher`]),
//! which reads of it and snapshots reach in log order, so they see both
//! as of the same command.
//! It is not part of the replicated state: it only presents what the
//! events said (strings, timestamps, running totals), nothing the engine
//! decides by, so the state hash does not cover it and two nodes may
//! differ in it without disagreeing on anything that matters.
//!
//! It must survive a restart all the same, and it cannot be rebuilt from
//! the engine: an open order's type, creation time, original quantity and
//! fill total, and the markets' recent trades, are only in the events, and
//! an order may have been placed before the oldest entry the compacted log
//! still has. So the snapshot file carries it, as a section of its own
//! after the replicated state's (see [`crate::state`] for the layout);
//! recovery restores both from the snapshot and replays the log after it
//! into both. A follower that installs the leader's snapshot takes the
//! leader's history with it.

use exchange_types::OrderId;

use crate::entry::LogEntry;
use crate::history::History;
use crate::state::{
    answered_order, history_of_version_1, split, Applied, HistorySection, SectionError,
    ServerState, StateCopy, StateSnapshotError,
};

#[derive(Default)]
pub struct CoreState {
    pub state: ServerState,
    pub history: History,
}

impl CoreState {
    pub fn new() -> Self {
        CoreState::default()
    }

    /// Applies one entry to the state, then records its events in the
    /// history; the outcome carries the order it answers for.
    pub fn apply(&mut self, index: u64, entry: &LogEntry) -> Applied {
        let mut applied = self.state.apply(index, entry);
        HistoryNote::of(entry, &applied).record(&mut self.history, &mut applied);
        applied
    }

    /// What [`CoreState::snapshot`] writes, before it is written: the
    /// engine's snapshot is built here, the history is shared rather than
    /// copied, so the caller only pauses for this and another thread
    /// serialises it.
    pub fn copy(&self) -> StateCopy {
        StateCopy {
            replicated: self.state.replicated(),
            history: self.history.clone(),
        }
    }

    /// The snapshot bytes: the replicated state, then the history.
    pub fn snapshot(&self) -> Result<Vec<u8>, SectionError> {
        self.copy().into_bytes()
    }

    /// Both from snapshot bytes (either version; see [`crate::state`]).
    pub fn restore(bytes: &[u8]) -> Result<CoreState, StateSnapshotError> {
        let sections = split(bytes)?;
        let state = ServerState::restore(bytes)?;
        let history = match sections.history {
            HistorySection::Own(json) => serde_json::from_slice(json)?,
            HistorySection::InReplicated => history_of_version_1(sections.replicated)?,
        };
        Ok(CoreState { state, history })
    }
}

/// What recording an applied entry in the history takes besides the
/// outcome: taken where the entry was applied, so that the history may be
/// kept on another thread, entry after entry in log order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HistoryNote {
    /// Whether the entry's own events are recorded (besides the expiry
    /// cancels, which always are).
    own: bool,
    /// The order the entry answers for.
    order: Option<OrderId>,
}

impl HistoryNote {
    pub(crate) fn of(entry: &LogEntry, applied: &Applied) -> HistoryNote {
        // A wrapped command that was admitted is recorded as it would be
        // on its own; a refused one changed nothing.
        if applied.refused_unapplied() {
            return HistoryNote::default();
        }
        let LogEntry::Core(stamped) = entry.inner() else {
            return HistoryNote::default();
        };
        let own = applied.events.get(applied.expiry_events..).unwrap_or(&[]);
        HistoryNote {
            own: true,
            order: answered_order(&stamped.command, own),
        }
    }

    /// Records `applied`'s events in `history`, and gives it the record of
    /// the order it answers for.
    pub(crate) fn record(self, history: &mut History, applied: &mut Applied) {
        // The cancels of expired client sessions, whatever the entry was.
        let (expiry, own) = applied.events.split_at(applied.expiry_events);
        if !expiry.is_empty() {
            history.record(expiry);
        }
        if !self.own {
            return;
        }
        history.record(own);
        applied.order = self.order.and_then(|id| history.shared_order(id));
    }
}

#[cfg(test)]
mod tests {
    use exchange_types::Stamped;

    use super::*;

    fn entry(ts: u64, line: &str) -> LogEntry {
        let mut stamped: Stamped = exchange_codec::decode_command(line).expect("command");
        stamped.ts = ts;
        LogEntry::Core(stamped)
    }

    fn history_json(history: &History) -> serde_json::Value {
        serde_json::to_value(history).expect("json")
    }

    /// Two accounts, an instrument and a trade, leaving the seller's order
    /// open.
    fn traded() -> CoreState {
        let mut core = CoreState::new();
        let mut entries = vec![];
        for n in 1..=2 {
            entries.push(LogEntry::CreateAccount {
                ts: n,
                api_key: format!("key-{n}"),
                legacy_secret: None,
            });
        }
        for (ts, line) in [
            (
                3,
                concat!(
                    r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
                    r#""tick_size":"1","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0,"#,
                    r#""price_collar_pct":"50","reference_price":"100"}"#,
                ),
            ),
            (
                4,
                r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#,
            ),
            (
                5,
                r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"100"}"#,
            ),
            (
                6,
                concat!(
                    r#"{"cmd":"place","account":2,"client_order_id":"s","symbol":"BTC-USD","#,
                    r#""side":"sell","type":"limit","price":"100","qty":"5","tif":"gtc"}"#,
                ),
            ),
            (
                7,
                concat!(
                    r#"{"cmd":"place","account":1,"client_order_id":"b","symbol":"BTC-USD","#,
                    r#""side":"buy","type":"limit","price":"100","qty":"2","tif":"gtc"}"#,
                ),
            ),
        ] {
            entries.push(entry(ts, line));
        }
        for (index, entry) in (1..).zip(&entries) {
            core.apply(index, entry);
        }
        assert_eq!(core.history.open_orders_of(2, None).len(), 1);
        assert_eq!(core.history.trades_of("BTC-USD", 10).len(), 1);
        core
    }

    fn deposit(core: &mut CoreState) {
        let line = r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1"}"#;
        core.apply(core.state.applied_index + 1, &entry(10, line));
    }

    #[test]
    fn the_state_hash_does_not_cover_the_history() {
        let core = traded();
        let hash = core.state.state_hash().unwrap();
        let bytes = core.snapshot().unwrap();

        // The same replicated state beside an empty history: same hash.
        let mut other = CoreState::restore(&bytes).expect("restores");
        other.history = History::default();
        assert_eq!(other.state.state_hash().unwrap(), hash);
        let other_bytes = other.snapshot().unwrap();
        assert_ne!(other_bytes, bytes, "the files differ in the history");
        let state = ServerState::restore(&other_bytes).expect("restores");
        assert_eq!(state.state_hash().unwrap(), hash);

        // A change to the replicated state does change it.
        let mut changed = CoreState::restore(&bytes).expect("restores");
        deposit(&mut changed);
        assert_ne!(changed.state.state_hash().unwrap(), hash);
    }

    #[test]
    fn a_snapshot_restores_state_and_history_exactly() {
        let mut core = traded();
        let bytes = core.snapshot().unwrap();
        let mut restored = CoreState::restore(&bytes).expect("restores");
        assert_eq!(history_json(&restored.history), history_json(&core.history));
        assert_eq!(
            restored.state.state_hash().unwrap(),
            core.state.state_hash().unwrap()
        );
        assert_eq!(restored.state.applied_index, core.state.applied_index);
        assert_eq!(restored.snapshot().unwrap(), bytes);
        // Both go on alike: the same entry gives the same outcome.
        let next = entry(
            8,
            concat!(
                r#"{"cmd":"place","account":1,"client_order_id":"b2","symbol":"BTC-USD","#,
                r#""side":"buy","type":"limit","price":"100","qty":"1","tif":"gtc"}"#,
            ),
        );
        let index = core.state.applied_index + 1;
        let applied = core.apply(index, &next);
        assert!(
            applied.order.is_some(),
            "a place is answered with its order"
        );
        assert_eq!(restored.apply(index, &next), applied);
        assert_eq!(restored.history, core.history);
        assert_eq!(restored.snapshot().unwrap(), core.snapshot().unwrap());
    }

    /// The layout snapshots had before the history left the replicated
    /// state: the engine's length and snapshot, then one JSON object with
    /// the history inside.
    #[test]
    fn a_version_1_snapshot_still_restores() {
        let core = traded();
        let gateway = serde_json::json!({
            "credentials": core.state.credentials,
            "history": core.history,
            "market_sequences": core.state.market_sequences,
            "applied_index": core.state.applied_index,
        });
        let engine = core.state.engine.snapshot();
        let mut old = (engine.len() as u64).to_le_bytes().to_vec();
        old.extend_from_slice(&engine);
        old.extend_from_slice(&serde_json::to_vec(&gateway).expect("json"));

        let restored = CoreState::restore(&old).expect("restores");
        assert_eq!(history_json(&restored.history), history_json(&core.history));
        assert_eq!(
            restored.state.state_hash().unwrap(),
            core.state.state_hash().unwrap()
        );
        assert_eq!(restored.snapshot().unwrap(), core.snapshot().unwrap());
        let state = ServerState::restore(&old).expect("restores");
        assert_eq!(
            state.state_hash().unwrap(),
            core.state.state_hash().unwrap()
        );
    }

    #[test]
    fn an_unknown_version_is_refused_by_name() {
        let bytes = traded().snapshot().unwrap();
        let mut later = bytes.clone();
        later[6] = 9;
        let error = CoreState::restore(&later).err().expect("refused");
        assert!(
            matches!(error, StateSnapshotError::UnknownVersion(9)),
            "{error}"
        );
        assert!(error.to_string().contains("version 9"), "{error}");
        assert!(matches!(
            CoreState::restore(&bytes[..20]).err(),
            Some(StateSnapshotError::Truncated)
        ));
    }

    /// Release builds check it too (`assert!`, not `debug_assert!`): an
    /// entry applied twice would leave this replica unlike the others.
    #[test]
    #[should_panic(expected = "entries apply in order, once")]
    fn an_entry_applied_again_stops_the_replica() {
        let mut core = traded();
        let again = entry(
            8,
            r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1"}"#,
        );
        core.apply(7, &again);
    }
}
