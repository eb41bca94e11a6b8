//! API keys: what a key is, and the replicated store of them.
//!
//! An account holds up to [`MAX_KEYS_PER_ACCOUNT`] keys. Each has scopes
//! (`read`, `trade`, `transfer`), a label, an optional expiry (an absolute
//! time on the log's clock, set from the creating entry's time) and an
//! optional allow-list of address ranges. A key is verified either with
//! HMAC, whose secret is derived from the node's master key and the key id
//! ([`crate::master_key`]) so that no secret is ever written to the log or
//! a snapshot, or with Ed25519, whose public key is all the server holds.
//!
//! Every change goes through the log ([`crate::entry::LogEntry`]), and is
//! checked here when applied, so every replica accepts or refuses it alike.

use std::collections::BTreeMap;
use std::net::IpAddr;

use exchange_types::AccountId;
use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use crate::key_rules::{covers, Reach};
use crate::limits::{
    MAX_API_KEY_LEN, MAX_KEYS_PER_ACCOUNT, MAX_KEY_ALLOW, MAX_KEY_LABEL_LEN, MAX_KEY_LIFETIME_SECS,
};

/// What a key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Balances, orders, fills, the private WebSocket stream, its
    /// account's key list.
    Read,
    /// Placing, replacing and cancelling orders.
    Trade,
    /// Moving funds out, and managing the account's keys.
    Transfer,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Trade, Scope::Transfer];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Trade => "trade",
            Scope::Transfer => "transfer",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        match self {
            Scope::Read => 1,
            Scope::Trade => 2,
            Scope::Transfer => 4,
        }
    }
}

/// A set of scopes, written as a list of their names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    pub const fn all() -> Scopes {
        Scopes(7)
    }

    pub fn of(scopes: &[Scope]) -> Scopes {
        Scopes(scopes.iter().fold(0, |bits, s| bits | s.bit()))
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every scope of `other` is one of these.
    pub fn covers(self, other: Scopes) -> bool {
        other.0 & !self.0 == 0
    }

    pub fn names(self) -> Vec<&'static str> {
        Scope::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .map(Scope::as_str)
            .collect()
    }

    /// Scopes from their names; an unknown name is refused by name.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Scopes, KeyError> {
        let mut scopes = Scopes::default();
        for name in names {
            let scope = Scope::parse(name.as_ref())
                .ok_or_else(|| KeyError::UnknownScope(name.as_ref().to_string()))?;
            scopes.0 |= scope.bit();
        }
        Ok(scopes)
    }
}

fn all_scopes() -> Scopes {
    Scopes::all()
}

impl Serialize for Scopes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.names().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Scopes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scopes, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Scopes::parse(&names).map_err(serde::de::Error::custom)
    }
}

/// Why a key change is refused (by the gateway before proposing it, and
/// again, identically on every replica, when it is applied).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("no API key has this id")]
    UnknownKey,
    #[error("an API key with this id exists already")]
    DuplicateKey,
    #[error("no account has this id")]
    UnknownAccount,
    #[error("the account holds {MAX_KEYS_PER_ACCOUNT} API keys already; revoke one first")]
    TooManyKeys,
    #[error("a key id is 1 to {MAX_API_KEY_LEN} letters, digits, '-' or '_'")]
    InvalidKeyId,
    #[error("a label is at most {MAX_KEY_LABEL_LEN} bytes of printable text")]
    InvalidLabel,
    #[error("unknown scope {0:?}: scopes are read, trade and transfer")]
    UnknownScope(String),
    #[error("a key needs at least one scope")]
    NoScopes,
    #[error("expires_in_secs must be 1 to {MAX_KEY_LIFETIME_SECS}")]
    InvalidExpiry,
    #[error("{0:?} is not an IPv4 or IPv6 address or CIDR range")]
    InvalidAllow(String),
    #[error("an allow-list holds at most {MAX_KEY_ALLOW} ranges")]
    TooManyAllowed,
    #[error("an Ed25519 public key is 32 bytes, as 64 hex digits")]
    InvalidPublicKey,
    #[error(
        "a key may only create, rotate or revoke keys it covers: scopes among its own, \
         an allow-list within its own, an expiry no later than its own"
    )]
    NotCovered,
    #[error("the key managing keys was revoked or expired before its request was applied")]
    ManagerGone,
}

impl KeyError {
    /// The API's error code for it.
    pub fn code(&self) -> &'static str {
        match self {
            KeyError::UnknownKey => "unknown_api_key",
            KeyError::DuplicateKey => "duplicate_api_key",
            KeyError::UnknownAccount => "unknown_account",
            KeyError::TooManyKeys => "too_many_keys",
            KeyError::InvalidLabel => "invalid_label",
            KeyError::NotCovered => "key_not_covered",
            KeyError::ManagerGone => "invalid_api_key",
            _ => "invalid_value",
        }
    }
}

