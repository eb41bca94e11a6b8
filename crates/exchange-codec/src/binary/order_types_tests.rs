//! Market-to-limit, if-touched and midpoint orders and the minimum acceptable
//! quantity in both encodings, and a place written before the quantity
//! was appended.

use exchange_types::ids::InlineStr;
use exchange_types::{
    Command, Dec, OrderType, Place, PlaceExt, SelfTradePrevention, Side, Stamped, TimeInForce,
};

use super::wire::DEC_BYTES;
use super::*;

fn place(order_type: OrderType, ext: Option<PlaceExt>) -> Stamped {
    Stamped {
        ts: 7,
        command: Command::Place(Place {
            account: 3,
            client_order_id: InlineStr::new("c1").unwrap(),
            symbol: InlineStr::new("BTC-USD").unwrap(),
            side: Side::Buy,
            order_type,
            price: None,
            qty: Dec::parse("2").unwrap(),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: ext.map(Box::new),
        }),
    }
}

fn min_qty(text: &str) -> PlaceExt {
    PlaceExt {
        min_qty: Some(Dec::parse(text).unwrap()),
        ..PlaceExt::default()
    }
}

#[test]
fn the_json_line_names_the_type_and_the_minimum() {
    let stamped = place(OrderType::MarketToLimit, Some(min_qty("0.5")));
    let line = crate::encode_command(&stamped);
    assert_eq!(
        line,
        concat!(
            r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
            r#""symbol":"BTC-USD","side":"buy","type":"market_to_limit","qty":"2","#,
            r#""tif":"gtc","post_only":false,"stp":"cancel_newest","min_qty":"0.5"}"#
        )
    );
    assert_eq!(crate::decode_command(&line), Ok(stamped));
    // Left out, the time in force of a market-to-limit order is GTC: its
    // rest may rest.
    let short = concat!(
        r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
        r#""symbol":"BTC-USD","side":"buy","type":"market_to_limit","qty":"2"}"#
    );
    assert_eq!(
        crate::decode_command(short),
        Ok(place(OrderType::MarketToLimit, None))
    );
}

#[test]
fn both_read_back_from_the_binary_message() {
    for stamped in [
        place(OrderType::MarketToLimit, None),
        place(OrderType::Limit, Some(min_qty("1.25"))),
    ] {
        let bytes = encode_command(&stamped);
        assert_eq!(decode_command(&bytes), Ok(stamped));
    }
    // The type's code is its place at the end of the list.
    let bytes = encode_command(&place(OrderType::MarketToLimit, None));
    let at = HEADER_BYTES + 8 + 36 + 16 + 1;
    assert_eq!(bytes[at], 4);
}

#[test]
fn if_touched_orders_round_trip_through_both_encodings() {
    let stop = |text: &str| PlaceExt {
        stop_price: Some(Dec::parse(text).unwrap()),
        ..PlaceExt::default()
    };
    let mit = place(OrderType::MarketIfTouched, Some(stop("95")));
    let mut lit = place(OrderType::LimitIfTouched, Some(stop("105")));
    if let Command::Place(p) = &mut lit.command {
        (p.side, p.price) = (Side::Sell, Some(Dec::parse("104.5").unwrap()));
    }
    let line = crate::encode_command(&lit);
    assert_eq!(
        line,
        concat!(
            r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
            r#""symbol":"BTC-USD","side":"sell","type":"limit_if_touched","price":"104.5","#,
            r#""qty":"2","tif":"gtc","post_only":false,"stp":"cancel_newest","#,
            r#""stop_price":"105"}"#
        )
    );
    for stamped in [mit, lit] {
        let line = crate::encode_command(&stamped);
        assert_eq!(crate::decode_command(&line), Ok(stamped.clone()), "{line}");
        let bytes = encode_command(&stamped);
        assert_eq!(decode_command(&bytes), Ok(stamped));
    }
    // Codes 5 and 6: after market-to-limit, in the order of the list.
    let at = HEADER_BYTES + 8 + 36 + 16 + 1;
    for (order_type, code) in [
        (OrderType::MarketIfTouched, 5),
        (OrderType::LimitIfTouched, 6),
    ] {
        assert_eq!(
            encode_command(&place(order_type, Some(stop("1"))))[at],
            code
        );
    }
    // Left out, the time in force of either is GTC: it waits for its price.
    let short = concat!(
        r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
        r#""symbol":"BTC-USD","side":"buy","type":"market_if_touched","qty":"2","#,
        r#""stop_price":"95"}"#
    );
    assert_eq!(
        crate::decode_command(short),
        Ok(place(OrderType::MarketIfTouched, Some(stop("95"))))
    );
}

/// A place's rarer part written before the minimum was appended ends at
/// the one-cancels-other id: it reads as an order without a minimum, as
/// SBE reads a field appended to a block, so older logs still replay.
#[test]
fn a_rarer_part_without_the_minimum_reads_as_none() {
    let expire = PlaceExt {
        expire_ts: Some(99),
        ..PlaceExt::default()
    };
    let stamped = place(OrderType::Limit, Some(expire));
    let mut bytes = encode_command(&stamped);
    let tail = bytes.split_off(bytes.len() - DEC_BYTES);
    assert_eq!(tail, [0; DEC_BYTES], "no minimum was written");
    let block = u16::try_from(bytes.len() - HEADER_BYTES).unwrap();
    bytes[4..6].copy_from_slice(&block.to_le_bytes());
    assert_eq!(decode_command(&bytes), Ok(stamped));
    // Anything but the whole field after it is still refused.
    let mut cut = encode_command(&place(OrderType::Limit, Some(min_qty("1"))));
    cut.pop();
    let block = u16::try_from(cut.len() - HEADER_BYTES).unwrap();
    cut[4..6].copy_from_slice(&block.to_le_bytes());
    assert_eq!(decode_command(&cut), Err(BinaryError::Truncated));
}

#[test]
fn midpoint_orders_round_trip_with_and_without_a_limit() {
    let unlimited = place(OrderType::Midpoint, Some(min_qty("1")));
    let mut limited = place(OrderType::Midpoint, None);
    if let Command::Place(p) = &mut limited.command {
        p.price = Some(Dec::parse("100.5").unwrap());
    }
    let line = crate::encode_command(&unlimited);
    assert_eq!(
        line,
        concat!(
            r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
            r#""symbol":"BTC-USD","side":"buy","type":"midpoint","qty":"2","#,
            r#""tif":"gtc","post_only":false,"stp":"cancel_newest","min_qty":"1"}"#
        )
    );
    for stamped in [unlimited, limited] {
        let line = crate::encode_command(&stamped);
        assert_eq!(crate::decode_command(&line), Ok(stamped.clone()), "{line}");
        let bytes = encode_command(&stamped);
        assert_eq!(decode_command(&bytes), Ok(stamped));
    }
    // Code 7: after the if-touched types, in the order of the list.
    let at = HEADER_BYTES + 8 + 36 + 16 + 1;
    assert_eq!(encode_command(&place(OrderType::Midpoint, None))[at], 7);
    // Left out, the time in force is GTC: it rests in the midpoint book.
    let short = concat!(
        r#"{"cmd":"place","ts":7,"account":3,"client_order_id":"c1","#,
        r#""symbol":"BTC-USD","side":"buy","type":"midpoint","qty":"2"}"#
    );
    assert_eq!(
        crate::decode_command(short),
        Ok(place(OrderType::Midpoint, None))
    );
}
