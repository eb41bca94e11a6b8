//! The replicated state machine of the server: the core engine, the API
//! credentials, the market-data sequences and the gateways' client
//! sessions ([`crate::sessions`]), advanced together by log entries.
//! Applying the same entries from the same snapshot gives the same state
//! on every node, and the same [`ServerState::state_hash`].
//!
//! The API's view of orders and trades ([`History`]) is not part of it: it
//! only presents what the events say, and no future event depends on it.
//! The node keeps it beside this state ([`crate::core_state`]).
//!
//! Snapshot bytes (version 2): the tag `EXSNAP`, the version as a
//! little-endian `u16`, the length of the replicated section as a
//! little-endian `u64`, the replicated section (the engine's snapshot
//! length as a `u64`, the engine's snapshot, then the credentials,
//! market-data sequences, applied index, client sessions and replay guard
//! as JSON, the last two only once used), then the history as
//! JSON. The state hash is BLAKE3 over the replicated section alone.
//! Version 1 had no tag and no history section: it was the replicated
//! section with the history inside its JSON. Both restore, so a data
//! directory written before keeps starting; this matters because a
//! snapshot that does not restore stops recovery (only a damaged snapshot
//! file is passed over for an older one), and the log below the snapshot
//! may be compacted away.

use std::sync::Arc;

use exchange_core::Engine;
use exchange_marketdata::MarketSequences;
use exchange_types::{order_updates, AccountId, Change, Command, Event, OrderId, Stamped};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::entry::LogEntry;
use crate::fix_links::{FixApplied, FixLinks};
use crate::history::{History, OrderRecord};
use crate::replay_guard::{GuardRefusal, ReplayGuard, NANOS_PER_MS};
use crate::sessions::{SessionRefusal, Sessions};

#[path = "state_sessions.rs"]
mod state_sessions;

/// What snapshot bytes start with, before the version. Version 1 started
/// with the engine snapshot's length instead, as a little-endian `u64`:
/// read as one, these bytes and any version are over 8 × 10^13 (80 TB),
/// which no engine snapshot comes near, so the two cannot be confused.
const SNAPSHOT_TAG: &[u8; 6] = b"EXSNAP";
/// The snapshot format written.
pub const SNAPSHOT_VERSION: u16 = 2;

pub use crate::keys::{ApiKey, Credentials, KeyError};

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
    /// issued it (for `create_account`, the new one; for a key command,
    /// the key's account): what the reporting
    /// service's audit record needs besides the events.
    pub ts: u64,
    pub command: &'static str,
    pub actor: Option<AccountId>,
    pub events: Vec<Event>,
    /// For `create_account`: the new account's id; for a key command that
    /// was applied, the key's account.
    pub account: Option<AccountId>,
    /// For a key command the core refused: why (every replica refuses it
    /// alike, and the state did not change).
    pub key_error: Option<KeyError>,
    /// For a place, cancel or replace: its order as this entry left it,
    /// so the gateway answers without asking the core thread again.
    pub order: Option<Arc<OrderRecord>>,
    /// For a session entry that changed nothing: why. A refused sequenced
    /// entry's `command` is then `"duplicate"` or `"stale_session"`, and
    /// it has no events; an applied one's outcome is exactly its inner
    /// entry's.
    pub session_refusal: Option<SessionRefusal>,
    /// For a guarded entry that was not applied: why. Its `command` is
    /// then `"replayed"`, `"stale_request"` or `"replay_guard_full"`, and
    /// it has no events; an applied one's outcome is its inner entry's.
    pub guard_refusal: Option<GuardRefusal>,
    /// How many of `events`, first, are the cancels of expired client
    /// sessions' protected accounts ([`crate::sessions`]), which the
    /// state issued when this entry's time showed them expired; the
    /// entry's own events follow.
    pub expiry_events: usize,
    /// For a FIX entry (logon, reservation, FIX-sequenced command): what
    /// it did to the FIX session's numbers ([`crate::fix_links`]). A
    /// refused FIX-sequenced command's `command` is `"fix_duplicate"` or
    /// `"fix_links_full"`, and it has no events.
    pub fix: Option<FixApplied>,
}

impl Applied {
    /// A session or the replay guard refused the entry: nothing of it was
    /// applied.
    pub fn refused_unapplied(&self) -> bool {
        self.session_refusal.is_some()
            || self.guard_refusal.is_some()
            || self.fix.as_ref().is_some_and(FixApplied::refused)
    }
}

