//! The binary encoding of events: a 24-byte header (the command header
//! and the event's `seq`), a fixed block per template, and var-data after
//! it for the one event that carries free text. The module doc of
//! [`super`] lays out the header; each kind's fields are listed where they
//! are written (here, `event_orders.rs` and `event_market.rs`).

use exchange_types::event::{self, AuctionKind};
use exchange_types::limits::MAX_COMMAND_BYTES;
use exchange_types::{CancelReason, Event, EventKind, Side, TradingStatus};

use super::event_orders::{read_accepted, write_accepted};
use super::wire::{Reader, Writer};
use super::{read_header, BinaryError, FLAG_EXT, MARKER, SCHEMA_VERSION};

/// Every event template, numbered from [`FIRST_EVENT_TEMPLATE`] in this
/// order, by the event's wire name (the `event` member of its JSON line).
pub const EVENT_TEMPLATES: &[&str] = &[
    "instrument_added",
    "status",
    "accepted",
    "rejected",
    "trade",
    "canceled",
    "replaced",
    "expired",
    "balance",
    "book",
    "mass_canceled",
    "risk_limits",
    "account_status",
    "mmp",
    "sub_account_linked",
    "phase",
    "indicative",
    "auction",
    "triggered",
    "instrument_rules",
    "error",
    "reference_price",
];

/// The first event template. Commands are numbered from 1, events from
/// here, so one header read tells the two apart and a command reader given
/// an event (or the reverse) refuses it by its template.
pub const FIRST_EVENT_TEMPLATE: u16 = 101;

/// The header before each event's block: the command header and `seq`.
pub const EVENT_HEADER_BYTES: usize = 24;

/// The longest text an event carries (an error's message). A message
/// quotes at most a command line and a list of names, which is well
/// within twice the longest line; a longer one is cut to this.
pub const MAX_TEXT_BYTES: usize = 2 * MAX_COMMAND_BYTES;

// Var-data lengths are `u16`.
const _: () = assert!(MAX_TEXT_BYTES <= u16::MAX as usize);

const ACCEPTED: u16 = 103;

pub(super) const CANCEL_REASONS: &[CancelReason] = &[
    CancelReason::Requested,
    CancelReason::MassCancel,
    CancelReason::SelfTrade,
    CancelReason::AccountSuspended,
    CancelReason::Mmp,
    CancelReason::OneCancelsOther,
    CancelReason::RulesChanged,
    CancelReason::Delisted,
];
pub(super) const STATUSES: &[TradingStatus] = &[
    TradingStatus::Trading,
    TradingStatus::Halted,
    TradingStatus::Delisted,
];
pub(super) const AUCTION_KINDS: &[AuctionKind] = &[
    AuctionKind::Open,
    AuctionKind::Close,
    AuctionKind::Volatility,
    AuctionKind::Reopen,
];
/// An indicative's imbalance side: code 0 when nothing is left over.
pub(super) const IMBALANCE_SIDES: &[Option<Side>] = &[None, Some(Side::Buy), Some(Side::Sell)];

/// A payload of one event kind: its fixed block, front to back.
pub(super) trait Fields: Sized {
    fn write(&self, w: &mut Writer<'_>);
    fn read(r: &mut Reader<'_>) -> Result<Self, BinaryError>;
}

/// Whether `template` numbers an event (as opposed to a command).
pub(super) fn is_event_template(template: u16) -> bool {
    usize::from(template.wrapping_sub(FIRST_EVENT_TEMPLATE)) < EVENT_TEMPLATES.len()
}

/// The event's template: its position in [`EVENT_TEMPLATES`], from
/// [`FIRST_EVENT_TEMPLATE`].
fn template_of(kind: &EventKind) -> u16 {
    let index = match kind {
        EventKind::InstrumentAdded(_) => 0,
        EventKind::Status(_) => 1,
        EventKind::Accepted(_) => 2,
        EventKind::Rejected(_) => 3,
        EventKind::Trade(_) => 4,
        EventKind::Canceled(_) => 5,
        EventKind::Replaced(_) => 6,
        EventKind::Expired(_) => 7,
        EventKind::Balance(_) => 8,
        EventKind::Book(_) => 9,
        EventKind::MassCanceled(_) => 10,
        EventKind::RiskLimits(_) => 11,
        EventKind::AccountStatus(_) => 12,
        EventKind::Mmp(_) => 13,
        EventKind::SubAccountLinked(_) => 14,
        EventKind::Phase(_) => 15,
        EventKind::Indicative(_) => 16,
        EventKind::Auction(_) => 17,
        EventKind::Triggered(_) => 18,
        EventKind::InstrumentRules(_) => 19,
        EventKind::Error(_) => 20,
        EventKind::ReferencePrice(_) => 21,
    };
    FIRST_EVENT_TEMPLATE + index
}

/// Appends one event as a binary message to `out`.
pub fn encode_event_into(event: &Event, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[MARKER, SCHEMA_VERSION]);
    out.extend_from_slice(&template_of(&event.kind).to_le_bytes());
    // Block length and flags are known once the block is written.
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&event.ts.to_le_bytes());
    out.extend_from_slice(&event.seq.to_le_bytes());
    let w = &mut Writer { out };
    let has_ext = write_block(&event.kind, w);
    let block = u16::try_from(w.out.len() - start - EVENT_HEADER_BYTES)
        .expect("an event's block is a few hundred bytes");
    if let EventKind::Error(error) = &event.kind {
        w.text(&error.message, MAX_TEXT_BYTES);
    }
    let flags = if has_ext { FLAG_EXT } else { 0 };
    out[start + 4..start + 6].copy_from_slice(&block.to_le_bytes());
    out[start + 6..start + 8].copy_from_slice(&flags.to_le_bytes());
}

