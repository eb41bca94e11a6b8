//! JSON written by hand into a byte buffer, byte for byte as `serde_json`
//! writes the same values compactly: the hot answers of the WebSocket are
//! written this way, which skips serde's map machinery (a `flatten`ed
//! struct is written as a map, one key at a time) and `Dec::text`'s
//! digit-at-a-time formatting.

use exchange_types::AMOUNT_SCALE;

/// Units in a whole (10^[`AMOUNT_SCALE`]).
const UNITS_PER_WHOLE: u64 = 10u64.pow(AMOUNT_SCALE);

/// Writes `value` in decimal.
pub fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

pub fn push_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

/// Writes `value` as a JSON string with `serde_json`'s escapes: the
/// short forms for `\b \t \n \f \r`, `\u00xx` (lowercase) for the other
/// control characters, and nothing else escaped.
pub fn push_str(out: &mut Vec<u8>, value: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = value.as_bytes();
    // Identifiers, the usual content, have nothing to escape: one copy.
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    out.push(b'"');
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
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

/// Writes an amount of units as a JSON string, as `Dec::text` writes it:
/// the shortest exact decimal. Two digits a step from a table, right to
/// left in one buffer.
pub fn push_units(out: &mut Vec<u8>, units: u64) {
    push_amount(out, false, units);
}

/// Signed units (a fee; negative is a rebate), as [`push_units`].
pub fn push_signed_units(out: &mut Vec<u8>, units: i64) {
    push_amount(out, units < 0, units.unsigned_abs());
}

fn push_amount(out: &mut Vec<u8>, negative: bool, units: u64) {
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
        // The buffer starts as '0's: the fraction's leading zeros are in
        // place once its digits are written.
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

/// Writes `value`'s digits so that they end just before `end`; returns
/// where they start. Zero is one digit.
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

/// An object written one member at a time: the commas and the braces.
pub struct Object<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Object<'o> {
    pub fn open(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { out, first: true }
    }

    /// An object whose opening brace and first members the caller wrote.
    pub fn continued(out: &'o mut Vec<u8>) -> Self {
        Object { out, first: false }
    }

    /// Starts the member `key` (plain ASCII, nothing to escape) and
    /// returns the buffer for its value.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    pub fn str(&mut self, key: &str, value: &str) {
        push_str(self.key(key), value);
    }

    pub fn u64(&mut self, key: &str, value: u64) {
        push_u64(self.key(key), value);
    }

    pub fn units(&mut self, key: &str, value: u64) {
        push_units(self.key(key), value);
    }

    /// A member only when `value` is there.
    pub fn some_units(&mut self, key: &str, value: Option<u64>) {
        if let Some(value) = value {
            self.units(key, value);
        }
    }

    pub fn some_u64(&mut self, key: &str, value: Option<u64>) {
        if let Some(value) = value {
            self.u64(key, value);
        }
    }

    pub fn close(self) {
        self.out.push(b'}');
    }
}
