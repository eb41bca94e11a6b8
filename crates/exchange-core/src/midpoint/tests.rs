//! The book's pairs are derived state: a restored engine works them out
//! again when it next matches, to what the live engine kept, and the audit
//! stops an engine whose pairs went out of step with its orders.

use exchange_types::{
    AddInstrument, AssetCode, ClientOrderId, Command, Dec, Event, OrderType, Place, PlaceExt,
    SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};

use super::reach::Offer;
use crate::engine::Engine;

fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("test decimal")
}

fn run(engine: &mut Engine, command: Command) -> Vec<Event> {
    let mut out = Vec::new();
    engine.apply(&Stamped { ts: 1, command }, &mut out);
    assert!(
        !out.iter().any(|e| e.kind.name() == "rejected"),
        "rejected: {out:?}"
    );
    out
}

/// BTC-USD (tick 0.01, lot 1); accounts 1 to 4 funded.
fn engine() -> Engine {
    let mut engine = Engine::new();
    let asset = |code: &str| AssetCode::new(code).expect("test asset");
    let listing = AddInstrument {
        ..AddInstrument::plain(
            Symbol::new("BTC-USD").expect("test symbol"),
            asset("BTC"),
            asset("USD"),
            dec("0.01"),
            dec("1"),
        )
    };
    run(&mut engine, Command::AddInstrument(Box::new(listing)));
    for account in 1..=4 {
        for (code, amount) in [("USD", "1000000"), ("BTC", "1000")] {
            let transfer = Transfer {
                account,
                asset: asset(code),
                amount: dec(amount),
            };
            run(&mut engine, Command::Deposit(transfer));
        }
    }
    engine
}

fn order(account: u64, id: &str, side: Side, price: &str, qty: &str) -> Place {
    Place {
        account,
        client_order_id: ClientOrderId::new(id).expect("test client order id"),
        symbol: Symbol::new("BTC-USD").expect("test symbol"),
        side,
        order_type: OrderType::Limit,
        price: Some(dec(price)),
        qty: dec(qty),
        tif: TimeInForce::Gtc,
        post_only: false,
        stp: SelfTradePrevention::CancelNewest,
        ext: None,
    }
}

/// A midpoint order limited at `price`, with a minimum if given.
fn midpoint(
    account: u64,
    id: &str,
    side: Side,
    price: &str,
    qty: &str,
    min: Option<&str>,
) -> Place {
    let mut place = order(account, id, side, price, qty);
    place.order_type = OrderType::Midpoint;
    place.ext = min.map(|min| {
        Box::new(PlaceExt {
            min_qty: Some(dec(min)),
            ..PlaceExt::default()
        })
    });
    place
}

/// Lit quotes 99.00 - 100.00 and midpoint orders that trade at none of
/// 99.50 or 99.65: a buy whose minimum no sell meets, a sell above every
/// buy, and a pair between 99.20 and 99.40.
fn book() -> Engine {
    let mut engine = engine();
    run(
        &mut engine,
        Command::Place(order(4, "bid", Side::Buy, "99.00", "1")),
    );
    run(
        &mut engine,
        Command::Place(order(4, "ask", Side::Sell, "100.00", "1")),
    );
    for place in [
        midpoint(1, "a", Side::Buy, "99.80", "10", Some("8")),
        midpoint(2, "b", Side::Sell, "99.20", "5", None),
        midpoint(3, "c", Side::Sell, "99.90", "10", None),
        midpoint(1, "d", Side::Buy, "99.40", "3", None),
    ] {
        let events = run(&mut engine, Command::Place(place));
        assert!(
            !events.iter().any(|e| e.kind.name() == "trade"),
            "{events:?}"
        );
    }
    engine
}

fn pairs(engine: &Engine) -> Option<&super::pairs::Pairs> {
    engine.midpoints.book(0).and_then(|b| b.pairs.as_ref())
}

#[test]
fn a_restored_book_works_its_pairs_out_again_as_the_live_one_kept_them() {
    let mut live = book();
    assert!(pairs(&live).is_some(), "matching worked them out");
    let mut restored = Engine::restore(&live.snapshot()).expect("the snapshot restores");
    assert!(pairs(&restored).is_none(), "not part of the snapshot");
    // The quotes move to 99.30 - 100.00 (midpoint 99.65): nothing trades,
    // and the restored book works its pairs out.
    let higher_bid = Command::Place(order(4, "bid2", Side::Buy, "99.30", "1"));
    assert_eq!(
        run(&mut live, higher_bid.clone()),
        run(&mut restored, higher_bid)
    );
    assert_eq!(pairs(&restored), pairs(&live));
    assert_eq!(pairs(&live).map(|p| p.spans()), Some(vec![(9920, 9940)]));
    // Then to 99.30 - 99.40 (midpoint 99.35): the pair within reach trades
    // 3 lots, and both books keep the sell's remainder alike.
    let lower_ask = Command::Place(order(4, "ask2", Side::Sell, "99.40", "1"));
    let events = run(&mut live, lower_ask.clone());
    assert_eq!(events, run(&mut restored, lower_ask));
    assert_eq!(
        events.iter().filter(|e| e.kind.name() == "trade").count(),
        1
    );
    assert_eq!(pairs(&restored), pairs(&live));
    assert_eq!(pairs(&live).map(|p| p.sells()[0].offer.leaves), Some(2));
    assert_eq!(restored.state_hash(), live.state_hash());
    assert_eq!((live.audit(), restored.audit()), (Ok(()), Ok(())));
}

#[test]
fn the_audit_stops_pairs_out_of_step_with_their_orders() {
    let mut engine = book();
    assert_eq!(engine.audit(), Ok(()));
    let pairs = engine
        .midpoints
        .books
        .get_mut(&0)
        .and_then(|b| b.pairs.as_mut())
        .expect("worked out");
    // The sell at 99.20 as if it had 8 lots: the buy with a minimum of 8
    // would reach it.
    pairs.update_sell(0, Offer::new(9920, 8, None));
    let found = engine.audit();
    assert!(
        found.as_ref().is_err_and(|e| e.contains("out of step")),
        "{found:?}"
    );
}