pub struct ServerState {
    pub engine: Engine,
    pub credentials: Credentials,
    /// Per-instrument market-data sequence numbers (see
    /// `exchange_marketdata::sequences`): replicated so that REST, the
    /// WebSocket channels and the binary feed agree across restarts.
    pub market_sequences: MarketSequences,
    /// The gateways' client sessions ([`crate::sessions`]).
    pub sessions: Sessions,
    /// The signed requests applied within their windows
    /// ([`crate::replay_guard`]).
    pub replay_guard: ReplayGuard,
    /// The FIX sessions' numbers ([`crate::fix_links`]).
    pub fix_links: FixLinks,
    /// Number of commands applied: the index of the last one in command
    /// order (events and market-data sequences use it).
    pub applied_index: u64,
    /// Raft index of the last log entry (a batch of commands) applied. Not
    /// part of the snapshot bytes: the snapshot's Raft metadata carries it.
    pub raft_index: u64,
    /// No client session can expire before an entry later than this (log
    /// nanoseconds). Never above the true earliest expiry, so it decides
    /// only when the table is scanned, never what expires: not part of the
    /// snapshot (0 after a restore: the first entry scans).
    expiry_due: u64,
}

#[derive(Debug, Error)]
pub enum StateSnapshotError {
    #[error("server snapshot is truncated")]
    Truncated,
    #[error(
        "server snapshot format version {0} is not one this build reads \
         (it reads 1 and {SNAPSHOT_VERSION}); remove the snapshot to rebuild the state \
         from the log, if the log still reaches back to its start"
    )]
    UnknownVersion(u16),
    #[error("core snapshot: {0}")]
    Core(#[from] exchange_core::SnapshotError),
    #[error("gateway state: {0}")]
    Json(#[from] serde_json::Error),
}

/// A section of the state that would not serialise. Its types always do,
/// so this is a bug; what the caller must not do is write or hash the
/// other sections without it (empty bytes would restore, or hash, as a
/// different state).
#[derive(Debug, Error)]
#[error("the state's {section} section does not serialise: {source}")]
pub struct SectionError {
    pub section: &'static str,
    #[source]
    pub source: serde_json::Error,
}

/// One snapshot section's JSON.
fn section<T: Serialize>(section: &'static str, value: &T) -> Result<Vec<u8>, SectionError> {
    serde_json::to_vec(value).map_err(|source| SectionError { section, source })
}

/// The replicated state besides the engine. Version 1 snapshots also hold
/// the history here, which is ignored when reading the state.
#[derive(Clone, Serialize, Deserialize)]
struct GatewayState {
    credentials: Credentials,
    // Absent from snapshots written before market data existed.
    #[serde(default)]
    market_sequences: MarketSequences,
    applied_index: u64,
    // Absent from snapshots written before client sessions, and left out
    // while there are none, so such a state hashes as it did before them.
    #[serde(default, skip_serializing_if = "Sessions::is_empty")]
    sessions: Sessions,
    // Likewise for the replay guard.
    #[serde(default, skip_serializing_if = "ReplayGuard::is_empty")]
    replay_guard: ReplayGuard,
    // Likewise for the FIX sessions' numbers.
    #[serde(default, skip_serializing_if = "FixLinks::is_empty")]
    fix_links: FixLinks,
    // Snapshots written while the scheduler followed the phase the log
    // last asked for (rather than the core's) may hold a `phases` map
    // here: it is not read, and the engine's snapshot has the phases.
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState::new()
    }
}

/// Room for a typical command's events (acceptance, balance, book: a
/// place or cancel makes three). Kept within 1 KiB, the largest block
/// mimalloc serves from its per-size free lists; a larger one takes its
/// generic path, several times the instructions, once per entry.
const EVENTS_ROOM: usize = 1024 / std::mem::size_of::<Event>();
const _: () = assert!(EVENTS_ROOM >= 3, "a place's events fit");

impl ServerState {
    pub fn new() -> Self {
        ServerState {
            engine: Engine::new(),
            credentials: Credentials::new(),
            market_sequences: MarketSequences::default(),
            sessions: Sessions::default(),
            replay_guard: ReplayGuard::default(),
            fix_links: FixLinks::default(),
            applied_index: 0,
            raft_index: 0,
            expiry_due: 0,
        }
    }

