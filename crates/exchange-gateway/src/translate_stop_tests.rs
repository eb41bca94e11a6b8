//! Stop, stop-limit, if-touched, trailing and one-cancels-other fields
//! through REST and WebSocket order entry, and the private stream's `triggered` message.

use exchange_core::Engine;
use exchange_types::{ClientOrderId, Trailing};
use serde_json::json;

use super::*;
use crate::error::parse_json;

fn place_from(account: AccountId, body: &str) -> Result<Command, ApiError> {
    place(account, parse_json(body.as_bytes())?)
}

fn ext_of(command: &Command) -> PlaceExt {
    match command {
        Command::Place(p) => p.ext().clone(),
        other => panic!("not a place: {other:?}"),
    }
}

#[test]
fn if_touched_types_are_read_by_their_names() {
    let take_profit = r#"{"symbol":"BTC-USD","side":"sell","type":"limit_if_touched",
                         "price":"104","qty":"1","stop_price":"105"}"#;
    let command = place_from(7, take_profit).unwrap();
    let Command::Place(p) = &command else {
        panic!()
    };
    assert_eq!(
        (p.order_type, p.tif, p.price),
        (
            OrderType::LimitIfTouched,
            TimeInForce::Gtc,
            Some(Dec::new(104, 0))
        )
    );
    assert_eq!(ext_of(&command).stop_price, Some(Dec::new(105, 0)));
    let market = r#"{"symbol":"BTC-USD","side":"buy","type":"market_if_touched","qty":"1",
                    "stop_price":"95"}"#;
    let Command::Place(p) = place_from(7, market).unwrap() else {
        panic!()
    };
    assert_eq!(
        (p.order_type, p.tif, p.price),
        (OrderType::MarketIfTouched, TimeInForce::Gtc, None)
    );
}

#[test]
fn stop_fields_become_the_commands_ext() {
    let body = r#"{"symbol":"BTC-USD","side":"sell","type":"stop_limit","price":"95","qty":"1",
                  "stop_price":"96.5","oco_with":"tp-1","client_order_id":"sl-1"}"#;
    let command = place_from(7, body).unwrap();
    let Command::Place(p) = &command else {
        panic!()
    };
    assert_eq!(
        (p.order_type, p.tif),
        (OrderType::StopLimit, TimeInForce::Gtc)
    );
    assert_eq!(
        ext_of(&command),
        PlaceExt {
            stop_price: Some(Dec::new(965, 1)),
            oco_with: Some(ClientOrderId::new("tp-1").unwrap()),
            ..PlaceExt::default()
        }
    );
    let trailing =
        r#"{"symbol":"BTC-USD","side":"sell","type":"stop","qty":"1","trailing_bps":150}"#;
    assert_eq!(
        ext_of(&place_from(7, trailing).unwrap()).trailing,
        Some(Trailing::Bps(150))
    );
    let amount =
        r#"{"symbol":"BTC-USD","side":"sell","type":"stop","qty":"1","trailing_amount":"2.5"}"#;
    assert_eq!(
        ext_of(&place_from(7, amount).unwrap()).trailing,
        Some(Trailing::Amount(Dec::new(25, 1)))
    );
    // A plain order carries no ext at all.
    let plain = r#"{"symbol":"BTC-USD","side":"buy","price":"1","qty":"1"}"#;
    let Command::Place(p) = place_from(7, plain).unwrap() else {
        panic!()
    };
    assert!(p.ext.is_none());
}

#[test]
fn conflicting_or_malformed_stop_fields_are_refused_at_the_edge() {
    let both = concat!(
        r#"{"symbol":"BTC-USD","side":"sell","type":"stop","qty":"1","#,
        r#""trailing_bps":1,"trailing_amount":"1"}"#
    );
    assert_eq!(place_from(7, both).unwrap_err().code, "invalid_value");
    let bad = r#"{"symbol":"BTC-USD","side":"sell","type":"stop","qty":"1","stop_price":"x"}"#;
    assert_eq!(place_from(7, bad).unwrap_err().code, "invalid_decimal");
    let bad_type = r#"{"symbol":"BTC-USD","side":"sell","type":"stop_market","qty":"1"}"#;
    assert!(place_from(7, bad_type).is_err());
}

#[test]
fn websocket_entry_reads_the_stop_fields_on_its_fast_path() {
    let text = concat!(
        r#"{"type":"place","request_id":1,"symbol":"BTC-USD","side":"buy","#,
        r#""order_type":"stop","qty":"1","stop_price":"101"}"#
    );
    let (_, command) = ws_order_entry(7, text).expect("fast path");
    assert_eq!(ext_of(&command).stop_price, Some(Dec::new(101, 0)));
    // A cancel with a place's stop field is left to the general path.
    let cancel = r#"{"type":"cancel","order_id":1,"stop_price":"101"}"#;
    assert!(ws_order_entry(7, cancel).is_none());
}

