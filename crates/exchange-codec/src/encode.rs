//! Events to JSON, one object per event, written by hand so that the field
//! order is fixed and the same events always give the same bytes.
//!
//! Every object starts with `seq`, `ts` and `event`; the event's fields
//! follow in the order of its payload struct's definition (the one an
//! [`EventKind`] variant holds). Identifiers, counts and codes are JSON
//! integers; prices, quantities, amounts and fees are exact decimal
//! strings (the shortest form, as `format_units` writes).

use exchange_types::event::{
    self, Accepted, AcceptedExt, AccountStatus, Auction, Balance, Book, Canceled, Expired,
    Indicative, InstrumentAdded, InstrumentRules, MassCanceled, Mmp, PhaseChanged, ReferencePrice,
    Rejected, Replaced, RiskLimits, Status, SubAccountLinked, Trade, Triggered,
};
use exchange_types::{
    AccountId, ClientOrderId, Event, EventKind, MmpState, OrderId, Symbol, TrailingUnits,
    AMOUNT_SCALE, UNITS_PER_WHOLE,
};

/// The `,"name":` that starts a member after the first.
macro_rules! key {
    ($name:literal) => {
        concat!(",\"", $name, "\":")
    };
}

/// One event as a JSON object, without a trailing newline.
pub fn encode_event(event: &Event) -> String {
    let mut out = Vec::with_capacity(256);
    encode_event_into(event, &mut out);
    // Every byte written comes from a `&str` or is ASCII, so this is UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends one event as a JSON object, without a trailing newline, to
/// `out` as UTF-8 bytes. Reusing one buffer saves an allocation per event,
/// and bytes are what a writer takes, so nothing is checked twice.
pub fn encode_event_into(event: &Event, out: &mut Vec<u8>) {
    let mut o = Obj { out };
    o.out.extend_from_slice(b"{\"seq\":");
    push_u64(o.out, event.seq);
    o.uint(key!("ts"), event.ts);
    o.str(key!("event"), event.kind.name());
    event.kind.encode_fields(&mut o);
    o.out.push(b'}');
}

/// A payload that writes its own members after `seq`, `ts` and `event`, in
/// the order of its struct's fields. The impls are `#[inline]` to keep
/// `encode_event_into` one function with one match, as it was when written
/// out in full: it runs for every event the server sends.
trait EncodeFields {
    fn encode_fields(&self, o: &mut Obj<'_>);
}

impl EncodeFields for EventKind {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        match self {
            EventKind::InstrumentAdded(e) => e.encode_fields(o),
            EventKind::Status(e) => e.encode_fields(o),
            EventKind::Accepted(e) => e.encode_fields(o),
            EventKind::Rejected(e) => e.encode_fields(o),
            EventKind::Trade(e) => e.encode_fields(o),
            EventKind::Canceled(e) => e.encode_fields(o),
            EventKind::Replaced(e) => e.encode_fields(o),
            EventKind::Expired(e) => e.encode_fields(o),
            EventKind::Balance(e) => e.encode_fields(o),
            EventKind::Book(e) => e.encode_fields(o),
            EventKind::MassCanceled(e) => e.encode_fields(o),
            EventKind::RiskLimits(e) => e.encode_fields(o),
            EventKind::AccountStatus(e) => e.encode_fields(o),
            EventKind::Mmp(e) => e.encode_fields(o),
            EventKind::SubAccountLinked(e) => e.encode_fields(o),
            EventKind::Phase(e) => e.encode_fields(o),
            EventKind::Indicative(e) => e.encode_fields(o),
            EventKind::Auction(e) => e.encode_fields(o),
            EventKind::Triggered(e) => e.encode_fields(o),
            EventKind::InstrumentRules(e) => e.encode_fields(o),
            EventKind::ReferencePrice(e) => e.encode_fields(o),
            EventKind::Error(e) => e.encode_fields(o),
        }
    }
}

impl EncodeFields for InstrumentAdded {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("base"), self.base.as_str());
        o.str(key!("quote"), self.quote.as_str());
        if let Some(price) = self.reference_price {
            o.units(key!("reference_price"), price);
        }
    }
}

impl EncodeFields for Status {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("status"), self.status.as_str());
    }
}

