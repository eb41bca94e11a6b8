//! The always-on invariant checks fire: each test breaks one structure the
//! way a bug would (commands alone cannot) and drives the engine into the
//! check, which must stop it rather than let it carry on.

use exchange_types::{
    AddInstrument, AssetCode, Cancel, ClientOrderId, Command, Dec, Event, OrderRef, OrderType,
    Place, Replace, SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};

use crate::engine::Engine;

fn dec(text: &str) -> Dec {
    Dec::parse(text).expect("test decimal")
}

fn coid(text: &str) -> ClientOrderId {
    ClientOrderId::new(text).expect("test client order id")
}

fn run(engine: &mut Engine, command: Command) -> Vec<Event> {
    let mut out = Vec::new();
    engine.apply(&Stamped { ts: 1, command }, &mut out);
    out
}

fn transfer(account: u64, code: &str, amount: &str) -> Transfer {
    Transfer {
        account,
        asset: AssetCode::new(code).expect("test asset"),
        amount: dec(amount),
    }
}

/// BTC-USD (tick 0.01, lot 0.0001, maker -1 bps, taker 5 bps); accounts 1
/// to 3 funded with 1,000,000 USD and 100 BTC.
fn engine() -> Engine {
    let mut engine = Engine::new();
    run(
        &mut engine,
        Command::AddInstrument(Box::new(AddInstrument {
            symbol: Symbol::new("BTC-USD").expect("test symbol"),
            base: AssetCode::new("BTC").expect("test asset"),
            quote: AssetCode::new("USD").expect("test asset"),
            tick_size: dec("0.01"),
            lot_size: dec("0.0001"),
            min_qty: None,
            max_qty: None,
            collar_bps: None,
            reference_price: None,
            maker_fee_bps: -1,
            taker_fee_bps: 5,
        })),
    );
    for account in 1..=3 {
        run(
            &mut engine,
            Command::Deposit(transfer(account, "USD", "1000000")),
        );
        run(
            &mut engine,
            Command::Deposit(transfer(account, "BTC", "100")),
        );
    }
    engine
}

fn place(engine: &mut Engine, account: u64, id: &str, side: Side, price: &str, qty: &str) {
    let events = run(
        engine,
        Command::Place(Place {
            account,
            client_order_id: coid(id),
            symbol: Symbol::new("BTC-USD").expect("test symbol"),
            side,
            order_type: OrderType::Limit,
            price: Some(dec(price)),
            qty: dec(qty),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
        }),
    );
    assert!(
        !events.iter().any(|e| e.kind.name() == "rejected"),
        "{id} was rejected: {events:?}"
    );
}

fn cancel(engine: &mut Engine, account: u64, id: &str) {
    run(
        engine,
        Command::Cancel(Cancel {
            account,
            order: OrderRef::Client(coid(id)),
        }),
    );
}

fn shrink(engine: &mut Engine, account: u64, id: &str, qty: &str) {
    run(
        engine,
        Command::Replace(Replace {
            account,
            order: OrderRef::Client(coid(id)),
            new_client_order_id: None,
            price: None,
            qty: Some(dec(qty)),
        }),
    );
}

/// The pool slot of account `account`'s open order `id`.
fn slot(engine: &Engine, account: u64, id: &str) -> u32 {
    let account = engine.accounts.index(account).expect("a known account");
    engine.by_client_id[&(account, coid(id))]
}

/// The untouched engine passes its audit, so each test's failure is the
/// corruption it made and nothing else.
#[test]
fn the_starting_state_is_sound() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    assert_eq!(engine.audit(), Ok(()));
    place(&mut engine, 3, "s2", Side::Sell, "99", "0.0001");
    shrink(&mut engine, 2, "s1", "0.0001");
    cancel(&mut engine, 1, "b1");
    assert_eq!(engine.audit(), Ok(()));
}

// --- the book ------------------------------------------------------------

#[test]
#[should_panic(expected = "level at 9900 totals 1 with its queue empty")]
fn a_level_that_empties_with_quantity_left() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0].bids.best_mut().expect("a bid").qty += 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "level at 9900 totals 0 with its queue not empty")]
fn a_level_that_runs_out_of_quantity_with_orders_left() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
    engine.books[0].bids.best_mut().expect("a bid").qty -= 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "level at 9900 holds less than its order's 2")]
fn a_level_below_an_order_it_loses() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0].bids.best_mut().expect("a bid").qty = 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "resting order at 9901 without a level")]
fn an_order_whose_level_is_missing() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    engine.orders.get_mut(slot).price += 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "is not linked into its level at 9900")]
fn an_order_its_level_does_not_link() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
    // The level skips its first order, which still believes it is first.
    let second = slot(&engine, 2, "b2");
    engine.books[0].bids.best_mut().expect("a bid").head = second;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "reducing a missing level at 9901")]
fn shrinking_an_order_whose_level_is_missing() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    engine.orders.get_mut(slot).price += 1;
    shrink(&mut engine, 1, "b1", "0.0001");
}

#[test]
#[should_panic(expected = "level at 9900 holds less than the 1 it loses")]
fn shrinking_an_order_below_its_level() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0].bids.best_mut().expect("a bid").qty = 0;
    shrink(&mut engine, 1, "b1", "0.0001");
}

#[test]
#[should_panic(expected = "a price level's quantity overflowed")]
fn a_level_that_overflows() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0].bids.best_mut().expect("a bid").qty = u64::MAX;
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
}

#[test]
#[should_panic(expected = "at 10100 would cross the book")]
fn resting_across_the_book() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    let slot = slot(&engine, 1, "b1");
    let mut out = Vec::new();
    engine.unrest(slot, &mut out);
    engine.orders.get_mut(slot).price = 10_100;
    engine.rest(slot, &mut out);
}

#[test]
#[should_panic(expected = "the best level at 10000 holds less than a fill of 1")]
fn a_fill_against_a_level_that_lost_its_quantity() {
    let mut engine = engine();
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    engine.books[0].asks.best_mut().expect("an ask").qty = 0;
    place(&mut engine, 1, "b1", Side::Buy, "100", "0.0001");
}
