//! The binary feed's messages: fixed layouts, big-endian integers, one
//! type byte first (docs/marketdata.md has the tables).
//!
//! Prices and quantities are unsigned 64-bit counts of 1e-8 units, times
//! nanoseconds since the Unix epoch. An instrument is named by its
//! `locate` (its listing order) once a directory message has given the
//! symbol. A book update is one level message per changed level, all with
//! the update's book sequence; the last carries [`LAST`], so a receiver
//! knows when the book is consistent again.

use exchange_types::{Phase, Side, Symbol};
use thiserror::Error;

use crate::projection::{Projection, StatusUpdate, Update};
use crate::status::{is_call, MarketStatus, StatusChange};
use crate::L2Book;

/// Flag: the last message of a book update (or of a book snapshot).
pub const LAST: u8 = 1;
/// Bytes of the space-padded symbol field.
pub const SYMBOL_LEN: usize = 16;

pub const DIRECTORY_LEN: usize = 19;
pub const STATUS_LEN: usize = 12;
pub const CLEAR_LEN: usize = 20;
pub const LEVEL_LEN: usize = 37;
pub const TRADE_LEN: usize = 44;
pub const PHASE_LEN: usize = 12;
pub const INDICATIVE_LEN: usize = 36;
pub const REFERENCE_LEN: usize = 19;

/// The `P` message's phase codes, in the order of a trading day.
pub const PHASE_CODES: [(u8, Phase); 9] = [
    (0, Phase::Closed),
    (1, Phase::PreOpen),
    (2, Phase::OpeningAuction),
    (3, Phase::Continuous),
    (4, Phase::ClosingCall),
    (5, Phase::ClosingAuction),
    (6, Phase::PostClose),
    (7, Phase::Halted),
    (8, Phase::VolatilityAuction),
];

pub fn phase_code(phase: Phase) -> u8 {
    PHASE_CODES
        .iter()
        .find(|(_, p)| *p == phase)
        .map_or(u8::MAX, |(code, _)| *code)
}

pub fn phase_of_code(code: u8) -> Option<Phase> {
    PHASE_CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, phase)| *phase)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `D`: the instrument numbered `locate` is `symbol`.
    Directory { locate: u16, symbol: Symbol },
    /// `H`: trading status.
    Status { locate: u16, ts: u64, halted: bool },
    /// `C`: the book is emptied and restarts at `book_seq`; level
    /// messages with the same sequence follow (`last` if the book is empty).
    Clear {
        locate: u16,
        book_seq: u64,
        ts: u64,
        last: bool,
    },
    /// `L`: the absolute quantity at one level (zero removes it).
    Level {
        locate: u16,
        book_seq: u64,
        ts: u64,
        side: Side,
        price: u64,
        qty: u64,
        last: bool,
    },
    /// `T`: a trade; `side` is the aggressor's.
    Trade {
        locate: u16,
        trade_seq: u64,
        ts: u64,
        trade_id: u64,
        price: u64,
        qty: u64,
        aggressor: Side,
    },
    /// `P`: the instrument entered `phase`.
    Phase { locate: u16, ts: u64, phase: Phase },
    /// `I`: the indicative uncrossing during a call; `price` 0 when
    /// nothing crosses (volume and imbalance are then zero too).
    Indicative {
        locate: u16,
        ts: u64,
        price: u64,
        volume: u64,
        imbalance_side: Option<Side>,
        imbalance_qty: u64,
    },
    /// `R`: the reference price (the collar's centre) is now `price`; 0
    /// when there is none, which the core never holds as a reference.
    Reference { locate: u16, ts: u64, price: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("empty message")]
    Empty,
    #[error("unknown message type {0:#04x}")]
    UnknownType(u8),
    #[error("message type {kind:?} needs {expected} bytes, got {got}")]
    Length {
        kind: char,
        expected: usize,
        got: usize,
    },
    #[error("invalid {0} field")]
    Field(&'static str),
}

#[inline]
fn side_byte(side: Side) -> u8 {
    match side {
        Side::Buy => b'B',
        Side::Sell => b'S',
    }
}

#[inline]
fn flag(last: bool) -> u8 {
    if last {
        LAST
    } else {
        0
    }
}

