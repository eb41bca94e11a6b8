//! Sessions that expire, against a model: whatever the times and the
//! entries, a session expires at the first entry past its grace since its
//! last entry, its protected accounts' orders are cancelled then and only
//! then, each order at most once, others are untouched, and a replica
//! restored from a snapshot part-way decides alike, as does the engine
//! fed only the core commands `exchange log dump --core-only` prints.

use std::collections::{BTreeMap, BTreeSet};

use exchange_types::{order_updates, Change};
use proptest::prelude::*;

use crate::core_state::CoreState;
use crate::entry::LogEntry;
use crate::sessions_expiry_tests::{
    market, market_log, next, open, place, protect, sequenced, tick, GRACE_MS, MS, T0,
};

const GATEWAYS: u64 = 2;
const ACCOUNTS: u64 = 3;

#[derive(Clone, Debug)]
enum Action {
    Alive(u64),
    Protect {
        gateway: u64,
        account: u64,
        on: bool,
    },
    Place {
        gateway: u64,
        account: u64,
    },
    Direct(u64),
    Tick,
}

fn action() -> impl Strategy<Value = Action> {
    let gateway = 0..GATEWAYS;
    let account = 1..=ACCOUNTS;
    prop_oneof![
        2 => gateway.clone().prop_map(Action::Alive),
        2 => (gateway.clone(), account.clone(), any::<bool>())
            .prop_map(|(gateway, account, on)| Action::Protect { gateway, account, on }),
        3 => (gateway, account.clone())
            .prop_map(|(gateway, account)| Action::Place { gateway, account }),
        1 => account.prop_map(Action::Direct),
        2 => Just(Action::Tick),
    ]
}

fn session_of(gateway: u64) -> u64 {
    100 + gateway
}

/// What the state should hold: each session's last entry, whether it
/// expired, the connections protecting each account, and each account's
/// resting orders.
#[derive(Default)]
struct Model {
    last_alive: BTreeMap<u64, u64>,
    expired: BTreeSet<u64>,
    protected: BTreeMap<u64, BTreeMap<u64, u32>>,
    open_orders: BTreeMap<u64, usize>,
}

impl Model {
    fn pass_time(&mut self, ts: u64) {
        for (session, last) in &self.last_alive {
            if self.expired.contains(session) || ts <= last + GRACE_MS * MS {
                continue;
            }
            self.expired.insert(*session);
            for account in self.protected.remove(session).unwrap_or_default().keys() {
                self.open_orders.insert(*account, 0);
            }
        }
    }

    /// Whether the session's entry is applied (its session lives).
    fn session_entry(&mut self, session: u64, ts: u64) -> bool {
        if self.expired.contains(&session) {
            return false;
        }
        self.last_alive.insert(session, ts);
        true
    }

    fn protect(&mut self, session: u64, account: u64, on: bool) {
        let counts = self.protected.entry(session).or_default();
        let count = counts.entry(account).or_default();
        if on {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
        }
        if *count == 0 {
            counts.remove(&account);
        }
    }
}

/// The log of `steps` (time advances in ms, actions) and the model after.
fn build(steps: &[(u64, Action)]) -> (Vec<LogEntry>, Model) {
    let mut model = Model::default();
    let mut log = Vec::new();
    let mut seqs = BTreeMap::new();
    for gateway in 0..GATEWAYS {
        log.push(open(T0, session_of(gateway), &format!("gw-{gateway}")));
        model.last_alive.insert(session_of(gateway), T0);
    }
    let mut ts = T0;
    for (n, (advance_ms, action)) in steps.iter().enumerate() {
        ts += advance_ms * MS;
        model.pass_time(ts);
        let mut in_session = |gateway: u64, entry: LogEntry| {
            let seq = seqs.entry(gateway).or_insert(0u64);
            *seq += 1;
            sequenced(session_of(gateway), *seq, entry)
        };
        let entry = match action {
            Action::Alive(gateway) => {
                model.session_entry(session_of(*gateway), ts);
                in_session(*gateway, LogEntry::SessionAlive { ts })
            }
            Action::Protect {
                gateway,
                account,
                on,
            } => {
                if model.session_entry(session_of(*gateway), ts) {
                    model.protect(session_of(*gateway), *account, *on);
                }
                in_session(*gateway, protect(ts, *account, *on))
            }
            Action::Place { gateway, account } => {
                if model.session_entry(session_of(*gateway), ts) {
                    *model.open_orders.entry(*account).or_default() += 1;
                }
                in_session(*gateway, place(ts, *account, &format!("o{n}")))
            }
            Action::Direct(account) => {
                *model.open_orders.entry(*account).or_default() += 1;
                place(ts, *account, &format!("o{n}"))
            }
            Action::Tick => tick(ts),
        };
        log.push(entry);
    }
    (log, model)
}

fn steps() -> impl Strategy<Value = Vec<(u64, Action)>> {
    // Advances around the grace, so sessions both live and expire.
    prop::collection::vec((0..GRACE_MS * 3 / 2, action()), 1..60)
}

proptest! {
    #[test]
    fn sessions_expire_as_the_model_says_on_every_replica(
        steps in steps(),
        restore_at in 0..70usize,
    ) {
        let (log, model) = build(&steps);
        let mut replica = market();
        let mut restored = None;
        let restore_at = restore_at.min(log.len());
        let mut canceled = BTreeSet::new();
        for (n, entry) in log.iter().enumerate() {
            if n == restore_at {
                let bytes = replica.snapshot().expect("snapshot");
                restored = Some(CoreState::restore(&bytes).expect("restores"));
            }
            let applied = next(&mut replica, entry);
            for event in &applied.events {
                for update in order_updates(&event.kind) {
                    if matches!(update.change, Change::Canceled(_)) {
                        prop_assert!(canceled.insert(update.order_id), "cancelled twice");
                    }
                }
            }
            if let Some(other) = restored.as_mut() {
                prop_assert_eq!(next(other, entry), applied);
            }
        }
        for account in 1..=ACCOUNTS {
            let expected = model.open_orders.get(&account).copied().unwrap_or(0);
            prop_assert_eq!(replica.history.open_orders_of(account, None).len(), expected);
        }
        for gateway in 0..GATEWAYS {
            let session = session_of(gateway);
            let open = replica.state.session_last_seq(session).is_some();
            prop_assert_eq!(open, !model.expired.contains(&session));
        }
        if let Some(other) = restored {
            prop_assert_eq!(other.state.state_hash().unwrap(), replica.state.state_hash().unwrap());
        }
        let mut admission = crate::admission::Admission::new();
        let mut engine = exchange_core::Engine::new();
        let mut events = Vec::new();
        for entry in market_log().iter().chain(&log) {
            for command in admission.core_commands(entry) {
                engine.apply(&command, &mut events);
            }
        }
        prop_assert!(engine.snapshot() == replica.state.engine.snapshot(), "core-only replay");
    }
}
