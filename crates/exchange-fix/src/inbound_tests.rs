//! FIX order entry to core commands, value by value.

use super::*;
use crate::testkit::{dec, fix};

const TRADER: Role = Role::Trading { account: 7 };

fn order(extra: &str) -> Message {
    fix(
        "D",
        2,
        &format!("11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=0.5|40=2|44=100.25|{extra}"),
    )
}

fn submitted(inbound: Inbound) -> (Command, Request) {
    match inbound {
        Inbound::Submit(submission) => (submission.command, submission.request),
        other => panic!("expected a command, got {other:?}"),
    }
}

fn reply(inbound: Inbound) -> Outgoing {
    match inbound {
        Inbound::Reply(out) => out,
        other => panic!("expected a reply, got {other:?}"),
    }
}

fn rejected(inbound: Inbound) -> (Option<u32>, u32) {
    match inbound {
        Inbound::Reject(problem) => (problem.tag, problem.reason),
        other => panic!("expected a session reject, got {other:?}"),
    }
}

#[test]
fn a_limit_order_becomes_a_place() {
    let (command, request) = submitted(translate(&order("59=3|18=6|7928=D|1=7|"), &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert_eq!(place.account, 7);
    assert_eq!(place.client_order_id.as_str(), "c1");
    assert_eq!(place.symbol.as_str(), "BTC-USD");
    assert_eq!(
        (place.side, place.order_type),
        (Side::Buy, OrderType::Limit)
    );
    assert_eq!((place.price, place.qty), (Some(dec("100.25")), dec("0.5")));
    assert_eq!(
        (place.tif, place.post_only, place.stp),
        (TimeInForce::Ioc, true, SelfTradePrevention::Decrement)
    );
    let Request::Place(echo) = request else {
        panic!("not a place request")
    };
    assert_eq!(
        (echo.side.as_str(), echo.qty.as_str(), echo.price.as_deref()),
        ("1", "0.5", Some("100.25"))
    );
}

#[test]
fn time_in_force_defaults_by_order_type() {
    let (Command::Place(limit), _) = submitted(translate(&order(""), &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(limit.tif, TimeInForce::Gtc);
    let market = fix(
        "D",
        2,
        "11=m1|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|40=1|",
    );
    let (Command::Place(market), _) = submitted(translate(&market, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(
        (market.tif, market.price, market.side),
        (TimeInForce::Ioc, None, Side::Sell)
    );
}

#[test]
fn stop_and_stop_limit_orders_carry_their_stop_px() {
    let stop = fix(
        "D",
        2,
        "11=s1|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|40=3|99=95.5|",
    );
    let (command, _) = submitted(translate(&stop, &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.tif, place.price),
        (OrderType::Stop, TimeInForce::Gtc, None)
    );
    assert_eq!(place.ext().stop_price, Some(dec("95.5")));
    let stop_limit = fix(
        "D",
        2,
        "11=s2|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=4|44=106|99=105|59=3|",
    );
    let (command, _) = submitted(translate(&stop_limit, &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.tif, place.price),
        (OrderType::StopLimit, TimeInForce::Ioc, Some(dec("106")))
    );
    assert_eq!(place.ext().stop_price, Some(dec("105")));
    // A limit order without StopPx carries no ext.
    let (command, _) = submitted(translate(&order(""), &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert!(place.ext.is_none());
    let unreadable = fix(
        "D",
        2,
        "11=s3|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|40=3|99=abc|",
    );
    let out = reply(translate(&unreadable, &TRADER, 0));
    assert!(out.get(58).unwrap_or_default().contains("StopPx"));
}

/// FIX 4.4 has one if-touched OrdType (J); with a Price (44) it is a
/// limit-if-touched order.
#[test]
fn market_if_touched_is_ord_type_j_and_a_price_makes_it_limit_if_touched() {
    let market = fix(
        "D",
        2,
        "11=t1|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|40=J|99=105|",
    );
    let (Command::Place(place), _) = submitted(translate(&market, &TRADER, 0)) else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.tif, place.price),
        (OrderType::MarketIfTouched, TimeInForce::Gtc, None)
    );
    assert_eq!(place.ext().stop_price, Some(dec("105")));
    let limit = fix(
        "D",
        2,
        "11=t2|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=J|44=96|99=95|",
    );
    let (Command::Place(place), _) = submitted(translate(&limit, &TRADER, 0)) else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.price),
        (OrderType::LimitIfTouched, Some(dec("96")))
    );
    assert_eq!(place.ext().stop_price, Some(dec("95")));
}

#[test]
fn unsupported_fix_values_refuse_the_order() {
    for (extra, tag) in [
        ("59=5|", "TimeInForce"),
        ("18=G|", "ExecInst"),
        ("1=8|", "Account"),
    ] {
        let out = reply(translate(&order(extra), &TRADER, 0));
        assert_eq!(out.msg_type, "8");
        assert_eq!(
            (out.get(150).as_deref(), out.get(39).as_deref()),
            (Some("8"), Some("8"))
        );
        assert!(
            out.get(58).unwrap_or_default().contains(tag),
            "{extra}: {:?}",
            out.get(58)
        );
        assert_eq!(out.get(11).as_deref(), Some("c1"));
    }
    let stop = fix(
        "D",
        2,
        "11=c1|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=P|",
    );
    assert_eq!(
        reply(translate(&stop, &TRADER, 0)).get(103).as_deref(),
        Some("11")
    );
    let short = fix(
        "D",
        2,
        "11=c1|55=BTC-USD|54=5|60=20240101-00:00:00|38=1|40=2|44=1|",
    );
    assert_eq!(
        reply(translate(&short, &TRADER, 0)).get(103).as_deref(),
        Some("11")
    );
}

#[test]
fn values_fix_does_not_define_are_session_rejects() {
    let bad_side = fix(
        "D",
        2,
        "11=c1|55=BTC-USD|54=Z|60=20240101-00:00:00|38=1|40=2|44=1|",
    );
    assert_eq!(rejected(translate(&bad_side, &TRADER, 0)), (Some(54), 5));
    assert_eq!(
        rejected(translate(&order("59=9|"), &TRADER, 0)),
        (Some(59), 5)
    );
    assert_eq!(
        rejected(translate(&order("18=6 ?|"), &TRADER, 0)),
        (Some(18), 5)
    );
    assert_eq!(
        rejected(translate(&order("7928=X|"), &TRADER, 0)),
        (Some(7928), 5)
    );
}

#[test]
fn identifiers_and_numbers_the_exchange_cannot_hold() {
    let long_id = fix(
        "D",
        2,
        &format!(
            "11={}|55=BTC-USD|54=1|60=20240101-00:00:00|38=1|40=2|44=1|",
            "x".repeat(37)
        ),
    );
    assert!(reply(translate(&long_id, &TRADER, 0))
        .get(58)
        .unwrap_or_default()
        .contains("ClOrdID"));
    let long_symbol = fix(
        "D",
        2,
        "11=c|55=ABCDEFGHIJKLMNOPQ|54=1|60=20240101-00:00:00|38=1|40=2|44=1|",
    );
    assert_eq!(
        reply(translate(&long_symbol, &TRADER, 0))
            .get(103)
            .as_deref(),
        Some("1")
    );
    let huge = fix(
        "D",
        2,
        &format!(
            "11=c|55=BTC-USD|54=1|60=20240101-00:00:00|38={}|40=2|44=1|",
            "9".repeat(45)
        ),
    );
    assert_eq!(
        reply(translate(&huge, &TRADER, 0)).get(103).as_deref(),
        Some("13")
    );
}

#[test]
fn cancel_names_the_order_by_order_id_or_orig_cl_ord_id() {
    let by_client = fix("F", 3, "41=c1|11=x1|55=BTC-USD|54=1|60=20240101-00:00:00|");
    let (command, request) = submitted(translate(&by_client, &TRADER, 0));
    let Command::Cancel(cancel) = command else {
        panic!()
    };
    assert_eq!(
        cancel.order,
        OrderRef::Client(ClientOrderId::new("c1").unwrap())
    );
    assert_eq!(
        request,
        Request::Cancel(CancelEcho {
            cl_ord_id: "x1".into(),
            orig_cl_ord_id: "c1".into()
        })
    );
    let by_id = fix(
        "F",
        3,
        "41=c1|37=42|11=x1|55=BTC-USD|54=1|60=20240101-00:00:00|",
    );
    let (Command::Cancel(cancel), _) = submitted(translate(&by_id, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(cancel.order, OrderRef::Id(42));
}

#[test]
fn an_order_id_beyond_the_exchange_range_is_refused_before_the_log() {
    for (id, refused) in [
        ("9223372036854775807", false),
        ("9223372036854775808", true),
        ("18446744073709551615", true),
        ("18446744073709551616", true),
    ] {
        for kind in ["F", "G"] {
            let message = fix(
                kind,
                3,
                &format!(
                    "37={id}|41=c1|11=x1|55=BTC-USD|54=1|40=2|21=1|38=1|44=1|60=20240101-00:00:00|"
                ),
            );
            let inbound = translate(&message, &TRADER, 0);
            if refused {
                let out = reply(inbound);
                assert_eq!(out.msg_type, "9", "{kind} {id}");
                assert_eq!(out.get(102).as_deref(), Some("99"), "{kind} {id}");
            } else {
                let (command, _) = submitted(inbound);
                let order = match command {
                    Command::Cancel(cancel) => cancel.order,
                    other => other.as_replace().map(|(r, _)| r.order).expect("replace"),
                };
                assert_eq!(order, OrderRef::Id(exchange_types::MAX_ID), "{kind}");
            }
        }
    }
    // 0 is engines' "unknown": the order is named by OrigClOrdID.
    let zero = fix(
        "F",
        3,
        "37=0|41=c1|11=x1|55=BTC-USD|54=1|60=20240101-00:00:00|",
    );
    let (Command::Cancel(cancel), _) = submitted(translate(&zero, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(
        cancel.order,
        OrderRef::Client(ClientOrderId::new("c1").unwrap())
    );
}

#[test]
fn replace_carries_the_new_id_price_and_quantity() {
    let message = fix(
        "G",
        3,
        "41=c1|11=c2|55=BTC-USD|54=1|60=20240101-00:00:00|38=2|40=2|44=99|",
    );
    let (Command::Replace(replace), _) = submitted(translate(&message, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(
        replace.new_client_order_id.map(|c| c.as_str().to_string()),
        Some("c2".into())
    );
    assert_eq!(
        (replace.price, replace.qty),
        (Some(dec("99")), Some(dec("2")))
    );
    let market = fix(
        "G",
        3,
        "41=c1|11=c2|55=BTC-USD|54=1|60=20240101-00:00:00|38=2|40=1|",
    );
    let out = reply(translate(&market, &TRADER, 0));
    assert_eq!((out.msg_type, out.get(434).as_deref()), ("9", Some("2")));
}

#[test]
fn replace_of_a_stop_carries_the_new_stop_price() {
    let message = fix(
        "G",
        3,
        "41=s1|11=s2|55=BTC-USD|54=1|60=20240101-00:00:00|38=2|40=4|44=106|99=105.5|",
    );
    let (Command::ReplaceStop(replace), _) = submitted(translate(&message, &TRADER, 0)) else {
        panic!("a stop-limit replace is submitted")
    };
    assert_eq!(
        (Some(replace.stop_price), replace.replace.price),
        (Some(dec("105.5")), Some(dec("106")))
    );
    let stop = fix(
        "G",
        3,
        "41=s1|11=s2|55=BTC-USD|54=2|60=20240101-00:00:00|38=2|40=3|99=95|",
    );
    let (Command::ReplaceStop(replace), _) = submitted(translate(&stop, &TRADER, 0)) else {
        panic!("a stop replace is submitted")
    };
    assert_eq!(
        (Some(replace.stop_price), replace.replace.price),
        (Some(dec("95")), None)
    );
    let unreadable = fix(
        "G",
        3,
        "41=s1|11=s2|55=BTC-USD|54=2|60=20240101-00:00:00|38=2|40=3|99=x|",
    );
    let out = reply(translate(&unreadable, &TRADER, 0));
    assert_eq!(out.msg_type, "9");
    assert!(out.get(58).unwrap_or_default().contains("StopPx"));
}

#[test]
fn mass_cancel_by_symbol_or_all() {
    let all = fix("q", 3, "11=m1|530=7|60=20240101-00:00:00|");
    let (Command::MassCancel(mass), _) = submitted(translate(&all, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(mass.symbol, None);
    let one = fix("q", 3, "11=m1|530=1|55=BTC-USD|60=20240101-00:00:00|");
    let (Command::MassCancel(mass), _) = submitted(translate(&one, &TRADER, 0)) else {
        panic!()
    };
    assert_eq!(
        mass.symbol.map(|s| s.as_str().to_string()),
        Some("BTC-USD".into())
    );
    let no_symbol = fix("q", 3, "11=m1|530=1|60=20240101-00:00:00|");
    let out = reply(translate(&no_symbol, &TRADER, 0));
    assert_eq!(
        (
            out.msg_type,
            out.get(531).as_deref(),
            out.get(532).as_deref()
        ),
        ("r", Some("0"), Some("1"))
    );
    let product = fix("q", 3, "11=m1|530=3|60=20240101-00:00:00|");
    assert_eq!(
        reply(translate(&product, &TRADER, 0)).get(532).as_deref(),
        Some("0")
    );
}

#[test]
fn business_rejects_for_drop_copy_and_unsupported_types() {
    let drop_copy = Role::DropCopy { accounts: vec![1] };
    let out = reply(translate(&order(""), &drop_copy, 0));
    assert_eq!(
        (
            out.msg_type,
            out.get(380).as_deref(),
            out.get(372).as_deref()
        ),
        ("j", Some("6"), Some("D"))
    );
    assert_eq!(
        (out.get(45).as_deref(), out.get(379).as_deref()),
        (Some("2"), Some("c1"))
    );
    let market_data = fix("V", 4, "262=r1|");
    let out = reply(translate(&market_data, &TRADER, 0));
    assert_eq!((out.msg_type, out.get(380).as_deref()), ("j", Some("3")));
}

#[test]
fn max_floor_makes_an_iceberg_and_cash_order_qty_a_funds_buy() {
    let (command, _) = submitted(translate(&order("111=0.1|"), &TRADER, 0));
    let Command::Place(berg) = command else {
        panic!("not a place")
    };
    assert_eq!(berg.ext().display_qty, Some(dec("0.1")));
    let funds = fix(
        "D",
        2,
        "11=c2|55=BTC-USD|54=1|60=20240101-00:00:00|40=1|152=250.5|",
    );
    let (command, _) = submitted(translate(&funds, &TRADER, 0));
    let Command::Place(buy) = command else {
        panic!("not a place")
    };
    assert_eq!(buy.ext().funds, Some(dec("250.5")));
    assert_eq!(buy.qty, Dec::new(0, 0));
    assert_eq!(buy.order_type, OrderType::Market);
    // Unreadable values are refused before the core sees them.
    reply(translate(&order("111=x|"), &TRADER, 0));
    reply(translate(&order("152=x|"), &TRADER, 0));
}

#[test]
fn display_qty_zero_makes_a_hidden_order_and_nothing_else_is_taken() {
    let (command, _) = submitted(translate(&order("1138=0|"), &TRADER, 0));
    let Command::Place(dark) = command else {
        panic!("not a place")
    };
    assert!(dark.ext().hidden);
    assert_eq!(dark.ext().display_qty, None);
    let (command, _) = submitted(translate(&order(""), &TRADER, 0));
    let Command::Place(lit) = command else {
        panic!("not a place")
    };
    assert!(!lit.ext().hidden);
    // A shown quantity belongs in MaxFloor (111); unreadable is refused.
    reply(translate(&order("1138=5|"), &TRADER, 0));
    reply(translate(&order("1138=x|"), &TRADER, 0));
}

#[test]
fn session_times_in_force_and_expire_time_reach_the_command() {
    for (code, tif) in [
        ("0", TimeInForce::Day),
        ("2", TimeInForce::AtOpen),
        ("7", TimeInForce::AtClose),
    ] {
        let (command, _) = submitted(translate(&order(&format!("59={code}|")), &TRADER, 0));
        let Command::Place(place) = command else {
            panic!("not a place")
        };
        assert_eq!(place.tif, tif);
    }
    let (command, _) = submitted(translate(&order("59=6|126=20270115-16:30:00|"), &TRADER, 0));
    let Command::Place(gtd) = command else {
        panic!("not a place")
    };
    assert_eq!(gtd.tif, TimeInForce::Gtd);
    assert_eq!(
        gtd.ext().expire_ts,
        crate::time::parse(b"20270115-16:30:00")
    );
    assert!(gtd.ext().expire_ts.is_some());
    reply(translate(&order("59=6|126=tomorrow|"), &TRADER, 0));
    reply(translate(&order("59=5|"), &TRADER, 0));
}

#[test]
fn ord_type_p_with_exec_inst_m_is_a_midpoint_order() {
    let entry = "11=c1|55=BTC-USD|54=2|60=20240101-00:00:00|38=1|40=P|18=M|";
    let (command, _) = submitted(translate(&fix("D", 2, entry), &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.price, place.tif),
        (OrderType::Midpoint, None, TimeInForce::Gtc)
    );
    let limited = format!("{entry}44=100.5|59=3|");
    let (command, _) = submitted(translate(&fix("D", 2, &limited), &TRADER, 0));
    let Command::Place(place) = command else {
        panic!("not a place")
    };
    assert_eq!(
        (place.order_type, place.price, place.tif),
        (OrderType::Midpoint, Some(dec("100.5")), TimeInForce::Ioc)
    );
    // The mid-price peg belongs to a pegged order, and a pegged order
    // needs it.
    for message in [
        order("18=M|"),
        fix("D", 2, &entry.replace("18=M|", "18=6|")),
    ] {
        let out = reply(translate(&message, &TRADER, 0));
        assert_eq!(out.get(103).as_deref(), Some("11"));
        assert!(out.get(58).unwrap_or_default().contains("ExecInst (18) M"));
    }
}