/// A new key, as the log carries it: nothing secret in it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySpec {
    pub key_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    pub scopes: Scopes,
    /// Seconds after the creating entry's time; absent: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
    /// Address ranges the key may be used from; empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// The Ed25519 public key (hex); absent: an HMAC key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ed25519: Option<String>,
}

impl KeySpec {
    /// Refuses what no key may be. The allow-list is checked as written;
    /// [`normalise_allow`] gives the form to store.
    pub fn check(&self) -> Result<(), KeyError> {
        check_key_id(&self.key_id)?;
        if self.label.len() > MAX_KEY_LABEL_LEN || self.label.chars().any(char::is_control) {
            return Err(KeyError::InvalidLabel);
        }
        if self.scopes.is_empty() {
            return Err(KeyError::NoScopes);
        }
        if let Some(secs) = self.expires_in_secs {
            if secs == 0 || secs > MAX_KEY_LIFETIME_SECS {
                return Err(KeyError::InvalidExpiry);
            }
        }
        parse_allow(&self.allow)?;
        if let Some(public_key) = &self.ed25519 {
            check_public_key(public_key)?;
        }
        Ok(())
    }
}

pub fn check_key_id(key_id: &str) -> Result<(), KeyError> {
    let valid = !key_id.is_empty()
        && key_id.len() <= MAX_API_KEY_LEN
        && key_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(KeyError::InvalidKeyId)
    }
}

pub fn check_public_key(public_key: &str) -> Result<(), KeyError> {
    match hex::decode(public_key) {
        Ok(bytes) if bytes.len() == 32 => Ok(()),
        _ => Err(KeyError::InvalidPublicKey),
    }
}

/// The allow-list's ranges; a bare address is a range of one.
pub fn parse_allow(allow: &[String]) -> Result<Vec<IpNet>, KeyError> {
    if allow.len() > MAX_KEY_ALLOW {
        return Err(KeyError::TooManyAllowed);
    }
    allow
        .iter()
        .map(|text| {
            let text = text.trim();
            text.parse::<IpNet>()
                .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                .map(|net| net.trunc())
                .map_err(|_| KeyError::InvalidAllow(text.to_string()))
        })
        .collect()
}

/// The allow-list as stored: each range in its canonical form.
pub fn normalise_allow(allow: &[String]) -> Result<Vec<String>, KeyError> {
    Ok(parse_allow(allow)?
        .into_iter()
        .map(|net| net.to_string())
        .collect())
}

/// One key as the replicated state holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub account: AccountId,
    // Keys in snapshots from before scopes existed could do everything.
    #[serde(default = "all_scopes")]
    pub scopes: Scopes,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    /// Log time (Unix nanoseconds) of the entry that created it.
    #[serde(default)]
    pub created_at: u64,
    /// Log time from which it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ed25519: Option<String>,
    /// A secret in the clear, only in a log written before secrets were
    /// derived from the master key; rotating the key replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl ApiKey {
    pub fn is_expired(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }
}

/// Every API key, and the next account id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub by_key: BTreeMap<String, ApiKey>,
    /// Account ids are handed out in order; 0 is the fee account.
    pub next_account: AccountId,
}

impl Credentials {
    pub fn new() -> Self {
        Credentials {
            by_key: BTreeMap::new(),
            next_account: 1,
        }
    }

    /// Whether `account` is one a key may belong to (not the fee account).
    pub fn is_client_account(&self, account: AccountId) -> bool {
        account >= 1 && account < self.next_account
    }

    /// The account's keys, by id.
    pub fn keys_of(&self, account: AccountId) -> impl Iterator<Item = (&String, &ApiKey)> {
        self.by_key
            .iter()
            .filter(move |(_, k)| k.account == account)
    }

    /// Opens an account with one key of every scope. A key id in use
    /// already is refused and opens nothing.
    pub fn create_account(
        &mut self,
        ts: u64,
        key_id: &str,
        legacy_secret: Option<&str>,
    ) -> Result<AccountId, KeyError> {
        if self.by_key.contains_key(key_id) {
            return Err(KeyError::DuplicateKey);
        }
        let account = self.next_account;
        self.next_account += 1;
        self.by_key.insert(
            key_id.to_string(),
            ApiKey {
                account,
                scopes: Scopes::all(),
                label: String::new(),
                created_at: ts,
                expires_at: None,
                allow: Vec::new(),
                ed25519: None,
                secret: legacy_secret.map(str::to_string),
            },
        );
        Ok(account)
    }

