//! The binary encoding of events reads back exactly, names each template
//! as the JSON line names its event, has one encoding per event, keeps to
//! its documented layout, and refuses every malformed message with an
//! error rather than a panic.

use exchange_core::Engine;
use exchange_types::event::{self, Balance, Book, Canceled, Rejected, SubAccountLinked, Trade};
use exchange_types::{CancelReason, Event, EventKind, RejectReason, Side, Stamped, Symbol};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use super::*;
use crate::event_strategies::{event, event_kind, longest_text};

fn template_at(bytes: &[u8]) -> u16 {
    u16::from_le_bytes([bytes[2], bytes[3]])
}

fn block_len_at(bytes: &[u8]) -> usize {
    usize::from(u16::from_le_bytes([bytes[4], bytes[5]]))
}

/// The `event` member of the event's JSON line.
fn json_name(event: &Event) -> String {
    let line: serde_json::Value =
        serde_json::from_str(&crate::encode_event(event)).expect("a JSON line");
    line["event"].as_str().expect("an event name").to_owned()
}

fn name_of_template(template: u16) -> &'static str {
    EVENT_TEMPLATES[usize::from(template - FIRST_EVENT_TEMPLATE)]
}

/// At least one event of every template, drawn from the property tests'
/// strategy with a fixed seed, so the same ones every run.
fn one_of_each_template() -> Vec<Event> {
    let mut runner = TestRunner::deterministic();
    let mut found: Vec<Option<Event>> = vec![None; EVENT_TEMPLATES.len()];
    for seq in 0..100_000 {
        if found.iter().all(Option::is_some) {
            break;
        }
        let kind = event_kind()
            .new_tree(&mut runner)
            .expect("a value")
            .current();
        let event = Event { seq, ts: 7, kind };
        let at = usize::from(template_at(&encode_event(&event)) - FIRST_EVENT_TEMPLATE);
        found[at].get_or_insert(event);
    }
    found
        .into_iter()
        .enumerate()
        .map(|(at, event)| event.unwrap_or_else(|| panic!("no {}", EVENT_TEMPLATES[at])))
        .collect()
}

#[test]
fn each_template_is_named_as_the_json_line_names_its_event() {
    let events = one_of_each_template();
    assert_eq!(events.len(), EVENT_TEMPLATES.len());
    for event in &events {
        let template = template_at(&encode_event(event));
        assert_eq!(name_of_template(template), json_name(event));
        assert_eq!(name_of_template(template), event.kind.name());
    }
}

/// The block sizes the module doc's table gives; `accepted` without its
/// rarer part (with it, 175) and `error` without its var-data.
const BLOCK_BYTES: [usize; 22] = [
    40, 17, 90, 74, 106, 93, 136, 84, 36, 33, 28, 36, 13, 59, 16, 17, 42, 33, 92, 109, 8, 24,
];

#[test]
fn every_block_has_the_documented_length() {
    for event in one_of_each_template() {
        let bytes = encode_event(&event);
        let at = usize::from(template_at(&bytes) - FIRST_EVENT_TEMPLATE);
        let ext = match &event.kind {
            EventKind::Accepted(a) => a.ext.as_deref().map_or(0, |x| {
                85 + usize::from(x.hidden || x.min_qty.is_some())
                    + 8 * usize::from(x.min_qty.is_some())
            }),
            _ => 0,
        };
        assert_eq!(block_len_at(&bytes), BLOCK_BYTES[at] + ext, "{event:?}");
    }
}

fn sym() -> Symbol {
    Symbol::new("BTC-USD").unwrap()
}

