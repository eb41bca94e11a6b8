//! The binary messages' layouts and the books they carry.

use proptest::prelude::*;

use super::*;

/// Every message type, with its documented encoded length.
fn one_of_each_message(symbol: Symbol) -> [(Message, usize); 10] {
    [
        (Message::Directory { locate: 3, symbol }, DIRECTORY_LEN),
        (
            Message::Status {
                locate: 3,
                ts: 9,
                halted: true,
            },
            STATUS_LEN,
        ),
        (
            Message::Clear {
                locate: 3,
                book_seq: 4,
                ts: 9,
                last: true,
            },
            CLEAR_LEN,
        ),
        (
            Message::Level {
                locate: 3,
                book_seq: 4,
                ts: 9,
                side: Side::Sell,
                price: u64::MAX,
                qty: 1,
                last: false,
            },
            LEVEL_LEN,
        ),
        (
            Message::Trade {
                locate: 3,
                trade_seq: 1,
                ts: 2,
                trade_id: 3,
                price: 4,
                qty: 5,
                aggressor: Side::Buy,
            },
            TRADE_LEN,
        ),
        (
            Message::Phase {
                locate: 3,
                ts: 9,
                phase: Phase::VolatilityAuction,
            },
            PHASE_LEN,
        ),
        (indicative(10, 11, Some(Side::Sell), 12), INDICATIVE_LEN),
        (indicative(0, 0, None, 0), INDICATIVE_LEN),
        (reference_message(3, 9, Some(10_005_000_000)), REFERENCE_LEN),
        (reference_message(3, 9, None), REFERENCE_LEN),
    ]
}

fn indicative(
    price: u64,
    volume: u64,
    imbalance_side: Option<Side>,
    imbalance_qty: u64,
) -> Message {
    Message::Indicative {
        locate: 3,
        ts: 9,
        price,
        volume,
        imbalance_side,
        imbalance_qty,
    }
}

#[test]
fn every_message_round_trips_at_its_documented_length() {
    let symbol = Symbol::new("BTC-USD").unwrap();
    for (message, len) in one_of_each_message(symbol) {
        let bytes = message.to_bytes();
        assert_eq!(bytes.len(), len, "{message:?}");
        assert_eq!(Message::decode(&bytes), Ok(message));
        assert!(Message::decode(&bytes[..len - 1]).is_err());
    }
    assert_eq!(
        &Message::Directory { locate: 1, symbol }.to_bytes()[3..],
        b"BTC-USD         "
    );
    assert_eq!(Message::decode(b"Z"), Err(WireError::UnknownType(b'Z')));
    // Every phase has its own code, which reads back.
    for &phase in Phase::ALL {
        assert_eq!(phase_of_code(phase_code(phase)), Some(phase));
    }
    let mut bad = Message::Phase {
        locate: 0,
        ts: 0,
        phase: Phase::Closed,
    }
    .to_bytes();
    bad[PHASE_LEN - 1] = 99;
    assert_eq!(Message::decode(&bad), Err(WireError::Field("phase")));
}

#[test]
fn a_book_is_a_clear_then_levels_with_the_last_flagged() {
    let mut book = L2Book::default();
    let mut out = Vec::new();
    book_messages(0, 5, 1, &book, &mut out);
    assert_eq!(
        out,
        vec![Message::Clear {
            locate: 0,
            book_seq: 5,
            ts: 1,
            last: true
        }]
    );
    book.set(Side::Buy, 10, 1);
    book.set(Side::Sell, 11, 2);
    out.clear();
    book_messages(0, 6, 1, &book, &mut out);
    let lasts: Vec<bool> = out
        .iter()
        .map(|m| match m {
            Message::Clear { last, .. } | Message::Level { last, .. } => *last,
            _ => false,
        })
        .collect();
    assert_eq!(lasts, vec![false, false, true]);
}

#[test]
fn a_reference_is_a_price_or_zero_for_none() {
    let bytes = reference_message(1, 2, Some(9_010_000_000)).to_bytes();
    assert_eq!(bytes[0], b'R');
    assert_eq!(&bytes[11..], &9_010_000_000u64.to_be_bytes());
    let none = reference_message(1, 2, None).to_bytes();
    assert_eq!(&none[11..], &[0; 8]);
}

fn any_side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Buy), Just(Side::Sell)]
}

/// `C`, `L` or `T`.
fn book_or_trade_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (any::<u16>(), any::<u64>(), any::<u64>(), any::<bool>()).prop_map(
            |(locate, book_seq, ts, last)| Message::Clear {
                locate,
                book_seq,
                ts,
                last
            }
        ),
        (
            (any::<u16>(), any::<u64>(), any::<u64>()),
            (any_side(), any::<u64>(), any::<u64>(), any::<bool>())
        )
            .prop_map(|((locate, book_seq, ts), (side, price, qty, last))| {
                Message::Level {
                    locate,
                    book_seq,
                    ts,
                    side,
                    price,
                    qty,
                    last,
                }
            }),
        (
            (any::<u16>(), any::<u64>(), any::<u64>(), any::<u64>()),
            (any::<u64>(), any::<u64>(), any_side())
        )
            .prop_map(
                |((locate, trade_seq, ts, trade_id), (price, qty, aggressor))| Message::Trade {
                    locate,
                    trade_seq,
                    ts,
                    trade_id,
                    price,
                    qty,
                    aggressor,
                }
            ),
    ]
}

fn any_message() -> impl Strategy<Value = Message> {
    let symbol = "[A-Z]{1,8}(-[A-Z]{1,6})?".prop_map(|s| Symbol::new(&s).unwrap());
    let phase = (0..PHASE_CODES.len()).prop_map(|i| PHASE_CODES[i].1);
    prop_oneof![
        (any::<u16>(), symbol).prop_map(|(locate, symbol)| Message::Directory { locate, symbol }),
        (any::<u16>(), any::<u64>(), any::<bool>())
            .prop_map(|(locate, ts, halted)| Message::Status { locate, ts, halted }),
        book_or_trade_message(),
        (any::<u16>(), any::<u64>(), phase).prop_map(|(locate, ts, phase)| Message::Phase {
            locate,
            ts,
            phase
        }),
        (
            (any::<u16>(), any::<u64>(), any::<u64>()),
            (any::<u64>(), proptest::option::of(any_side()), any::<u64>())
        )
            .prop_map(
                |((locate, ts, price), (volume, imbalance_side, imbalance_qty))| {
                    Message::Indicative {
                        locate,
                        ts,
                        price,
                        volume,
                        imbalance_side,
                        imbalance_qty,
                    }
                }
            ),
        (
            any::<u16>(),
            any::<u64>(),
            proptest::option::of(1..=u64::MAX)
        )
            .prop_map(|(locate, ts, price)| reference_message(locate, ts, price)),
    ]
}

proptest! {
    /// Whatever the fields, a message reads back as itself, and no
    /// shorter or longer slice of it reads at all.
    #[test]
    fn any_message_round_trips(message in any_message()) {
        let bytes = message.to_bytes();
        prop_assert_eq!(Message::decode(&bytes), Ok(message));
        prop_assert!(Message::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert!(Message::decode(&longer).is_err());
    }
}
