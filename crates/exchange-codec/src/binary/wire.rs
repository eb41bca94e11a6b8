//! The field types of the binary encoding, each of one fixed width, so a
//! field's offset in its block depends only on the fields before it.
//!
//! | type | bytes | layout |
//! |---|---|---|
//! | `u8`, `u16`, `u32`, `u64`, `i32`, `i64` | 1, 2, 4, 8, 4, 8 | little-endian |
//! | optional integer | 1 + width | presence byte (0 or 1), then the value (0 if absent) |
//! | decimal | 10 | `u64` magnitude, `u8` scale, `u8` flags (see below) |
//! | identifier of at most `N` bytes | `N` | printable ASCII, NUL-padded; all NUL: absent |
//!
//! A decimal's scale has no trailing zeros (`1.50` is magnitude 15, scale
//! 1); its flags are bit 0, present, and bit 1, negative.
//!
//! Text of no fixed length (an event's message) is var-data, as in SBE:
//! it follows the fixed block, a `u16` byte length then UTF-8 bytes, and
//! each such field has a bound a reader holds it to.
//!
//! A reader never trusts a byte: every enum code, flag, scale and
//! identifier is checked, and a short block is an error, never a panic.

use exchange_types::ids::InlineStr;
use exchange_types::limits::MAX_DECIMAL_PLACES;
use exchange_types::Dec;

use super::BinaryError;

/// The width of an encoded decimal.
pub(crate) const DEC_BYTES: usize = 10;

const DEC_PRESENT: u8 = 1;
const DEC_NEGATIVE: u8 = 2;

/// Appends fields to a message.
pub(crate) struct Writer<'a> {
    pub(crate) out: &'a mut Vec<u8>,
}

impl Writer<'_> {
    pub(crate) fn u8(&mut self, value: u8) {
        self.out.push(value);
    }

    pub(crate) fn bool(&mut self, value: bool) {
        self.out.push(u8::from(value));
    }

    pub(crate) fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn i32(&mut self, value: i32) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn i64(&mut self, value: i64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn opt_u32(&mut self, value: Option<u32>) {
        self.bool(value.is_some());
        self.u32(value.unwrap_or(0));
    }

    pub(crate) fn opt_i32(&mut self, value: Option<i32>) {
        self.bool(value.is_some());
        self.i32(value.unwrap_or(0));
    }

    pub(crate) fn opt_u64(&mut self, value: Option<u64>) {
        self.bool(value.is_some());
        self.u64(value.unwrap_or(0));
    }

    pub(crate) fn dec(&mut self, value: Dec) {
        self.opt_dec(Some(value));
    }

    pub(crate) fn opt_dec(&mut self, value: Option<Dec>) {
        let Some(value) = value else {
            self.out.extend_from_slice(&[0; DEC_BYTES]);
            return;
        };
        // A JSON line writes a decimal without trailing zeros (`1.50` is
        // `1.5`, `0.0` is `0`); so does this, and a journal in either form
        // replays alike.
        let value = value.normalized();
        self.u64(value.magnitude());
        self.u8(value.scale());
        let negative = if value.is_negative() { DEC_NEGATIVE } else { 0 };
        self.u8(DEC_PRESENT | negative);
    }

    pub(crate) fn id<const N: usize>(&mut self, value: &InlineStr<N>) {
        let bytes = value.as_bytes();
        self.out.extend_from_slice(bytes);
        self.out.resize(self.out.len() + (N - bytes.len()), 0);
    }

    pub(crate) fn opt_id<const N: usize>(&mut self, value: Option<&InlineStr<N>>) {
        match value {
            Some(value) => self.id(value),
            None => self.out.resize(self.out.len() + N, 0),
        }
    }

    /// Var-data text: its byte length as a `u16`, then its bytes. Text
    /// longer than `max` (which must fit a `u16`) is cut to the last
    /// character boundary within it, so a reader holding the field to
    /// `max` reads every message written.
    pub(crate) fn text(&mut self, value: &str, max: usize) {
        let end = (0..=max.min(value.len()))
            .rev()
            .find(|&at| value.is_char_boundary(at))
            .unwrap_or(0);
        let kept = &value.as_bytes()[..end];
        self.u16(u16::try_from(kept.len()).unwrap_or(u16::MAX));
        self.out.extend_from_slice(kept);
    }
}

/// Reads fields from one message's block, front to back.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

