use exchange_testkit::engine::*;
use exchange_types::*;

#[test]
fn crossing_orders_trade_at_the_resting_price() {
    let mut h = Harness::funded(2);
    let maker = h.place(limit(1, "m", Side::Sell, "100.00", "1.5"));
    assert_eq!(reject_reason(&maker), None);
    let taker = h.place(limit(2, "t", Side::Buy, "101.00", "1"));
    assert_eq!(trades(&taker), vec![(units("100"), units("1"), 1, 2)]);
    h.engine.audit().unwrap();
    let book = h.engine.book(&sym("BTC-USD"), 10).unwrap();
    assert_eq!(book.asks, vec![(units("100"), units("0.5"))]);
    assert!(book.bids.is_empty());
    // Taker pays 100 + 5 bps; maker receives 100 + 1 bps rebate.
    assert_eq!(
        h.engine.balance(2, &asset("USD")),
        Some((units("999899.95"), units("999899.95")))
    );
    assert_eq!(
        h.engine.balance(0, &asset("USD")),
        Some((units("0.04"), units("0.04")))
    );
    let restored = exchange_core::Engine::restore(&h.engine.snapshot()).unwrap();
    assert_eq!(restored.state_hash(), h.engine.state_hash());
}