#[test]
fn the_commonest_events_have_these_sizes() {
    let stamp = |kind| Event {
        seq: 1,
        ts: 2,
        kind,
    };
    let trade = EventKind::Trade(Trade {
        trade_id: 1,
        symbol: sym(),
        price: 1,
        qty: 1,
        maker_order_id: 1,
        taker_order_id: 2,
        maker_account: 1,
        taker_account: 2,
        aggressor_side: Side::Buy,
        maker_fee: -1,
        taker_fee: 1,
        maker_leaves_qty: 0,
        taker_leaves_qty: 0,
        midpoint: false,
    });
    let book = EventKind::Book(Book {
        symbol: sym(),
        side: Side::Sell,
        price: 1,
        qty: 1,
    });
    let balance = EventKind::Balance(Balance {
        account: 1,
        asset: exchange_types::AssetCode::new("USD").unwrap(),
        total: 1,
        available: 1,
    });
    assert_eq!(encode_event(&stamp(trade)).len(), 130);
    assert_eq!(encode_event(&stamp(book)).len(), 57);
    assert_eq!(encode_event(&stamp(balance)).len(), 60);
    // Fixed layout: the others are their block and the header, whatever
    // their values.
    assert_eq!(EVENT_HEADER_BYTES + BLOCK_BYTES[2], 114, "accepted");
    assert_eq!(EVENT_HEADER_BYTES + BLOCK_BYTES[5], 117, "canceled");
    assert_eq!(EVENT_HEADER_BYTES + BLOCK_BYTES[6], 160, "replaced");
}

#[test]
fn the_header_holds_ts_then_seq() {
    let bytes = encode_event(&Event {
        seq: 0x1112_1314_1516_1718,
        ts: 0x0102_0304_0506_0708,
        kind: EventKind::SubAccountLinked(SubAccountLinked { owner: 1, sub: 2 }),
    });
    let mut expected = vec![MARKER, SCHEMA_VERSION, 115, 0, 16, 0, 0, 0];
    expected.extend_from_slice(&[8, 7, 6, 5, 4, 3, 2, 1]);
    expected.extend_from_slice(&[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11]);
    expected.extend_from_slice(&1u64.to_le_bytes());
    expected.extend_from_slice(&2u64.to_le_bytes());
    assert_eq!(bytes, expected);
    assert!(is_binary(&bytes));
}

#[test]
fn a_command_reader_refuses_an_event_and_the_reverse() {
    for event in one_of_each_template() {
        let bytes = encode_event(&event);
        let template = template_at(&bytes);
        assert_eq!(
            decode_command(&bytes),
            Err(BinaryError::UnknownTemplate(template))
        );
    }
    let tick = encode_command(&Stamped {
        ts: 1,
        command: exchange_types::Command::Tick,
    });
    // Padded to an event header's length, so the template is what is read.
    let mut padded = tick.clone();
    padded.resize(EVENT_HEADER_BYTES, 0);
    assert_eq!(decode_event(&padded), Err(BinaryError::UnknownTemplate(20)));
    assert_eq!(decode_event(&tick), Err(BinaryError::Truncated));
}

fn error_event(message: String) -> Event {
    Event {
        seq: 1,
        ts: 2,
        kind: EventKind::Error(event::Error { line: 3, message }),
    }
}

#[test]
fn a_message_is_cut_at_its_bound_on_a_character_boundary() {
    let longest = error_event(longest_text());
    assert_eq!(decode_event(&encode_event(&longest)), Ok(longest));
    // One byte more: the last two-byte character does not fit whole.
    let longer = error_event(format!("x{}", longest_text()));
    let cut = error_event(format!("x{}", "\u{e9}".repeat(MAX_TEXT_BYTES / 2 - 1)));
    assert_eq!(decode_event(&encode_event(&longer)), Ok(cut));
}

#[test]
fn a_message_over_its_bound_or_not_utf8_is_refused() {
    let mut bytes = encode_event(&error_event(String::new()));
    let len = u16::try_from(MAX_TEXT_BYTES + 1).unwrap();
    let at = EVENT_HEADER_BYTES + 8;
    bytes[at..at + 2].copy_from_slice(&len.to_le_bytes());
    bytes.resize(bytes.len() + MAX_TEXT_BYTES + 1, b'x');
    assert_eq!(
        decode_event(&bytes),
        Err(BinaryError::TextTooLong {
            field: "message",
            len: MAX_TEXT_BYTES + 1,
            max: MAX_TEXT_BYTES,
        })
    );
    let mut bytes = encode_event(&error_event("ab".to_owned()));
    let last = bytes.len() - 1;
    bytes[last] = 0xff;
    assert!(matches!(
        decode_event(&bytes),
        Err(BinaryError::Field {
            field: "message",
            ..
        })
    ));
}

