//! Icebergs against the examples venues publish: after a fill that reaches
//! an iceberg's hidden quantity it shows `min(display, open)` and hides
//! the rest; a fill that stops inside the shown slice leaves the rest of
//! that slice shown, with its priority. Each test asserts the trades, the
//! iceberg's split and the public depth (book events and levels).

use exchange_core::IcebergView;
use exchange_testkit::engine::*;
use exchange_types::*;

fn split(h: &Harness, id: OrderId) -> Option<(u64, u64, u64)> {
    h.engine.iceberg(id).map(
        |IcebergView {
             display_qty,
             shown_qty,
             hidden_qty,
         }| { (display_qty, shown_qty, hidden_qty) },
    )
}

fn qtys(events: &[Event]) -> Vec<(u64, OrderId)> {
    trades(events).iter().map(|t| (t.1, t.2)).collect()
}

/// Coinbase Exchange, FIX API, "Exchange Iceberg Orders", "Sample Message
/// Flow": a buy of 1 showing 0.3 (MaxFloor) at 25000. Event 1 shows 0.3;
/// event 2, a match of 0.3, fills the displayed order and replenishes
/// 0.3; event 3, an aggressive order, fills the new 0.3 and then the
/// hidden 0.4, and the iceberg is complete.
#[test]
fn coinbase_sample_message_flow() {
    let mut h = Harness::funded(2);
    let events = exec(
        &mut h,
        iceberg(limit(1, "a", Side::Buy, "25000", "1"), "0.3"),
    );
    let a = order_id(&events).unwrap();
    let (price, shown) = (units("25000"), units("0.3"));
    assert_eq!(book_updates(&events), [(Side::Buy, price, shown)]);
    assert_eq!(split(&h, a), Some((shown, shown, units("0.7"))));

    let event2 = exec(&mut h, limit(2, "m", Side::Sell, "25000", "0.3"));
    assert_eq!(qtys(&event2), [(shown, a)]);
    assert_eq!(book_updates(&event2), [(Side::Buy, price, shown)]);
    assert_eq!(split(&h, a), Some((shown, shown, units("0.4"))));
    assert_eq!(book(&h).bids, [(price, shown)]);

    let event3 = exec(&mut h, limit(2, "g", Side::Sell, "25000", "0.7"));
    assert_eq!(qtys(&event3), [(shown, a), (units("0.4"), a)]);
    assert_eq!(book_updates(&event3), [(Side::Buy, price, 0)]);
    assert_eq!(split(&h, a), None);
    assert!(open_order(&h, a).is_none());
    assert!(book(&h).bids.is_empty());
}

/// The same iceberg hit by a sell of 0.5. Coinbase ("Exchange Iceberg
/// Orders", the rules above the sample flow): once the displayed quantity
/// fills, matching continues into the hidden quantity, and after the match
/// a new displayed order of up to MaxFloor is added. It shows 0.3 and
/// hides 0.2, not 0.1 and 0.4.
#[test]
fn coinbase_rule_a_fill_into_the_hidden_quantity_leaves_a_whole_slice() {
    let mut h = Harness::funded(2);
    let a = place_ok(
        &mut h,
        iceberg(limit(1, "a", Side::Buy, "25000", "1"), "0.3"),
    );
    let events = exec(&mut h, limit(2, "s", Side::Sell, "25000", "0.5"));
    let (price, shown) = (units("25000"), units("0.3"));
    assert_eq!(qtys(&events), [(shown, a), (units("0.2"), a)]);
    let leaves: Vec<u64> = trade_fields(&events)
        .iter()
        .map(|t| t.maker_leaves_qty)
        .collect();
    assert_eq!(leaves, [units("0.7"), units("0.5")]);
    assert_eq!(book_updates(&events), [(Side::Buy, price, shown)]);
    assert_eq!(split(&h, a), Some((shown, shown, units("0.2"))));
    assert_eq!(book(&h).bids, [(price, shown)]);
}

/// The iceberg as the incoming order: it takes with its whole quantity
/// (docs/protocol.md, "Icebergs"), then rests its remainder as a new
/// order, MaxFloor shown and the rest hidden (Coinbase, "Exchange Iceberg
/// Orders": a quantity equal to the MaxFloor is displayed).
#[test]
fn an_incoming_iceberg_rests_a_whole_slice_after_trading() {
    let mut h = Harness::funded(2);
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "25000", "0.5"));
    let events = exec(
        &mut h,
        iceberg(limit(1, "a", Side::Buy, "25000", "1"), "0.3"),
    );
    let a = order_id(&events).unwrap();
    let (price, shown) = (units("25000"), units("0.3"));
    assert_eq!(
        trades(&events),
        [(price, units("0.5"), s, a)],
        "the iceberg took with all of its quantity"
    );
    assert_eq!(
        book_updates(&events),
        [(Side::Sell, price, 0), (Side::Buy, price, shown)]
    );
    assert_eq!(split(&h, a), Some((shown, shown, units("0.2"))));
    assert_eq!(book(&h).bids, [(price, shown)]);
}

