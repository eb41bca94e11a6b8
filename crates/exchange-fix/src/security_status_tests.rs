use super::*;
use exchange_types::event::{self, InstrumentAdded, PhaseChanged};
use exchange_types::AssetCode;

fn request(req_id: &str, symbol: &str, kind: char) -> Message {
    let text = format!("8=FIX.4.4|9=0|35=e|34=9|324={req_id}|55={symbol}|263={kind}|10=000|");
    Message::parse(text.replace('|', "\x01").into_bytes())
}

fn sym(text: &str) -> Symbol {
    Symbol::new(text).unwrap()
}

fn event(kind: EventKind) -> Event {
    Event {
        seq: 0,
        ts: 0,
        kind,
    }
}

fn phase(symbol: &str, phase: Phase) -> Event {
    event(EventKind::Phase(PhaseChanged {
        symbol: sym(symbol),
        phase,
    }))
}

fn indicative(symbol: &str, price: Option<u64>) -> Event {
    event(EventKind::Indicative(event::Indicative {
        symbol: sym(symbol),
        price,
        volume: 300_000_000,
        imbalance_side: Some(Side::Sell),
        imbalance_qty: 100_000_000,
    }))
}

/// A session that has seen `SAP-EUR` listed, continuous.
fn seeded() -> SecurityStatus {
    let mut status = SecurityStatus::default();
    status.seed(5, [(sym("SAP-EUR"), &MarketStatus::default())]);
    status
}

#[test]
fn a_snapshot_answers_the_phase_without_subscribing() {
    let mut status = seeded();
    let answer = status.request(&request("r1", "SAP-EUR", '0'), 1).unwrap();
    assert_eq!(answer.msg_type, "f");
    assert_eq!(
        answer.get(tags::SECURITY_STATUS_REQ_ID).as_deref(),
        Some("r1")
    );
    assert_eq!(answer.get(tags::SYMBOL).as_deref(), Some("SAP-EUR"));
    assert_eq!(
        answer.get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("17")
    );
    assert_eq!(
        answer.get(tags::TRADING_SESSION_SUB_ID).as_deref(),
        Some("3")
    );
    assert_eq!(
        answer.get(tags::UNSOLICITED_INDICATOR).as_deref(),
        Some("N")
    );
    assert_eq!(answer.get(tags::HIGH_PX), None);
    assert_eq!(status.subscriptions(), 0);
    assert!(status
        .on_applied(6, &[phase("SAP-EUR", Phase::Halted)], 2)
        .is_empty());
}

#[test]
fn a_subscription_pushes_each_change_until_unsubscribed() {
    let mut status = seeded();
    let first = status.request(&request("s", "SAP-EUR", '1'), 1).unwrap();
    assert_eq!(
        first.get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("17")
    );
    let pushed = status.on_applied(
        6,
        &[
            phase("SAP-EUR", Phase::ClosingCall),
            indicative("SAP-EUR", Some(10_000_000_000)),
        ],
        2,
    );
    assert_eq!(pushed.len(), 2);
    assert_eq!(
        pushed[0].get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("21")
    );
    assert_eq!(
        pushed[0].get(tags::TRADING_SESSION_SUB_ID).as_deref(),
        Some("4")
    );
    assert_eq!(
        pushed[0].get(tags::UNSOLICITED_INDICATOR).as_deref(),
        Some("Y")
    );
    assert_eq!(
        pushed[0].get(tags::SECURITY_STATUS_REQ_ID).as_deref(),
        Some("s")
    );
    // The indication: price, and what each side brings (3 matched, 1
    // more to sell).
    let call = &pushed[1];
    assert_eq!(call.get(tags::HIGH_PX).as_deref(), Some("100"));
    assert_eq!(call.get(tags::LOW_PX).as_deref(), Some("100"));
    assert_eq!(call.get(tags::BUY_VOLUME).as_deref(), Some("3"));
    assert_eq!(call.get(tags::SELL_VOLUME).as_deref(), Some("4"));
    // A snapshot request now tells the indication too.
    let now = status.request(&request("q", "SAP-EUR", '0'), 3).unwrap();
    assert_eq!(now.get(tags::HIGH_PX).as_deref(), Some("100"));
    // Nothing crossing any more: no indication.
    let cleared = status.on_applied(7, &[indicative("SAP-EUR", None)], 4);
    assert_eq!(cleared[0].get(tags::HIGH_PX), None);
    // An entry already seen is not told twice.
    assert!(status
        .on_applied(7, &[phase("SAP-EUR", Phase::Closed)], 4)
        .is_empty());
    assert_eq!(status.request(&request("s", "SAP-EUR", '2'), 5), None);
    assert_eq!(status.subscriptions(), 0);
    assert!(status
        .on_applied(8, &[phase("SAP-EUR", Phase::PostClose)], 6)
        .is_empty());
}

