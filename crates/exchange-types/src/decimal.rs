//! Exact decimal numbers as they arrive at the edge, and the fixed-point
//! amounts the core works in.
//!
//! Every asset amount inside the exchange is an integer count of
//! `10^-AMOUNT_SCALE` units. A [`Dec`] is what a client typed: it keeps the
//! sign and every digit so the core can say *why* a value is unacceptable
//! (negative, zero, too many decimals, off the tick) instead of rounding it.

use std::fmt;
use thiserror::Error;

use crate::limits::{MAX_DECIMAL_LEN, MAX_DECIMAL_PLACES};

/// Decimal places of every asset amount inside the core (1e-8, a satoshi).
pub const AMOUNT_SCALE: u32 = 8;
/// `10^AMOUNT_SCALE`.
pub const UNITS_PER_WHOLE: u64 = 100_000_000;
/// `10^k` for `k` in `0..=AMOUNT_SCALE`.
const POW10: [u64; AMOUNT_SCALE as usize + 1] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// A decimal number exactly as written: `(-1 if negative) * magnitude *
/// 10^-scale`.
///
/// Sixteen bytes, because every price and quantity of every command is
/// one and the core reads commands from memory at millions a second: the
/// magnitude is a `u64` (any amount of units there is fits, at any scale
/// up to [`AMOUNT_SCALE`]), so a number with more significant digits than
/// that is refused when it is read ([`DecParseError::TooManyDigits`]).
/// Zero is never negative, so equal values written alike compare equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dec {
    magnitude: u64,
    scale: u8,
    negative: bool,
}

/// Why a decimal string could not even be read as a number.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecParseError {
    #[error("empty number")]
    Empty,
    #[error("number longer than {MAX_DECIMAL_LEN} characters")]
    TooLong,
    #[error("invalid character {0:?} in number")]
    InvalidChar(char),
    #[error("number has no digits")]
    NoDigits,
    #[error("number has more than one decimal point")]
    MultiplePoints,
    #[error(
        "number starts with a zero that is not its only whole digit (write 55000, not 055000)"
    )]
    LeadingZero,
    #[error("number has no digit before its decimal point (write 0.5, not .5)")]
    NoWholeDigits,
    #[error("number has no digit after its decimal point (write 55000, not 55000.)")]
    NoFractionDigits,
    #[error("number has too many significant digits (at most 19)")]
    TooManyDigits,
    #[error("number has more than {MAX_DECIMAL_PLACES} decimal places")]
    TooManyPlaces,
}

/// Why a decimal is not a valid amount of units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum UnitsError {
    #[error("value is negative")]
    Negative,
    #[error("value is zero")]
    Zero,
    #[error("value has more than {AMOUNT_SCALE} decimals")]
    TooManyDecimals,
    #[error("value is too large")]
    Overflow,
}

impl Dec {
    /// `mantissa * 10^-scale`.
    pub const fn new(mantissa: i64, scale: u8) -> Self {
        Dec {
            magnitude: mantissa.unsigned_abs(),
            scale,
            negative: mantissa < 0,
        }
    }

    /// `magnitude * 10^-scale`, not negative.
    pub const fn from_parts(magnitude: u64, scale: u8) -> Self {
        Dec {
            magnitude,
            scale,
            negative: false,
        }
    }

    /// `-magnitude * 10^-scale` when `negative`, else `magnitude *
    /// 10^-scale`: a decimal from its parts as a binary message carries
    /// them. Zero is never negative.
    pub const fn from_sign_parts(magnitude: u64, scale: u8, negative: bool) -> Self {
        Dec {
            magnitude,
            scale,
            negative: negative && magnitude != 0,
        }
    }

    /// A whole amount of units as a decimal (scale [`AMOUNT_SCALE`]).
    pub const fn from_units(units: u64) -> Self {
        Dec {
            magnitude: units,
            scale: AMOUNT_SCALE as u8,
            negative: false,
        }
    }

    /// The digits without the point or the sign.
    pub const fn magnitude(self) -> u64 {
        self.magnitude
    }

    /// Digits after the point, as written.
    pub const fn scale(self) -> u8 {
        self.scale
    }

    /// Below zero (zero itself never is).
    pub const fn is_negative(self) -> bool {
        self.negative
    }