    /// Applies one entry. `Applied::order` is left for the caller that
    /// keeps the history ([`crate::core_state::CoreState::apply`]).
    pub fn apply(&mut self, index: u64, entry: &LogEntry) -> Applied {
        // Checked in release builds too: an entry applied twice or out of
        // order would leave this replica's state unlike every other's.
        assert!(index > self.applied_index, "entries apply in order, once");
        self.applied_index = index;
        let mut applied = Applied {
            index,
            ts: entry.ts(),
            events: Vec::with_capacity(EVENTS_ROOM),
            ..Applied::default()
        };
        // Time passes before the entry acts: an entry of an expired
        // session finds it closed.
        if applied.ts > self.expiry_due {
            self.expire_sessions(&mut applied);
        }
        match entry {
            // The hot path, as direct as before sessions.
            LogEntry::Core(stamped) => self.apply_command(index, stamped, &mut applied),
            other => self.apply_entry(index, other, &mut applied),
        }
        applied
    }

    /// The last applied sequence number of an open client session.
    pub fn session_last_seq(&self, session: u64) -> Option<u64> {
        self.sessions.last_seq(session)
    }

    fn apply_entry(&mut self, index: u64, entry: &LogEntry, applied: &mut Applied) {
        match entry {
            LogEntry::Core(stamped) => self.apply_command(index, stamped, applied),
            LogEntry::OpenSession { .. }
            | LogEntry::Sequenced { .. }
            | LogEntry::SessionAlive { .. }
            | LogEntry::SessionProtect { .. } => self.apply_session_entry(index, entry, applied),
            LogEntry::FixLogon { .. }
            | LogEntry::FixReserve { .. }
            | LogEntry::FixSequenced { .. } => self.apply_fix_entry(index, entry, applied),
            LogEntry::Guarded {
                fingerprint,
                forget_after_ms,
                entry,
            } => {
                let ts_ms = applied.ts / NANOS_PER_MS;
                match self
                    .replay_guard
                    .admit(*fingerprint, *forget_after_ms, ts_ms)
                {
                    Ok(()) => self.apply_entry(index, entry, applied),
                    Err(refusal) => {
                        applied.command = refusal.command();
                        applied.guard_refusal = Some(refusal);
                    }
                }
            }
            key_command => self.apply_key_command(key_command, applied),
        }
    }

    fn apply_key_command(&mut self, entry: &LogEntry, applied: &mut Applied) {
        match entry {
            LogEntry::CreateAccount {
                ts,
                api_key,
                legacy_secret,
            } => {
                applied.command = "create_account";
                let created =
                    self.credentials
                        .create_account(*ts, api_key, legacy_secret.as_deref());
                settle(applied, created);
            }
            LogEntry::CreateKey {
                ts,
                account,
                key,
                by,
            } => {
                applied.command = "create_api_key";
                let created = self
                    .credentials
                    .create_key(*ts, *account, key, by.as_deref());
                settle(applied, created.map(|()| *account));
            }
            LogEntry::RevokeKey {
                ts,
                key_id,
                account,
                by,
            } => {
                applied.command = "revoke_api_key";
                let revoked = self
                    .credentials
                    .revoke(*ts, key_id, *account, by.as_deref());
                settle(applied, revoked.map(|key| key.account));
            }
            LogEntry::RotateKey {
                ts,
                key_id,
                account,
                new_key_id,
                ed25519,
                by,
            } => {
                applied.command = "rotate_api_key";
                let rotated = self.credentials.rotate(
                    *ts,
                    key_id,
                    *account,
                    new_key_id,
                    ed25519.as_deref(),
                    by.as_deref(),
                );
                settle(applied, rotated);
            }
            // Not key commands: `apply_entry` applies them.
            LogEntry::Core(_)
            | LogEntry::OpenSession { .. }
            | LogEntry::Sequenced { .. }
            | LogEntry::SessionAlive { .. }
            | LogEntry::SessionProtect { .. }
            | LogEntry::Guarded { .. }
            | LogEntry::FixLogon { .. }
            | LogEntry::FixReserve { .. }
            | LogEntry::FixSequenced { .. } => {}
        }
    }

    /// The engine's hint for a trading command to be applied next (see
    /// `Engine::prefetch`); changes nothing.
    #[inline]
    pub fn prefetch(&self, next: &LogEntry) {
        if let LogEntry::Core(stamped) = next.inner() {
            self.engine.prefetch(stamped);
        }
    }

