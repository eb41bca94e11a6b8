//! Exact decimal numbers as they arrive at the edge, and the fixed-point
//! amounts the core works in.
//!
//! Every asset amount inside the exchange is an integer count of
//! `10^-AMOUNT_SCALE` units. A [`Dec`] is what a client typed: it keeps the
//! sign and every digit so the core can say *why* a value is unacceptable
//! (negative, zero, too many decimals, off the tick) instead of rounding it.

use std::fmt;
use thiserror::Error;

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
/// Longest decimal string accepted at the edge; longer input is malformed.
pub const MAX_DECIMAL_LEN: usize = 40;

/// A decimal number exactly as written: `mantissa * 10^-scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dec {
    pub mantissa: i128,
    pub scale: u8,
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
    #[error("number has too many digits to represent exactly")]
    TooManyDigits,
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
    pub const fn new(mantissa: i128, scale: u8) -> Self {
        Dec { mantissa, scale }
    }

    /// A whole amount of units as a decimal (scale [`AMOUNT_SCALE`]).
    pub const fn from_units(units: u64) -> Self {
        Dec {
            mantissa: units as i128,
            scale: AMOUNT_SCALE as u8,
        }
    }

    /// Parses `-?digits[.digits]`. No exponent, no `+`, no spaces: anything
    /// looser invites two clients to mean different things by one string.
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
        let mut mantissa: i128 = 0;
        let mut scale: u8 = 0;
        let mut seen_point = false;
        let mut digits = 0usize;
        for ch in body.chars() {
            match ch {
                '0'..='9' => {
                    mantissa = mantissa
                        .checked_mul(10)
                        .and_then(|m| m.checked_add(i128::from(ch as u8 - b'0')))
                        .ok_or(DecParseError::TooManyDigits)?;
                    digits += 1;
                    if seen_point {
                        scale += 1;
                    }
                }
                '.' if seen_point => return Err(DecParseError::MultiplePoints),
                '.' => seen_point = true,
                other => return Err(DecParseError::InvalidChar(other)),
            }
        }
        if digits == 0 {
            return Err(DecParseError::NoDigits);
        }
        Ok(Dec {
            mantissa: if negative { -mantissa } else { mantissa },
            scale,
        })
    }

    /// Drops trailing fractional zeros: `1.500` becomes `1.5`.
    pub fn normalized(self) -> Dec {
        let mut d = self;
        while d.scale > 0 && d.mantissa % 10 == 0 {
            d.mantissa /= 10;
            d.scale -= 1;
        }
        d
    }

    /// The value in `10^-AMOUNT_SCALE` units; zero allowed.
    ///
    /// On the hot path (every price and quantity of every order), so it
    /// avoids normalising with repeated 128-bit division: a value with at
    /// most `AMOUNT_SCALE` decimals is one multiplication.
    pub fn to_units_allow_zero(self) -> Result<u64, UnitsError> {
        if self.mantissa < 0 {
            return Err(UnitsError::Negative);
        }
        let mantissa = self.mantissa.unsigned_abs();
        let scale = u32::from(self.scale);
        if scale <= AMOUNT_SCALE {
            // A table and a 64-bit multiply: `u128::pow` with a run-time
            // exponent is a loop of 128-bit multiplications.
            let factor = POW10[(AMOUNT_SCALE - scale) as usize];
            return u64::try_from(mantissa)
                .ok()
                .and_then(|m| m.checked_mul(factor))
                .ok_or(UnitsError::Overflow);
        }
        // More decimals than kept: acceptable only if they are all zeros.
        let divisor = 10u128
            .checked_pow(scale - AMOUNT_SCALE)
            .ok_or(UnitsError::TooManyDecimals)?;
        if !mantissa.is_multiple_of(divisor) {
            return Err(UnitsError::TooManyDecimals);
        }
        u64::try_from(mantissa / divisor).map_err(|_| UnitsError::Overflow)
    }

    /// The value in `10^-AMOUNT_SCALE` units; must be strictly positive.
    pub fn to_units(self) -> Result<u64, UnitsError> {
        if self.mantissa == 0 {
            return Err(UnitsError::Zero);
        }
        self.to_units_allow_zero()
    }
}

impl fmt::Display for Dec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.normalized();
        let sign = if d.mantissa < 0 { "-" } else { "" };
        let abs = d.mantissa.unsigned_abs();
        if d.scale == 0 {
            return write!(f, "{sign}{abs}");
        }
        let pow = 10u128.pow(u32::from(d.scale));
        write!(
            f,
            "{sign}{}.{:0width$}",
            abs / pow,
            abs % pow,
            width = usize::from(d.scale)
        )
    }
}

/// Writes an amount of units as the shortest exact decimal string.
pub fn format_units(units: u64) -> String {
    Dec::from_units(units).to_string()
}

/// Writes a signed amount of units (fees may be rebates) as a decimal string.
pub fn format_signed_units(units: i64) -> String {
    Dec {
        mantissa: i128::from(units),
        scale: AMOUNT_SCALE as u8,
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
        assert!(Dec::parse(&"9".repeat(38)).is_ok());
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
            Dec::parse("999999999999999999999").unwrap().to_units(),
            Err(UnitsError::Overflow)
        );
        // The largest amount there is, and one unit more, at two scales.
        assert_eq!(
            Dec::parse("184467440737.09551615").unwrap().to_units(),
            Ok(u64::MAX)
        );
        assert_eq!(
            Dec::parse("184467440737.09551616").unwrap().to_units(),
            Err(UnitsError::Overflow)
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
}