#[test]
fn a_halt_and_its_resume_are_told_as_such() {
    let mut status = seeded();
    status.request(&request("s", "SAP-EUR", '1'), 1);
    let halted = status.on_applied(6, &[phase("SAP-EUR", Phase::Halted)], 2);
    assert_eq!(
        halted[0].get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("2")
    );
    assert_eq!(halted[0].get(tags::TRADING_SESSION_SUB_ID), None);
    let resumed = status.on_applied(7, &[phase("SAP-EUR", Phase::Continuous)], 3);
    assert_eq!(
        resumed[0].get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("3")
    );
    // Afterwards the state is plain continuous trading.
    let now = status.request(&request("q", "SAP-EUR", '0'), 4).unwrap();
    assert_eq!(
        now.get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("17")
    );
}

#[test]
fn an_unknown_symbol_is_unknown_or_invalid() {
    let mut status = seeded();
    let answer = status.request(&request("r", "NOPE", '1'), 1).unwrap();
    assert_eq!(
        answer.get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("20")
    );
    assert!(answer
        .get(tags::TEXT)
        .unwrap()
        .contains("unknown_instrument"));
    assert_eq!(status.subscriptions(), 0);
    assert_eq!(status.request(&request("r", "NOPE", '2'), 1), None);
    // A listing later in the log makes it known.
    status.on_applied(
        6,
        &[event(EventKind::InstrumentAdded(InstrumentAdded {
            symbol: sym("NOPE"),
            base: AssetCode::new("NOP").unwrap(),
            quote: AssetCode::new("EUR").unwrap(),
            reference_price: None,
        }))],
        2,
    );
    let answer = status.request(&request("r", "NOPE", '0'), 3).unwrap();
    assert_eq!(
        answer.get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("17")
    );
}

#[test]
fn subscriptions_are_bounded_and_end_with_the_connection() {
    let mut status = SecurityStatus::default();
    let defaults: Vec<(Symbol, MarketStatus)> = (0..=MAX_STATUS_SUBSCRIPTIONS)
        .map(|i| (sym(&format!("S{i}")), MarketStatus::default()))
        .collect();
    status.seed(1, defaults.iter().map(|(s, m)| (*s, m)));
    for i in 0..MAX_STATUS_SUBSCRIPTIONS {
        let answer = status
            .request(&request("r", &format!("S{i}"), '1'), 1)
            .unwrap();
        assert_eq!(answer.msg_type, "f");
    }
    // Subscribing again to one already subscribed is not one more.
    assert_eq!(
        status
            .request(&request("again", "S0", '1'), 1)
            .unwrap()
            .msg_type,
        "f"
    );
    let over = status
        .request(
            &request("r", &format!("S{MAX_STATUS_SUBSCRIPTIONS}"), '1'),
            1,
        )
        .unwrap();
    assert_eq!(over.msg_type, "j");
    assert_eq!(over.get(tags::BUSINESS_REJECT_REF_ID).as_deref(), Some("r"));
    assert_eq!(status.subscriptions(), MAX_STATUS_SUBSCRIPTIONS);
    // The renewed subscription's pushes carry its new id.
    let pushed = status.on_applied(2, &[phase("S0", Phase::Closed)], 2);
    assert_eq!(
        pushed[0].get(tags::SECURITY_STATUS_REQ_ID).as_deref(),
        Some("again")
    );
    assert_eq!(
        pushed[0].get(tags::SECURITY_TRADING_STATUS).as_deref(),
        Some("18")
    );
    status.disconnected();
    assert_eq!(status.subscriptions(), 0);
    assert!(status
        .on_applied(3, &[phase("S0", Phase::PreOpen)], 3)
        .is_empty());
}

