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
            maker_fee_bps: -1,
            taker_fee_bps: 5,
            ..AddInstrument::plain(
                Symbol::new("BTC-USD").expect("test symbol"),
                AssetCode::new("BTC").expect("test asset"),
                AssetCode::new("USD").expect("test asset"),
                dec("0.01"),
                dec("0.0001"),
            )
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
            ext: None,
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
    *engine
        .by_client_id
        .get(&(account, coid(id)))
        .expect("indexed")
}

/// The index of a listed asset.
fn asset(engine: &Engine, code: &str) -> u32 {
    *engine
        .asset_by_code
        .get(&AssetCode::new(code).expect("asset"))
        .expect("listed asset")
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
#[should_panic(expected = "a level's quantity is zero exactly when its queue is empty")]
fn a_level_that_empties_with_quantity_left() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .qty += 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "a level's quantity is zero exactly when its queue is empty")]
fn a_level_that_runs_out_of_quantity_with_orders_left() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .qty -= 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "a level holds at least its order's open quantity")]
fn a_level_below_an_order_it_loses() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .qty = 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "a resting order's level exists")]
fn an_order_whose_level_is_missing() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    engine.orders.get_mut(slot).price += 1;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "an order that is first on its level is not the level's head")]
fn an_order_its_level_does_not_link() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
    // The level skips its first order, which still believes it is first.
    let second = slot(&engine, 2, "b2");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .head = second;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "an order that is last on its level is not the level's tail")]
fn an_order_its_level_does_not_end_with() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "99", "0.0001");
    let first = slot(&engine, 1, "b1");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .tail = first;
    cancel(&mut engine, 2, "b2");
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
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .qty = 0;
    shrink(&mut engine, 1, "b1", "0.0001");
}

#[test]
#[should_panic(expected = "a price level's quantity overflowed")]
fn a_level_that_overflows() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.books[0]
        .side_mut(Side::Buy)
        .best_level_mut()
        .expect("a bid")
        .qty = u64::MAX;
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
    engine.books[0]
        .side_mut(Side::Sell)
        .best_level_mut()
        .expect("an ask")
        .qty = 0;
    place(&mut engine, 1, "b1", Side::Buy, "100", "0.0001");
}

// --- funds -----------------------------------------------------------------

#[test]
#[should_panic(expected = "the notional of 1 lots at 9900 overflowed")]
fn a_fill_whose_notional_overflows() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    // A sell reserves base units and never computes a notional: only the
    // fill meets the broken rule.
    engine.instruments[0].notional_per_tick_lot = u64::MAX / 2;
    place(&mut engine, 2, "s1", Side::Sell, "99", "0.0001");
}

#[test]
#[should_panic(expected = "a limit buy holds 0 but its fill needs")]
fn a_limit_buy_that_cannot_pay_for_its_fill() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    engine.orders.get_mut(slot).reserved = 0;
    place(&mut engine, 2, "s1", Side::Sell, "99", "0.0001");
}

#[test]
#[should_panic(expected = "a limit buy holds 0 after a fill but its remainder needs")]
fn a_limit_buy_left_short_by_a_fill() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    // Exactly what one lot costs the maker (its fee is a rebate, paid to
    // available): the fill goes through, the second lot is left unfunded.
    let one_lot = engine.instruments[0].notional(9_900, 1).expect("fits");
    engine.orders.get_mut(slot).reserved = one_lot;
    place(&mut engine, 2, "s1", Side::Sell, "99", "0.0001");
}

#[test]
#[should_panic(expected = "a sell holds 0 but delivers 10000")]
fn a_sell_that_cannot_deliver() {
    let mut engine = engine();
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    let slot = slot(&engine, 2, "s1");
    engine.orders.get_mut(slot).reserved = 0;
    place(&mut engine, 1, "b1", Side::Buy, "100", "0.0001");
}

#[test]
#[should_panic(expected = "a balance would become")]
fn a_buyer_whose_total_goes_negative() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let usd = asset(&engine, "USD");
    engine.accounts.balance_mut_for_test(1, usd).total = 0;
    place(&mut engine, 2, "s1", Side::Sell, "99", "0.0001");
}

#[test]
#[should_panic(expected = "a seller's base total went negative")]
fn a_seller_whose_total_goes_negative() {
    let mut engine = engine();
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    let btc = asset(&engine, "BTC");
    engine.accounts.balance_mut_for_test(2, btc).total = 0;
    place(&mut engine, 1, "b1", Side::Buy, "100", "0.0001");
}