#[test]
fn the_private_stream_shows_a_stop_accepted_then_triggered() {
    let mut engine = Engine::new();
    let apply = |engine: &mut Engine, command: Command| {
        let mut out = Vec::new();
        engine.apply(&Stamped { ts: 1, command }, &mut out);
        out
    };
    for line in crate::test_support::SETUP {
        let stamped = exchange_codec::decode_command(line).unwrap();
        let out = apply(&mut engine, stamped.command);
        assert!(rejection(&out).is_none(), "{line}: {out:?}");
    }
    let stop = concat!(
        r#"{"symbol":"BTC-USD","side":"buy","type":"stop","qty":"0.1","stop_price":"101","#,
        r#""client_order_id":"sb"}"#
    );
    let events = apply(&mut engine, place_from(1, stop).unwrap());
    assert!(rejection(&events).is_none(), "{events:?}");
    let accepted = private_messages(&events, 1);
    assert_eq!(accepted[0]["event"], "accepted");
    assert_eq!(accepted[0]["order_type"], "stop");
    assert_eq!(accepted[0]["stop_price"], "101");
    assert!(accepted[0]["price"].is_null(), "{}", accepted[0]);

    let ask = r#"{"symbol":"BTC-USD","side":"sell","price":"101","qty":"0.1"}"#;
    apply(&mut engine, place_from(2, ask).unwrap());
    let bid = r#"{"symbol":"BTC-USD","side":"buy","price":"101","qty":"0.1"}"#;
    let events = apply(&mut engine, place_from(1, bid).unwrap());
    let messages = private_messages(&events, 1);
    let triggered = messages
        .iter()
        .find(|m| m["event"] == "triggered")
        .expect("a triggered message");
    assert_eq!(triggered["client_order_id"], "sb");
    assert_eq!(
        (
            &triggered["stop_price"],
            &triggered["last_price"],
            &triggered["qty"]
        ),
        (&json!("101"), &json!("101"), &json!("0.1"))
    );
    // Nothing left to buy within its protection: it expires.
    assert!(messages.iter().any(|m| m["event"] == "expired"));
}

#[test]
fn a_good_till_date_order_is_announced_with_its_expiry() {
    let mut engine = Engine::new();
    let mut out = Vec::new();
    for line in crate::test_support::SETUP {
        let stamped = exchange_codec::decode_command(line).unwrap();
        engine.apply(
            &Stamped {
                ts: 1,
                command: stamped.command,
            },
            &mut out,
        );
    }
    out.clear();
    let gtd = concat!(
        r#"{"symbol":"BTC-USD","side":"buy","price":"90","qty":"0.1","#,
        r#""tif":"gtd","expire_ts":5000}"#
    );
    engine.apply(
        &Stamped {
            ts: 2,
            command: place_from(1, gtd).unwrap(),
        },
        &mut out,
    );
    let accepted = private_messages(&out, 1);
    assert_eq!(accepted[0]["event"], "accepted", "{out:?}");
    assert_eq!(
        (&accepted[0]["tif"], &accepted[0]["expire_ts"]),
        (&json!("gtd"), &json!(5000))
    );

    out.clear();
    let gtc = r#"{"symbol":"BTC-USD","side":"buy","price":"90","qty":"0.1"}"#;
    engine.apply(
        &Stamped {
            ts: 3,
            command: place_from(1, gtc).unwrap(),
        },
        &mut out,
    );
    let accepted = private_messages(&out, 1);
    assert!(accepted[0].get("expire_ts").is_none(), "{}", accepted[0]);
}

#[test]
fn a_hidden_place_keeps_its_flag_and_websocket_takes_the_general_path() {
    let rest = r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"20","hidden":true}"#;
    assert!(ext_of(&place_from(7, rest).unwrap()).hidden);
    let shown = rest.replace(r#","hidden":true"#, "");
    assert_eq!(place_from(7, &shown).map(|c| ext_of(&c).hidden), Ok(false));
    let ws = concat!(
        r#"{"type":"place","request_id":1,"symbol":"BTC-USD","side":"buy","#,
        r#""price":"100","qty":"20","hidden":true}"#
    );
    // The fast path knows no hidden flag: the general path reads it.
    assert!(ws_order_entry(7, ws).is_none());
    let mut fields: serde_json::Map<String, serde_json::Value> = serde_json::from_str(ws).unwrap();
    fields.remove("type");
    fields.remove("request_id");
    let command =
        crate::ws_commands::order_entry_command(7, crate::ws_kind::EntryType::Place, fields)
            .unwrap();
    assert!(ext_of(&command).hidden);
}