#[test]
fn every_phase_has_a_fix_4_4_status() {
    for &phase in Phase::ALL {
        let value = trading_status(phase, false);
        // SecurityTradingStatus values FIX 4.4 defines: 1 to 23 but 11.
        assert!((1..=23).contains(&value) && value != 11, "{phase:?}");
    }
    assert_eq!(trading_status(Phase::Halted, true), 2);
}

#[test]
fn any_session_may_ask_and_263_must_be_0_1_or_2() {
    use crate::inbound::{translate, Inbound, Role};
    let drop_copy = Role::DropCopy { accounts: vec![1] };
    assert_eq!(
        translate(&request("r", "SAP-EUR", '1'), &drop_copy, 0),
        Inbound::SecurityStatus
    );
    match translate(
        &request("r", "SAP-EUR", '5'),
        &Role::Trading { account: 1 },
        0,
    ) {
        Inbound::Reject(problem) => assert_eq!(problem.tag, Some(tags::SUBSCRIPTION_REQUEST_TYPE)),
        other => panic!("{other:?}"),
    }
    let missing = Message::parse(
        "8=FIX.4.4|9=0|35=e|49=C|56=X|34=2|52=20260101-00:00:00|324=r|55=SAP-EUR|10=000|"
            .replace('|', "\x01")
            .into_bytes(),
    );
    let problem = crate::spec::validate(&missing).unwrap_err();
    assert_eq!(
        problem.tag,
        Some(tags::SUBSCRIPTION_REQUEST_TYPE),
        "{problem:?}"
    );
}

#[test]
fn the_reference_price_is_last_px_and_the_operators_change_is_pushed() {
    let mut status = SecurityStatus::default();
    let known = MarketStatus {
        reference_price: Some(10_000_000_000),
        ..MarketStatus::default()
    };
    status.seed(5, [(sym("SAP-EUR"), &known)]);
    let first = status.request(&request("s", "SAP-EUR", '1'), 1).unwrap();
    assert_eq!(first.get(tags::LAST_PX).as_deref(), Some("100"));
    // A trade moves the reference without a push of its own.
    let trade = event(EventKind::Trade(event::Trade {
        trade_id: 1,
        symbol: sym("SAP-EUR"),
        price: 10_100_000_000,
        qty: 100_000_000,
        maker_order_id: 1,
        taker_order_id: 2,
        maker_account: 1,
        taker_account: 2,
        aggressor_side: Side::Buy,
        maker_fee: 0,
        taker_fee: 0,
        maker_leaves_qty: 0,
        taker_leaves_qty: 0,
        midpoint: false,
    }));
    assert!(status.on_applied(6, &[trade], 2).is_empty());
    let answer = status.request(&request("q", "SAP-EUR", '0'), 3).unwrap();
    assert_eq!(answer.get(tags::LAST_PX).as_deref(), Some("101"));
    let set = event(EventKind::ReferencePrice(event::ReferencePrice {
        symbol: sym("SAP-EUR"),
        price: 9_050_000_000,
    }));
    let pushed = status.on_applied(7, &[set], 4);
    assert_eq!(pushed.len(), 1);
    assert_eq!(pushed[0].get(tags::LAST_PX).as_deref(), Some("90.5"));
    assert_eq!(
        pushed[0].get(tags::UNSOLICITED_INDICATOR).as_deref(),
        Some("Y")
    );
    // Without a reference there is no LastPx.
    assert_eq!(
        seeded()
            .request(&request("n", "SAP-EUR", '0'), 5)
            .unwrap()
            .get(tags::LAST_PX),
        None
    );
}