impl EncodeFields for Accepted {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        o.str(key!("client_order_id"), self.client_order_id.as_str());
        o.uint(key!("order_id"), self.order_id);
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("side"), self.side.as_str());
        o.str(key!("type"), self.order_type.as_str());
        if let Some(price) = self.price {
            o.units(key!("price"), price);
        }
        o.units(key!("qty"), self.qty);
        o.str(key!("tif"), self.tif.as_str());
        o.bool(key!("post_only"), self.post_only);
        o.str(key!("stp"), self.stp.as_str());
        if let Some(ext) = &self.ext {
            ext.encode_fields(o);
        }
    }
}

impl EncodeFields for AcceptedExt {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        if let Some(stop_price) = self.stop_price {
            o.units(key!("stop_price"), stop_price);
        }
        match self.trailing {
            Some(TrailingUnits::Amount(amount)) => o.units(key!("trailing_amount"), amount),
            Some(TrailingUnits::Bps(bps)) => o.uint(key!("trailing_bps"), u64::from(bps)),
            None => {}
        }
        if let Some(display_qty) = self.display_qty {
            o.units(key!("display_qty"), display_qty);
        }
        if let Some(funds) = self.funds {
            o.units(key!("funds"), funds);
        }
        if let Some(expire_ts) = self.expire_ts {
            o.uint(key!("expire_ts"), expire_ts);
        }
        if let Some(other) = &self.oco_with {
            o.str(key!("oco_with"), other.as_str());
        }
        if self.hidden {
            o.bool(key!("hidden"), true);
        }
        if let Some(min_qty) = self.min_qty {
            o.units(key!("min_qty"), min_qty);
        }
    }
}

impl EncodeFields for Rejected {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("command"), self.command);
        if let Some(account) = self.account {
            o.uint(key!("account"), account);
        }
        if let Some(coid) = &self.client_order_id {
            o.str(key!("client_order_id"), coid.as_str());
        }
        if let Some(order_id) = self.order_id {
            o.uint(key!("order_id"), order_id);
        }
        if let Some(symbol) = &self.symbol {
            o.str(key!("symbol"), symbol.as_str());
        }
        o.str(key!("reason"), self.reason.as_str());
        o.uint(key!("code"), u64::from(self.reason.code()));
        o.str(key!("message"), self.reason.message());
    }
}

impl EncodeFields for Trade {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("trade_id"), self.trade_id);
        o.str(key!("symbol"), self.symbol.as_str());
        o.units(key!("price"), self.price);
        o.units(key!("qty"), self.qty);
        o.uint(key!("maker_order_id"), self.maker_order_id);
        o.uint(key!("taker_order_id"), self.taker_order_id);
        o.uint(key!("maker_account"), self.maker_account);
        o.uint(key!("taker_account"), self.taker_account);
        o.str(key!("aggressor_side"), self.aggressor_side.as_str());
        o.signed_units(key!("maker_fee"), self.maker_fee);
        o.signed_units(key!("taker_fee"), self.taker_fee);
        o.units(key!("maker_leaves_qty"), self.maker_leaves_qty);
        o.units(key!("taker_leaves_qty"), self.taker_leaves_qty);
        if self.midpoint {
            o.bool(key!("midpoint"), true);
        }
    }
}

impl EncodeFields for Canceled {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.order(
            self.account,
            self.order_id,
            &self.client_order_id,
            &self.symbol,
        );
        o.str(key!("reason"), self.reason.as_str());
        o.units(key!("canceled_qty"), self.canceled_qty);
        o.units(key!("filled_qty"), self.filled_qty);
        o.units(key!("leaves_qty"), self.leaves_qty);
    }
}

impl EncodeFields for Replaced {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        o.uint(key!("order_id"), self.order_id);
        o.str(
            key!("old_client_order_id"),
            self.old_client_order_id.as_str(),
        );
        o.str(key!("client_order_id"), self.client_order_id.as_str());
        o.str(key!("symbol"), self.symbol.as_str());
        o.units(key!("price"), self.price);
        o.units(key!("qty"), self.qty);
        o.units(key!("leaves_qty"), self.leaves_qty);
        if let Some(stop_price) = self.stop_price {
            o.units(key!("stop_price"), stop_price.get());
        }
    }
}

