use exchange_core::Engine;
use exchange_types::{ClientOrderId, Symbol};
use serde_json::json;

use super::*;
use crate::error::parse_json;
use crate::test_support::{funded_node, BTC_USD};

fn place_from(body: &str) -> Result<Command, ApiError> {
    translate_place(7, body)
}

fn translate_place(account: AccountId, body: &str) -> Result<Command, ApiError> {
    place(account, parse_json(body.as_bytes())?)
}

fn code(result: Result<Command, ApiError>) -> &'static str {
    result.map(|_| "ok").unwrap_or_else(|e| e.code)
}

#[test]
fn place_request_becomes_the_command() {
    let body = r#"{"symbol":"BTC-USD","side":"sell","type":"limit","price":"60000.50","qty":"0.25",
                  "tif":"fok","post_only":false,"stp":"decrement","client_order_id":"c-1"}"#;
    let expected = Command::Place(Place {
        account: 7,
        client_order_id: ClientOrderId::new("c-1").unwrap(),
        symbol: Symbol::new("BTC-USD").unwrap(),
        side: Side::Sell,
        order_type: OrderType::Limit,
        price: Some(Dec::new(6_000_050, 2)),
        qty: Dec::new(25, 2),
        tif: TimeInForce::Fok,
        post_only: false,
        stp: SelfTradePrevention::Decrement,
        ext: None,
    });
    assert_eq!(place_from(body).unwrap(), expected);
}

#[test]
fn place_defaults_follow_the_replay_format() {
    let Command::Place(limit) =
        place_from(r#"{"symbol":"BTC-USD","side":"buy","price":"1","qty":"1"}"#).unwrap()
    else {
        panic!("not a place");
    };
    assert_eq!(
        (limit.order_type, limit.tif, limit.stp, limit.post_only),
        (
            OrderType::Limit,
            TimeInForce::Gtc,
            SelfTradePrevention::CancelNewest,
            false
        )
    );
    // A generated client order id is a fresh 32-character hex string.
    assert_eq!(limit.client_order_id.as_str().len(), 32);
    assert!(limit
        .client_order_id
        .as_str()
        .bytes()
        .all(|b| b.is_ascii_hexdigit()));
    let Command::Place(market) =
        place_from(r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"1"}"#).unwrap()
    else {
        panic!("not a place");
    };
    assert_eq!(
        (market.order_type, market.tif, market.price),
        (OrderType::Market, TimeInForce::Ioc, None)
    );
    let Command::Place(again) =
        place_from(r#"{"symbol":"BTC-USD","side":"buy","price":"1","qty":"1"}"#).unwrap()
    else {
        panic!("not a place");
    };
    assert_ne!(again.client_order_id, limit.client_order_id);
}

#[test]
fn malformed_place_requests_name_the_problem() {
    values_of_the_wrong_form_are_named();
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","pirce":"1","qty":"1"}"#
        )),
        "unknown_field"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","account":1,"qty":"1"}"#
        )),
        "unknown_field"
    );
    assert_eq!(
        code(place_from(r#"{"symbol":"BTC-USD","price":"1","qty":"1"}"#)),
        "missing_field"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","qty":"1","qty":"2"}"#
        )),
        "duplicate_field"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"WAY-TOO-LONG-SYMBOL","side":"buy","qty":"1"}"#
        )),
        "invalid_value"
    );
    let long_id = format!(
        r#"{{"symbol":"BTC-USD","side":"buy","qty":"1","client_order_id":"{}"}}"#,
        "x".repeat(37)
    );
    assert_eq!(code(place_from(&long_id)), "invalid_value");
    let message = place_from(r#"{"symbol":"BTC-USD","side":"buy","price":"1.2.3","qty":"1"}"#)
        .unwrap_err()
        .message;
    assert!(message.contains("`price`"), "{message}");
    // Shape only: a zero quantity or an unknown symbol is the core's call.
    assert_eq!(
        code(place_from(
            r#"{"symbol":"NOPE","side":"buy","price":"1","qty":"0"}"#
        )),
        "ok"
    );
}

