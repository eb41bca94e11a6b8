//! What the rest of the system may read of a running node, by name.
//!
//! Every read is one of a handful of requests defined here, answered by
//! code in this module: the core thread runs node code only, never a
//! caller's. A read goes to the core thread between two batches, so it sees
//! every command anyone has been answered, and costs that thread the time
//! to copy out the answer; the requests are shaped so that this is all they
//! cost (a bounded book depth, a bounded number of trades, shared order
//! records rather than copies). What a read asks of the history (open
//! orders, recent trades, last auctions) the core passes on to the
//! publisher thread, which keeps the history ([`HistoryRead`]): behind
//! the entries the core handed it before, so as of the same command.
//!
//! API credentials are the exception: they are read on every signed
//! request, most of them before anything says the sender is genuine, so
//! they are served without the core thread at all, from
//! [`SharedCredentials`], which the core thread updates as it applies each
//! key command, before it answers that entry.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use exchange_core::{BalanceView, BookView, InstrumentView};
use exchange_marketdata::{IndicativeView, InstrumentSequences, MarketStatus, SnapshotTrade};
use exchange_types::{AccountId, AssetCode, OrderId, Symbol};
use ipnet::IpNet;
use tokio::sync::{oneshot, watch};

use crate::history::OrderRecord;
use crate::key_rules::parse_allow_mapped;
use crate::keys::{ApiKey, Credentials, Scopes};
use crate::master_key::MasterKey;
use crate::sequencer::{Handle, SubmitError};
use crate::state::{ReplicatedCopy, SectionError, ServerState};

// What reads ask of the history, which the publisher thread keeps.
#[path = "reads_history.rs"]
mod history_reads;
pub(crate) use history_reads::HistoryRead;

/// Why the state hash was not read: the node did not answer, or the state
/// would not serialise (a hash of part of it would match no other replica).
#[derive(Debug, thiserror::Error)]
pub enum StateHashError {
    #[error(transparent)]
    Submit(#[from] SubmitError),
    #[error(transparent)]
    Section(#[from] SectionError),
}

/// Where the node is in the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Commands applied: the index of the last one.
    pub applied_index: u64,
    /// The Raft entry (a batch of commands) last applied.
    pub raft_index: u64,
}

/// Which markets to read, and how much of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarketQuery {
    /// One market; `None`: every listed one.
    pub symbol: Option<Symbol>,
    /// Book levels per side, best first (0: none).
    pub depth: usize,
    /// Recent public trades, newest first (0: none).
    pub trades: usize,
}

/// Markets as of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Markets {
    pub applied_index: u64,
    /// The core's time at that command.
    pub now: u64,
    /// In listing order; empty when the symbol asked for is not listed.
    pub markets: Vec<Market>,
}

impl Markets {
    /// The one market asked for, if it is listed.
    pub fn into_one(self) -> Option<Market> {
        self.markets.into_iter().next()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Market {
    pub instrument: InstrumentView,
    pub book: BookView,
    /// The market-data sequences of this very book and trade list.
    pub sequences: InstrumentSequences,
    /// Newest first.
    pub trades: Vec<SnapshotTrade>,
    /// The core's phase, its indicative uncrossing during a call and the
    /// last auction, as of the same command (status sequence:
    /// `sequences.status`).
    pub status: MarketStatus,
}

/// Which orders to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderQuery {
    /// One order, if it is open and the account's.
    One {
        account: AccountId,
        order_id: OrderId,
    },
    /// The accounts' open orders, newest first (on one symbol if given).
    Open {
        accounts: Vec<AccountId>,
        symbol: Option<String>,
    },
}

/// Open orders as of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orders {
    pub applied_index: u64,
    pub orders: Vec<Arc<OrderRecord>>,
}

/// The requests the core thread answers, each with where its answer goes.
pub(crate) enum Read {
    Position(oneshot::Sender<Position>),
    StateHash(oneshot::Sender<(Position, ReplicatedCopy)>),
    AccountExists(AccountId, oneshot::Sender<bool>),
    Markets(MarketQuery, oneshot::Sender<Markets>),
    Balances(AccountId, oneshot::Sender<Vec<BalanceView>>),
    Orders(OrderQuery, oneshot::Sender<Orders>),
    Audit(oneshot::Sender<Result<(), String>>),
    ApiKeys(KeyQuery, oneshot::Sender<Vec<(String, ApiKey)>>),
    Phases(oneshot::Sender<Phases>),
}

