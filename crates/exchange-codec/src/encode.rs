//! Events to JSON, one object per event, written by hand so that the field
//! order is fixed and the same events always give the same bytes.
//!
//! Every object starts with `seq`, `ts` and `event`; the event's fields
//! follow in the order of its payload struct's definition (the one an
//! [`EventKind`] variant holds). Identifiers, counts and codes are JSON
//! integers; prices, quantities, amounts and fees are exact decimal
//! strings (the shortest form, as `format_units` writes).

use exchange_types::{Event, EventKind, MmpState, TrailingUnits, AMOUNT_SCALE, UNITS_PER_WHOLE};

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
    match &event.kind {
        EventKind::InstrumentAdded(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("base"), e.base.as_str());
            o.str(key!("quote"), e.quote.as_str());
        }
        EventKind::Status(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("status"), e.status.as_str());
        }
        EventKind::Accepted(e) => {
            o.uint(key!("account"), e.account);
            o.str(key!("client_order_id"), e.client_order_id.as_str());
            o.uint(key!("order_id"), e.order_id);
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("side"), e.side.as_str());
            o.str(key!("type"), e.order_type.as_str());
            if let Some(price) = e.price {
                o.units(key!("price"), price);
            }
            o.units(key!("qty"), e.qty);
            o.str(key!("tif"), e.tif.as_str());
            o.bool(key!("post_only"), e.post_only);
            o.str(key!("stp"), e.stp.as_str());
            if let Some(ext) = &e.ext {
                if let Some(stop_price) = ext.stop_price {
                    o.units(key!("stop_price"), stop_price);
                }
                match ext.trailing {
                    Some(TrailingUnits::Amount(amount)) => o.units(key!("trailing_amount"), amount),
                    Some(TrailingUnits::Bps(bps)) => o.uint(key!("trailing_bps"), u64::from(bps)),
                    None => {}
                }
                if let Some(display_qty) = ext.display_qty {
                    o.units(key!("display_qty"), display_qty);
                }
                if let Some(funds) = ext.funds {
                    o.units(key!("funds"), funds);
                }
                if let Some(expire_ts) = ext.expire_ts {
                    o.uint(key!("expire_ts"), expire_ts);
                }
                if let Some(other) = &ext.oco_with {
                    o.str(key!("oco_with"), other.as_str());
                }
            }
        }
        EventKind::Rejected(e) => {
            o.str(key!("command"), e.command);
            if let Some(account) = e.account {
                o.uint(key!("account"), account);
            }
            if let Some(coid) = &e.client_order_id {
                o.str(key!("client_order_id"), coid.as_str());
            }
            if let Some(order_id) = e.order_id {
                o.uint(key!("order_id"), order_id);
            }
            if let Some(symbol) = &e.symbol {
                o.str(key!("symbol"), symbol.as_str());
            }
            o.str(key!("reason"), e.reason.as_str());
            o.uint(key!("code"), u64::from(e.reason.code()));
            o.str(key!("message"), e.reason.message());
        }
        EventKind::Trade(e) => {
            o.uint(key!("trade_id"), e.trade_id);
            o.str(key!("symbol"), e.symbol.as_str());
            o.units(key!("price"), e.price);
            o.units(key!("qty"), e.qty);
            o.uint(key!("maker_order_id"), e.maker_order_id);
            o.uint(key!("taker_order_id"), e.taker_order_id);
            o.uint(key!("maker_account"), e.maker_account);
            o.uint(key!("taker_account"), e.taker_account);
            o.str(key!("aggressor_side"), e.aggressor_side.as_str());
            o.signed_units(key!("maker_fee"), e.maker_fee);
            o.signed_units(key!("taker_fee"), e.taker_fee);
            o.units(key!("maker_leaves_qty"), e.maker_leaves_qty);
            o.units(key!("taker_leaves_qty"), e.taker_leaves_qty);
        }
        EventKind::Canceled(e) => {
            o.uint(key!("account"), e.account);
            o.uint(key!("order_id"), e.order_id);
            o.str(key!("client_order_id"), e.client_order_id.as_str());
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("reason"), e.reason.as_str());
            o.units(key!("canceled_qty"), e.canceled_qty);
            o.units(key!("filled_qty"), e.filled_qty);
            o.units(key!("leaves_qty"), e.leaves_qty);
        }
        EventKind::Replaced(e) => {
            o.uint(key!("account"), e.account);
            o.uint(key!("order_id"), e.order_id);
            o.str(key!("old_client_order_id"), e.old_client_order_id.as_str());
            o.str(key!("client_order_id"), e.client_order_id.as_str());
            o.str(key!("symbol"), e.symbol.as_str());
            o.units(key!("price"), e.price);
            o.units(key!("qty"), e.qty);
            o.units(key!("leaves_qty"), e.leaves_qty);
            if let Some(stop_price) = e.stop_price {
                o.units(key!("stop_price"), stop_price.get());
            }
        }
        EventKind::Expired(e) => {
            o.uint(key!("account"), e.account);
            o.uint(key!("order_id"), e.order_id);
            o.str(key!("client_order_id"), e.client_order_id.as_str());
            o.str(key!("symbol"), e.symbol.as_str());
            o.units(key!("expired_qty"), e.expired_qty);
            o.units(key!("filled_qty"), e.filled_qty);
        }
        EventKind::Balance(e) => {
            o.uint(key!("account"), e.account);
            o.str(key!("asset"), e.asset.as_str());
            o.units(key!("total"), e.total);
            o.units(key!("available"), e.available);
        }
        EventKind::Book(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("side"), e.side.as_str());
            o.units(key!("price"), e.price);
            o.units(key!("qty"), e.qty);
        }
        EventKind::MassCanceled(e) => {
            o.uint(key!("account"), e.account);
            if let Some(symbol) = &e.symbol {
                o.str(key!("symbol"), symbol.as_str());
            }
            o.uint(key!("canceled"), u64::from(e.canceled));
        }
        EventKind::RiskLimits(e) => {
            o.uint(key!("account"), e.account);
            if let Some(qty) = e.max_order_qty {
                o.units(key!("max_order_qty"), qty);
            }
            if let Some(notional) = e.max_order_notional {
                o.units(key!("max_order_notional"), notional);
            }
            if let Some(n) = e.max_open_orders {
                o.uint(key!("max_open_orders"), u64::from(n));
            }
            if let Some(bps) = e.price_band_bps {
                o.uint(key!("price_band_bps"), u64::from(bps));
            }
        }
        EventKind::AccountStatus(e) => {
            o.uint(key!("account"), e.account);
            let status = if e.suspended { "suspended" } else { "active" };
            o.str(key!("status"), status);
            o.uint(key!("canceled"), u64::from(e.canceled));
        }
        EventKind::Mmp(e) => {
            o.uint(key!("account"), e.account);
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("state"), e.state.as_str());
            match &e.state {
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
        EventKind::SubAccountLinked(e) => {
            o.uint(key!("owner"), e.owner);
            o.uint(key!("sub"), e.sub);
        }
        EventKind::Phase(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("phase"), e.phase.as_str());
        }
        EventKind::Indicative(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            if let Some(price) = e.price {
                o.units(key!("price"), price);
            }
            o.units(key!("volume"), e.volume);
            if let Some(side) = e.imbalance_side {
                o.str(key!("imbalance_side"), side.as_str());
            }
            o.units(key!("imbalance_qty"), e.imbalance_qty);
        }
        EventKind::Auction(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("kind"), e.kind.as_str());
            o.units(key!("price"), e.price);
            o.units(key!("volume"), e.volume);
        }
        EventKind::Triggered(e) => {
            o.uint(key!("account"), e.account);
            o.uint(key!("order_id"), e.order_id);
            o.str(key!("client_order_id"), e.client_order_id.as_str());
            o.str(key!("symbol"), e.symbol.as_str());
            o.units(key!("stop_price"), e.stop_price);
            o.units(key!("last_price"), e.last_price);
            o.units(key!("qty"), e.qty);
        }
        EventKind::InstrumentRules(e) => {
            o.str(key!("symbol"), e.symbol.as_str());
            o.str(key!("base"), e.base.as_str());
            o.str(key!("quote"), e.quote.as_str());
            o.units(key!("tick_size"), e.tick_size);
            o.units(key!("lot_size"), e.lot_size);
            o.units(key!("min_qty"), e.min_qty);
            o.units(key!("max_qty"), e.max_qty);
            o.units(key!("min_notional"), e.min_notional);
            o.int(key!("maker_fee_bps"), i64::from(e.maker_fee_bps));
            o.int(key!("taker_fee_bps"), i64::from(e.taker_fee_bps));
            o.uint(key!("collar_bps"), u64::from(e.collar_bps));
            // Written only for a listing with bands, so the events of every
            // other listing keep the bytes they had before bands existed.
            if e.volatility_auction_ns != 0 {
                o.uint(key!("static_band_bps"), u64::from(e.static_band_bps));
                o.uint(key!("dynamic_band_bps"), u64::from(e.dynamic_band_bps));
                o.uint(key!("volatility_auction_ns"), e.volatility_auction_ns);
            }
            o.str(key!("status"), e.status.as_str());
        }
        EventKind::Error(e) => {
            o.uint(key!("line"), e.line);
            o.str(key!("message"), &e.message);
        }
    }
    o.out.push(b'}');
}

/// The members after the first of one JSON object being written.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
}

impl Obj<'_> {
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
fn push_units(out: &mut Vec<u8>, negative: bool, units: u64) {
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