#[test]
fn a_reject_of_no_known_command_is_written_so_that_no_reader_takes_it() {
    let bytes = encode_event(&Event {
        seq: 1,
        ts: 2,
        kind: EventKind::Rejected(Rejected {
            command: "no_such_command",
            account: None,
            client_order_id: None,
            order_id: None,
            symbol: None,
            reason: RejectReason::UnknownOrder,
        }),
    });
    assert!(matches!(
        decode_event(&bytes),
        Err(BinaryError::Field {
            field: "command",
            ..
        })
    ));
}

#[test]
fn only_an_accepted_may_carry_the_rarer_part_flag() {
    let mut bytes = encode_event(&Event {
        seq: 1,
        ts: 2,
        kind: EventKind::Canceled(Canceled {
            account: 1,
            order_id: 2,
            client_order_id: exchange_types::ClientOrderId::new("c").unwrap(),
            symbol: sym(),
            reason: CancelReason::Delisted,
            canceled_qty: 1,
            filled_qty: 0,
            leaves_qty: 0,
        }),
    });
    assert!(decode_event(&bytes).is_ok());
    bytes[6] = 1;
    assert_eq!(decode_event(&bytes), Err(BinaryError::Flags(1)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_048))]

    #[test]
    fn every_event_reads_back_exactly(event in event()) {
        let bytes = encode_event(&event);
        prop_assert!(is_binary(&bytes));
        let name = name_of_template(template_at(&bytes));
        prop_assert_eq!(name, event.kind.name());
        prop_assert_eq!(name, json_name(&event));
        // The buffer variant appends exactly what the allocating one returns.
        let mut buffer = vec![7];
        encode_event_into(&event, &mut buffer);
        prop_assert_eq!(&buffer[1..], &bytes[..]);
        prop_assert_eq!(decode_event(&bytes), Ok(event));
    }

    #[test]
    fn a_truncated_or_extended_message_is_refused(
        event in event(),
        cut in any::<prop::sample::Index>(),
        extra in 1..8usize,
    ) {
        let bytes = encode_event(&event);
        let short = &bytes[..cut.index(bytes.len())];
        prop_assert!(decode_event(short).is_err());
        let mut long = bytes.clone();
        long.resize(bytes.len() + extra, 0);
        prop_assert_eq!(decode_event(&long), Err(BinaryError::Trailing(extra)));
    }

    /// Any byte changed either makes the message unreadable or makes it
    /// another event whose encoding is exactly those bytes: no event has
    /// two encodings, and nothing panics. Every byte of each message is
    /// tried, so a rarely drawn field is corrupted whenever it is drawn.
    #[test]
    fn a_corrupted_message_is_refused_or_is_another_events_one_encoding(
        event in event(),
        byte in any::<u8>(),
    ) {
        let mut bytes = encode_event(&event);
        for at in 0..bytes.len() {
            let original = bytes[at];
            for value in [byte, original ^ 1] {
                bytes[at] = value;
                if let Ok(other) = decode_event(&bytes) {
                    prop_assert_eq!(encode_event(&other), &bytes[..], "byte {}", at);
                }
            }
            bytes[at] = original;
        }
    }
}

/// A `place` on BTC-USD by `account` as `coid`, its other members `rest`.
fn place(account: u64, coid: &str, side: &str, rest: &str) -> String {
    format!(
        concat!(
            r#"{{"cmd":"place","account":{},"client_order_id":"{}","symbol":"BTC-USD","#,
            r#""side":"{}",{}}}"#
        ),
        account, coid, side, rest
    )
}

