//! The price ladder against a sorted map, and its window placement.

use super::*;
use crate::orders::Order;
use exchange_types::{ClientOrderId, SelfTradePrevention, TimeInForce};
use proptest::prelude::*;

fn order(side: Side, price: u64, qty: u64) -> Order {
    Order {
        id: 1,
        account: 0,
        instrument: 0,
        side,
        tif: TimeInForce::Gtc,
        stp: SelfTradePrevention::CancelNewest,
        post_only: false,
        is_market: false,
        is_hidden: false,
        is_midpoint: false,
        price,
        qty,
        filled: 0,
        reserved: 0,
        hidden: 0,
        client_order_id: ClientOrderId::new("c").expect("a valid id"),
        indexed: false,
        stop: false,
        oco: false,
        account_prev: NIL,
        account_next: NIL,
    }
}

/// The side as a sorted map of FIFO queues, best first.
fn model_levels(side: Side, model: &BTreeMap<u64, Vec<u32>>) -> Vec<u64> {
    let mut prices: Vec<u64> = model.keys().copied().collect();
    if side == Side::Buy {
        prices.reverse();
    }
    prices
}

fn check(book: &BookSide, pool: &OrderPool, model: &BTreeMap<u64, Vec<u32>>) {
    let expected = model_levels(book.side(), model);
    let levels: Vec<&Level> = book.levels_best_first().collect();
    let prices: Vec<u64> = levels.iter().map(|l| l.price).collect();
    assert_eq!(prices, expected);
    assert_eq!(book.level_count(), expected.len());
    assert_eq!(book.best().map(|l| l.price), expected.first().copied());
    // `crosses` reads the cached key: it must agree with the best level's
    // price, at it, on either side of it, and at the ends of the range.
    let best = expected.first().copied();
    let near = best.map_or(vec![], |p| {
        vec![p.saturating_sub(1), p, p.saturating_add(1)]
    });
    for incoming in near.into_iter().chain([1, u64::MAX]) {
        let crosses = best.is_some_and(|best| match book.side() {
            Side::Buy => incoming <= best,
            Side::Sell => incoming >= best,
        });
        assert_eq!(
            book.crosses(incoming),
            crosses,
            "{incoming} against {best:?}"
        );
    }
    for level in levels {
        let queue = &model[&level.price];
        let mut slot = level.head;
        let mut seen = Vec::new();
        while slot != NIL {
            seen.push(slot);
            slot = pool.link(slot).next;
        }
        assert_eq!(&seen, queue);
        assert_eq!(level.tail, *queue.last().unwrap_or(&NIL));
        let sum: u64 = queue.iter().map(|&s| pool.get(s).leaves()).sum();
        assert_eq!(level.qty, sum);
        assert!(book.has_level(level.price));
    }
}

/// Prices near 10,000, beyond the window on both sides, and at the
/// ends of the range where the window's placement clamps.
fn price() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 9_950u64..10_050,
        2 => 1u64..40_000,
        1 => Just(1u64),
        1 => Just(u64::MAX),
        1 => (u64::MAX - 5_000)..u64::MAX,
    ]
}

proptest! {
    #[test]
    fn ladder_matches_a_sorted_map(
        buy in any::<bool>(),
        ops in prop::collection::vec((any::<bool>(), price(), 1u64..9, any::<u16>()), 1..300),
    ) {
        let side = if buy { Side::Buy } else { Side::Sell };
        let mut book = BookSide::new(side);
        let mut pool = OrderPool::default();
        let mut model: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        let mut live: Vec<u32> = Vec::new();
        for (add, price, qty, pick) in ops {
            if add || live.is_empty() {
                let slot = pool.insert(order(side, price, qty));
                let total = book.push_back(&mut pool, slot);
                model.entry(price).or_default().push(slot);
                live.push(slot);
                let sum: u64 = model[&price].iter().map(|&s| pool.get(s).leaves()).sum();
                prop_assert_eq!(total, sum);
            } else {
                let slot = live.swap_remove(usize::from(pick) % live.len());
                let price = pool.get(slot).price;
                let left = book.unlink(&mut pool, slot);
                pool.remove(slot);
                let queue = model.entry(price).or_default();
                queue.retain(|&s| s != slot);
                if queue.is_empty() {
                    model.remove(&price);
                    prop_assert!(!book.has_level(price));
                    prop_assert_eq!(left, 0);
                }
            }
            check(&book, &pool, &model);
        }
    }
}