/// One event as a binary message.
pub fn encode_event(event: &Event) -> Vec<u8> {
    let mut out = Vec::with_capacity(192);
    encode_event_into(event, &mut out);
    out
}

/// Reads one binary event message, all of `bytes`.
pub fn decode_event(bytes: &[u8]) -> Result<Event, BinaryError> {
    let header = read_header(bytes, EVENT_HEADER_BYTES)?;
    let (template, flags) = (header.template, header.flags);
    if !is_event_template(template) {
        return Err(BinaryError::UnknownTemplate(template));
    }
    if flags & !FLAG_EXT != 0 || (flags != 0 && template != ACCEPTED) {
        return Err(BinaryError::Flags(flags));
    }
    let mut seq = [0; 8];
    seq.copy_from_slice(&header.rest[..8]);
    let (seq, ts) = (u64::from_le_bytes(seq), header.ts);
    let (block, var) = header
        .body
        .split_at_checked(header.block_len)
        .ok_or(BinaryError::Truncated)?;
    let r = &mut Reader::new(block);
    let v = &mut Reader::new(var);
    let kind = read_template(template, flags == FLAG_EXT, r, v)?;
    if r.remaining() != 0 {
        return Err(BinaryError::BlockLength {
            expected: block.len() - r.remaining(),
            found: block.len(),
        });
    }
    match v.remaining() {
        0 => Ok(Event { seq, ts, kind }),
        extra => Err(BinaryError::Trailing(extra)),
    }
}

/// Writes the event's fixed block; true when an `accepted` wrote its
/// rarer part.
fn write_block(kind: &EventKind, w: &mut Writer<'_>) -> bool {
    match kind {
        EventKind::InstrumentAdded(e) => e.write(w),
        EventKind::Status(e) => e.write(w),
        EventKind::Accepted(e) => return write_accepted(w, e),
        EventKind::Rejected(e) => e.write(w),
        EventKind::Trade(e) => e.write(w),
        EventKind::Canceled(e) => e.write(w),
        EventKind::Replaced(e) => e.write(w),
        EventKind::Expired(e) => e.write(w),
        EventKind::Balance(e) => e.write(w),
        EventKind::Book(e) => e.write(w),
        EventKind::MassCanceled(e) => e.write(w),
        EventKind::RiskLimits(e) => e.write(w),
        EventKind::AccountStatus(e) => e.write(w),
        EventKind::Mmp(e) => e.write(w),
        EventKind::SubAccountLinked(e) => e.write(w),
        EventKind::Phase(e) => e.write(w),
        EventKind::Indicative(e) => e.write(w),
        EventKind::Auction(e) => e.write(w),
        EventKind::Triggered(e) => e.write(w),
        EventKind::InstrumentRules(e) => e.write(w),
        EventKind::ReferencePrice(e) => e.write(w),
        // The message is var-data, after the block.
        EventKind::Error(e) => w.u64(e.line),
    }
    false
}

/// Reads a block of `template` from `r` and its var-data from `v`; `ext`:
/// the header says an `accepted` carries its rarer part.
fn read_template(
    template: u16,
    ext: bool,
    r: &mut Reader<'_>,
    v: &mut Reader<'_>,
) -> Result<EventKind, BinaryError> {
    Ok(match template {
        101 => EventKind::InstrumentAdded(Fields::read(r)?),
        102 => EventKind::Status(Fields::read(r)?),
        ACCEPTED => EventKind::Accepted(read_accepted(r, ext)?),
        104 => EventKind::Rejected(Fields::read(r)?),
        105 => EventKind::Trade(Fields::read(r)?),
        106 => EventKind::Canceled(Fields::read(r)?),
        107 => EventKind::Replaced(Fields::read(r)?),
        108 => EventKind::Expired(Fields::read(r)?),
        109 => EventKind::Balance(Fields::read(r)?),
        110 => EventKind::Book(Fields::read(r)?),
        111 => EventKind::MassCanceled(Fields::read(r)?),
        112 => EventKind::RiskLimits(Fields::read(r)?),
        113 => EventKind::AccountStatus(Fields::read(r)?),
        114 => EventKind::Mmp(Fields::read(r)?),
        115 => EventKind::SubAccountLinked(Fields::read(r)?),
        116 => EventKind::Phase(Fields::read(r)?),
        117 => EventKind::Indicative(Fields::read(r)?),
        118 => EventKind::Auction(Fields::read(r)?),
        119 => EventKind::Triggered(Fields::read(r)?),
        120 => EventKind::InstrumentRules(Box::new(Fields::read(r)?)),
        121 => EventKind::Error(event::Error {
            line: r.u64()?,
            message: v.text("message", MAX_TEXT_BYTES)?,
        }),
        122 => EventKind::ReferencePrice(Fields::read(r)?),
        _ => return Err(BinaryError::UnknownTemplate(template)),
    })
}