impl Message {
    /// Appends the encoded message.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Message::Directory { locate, symbol } => {
                out.push(b'D');
                out.extend_from_slice(&locate.to_be_bytes());
                let mut padded = [b' '; SYMBOL_LEN];
                padded[..symbol.as_bytes().len()].copy_from_slice(symbol.as_bytes());
                out.extend_from_slice(&padded);
            }
            Message::Status { locate, ts, halted } => {
                out.push(b'H');
                out.extend_from_slice(&locate.to_be_bytes());
                out.extend_from_slice(&ts.to_be_bytes());
                out.push(if halted { b'H' } else { b'T' });
            }
            Message::Clear {
                locate,
                book_seq,
                ts,
                last,
            } => {
                out.push(b'C');
                out.extend_from_slice(&locate.to_be_bytes());
                out.extend_from_slice(&book_seq.to_be_bytes());
                out.extend_from_slice(&ts.to_be_bytes());
                out.push(flag(last));
            }
            Message::Level { .. } => self.encode_level(out),
            Message::Trade { .. } => self.encode_trade(out),
            Message::Phase { locate, ts, phase } => {
                out.push(b'P');
                out.extend_from_slice(&locate.to_be_bytes());
                out.extend_from_slice(&ts.to_be_bytes());
                out.push(phase_code(phase));
            }
            Message::Indicative { .. } => self.encode_indicative(out),
            Message::Reference { locate, ts, price } => {
                out.push(b'R');
                out.extend_from_slice(&locate.to_be_bytes());
                out.extend_from_slice(&ts.to_be_bytes());
                out.extend_from_slice(&price.to_be_bytes());
            }
        }
    }

    #[inline]
    fn encode_level(&self, out: &mut Vec<u8>) {
        if let Message::Level {
            locate,
            book_seq,
            ts,
            side,
            price,
            qty,
            last,
        } = *self
        {
            out.push(b'L');
            out.extend_from_slice(&locate.to_be_bytes());
            out.extend_from_slice(&book_seq.to_be_bytes());
            out.extend_from_slice(&ts.to_be_bytes());
            out.push(side_byte(side));
            out.extend_from_slice(&price.to_be_bytes());
            out.extend_from_slice(&qty.to_be_bytes());
            out.push(flag(last));
        }
    }

    #[inline]
    fn encode_trade(&self, out: &mut Vec<u8>) {
        if let Message::Trade {
            locate,
            trade_seq,
            ts,
            trade_id,
            price,
            qty,
            aggressor,
        } = *self
        {
            out.push(b'T');
            out.extend_from_slice(&locate.to_be_bytes());
            out.extend_from_slice(&trade_seq.to_be_bytes());
            out.extend_from_slice(&ts.to_be_bytes());
            out.extend_from_slice(&trade_id.to_be_bytes());
            out.extend_from_slice(&price.to_be_bytes());
            out.extend_from_slice(&qty.to_be_bytes());
            out.push(side_byte(aggressor));
        }
    }

    #[inline]
    fn encode_indicative(&self, out: &mut Vec<u8>) {
        if let Message::Indicative {
            locate,
            ts,
            price,
            volume,
            imbalance_side,
            imbalance_qty,
        } = *self
        {
            out.push(b'I');
            out.extend_from_slice(&locate.to_be_bytes());
            out.extend_from_slice(&ts.to_be_bytes());
            out.extend_from_slice(&price.to_be_bytes());
            out.extend_from_slice(&volume.to_be_bytes());
            out.push(imbalance_side.map_or(b' ', side_byte));
            out.extend_from_slice(&imbalance_qty.to_be_bytes());
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(TRADE_LEN);
        self.encode(&mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Message, WireError> {
        let kind = checked_kind(bytes)?;
        let mut r = Reader { bytes, at: 1 };
        let locate = r.u16();
        Ok(match kind {
            b'D' => {
                let raw = r.take(SYMBOL_LEN);
                let text = std::str::from_utf8(raw).map_err(|_| WireError::Field("symbol"))?;
                let symbol = Symbol::new(text.trim_end_matches(' '))
                    .map_err(|_| WireError::Field("symbol"))?;
                Message::Directory { locate, symbol }
            }
            b'H' => {
                let ts = r.u64();
                let halted = match r.u8() {
                    b'H' => true,
                    b'T' => false,
                    _ => return Err(WireError::Field("status")),
                };
                Message::Status { locate, ts, halted }
            }
            b'C' => Message::Clear {
                locate,
                book_seq: r.u64(),
                ts: r.u64(),
                last: r.u8() & LAST != 0,
            },
            b'L' => Message::Level {
                locate,
                book_seq: r.u64(),
                ts: r.u64(),
                side: r.side()?,
                price: r.u64(),
                qty: r.u64(),
                last: r.u8() & LAST != 0,
            },
            b'P' => {
                let ts = r.u64();
                let phase = phase_of_code(r.u8()).ok_or(WireError::Field("phase"))?;
                Message::Phase { locate, ts, phase }
            }
            b'I' => decode_indicative(locate, &mut r)?,
            b'R' => Message::Reference {
                locate,
                ts: r.u64(),
                price: r.u64(),
            },
            _ => Message::Trade {
                locate,
                trade_seq: r.u64(),
                ts: r.u64(),
                trade_id: r.u64(),
                price: r.u64(),
                qty: r.u64(),
                aggressor: r.side()?,
            },
        })
    }
}

/// The message type of `bytes`, once its length is known to match that type.
#[inline]
fn checked_kind(bytes: &[u8]) -> Result<u8, WireError> {
    let kind = *bytes.first().ok_or(WireError::Empty)?;
    let expected = match kind {
        b'D' => DIRECTORY_LEN,
        b'H' => STATUS_LEN,
        b'C' => CLEAR_LEN,
        b'L' => LEVEL_LEN,
        b'T' => TRADE_LEN,
        b'P' => PHASE_LEN,
        b'I' => INDICATIVE_LEN,
        b'R' => REFERENCE_LEN,
        other => return Err(WireError::UnknownType(other)),
    };
    if bytes.len() != expected {
        return Err(WireError::Length {
            kind: char::from(kind),
            expected,
            got: bytes.len(),
        });
    }
    Ok(kind)
}

#[inline]
fn decode_indicative(locate: u16, r: &mut Reader<'_>) -> Result<Message, WireError> {
    Ok(Message::Indicative {
        locate,
        ts: r.u64(),
        price: r.u64(),
        volume: r.u64(),
        imbalance_side: match r.u8() {
            b' ' => None,
            b'B' => Some(Side::Buy),
            b'S' => Some(Side::Sell),
            _ => return Err(WireError::Field("imbalance side")),
        },
        imbalance_qty: r.u64(),
    })
}

/// Reads fields of a message whose length was checked beforehand.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let slice = &self.bytes[self.at..self.at + n];
        self.at += n;
        slice
    }

    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn u16(&mut self) -> u16 {
        let mut raw = [0u8; 2];
        raw.copy_from_slice(self.take(2));
        u16::from_be_bytes(raw)
    }

    fn u64(&mut self) -> u64 {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(self.take(8));
        u64::from_be_bytes(raw)
    }

    fn side(&mut self) -> Result<Side, WireError> {
        match self.u8() {
            b'B' => Ok(Side::Buy),
            b'S' => Ok(Side::Sell),
            _ => Err(WireError::Field("side")),
        }
    }
}