    /// Runs a trading command through the engine.
    fn apply_command(&mut self, index: u64, stamped: &Stamped, applied: &mut Applied) {
        applied.command = stamped.command.name();
        applied.actor = command_account(&stamped.command);
        let before = applied.events.len();
        self.engine.apply(stamped, &mut applied.events);
        self.market_sequences
            .record(index, &applied.events[before..]);
    }

    /// Time of the last applied entry, so the sequencer's clock resumes
    /// from where the log left off.
    pub fn engine_now(&self) -> u64 {
        self.engine.now()
    }

    pub fn account_exists(&self, account: AccountId) -> bool {
        account < self.credentials.next_account
    }

    /// A copy of the replicated state: quick to take (the engine's
    /// snapshot is the one part built here), so the core thread only
    /// pauses for this and another thread serialises it.
    pub fn replicated(&self) -> ReplicatedCopy {
        ReplicatedCopy {
            core: self.engine.snapshot(),
            gateway: GatewayState {
                credentials: self.credentials.clone(),
                market_sequences: self.market_sequences.clone(),
                applied_index: self.applied_index,
                sessions: self.sessions.clone(),
                replay_guard: self.replay_guard.clone(),
                fix_links: self.fix_links.clone(),
            },
        }
    }

    /// The replicated state from snapshot bytes of either version (any
    /// history in them is not read).
    pub fn restore(bytes: &[u8]) -> Result<ServerState, StateSnapshotError> {
        restore_replicated(split(bytes)?.replicated)
    }

    /// Hash of the replicated state: equal on every node that applied the
    /// same entries.
    pub fn state_hash(&self) -> Result<String, SectionError> {
        self.replicated().hash()
    }
}

/// Snapshot bytes, split.
pub(crate) struct Sections<'a> {
    /// What the state hash covers.
    pub(crate) replicated: &'a [u8],
    pub(crate) history: HistorySection<'a>,
}

pub(crate) enum HistorySection<'a> {
    /// Version 2: the history as JSON.
    Own(&'a [u8]),
    /// Version 1: inside the replicated section's JSON.
    InReplicated,
}

pub(crate) fn split(bytes: &[u8]) -> Result<Sections<'_>, StateSnapshotError> {
    let Some(rest) = bytes.strip_prefix(SNAPSHOT_TAG) else {
        return Ok(Sections {
            replicated: bytes,
            history: HistorySection::InReplicated,
        });
    };
    let (version, rest) = rest
        .split_first_chunk::<2>()
        .ok_or(StateSnapshotError::Truncated)?;
    let version = u16::from_le_bytes(*version);
    if version != SNAPSHOT_VERSION {
        return Err(StateSnapshotError::UnknownVersion(version));
    }
    let (len, rest) = take_len(rest)?;
    if rest.len() < len {
        return Err(StateSnapshotError::Truncated);
    }
    let (replicated, history) = rest.split_at(len);
    Ok(Sections {
        replicated,
        history: HistorySection::Own(history),
    })
}

/// A little-endian `u64` length, as a `usize`, and what follows it.
fn take_len(bytes: &[u8]) -> Result<(usize, &[u8]), StateSnapshotError> {
    let (len, rest) = bytes
        .split_first_chunk::<8>()
        .ok_or(StateSnapshotError::Truncated)?;
    let len =
        usize::try_from(u64::from_le_bytes(*len)).map_err(|_| StateSnapshotError::Truncated)?;
    Ok((len, rest))
}

fn restore_replicated(bytes: &[u8]) -> Result<ServerState, StateSnapshotError> {
    let (core_len, rest) = take_len(bytes)?;
    if rest.len() < core_len {
        return Err(StateSnapshotError::Truncated);
    }
    let (core, gateway) = rest.split_at(core_len);
    let engine = Engine::restore(core)?;
    let gateway: GatewayState = serde_json::from_slice(gateway)?;
    Ok(ServerState {
        engine,
        credentials: gateway.credentials,
        market_sequences: gateway.market_sequences,
        sessions: gateway.sessions,
        replay_guard: gateway.replay_guard,
        fix_links: gateway.fix_links,
        applied_index: gateway.applied_index,
        raft_index: 0,
        expiry_due: 0,
    })
}

/// The history a version 1 snapshot's replicated section holds.
pub(crate) fn history_of_version_1(replicated: &[u8]) -> Result<History, StateSnapshotError> {
    #[derive(Deserialize)]
    struct WithHistory {
        history: History,
    }
    let (core_len, rest) = take_len(replicated)?;
    let json = rest.get(core_len..).ok_or(StateSnapshotError::Truncated)?;
    Ok(serde_json::from_slice::<WithHistory>(json)?.history)
}

