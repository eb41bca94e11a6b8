//! What goes into the log: trading commands for the core, and the gateway
//! facts that must survive and replicate with them (API credentials).
//!
//! An entry is one JSON object: a core command in the replay format
//! (`"cmd": "place"`, ...), or `"cmd": "create_account"`. Keeping the log in
//! the same vocabulary as `exchange replay` means a journal can be read,
//! diffed and replayed with the ordinary tools.

use exchange_types::Stamped;
use serde::{Deserialize, Serialize};
use thiserror::Error;

// A core command is much larger than a credential entry, but entries are
// built once and moved straight into a journal batch: boxing would cost an
// allocation per command for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogEntry {
    Core(Stamped),
    /// Opens an account with API credentials; the account id is assigned
    /// when the entry is applied, so every replica assigns the same one.
    CreateAccount {
        ts: u64,
        api_key: String,
        api_secret: String,
    },
}

#[derive(Debug, Error)]
pub enum EntryError {
    #[error("log entry is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("log entry holds an invalid command: {0}")]
    Command(#[from] exchange_codec::CodecError),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateAccountWire {
    cmd: String,
    ts: u64,
    api_key: String,
    api_secret: String,
}

impl LogEntry {
    pub fn ts(&self) -> u64 {
        match self {
            LogEntry::Core(stamped) => stamped.ts,
            LogEntry::CreateAccount { ts, .. } => *ts,
        }
    }

    pub fn set_ts(&mut self, new_ts: u64) {
        match self {
            LogEntry::Core(stamped) => stamped.ts = new_ts,
            LogEntry::CreateAccount { ts, .. } => *ts = new_ts,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        match self {
            LogEntry::Core(stamped) => {
                let mut out = Vec::with_capacity(192);
                exchange_codec::encode_command_into(stamped, &mut out);
                out
            }
            LogEntry::CreateAccount {
                ts,
                api_key,
                api_secret,
            } => serde_json::to_vec(&CreateAccountWire {
                cmd: "create_account".into(),
                ts: *ts,
                api_key: api_key.clone(),
                api_secret: api_secret.clone(),
            })
            .unwrap_or_default(),
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<LogEntry, EntryError> {
        let text = std::str::from_utf8(bytes).map_err(|_| {
            EntryError::Json(serde_json::Error::io(std::io::Error::other(
                "entry is not UTF-8",
            )))
        })?;
        // Core commands first: the one gateway command is rare, and the
        // command decoder names it when it meets it, so nothing scans for
        // it in every entry.
        match exchange_codec::decode_command(text) {
            Ok(stamped) => Ok(LogEntry::Core(stamped)),
            Err(exchange_codec::CodecError::UnknownCmd(name)) if name == "create_account" => {
                let wire: CreateAccountWire = serde_json::from_str(text)?;
                Ok(LogEntry::CreateAccount {
                    ts: wire.ts,
                    api_key: wire.api_key,
                    api_secret: wire.api_secret,
                })
            }
            Err(error) => Err(error.into()),
        }
    }
}
