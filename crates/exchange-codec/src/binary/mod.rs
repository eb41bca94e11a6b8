//! The binary encoding of commands and events: versioned, fixed-layout
//! and little-endian, in the spirit of Simple Binary Encoding (SBE). The
//! log stores commands this way, and it is what the venue's tiers speak to
//! the cluster; the cluster's events go back to the gateways (each its
//! sessions' events, market-data gateways the whole stream) the same way.
//!
//! A command is a 16-byte header and one block:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `u8` | marker `0xB5`: never the first byte of a JSON text or of UTF-8 |
//! | 1 | `u8` | schema version ([`SCHEMA_VERSION`]) |
//! | 2 | `u16` | template: which command ([`TEMPLATES`]) |
//! | 4 | `u16` | block length in bytes |
//! | 6 | `u16` | flags: bit 0, an order's rarer part follows its common one |
//! | 8 | `u64` | `ts`, nanoseconds since the Unix epoch |
//!
//! Each template's block is a fixed sequence of fixed-width fields (see
//! `wire.rs` for the field types), so every field sits at a fixed offset
//! and a reader needs no parsing, only bounds and range checks. As in SBE,
//! the block length lets a later schema version append fields a reader
//! can skip; this version refuses any version but its own, so a replica
//! that cannot read the log stops with a clear error instead of guessing.
//! One field was appended that way within this version: an
//! `add_instrument` block ends with its reference price rule's code only
//! when the listing names a rule other than
//! [`exchange_types::ReferencePriceRule::UNNAMED`], so older blocks read
//! as the rule they ran under; then with the code of the phase it is
//! listed in, when it names one (the rule's code is then always written,
//! so that each listing keeps one encoding).
//!
//! `decode_command(encode_command(c)) == c` for every command, exactly:
//! decimals keep their scale, identifiers their bytes. A message holds the
//! same command the JSON line of [`crate::encode_command`] holds, so
//! journals written in either form replay to the same events.
//!
//! An event is a 24-byte header, one block and, for the one event with
//! free text, var-data after the block:
//!
//! | offset | type | field |
//! |---|---|---|
//! | 0 | `u8` | marker `0xB5`, as for a command |
//! | 1 | `u8` | schema version ([`SCHEMA_VERSION`]) |
//! | 2 | `u16` | template: which event, from 101 ([`EVENT_TEMPLATES`]) |
//! | 4 | `u16` | block length in bytes, var-data not included |
//! | 6 | `u16` | flags: bit 0, an `accepted` order's rarer part follows its common one |
//! | 8 | `u64` | `ts` of the command that caused the event |
//! | 16 | `u64` | `seq`, the event's number in the stream |
//!
//! Event templates start at [`FIRST_EVENT_TEMPLATE`] (101) so that they
//! never collide with a command's: the marker alone says "binary", the
//! template says which of the two, and each reader refuses the other's
//! messages by their template. `ts` sits where a command has it. The
//! blocks, with the JSON line's field order and values in units:
//!
//! | template | event | block bytes |
//! |---|---|---|
//! | 101 | `instrument_added` | 40, or 48 with the listing's reference price |
//! | 102 | `status` | 17 |
//! | 103 | `accepted` | 90, or 175 with its rarer part (+1 hidden or a minimum, +8 a minimum) |
//! | 104 | `rejected` | 74 |
//! | 105 | `trade` | 106 |
//! | 106 | `canceled` | 93 |
//! | 107 | `replaced` | 136 |
//! | 108 | `expired` | 84 |
//! | 109 | `balance` | 36 |
//! | 110 | `book` | 33 |
//! | 111 | `mass_canceled` | 28 |
//! | 112 | `risk_limits` | 36 |
//! | 113 | `account_status` | 13 |
//! | 114 | `mmp` | 59 |
//! | 115 | `sub_account_linked` | 16 |
//! | 116 | `phase` | 17 |
//! | 117 | `indicative` | 42 |
//! | 118 | `auction` | 33 |
//! | 119 | `triggered` | 92 |
//! | 120 | `instrument_rules` | 109 |
//! | 121 | `error` | 8 (the line), then the message as var-data |
//! | 122 | `reference_price` | 24 |
//!
//! Var-data, as in SBE, is what has no fixed width: a `u16` byte length,
//! then that many bytes of UTF-8, at most [`MAX_TEXT_BYTES`].
//!
//! `decode_event(encode_event(e)) == e` for every event (an error message
//! longer than [`MAX_TEXT_BYTES`] is cut to it), and as for commands each
//! event has exactly one encoding.

mod command;
mod event;
mod event_market;
mod event_orders;
mod wire;

use exchange_types::Stamped;
use thiserror::Error;

pub use command::TEMPLATES;
pub use event::{
    decode_event, encode_event, encode_event_into, EVENT_HEADER_BYTES, EVENT_TEMPLATES,
    FIRST_EVENT_TEMPLATE, MAX_TEXT_BYTES,
};

