//! The decimal grammar, its text and its units.

use super::*;

#[test]
fn parses_and_formats_exactly() {
    let d = Dec::parse("100.50").unwrap();
    assert_eq!(d, Dec::new(10050, 2));
    assert_eq!(d.to_string(), "100.5");
    assert_eq!(Dec::parse("-0.0001").unwrap().to_string(), "-0.0001");
    assert_eq!(Dec::parse("7").unwrap().to_units().unwrap(), 700_000_000);
    assert_eq!(Dec::parse("0.5").unwrap().to_units().unwrap(), 50_000_000);
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
    let tiny = format!("0.{}1", "0".repeat(36));
    let d = Dec::parse(&tiny).unwrap();
    assert_eq!(d.scale(), 37);
    assert_eq!(d.to_string(), format!("0.{}1", "0".repeat(36)));
    assert_eq!(d.to_units(), Err(UnitsError::TooManyDecimals));
    // One place more and the written form (`0.` and 38 places) would
    // have more digits than a line of the log may carry.
    assert_eq!(
        Dec::parse_fix_float(&format!(".{}1", "0".repeat(37))),
        Err(DecParseError::TooManyPlaces)
    );
    assert_eq!(
        Dec::parse_fix_float(&format!("-.{}1", "0".repeat(37))),
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
        Dec::parse(&format!("0.{}", "0".repeat(38)))
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
    assert_eq!(Dec::parse("055000"), Err(DecParseError::LeadingZero));
    assert_eq!(Dec::parse("-00.5"), Err(DecParseError::LeadingZero));
    assert_eq!(Dec::parse("55000."), Err(DecParseError::NoFractionDigits));
    assert_eq!(Dec::parse(".5"), Err(DecParseError::NoWholeDigits));
    assert_eq!(Dec::parse("-.5"), Err(DecParseError::NoWholeDigits));
    assert_eq!(Dec::parse("."), Err(DecParseError::NoDigits));
    assert_eq!(Dec::parse(" 1"), Err(DecParseError::InvalidChar(' ')));
    assert_eq!(Dec::parse("1 "), Err(DecParseError::InvalidChar(' ')));
    assert_eq!(Dec::parse("-0"), Ok(Dec::new(0, 0)));
    assert_eq!(Dec::parse("0.50"), Ok(Dec::new(50, 2)));
    assert_eq!(Dec::parse_fix_float("0023.2300"), Ok(Dec::new(232300, 4)));
    assert_eq!(Dec::parse_fix_float("23."), Ok(Dec::new(23, 0)));
    assert_eq!(Dec::parse_fix_float(".5"), Ok(Dec::new(5, 1)));
    assert_eq!(
        Dec::parse_fix_float("+23"),
        Err(DecParseError::InvalidChar('+'))
    );
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
            // FIX's grammar is the widest any edge reads.
            if let Ok(d) = Dec::parse_fix_float(&text) {
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

        /// Every decimal in the exchange's grammar, in its shortest
        /// form, reads and writes back as the same text.
        #[test]
        fn every_canonical_decimal_round_trips(
            negative in any::<bool>(),
            whole in "0|[1-9][0-9]{0,10}",
            fraction in proptest::option::of("[0-9]{0,7}[1-9]"),
        ) {
            let sign = if negative { "-" } else { "" };
            let text = match &fraction {
                Some(f) => format!("{sign}{whole}.{f}"),
                None => format!("{sign}{whole}"),
            };
            let d = Dec::parse(&text).expect("canonical text parses");
            prop_assert_eq!(d.is_negative(), negative && d.magnitude() != 0);
            let expected = if d.magnitude() == 0 { "0" } else { text.as_str() };
            prop_assert_eq!(d.to_string(), expected);
            // Trailing zeros are in the grammar and keep the value.
            let padded = if fraction.is_some() {
                format!("{text}00")
            } else {
                format!("{text}.00")
            };
            prop_assert_eq!(Dec::parse(&padded).map(Dec::normalized), Ok(d.normalized()));
        }

        /// The forms outside the grammar are refused with their own
        /// error; the ones FIX's `float` allows read there as the
        /// value they spell.
        #[test]
        fn loose_forms_are_refused_and_fix_reads_its_own(
            negative in any::<bool>(),
            whole in "0|[1-9][0-9]{0,10}",
            fraction in "[0-9]{1,8}",
            zeros in "0{1,3}",
        ) {
            let sign = if negative { "-" } else { "" };
            let canonical = Dec::parse(&format!("{sign}{whole}.{fraction}")).expect("canonical");
            let cases = [
                (format!("{sign}{zeros}{whole}.{fraction}"), DecParseError::LeadingZero, canonical),
                (format!("{sign}{zeros}{whole}"), DecParseError::LeadingZero,
                    Dec::parse(&format!("{sign}{whole}")).expect("whole")),
                (format!("{sign}{whole}."), DecParseError::NoFractionDigits,
                    Dec::parse(&format!("{sign}{whole}")).expect("whole")),
                (format!("{sign}.{fraction}"), DecParseError::NoWholeDigits,
                    Dec::parse(&format!("{sign}0.{fraction}")).expect("fraction")),
            ];
            for (text, error, value) in cases {
                prop_assert_eq!(Dec::parse(&text), Err(error), "{}", text);
                prop_assert_eq!(Dec::parse_fix_float(&text).map(Dec::normalized),
                    Ok(value.normalized()), "{}", text);
            }
            // Refused by both grammars.
            for text in [
                format!("+{whole}"),
                format!(" {whole}"),
                format!("{whole} "),
                format!("{whole}\t"),
                format!("{whole}e2"),
                format!("{whole}E-2"),
                format!("{whole}.{fraction}."),
                format!("--{whole}"),
                "-".to_string(),
                ".".to_string(),
                format!("{sign}."),
            ] {
                prop_assert!(Dec::parse(&text).is_err(), "{}", text);
                prop_assert!(Dec::parse_fix_float(&text).is_err(), "{}", text);
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