impl EncodeFields for Expired {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.order(
            self.account,
            self.order_id,
            &self.client_order_id,
            &self.symbol,
        );
        o.units(key!("expired_qty"), self.expired_qty);
        o.units(key!("filled_qty"), self.filled_qty);
    }
}

impl EncodeFields for Balance {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        o.str(key!("asset"), self.asset.as_str());
        o.units(key!("total"), self.total);
        o.units(key!("available"), self.available);
    }
}

impl EncodeFields for Book {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("side"), self.side.as_str());
        o.units(key!("price"), self.price);
        o.units(key!("qty"), self.qty);
    }
}

impl EncodeFields for MassCanceled {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        if let Some(symbol) = &self.symbol {
            o.str(key!("symbol"), symbol.as_str());
        }
        o.uint(key!("canceled"), u64::from(self.canceled));
    }
}

impl EncodeFields for RiskLimits {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        if let Some(qty) = self.max_order_qty {
            o.units(key!("max_order_qty"), qty);
        }
        if let Some(notional) = self.max_order_notional {
            o.units(key!("max_order_notional"), notional);
        }
        if let Some(n) = self.max_open_orders {
            o.uint(key!("max_open_orders"), u64::from(n));
        }
        if let Some(bps) = self.price_band_bps {
            o.uint(key!("price_band_bps"), u64::from(bps));
        }
    }
}

impl EncodeFields for AccountStatus {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        let status = if self.suspended {
            "suspended"
        } else {
            "active"
        };
        o.str(key!("status"), status);
        o.uint(key!("canceled"), u64::from(self.canceled));
    }
}

impl EncodeFields for Mmp {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("account"), self.account);
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("state"), self.state.as_str());
        self.state.encode_fields(o);
    }
}

/// The members of the state's variant; `state` itself is written by
/// [`Mmp`], before them.
impl EncodeFields for MmpState {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        match self {
            MmpState::Set {
                window_ns,
                max_qty,
                max_count,
            } => {
                o.uint(key!("window_ns"), *window_ns);
                if let Some(qty) = max_qty {
                    o.units(key!("max_qty"), *qty);
                }
                if let Some(n) = max_count {
                    o.uint(key!("max_count"), u64::from(*n));
                }
            }
            MmpState::Tripped { filled_qty, fills } => {
                o.units(key!("filled_qty"), *filled_qty);
                o.uint(key!("fills"), u64::from(*fills));
            }
            MmpState::Removed | MmpState::Reset => {}
        }
    }
}

impl EncodeFields for SubAccountLinked {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("owner"), self.owner);
        o.uint(key!("sub"), self.sub);
    }
}

impl EncodeFields for PhaseChanged {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("phase"), self.phase.as_str());
    }
}

impl EncodeFields for ReferencePrice {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.units(key!("price"), self.price);
    }
}

impl EncodeFields for Indicative {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        if let Some(price) = self.price {
            o.units(key!("price"), price);
        }
        o.units(key!("volume"), self.volume);
        if let Some(side) = self.imbalance_side {
            o.str(key!("imbalance_side"), side.as_str());
        }
        o.units(key!("imbalance_qty"), self.imbalance_qty);
    }
}

impl EncodeFields for Auction {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("kind"), self.kind.as_str());
        o.units(key!("price"), self.price);
        o.units(key!("volume"), self.volume);
    }
}

impl EncodeFields for Triggered {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.order(
            self.account,
            self.order_id,
            &self.client_order_id,
            &self.symbol,
        );
        o.units(key!("stop_price"), self.stop_price);
        o.units(key!("last_price"), self.last_price);
        o.units(key!("qty"), self.qty);
    }
}