/// The order a command is answered with: the one a place created, or the
/// one a cancel or replace acted on.
pub(crate) fn answered_order(command: &Command, events: &[Event]) -> Option<OrderId> {
    events
        .iter()
        .flat_map(|event| order_updates(&event.kind))
        .find_map(|update| match (command, update.change) {
            (Command::Place(_), Change::New(_))
            | (
                Command::Cancel(_) | Command::Replace(_) | Command::ReplaceStop(_),
                Change::Canceled(_) | Change::Replaced(_),
            ) => Some(update.order_id),
            _ => None,
        })
}

/// Records a key command's outcome: the account it acted for, or why it
/// was refused.
fn settle(applied: &mut Applied, outcome: Result<AccountId, KeyError>) {
    match outcome {
        Ok(account) => {
            applied.account = Some(account);
            applied.actor = Some(account);
        }
        Err(error) => applied.key_error = Some(error),
    }
}

/// The account a command acts for, if any.
fn command_account(command: &Command) -> Option<AccountId> {
    match command {
        Command::Deposit(t) | Command::Withdraw(t) => Some(t.account),
        Command::Place(p) => Some(p.account),
        Command::Cancel(c) => Some(c.account),
        Command::Replace(r) => Some(r.account),
        Command::ReplaceStop(r) => Some(r.replace.account),
        Command::MassCancel(m) => Some(m.account),
        Command::SetRiskLimits(l) => Some(l.account),
        Command::SetMmp(m) => Some(m.account),
        Command::Suspend { account }
        | Command::Reinstate { account }
        | Command::ResetMmp { account, .. } => Some(*account),
        Command::LinkSubAccount { owner, .. } => Some(*owner),
        Command::InternalTransfer(t) => Some(t.from),
        Command::AddInstrument(_)
        | Command::Halt { .. }
        | Command::Resume { .. }
        | Command::SetPhase { .. }
        | Command::SetInstrumentRules(_)
        | Command::Delist { .. }
        | Command::SetReferencePrice { .. }
        | Command::Tick => None,
    }
}

/// A consistent copy of the replicated state as of one log index.
pub struct ReplicatedCopy {
    core: Vec<u8>,
    gateway: GatewayState,
}

impl ReplicatedCopy {
    /// BLAKE3 over the replicated section, as the snapshot holds it.
    pub fn hash(&self) -> Result<String, SectionError> {
        let gateway = section("gateway", &self.gateway)?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(&(self.core.len() as u64).to_le_bytes());
        hasher.update(&self.core);
        hasher.update(&gateway);
        Ok(hasher.finalize().to_hex().to_string())
    }
}

/// A consistent copy of the state and the history beside it, as of one
/// log index: what a snapshot holds.
pub struct StateCopy {
    pub(crate) replicated: ReplicatedCopy,
    pub(crate) history: History,
}

impl StateCopy {
    /// The snapshot bytes (the current version).
    pub fn into_bytes(self) -> Result<Vec<u8>, SectionError> {
        let ReplicatedCopy { core, gateway } = self.replicated;
        let gateway = section("gateway", &gateway)?;
        let history = section("history", &self.history)?;
        let replicated_len = 8 + core.len() + gateway.len();
        let mut bytes =
            Vec::with_capacity(SNAPSHOT_TAG.len() + 2 + 8 + replicated_len + history.len());
        bytes.extend_from_slice(SNAPSHOT_TAG);
        bytes.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(replicated_len as u64).to_le_bytes());
        bytes.extend_from_slice(&(core.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&core);
        bytes.extend_from_slice(&gateway);
        bytes.extend_from_slice(&history);
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// JSON keys are strings, so a map keyed by pairs is a value that does
    /// not serialise: it stands for a bug in a section's types.
    #[test]
    fn a_section_that_does_not_serialise_is_an_error_naming_it() {
        let unwritable: BTreeMap<(u8, u8), u8> = BTreeMap::from([((1, 2), 3)]);
        let error = section("gateway", &unwritable).expect_err("refused, not empty bytes");
        assert_eq!(error.section, "gateway");
        assert!(error.to_string().contains("gateway section"), "{error}");
        assert_eq!(section("history", &[1, 2]).expect("written"), b"[1,2]");
    }
}
