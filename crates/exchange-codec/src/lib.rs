//! JSON codecs for the exchange's edges: commands in, events out, and the
//! final state of a replay.
//!
//! The wire format is JSON Lines, one object per line, described in
//! `docs/protocol.md`. The codec is strict on purpose:
//!
//! - prices, quantities and amounts are JSON *strings* parsed exactly with
//!   [`Dec::parse`](exchange_types::Dec::parse); a JSON number there is an
//!   error, because two parsers may round it differently;
//! - a field the command does not know is an error, so a typo such as
//!   `"pirce"` is caught instead of silently placing an order without a
//!   price;
//! - every error names the field and the problem ([`CodecError`]).
//!
//! The codec only checks the *shape* of a command. Whether a value is
//! acceptable (a price on the tick, a positive quantity, a known symbol) is
//! the core's decision, reported as a `rejected` event with a reason, so
//! every replica decides it the same way.
//!
//! Events are written by hand in a fixed field order, so the same events
//! always give the same bytes.

pub mod binary;
mod decode;
mod encode;
mod encode_command;
#[cfg(test)]
mod event_strategies;
mod raw;
mod state;
#[cfg(test)]
mod strategies;

use exchange_types::limits::MAX_COMMAND_BYTES;
use thiserror::Error;

pub use decode::{decode_command, COMMAND_NAMES};
pub use encode::{encode_event, encode_event_into, push_units};
pub use encode_command::{encode_command, encode_command_into};
pub use state::{final_state, BalanceState, BookState, FinalState, InstrumentState};

/// Why a line is not a command. Each message names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CodecError {
    #[error("line is {len} bytes long; the limit is {MAX_COMMAND_BYTES}")]
    TooLong { len: usize },
    #[error("line is not valid UTF-8")]
    NotUtf8,
    #[error("not a JSON command: {0}")]
    Json(String),
    #[error("field `{0}` appears more than once")]
    DuplicateField(String),
    #[error("missing field `cmd` (the command's name)")]
    MissingCmd,
    #[error("field `cmd` must be a string, got {0}")]
    CmdNotString(&'static str),
    #[error(
        "unknown command {0:?} in field `cmd`; expected one of: {names}",
        names = COMMAND_NAMES.join(", ")
    )]
    UnknownCmd(String),
    #[error("{cmd}: unknown field `{field}`; allowed: {}", allowed.join(", "))]
    UnknownField {
        cmd: &'static str,
        field: String,
        allowed: &'static [&'static str],
    },
    #[error("{cmd}: missing field `{field}`")]
    MissingField {
        cmd: &'static str,
        field: &'static str,
    },
    #[error("{cmd}: field `{field}` {problem}")]
    InvalidField {
        cmd: &'static str,
        field: &'static str,
        problem: String,
    },
    #[error("{cmd}: give exactly one of `client_order_id` and `order_id`")]
    OrderRef { cmd: &'static str },
}

impl CodecError {
    /// The field the error is about, if it is about one.
    pub fn field(&self) -> Option<&str> {
        match self {
            CodecError::TooLong { .. } | CodecError::NotUtf8 | CodecError::Json(_) => None,
            CodecError::DuplicateField(field) => Some(field),
            CodecError::MissingCmd | CodecError::CmdNotString(_) | CodecError::UnknownCmd(_) => {
                Some("cmd")
            }
            CodecError::UnknownField { field, .. } => Some(field),
            CodecError::MissingField { field, .. } | CodecError::InvalidField { field, .. } => {
                Some(field)
            }
            CodecError::OrderRef { .. } => Some("order_id"),
        }
    }
}
