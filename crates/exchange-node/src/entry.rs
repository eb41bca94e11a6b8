//! What goes into the log: trading commands for the core, and the gateway
//! facts that must survive and replicate with them (API keys).
//!
//! An entry is a core command in the binary encoding
//! ([`exchange_codec::binary`]), or one of the key commands as a JSON
//! object: `create_account`, `create_api_key`, `revoke_api_key`,
//! `rotate_api_key`. Commands are nearly every entry, and reading them is
//! on the core thread, so they take the encoding that is read without
//! parsing; the key commands are rare and carry nested, growing
//! structures, so they keep JSON. Journals written when commands were JSON
//! lines in the replay format (`"cmd": "place"`, ...) still read: the
//! first byte tells the forms apart. `exchange log dump` prints any
//! journal as JSON lines, for the ordinary tools.
//!
//! The client-session entries ([`crate::sessions`]): `open_session` is
//! JSON like the key commands; a sequenced entry is the byte
//! [`SEQUENCED_TAG`], the session and the sequence number as
//! little-endian `u64`s, then the entry it carries in its own encoding.
//! The tag is a UTF-8 continuation byte other than the binary commands'
//! marker, so neither JSON text nor a binary command starts with it.
//!
//! A sequenced entry may carry a keep-alive, the byte
//! [`SESSION_ALIVE_TAG`] then its time as a little-endian `u64` (the
//! cheapest entry a gateway writes, once per interval it sent nothing
//! else), or `session_protect`, JSON.
//!
//! A guarded entry ([`crate::replay_guard`]) is the byte [`GUARDED_TAG`]
//! (another such byte), the request's 16-byte fingerprint, its
//! `forget_after_ms` as a little-endian `u64`, then the entry it carries.
//! It may sit inside a sequenced entry, never the reverse, and never
//! inside another guarded one: decoding never nests deeper than two.

use exchange_types::{AccountId, Stamped};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::keys::KeySpec;

#[path = "entry_wrappers.rs"]
mod wrappers;
use wrappers::{decode_fix_sequenced, decode_guarded, decode_sequenced, decode_wrapper_json};
use wrappers::{wrapper_allowed, Within};
use wrappers::{FIX_SEQUENCED, GUARDED, SEQUENCED};

