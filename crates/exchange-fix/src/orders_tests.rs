//! The order cache against the real core's events.

use super::*;
use crate::testkit::{dec, Core};
use exchange_types::{
    Cancel, ClientOrderId, Command, OrderType, Place, Replace, SelfTradePrevention, Side, Symbol,
    TimeInForce,
};

fn place(
    account: AccountId,
    id: &str,
    side: Side,
    price: Option<&str>,
    qty: &str,
    tif: TimeInForce,
) -> Command {
    Command::Place(Place {
        account,
        client_order_id: ClientOrderId::new(id).unwrap(),
        symbol: Symbol::new("BTC-USD").unwrap(),
        side,
        order_type: if price.is_some() {
            OrderType::Limit
        } else {
            OrderType::Market
        },
        price: price.map(dec),
        qty: dec(qty),
        tif,
        post_only: false,
        stp: SelfTradePrevention::Decrement,
        ext: None,
    })
}

fn run(core: &mut Core, cache: &mut OrderCache, command: Command) -> Vec<Report> {
    let events = core.apply(command);
    let mut reports = Vec::new();
    cache.apply(&events, |a| a == 1, &mut reports);
    reports
}

const UNIT: u64 = 100_000_000;

#[test]
fn an_order_through_its_life() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    let order_id = rests_then_fills_in_part(&mut core, &mut cache);
    let by_new_id = replaced_under_a_new_cl_ord_id(&mut core, &mut cache, order_id);
    canceled_and_remembered(&mut core, &mut cache, by_new_id);
}

/// Account 1's sell of 2 rests, then account 2 takes half of it; returns
/// its order id.
fn rests_then_fills_in_part(core: &mut Core, cache: &mut OrderCache) -> u64 {
    let new = run(
        core,
        cache,
        place(1, "a", Side::Sell, Some("100"), "2", TimeInForce::Gtc),
    );
    assert!(matches!(
        &new[..],
        [Report {
            kind: ReportKind::New {
                stop_price: None,
                ..
            },
            ..
        }]
    ));
    let order_id = new[0].order.order_id;
    let fill = run(
        core,
        cache,
        place(2, "b", Side::Buy, Some("100"), "0.5", TimeInForce::Gtc),
    );
    assert_eq!(fill.len(), 1, "account 2 is out of scope");
    assert_eq!(
        (
            fill[0].order.progress.filled_qty,
            fill[0].order.progress.status
        ),
        (UNIT / 2, OrderStatus::PartiallyFilled)
    );
    assert!(matches!(fill[0].kind, ReportKind::Fill { maker: true, .. }));
    order_id
}

/// The partly filled order replaced down to 1 as "a2"; returns the
/// reference by its new ClOrdID.
fn replaced_under_a_new_cl_ord_id(
    core: &mut Core,
    cache: &mut OrderCache,
    order_id: u64,
) -> OrderRef {
    let replaced = run(
        core,
        cache,
        Command::Replace(Replace {
            account: 1,
            order: OrderRef::Id(order_id),
            new_client_order_id: Some(ClientOrderId::new("a2").unwrap()),
            price: None,
            qty: Some(dec("1")),
        }),
    );
    assert_eq!(
        replaced[0].kind,
        ReportKind::Replaced {
            old_cl_ord_id: ClientOrderId::new("a").unwrap(),
            stop_price: None,
        }
    );
    assert_eq!(
        (
            replaced[0].order.progress.qty,
            replaced[0].order.leaves_qty()
        ),
        (UNIT, UNIT / 2)
    );
    let by_new_id = OrderRef::Client(ClientOrderId::new("a2").unwrap());
    assert_eq!(
        cache.find(1, &by_new_id).map(|o| o.order_id),
        Some(order_id)
    );
    by_new_id
}