/// A whole book as `Clear` then one `Level` per level (bids, then asks).
pub fn book_messages(locate: u16, book_seq: u64, ts: u64, book: &L2Book, out: &mut Vec<Message>) {
    out.push(Message::Clear {
        locate,
        book_seq,
        ts,
        last: book.is_empty(),
    });
    let first = out.len();
    for side in [Side::Buy, Side::Sell] {
        for (price, qty) in book.levels(side) {
            out.push(Message::Level {
                locate,
                book_seq,
                ts,
                side,
                price,
                qty,
                last: false,
            });
        }
    }
    if out.len() > first {
        if let Some(Message::Level { last, .. }) = out.last_mut() {
            *last = true;
        }
    }
}

/// What the snapshot service sends of every instrument: `D`, `H`, `P`,
/// `I` during a call, `R`, then the book (`C` and its levels), all as of
/// the projection's last entry.
pub fn snapshot_messages(projection: &Projection, out: &mut Vec<Message>) {
    let ts = projection.now();
    for info in projection.instruments() {
        let locate = info.locate;
        out.push(Message::Directory {
            locate,
            symbol: info.symbol,
        });
        out.push(Message::Status {
            locate,
            ts,
            halted: info.halted,
        });
        out.push(Message::Phase {
            locate,
            ts,
            phase: info.status.phase,
        });
        if is_call(info.status.phase) {
            out.push(indicative_message(locate, ts, &info.status));
        }
        out.push(reference_message(locate, ts, info.status.reference_price));
        book_messages(locate, info.sequences.book, ts, info.book, out);
    }
}

