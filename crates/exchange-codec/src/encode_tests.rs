use super::*;
use crate::decode_command;
use exchange_core::Engine;
use exchange_types::event;
use exchange_types::{
    format_signed_units, format_units, AssetCode, CancelReason, ClientOrderId, OrderType,
    RejectReason, SelfTradePrevention, Side, Symbol, TimeInForce, TradingStatus,
};
use serde_json::Value;

fn event(kind: EventKind) -> Event {
    Event {
        seq: 12,
        ts: 34,
        kind,
    }
}

fn sym() -> Symbol {
    Symbol::new("BTC-USD").unwrap()
}

fn coid(text: &str) -> ClientOrderId {
    ClientOrderId::new(text).unwrap()
}

/// Encodes, checks the text is one line of valid JSON, and parses it back.
fn encoded(kind: EventKind) -> (String, Value) {
    let text = encode_event(&event(kind));
    assert!(!text.contains('\n'), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    (text, value)
}

#[test]
fn trade_has_every_field_in_order_with_exact_decimals() {
    let (text, _) = encoded(EventKind::Trade(event::Trade {
        trade_id: 7,
        symbol: sym(),
        price: 10_050_000_000,
        qty: 150_000_000,
        maker_order_id: 1,
        taker_order_id: 2,
        maker_account: 3,
        taker_account: 4,
        aggressor_side: Side::Buy,
        maker_fee: -1_507,
        taker_fee: 7_537,
        maker_leaves_qty: 0,
        taker_leaves_qty: 1,
        midpoint: false,
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"trade","trade_id":7,"symbol":"BTC-USD","#,
            r#""price":"100.5","qty":"1.5","maker_order_id":1,"taker_order_id":2,"#,
            r#""maker_account":3,"taker_account":4,"aggressor_side":"buy","#,
            r#""maker_fee":"-0.00001507","taker_fee":"0.00007537","maker_leaves_qty":"0","#,
            r#""taker_leaves_qty":"0.00000001"}"#,
        )
    );
}

#[test]
fn fast_number_writers_match_the_shared_formatters() {
    let mut samples = vec![
        0,
        1,
        9,
        10,
        99_999_999,
        100_000_000,
        100_000_001,
        u64::MAX,
        u64::MAX - 1,
    ];
    // A fixed LCG covers every digit position without a dependency.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..20_000 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        samples.push(x);
        samples.push(x >> (x % 64));
    }
    let text = |write: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = Vec::new();
        write(&mut bytes);
        String::from_utf8(bytes).expect("ASCII")
    };
    for units in samples {
        assert_eq!(
            text(&|b| push_units(b, false, units)),
            format!("\"{}\"", format_units(units))
        );
        assert_eq!(text(&|b| push_u64(b, units)), units.to_string());
        let signed = units as i64;
        assert_eq!(
            text(&|b| Obj { out: b }.signed_units(key!("f"), signed)),
            format!(",\"f\":\"{}\"", format_signed_units(signed))
        );
    }
}

#[test]
fn units_match_the_shared_formatters() {
    for units in [0, 1, 10, 99_999_999, 100_000_000, 123_456_789_012, u64::MAX] {
        let (_, v) = encoded(EventKind::Balance(event::Balance {
            account: 1,
            asset: AssetCode::new("USD").unwrap(),
            total: units,
            available: units / 3,
        }));
        assert_eq!(v["total"], format_units(units));
        assert_eq!(v["available"], format_units(units / 3));
    }
    for fee in [i64::MIN, -1, 0, 1, i64::MAX] {
        let (_, v) = encoded(EventKind::Trade(event::Trade {
            trade_id: 1,
            symbol: sym(),
            price: 1,
            qty: 1,
            maker_order_id: 1,
            taker_order_id: 2,
            maker_account: 1,
            taker_account: 2,
            aggressor_side: Side::Sell,
            maker_fee: fee,
            taker_fee: fee,
            maker_leaves_qty: 0,
            taker_leaves_qty: 0,
            midpoint: false,
        }));
        assert_eq!(v["maker_fee"], format_signed_units(fee));
    }
}

