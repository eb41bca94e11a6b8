//! The replicated state machine of the server: the core engine, the API
//! credentials and the history projection, advanced together by log
//! entries. Applying the same entries from the same snapshot gives the same
//! state on every node.

use std::collections::BTreeMap;
use std::sync::Arc;

use exchange_core::Engine;
use exchange_marketdata::MarketSequences;
use exchange_types::{AccountId, Command, Event, EventKind, OrderId};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::entry::LogEntry;
use crate::history::{History, OrderRecord};

/// An account's API credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    pub account: AccountId,
    pub secret: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub by_key: BTreeMap<String, Credential>,
    /// Account ids are handed out in order; 0 is the fee account.
    pub next_account: AccountId,
}

/// What applying one entry produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The command's index (dense, in command order).
    pub index: u64,
    /// The Raft entry (a batch of commands) it came in: a reader that falls
    /// behind the broadcast resumes from the log at it, skipping the
    /// commands up to `index` (the reporting service's `catch_up`, which
    /// reads the log files).
    pub raft_index: u64,
    /// The entry's timestamp, its command's name and the account that
    /// issued it (for `create_account`, the new one): what the reporting
    /// service's audit record needs besides the events.
    pub ts: u64,
    pub command: &'static str,
    pub actor: Option<AccountId>,
    pub events: Vec<Event>,
    /// For `create_account`: the new account's id.
    pub account: Option<AccountId>,
    /// For a place, cancel or replace: its order as this entry left it,
    /// so the gateway answers without asking the core thread again.
    pub order: Option<Arc<OrderRecord>>,
}

pub struct ServerState {
    pub engine: Engine,
    pub credentials: Credentials,
    pub history: History,
    /// Per-instrument market-data sequence numbers (see
    /// `exchange_marketdata::sequences`): replicated so that REST, the
    /// WebSocket channels and the binary feed agree across restarts.
    pub market_sequences: MarketSequences,
    /// Number of commands applied: the index of the last one in command
    /// order (events, history and market-data sequences use it).
    pub applied_index: u64,
    /// Raft index of the last log entry (a batch of commands) applied. Not
    /// part of the snapshot bytes: the snapshot's Raft metadata carries it.
    pub raft_index: u64,
}

#[derive(Debug, Error)]
pub enum StateSnapshotError {
    #[error("server snapshot is truncated")]
    Truncated,
    #[error("core snapshot: {0}")]
    Core(#[from] exchange_core::SnapshotError),
    #[error("gateway state: {0}")]
    Json(#[from] serde_json::Error),
}

#[derive(Serialize, Deserialize)]
struct GatewayState {
    credentials: Credentials,
    history: History,
    // Absent from snapshots written before market data existed.
    #[serde(default)]
    market_sequences: MarketSequences,
    applied_index: u64,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState::new()
    }
}

impl ServerState {
    pub fn new() -> Self {
        ServerState {
            engine: Engine::new(),
            credentials: Credentials {
                by_key: BTreeMap::new(),
                next_account: 1,
            },
            history: History::default(),
            market_sequences: MarketSequences::default(),
            applied_index: 0,
            raft_index: 0,
        }
    }

    pub fn apply(&mut self, index: u64, entry: &LogEntry) -> Applied {
        debug_assert!(index > self.applied_index, "entries apply in order, once");
        self.applied_index = index;
        // Room for a typical command's events (acceptance, balances, book).
        let mut applied = Applied {
            index,
            ts: entry.ts(),
            events: Vec::with_capacity(8),
            ..Applied::default()
        };
        match entry {
            LogEntry::Core(stamped) => {
                applied.command = stamped.command.name();
                applied.actor = command_account(&stamped.command);
                self.engine.apply(stamped, &mut applied.events);
                self.history.record(&applied.events);
                applied.order = answered_order(&stamped.command, &applied.events)
                    .and_then(|id| self.history.shared_order(id));
                self.market_sequences.record(index, &applied.events);
            }
            LogEntry::CreateAccount {
                api_key,
                api_secret,
                ..
            } => {
                let account = self.credentials.next_account;
                self.credentials.next_account += 1;
                self.credentials.by_key.insert(
                    api_key.clone(),
                    Credential {
                        account,
                        secret: api_secret.clone(),
                    },
                );
                applied.account = Some(account);
                applied.command = "create_account";
                applied.actor = Some(account);
            }
        }
        applied
    }