// A core command is much larger than a credential entry, but entries are
// built once and moved straight into a journal batch: boxing would cost an
// allocation per command for nothing.
#[allow(clippy::large_enum_variant)]
/// The version of the log's entries besides core commands (sessions,
/// keys, guards): 2 since a session's open carries its gateway's
/// incarnation, which a reader of version 1 refuses as an unknown field.
pub const ENTRY_FORMAT_VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    Core(Stamped),
    /// Opens an account with one HMAC key of every scope; the account id
    /// is assigned when the entry is applied, so every replica assigns the
    /// same one. The key's secret is derived from the master key, so the
    /// entry carries none; `legacy_secret` is only read from logs written
    /// before that.
    CreateAccount {
        ts: u64,
        api_key: String,
        legacy_secret: Option<String>,
    },
    /// Adds a key to an account. `by`: the account's key that asks for
    /// it, which must cover it ([`crate::key_rules`]); absent, the
    /// operator (and every entry written before keys were held to it).
    CreateKey {
        ts: u64,
        account: AccountId,
        key: KeySpec,
        by: Option<String>,
    },
    /// Removes a key; `account`, when given, must own it (a key managing
    /// its own account), else it is refused as unknown; `by` as for
    /// `CreateKey`.
    RevokeKey {
        ts: u64,
        key_id: String,
        account: Option<AccountId>,
        by: Option<String>,
    },
    /// Replaces a key by `new_key_id`, keeping everything but the id and
    /// (for Ed25519) the public key.
    RotateKey {
        ts: u64,
        key_id: String,
        account: Option<AccountId>,
        new_key_id: String,
        ed25519: Option<String>,
        by: Option<String>,
    },
    /// Opens a client session for a gateway process incarnation (see
    /// [`crate::sessions`]).
    OpenSession {
        ts: u64,
        session: u64,
        gateway: String,
        /// How long the session may be silent before the cluster expires
        /// it and cancels what its connections protected; none: never.
        cancel_grace_ms: Option<u64>,
        /// Increases with each session a gateway name opens, across its
        /// restarts (the gateway's wall clock when it opened, in ns): what
        /// refuses a dead incarnation's open arriving late. None in
        /// entries logged before it existed.
        incarnation: Option<u64>,
    },
    /// A gateway's keep-alive: only meaningful inside its session's
    /// `Sequenced` entry, where it keeps the session alive and does
    /// nothing else.
    SessionAlive {
        ts: u64,
    },
    /// Inside a `Sequenced` entry: a client connection of the gateway
    /// that asked for cancel-on-disconnect opened (`on`) or closed for
    /// `account` (see [`crate::sessions`]).
    SessionProtect {
        ts: u64,
        account: AccountId,
        on: bool,
    },
    /// `entry`, applied iff `session` is open and `seq` is above its last
    /// applied sequence number. Never holds another `Sequenced`.
    Sequenced {
        session: u64,
        seq: u64,
        entry: Box<LogEntry>,
    },
    /// A FIX session's logon at the process whose FIX store is `owner`:
    /// reserves `reserve` outbound MsgSeqNums for it (see
    /// [`crate::fix_links`]); `reset`: the Logon carried ResetSeqNumFlag.
    FixLogon {
        ts: u64,
        link: u64,
        owner: u64,
        reset: bool,
        reserve: u64,
    },
    /// `reserve` more outbound MsgSeqNums for the FIX session's holder.
    FixReserve {
        ts: u64,
        link: u64,
        owner: u64,
        reserve: u64,
    },
    /// `entry`, a core command a FIX session sent as the counterparty's
    /// MsgSeqNum `seq`, applied iff `seq` is above the last one applied
    /// for `link` (see [`crate::fix_links`]). May sit in a `Sequenced`
    /// entry; holds a core command only.
    FixSequenced {
        link: u64,
        seq: u64,
        entry: Box<LogEntry>,
    },
    /// `entry`, a signed request's command, applied iff no guarded entry
    /// with the same fingerprint is remembered and `forget_after_ms` has
    /// not passed by the entry's time (see [`crate::replay_guard`]).
    /// Holds neither a `Sequenced` nor another `Guarded`.
    Guarded {
        fingerprint: [u8; 16],
        forget_after_ms: u64,
        entry: Box<LogEntry>,
    },
}

/// First byte of a sequenced entry.
pub const SEQUENCED_TAG: u8 = 0xB6;
/// The tag, the session and the sequence number.
pub const SEQUENCED_HEADER_BYTES: usize = 1 + 8 + 8;

/// First byte of a keep-alive, followed by its time as a little-endian
/// `u64`: with the sequenced header, 26 bytes a keep-alive.
pub const SESSION_ALIVE_TAG: u8 = 0xB8;

/// First byte of a guarded entry.
pub const GUARDED_TAG: u8 = 0xB7;

/// First byte of a FIX-sequenced entry, followed by the link and the
/// MsgSeqNum as little-endian `u64`s, then the command.
pub const FIX_SEQUENCED_TAG: u8 = 0xB9;
/// The tag, the link and the MsgSeqNum.
pub const FIX_SEQUENCED_HEADER_BYTES: usize = 1 + 8 + 8;
/// The tag, the fingerprint and the forget time.
pub const GUARDED_HEADER_BYTES: usize = 1 + 16 + 8;