/// A trading day that makes the core emit every kind of event: listing,
/// funding, sub-accounts, limits, market-maker protection, orders with
/// every rarer part, trades, stops, cancels, expiries, rejects, a call
/// with its uncross, rule changes and a delisting.
fn session() -> Vec<String> {
    let line = |text: &str| text.to_owned();
    vec![
        line(concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#,
        )),
        line(r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000"}"#),
        line(r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"100"}"#),
        line(r#"{"cmd":"link_sub_account","owner":1,"sub":3}"#),
        line(r#"{"cmd":"internal_transfer","from":1,"to":3,"asset":"USD","amount":"10"}"#),
        line(r#"{"cmd":"set_risk_limits","account":1,"max_order_qty":"50","max_open_orders":9}"#),
        line(concat!(
            r#"{"cmd":"set_mmp","account":2,"symbol":"BTC-USD","window_ns":1000000000,"#,
            r#""max_qty":"0.5"}"#,
        )),
        // The fill trips the seller's protection, which cancels its order;
        // a reset and a configuration without thresholds follow.
        place(2, "s1", "sell", r#""price":"100","qty":"1""#),
        place(1, "b1", "buy", r#""price":"100","qty":"0.6""#),
        line(r#"{"cmd":"reset_mmp","account":2,"symbol":"BTC-USD"}"#),
        line(r#"{"cmd":"set_mmp","account":2,"symbol":"BTC-USD","window_ns":1000000000}"#),
        place(
            2,
            "s2",
            "sell",
            r#""price":"101","qty":"2","display_qty":"0.5""#,
        ),
        line(r#"{"cmd":"replace","account":2,"client_order_id":"s2","price":"102"}"#),
        place(1, "i1", "buy", r#""price":"99","qty":"1","tif":"ioc""#),
        place(
            1,
            "st",
            "buy",
            r#""type":"stop_limit","price":"101","stop_price":"100.5","qty":"0.1""#,
        ),
        place(
            2,
            "tr",
            "sell",
            r#""type":"stop","trailing_amount":"5","qty":"0.1""#,
        ),
        // A trade at 101 triggers the stop.
        place(2, "s3", "sell", r#""price":"101","qty":"0.1""#),
        place(1, "b3", "buy", r#""price":"101","qty":"0.1""#),
        place(
            1,
            "g",
            "buy",
            r#""price":"90","qty":"0.1","tif":"gtd","expire_ts":1000000000000"#,
        ),
        place(1, "o1", "buy", r#""price":"80","qty":"0.1","oco_with":"g""#),
        place(1, "f", "buy", r#""type":"market","funds":"10","qty":"0""#),
        line(r#"{"cmd":"cancel","account":1,"client_order_id":"g"}"#),
        place(1, "bad", "buy", r#""price":"100.001","qty":"1""#),
        place(1, "m1", "buy", r#""price":"50","qty":"1""#),
        line(r#"{"cmd":"mass_cancel","account":1}"#),
        line(r#"{"cmd":"suspend","account":2}"#),
        line(r#"{"cmd":"reinstate","account":2}"#),
        line(r#"{"cmd":"halt","symbol":"BTC-USD"}"#),
        line(r#"{"cmd":"resume","symbol":"BTC-USD"}"#),
        line(r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"closed"}"#),
        line(r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"pre_open"}"#),
        // Crossing orders in the call publish an indicative uncross.
        place(1, "pb", "buy", r#""price":"101","qty":"2""#),
        place(2, "ps", "sell", r#""price":"99","qty":"1""#),
        line(r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"opening_auction"}"#),
        line(r#"{"cmd":"set_instrument_rules","symbol":"BTC-USD","min_notional":"1"}"#),
        line(r#"{"cmd":"set_reference_price","symbol":"BTC-USD","price":"100"}"#),
        line(r#"{"cmd":"delist","symbol":"BTC-USD"}"#),
    ]
}

#[test]
fn the_engines_events_read_back_exactly() {
    let mut engine = Engine::new();
    let mut events = Vec::new();
    for (at, line) in session().iter().enumerate() {
        let mut stamped = crate::decode_command(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        stamped.ts = 1_000 * (at as u64 + 1);
        engine.apply(&stamped, &mut events);
    }
    engine.record_error(99_000, 41, "not a command: {".to_owned(), &mut events);
    let mut seen = [false; EVENT_TEMPLATES.len()];
    let mut stream = Vec::new();
    for event in &events {
        let start = stream.len();
        encode_event_into(event, &mut stream);
        let bytes = &stream[start..];
        seen[usize::from(template_at(bytes) - FIRST_EVENT_TEMPLATE)] = true;
        assert_eq!(decode_event(bytes).as_ref(), Ok(event));
        assert_eq!(name_of_template(template_at(bytes)), json_name(event));
    }
    let missing: Vec<&str> = EVENT_TEMPLATES
        .iter()
        .zip(seen)
        .filter(|(_, seen)| !seen)
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(missing, Vec::<&str>::new());
}