    /// Parses the exchange's one decimal grammar,
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`: no leading zero but a lone `0`
    /// before the point, a digit on each side of a point, no exponent, no
    /// `+`, no spaces. Anything looser invites two clients, or a client
    /// and a log reader, to mean different things by one string, and
    /// gives one value many spellings.
    ///
    /// Trailing zeros after the point are kept (they set the scale) as long
    /// as the magnitude can hold them; beyond that they are dropped, which
    /// does not change the value, so `1.000…0` with 30 zeros is still 1.
    pub fn parse(text: &str) -> Result<Dec, DecParseError> {
        let dec = Dec::parse_lenient(text)?;
        // `parse_lenient` has checked every byte is a digit or one point
        // after an optional sign, and that there is a digit.
        let body = text.strip_prefix('-').unwrap_or(text).as_bytes();
        match body {
            [b'.', ..] => Err(DecParseError::NoWholeDigits),
            [.., b'.'] => Err(DecParseError::NoFractionDigits),
            [b'0', b'0'..=b'9', ..] => Err(DecParseError::LeadingZero),
            _ => Ok(dec),
        }
    }

    /// Parses FIX's `float` (FIX 4.4, Volume 1, "Data types"): the
    /// exchange's grammar, plus leading zeros (`00023.23`), a point with no
    /// digit after it (`23.`) or none before it (`.5`, as `xs:decimal`,
    /// the type's XML mapping, allows). Counterparties' engines may write
    /// any of them, and each has one meaning; the value that reaches the
    /// log is written in the exchange's grammar.
    pub fn parse_fix_float(text: &str) -> Result<Dec, DecParseError> {
        Dec::parse_lenient(text)
    }

    /// `-?[0-9]*(\.[0-9]*)?` with at least one digit.
    fn parse_lenient(text: &str) -> Result<Dec, DecParseError> {
        if text.is_empty() {
            return Err(DecParseError::Empty);
        }
        if text.len() > MAX_DECIMAL_LEN {
            return Err(DecParseError::TooLong);
        }
        let (negative, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let mut magnitude: u64 = 0;
        let mut scale: u8 = 0;
        // Fractional zeros not yet folded into the magnitude: they only
        // matter if a non-zero digit follows.
        let mut pending_zeros: u8 = 0;
        let mut seen_point = false;
        let mut digits = 0usize;
        for (at, byte) in body.bytes().enumerate() {
            match byte {
                b'0' if seen_point => {
                    pending_zeros += 1;
                    digits += 1;
                }
                b'0'..=b'9' => {
                    for _ in 0..pending_zeros {
                        magnitude = magnitude
                            .checked_mul(10)
                            .ok_or(DecParseError::TooManyDigits)?;
                    }
                    scale += pending_zeros;
                    pending_zeros = 0;
                    magnitude = magnitude
                        .checked_mul(10)
                        .and_then(|m| m.checked_add(u64::from(byte - b'0')))
                        .ok_or(DecParseError::TooManyDigits)?;
                    digits += 1;
                    if seen_point {
                        scale += 1;
                    }
                }
                b'.' if seen_point => return Err(DecParseError::MultiplePoints),
                b'.' => seen_point = true,
                _ => {
                    // Every byte before `at` was ASCII, so `at` starts a
                    // character: report all of it, not one byte.
                    let ch = body[at..].chars().next().unwrap_or('?');
                    return Err(DecParseError::InvalidChar(ch));
                }
            }
        }
        if digits == 0 {
            return Err(DecParseError::NoDigits);
        }
        while pending_zeros > 0 {
            match magnitude.checked_mul(10) {
                Some(m) => {
                    magnitude = m;
                    scale += 1;
                    pending_zeros -= 1;
                }
                None => break,
            }
        }
        let dec = Dec {
            magnitude,
            scale,
            negative: negative && magnitude != 0,
        };
        // The log stores the written form, which puts `0.` before a bare
        // fraction (`.5` is written `0.5`): with more places than this it
        // would not read back, and a replica could not replay the entry.
        if usize::from(scale) > MAX_DECIMAL_PLACES
            && usize::from(dec.normalized().scale) > MAX_DECIMAL_PLACES
        {
            return Err(DecParseError::TooManyPlaces);
        }
        Ok(dec)
    }

    /// Drops trailing fractional zeros: `1.500` becomes `1.5`.
    pub fn normalized(self) -> Dec {
        let mut d = self;
        while d.scale > 0 && d.magnitude.is_multiple_of(10) {
            d.magnitude /= 10;
            d.scale -= 1;
        }
        d
    }

    /// The value in `10^-AMOUNT_SCALE` units; zero allowed.
    ///
    /// On the hot path (every price and quantity of every order), so a
    /// value with at most `AMOUNT_SCALE` decimals is one table lookup and
    /// one multiplication, inlined into its callers; the rest is a call.
    #[inline(always)]
    pub fn to_units_allow_zero(self) -> Result<u64, UnitsError> {
        if self.negative {
            return Err(UnitsError::Negative);
        }
        let scale = u32::from(self.scale);
        if scale <= AMOUNT_SCALE {
            let factor = POW10[(AMOUNT_SCALE - scale) as usize];
            return self
                .magnitude
                .checked_mul(factor)
                .ok_or(UnitsError::Overflow);
        }
        self.finer_units()
    }

    /// [`Dec::to_units_allow_zero`] for a value with more decimals than
    /// kept: acceptable only if they are all zeros.
    #[cold]
    fn finer_units(self) -> Result<u64, UnitsError> {
        let scale = u32::from(self.scale);
        // A u64 has at most 20 digits, so a divisor past 10^19 leaves no
        // whole unit and the value is only zero if the magnitude is.
        let divisor = 10u64.checked_pow(scale - AMOUNT_SCALE);
        match divisor {
            Some(d) if self.magnitude.is_multiple_of(d) => Ok(self.magnitude / d),
            None if self.magnitude == 0 => Ok(0),
            _ => Err(UnitsError::TooManyDecimals),
        }
    }

    /// The value in `10^-AMOUNT_SCALE` units; must be strictly positive.
    #[inline(always)]
    pub fn to_units(self) -> Result<u64, UnitsError> {
        if self.magnitude == 0 {
            return Err(UnitsError::Zero);
        }
        self.to_units_allow_zero()
    }
}

/// Room for the text of every decimal with at most 45 decimals after
/// normalising (a sign, `0.` and 45 digits), all that `Dec::parse` can
/// read (40 characters) and more: such text stays on the stack.
const INLINE_TEXT: usize = 48;

/// A decimal as the shortest exact text (what `Display` writes): on the
/// stack, but for a value built in code with more than 45 decimals.
pub struct DecText {
    inline: [u8; INLINE_TEXT],
    start: usize,
    long: Option<Vec<u8>>,
}

impl DecText {
    /// ASCII digits, `-` and `.`.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.long {
            Some(text) => text,
            None => &self.inline[self.start..],
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// Writes `magnitude * 10^-scale`, trailing fractional zeros dropped, so
/// that it ends at the end of `buf`; returns where it starts. Right to
/// left, one digit per step, so nothing is copied twice. `buf` must hold
/// a sign, the 20 digits of a `u64` and the point, or `scale + 3` bytes.
fn write_text(buf: &mut [u8], negative: bool, mut magnitude: u64, mut scale: usize) -> usize {
    while scale > 0 && magnitude.is_multiple_of(10) {
        magnitude /= 10;
        scale -= 1;
    }
    let mut pos = buf.len();
    if scale > 0 {
        for _ in 0..scale {
            pos -= 1;
            buf[pos] = b'0' + (magnitude % 10) as u8;
            magnitude /= 10;
        }
        pos -= 1;
        buf[pos] = b'.';
    }
    loop {
        pos -= 1;
        buf[pos] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        pos -= 1;
        buf[pos] = b'-';
    }
    pos
}

impl Dec {
    /// The shortest exact text: `1.5`, `-0.0025`, `42`. Built by hand, not
    /// through `core::fmt` (padding the fraction there was most of the
    /// cost of writing a command).
    pub fn text(self) -> DecText {
        let scale = usize::from(self.scale);
        let mut text = DecText {
            inline: [0; INLINE_TEXT],
            start: 0,
            long: None,
        };
        if scale + 3 <= INLINE_TEXT {
            text.start = write_text(&mut text.inline, self.negative, self.magnitude, scale);
        } else {
            let mut long = vec![0; scale + 3];
            let start = write_text(&mut long, self.negative, self.magnitude, scale);
            long.drain(..start);
            text.long = Some(long);
        }
        text
    }
}

impl fmt::Display for Dec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text().as_str())
    }
}

/// Writes an amount of units as the shortest exact decimal string.
pub fn format_units(units: u64) -> String {
    Dec::from_units(units).to_string()
}

/// Writes a signed amount of units (fees may be rebates) as a decimal string.
pub fn format_signed_units(units: i64) -> String {
    Dec {
        magnitude: units.unsigned_abs(),
        scale: AMOUNT_SCALE as u8,
        negative: units < 0,
    }
    .to_string()
}

#[cfg(test)]
#[path = "decimal_tests.rs"]
mod tests;