/// Decimals, types and enumerations not as the protocol has them.
fn values_of_the_wrong_form_are_named() {
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","price":"1e3","qty":"1"}"#
        )),
        "invalid_decimal"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","price":"1","qty":""}"#
        )),
        "invalid_decimal"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","price":1.5,"qty":"1"}"#
        )),
        "invalid_type"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"up","price":"1","qty":"1"}"#
        )),
        "invalid_value"
    );
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","tif":"gtx","qty":"1"}"#
        )),
        "invalid_value"
    );
}

#[test]
fn replace_cancel_and_mass_cancel_translate() {
    let request: ReplaceRequest =
        parse_json(br#"{"price":"10.5","new_client_order_id":"n-1"}"#).unwrap();
    let expected = Command::Replace(Replace {
        account: 3,
        order: OrderRef::Id(42),
        new_client_order_id: Some(ClientOrderId::new("n-1").unwrap()),
        price: Some(Dec::new(105, 1)),
        qty: None,
    });
    assert_eq!(replace(3, OrderRef::Id(42), request).unwrap(), expected);
    let request: ReplaceRequest = parse_json(br#"{"stop_price":"95.5"}"#).unwrap();
    let Command::ReplaceStop(stop) = replace(3, OrderRef::Id(42), request).unwrap() else {
        panic!("a replace of the stop price translates to a stop replace");
    };
    assert_eq!(
        (Some(stop.stop_price), stop.replace.price, stop.replace.qty),
        (Some(Dec::new(955, 1)), None, None)
    );
    let bad: ReplaceRequest = parse_json(br#"{"stop_price":"x"}"#).unwrap();
    let error = replace(3, OrderRef::Id(42), bad).unwrap_err();
    assert_eq!(error.code, "invalid_decimal");
    assert!(error.message.contains("stop_price"), "{}", error.message);
    let bad: ReplaceRequest = parse_json(br#"{"qty":"-"}"#).unwrap();
    assert_eq!(
        replace(3, OrderRef::Id(42), bad).unwrap_err().code,
        "invalid_decimal"
    );
    let by_client = by_client_id("c-9").unwrap();
    assert_eq!(
        cancel(3, by_client),
        Command::Cancel(Cancel {
            account: 3,
            order: OrderRef::Client(ClientOrderId::new("c-9").unwrap())
        })
    );
    assert_eq!(by_client_id("has space").unwrap_err().code, "invalid_value");
    assert_eq!(
        mass_cancel(3, Some("ETH-USD")).unwrap(),
        Command::MassCancel(MassCancel {
            account: 3,
            symbol: Some(Symbol::new("ETH-USD").unwrap())
        })
    );
    assert_eq!(
        mass_cancel(3, None).unwrap(),
        Command::MassCancel(MassCancel {
            account: 3,
            symbol: None
        })
    );
}

fn engine_events(engine: &mut Engine, command: Command) -> Vec<Event> {
    let mut out = Vec::new();
    engine.apply(&Stamped { ts: 1, command }, &mut out);
    out
}

#[test]
fn private_stream_shows_only_the_accounts_own_updates() {
    let mut engine = Engine::new();
    for line in crate::test_support::SETUP {
        let stamped = exchange_codec::decode_command(line).unwrap();
        let mut out = Vec::new();
        engine.apply(&stamped, &mut out);
        assert!(rejection(&out).is_none(), "{line}: {out:?}");
    }
    let ask =
        r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"1","client_order_id":"ask"}"#;
    let events = engine_events(&mut engine, translate_place(2, ask).unwrap());
    let seller: Vec<Value> = private_messages(&events, 2);
    assert_eq!(seller.len(), 1, "{seller:?}");
    assert_eq!(
        (seller[0]["type"].as_str(), seller[0]["event"].as_str()),
        (Some("order"), Some("accepted"))
    );
    assert_eq!(seller[0]["price"], "100");
    assert!(private_messages(&events, 1).is_empty());

    let bid =
        r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"0.4","client_order_id":"bid"}"#;
    let events = engine_events(&mut engine, translate_place(1, bid).unwrap());
    let buyer = private_messages(&events, 1);
    let kinds: Vec<(&str, &str)> = buyer
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap_or(""),
                m["event"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, [("order", "accepted"), ("fill", "")]);
    assert_eq!(
        (buyer[1]["qty"].as_str(), buyer[1]["liquidity"].as_str()),
        (Some("0.4"), Some("taker"))
    );
    let seller = private_messages(&events, 2);
    assert_eq!(seller.len(), 1, "{seller:?}");
    assert_eq!(
        (seller[0]["type"].as_str(), seller[0]["liquidity"].as_str()),
        (Some("fill"), Some("maker"))
    );
    assert_eq!(seller[0]["side"], "sell");
    assert!(private_messages(&events, 3).is_empty());

    let events = engine_events(&mut engine, cancel(2, by_client_id("ask").unwrap()));
    let canceled = private_messages(&events, 2);
    assert_eq!(
        (
            canceled[0]["event"].as_str(),
            canceled[0]["canceled_qty"].as_str()
        ),
        (Some("canceled"), Some("0.6"))
    );
    let events = engine_events(&mut engine, cancel(2, by_client_id("ask").unwrap()));
    let rejected = private_messages(&events, 2);
    assert_eq!(
        (rejected[0]["event"].as_str(), rejected[0]["code"].as_str()),
        (Some("rejected"), Some("order_not_open"))
    );
    assert!(private_messages(&events, 1).is_empty());
}

#[test]
fn the_private_stream_tells_an_account_of_its_suspension() {
    let mut engine = Engine::new();
    for line in crate::test_support::SETUP {
        let stamped = exchange_codec::decode_command(line).unwrap();
        engine.apply(&stamped, &mut Vec::new());
    }
    let ask =
        r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"1","client_order_id":"ask"}"#;
    engine_events(&mut engine, translate_place(2, ask).unwrap());
    let events = engine_events(&mut engine, Command::Suspend { account: 2 });
    let mut touched = Vec::new();
    crate::wire::accounts_of(&events, &mut touched);
    assert_eq!(touched, [2]);
    let own = private_messages(&events, 2);
    let kinds: Vec<(&str, &str)> = own
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap_or(""),
                m["event"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("order", "canceled"), ("account", "account_status")]
    );
    assert_eq!(
        (own[1]["status"].as_str(), own[1]["canceled"].as_u64()),
        (Some("suspended"), Some(1))
    );
    assert!(private_messages(&events, 1).is_empty());
    let events = engine_events(&mut engine, Command::Reinstate { account: 2 });
    assert_eq!(private_messages(&events, 2)[0]["status"], "active");
}