#[test]
fn rejected_omits_absent_ids_and_carries_reason_code_message() {
    let (text, v) = encoded(EventKind::Rejected(event::Rejected {
        command: "halt",
        account: None,
        client_order_id: None,
        order_id: None,
        symbol: Some(sym()),
        reason: RejectReason::AlreadyInStatus,
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"rejected","command":"halt","symbol":"BTC-USD","#,
            r#""reason":"already_in_status","code":505,"#,
            r#""message":"the instrument is already in the requested trading status"}"#,
        )
    );
    assert!(v.get("account").is_none());
    let (_, v) = encoded(EventKind::Rejected(event::Rejected {
        command: "cancel",
        account: Some(5),
        client_order_id: Some(coid("c9")),
        order_id: Some(77),
        symbol: None,
        reason: RejectReason::UnknownOrder,
    }));
    assert_eq!(v["account"], 5);
    assert_eq!(v["client_order_id"], "c9");
    assert_eq!(v["order_id"], 77);
    assert_eq!(v["code"], 302);
    assert!(v.get("symbol").is_none());
}

#[test]
fn accepted_omits_price_for_market_orders() {
    let accepted = |order_type, price| {
        EventKind::Accepted(event::Accepted {
            account: 1,
            client_order_id: coid("c1"),
            order_id: 3,
            symbol: sym(),
            side: Side::Sell,
            order_type,
            price,
            qty: 50_000_000,
            tif: TimeInForce::Ioc,
            post_only: false,
            stp: SelfTradePrevention::CancelBoth,
            ext: None,
        })
    };
    let (text, _) = encoded(accepted(OrderType::Market, None));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"accepted","account":1,"client_order_id":"c1","#,
            r#""order_id":3,"symbol":"BTC-USD","side":"sell","type":"market","qty":"0.5","#,
            r#""tif":"ioc","post_only":false,"stp":"cancel_both"}"#,
        )
    );
    let (_, v) = encoded(accepted(OrderType::Limit, Some(10_000_000_000)));
    assert_eq!(v["price"], "100");
    assert_eq!(v["type"], "limit");
}

#[test]
fn order_events_have_their_fields() {
    let (_, v) = encoded(EventKind::Canceled(event::Canceled {
        account: 1,
        order_id: 2,
        client_order_id: coid("c"),
        symbol: sym(),
        reason: CancelReason::SelfTrade,
        canceled_qty: 1,
        filled_qty: 2,
        leaves_qty: 3,
    }));
    assert_eq!(v["event"], "canceled");
    assert_eq!(v["reason"], "self_trade_prevention");
    assert_eq!(
        (&v["canceled_qty"], &v["filled_qty"], &v["leaves_qty"]),
        (
            &Value::from("0.00000001"),
            &Value::from("0.00000002"),
            &Value::from("0.00000003")
        )
    );
    let (_, v) = encoded(EventKind::Replaced(event::Replaced {
        account: 1,
        order_id: 2,
        old_client_order_id: coid("a"),
        client_order_id: coid("b"),
        symbol: sym(),
        price: 100_000_000,
        qty: 200_000_000,
        leaves_qty: 100_000_000,
        stop_price: None,
    }));
    assert_eq!(
        (&v["old_client_order_id"], &v["client_order_id"]),
        (&Value::from("a"), &Value::from("b"))
    );
    assert_eq!(v["leaves_qty"], "1");
    assert!(v.get("stop_price").is_none(), "{v}");
    let (_, v) = encoded(EventKind::Replaced(event::Replaced {
        account: 1,
        order_id: 2,
        old_client_order_id: coid("a"),
        client_order_id: coid("a"),
        symbol: sym(),
        price: 100_000_000,
        qty: 100_000_000,
        leaves_qty: 100_000_000,
        stop_price: std::num::NonZeroU64::new(9_550_000_000),
    }));
    assert_eq!(v["stop_price"], "95.5");
    let (_, v) = encoded(EventKind::Expired(event::Expired {
        account: 1,
        order_id: 2,
        client_order_id: coid("c"),
        symbol: sym(),
        expired_qty: 100_000_000,
        filled_qty: 0,
    }));
    assert_eq!(
        (&v["event"], &v["expired_qty"]),
        (&Value::from("expired"), &Value::from("1"))
    );
}

