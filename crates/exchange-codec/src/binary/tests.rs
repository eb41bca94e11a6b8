//! The binary encoding holds exactly what the JSON line holds, reads back
//! exactly, has one encoding per command, and refuses every malformed
//! message with an error rather than a panic.

use exchange_types::{Command, Stamped};
use proptest::prelude::*;

use super::*;
use crate::strategies::{command, wide_u64};

#[test]
fn a_json_line_is_not_a_binary_message() {
    let line = br#"{"cmd":"tick","ts":1}"#;
    assert!(!is_binary(line));
    assert_eq!(decode_command(line), Err(BinaryError::NotBinary(b'{')));
    assert_eq!(decode_command(&[]), Err(BinaryError::Truncated));
}

#[test]
fn a_tick_is_its_header_alone() {
    let bytes = encode_command(&Stamped {
        ts: 0x0102_0304_0506_0708,
        command: Command::Tick,
    });
    assert_eq!(
        bytes,
        [
            MARKER,
            SCHEMA_VERSION,
            20,
            0,
            0,
            0,
            0,
            0,
            8,
            7,
            6,
            5,
            4,
            3,
            2,
            1
        ]
    );
}

#[test]
fn decimals_lose_trailing_zeros_as_in_a_json_line() {
    for text in ["0.000", "1.50", "-20.0", "100"] {
        let amount = exchange_types::Dec::parse(text).unwrap();
        let stamped = Stamped {
            ts: 1,
            command: Command::Deposit(exchange_types::Transfer {
                account: 1,
                asset: exchange_types::ids::InlineStr::new("USD").unwrap(),
                amount,
            }),
        };
        let from_json = crate::decode_command(&crate::encode_command(&stamped)).unwrap();
        assert_eq!(
            decode_command(&encode_command(&stamped)),
            Ok(from_json),
            "{text}"
        );
    }
}

/// Choices are codes on the wire: reordering a type's list of values would
/// change what every journal means.
#[test]
fn a_place_s_choice_codes_are_fixed() {
    use exchange_types::{OrderType, Place, SelfTradePrevention, Side, TimeInForce};
    let place = Stamped {
        ts: 1,
        command: Command::Place(Place {
            account: 1,
            client_order_id: exchange_types::ids::InlineStr::new("c").unwrap(),
            symbol: exchange_types::ids::InlineStr::new("S").unwrap(),
            side: Side::Sell,
            order_type: OrderType::StopLimit,
            price: None,
            qty: exchange_types::Dec::from_units(1),
            tif: TimeInForce::AtClose,
            post_only: true,
            stp: SelfTradePrevention::Decrement,
            ext: None,
        }),
    };
    let bytes = encode_command(&place);
    // Header, account, client order id (36), symbol (16), then the choices.
    let at = HEADER_BYTES + 8 + 36 + 16;
    assert_eq!(&bytes[at..at + 5], &[1, 3, 6, 1, 3]);
}

#[test]
fn another_schema_version_is_refused_by_name() {
    let mut bytes = encode_command(&Stamped {
        ts: 1,
        command: Command::Tick,
    });
    bytes[1] = SCHEMA_VERSION + 1;
    assert_eq!(
        decode_command(&bytes),
        Err(BinaryError::Version(SCHEMA_VERSION + 1))
    );
    bytes[1] = SCHEMA_VERSION;
    bytes[2] = 0;
    assert_eq!(decode_command(&bytes), Err(BinaryError::UnknownTemplate(0)));
}

/// The listing's reference price rule is appended to its block only when
/// not the unnamed rule: a block without it (as every block written before
/// it existed) reads as the rule it ran under, and that rule written out
/// is refused as a second encoding.
#[test]
fn a_listing_s_rule_is_appended_only_when_named() {
    use exchange_types::ReferencePriceRule;
    let nearest = encode_command(&listing(ReferencePriceRule::LimitNearest, None));
    let unnamed = encode_command(&listing(ReferencePriceRule::Reference, None));
    assert_eq!(nearest.len(), unnamed.len() + 1);
    // The same but for the block length (bytes 4 and 5) and the last byte.
    assert_eq!(nearest[..4], unnamed[..4]);
    assert_eq!(nearest[6..unnamed.len()], unnamed[6..]);
    assert_eq!(nearest.last(), Some(&0));
    let mut written_out = nearest.clone();
    *written_out.last_mut().unwrap() = 1;
    assert_eq!(
        decode_command(&written_out),
        Err(BinaryError::Field {
            field: "reference_price_rule",
            problem: "is the unnamed rule, which is written by leaving it out",
        })
    );
    *written_out.last_mut().unwrap() = 2;
    assert!(decode_command(&written_out).is_err());
}