/// The binary messages of one projection update (a snapshot update takes
/// the book from `projection`). Tickers and candles are not on the binary
/// feed.
pub fn messages_of(update: &Update, projection: &Projection, out: &mut Vec<Message>) {
    match update {
        Update::Listed { locate, symbol } => out.push(Message::Directory {
            locate: *locate,
            symbol: *symbol,
        }),
        Update::Status {
            locate, halted, ts, ..
        } => out.push(Message::Status {
            locate: *locate,
            ts: *ts,
            halted: *halted,
        }),
        Update::Book(update) => {
            let count = update.changes.len();
            for (i, change) in update.changes.iter().enumerate() {
                out.push(Message::Level {
                    locate: update.locate,
                    book_seq: update.sequence,
                    ts: update.ts,
                    side: change.side,
                    price: change.price,
                    qty: change.qty,
                    last: i + 1 == count,
                });
            }
        }
        Update::Snapshot {
            locate,
            sequence,
            ts,
            ..
        } => {
            if let Some(inst) = projection.instrument(*locate) {
                book_messages(*locate, *sequence, *ts, inst.book, out);
            }
        }
        Update::Trade(trade) => out.push(Message::Trade {
            locate: trade.locate,
            trade_seq: trade.sequence,
            ts: trade.ts,
            trade_id: trade.trade_id,
            price: trade.price,
            qty: trade.qty,
            aggressor: trade.aggressor,
        }),
        Update::MarketStatus(update) => status_messages(update, out),
        Update::Reference {
            locate, ts, price, ..
        } => out.push(reference_message(*locate, *ts, *price)),
        Update::Ticker(_) | Update::Candle { .. } => {}
    }
}

/// The messages of one status change.
fn status_messages(update: &StatusUpdate, out: &mut Vec<Message>) {
    let (locate, ts, status) = (update.locate, update.ts, &update.status);
    let phase = Message::Phase {
        locate,
        ts,
        phase: status.phase,
    };
    let reference = reference_message(locate, ts, status.reference_price);
    // A `P` into a phase that is not a call clears the indicative
    // price at the receiver, as the core clears it: no `I` needed.
    match update.change {
        StatusChange::Phase => out.push(phase),
        StatusChange::Indicative => out.push(indicative_message(locate, ts, status)),
        StatusChange::ReferencePrice => out.push(reference),
        StatusChange::Snapshot => {
            out.push(phase);
            if is_call(status.phase) {
                out.push(indicative_message(locate, ts, status));
            }
            out.push(reference);
        }
        // Its trades follow, each a `T` (and an `R` where one moves the
        // reference).
        StatusChange::Auction => {}
    }
}

/// The `R` message of a reference price (0 when there is none).
pub fn reference_message(locate: u16, ts: u64, reference: Option<u64>) -> Message {
    Message::Reference {
        locate,
        ts,
        price: reference.unwrap_or(0),
    }
}

/// The `I` message of a status (price 0 when nothing crosses).
pub fn indicative_message(locate: u16, ts: u64, status: &MarketStatus) -> Message {
    let i = status.indicative;
    Message::Indicative {
        locate,
        ts,
        price: i.map_or(0, |i| i.price),
        volume: i.map_or(0, |i| i.volume),
        imbalance_side: i.and_then(|i| i.imbalance_side),
        imbalance_qty: i.map_or(0, |i| i.imbalance_qty),
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