#[test]
fn an_empty_window_moves_and_takes_in_the_overflow() {
    let mut book = BookSide::new(Side::Sell);
    let mut pool = OrderPool::default();
    let near = pool.insert(order(Side::Sell, 10_000, 5));
    book.push_back(&mut pool, near);
    let far = pool.insert(order(Side::Sell, 50_000, 7));
    book.push_back(&mut pool, far);
    assert_eq!(book.overflow.len(), 1, "50,000 is beyond the first window");
    book.unlink(&mut pool, near);
    assert_eq!(book.best().map(|l| (l.price, l.qty)), Some((50_000, 7)));
    let next = pool.insert(order(Side::Sell, 49_000, 3));
    book.push_back(&mut pool, next);
    assert!(book.overflow.is_empty(), "the moved window took in 50,000");
    let prices: Vec<u64> = book.levels_best_first().map(|l| l.price).collect();
    assert_eq!(prices, [49_000, 50_000]);
    book.unlink(&mut pool, next);
    assert_eq!(book.best().map(|l| l.price), Some(50_000));
}

#[test]
fn the_window_follows_the_best() {
    let mut book = BookSide::new(Side::Sell);
    let mut pool = OrderPool::default();
    let first = pool.insert(order(Side::Sell, 50_000, 1));
    book.push_back(&mut pool, first);
    for price in 10_000..10_200 {
        let slot = pool.insert(order(Side::Sell, price, 1));
        book.push_back(&mut pool, slot);
    }
    let outside: Vec<u64> = book.overflow.values().map(|l| l.price).collect();
    assert_eq!(outside, [50_000], "only the first order is left outside");
    assert_eq!(book.best().map(|l| l.price), Some(10_000));
    let prices: Vec<u64> = book.levels_best_first().map(|l| l.price).collect();
    let expected: Vec<u64> = (10_000..10_200).chain([50_000]).collect();
    assert_eq!(prices, expected);
}

#[test]
fn reduce_lowers_the_aggregate_in_window_and_overflow() {
    let mut book = BookSide::new(Side::Buy);
    let mut pool = OrderPool::default();
    for price in [10_000, 100] {
        let slot = pool.insert(order(Side::Buy, price, 9));
        book.push_back(&mut pool, slot);
    }
    assert_eq!(book.reduce(10_000, 4), 5);
    assert_eq!(book.reduce(100, 2), 7);
    if let Some(best) = book.best_mut() {
        best.qty -= 1;
    }
    let levels: Vec<(u64, u64)> = book.levels_best_first().map(|l| (l.price, l.qty)).collect();
    assert_eq!(levels, [(10_000, 4), (100, 7)]);
}

/// The window's own invariants, and that it and the overflow together
/// hold exactly the model's keys.
fn check_window(book: &BookSide, model: &BTreeMap<u64, Vec<u32>>) {
    let Some(window) = &book.window else {
        assert!(book.overflow.is_empty() && model.is_empty());
        return;
    };
    let mut keys = window.checked_keys(&book.overflow);
    keys.extend(book.overflow.keys().copied());
    keys.sort_unstable();
    let mut expected: Vec<u64> = model.keys().map(|&p| book.key(p)).collect();
    expected.sort_unstable();
    assert_eq!(keys, expected);
}