/// A listing's phase follows its rule, which a listing with a phase
/// therefore always writes, the unnamed rule included: each listing keeps
/// one encoding, and one without a phase its bytes from before.
#[test]
fn a_listing_s_phase_follows_its_rule() {
    use exchange_types::{Phase, ReferencePriceRule};
    let bare = encode_command(&listing(ReferencePriceRule::Reference, None));
    let pre_open = listing(ReferencePriceRule::Reference, Some(Phase::PreOpen));
    let bytes = encode_command(&pre_open);
    assert_eq!(bytes.len(), bare.len() + 2);
    assert_eq!(bytes[bare.len()..], [1, 1]);
    assert_eq!(decode_command(&bytes), Ok(pre_open));
    for rule in ReferencePriceRule::ALL {
        for phase in Phase::ALL {
            let stamped = listing(*rule, Some(*phase));
            assert_eq!(decode_command(&encode_command(&stamped)), Ok(stamped));
        }
    }
    let mut unknown = bytes.clone();
    *unknown.last_mut().unwrap() = u8::try_from(Phase::ALL.len()).unwrap();
    assert!(decode_command(&unknown).is_err());
}

#[test]
fn every_block_fits_its_length_field_and_the_log_bound() {
    // Fixed layout: a command with every optional field is its kind's
    // largest.
    for stamped in crate::encode_command::size_tests::largest_commands() {
        let bytes = encode_command(&stamped);
        assert!(bytes.len() - HEADER_BYTES < usize::from(u16::MAX));
        assert!(bytes.len() <= exchange_types::limits::MAX_ENCODED_COMMAND_BYTES);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_048))]

    #[test]
    fn every_command_reads_back_exactly(ts in wide_u64(), command in command()) {
        let stamped = Stamped { ts, command };
        let bytes = encode_command(&stamped);
        prop_assert!(is_binary(&bytes));
        let name = stamped.command.name();
        let template = usize::from(u16::from_le_bytes([bytes[2], bytes[3]]));
        prop_assert_eq!(TEMPLATES[template - 1], name);
        prop_assert_eq!(decode_command(&bytes), Ok(stamped));
    }

    /// Replaying a journal gives the same events whichever form it holds
    /// its commands in: both read back as the same command.
    #[test]
    fn the_binary_message_holds_what_the_json_line_holds(
        ts in wide_u64(),
        command in command(),
    ) {
        let stamped = Stamped { ts, command };
        let from_json = crate::decode_command(&crate::encode_command(&stamped));
        let from_binary = decode_command(&encode_command(&stamped));
        prop_assert!(from_binary.is_ok());
        prop_assert_eq!(from_json, Ok(from_binary.unwrap()));
    }

    #[test]
    fn a_truncated_or_extended_message_is_refused(
        command in command(),
        cut in any::<prop::sample::Index>(),
        extra in 1..8usize,
    ) {
        let bytes = encode_command(&Stamped { ts: 7, command });
        let short = &bytes[..cut.index(bytes.len())];
        prop_assert!(decode_command(short).is_err());
        let mut long = bytes.clone();
        long.resize(bytes.len() + extra, 0);
        prop_assert_eq!(decode_command(&long), Err(BinaryError::Trailing(extra)));
    }

    /// Any byte changed either makes the message unreadable or makes it
    /// another command whose encoding is exactly those bytes: no command
    /// has two encodings, and nothing panics.
    #[test]
    fn a_corrupted_message_is_refused_or_is_another_commands_one_encoding(
        command in command(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = encode_command(&Stamped { ts: 7, command });
        let at = at.index(bytes.len());
        bytes[at] = byte;
        if let Ok(other) = decode_command(&bytes) {
            prop_assert_eq!(encode_command(&other), bytes);
        }
    }
}

/// A bare listing of X-Y with `rule` and `phase`.
fn listing(
    rule: exchange_types::ReferencePriceRule,
    phase: Option<exchange_types::Phase>,
) -> Stamped {
    Stamped {
        ts: 1,
        command: Command::AddInstrument(Box::new(exchange_types::AddInstrument {
            reference_price_rule: rule,
            phase,
            ..exchange_types::AddInstrument::plain(
                exchange_types::ids::InlineStr::new("X-Y").unwrap(),
                exchange_types::ids::InlineStr::new("X").unwrap(),
                exchange_types::ids::InlineStr::new("Y").unwrap(),
                exchange_types::Dec::new(1, 0),
                exchange_types::Dec::new(1, 0),
            )
        })),
    }
}