#[test]
fn the_private_stream_tells_an_account_its_protection_tripped() {
    let mut engine = Engine::new();
    for line in crate::test_support::SETUP {
        let stamped = exchange_codec::decode_command(line).unwrap();
        engine.apply(&stamped, &mut Vec::new());
    }
    let symbol = Symbol::new("BTC-USD").unwrap();
    let set = Command::SetMmp(Box::new(exchange_types::SetMmp {
        account: 2,
        symbol,
        window_ns: 60_000_000_000,
        max_qty: None,
        max_count: Some(1),
    }));
    let events = engine_events(&mut engine, set);
    assert_eq!(private_messages(&events, 2)[0]["state"], "set");
    for id in ["a1", "a2", "a3"] {
        let ask = format!(
            "{{\"symbol\":\"BTC-USD\",\"side\":\"sell\",\"price\":\"100\",\"qty\":\"0.1\",\
             \"client_order_id\":\"{id}\"}}"
        );
        engine_events(&mut engine, translate_place(2, &ask).unwrap());
    }
    let bid =
        r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"0.2","client_order_id":"bid"}"#;
    let events = engine_events(&mut engine, translate_place(1, bid).unwrap());
    let own = private_messages(&events, 2);
    let tripped: Vec<&Value> = own.iter().filter(|m| m["type"] == "account").collect();
    assert_eq!(tripped.len(), 1, "{own:?}");
    assert_eq!(
        (
            tripped[0]["event"].as_str(),
            tripped[0]["symbol"].as_str(),
            tripped[0]["state"].as_str(),
            tripped[0]["fills"].as_u64()
        ),
        (Some("mmp"), Some("BTC-USD"), Some("tripped"), Some(2))
    );
    assert!(tripped[0]["filled_qty"].is_string());
    assert!(
        private_messages(&events, 1)
            .iter()
            .all(|m| m["type"] != "account"),
        "the taker has no protection to hear of"
    );
}