// Neither JSON nor a binary command starts with a tag, nor one tag with
// the other.
const _: () = assert!(SEQUENCED_TAG != exchange_codec::binary::MARKER);
const _: () = assert!(SEQUENCED_TAG & 0xC0 == 0x80, "a UTF-8 continuation byte");
const _: () = assert!(GUARDED_TAG != exchange_codec::binary::MARKER);
const _: () = assert!(GUARDED_TAG != SEQUENCED_TAG);
const _: () = assert!(GUARDED_TAG & 0xC0 == 0x80, "a UTF-8 continuation byte");
const _: () = assert!(SESSION_ALIVE_TAG != exchange_codec::binary::MARKER);
const _: () = assert!(SESSION_ALIVE_TAG != SEQUENCED_TAG && SESSION_ALIVE_TAG != GUARDED_TAG);
const _: () = assert!(
    SESSION_ALIVE_TAG & 0xC0 == 0x80,
    "a UTF-8 continuation byte"
);
const _: () = assert!(FIX_SEQUENCED_TAG != exchange_codec::binary::MARKER);
const _: () = assert!(
    FIX_SEQUENCED_TAG != SEQUENCED_TAG
        && FIX_SEQUENCED_TAG != GUARDED_TAG
        && FIX_SEQUENCED_TAG != SESSION_ALIVE_TAG
);
const _: () = assert!(
    FIX_SEQUENCED_TAG & 0xC0 == 0x80,
    "a UTF-8 continuation byte"
);
// A FIX-sequenced command is no longer than a guarded one, which the
// batch bound (`limits::MAX_BATCH_RECORD_BYTES`) is computed for.
const _: () = assert!(FIX_SEQUENCED_HEADER_BYTES <= GUARDED_HEADER_BYTES);

