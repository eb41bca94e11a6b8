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

    /// Parses `-?digits[.digits]`. No exponent, no `+`, no spaces: anything
    /// looser invites two clients to mean different things by one string.
    ///
    /// Trailing zeros after the point are kept (they set the scale) as long
    /// as the magnitude can hold them; beyond that they are dropped, which
    /// does not change the value, so `1.000…0` with 30 zeros is still 1.
    pub fn parse(text: &str) -> Result<Dec, DecParseError> {
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
    /// one multiplication.
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
        // More decimals than kept: acceptable only if they are all zeros.
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
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats_exactly() {
        let d = Dec::parse("100.50").unwrap();
        assert_eq!(d, Dec::new(10050, 2));
        assert_eq!(d.to_string(), "100.5");
        assert_eq!(Dec::parse("-0.0001").unwrap().to_string(), "-0.0001");
        assert_eq!(Dec::parse("7").unwrap().to_units().unwrap(), 700_000_000);
        assert_eq!(Dec::parse(".5").unwrap().to_units().unwrap(), 50_000_000);
        assert_eq!(format_units(1), "0.00000001");
        assert_eq!(format_units(0), "0");
        assert_eq!(format_signed_units(-150_000_000), "-1.5");
    }

    #[test]
    fn zeros_keep_the_scale_while_they_fit_and_never_change_the_value() {
        let one = Dec::parse("1.000").unwrap();
        assert_eq!((one.magnitude(), one.scale()), (1000, 3));
        let long = format!("1.{}", "0".repeat(30));
        let d = Dec::parse(&long).unwrap();
        assert_eq!(d.to_units(), Ok(100_000_000));
        assert_eq!(d.to_string(), "1");
        assert_eq!(Dec::parse("-0.00").unwrap(), Dec::new(0, 2));
        assert!(!Dec::parse("-0").unwrap().is_negative());
        let tiny = format!(".{}1", "0".repeat(36));
        let d = Dec::parse(&tiny).unwrap();
        assert_eq!(d.scale(), 37);
        assert_eq!(d.to_string(), format!("0.{}1", "0".repeat(36)));
        assert_eq!(d.to_units(), Err(UnitsError::TooManyDecimals));
        // One place more and the written form (`0.` and 38 places) would
        // have more digits than a line of the log may carry.
        assert_eq!(
            Dec::parse(&format!(".{}1", "0".repeat(37))),
            Err(DecParseError::TooManyPlaces)
        );
        assert_eq!(
            Dec::parse(&format!("-.{}1", "0".repeat(37))),
            Err(DecParseError::TooManyPlaces)
        );
        assert_eq!(
            Dec::parse(&format!("0.{}1", "0".repeat(37))),
            Err(DecParseError::TooManyPlaces)
        );
        // Trailing zeros are not places of the value.
        assert_eq!(
            Dec::parse(&format!("0.{}10", "0".repeat(36))).map(|d| d.normalized().scale()),
            Ok(37)
        );
        assert_eq!(
            Dec::parse(&format!(".{}", "0".repeat(39)))
                .unwrap()
                .to_units_allow_zero(),
            Ok(0)
        );
        assert_eq!(format_units(u64::MAX), "184467440737.09551615");
        assert_eq!(format_signed_units(i64::MIN), "-92233720368.54775808");
    }

    #[test]
    fn rejects_malformed_text() {
        assert_eq!(Dec::parse(""), Err(DecParseError::Empty));
        assert_eq!(Dec::parse("1e5"), Err(DecParseError::InvalidChar('e')));
        assert_eq!(Dec::parse("1.2.3"), Err(DecParseError::MultiplePoints));
        assert_eq!(Dec::parse("-"), Err(DecParseError::NoDigits));
        assert_eq!(Dec::parse("+1"), Err(DecParseError::InvalidChar('+')));
        assert_eq!(Dec::parse(&"9".repeat(41)), Err(DecParseError::TooLong));
        assert_eq!(
            Dec::parse(&"9".repeat(39)),
            Err(DecParseError::TooManyDigits)
        );
        assert_eq!(
            Dec::parse("340282366920938463463374607431968211456"),
            Err(DecParseError::TooManyDigits)
        );
        assert_eq!(
            Dec::parse(&"9".repeat(20)),
            Err(DecParseError::TooManyDigits)
        );
        assert!(Dec::parse(&"9".repeat(19)).is_ok());
        assert_eq!(
            Dec::parse("18446744073709551615").map(Dec::magnitude),
            Ok(u64::MAX)
        );
        assert_eq!(
            Dec::parse("1844674407370955161.6"),
            Err(DecParseError::TooManyDigits)
        );
        assert_eq!(Dec::parse("1x"), Err(DecParseError::InvalidChar('x')));
        assert_eq!(Dec::parse("1é"), Err(DecParseError::InvalidChar('é')));
    }

    #[test]
    fn units_conversion_names_the_problem() {
        assert_eq!(
            Dec::parse("-1").unwrap().to_units(),
            Err(UnitsError::Negative)
        );
        assert_eq!(
            Dec::parse("0.000").unwrap().to_units(),
            Err(UnitsError::Zero)
        );
        assert_eq!(Dec::parse("0").unwrap().to_units_allow_zero(), Ok(0));
        assert_eq!(
            Dec::parse("0.000000001").unwrap().to_units(),
            Err(UnitsError::TooManyDecimals)
        );
        assert_eq!(
            Dec::parse("1.000000000").unwrap().to_units(),
            Ok(100_000_000)
        );
        assert_eq!(
            Dec::parse("999999999999999999").unwrap().to_units(),
            Err(UnitsError::Overflow)
        );
        // The largest amount there is, and one unit more, at two scales.
        assert_eq!(
            Dec::parse("184467440737.09551615").unwrap().to_units(),
            Ok(u64::MAX)
        );
        assert_eq!(
            Dec::parse("184467440737.09551616"),
            Err(DecParseError::TooManyDigits)
        );
        assert_eq!(
            Dec::parse("184467440737.0955162").unwrap().to_units(),
            Err(UnitsError::Overflow)
        );
        assert_eq!(
            Dec::parse("184467440737.0955161").unwrap().to_units(),
            Ok(u64::MAX - 5)
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// The value times `10^AMOUNT_SCALE`, by plain 128-bit arithmetic
        /// with an exact check: the reference `to_units_allow_zero` must
        /// agree with.
        fn reference_units(d: Dec) -> Result<u64, UnitsError> {
            if d.is_negative() {
                return Err(UnitsError::Negative);
            }
            let magnitude = u128::from(d.magnitude());
            let scale = u32::from(d.scale());
            let units = if scale <= AMOUNT_SCALE {
                magnitude * 10u128.pow(AMOUNT_SCALE - scale)
            } else {
                let divisor = 10u128.pow(scale - AMOUNT_SCALE);
                if magnitude % divisor != 0 {
                    return Err(UnitsError::TooManyDecimals);
                }
                magnitude / divisor
            };
            u64::try_from(units).map_err(|_| UnitsError::Overflow)
        }

        /// `Display` as it was written with `core::fmt`: the model the
        /// hand-built text must match byte for byte.
        fn reference_display(d: Dec) -> String {
            let d = d.normalized();
            let sign = if d.is_negative() { "-" } else { "" };
            if d.scale() == 0 {
                return format!("{sign}{}", d.magnitude());
            }
            let (whole, fraction) = match 10u64.checked_pow(u32::from(d.scale())) {
                Some(pow) => (d.magnitude() / pow, d.magnitude() % pow),
                None => (0, d.magnitude()),
            };
            format!(
                "{sign}{whole}.{fraction:0width$}",
                width = usize::from(d.scale())
            )
        }

        proptest! {
            #[test]
            fn display_reads_back_as_the_same_value(
                magnitude in prop_oneof![any::<u64>(), 0u64..1_000_000],
                scale in 0u8..=30,
                negative in any::<bool>(),
            ) {
                let d = if negative && magnitude != 0 {
                    Dec { magnitude, scale, negative }
                } else {
                    Dec::from_parts(magnitude, scale)
                };
                let text = d.to_string();
                let back = Dec::parse(&text).expect("own output parses");
                prop_assert_eq!(back.normalized(), d.normalized(), "{}", text);
                prop_assert_eq!(back.to_units_allow_zero(), d.to_units_allow_zero());
            }

            /// The log stores commands with their decimals written out
            /// and every replica parses them again, so whatever `parse`
            /// accepts must come back from its own text, within the
            /// edge's limits.
            #[test]
            fn what_parse_accepts_reads_back_from_its_text(
                text in prop_oneof![
                    "-?[0-9]{0,20}(\\.[0-9]{0,41})?",
                    "-?0{0,3}[0-9]{0,3}(\\.0{30,40}[0-9]{0,3})?",
                    // Around the last place that still reads back.
                    "-?0?\\.0{34,38}[1-9]0?",
                ],
            ) {
                if let Ok(d) = Dec::parse(&text) {
                    let written = d.text();
                    let written = written.as_str();
                    prop_assert!(written.len() <= MAX_DECIMAL_LEN, "{} -> {}", text, written);
                    let digits = written.bytes().filter(u8::is_ascii_digit).count();
                    prop_assert!(
                        digits <= crate::limits::MAX_DECIMAL_DIGITS,
                        "{} -> {}", text, written
                    );
                    prop_assert_eq!(Dec::parse(written), Ok(d.normalized()), "{}", text);
                }
            }

            #[test]
            fn text_is_what_the_formatter_wrote(
                magnitude in prop_oneof![any::<u64>(), 0u64..1_000_000, Just(0u64), Just(u64::MAX)],
                scale in prop_oneof![0u8..=25, any::<u8>()],
                negative in any::<bool>(),
            ) {
                let d = if negative && magnitude != 0 {
                    Dec { magnitude, scale, negative }
                } else {
                    Dec::from_parts(magnitude, scale)
                };
                prop_assert_eq!(d.to_string(), reference_display(d));
            }

            #[test]
            fn units_agree_with_wide_arithmetic(
                magnitude in prop_oneof![any::<u64>(), 0u64..1_000_000_000],
                scale in 0u8..=25,
            ) {
                let d = Dec::from_parts(magnitude, scale);
                prop_assert_eq!(d.to_units_allow_zero(), reference_units(d));
            }
        }
    }
}