#[test]
fn book_status_and_listing_events_have_their_fields() {
    let (text, _) = encoded(EventKind::Book(event::Book {
        symbol: sym(),
        side: Side::Buy,
        price: 1,
        qty: 0,
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"book","symbol":"BTC-USD","side":"buy","#,
            r#""price":"0.00000001","qty":"0"}"#,
        )
    );
    let (_, v) = encoded(EventKind::Status(event::Status {
        symbol: sym(),
        status: TradingStatus::Halted,
    }));
    assert_eq!(v["status"], "halted");
    let (_, v) = encoded(EventKind::InstrumentAdded(event::InstrumentAdded {
        symbol: sym(),
        base: AssetCode::new("BTC").unwrap(),
        quote: AssetCode::new("USD").unwrap(),
        reference_price: None,
    }));
    assert_eq!(
        (&v["base"], &v["quote"]),
        (&Value::from("BTC"), &Value::from("USD"))
    );
    // Left out without one, so a listing without one encodes as before.
    assert_eq!(v.get("reference_price"), None);
    let (_, v) = encoded(EventKind::InstrumentAdded(event::InstrumentAdded {
        symbol: sym(),
        base: AssetCode::new("BTC").unwrap(),
        quote: AssetCode::new("USD").unwrap(),
        reference_price: Some(10_050_000_000),
    }));
    assert_eq!(v["reference_price"], "100.5");
}

#[test]
fn strings_are_escaped() {
    let message = "bad \"x\" \\ \n\t\r\u{1} é".to_string();
    let (text, v) = encoded(EventKind::Error(event::Error {
        line: 9,
        message: message.clone(),
    }));
    assert_eq!(v["message"], message);
    assert_eq!(v["line"], 9);
    assert!(text.contains(r#"\"x\" \\ \n\t\r\u0001 é"#), "{text}");
    let (_, v) = encoded(EventKind::Rejected(event::Rejected {
        command: "cancel",
        account: Some(1),
        client_order_id: Some(coid("q\"\\")),
        order_id: None,
        symbol: None,
        reason: RejectReason::UnknownOrder,
    }));
    assert_eq!(v["client_order_id"], "q\"\\");
}

#[test]
fn engine_events_round_trip_through_the_codec() {
    let lines = [
        concat!(
            r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"#,
            r#""taker_fee_bps":5}"#,
        ),
        r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"1000","ts":5}"#,
        r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"3","ts":6}"#,
        concat!(
            r#"{"cmd":"place","account":2,"client_order_id":"a","symbol":"BTC-USD","#,
            r#""side":"sell","price":"100.25","qty":"1.5","ts":7}"#,
        ),
        concat!(
            r#"{"cmd":"place","account":1,"client_order_id":"b","symbol":"BTC-USD","#,
            r#""side":"buy","type":"market","qty":"1","ts":8}"#,
        ),
        concat!(
            r#"{"cmd":"place","account":1,"client_order_id":"c","symbol":"BTC-USD","#,
            r#""side":"buy","price":"100.001","qty":"1","ts":9}"#,
        ),
    ];
    let mut engine = Engine::new();
    let mut events = Vec::new();
    for line in lines {
        engine.apply(&decode_command(line).expect("test command"), &mut events);
    }
    let encoded: Vec<Value> = events
        .iter()
        .map(|e| serde_json::from_str(&encode_event(e)).expect("json"))
        .collect();
    for (i, v) in encoded.iter().enumerate() {
        assert_eq!(v["seq"], i as u64 + 1);
    }
    let trade = encoded
        .iter()
        .find(|v| v["event"] == "trade")
        .expect("a trade");
    assert_eq!(trade["price"], "100.25");
    assert_eq!(trade["qty"], "1");
    assert_eq!(trade["ts"], 8);
    assert_eq!(trade["maker_leaves_qty"], "0.5");
    // 5 bps of 100.25 is 0.0501250 quote; -1 bp is a 0.010025 rebate.
    assert_eq!(trade["taker_fee"], "0.050125");
    assert_eq!(trade["maker_fee"], "-0.010025");
    let last = encoded.last().expect("events");
    assert_eq!(last["event"], "rejected");
    assert_eq!(last["reason"], "price_not_on_tick");
    assert_eq!(last["code"], 106);
    // The buffer variant appends exactly what the allocating one returns.
    let mut buffer = b"x".to_vec();
    encode_event_into(&events[0], &mut buffer);
    assert_eq!(
        buffer,
        format!("x{}", encode_event(&events[0])).into_bytes()
    );
}

#[test]
fn member_risk_events_have_their_fields() {
    let (text, _) = encoded(EventKind::RiskLimits(event::RiskLimits {
        account: 7,
        max_order_qty: Some(500_000_000),
        max_order_notional: None,
        max_open_orders: Some(3),
        price_band_bps: Some(250),
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"risk_limits","account":7,"max_order_qty":"5","#,
            r#""max_open_orders":3,"price_band_bps":250}"#,
        )
    );
    let (text, _) = encoded(EventKind::AccountStatus(event::AccountStatus {
        account: 7,
        suspended: true,
        canceled: 2,
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"account_status","account":7,"#,
            r#""status":"suspended","canceled":2}"#,
        )
    );
    let (text, _) = encoded(EventKind::Mmp(event::Mmp {
        account: 7,
        symbol: sym(),
        state: exchange_types::MmpState::Set {
            window_ns: 1_000,
            max_qty: Some(100_000_000),
            max_count: None,
        },
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"mmp","account":7,"symbol":"BTC-USD","#,
            r#""state":"set","window_ns":1000,"max_qty":"1"}"#,
        )
    );
    let (text, _) = encoded(EventKind::Mmp(event::Mmp {
        account: 7,
        symbol: sym(),
        state: exchange_types::MmpState::Tripped {
            filled_qty: 150_000_000,
            fills: 2,
        },
    }));
    assert_eq!(
        text,
        concat!(
            r#"{"seq":12,"ts":34,"event":"mmp","account":7,"symbol":"BTC-USD","#,
            r#""state":"tripped","filled_qty":"1.5","fills":2}"#,
        )
    );
    let (_, v) = encoded(EventKind::Canceled(event::Canceled {
        account: 1,
        order_id: 2,
        client_order_id: coid("c"),
        symbol: sym(),
        reason: CancelReason::AccountSuspended,
        canceled_qty: 1,
        filled_qty: 0,
        leaves_qty: 0,
    }));
    assert_eq!(v["reason"], "account_suspended");
}