    /// Time of the last applied entry, so the sequencer's clock resumes
    /// from where the log left off.
    pub fn engine_now(&self) -> u64 {
        self.engine.now()
    }

    pub fn account_exists(&self, account: AccountId) -> bool {
        account < self.credentials.next_account
    }

    /// The core's canonical snapshot followed by the gateway state.
    pub fn snapshot(&self) -> Vec<u8> {
        self.copy().into_bytes()
    }

    /// What [`ServerState::snapshot`] writes, before it is written: quick
    /// to take (the history is shared, not copied), so the core thread only
    /// pauses for this and another thread serialises it.
    pub fn copy(&self) -> StateCopy {
        StateCopy {
            core: self.engine.snapshot(),
            gateway: GatewayState {
                credentials: self.credentials.clone(),
                history: self.history.clone(),
                market_sequences: self.market_sequences.clone(),
                applied_index: self.applied_index,
            },
        }
    }

    pub fn restore(bytes: &[u8]) -> Result<ServerState, StateSnapshotError> {
        let len_bytes: [u8; 8] = bytes
            .get(..8)
            .ok_or(StateSnapshotError::Truncated)?
            .try_into()
            .map_err(|_| StateSnapshotError::Truncated)?;
        let core_len = usize::try_from(u64::from_le_bytes(len_bytes))
            .map_err(|_| StateSnapshotError::Truncated)?;
        let core = bytes
            .get(8..8usize.saturating_add(core_len))
            .ok_or(StateSnapshotError::Truncated)?;
        let engine = Engine::restore(core)?;
        let gateway: GatewayState = serde_json::from_slice(&bytes[8 + core_len..])?;
        Ok(ServerState {
            engine,
            credentials: gateway.credentials,
            history: gateway.history,
            market_sequences: gateway.market_sequences,
            applied_index: gateway.applied_index,
            raft_index: 0,
        })
    }

    /// Hash of the whole replicated state (core and gateway).
    pub fn state_hash(&self) -> String {
        blake3_hex(&self.snapshot())
    }
}

/// The order a command is answered with: the one a place created, or the
/// one a cancel or replace acted on.
fn answered_order(command: &Command, events: &[Event]) -> Option<OrderId> {
    events
        .iter()
        .find_map(|event| match (command, &event.kind) {
            (Command::Place(_), EventKind::Accepted { order_id, .. })
            | (
                Command::Cancel(_) | Command::Replace(_),
                EventKind::Canceled { order_id, .. } | EventKind::Replaced { order_id, .. },
            ) => Some(*order_id),
            _ => None,
        })
}

/// The account a command acts for, if any.
fn command_account(command: &Command) -> Option<AccountId> {
    match command {
        Command::Deposit(t) | Command::Withdraw(t) => Some(t.account),
        Command::Place(p) => Some(p.account),
        Command::Cancel(c) => Some(c.account),
        Command::Replace(r) => Some(r.account),
        Command::MassCancel(m) => Some(m.account),
        Command::AddInstrument(_) | Command::Halt { .. } | Command::Resume { .. } => None,
    }
}

/// A consistent copy of the state as of one log index.
pub struct StateCopy {
    core: Vec<u8>,
    gateway: GatewayState,
}

impl StateCopy {
    /// The snapshot bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        let gateway = serde_json::to_vec(&self.gateway).unwrap_or_default();
        let mut bytes = Vec::with_capacity(8 + self.core.len() + gateway.len());
        bytes.extend_from_slice(&(self.core.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&self.core);
        bytes.extend_from_slice(&gateway);
        bytes
    }
}

fn blake3_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}