#[test]
#[should_panic(expected = "the fee account would pay out")]
fn fees_that_would_pay_out() {
    let mut engine = engine();
    engine.instruments[0].maker_fee_bps = -10;
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    place(&mut engine, 1, "b1", Side::Buy, "100", "0.0001");
}

#[test]
#[should_panic(expected = "releases 1 but holds 0")]
fn releasing_more_than_an_order_holds() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    engine.orders.get_mut(slot).reserved = 0;
    engine.release(slot, 1);
}

#[test]
#[should_panic(expected = "a release made available")]
fn a_release_above_the_total() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let usd = asset(&engine, "USD");
    let balance = engine.accounts.balance_mut_for_test(1, usd);
    balance.total = balance.available;
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "but its remainder needs")]
fn trimming_an_order_that_holds_too_little() {
    let mut engine = engine();
    place(&mut engine, 2, "s1", Side::Sell, "100", "0.0002");
    let slot = slot(&engine, 2, "s1");
    engine.orders.get_mut(slot).reserved = 1;
    engine.trim_reservation(slot, &mut Vec::new());
}

#[test]
#[should_panic(expected = "withdrawing 60 from a total of 50")]
fn a_withdrawal_beyond_the_total() {
    let mut engine = engine();
    run(
        &mut engine,
        Command::Deposit(transfer(9, "USD", "0.000001")),
    );
    let usd = asset(&engine, "USD");
    let account = engine.accounts.index(9).expect("account 9");
    engine.accounts.balance_mut_for_test(account, usd).total = 50;
    engine.accounts.balance_mut_for_test(account, usd).available = 100;
    run(
        &mut engine,
        Command::Withdraw(transfer(9, "USD", "0.0000006")),
    );
}

#[test]
#[should_panic(expected = "that still holds funds")]
fn closing_an_order_that_holds_funds() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    let mut out = Vec::new();
    engine.unrest(slot, &mut out);
    engine.close_order(slot);
}

// --- orders and their indexes ------------------------------------------------

#[test]
#[should_panic(expected = "was indexed elsewhere")]
fn closing_an_order_its_id_does_not_name() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    place(&mut engine, 2, "b2", Side::Buy, "98", "0.0002");
    let (first, second) = (slot(&engine, 1, "b1"), slot(&engine, 2, "b2"));
    let id = engine.orders.get(first).id;
    engine.order_by_id.insert(id, second);
    cancel(&mut engine, 1, "b1");
}

#[test]
#[should_panic(expected = "order id 1 is already open")]
fn an_order_id_handed_out_twice() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    engine.next_order_id = 1;
    place(&mut engine, 2, "b2", Side::Buy, "98", "0.0002");
}

#[test]
#[should_panic(expected = "client order id b1 of order 1 is already open")]
fn a_client_order_id_indexed_twice() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let slot = slot(&engine, 1, "b1");
    // The order forgets it was indexed, and its id is free again, as if
    // indexing had half failed: only the client id is still taken.
    engine.orders.get_mut(slot).indexed = false;
    engine.order_by_id.remove(&1);
    engine.index_order(slot);
}

#[test]
#[should_panic(expected = "a renamed order was indexed elsewhere")]
fn renaming_an_order_its_client_id_does_not_name() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    let account = engine.accounts.index(1).expect("account 1");
    engine.by_client_id.remove(&(account, coid("b1")));
    run(
        &mut engine,
        Command::Replace(Replace {
            account: 1,
            order: OrderRef::Id(1),
            new_client_order_id: Some(coid("b1-renamed")),
            price: None,
            qty: None,
        }),
    );
}

// --- the full audit's counters ---------------------------------------------

#[test]
fn the_audit_refuses_counters_behind_the_ids_they_issued() {
    let mut engine = engine();
    place(&mut engine, 1, "b1", Side::Buy, "99", "0.0002");
    cancel(&mut engine, 1, "b1");
    assert_eq!(engine.audit(), Ok(()));

    let mut broken = engine.clone();
    broken.next_order_id = 0;
    assert!(broken.audit().is_err(), "next order id 0");
    let mut broken = engine.clone();
    broken.next_trade_id = 0;
    assert!(broken.audit().is_err(), "next trade id 0");
    // Order 1 closed: its id is behind the counter, which must be past it.
    let mut broken = engine.clone();
    broken.next_order_id = 1;
    assert_eq!(
        broken.audit(),
        Err("closed order 1 was never assigned".into())
    );
}