/// Canceling it closes it; the cache still answers for it, to its own
/// account only.
fn canceled_and_remembered(core: &mut Core, cache: &mut OrderCache, by_new_id: OrderRef) {
    let canceled = run(
        core,
        cache,
        Command::Cancel(Cancel {
            account: 1,
            order: by_new_id,
        }),
    );
    assert_eq!(canceled[0].order.progress.status, OrderStatus::Canceled);
    assert_eq!(canceled[0].order.leaves_qty(), 0);
    assert_eq!(cache.open_orders(), 0);
    assert_eq!(
        cache.find(1, &by_new_id).map(|o| o.progress.status),
        Some(OrderStatus::Canceled),
        "remembered after closing"
    );
    assert_eq!(cache.find(2, &by_new_id), None, "another account's view");
}

#[test]
fn market_remainder_expires_and_average_price_spans_levels() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    run(
        &mut core,
        &mut cache,
        place(2, "s1", Side::Sell, Some("100"), "1", TimeInForce::Gtc),
    );
    run(
        &mut core,
        &mut cache,
        place(2, "s2", Side::Sell, Some("103"), "1", TimeInForce::Gtc),
    );
    let reports = run(
        &mut core,
        &mut cache,
        place(1, "m", Side::Buy, None, "3", TimeInForce::Ioc),
    );
    let kinds: Vec<&ReportKind> = reports.iter().map(|r| &r.kind).collect();
    assert!(
        matches!(
            kinds[..],
            [
                ReportKind::New {
                    stop_price: None,
                    ..
                },
                ReportKind::Fill { .. },
                ReportKind::Fill { .. },
                ReportKind::Expired
            ]
        ),
        "{kinds:?}"
    );
    let last = &reports[3].order;
    assert_eq!(
        (
            last.progress.filled_qty,
            last.progress.avg_price(),
            last.progress.status
        ),
        (2 * UNIT, 1_015 * UNIT / 10, OrderStatus::Expired)
    );
}

#[test]
fn self_trade_decrement_shrinks_without_closing() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    run(
        &mut core,
        &mut cache,
        place(1, "rest", Side::Sell, Some("100"), "2", TimeInForce::Gtc),
    );
    let reports = run(
        &mut core,
        &mut cache,
        place(1, "take", Side::Buy, Some("100"), "0.5", TimeInForce::Gtc),
    );
    let resting = reports
        .iter()
        .find(|r| r.order.client_order_id.as_str() == "rest")
        .expect("the resting order is reported");
    assert!(matches!(resting.kind, ReportKind::Canceled { leaves_qty, .. } if leaves_qty > 0));
    assert_eq!(
        (resting.order.progress.qty, resting.order.progress.status),
        (UNIT * 3 / 2, OrderStatus::New)
    );
}

#[test]
fn seeding_picks_up_open_orders_and_their_average_price() {
    let mut core = Core::new();
    let mut history = exchange_node::history::History::default();
    for command in [
        place(1, "a", Side::Sell, Some("100"), "2", TimeInForce::Gtc),
        place(2, "b", Side::Buy, Some("100"), "0.5", TimeInForce::Gtc),
        place(1, "gone", Side::Sell, Some("200"), "1", TimeInForce::Gtc),
    ] {
        history.record(&core.apply(command));
    }
    history.record(&core.apply(Command::Cancel(Cancel {
        account: 1,
        order: OrderRef::Client(ClientOrderId::new("gone").unwrap()),
    })));
    let orders: Vec<_> = history
        .open_orders_of(1, None)
        .into_iter()
        .cloned()
        .collect();
    let mut cache = OrderCache::default();
    cache.seed(&orders);
    assert_eq!(cache.open_orders(), 1);
    let open = cache
        .find(1, &OrderRef::Client(ClientOrderId::new("a").unwrap()))
        .expect("open order");
    assert_eq!(
        (
            open.progress.filled_qty,
            open.progress.avg_price(),
            open.side,
            open.progress.status
        ),
        (
            UNIT / 2,
            100 * UNIT,
            Side::Sell,
            OrderStatus::PartiallyFilled
        )
    );
    // Closed before the seed: only the reporting store has it now.
    assert!(cache
        .find(1, &OrderRef::Client(ClientOrderId::new("gone").unwrap()))
        .is_none());
}