#[derive(Debug, Error)]
pub enum EntryError {
    #[error("log entry is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("log entry holds an invalid command: {0}")]
    Command(#[from] exchange_codec::CodecError),
    #[error("log entry holds an invalid binary command: {0}")]
    Binary(#[from] exchange_codec::binary::BinaryError),
    /// Its types always serialise, so this is a bug; the entry is not
    /// proposed rather than written as empty bytes no replica could read.
    #[error("log entry does not serialise: {0}")]
    Unwritable(#[source] serde_json::Error),
    #[error("a sequenced log entry holds another sequenced entry")]
    NestedSequenced,
    #[error("sequenced log entry is truncated")]
    Truncated,
    #[error("a guarded log entry holds a sequenced or another guarded entry")]
    NestedGuarded,
    #[error("guarded log entry is truncated")]
    GuardedTruncated,
    #[error("guarded log entry's fingerprint is not 32 hex digits")]
    Fingerprint,
    #[error("a FIX-sequenced log entry holds something other than a core command")]
    NestedFix,
    #[error("FIX-sequenced log entry is truncated")]
    FixTruncated,
    #[error("keep-alive log entry is not 9 bytes")]
    SessionAliveLength,
    /// A bug: only a client-session entry has a session encoding.
    #[error("not a client-session entry")]
    NotSession,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateAccountWire {
    cmd: String,
    ts: u64,
    api_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_secret: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateKeyWire {
    cmd: String,
    ts: u64,
    account: AccountId,
    key: KeySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeKeyWire {
    cmd: String,
    ts: u64,
    key_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<AccountId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RotateKeyWire {
    cmd: String,
    ts: u64,
    key_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account: Option<AccountId>,
    new_key_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ed25519: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

const CREATE_ACCOUNT: &str = "create_account";
const CREATE_KEY: &str = "create_api_key";
const REVOKE_KEY: &str = "revoke_api_key";
const ROTATE_KEY: &str = "rotate_api_key";
const OPEN_SESSION: &str = "open_session";
const SESSION_ALIVE: &str = "session_alive";
const SESSION_PROTECT: &str = "session_protect";
const FIX_LOGON: &str = "fix_logon";
const FIX_RESERVE: &str = "fix_reserve";

/// A FIX logon or reservation ([`crate::fix_links`]).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixLinkWire {
    cmd: String,
    ts: u64,
    link: u64,
    owner: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    reset: bool,
    reserve: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenSessionWire {
    cmd: String,
    ts: u64,
    session: u64,
    gateway: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cancel_grace_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    incarnation: Option<u64>,
}

/// A keep-alive as `exchange log dump` prints it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionAliveWire {
    cmd: String,
    ts: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionProtectWire {
    cmd: String,
    ts: u64,
    account: AccountId,
    on: bool,
}

impl LogEntry {
    pub fn ts(&self) -> u64 {
        match self {
            LogEntry::Core(stamped) => stamped.ts,
            LogEntry::CreateAccount { ts, .. }
            | LogEntry::CreateKey { ts, .. }
            | LogEntry::RevokeKey { ts, .. }
            | LogEntry::RotateKey { ts, .. }
            | LogEntry::OpenSession { ts, .. }
            | LogEntry::SessionAlive { ts }
            | LogEntry::SessionProtect { ts, .. }
            | LogEntry::FixLogon { ts, .. }
            | LogEntry::FixReserve { ts, .. } => *ts,
            LogEntry::Sequenced { entry, .. }
            | LogEntry::Guarded { entry, .. }
            | LogEntry::FixSequenced { entry, .. } => entry.ts(),
        }
    }

    /// The entry inside any wrappers (sequenced, guarded).
    pub fn inner(&self) -> &LogEntry {
        match self {
            LogEntry::Sequenced { entry, .. }
            | LogEntry::Guarded { entry, .. }
            | LogEntry::FixSequenced { entry, .. } => entry.inner(),
            other => other,
        }
    }

    pub fn set_ts(&mut self, new_ts: u64) {
        match self {
            LogEntry::Core(stamped) => stamped.ts = new_ts,
            LogEntry::CreateAccount { ts, .. }
            | LogEntry::CreateKey { ts, .. }
            | LogEntry::RevokeKey { ts, .. }
            | LogEntry::RotateKey { ts, .. }
            | LogEntry::OpenSession { ts, .. }
            | LogEntry::SessionAlive { ts }
            | LogEntry::SessionProtect { ts, .. }
            | LogEntry::FixLogon { ts, .. }
            | LogEntry::FixReserve { ts, .. } => *ts = new_ts,
            // Stamped exactly as the entry would be on its own.
            LogEntry::Sequenced { entry, .. }
            | LogEntry::Guarded { entry, .. }
            | LogEntry::FixSequenced { entry, .. } => {
                entry.set_ts(new_ts);
            }
        }
    }

    /// The API keys the entry adds, changes or removes.
    pub fn key_ids(&self) -> Vec<&str> {
        match self {
            LogEntry::Core(_)
            | LogEntry::OpenSession { .. }
            | LogEntry::SessionAlive { .. }
            | LogEntry::SessionProtect { .. }
            | LogEntry::FixLogon { .. }
            | LogEntry::FixReserve { .. } => Vec::new(),
            LogEntry::Sequenced { entry, .. }
            | LogEntry::Guarded { entry, .. }
            | LogEntry::FixSequenced { entry, .. } => entry.key_ids(),
            LogEntry::CreateAccount { api_key, .. } => vec![api_key],
            LogEntry::CreateKey { key, .. } => vec![&key.key_id],
            LogEntry::RevokeKey { key_id, .. } => vec![key_id],
            LogEntry::RotateKey {
                key_id, new_key_id, ..
            } => vec![key_id, new_key_id],
        }
    }

    pub fn encode(&self) -> Result<Vec<u8>, EntryError> {
        let json = match self {
            LogEntry::Core(stamped) => return Ok(exchange_codec::binary::encode_command(stamped)),
            LogEntry::CreateAccount {
                ts,
                api_key,
                legacy_secret,
            } => serde_json::to_vec(&CreateAccountWire {
                cmd: CREATE_ACCOUNT.into(),
                ts: *ts,
                api_key: api_key.clone(),
                api_secret: legacy_secret.clone(),
            }),
            LogEntry::CreateKey {
                ts,
                account,
                key,
                by,
            } => serde_json::to_vec(&CreateKeyWire {
                cmd: CREATE_KEY.into(),
                ts: *ts,
                account: *account,
                key: key.clone(),
                by: by.clone(),
            }),
            LogEntry::RevokeKey {
                ts,
                key_id,
                account,
                by,
            } => serde_json::to_vec(&RevokeKeyWire {
                cmd: REVOKE_KEY.into(),
                ts: *ts,
                key_id: key_id.clone(),
                account: *account,
                by: by.clone(),
            }),
            LogEntry::RotateKey {
                ts,
                key_id,
                account,
                new_key_id,
                ed25519,
                by,
            } => serde_json::to_vec(&RotateKeyWire {
                cmd: ROTATE_KEY.into(),
                ts: *ts,
                key_id: key_id.clone(),
                account: *account,
                new_key_id: new_key_id.clone(),
                ed25519: ed25519.clone(),
                by: by.clone(),
            }),
            LogEntry::OpenSession { .. }
            | LogEntry::SessionAlive { .. }
            | LogEntry::SessionProtect { .. }
            | LogEntry::FixLogon { .. }
            | LogEntry::FixReserve { .. } => return self.encode_session(),
            LogEntry::Sequenced { .. }
            | LogEntry::Guarded { .. }
            | LogEntry::FixSequenced { .. } => {
                let mut out = Vec::with_capacity(SEQUENCED_HEADER_BYTES + 160);
                self.encode_into(&mut out)?;
                return Ok(out);
            }
        };
        json.map_err(EntryError::Unwritable)
    }

    /// The entry as a JSON line, whichever form the log holds it in: what
    /// `exchange log dump` prints.
    pub fn to_json(&self) -> Result<Vec<u8>, EntryError> {
        match self {
            LogEntry::Core(stamped) => {
                let mut out = Vec::with_capacity(192);
                exchange_codec::encode_command_into(stamped, &mut out);
                Ok(out)
            }
            LogEntry::Sequenced { .. }
            | LogEntry::Guarded { .. }
            | LogEntry::FixSequenced { .. } => self.wrapper_json(),
            LogEntry::SessionAlive { ts } => serde_json::to_vec(&SessionAliveWire {
                cmd: SESSION_ALIVE.into(),
                ts: *ts,
            })
            .map_err(EntryError::Unwritable),
            other => other.encode(),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<LogEntry, EntryError> {
        LogEntry::decode_in(bytes, Within::Nothing)
    }

    /// `within`: the wrapper the bytes are inside, which limits what they
    /// may be (so decoding never nests deeper than two).
    fn decode_in(bytes: &[u8], within: Within) -> Result<LogEntry, EntryError> {
        if exchange_codec::binary::is_binary(bytes) {
            return Ok(LogEntry::Core(exchange_codec::binary::decode_command(
                bytes,
            )?));
        }
        match bytes.first() {
            Some(&SEQUENCED_TAG) => {
                wrapper_allowed(SEQUENCED, within)?;
                return decode_sequenced(bytes);
            }
            Some(&GUARDED_TAG) => {
                wrapper_allowed(GUARDED, within)?;
                return decode_guarded(bytes);
            }
            Some(&FIX_SEQUENCED_TAG) => {
                wrapper_allowed(FIX_SEQUENCED, within)?;
                return decode_fix_sequenced(bytes);
            }
            Some(&SESSION_ALIVE_TAG) => {
                let ts = bytes
                    .get(1..)
                    .and_then(|rest| <[u8; 8]>::try_from(rest).ok())
                    .ok_or(EntryError::SessionAliveLength)?;
                return Ok(LogEntry::SessionAlive {
                    ts: u64::from_le_bytes(ts),
                });
            }
            _ => {}
        }
        let text = std::str::from_utf8(bytes).map_err(|_| {
            EntryError::Json(serde_json::Error::io(std::io::Error::other(
                "entry is not UTF-8",
            )))
        })?;
        // Core commands first: the key commands are rare, and the command
        // decoder names them when it meets them, so nothing scans for
        // them in every entry.
        match exchange_codec::decode_command(text) {
            Ok(stamped) => Ok(LogEntry::Core(stamped)),
            Err(exchange_codec::CodecError::UnknownCmd(name)) => decode_named(name, text, within),
            Err(error) => Err(error.into()),
        }
    }
}

/// A JSON entry the command decoder did not know, by its `cmd`; `within`
/// as for `LogEntry::decode_in`.
fn decode_named(name: String, text: &str, within: Within) -> Result<LogEntry, EntryError> {
    match name.as_str() {
        CREATE_ACCOUNT => {
            let wire: CreateAccountWire = serde_json::from_str(text)?;
            Ok(LogEntry::CreateAccount {
                ts: wire.ts,
                api_key: wire.api_key,
                legacy_secret: wire.api_secret,
            })
        }
        CREATE_KEY => {
            let wire: CreateKeyWire = serde_json::from_str(text)?;
            Ok(LogEntry::CreateKey {
                ts: wire.ts,
                account: wire.account,
                key: wire.key,
                by: wire.by,
            })
        }
        REVOKE_KEY => {
            let wire: RevokeKeyWire = serde_json::from_str(text)?;
            Ok(LogEntry::RevokeKey {
                ts: wire.ts,
                key_id: wire.key_id,
                account: wire.account,
                by: wire.by,
            })
        }
        ROTATE_KEY => {
            let wire: RotateKeyWire = serde_json::from_str(text)?;
            Ok(LogEntry::RotateKey {
                ts: wire.ts,
                key_id: wire.key_id,
                account: wire.account,
                new_key_id: wire.new_key_id,
                ed25519: wire.ed25519,
                by: wire.by,
            })
        }
        OPEN_SESSION => {
            let wire: OpenSessionWire = serde_json::from_str(text)?;
            Ok(LogEntry::OpenSession {
                ts: wire.ts,
                session: wire.session,
                gateway: wire.gateway,
                cancel_grace_ms: wire.cancel_grace_ms,
                incarnation: wire.incarnation,
            })
        }
        SESSION_ALIVE => {
            let wire: SessionAliveWire = serde_json::from_str(text)?;
            Ok(LogEntry::SessionAlive { ts: wire.ts })
        }
        SESSION_PROTECT => {
            let wire: SessionProtectWire = serde_json::from_str(text)?;
            Ok(LogEntry::SessionProtect {
                ts: wire.ts,
                account: wire.account,
                on: wire.on,
            })
        }
        FIX_LOGON | FIX_RESERVE => decode_fix_link(&name, text),
        SEQUENCED | GUARDED | FIX_SEQUENCED => decode_wrapper_json(&name, text, within),
        _ => Err(exchange_codec::CodecError::UnknownCmd(name).into()),
    }
}

/// A `fix_logon` or `fix_reserve` entry, by its `cmd`.
fn decode_fix_link(name: &str, text: &str) -> Result<LogEntry, EntryError> {
    let wire: FixLinkWire = serde_json::from_str(text)?;
    Ok(if name == FIX_LOGON {
        LogEntry::FixLogon {
            ts: wire.ts,
            link: wire.link,
            owner: wire.owner,
            reset: wire.reset,
            reserve: wire.reserve,
        }
    } else {
        LogEntry::FixReserve {
            ts: wire.ts,
            link: wire.link,
            owner: wire.owner,
            reserve: wire.reserve,
        }
    })
}

impl LogEntry {
    /// A client-session entry's encoding (see [`crate::sessions`]).
    fn encode_session(&self) -> Result<Vec<u8>, EntryError> {
        let json = match self {
            LogEntry::OpenSession {
                ts,
                session,
                gateway,
                cancel_grace_ms,
                incarnation,
            } => serde_json::to_vec(&OpenSessionWire {
                cmd: OPEN_SESSION.into(),
                ts: *ts,
                session: *session,
                gateway: gateway.clone(),
                cancel_grace_ms: *cancel_grace_ms,
                incarnation: *incarnation,
            }),
            LogEntry::SessionAlive { ts } => {
                let mut out = Vec::with_capacity(9);
                out.push(SESSION_ALIVE_TAG);
                out.extend_from_slice(&ts.to_le_bytes());
                return Ok(out);
            }
            LogEntry::SessionProtect { ts, account, on } => {
                serde_json::to_vec(&SessionProtectWire {
                    cmd: SESSION_PROTECT.into(),
                    ts: *ts,
                    account: *account,
                    on: *on,
                })
            }
            LogEntry::FixLogon {
                ts,
                link,
                owner,
                reset,
                reserve,
            } => serde_json::to_vec(&FixLinkWire {
                cmd: FIX_LOGON.into(),
                ts: *ts,
                link: *link,
                owner: *owner,
                reset: *reset,
                reserve: *reserve,
            }),
            LogEntry::FixReserve {
                ts,
                link,
                owner,
                reserve,
            } => serde_json::to_vec(&FixLinkWire {
                cmd: FIX_RESERVE.into(),
                ts: *ts,
                link: *link,
                owner: *owner,
                reset: false,
                reserve: *reserve,
            }),
            // Not session entries: `encode` writes them.
            _ => return Err(EntryError::NotSession),
        };
        json.map_err(EntryError::Unwritable)
    }
}