/// TSX Order Types and Functionality Guide, section 4.7 "Iceberg Orders",
/// "Example: Iceberg Orders". Bids: 001 100 at 10.00; at 9.90 003 500, the
/// iceberg 004 showing 100 of 10,000, 005 200; offer 002 400 at 10.20. A
/// sell of 1,500 at 9.90 trades every displayed lot first (the iceberg's
/// 100 in its place), then 600 of the iceberg's hidden volume in one
/// trade; 004 is left showing 100 with 9,200 hidden.
#[test]
fn tsx_order_types_guide_iceberg_example() {
    let mut h = Harness::funded(6);
    h.run(deposit(2, "BTC", "1000"));
    h.run(deposit(6, "BTC", "2000"));
    let o001 = place_ok(&mut h, limit(1, "001", Side::Buy, "10.00", "100"));
    let o002 = place_ok(&mut h, limit(2, "002", Side::Sell, "10.20", "400"));
    let o003 = place_ok(&mut h, limit(3, "003", Side::Buy, "9.90", "500"));
    let o004 = place_ok(
        &mut h,
        iceberg(limit(4, "004", Side::Buy, "9.90", "10000"), "100"),
    );
    let o005 = place_ok(&mut h, limit(5, "005", Side::Buy, "9.90", "200"));
    let events = exec(&mut h, limit(6, "006", Side::Sell, "9.90", "1500"));
    let o006 = order_id(&events).unwrap();
    let (p1000, p990) = (units("10.00"), units("9.90"));
    assert_eq!(
        trades(&events),
        [
            (p1000, units("100"), o001, o006),
            (p990, units("500"), o003, o006),
            (p990, units("100"), o004, o006),
            (p990, units("200"), o005, o006),
            (p990, units("600"), o004, o006),
        ]
    );
    assert_eq!(
        book_updates(&events),
        [(Side::Buy, p1000, 0), (Side::Buy, p990, units("100"))]
    );
    // Resulting CLOB: 004 showing 100 with 9,200 hidden; 002 untouched.
    let b = book(&h);
    assert_eq!(b.bids, [(p990, units("100"))]);
    assert_eq!(b.asks, [(units("10.20"), units("400"))]);
    assert_eq!(
        split(&h, o004),
        Some((units("100"), units("100"), units("9200")))
    );
    assert!(open_order(&h, o002).is_some());
}

/// A fill that stops inside the shown slice leaves the rest of it shown,
/// in its place; only a slice that fills is replenished, at the back. TMX,
/// TSX Alpha Exchange, "Order Types and Features", "Icebergs", "How it
/// Works": a partially filled disclosed portion remains booked until fully
/// executed, and a refresh receives a new time stamp.
#[test]
fn tsx_a_partly_filled_slice_stays_until_it_fills() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Buy, "100", "1"), "0.3"));
    let b = place_ok(&mut h, limit(2, "b", Side::Buy, "100", "0.2"));
    let price = units("100");

    let first = exec(&mut h, limit(3, "s1", Side::Sell, "100", "0.1"));
    assert_eq!(qtys(&first), [(units("0.1"), a)]);
    assert_eq!(
        split(&h, a),
        Some((units("0.3"), units("0.2"), units("0.7")))
    );
    assert_eq!(book_updates(&first), [(Side::Buy, price, units("0.4"))]);

    // The rest of the slice kept its place ahead of b.
    let second = exec(&mut h, limit(3, "s2", Side::Sell, "100", "0.2"));
    assert_eq!(qtys(&second), [(units("0.2"), a)]);
    assert_eq!(
        split(&h, a),
        Some((units("0.3"), units("0.3"), units("0.4")))
    );
    assert_eq!(book(&h).bids, [(price, units("0.5"))]);

    // The replenished slice went behind b.
    let third = exec(&mut h, limit(3, "s3", Side::Sell, "100", "0.1"));
    assert_eq!(qtys(&third), [(units("0.1"), b)]);
}

/// docs/protocol.md, "Icebergs", the example: a (1, showing 0.3) and then
/// b (0.2) bid 100; a sell of 0.6 takes a's slice, b, then 0.1 of a's
/// hidden quantity. a shows 0.3 and hides 0.3; the level shows 0.3.
#[test]
fn protocol_md_iceberg_example() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Buy, "100", "1"), "0.3"));
    let b = place_ok(&mut h, limit(2, "b", Side::Buy, "100", "0.2"));
    let events = exec(&mut h, limit(3, "s", Side::Sell, "100", "0.6"));
    assert_eq!(
        qtys(&events),
        [(units("0.3"), a), (units("0.2"), b), (units("0.1"), a)]
    );
    let leaves: Vec<u64> = trade_fields(&events)
        .iter()
        .map(|t| t.maker_leaves_qty)
        .collect();
    assert_eq!(leaves, [units("0.7"), 0, units("0.6")]);
    assert_eq!(
        book_updates(&events),
        [(Side::Buy, units("100"), units("0.3"))]
    );
    assert_eq!(
        split(&h, a),
        Some((units("0.3"), units("0.3"), units("0.3")))
    );
    assert_eq!(book(&h).bids, [(units("100"), units("0.3"))]);
}

/// The split a fill into hidden quantity leaves is state: a snapshot taken
/// then restores to the same split and hash, and both engines go on alike.
#[test]
fn the_split_after_a_hidden_fill_survives_snapshot_and_restore() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Buy, "100", "1"), "0.3"));
    place_ok(&mut h, limit(2, "b", Side::Buy, "100", "0.2"));
    exec(&mut h, limit(3, "s", Side::Sell, "100", "0.6"));
    let mut restored = Harness {
        engine: exchange_core::Engine::restore(&h.engine.snapshot()).expect("restores"),
        ts: h.ts,
    };
    assert_eq!(restored.engine.state_hash(), h.engine.state_hash());
    assert_eq!(restored.engine.iceberg(a), h.engine.iceberg(a));
    for sell in ["0.1", "0.35", "0.15"] {
        let command = cmd(limit(3, &format!("s{sell}"), Side::Sell, "100", sell));
        assert_eq!(
            h.run_checked(command.clone()),
            restored.run_checked(command)
        );
        assert_eq!(restored.engine.iceberg(a), h.engine.iceberg(a));
    }
    assert_eq!(restored.engine.state_hash(), h.engine.state_hash());
    assert_eq!(split(&h, a), None, "0.6 open, all sold");
}