#[test]
fn a_stop_reports_new_with_its_stop_px_then_triggered_as_exec_type_l() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    // Accounts 2 and 3 set a last price of 100.
    run(
        &mut core,
        &mut cache,
        place(2, "s0", Side::Sell, Some("100"), "1", TimeInForce::Gtc),
    );
    run(
        &mut core,
        &mut cache,
        place(3, "b0", Side::Buy, Some("100"), "1", TimeInForce::Gtc),
    );
    stop_limit_reports_new_with_its_stop_px(&mut core, &mut cache);
    replace_moves_the_trigger_down(&mut core, &mut cache);
    a_trade_at_the_trigger_reports_triggered(&mut core, &mut cache);
}

/// Account 1's stop limit buy "sl": limit 106, stop 105.
fn stop_limit_reports_new_with_its_stop_px(core: &mut Core, cache: &mut OrderCache) {
    let Command::Place(limit) = place(1, "sl", Side::Buy, Some("106"), "1", TimeInForce::Gtc)
    else {
        unreachable!()
    };
    let stop_limit = Command::Place(Place {
        order_type: OrderType::StopLimit,
        ext: Some(Box::new(exchange_types::PlaceExt {
            stop_price: Some(dec("105")),
            ..Default::default()
        })),
        ..limit
    });
    let new = run(core, cache, stop_limit);
    assert_eq!(new.len(), 1);
    let new_report = crate::reports::execution_report(&new[0], None);
    assert_eq!(
        (
            new_report.get(150).as_deref(),
            new_report.get(40).as_deref(),
            new_report.get(99).as_deref()
        ),
        (Some("0"), Some("4"), Some("105"))
    );
}

/// Moving the trigger down is a replace (ExecType 5) that echoes it.
fn replace_moves_the_trigger_down(core: &mut Core, cache: &mut OrderCache) {
    let replaced = run(
        core,
        cache,
        Command::replace(
            Replace {
                account: 1,
                order: OrderRef::Client(ClientOrderId::new("sl").unwrap()),
                new_client_order_id: Some(ClientOrderId::new("sl2").unwrap()),
                price: None,
                qty: None,
            },
            Some(dec("104")),
        ),
    );
    let [replaced] = &replaced[..] else {
        panic!("one report for the replace: {replaced:?}")
    };
    let out = crate::reports::execution_report(replaced, None);
    assert_eq!(
        (
            out.get(150).as_deref(),
            out.get(11).as_deref(),
            out.get(41).as_deref(),
            out.get(99).as_deref()
        ),
        (Some("5"), Some("sl2"), Some("sl"), Some("104"))
    );
}

/// Accounts 2 and 3 trade at 105, past the trigger of 104.
fn a_trade_at_the_trigger_reports_triggered(core: &mut Core, cache: &mut OrderCache) {
    run(
        core,
        cache,
        place(2, "s1", Side::Sell, Some("105"), "1", TimeInForce::Gtc),
    );
    let reports = run(
        core,
        cache,
        place(3, "b1", Side::Buy, Some("105"), "1", TimeInForce::Gtc),
    );
    let [triggered] = &reports[..] else {
        panic!("one report for account 1: {reports:?}")
    };
    assert_eq!(
        triggered.kind,
        ReportKind::Triggered {
            stop_price: 104 * UNIT
        }
    );
    assert_eq!(triggered.order.stop, StopState::Triggered);
    let out = crate::reports::execution_report(triggered, None);
    assert_eq!(
        (
            out.get(150).as_deref(),
            out.get(39).as_deref(),
            out.get(99).as_deref()
        ),
        (Some("L"), Some("0"), Some("104"))
    );
    assert_eq!(out.get(151).as_deref(), Some("1"));
}

