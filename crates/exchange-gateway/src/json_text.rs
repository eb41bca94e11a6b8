//! JSON written by hand into a byte buffer, byte for byte as `serde_json`
//! writes the same values compactly: the order answers of the WebSocket
//! and of REST are written this way, which skips serde's map machinery
//! (a `flatten`ed struct is written as a map, one key at a time) and
//! `Dec::text`'s digit-at-a-time formatting.

/// Writes `value` in decimal.
pub fn push_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// A list: `[`, each item written by `push_item`, commas between, `]`.
pub fn push_array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut push_item: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_item(out, item);
    }
    out.push(b']');
}

/// A list of ids: `[1,2,3]`.
pub fn push_ids(out: &mut Vec<u8>, ids: &[u64]) {
    push_array(out, ids, |out, id| push_u64(out, *id));
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
/// the shortest exact decimal (the event encoder's writer).
pub fn push_units(out: &mut Vec<u8>, units: u64) {
    exchange_codec::push_units(out, false, units);
}

/// Signed units (a fee; negative is a rebate), as [`push_units`].
pub fn push_signed_units(out: &mut Vec<u8>, units: i64) {
    exchange_codec::push_units(out, units < 0, units.unsigned_abs());
}

/// An amount of units that may pass `u64::MAX` (a sum of volumes), as
/// the market-data writer spells it: [`push_units`]'s text, wider.
pub fn push_wide_units(out: &mut Vec<u8>, units: u128) {
    if let Ok(narrow) = u64::try_from(units) {
        return push_units(out, narrow);
    }
    let per_whole = u128::from(exchange_types::UNITS_PER_WHOLE);
    let mut digits = itoa::Buffer::new();
    out.push(b'"');
    out.extend_from_slice(digits.format(units / per_whole).as_bytes());
    let fraction = units % per_whole;
    if fraction != 0 {
        // One whole added puts the fraction's leading zeros in place
        // behind a `1` that is dropped.
        let padded = digits.format(per_whole + fraction).as_bytes();
        let end = padded.iter().rposition(|&b| b != b'0').map_or(1, |i| i + 1);
        out.push(b'.');
        out.extend_from_slice(&padded[1..end]);
    }
    out.push(b'"');
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn a_string_is_written_as_serde_writes_it(value in "(\\PC|[\\x00-\\x1f\"\\\\]){0,40}") {
            let expected = serde_json::to_string(&value).expect("serialises");
            let mut out = Vec::new();
            push_str(&mut out, &value);
            prop_assert_eq!(String::from_utf8(out).expect("UTF-8"), expected);
        }
    }
}