/// The first byte of every binary message.
pub const MARKER: u8 = 0xB5;
/// The layout this build writes and reads.
pub const SCHEMA_VERSION: u8 = 1;
/// The header before each command's block.
pub const HEADER_BYTES: usize = 16;

/// Header flag: a `place` (or an `accepted`) carries its rarer fields
/// after the common ones.
const FLAG_EXT: u16 = 1;

/// Why bytes are not a binary command or event. Each names what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BinaryError {
    #[error("message is truncated")]
    Truncated,
    #[error("message starts with byte {0:#04x}, not the binary marker 0xb5")]
    NotBinary(u8),
    #[error("schema version {0} is not the version this build reads ({SCHEMA_VERSION})")]
    Version(u8),
    #[error("unknown template {0}")]
    UnknownTemplate(u16),
    #[error("unknown header flags {0:#06x}")]
    Flags(u16),
    #[error("block is {found} bytes long; its template's is {expected}")]
    BlockLength { expected: usize, found: usize },
    #[error("message has {0} bytes after its block")]
    Trailing(usize),
    #[error("field `{field}` {problem}")]
    Field {
        field: &'static str,
        problem: &'static str,
    },
    #[error("field `{field}` is {len} bytes long; the limit is {max}")]
    TextTooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
}

/// Whether `bytes` start as a binary message does (as opposed to a JSON
/// text, which starts with `{`).
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.first() == Some(&MARKER)
}

/// Appends one command as a binary message to `out`.
pub fn encode_command_into(stamped: &Stamped, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[MARKER, SCHEMA_VERSION]);
    out.extend_from_slice(&command::template_of(&stamped.command).to_le_bytes());
    // Block length and flags are known once the block is written.
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&stamped.ts.to_le_bytes());
    let has_ext = command::write_block(&stamped.command, out);
    let block = u16::try_from(out.len() - start - HEADER_BYTES)
        .expect("a command's block is a few hundred bytes");
    let flags = if has_ext { FLAG_EXT } else { 0 };
    out[start + 4..start + 6].copy_from_slice(&block.to_le_bytes());
    out[start + 6..start + 8].copy_from_slice(&flags.to_le_bytes());
}

/// One command as a binary message.
pub fn encode_command(stamped: &Stamped) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_command_into(stamped, &mut out);
    out
}

/// What every header starts with, its marker and version checked.
pub(crate) struct Header<'a> {
    pub(crate) template: u16,
    pub(crate) block_len: usize,
    pub(crate) flags: u16,
    pub(crate) ts: u64,
    /// The header's bytes after `ts` (an event's `seq`).
    pub(crate) rest: &'a [u8],
    /// Everything after the header.
    pub(crate) body: &'a [u8],
}

/// Reads a header of `len` bytes (at least [`HEADER_BYTES`]).
pub(crate) fn read_header(bytes: &[u8], len: usize) -> Result<Header<'_>, BinaryError> {
    let (header, body) = bytes
        .split_at_checked(len.max(HEADER_BYTES))
        .ok_or(BinaryError::Truncated)?;
    if header[0] != MARKER {
        return Err(BinaryError::NotBinary(header[0]));
    }
    if header[1] != SCHEMA_VERSION {
        return Err(BinaryError::Version(header[1]));
    }
    let mut ts = [0; 8];
    ts.copy_from_slice(&header[8..16]);
    Ok(Header {
        template: u16::from_le_bytes([header[2], header[3]]),
        block_len: usize::from(u16::from_le_bytes([header[4], header[5]])),
        flags: u16::from_le_bytes([header[6], header[7]]),
        ts: u64::from_le_bytes(ts),
        rest: &header[16..],
        body,
    })
}

/// Reads one binary message, all of `bytes`.
pub fn decode_command(bytes: &[u8]) -> Result<Stamped, BinaryError> {
    let header = read_header(bytes, HEADER_BYTES)?;
    // Before the lengths: an event's longer header would otherwise be
    // reported as bytes after a block.
    if event::is_event_template(header.template) {
        return Err(BinaryError::UnknownTemplate(header.template));
    }
    if header.flags & !FLAG_EXT != 0 {
        return Err(BinaryError::Flags(header.flags));
    }
    let body = header.body;
    if body.len() < header.block_len {
        return Err(BinaryError::Truncated);
    }
    if body.len() > header.block_len {
        return Err(BinaryError::Trailing(body.len() - header.block_len));
    }
    let command = command::read_block(header.template, header.flags & FLAG_EXT != 0, body)?;
    Ok(Stamped {
        ts: header.ts,
        command,
    })
}

#[cfg(test)]
mod event_tests;
#[cfg(test)]
mod hidden_tests;
#[cfg(test)]
mod order_types_tests;
#[cfg(test)]
mod tests;