impl EncodeFields for InstrumentRules {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.str(key!("symbol"), self.symbol.as_str());
        o.str(key!("base"), self.base.as_str());
        o.str(key!("quote"), self.quote.as_str());
        o.units(key!("tick_size"), self.tick_size);
        o.units(key!("lot_size"), self.lot_size);
        o.units(key!("min_qty"), self.min_qty);
        o.units(key!("max_qty"), self.max_qty);
        o.units(key!("min_notional"), self.min_notional);
        o.int(key!("maker_fee_bps"), i64::from(self.maker_fee_bps));
        o.int(key!("taker_fee_bps"), i64::from(self.taker_fee_bps));
        o.uint(key!("collar_bps"), u64::from(self.collar_bps));
        // Written only for a listing with bands, so the events of every
        // other listing keep the bytes they had before bands existed.
        if self.volatility_auction_ns != 0 {
            o.uint(key!("static_band_bps"), u64::from(self.static_band_bps));
            o.uint(key!("dynamic_band_bps"), u64::from(self.dynamic_band_bps));
            o.uint(key!("volatility_auction_ns"), self.volatility_auction_ns);
        }
        o.str(key!("status"), self.status.as_str());
    }
}

impl EncodeFields for event::Error {
    #[inline]
    fn encode_fields(&self, o: &mut Obj<'_>) {
        o.uint(key!("line"), self.line);
        o.str(key!("message"), &self.message);
    }
}

/// The members after the first of one JSON object being written.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
}

impl Obj<'_> {
    /// The fields that name an order, in the order every order event
    /// writes them.
    #[inline]
    fn order(
        &mut self,
        account: AccountId,
        order_id: OrderId,
        client_order_id: &ClientOrderId,
        symbol: &Symbol,
    ) {
        self.uint(key!("account"), account);
        self.uint(key!("order_id"), order_id);
        self.str(key!("client_order_id"), client_order_id.as_str());
        self.str(key!("symbol"), symbol.as_str());
    }

    /// `key` is a member's `,"name":` prefix, built by `key!`.
    #[inline]
    fn key(&mut self, key: &str) {
        self.out.extend_from_slice(key.as_bytes());
    }

    fn uint(&mut self, key: &str, value: u64) {
        self.key(key);
        push_u64(self.out, value);
    }

    fn int(&mut self, key: &str, value: i64) {
        self.key(key);
        if value < 0 {
            self.out.push(b'-');
        }
        push_u64(self.out, value.unsigned_abs());
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        push_json_string(self.out, value);
    }

    fn units(&mut self, key: &str, units: u64) {
        self.key(key);
        push_units(self.out, false, units);
    }

    fn signed_units(&mut self, key: &str, units: i64) {
        self.key(key);
        push_units(self.out, units < 0, units.unsigned_abs());
    }
}

/// Writes `value` in decimal, as `Display` does, without the formatting
/// machinery that dominated the encoder's profile.
pub(crate) fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Writes an amount of units as a JSON string exactly as `format_units`
/// (or `format_signed_units`) does: the shortest exact decimal. Built
/// right to left in one buffer with 64-bit arithmetic, because the 128-bit
/// division and the many small copies of the shared formatter were most
/// of the cost of writing an event.
pub fn push_units(out: &mut Vec<u8>, negative: bool, units: u64) {
    // Quote, sign, 20 integer digits, point, 8 decimals, quote.
    let mut buf = [b'0'; 32];
    let mut pos = buf.len() - 1;
    buf[pos] = b'"';
    let mut fraction = units % UNITS_PER_WHOLE;
    if fraction != 0 {
        let mut width = AMOUNT_SCALE as usize;
        while fraction.is_multiple_of(10) {
            fraction /= 10;
            width -= 1;
        }
        // The buffer starts as '0's, so the fraction's leading zeros are
        // already in place once its digits are written.
        write_digits(&mut buf, pos, fraction);
        pos -= width + 1;
        buf[pos] = b'.';
    }
    pos = write_digits(&mut buf, pos, units / UNITS_PER_WHOLE);
    if negative {
        pos -= 1;
        buf[pos] = b'-';
    }
    pos -= 1;
    buf[pos] = b'"';
    out.extend_from_slice(&buf[pos..]);
}

/// Writes `value`'s decimal digits so that they end just before `end`,
/// two at a time from a table; returns where they start.
fn write_digits(buf: &mut [u8; 32], end: usize, mut value: u64) -> usize {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut pos = end;
    while value >= 10 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value > 0 || pos == end {
        pos -= 1;
        buf[pos] = b'0' + value as u8;
    }
    pos
}

/// Writes `value` as a JSON string. Identifiers are printable ASCII but
/// may hold `"` or `\`, and error messages may quote anything.
pub(crate) fn push_json_string(out: &mut Vec<u8>, value: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = value.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