#[test]
fn new_reports_echo_an_icebergs_max_floor_and_a_funds_buys_cash_order_qty() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    let Command::Place(limit) = place(1, "ice", Side::Buy, Some("90"), "5", TimeInForce::Gtc)
    else {
        unreachable!()
    };
    let iceberg = Command::Place(Place {
        ext: Some(Box::new(exchange_types::PlaceExt {
            display_qty: Some(dec("1")),
            ..Default::default()
        })),
        ..limit
    });
    let new = run(&mut core, &mut cache, iceberg);
    let [report] = &new[..] else {
        panic!("one report: {new:?}")
    };
    let out = crate::reports::execution_report(report, None);
    assert_eq!(
        (
            out.get(150).as_deref(),
            out.get(111).as_deref(),
            out.get(152)
        ),
        (Some("0"), Some("1"), None)
    );

    // Account 2 offers what the funds buy.
    run(
        &mut core,
        &mut cache,
        place(2, "offer", Side::Sell, Some("100"), "5", TimeInForce::Gtc),
    );
    let Command::Place(market) = place(1, "cash", Side::Buy, None, "0", TimeInForce::Ioc) else {
        unreachable!()
    };
    let by_funds = Command::Place(Place {
        ext: Some(Box::new(exchange_types::PlaceExt {
            funds: Some(dec("250")),
            ..Default::default()
        })),
        ..market
    });
    let reports = run(&mut core, &mut cache, by_funds);
    let new = reports
        .iter()
        .find(|r| matches!(r.kind, ReportKind::New { .. }))
        .unwrap_or_else(|| panic!("a New report: {reports:?}"));
    let out = crate::reports::execution_report(new, None);
    assert_eq!((out.get(152).as_deref(), out.get(111)), (Some("250"), None));
    // Only the acceptance echoes them: a fill is about the fill.
    let fill = reports
        .iter()
        .find(|r| matches!(r.kind, ReportKind::Fill { .. }))
        .unwrap_or_else(|| panic!("the funds buy fills: {reports:?}"));
    assert_eq!(crate::reports::execution_report(fill, None).get(152), None);
}

#[test]
fn a_hidden_orders_new_report_echoes_display_qty_zero() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    let Command::Place(limit) = place(1, "dark", Side::Buy, Some("100"), "20", TimeInForce::Gtc)
    else {
        unreachable!()
    };
    let hidden = Command::Place(Place {
        ext: Some(Box::new(exchange_types::PlaceExt {
            hidden: true,
            ..Default::default()
        })),
        ..limit.clone()
    });
    let new = run(&mut core, &mut cache, hidden);
    let [report] = &new[..] else {
        panic!("one report: {new:?}")
    };
    let out = crate::reports::execution_report(report, None);
    assert_eq!(
        (
            out.get(150).as_deref(),
            out.get(1138).as_deref(),
            out.get(111)
        ),
        (Some("0"), Some("0"), None)
    );
    // A displayed order's report carries no DisplayQty.
    let shown = Command::Place(Place {
        client_order_id: ClientOrderId::new("lit").unwrap(),
        ..limit
    });
    let new = run(&mut core, &mut cache, shown);
    let out = crate::reports::execution_report(&new[0], None);
    assert_eq!(out.get(1138), None);
}

#[test]
fn a_midpoint_orders_new_report_is_pegged_to_the_midpoint() {
    let mut core = Core::new();
    let mut cache = OrderCache::default();
    let Command::Place(limit) = place(1, "mid", Side::Buy, Some("100"), "2", TimeInForce::Gtc)
    else {
        unreachable!()
    };
    let midpoint = Command::Place(Place {
        order_type: OrderType::Midpoint,
        ..limit.clone()
    });
    let new = run(&mut core, &mut cache, midpoint);
    let [report] = &new[..] else {
        panic!("one report: {new:?}")
    };
    let out = crate::reports::execution_report(report, None);
    assert_eq!(
        (
            out.get(150).as_deref(),
            out.get(40).as_deref(),
            out.get(18).as_deref(),
            out.get(44).as_deref()
        ),
        (Some("0"), Some("P"), Some("M"), Some("100"))
    );
    // A limit order's report carries no ExecInst.
    let lit = Command::Place(Place {
        client_order_id: ClientOrderId::new("lit").unwrap(),
        price: Some(dec("90")),
        ..limit
    });
    let new = run(&mut core, &mut cache, lit);
    let out = crate::reports::execution_report(&new[0], None);
    assert_eq!((out.get(40).as_deref(), out.get(18)), (Some("2"), None));
}