#[tokio::test]
async fn responses_carry_the_order_and_its_fills() {
    let node = funded_node().await;
    let handle = &node.pipeline.handle;
    let ask =
        r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"1","client_order_id":"a1"}"#;
    let rested = execute(handle, translate_place(2, ask).unwrap())
        .await
        .unwrap();
    assert_eq!(
        (rested["status"].as_str(), rested["remaining_qty"].as_str()),
        (Some("new"), Some("1"))
    );
    assert_eq!(rested["fills"], json!([]));
    let ask_id = rested["order_id"].as_u64().unwrap();

    let dup = execute(handle, translate_place(2, ask).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (dup.status.as_u16(), dup.code),
        (409, "duplicate_client_order_id")
    );

    let bid = r#"{"symbol":"BTC-USD","side":"buy","price":"101","qty":"0.3","tif":"ioc"}"#;
    let taken = execute(handle, translate_place(1, bid).unwrap())
        .await
        .unwrap();
    assert_eq!(taken["status"], "filled");
    assert_eq!(taken["filled_qty"], "0.3");
    assert_eq!(taken["remaining_qty"], "0");
    let fills = taken["fills"].as_array().unwrap();
    assert_eq!(fills.len(), 1);
    assert_eq!(
        (fills[0]["price"].as_str(), fills[0]["liquidity"].as_str()),
        (Some("100"), Some("taker"))
    );
    assert_eq!(fills[0]["order_id"], taken["order_id"]);

    replace_below_what_has_filled_is_refused(handle, ask_id).await;

    // Another account cannot touch the order: it does not exist for them.
    let foreign = execute(handle, cancel(1, OrderRef::Id(ask_id)))
        .await
        .unwrap_err();
    assert_eq!(
        (foreign.status.as_u16(), foreign.code),
        (404, "unknown_order")
    );

    let canceled = execute(handle, cancel(2, OrderRef::Id(ask_id)))
        .await
        .unwrap();
    assert_eq!(
        (canceled["status"].as_str(), canceled["order_id"].as_u64()),
        (Some("canceled"), Some(ask_id))
    );
    mass_cancel_of_an_account_or_none(handle).await;
}