/// What the scheduler compares its schedules with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Every listed instrument.
    pub listed: std::collections::BTreeSet<Symbol>,
    /// The phase the core has each listed instrument in: what it moved
    /// to on its own (an auction's uncross, a volatility interruption)
    /// as well as what the log asked for.
    pub phases: std::collections::BTreeMap<Symbol, exchange_types::Phase>,
}

/// Which API keys to list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyQuery {
    /// Every key of the account.
    Account(AccountId),
    /// The one key, whichever account holds it.
    One(String),
}

/// Answers `read` from the state (on the core thread), or answers its
/// part of it and returns what the history is to answer. A caller that
/// gave up waiting is no error.
pub(crate) fn answer_state(read: Read, state: &ServerState) -> Option<HistoryRead> {
    match read {
        Read::Position(reply) => {
            let _ = reply.send(position(state));
        }
        Read::Phases(reply) => {
            let instruments = state.engine.instruments();
            let _ = reply.send(Phases {
                listed: instruments.iter().map(|view| view.symbol).collect(),
                phases: instruments
                    .iter()
                    .map(|view| (view.symbol, view.phase))
                    .collect(),
            });
        }
        Read::StateHash(reply) => {
            // Copying is the part that must happen here; serialising and
            // hashing the copy happen on the caller's side.
            let _ = reply.send((position(state), state.replicated()));
        }
        Read::AccountExists(account, reply) => {
            let _ = reply.send(state.account_exists(account));
        }
        Read::Markets(query, reply) => {
            return Some(HistoryRead::Markets {
                markets: markets(state, &query),
                trades: query.trades,
                reply,
            });
        }
        Read::Balances(account, reply) => {
            let _ = reply.send(balances(state, account));
        }
        Read::Orders(query, reply) => {
            return Some(HistoryRead::Orders {
                applied_index: state.applied_index,
                query,
                reply,
            });
        }
        Read::Audit(reply) => {
            let _ = reply.send(state.engine.audit());
        }
        Read::ApiKeys(query, reply) => {
            let _ = reply.send(api_keys(&state.credentials, &query));
        }
    }
    None
}

/// The keys asked for, without any secret a key from an old log still
/// holds in the clear.
fn api_keys(credentials: &Credentials, query: &KeyQuery) -> Vec<(String, ApiKey)> {
    let found: Vec<(&String, &ApiKey)> = match query {
        KeyQuery::Account(account) => credentials.keys_of(*account).collect(),
        KeyQuery::One(key_id) => credentials
            .by_key
            .get_key_value(key_id)
            .into_iter()
            .collect(),
    };
    found
        .into_iter()
        .map(|(id, key)| {
            let mut key = key.clone();
            key.secret = None;
            (id.clone(), key)
        })
        .collect()
}

fn position(state: &ServerState) -> Position {
    Position {
        applied_index: state.applied_index,
        raft_index: state.raft_index,
    }
}

/// The state's part of the markets: all but their trades and last
/// auctions.
fn markets(state: &ServerState, query: &MarketQuery) -> Markets {
    let markets = state
        .engine
        .instruments()
        .into_iter()
        .filter(|i| query.symbol.is_none_or(|s| i.symbol == s))
        .map(|instrument| {
            let symbol = instrument.symbol;
            Market {
                book: state.engine.book(&symbol, query.depth).unwrap_or_default(),
                sequences: state.market_sequences.get(symbol.as_str()),
                trades: Vec::new(),
                status: MarketStatus {
                    phase: instrument.phase,
                    indicative: state
                        .engine
                        .indicative(&symbol)
                        .and_then(|i| IndicativeView::of(&i)),
                    last_auction: None,
                    reference_price: instrument.reference_price,
                },
                instrument,
            }
        })
        .collect();
    Markets {
        applied_index: state.applied_index,
        now: state.engine.now(),
        markets,
    }
}

/// The account's balance of every asset of a listed instrument (only
/// those can hold funds), by asset code.
fn balances(state: &ServerState, account: AccountId) -> Vec<BalanceView> {
    let mut assets: Vec<AssetCode> = state
        .engine
        .instruments()
        .iter()
        .flat_map(|i| [i.base, i.quote])
        .collect();
    assets.sort_unstable();
    assets.dedup();
    assets
        .into_iter()
        .map(|asset| {
            let (total, available) = state.engine.balance(account, &asset).unwrap_or((0, 0));
            BalanceView {
                account,
                asset,
                total,
                available,
            }
        })
        .collect()
}