/// Adds `qty` at `price` to the book and the model.
fn add(
    book: &mut BookSide,
    pool: &mut OrderPool,
    model: &mut BTreeMap<u64, Vec<u32>>,
    price: u64,
    qty: u64,
) -> u32 {
    let slot = pool.insert(order(book.side(), price, qty));
    book.push_back(pool, slot);
    model.entry(price).or_default().push(slot);
    slot
}

/// Takes the order in `slot` out of the book and the model.
fn remove(
    book: &mut BookSide,
    pool: &mut OrderPool,
    model: &mut BTreeMap<u64, Vec<u32>>,
    slot: u32,
) {
    let price = pool.get(slot).price;
    book.unlink(pool, slot);
    pool.remove(slot);
    let queue = model.entry(price).or_default();
    queue.retain(|&s| s != slot);
    if queue.is_empty() {
        model.remove(&price);
    }
}

/// A cluster of prices and the orders added (`true`, at an offset into
/// it) or removed (`false`, the live order picked) there.
type Burst = (u64, Vec<(bool, u64, u16)>);

/// Bursts of orders in clusters of prices thousands of keys apart, each
/// burst in one cluster: the window is sent from cluster to cluster
/// (around the best, or to an order reaching an empty window) while
/// orders keep arriving and leaving during its moves.
fn bursts() -> impl Strategy<Value = Vec<Burst>> {
    let burst = prop::collection::vec(
        (prop::bool::weighted(0.7), 0u64..3_000, any::<u16>()),
        1..160,
    );
    prop::collection::vec((0u64..5, burst), 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_moving_window_matches_a_sorted_map(buy in any::<bool>(), bursts in bursts()) {
        let side = if buy { Side::Buy } else { Side::Sell };
        let mut book = BookSide::new(side);
        let mut pool = OrderPool::default();
        let mut model: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        let mut live: Vec<u32> = Vec::new();
        for (cluster, ops) in bursts {
            for (is_add, offset, pick) in ops {
                if is_add || live.is_empty() {
                    let price = 20_000 + cluster * 6_000 + offset;
                    let qty = u64::from(pick % 7) + 1;
                    live.push(add(&mut book, &mut pool, &mut model, price, qty));
                } else {
                    let slot = live.swap_remove(usize::from(pick) % live.len());
                    remove(&mut book, &mut pool, &mut model, slot);
                }
                let best = model_levels(side, &model).first().copied();
                prop_assert_eq!(book.best().map(|l| l.price), best);
                prop_assert_eq!(book.level_count(), model.len());
            }
            check(&book, &pool, &model);
            check_window(&book, &model);
        }
    }
}

#[test]
fn the_window_moves_to_the_best_a_step_at_a_time() {
    let mut book = BookSide::new(Side::Sell);
    let mut pool = OrderPool::default();
    let mut model = BTreeMap::new();
    for price in 50_000..51_000 {
        add(&mut book, &mut pool, &mut model, price, 1);
    }
    assert!(book.overflow.is_empty());
    let mut steps = 0;
    for price in 10_000..11_200 {
        let outside = book.overflow.len();
        add(&mut book, &mut pool, &mut model, price, 1);
        // The order itself, plus one step of levels either way.
        let moved = book.overflow.len().abs_diff(outside);
        assert!(
            moved <= window::STEP + 64,
            "{moved} levels moved at {price}"
        );
        if book.window.as_ref().is_some_and(|w| w.moving()) {
            steps += 1;
            // Mid-move the book reads the same as the model.
            check(&book, &pool, &model);
            check_window(&book, &model);
        }
    }
    // 2,000 levels moved, at most `STEP` plus a word per addition.
    assert!(steps >= 2_000 / (window::STEP + 64), "{steps} steps");
    assert!(book.window.as_ref().is_some_and(|w| !w.moving()));
    let outside: Vec<u64> = book.overflow.values().map(|l| l.price).collect();
    assert_eq!(outside, (50_000..51_000).collect::<Vec<_>>());
    check(&book, &pool, &model);
    check_window(&book, &model);
}