/// The partly filled ask may grow to 0.5 but not shrink below the 0.3 filled.
async fn replace_below_what_has_filled_is_refused(handle: &Handle, ask_id: u64) {
    let replaced = execute(
        handle,
        replace(
            2,
            OrderRef::Id(ask_id),
            parse_json(br#"{"qty":"0.5"}"#).unwrap(),
        )
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            replaced["qty"].as_str(),
            replaced["filled_qty"].as_str(),
            replaced["status"].as_str()
        ),
        (Some("0.5"), Some("0.3"), Some("partially_filled"))
    );
    let refused = execute(
        handle,
        replace(
            2,
            OrderRef::Id(ask_id),
            parse_json(br#"{"qty":"0.1"}"#).unwrap(),
        )
        .unwrap(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (refused.status.as_u16(), refused.code),
        (422, "replace_below_filled")
    );
}

/// Mass cancel: the account's open bids, nothing for an account without
/// orders, and an unknown instrument refused.
async fn mass_cancel_of_an_account_or_none(handle: &Handle) {
    for price in ["95", "96"] {
        let body = format!(r#"{{"symbol":"BTC-USD","side":"buy","price":"{price}","qty":"1"}}"#);
        execute(handle, translate_place(1, &body).unwrap())
            .await
            .unwrap();
    }
    let mass = execute(handle, mass_cancel(1, Some(BTC_USD)).unwrap())
        .await
        .unwrap();
    assert_eq!(mass["canceled"].as_array().map(Vec::len), Some(2));
    // An account that never held funds simply has nothing to cancel.
    let empty = execute(handle, mass_cancel(99, None).unwrap())
        .await
        .unwrap();
    assert_eq!(empty, json!({ "canceled": [] }));
    let unknown = execute(handle, mass_cancel(1, Some("NOPE-USD")).unwrap())
        .await
        .unwrap_err();
    assert_eq!(
        (unknown.status.as_u16(), unknown.code),
        (422, "unknown_instrument")
    );
}

#[test]
fn display_qty_and_funds_reach_the_command() {
    let Command::Place(berg) = place_from(
        r#"{"symbol":"BTC-USD","side":"sell","price":"100","qty":"5","display_qty":"0.5"}"#,
    )
    .unwrap() else {
        panic!("a place");
    };
    assert_eq!(berg.ext().display_qty, Some(Dec::new(5, 1)));
    assert_eq!(berg.ext().funds, None);
    let Command::Place(buy) = place_from(
        r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"0","funds":"250.5"}"#,
    )
    .unwrap() else {
        panic!("a place");
    };
    assert_eq!(buy.ext().funds, Some(Dec::new(2505, 1)));
    assert_eq!(buy.order_type, OrderType::Market);
    assert_eq!(
        code(place_from(
            r#"{"symbol":"BTC-USD","side":"buy","type":"market","qty":"0","funds":"x"}"#
        )),
        "invalid_decimal"
    );
}

#[test]
fn session_times_in_force_and_an_expire_time_reach_the_command() {
    for (wire, tif) in [
        ("day", TimeInForce::Day),
        ("at_open", TimeInForce::AtOpen),
        ("at_close", TimeInForce::AtClose),
    ] {
        let Command::Place(order) = place_from(&format!(
            r#"{{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1","tif":"{wire}"}}"#
        ))
        .unwrap() else {
            panic!("a place");
        };
        assert_eq!(order.tif, tif);
        assert_eq!(order.ext, None);
    }
    let Command::Place(gtd) = place_from(concat!(
        r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1","tif":"gtd","#,
        r#""expire_ts":1800000000000000000}"#
    ))
    .unwrap() else {
        panic!("a place");
    };
    assert_eq!(gtd.tif, TimeInForce::Gtd);
    assert_eq!(gtd.ext().expire_ts, Some(1_800_000_000_000_000_000));
}

/// The edge runs the core's shape rules: an order of the wrong shape gets
/// the core's own refusal and never takes a place in the log.
#[tokio::test]
async fn a_malformed_order_is_refused_at_the_edge_and_never_logged() {
    let node = funded_node().await;
    let handle = &node.pipeline.handle;
    let logged = |applied: std::sync::Arc<exchange_node::Applied>| applied.index;
    let mass_cancel = || mass_cancel(1, None).expect("mass cancel");
    let before = logged(
        handle
            .submit(entry(mass_cancel()))
            .await
            .expect("sequenced"),
    );
    let malformed = [
        (
            concat!(
                r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1","#,
                r#""tif":"ioc","post_only":true}"#
            ),
            "post_only_not_allowed",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","qty":"1"}"#,
            "price_required",
        ),
        (
            r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1","tif":"gtd"}"#,
            "expire_ts_required",
        ),
    ];
    for (body, expected) in malformed {
        let command = place_from(body).expect("translates");
        let error = execute(handle, command).await.expect_err(body);
        assert_eq!(
            (error.code, error.status.as_u16()),
            (expected, 422),
            "{body}"
        );
    }
    let after = logged(
        handle
            .submit(entry(mass_cancel()))
            .await
            .expect("sequenced"),
    );
    assert_eq!(
        after,
        before + 1,
        "no refused order took a place in the log"
    );
    let well_formed = r#"{"symbol":"BTC-USD","side":"buy","price":"100","qty":"1"}"#;
    let placed = execute(handle, translate_place(1, well_formed).expect("translates")).await;
    assert!(placed.is_ok(), "{placed:?}");
}