/// An API key as the gateway checks it: what it may do, and what verifies
/// its signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub account: AccountId,
    pub scopes: Scopes,
    /// Log time (Unix nanoseconds) from which it is refused.
    pub expires_at: Option<u64>,
    /// Address ranges it may be used from; empty: any.
    pub allow: Vec<IpNet>,
    pub verifier: Verifier,
}

impl Credential {
    /// Whether a request from `peer` may use the key; an unknown address
    /// passes only a key without an allow-list.
    pub fn allows(&self, peer: Option<std::net::IpAddr>) -> bool {
        if self.allow.is_empty() {
            return true;
        }
        let Some(peer) = peer else {
            return false;
        };
        let peer = crate::key_rules::peer_address(peer);
        self.allow.iter().any(|net| net.contains(&peer))
    }
}

#[derive(Clone, PartialEq, Eq)]
pub enum Verifier {
    /// The HMAC secret (hex text, used as its UTF-8 bytes).
    Hmac(String),
    /// The Ed25519 public key.
    Ed25519([u8; 32]),
}

// Secrets stay out of logs and panic messages.
impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verifier::Hmac(_) => f.write_str("Hmac(..)"),
            Verifier::Ed25519(public_key) => write!(f, "Ed25519({})", hex::encode(public_key)),
        }
    }
}

/// Every API key as of the last applied entry, readable from any thread,
/// with HMAC secrets derived from the master key. The core thread updates
/// the keys each entry touches in place rather than publishing a fresh
/// copy of them all.
#[derive(Debug)]
pub(crate) struct SharedCredentials {
    master: MasterKey,
    by_key: RwLock<HashMap<String, Credential>>,
    /// Counts the times keys were removed (revoked, rotated away, or
    /// replaced by a snapshot's), so that whatever was opened with a key
    /// (a WebSocket) can look again at once, without polling.
    removals: watch::Sender<u64>,
}

impl SharedCredentials {
    pub(crate) fn new(credentials: &Credentials, master: MasterKey) -> Self {
        let by_key = RwLock::new(copy(credentials, &master));
        let (removals, _) = watch::channel(0);
        SharedCredentials {
            master,
            by_key,
            removals,
        }
    }

    /// Changes each time keys were removed.
    pub(crate) fn removals(&self) -> watch::Receiver<u64> {
        self.removals.subscribe()
    }

    fn removed(&self) {
        self.removals
            .send_modify(|count| *count = count.wrapping_add(1));
    }

    /// Brings the keys `key_ids` in line with the state.
    pub(crate) fn refresh(&self, key_ids: &[&str], credentials: &Credentials) {
        let mut removed = false;
        {
            // A poisoned lock only means a reader panicked; the map is whole.
            let mut by_key = self.by_key.write().unwrap_or_else(|p| p.into_inner());
            for &key_id in key_ids {
                match credentials.by_key.get(key_id) {
                    Some(key) => {
                        if let Some(credential) = credential(key_id, key, &self.master) {
                            by_key.insert(key_id.to_owned(), credential);
                        }
                    }
                    None => removed |= by_key.remove(key_id).is_some(),
                }
            }
        }
        // Told once the map no longer holds the key, so a look finds it gone.
        if removed {
            self.removed();
        }
    }

    /// After the state was replaced by a snapshot.
    pub(crate) fn replace(&self, credentials: &Credentials) {
        let fresh = copy(credentials, &self.master);
        *self.by_key.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        self.removed();
    }