    /// Adds a key. Made `by` a key of the account, it is held to that
    /// key: what the spec leaves open (allow-list, expiry) it inherits,
    /// and what it asks for must be covered ([`crate::key_rules`]).
    pub fn create_key(
        &mut self,
        ts: u64,
        account: AccountId,
        spec: &KeySpec,
        by: Option<&str>,
    ) -> Result<(), KeyError> {
        spec.check()?;
        if !self.is_client_account(account) {
            return Err(KeyError::UnknownAccount);
        }
        if self.by_key.contains_key(&spec.key_id) {
            return Err(KeyError::DuplicateKey);
        }
        if self.keys_of(account).count() >= MAX_KEYS_PER_ACCOUNT {
            return Err(KeyError::TooManyKeys);
        }
        let mut allow = normalise_allow(&spec.allow)?;
        let mut expires_at = spec
            .expires_in_secs
            .map(|secs| ts.saturating_add(secs.saturating_mul(1_000_000_000)));
        if let Some(by) = by {
            let manager = self.manager(ts, by, account)?;
            if allow.is_empty() {
                allow.clone_from(&manager.allow);
            }
            expires_at = expires_at.or(manager.expires_at);
            let wanted = Reach {
                scopes: spec.scopes,
                allow: &allow,
                expires_at,
            };
            if !covers(&Reach::of(manager), &wanted) {
                return Err(KeyError::NotCovered);
            }
        }
        self.by_key.insert(
            spec.key_id.clone(),
            ApiKey {
                account,
                scopes: spec.scopes,
                label: spec.label.clone(),
                created_at: ts,
                expires_at,
                allow,
                ed25519: spec.ed25519.clone(),
                secret: None,
            },
        );
        Ok(())
    }

    /// The key, if it exists and (when `account` is given) is that
    /// account's: another account's key is indistinguishable from none.
    pub fn owned(&self, key_id: &str, account: Option<AccountId>) -> Result<&ApiKey, KeyError> {
        self.by_key
            .get(key_id)
            .filter(|k| account.is_none_or(|a| k.account == a))
            .ok_or(KeyError::UnknownKey)
    }

    /// The key `by`, managing keys of `account` at log time `ts`: it must
    /// still exist, be the account's and not have expired.
    fn manager(&self, ts: u64, by: &str, account: AccountId) -> Result<&ApiKey, KeyError> {
        self.by_key
            .get(by)
            .filter(|k| k.account == account && !k.is_expired(ts))
            .ok_or(KeyError::ManagerGone)
    }

    /// The key `key_id` of `account` (any account's, for the operator),
    /// which the key `by`, when given, must cover.
    fn managed(
        &self,
        ts: u64,
        key_id: &str,
        account: Option<AccountId>,
        by: Option<&str>,
    ) -> Result<&ApiKey, KeyError> {
        let key = self.owned(key_id, account)?;
        if let Some(by) = by {
            let manager = self.manager(ts, by, key.account)?;
            if !covers(&Reach::of(manager), &Reach::of(key)) {
                return Err(KeyError::NotCovered);
            }
        }
        Ok(key)
    }

    pub fn revoke(
        &mut self,
        ts: u64,
        key_id: &str,
        account: Option<AccountId>,
        by: Option<&str>,
    ) -> Result<ApiKey, KeyError> {
        self.managed(ts, key_id, account, by)?;
        self.by_key.remove(key_id).ok_or(KeyError::UnknownKey)
    }

    /// Replaces a key by a new one with the same account, scopes, label,
    /// expiry and allow-list, and a new id (and, for Ed25519, the new
    /// public key). The old id stops working at the same log index.
    pub fn rotate(
        &mut self,
        ts: u64,
        key_id: &str,
        account: Option<AccountId>,
        new_key_id: &str,
        ed25519: Option<&str>,
        by: Option<&str>,
    ) -> Result<AccountId, KeyError> {
        check_key_id(new_key_id)?;
        let old = self.managed(ts, key_id, account, by)?;
        if self.by_key.contains_key(new_key_id) {
            return Err(KeyError::DuplicateKey);
        }
        // An HMAC key stays one, an Ed25519 key needs its new public key.
        let ed25519 = match (&old.ed25519, ed25519) {
            (None, None) => None,
            (Some(_), Some(public_key)) => {
                check_public_key(public_key)?;
                Some(public_key.to_string())
            }
            _ => return Err(KeyError::InvalidPublicKey),
        };
        let new = ApiKey {
            created_at: ts,
            ed25519,
            secret: None,
            ..old.clone()
        };
        let owner = new.account;
        self.by_key.remove(key_id);
        self.by_key.insert(new_key_id.to_string(), new);
        Ok(owner)
    }
}