fn invalid(field: &'static str, problem: &'static str) -> BinaryError {
    BinaryError::Field { field, problem }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// The bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take<const W: usize>(&mut self) -> Result<[u8; W], BinaryError> {
        let slice = self
            .bytes
            .get(self.at..self.at + W)
            .ok_or(BinaryError::Truncated)?;
        self.at += W;
        let mut out = [0; W];
        out.copy_from_slice(slice);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, BinaryError> {
        Ok(self.take::<1>()?[0])
    }

    /// The next byte, left unread.
    pub(crate) fn peek_u8(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, BinaryError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(invalid(field, "is neither 0 nor 1")),
        }
    }

    pub(crate) fn u16(&mut self) -> Result<u16, BinaryError> {
        Ok(u16::from_le_bytes(self.take()?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, BinaryError> {
        Ok(u32::from_le_bytes(self.take()?))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, BinaryError> {
        Ok(i32::from_le_bytes(self.take()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, BinaryError> {
        Ok(u64::from_le_bytes(self.take()?))
    }

    pub(crate) fn i64(&mut self) -> Result<i64, BinaryError> {
        Ok(i64::from_le_bytes(self.take()?))
    }

    /// Var-data text of at most `max` bytes of UTF-8.
    pub(crate) fn text(&mut self, field: &'static str, max: usize) -> Result<String, BinaryError> {
        let len = usize::from(self.u16()?);
        if len > max {
            return Err(BinaryError::TextTooLong { field, len, max });
        }
        let bytes = self
            .bytes
            .get(self.at..self.at + len)
            .ok_or(BinaryError::Truncated)?;
        self.at += len;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| invalid(field, "is not UTF-8"))
    }

    /// An optional value's presence byte and value; an absent value must be
    /// written as zero, so each message has exactly one encoding.
    fn present(
        &mut self,
        field: &'static str,
        is_zero: impl FnOnce(&mut Self) -> Result<bool, BinaryError>,
    ) -> Result<bool, BinaryError> {
        let present = self.bool(field)?;
        let zero = is_zero(self)?;
        if !present && !zero {
            return Err(invalid(field, "is absent but has a value"));
        }
        Ok(present)
    }

    pub(crate) fn opt_u32(&mut self, field: &'static str) -> Result<Option<u32>, BinaryError> {
        let mut value = 0;
        let present = self.present(field, |r| {
            value = r.u32()?;
            Ok(value == 0)
        })?;
        Ok(present.then_some(value))
    }

    pub(crate) fn opt_i32(&mut self, field: &'static str) -> Result<Option<i32>, BinaryError> {
        let mut value = 0;
        let present = self.present(field, |r| {
            value = r.i32()?;
            Ok(value == 0)
        })?;
        Ok(present.then_some(value))
    }

    pub(crate) fn opt_u64(&mut self, field: &'static str) -> Result<Option<u64>, BinaryError> {
        let mut value = 0;
        let present = self.present(field, |r| {
            value = r.u64()?;
            Ok(value == 0)
        })?;
        Ok(present.then_some(value))
    }

    pub(crate) fn dec(&mut self, field: &'static str) -> Result<Dec, BinaryError> {
        self.opt_dec(field)?
            .ok_or_else(|| invalid(field, "is required but absent"))
    }

    /// A decimal as `Dec::parse` could have read it: at most
    /// `MAX_DECIMAL_PLACES` places, and zero never negative.
    pub(crate) fn opt_dec(&mut self, field: &'static str) -> Result<Option<Dec>, BinaryError> {
        let magnitude = self.u64()?;
        let scale = self.u8()?;
        let flags = self.u8()?;
        if flags & DEC_PRESENT == 0 {
            if magnitude != 0 || scale != 0 || flags != 0 {
                return Err(invalid(field, "is absent but has a value"));
            }
            return Ok(None);
        }
        if flags & !(DEC_PRESENT | DEC_NEGATIVE) != 0 {
            return Err(invalid(field, "has unknown flag bits"));
        }
        if usize::from(scale) > MAX_DECIMAL_PLACES {
            return Err(invalid(field, "has too many decimal places"));
        }
        let negative = flags & DEC_NEGATIVE != 0;
        if negative && magnitude == 0 {
            return Err(invalid(field, "is a negative zero"));
        }
        if scale > 0 && magnitude.is_multiple_of(10) {
            return Err(invalid(field, "has trailing zeros"));
        }
        Ok(Some(Dec::from_sign_parts(magnitude, scale, negative)))
    }

    pub(crate) fn opt_id<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<Option<InlineStr<N>>, BinaryError> {
        let raw = self.take::<N>()?;
        let len = raw.iter().position(|&b| b == 0).unwrap_or(N);
        if raw[len..].iter().any(|&b| b != 0) {
            return Err(invalid(field, "has bytes after its padding"));
        }
        if len == 0 {
            return Ok(None);
        }
        // `InlineStr::new` takes printable ASCII only, so the bytes are
        // checked before they are read as text.
        let text = std::str::from_utf8(&raw[..len])
            .map_err(|_| invalid(field, "is not printable ASCII"))?;
        InlineStr::new(text)
            .map(Some)
            .map_err(|_| invalid(field, "is not printable ASCII"))
    }

    pub(crate) fn id<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<InlineStr<N>, BinaryError> {
        self.opt_id(field)?
            .ok_or_else(|| invalid(field, "is required but empty"))
    }

    /// One code of a closed set, its index in `choices`.
    pub(crate) fn code<T: Copy>(
        &mut self,
        field: &'static str,
        choices: &[T],
    ) -> Result<T, BinaryError> {
        let code = usize::from(self.u8()?);
        choices
            .get(code)
            .copied()
            .ok_or_else(|| invalid(field, "is not a known code"))
    }
}