    pub(crate) fn get(&self, key: &str) -> Option<Credential> {
        self.by_key
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    pub(crate) fn grant(&self, key: &str) -> Option<(Scopes, Option<u64>)> {
        self.by_key
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .map(|credential| (credential.scopes, credential.expires_at))
    }
}

/// How the key is checked; `None` for a key the state holds but no
/// request can use (an Ed25519 key or allow-list that does not parse,
/// which the gateway never proposes).
fn credential(key_id: &str, key: &ApiKey, master: &MasterKey) -> Option<Credential> {
    let verifier = match (&key.ed25519, &key.secret) {
        (Some(public_key), _) => {
            let bytes: [u8; 32] = hex::decode(public_key).ok()?.try_into().ok()?;
            Verifier::Ed25519(bytes)
        }
        (None, Some(secret)) => Verifier::Hmac(secret.clone()),
        (None, None) => Verifier::Hmac(master.derive_secret(key_id)),
    };
    Some(Credential {
        account: key.account,
        scopes: key.scopes,
        expires_at: key.expires_at,
        // Entries stored before they were normalised at creation may be
        // IPv4-mapped; they are meant for the IPv4 peers they map.
        allow: parse_allow_mapped(&key.allow).ok()?,
        verifier,
    })
}

fn copy(credentials: &Credentials, master: &MasterKey) -> HashMap<String, Credential> {
    credentials
        .by_key
        .iter()
        .filter_map(|(id, key)| Some((id.clone(), credential(id, key, master)?)))
        .collect()
}

/// The named reads.
impl Handle {
    /// The API key's credential: every key whose creation has been
    /// answered, until its revocation is. Served without the core thread.
    pub fn credential(&self, api_key: &str) -> Option<Credential> {
        self.credentials().get(api_key)
    }

    /// The scopes and expiry of `api_key`, without a copy of its secret
    /// and allow-list: what an open socket looks at before each order.
    pub fn credential_grant(&self, api_key: &str) -> Option<(Scopes, Option<u64>)> {
        self.credentials().grant(api_key)
    }

    /// Changes each time API keys were removed (revoked or rotated away)
    /// on this node: what was opened with a key looks again whether it
    /// still exists.
    pub fn key_removals(&self) -> watch::Receiver<u64> {
        self.credentials().removals()
    }

    /// The HMAC secret of the key `key_id` (derived from the master key):
    /// what the create and rotate answers show once.
    pub fn hmac_secret(&self, key_id: &str) -> String {
        self.credentials().master.derive_secret(key_id)
    }

    /// API keys as the state holds them (no secrets).
    pub async fn api_keys(&self, query: KeyQuery) -> Result<Vec<(String, ApiKey)>, SubmitError> {
        self.ask(|reply| Read::ApiKeys(query, reply)).await
    }

    /// The command and Raft entry last applied.
    pub async fn position(&self) -> Result<Position, SubmitError> {
        self.ask(Read::Position).await
    }

    /// The hash of the replicated state ([`ServerState::state_hash`]) and
    /// where in the log it was taken.
    pub async fn state_hash(&self) -> Result<(Position, String), StateHashError> {
        let (position, copy) = self.ask(Read::StateHash).await?;
        let hash = tokio::task::spawn_blocking(move || copy.hash())
            .await
            .map_err(|_| SubmitError::Stopped)??;
        Ok((position, hash))
    }

    pub async fn account_exists(&self, account: AccountId) -> Result<bool, SubmitError> {
        self.ask(|reply| Read::AccountExists(account, reply)).await
    }

    pub async fn markets(&self, query: MarketQuery) -> Result<Markets, SubmitError> {
        self.ask(|reply| Read::Markets(query, reply)).await
    }

    /// The account's balance of each asset of a listed instrument.
    pub async fn balances(&self, account: AccountId) -> Result<Vec<BalanceView>, SubmitError> {
        self.ask(|reply| Read::Balances(account, reply)).await
    }

    pub async fn orders(&self, query: OrderQuery) -> Result<Orders, SubmitError> {
        self.ask(|reply| Read::Orders(query, reply)).await
    }

    /// The listed instruments and the phase the core has each in.
    pub async fn phases(&self) -> Result<Phases, SubmitError> {
        self.ask(Read::Phases).await
    }

    /// Checks the engine's invariants (`Engine::audit`): a full pass over
    /// the state on the core thread, for tests and tools.
    pub async fn audit(&self) -> Result<Result<(), String>, SubmitError> {
        self.ask(Read::Audit).await
    }

    async fn ask<R>(
        &self,
        read: impl FnOnce(oneshot::Sender<R>) -> Read,
    ) -> Result<R, SubmitError> {
        let (tx, rx) = oneshot::channel();
        self.send_read(read(tx))?;
        self.metrics.reads.fetch_add(1, Ordering::Relaxed);
        rx.await.map_err(|_| SubmitError::Stopped)
    }
}
