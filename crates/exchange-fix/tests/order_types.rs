//! Market-to-limit orders (OrdType K), if-touched orders (OrdType J),
//! midpoint orders (OrdType P with ExecInst M) and a minimum acceptable
//! quantity (MinQty, 110) over raw FIX, end to end through a real node.

use exchange_testkit::fix::Node;

const ORDER: &str = "55=BTC-USD|60=20240101-00:00:00|";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn market_to_limit_and_min_qty_orders_are_placed_over_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (_node, mut a, mut b) = Node::with_two_clients(dir.path()).await;
    a.send("D", &format!("11=a1|54=2|38=1|44=60000|40=2|{ORDER}"))
        .await;
    assert_eq!(a.recv().await.text(150), Some("0"));
    a.send("D", &format!("11=a2|54=2|38=1|44=60100|40=2|{ORDER}"))
        .await;
    assert_eq!(a.recv().await.text(150), Some("0"));

    // K: takes the best offer's price, fills there and rests the rest.
    b.send("D", &format!("11=b1|54=1|38=1.5|40=K|{ORDER}"))
        .await;
    let new = b.recv().await;
    assert_eq!(
        (new.text(150), new.text(40), new.text(44)),
        (Some("0"), Some("K"), Some("60000"))
    );
    let fill = b.recv().await;
    assert_eq!(
        (fill.text(150), fill.text(39), fill.text(31), fill.text(151)),
        (Some("F"), Some("1"), Some("60000"), Some("0.5"))
    );
    assert_eq!(a.recv().await.text(150), Some("F"));

    // 110: the offer at 60100 has 1, short of 1.5: the order ends whole.
    b.send(
        "D",
        &format!("11=b2|54=1|38=2|44=60100|40=2|59=3|110=1.5|{ORDER}"),
    )
    .await;
    let new = b.recv().await;
    assert_eq!((new.text(150), new.text(110)), (Some("0"), Some("1.5")));
    let expired = b.recv().await;
    assert_eq!(
        (expired.text(150), expired.text(14), expired.text(151)),
        (Some("C"), Some("0"), Some("0"))
    );
    // A minimum it can meet: it trades.
    b.send(
        "D",
        &format!("11=b3|54=1|38=2|44=60100|40=2|59=3|110=1|{ORDER}"),
    )
    .await;
    assert_eq!(b.recv().await.text(150), Some("0"));
    let fill = b.recv().await;
    assert_eq!((fill.text(150), fill.text(32)), (Some("F"), Some("1")));
    // Immediate: what it did not fill expires.
    assert_eq!(b.recv().await.text(150), Some("C"));

    // A market-to-limit order facing an empty side is refused by the core.
    b.send("D", &format!("11=b4|54=1|38=1|40=K|{ORDER}")).await;
    let refused = b.recv().await;
    assert_eq!(refused.text(150), Some("8"));
    assert!(
        refused
            .text(58)
            .is_some_and(|t| t.starts_with("market_to_limit_no_opposite")),
        "{:?}",
        refused.text(58)
    );
}

/// OrdType J: market-if-touched, or limit-if-touched with a Price (44),
/// which FIX 4.4 has no OrdType of its own for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn if_touched_orders_are_ord_type_j_over_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (_node, mut a, mut b) = Node::with_two_clients(dir.path()).await;
    // A print at 60000 sets the last price.
    a.send("D", &format!("11=p1|54=2|38=1|44=60000|40=2|{ORDER}"))
        .await;
    assert_eq!(a.recv().await.text(150), Some("0"));
    b.send("D", &format!("11=p2|54=1|38=1|44=60000|40=2|{ORDER}"))
        .await;
    b.recv_until(|m| m.text(150) == Some("F")).await;

    // A take-profit above the market: J with a Price, reported as entered.
    a.send(
        "D",
        &format!("11=tp|54=2|38=1|40=J|44=60990|99=61000|{ORDER}"),
    )
    .await;
    let new = a.recv_until(|m| m.text(11) == Some("tp")).await;
    assert_eq!(
        (new.text(150), new.text(40), new.text(44), new.text(99)),
        (Some("0"), Some("J"), Some("60990"), Some("61000"))
    );
    // A market-if-touched sell the last price has already passed.
    a.send("D", &format!("11=no|54=2|38=1|40=J|99=59000|{ORDER}"))
        .await;
    let refused = a.recv_until(|m| m.text(11) == Some("no")).await;
    assert_eq!(refused.text(150), Some("8"));
    assert!(
        refused
            .text(58)
            .is_some_and(|t| t.starts_with("stop_would_trigger_immediately")),
        "{:?}",
        refused.text(58)
    );

    // A print at 61000 touches it: it enters as a limit order at 60990.
    a.send("D", &format!("11=p3|54=2|38=1|44=61000|40=2|{ORDER}"))
        .await;
    b.send("D", &format!("11=p4|54=1|38=1|44=61000|40=2|{ORDER}"))
        .await;
    let triggered = a
        .recv_until(|m| m.text(150) == Some("L") && m.text(11) == Some("tp"))
        .await;
    assert_eq!(
        (triggered.text(39), triggered.text(40), triggered.text(44)),
        (Some("0"), Some("J"), Some("60990"))
    );
}

/// OrdType P with ExecInst M: a midpoint order, resting unseen and
/// trading with another at the midpoint of the lit quotes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn midpoint_orders_trade_at_the_midpoint_over_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (_node, mut a, mut b) = Node::with_two_clients(dir.path()).await;
    for (id, side, price) in [("q1", 1, 59000), ("q2", 2, 61000)] {
        a.send(
            "D",
            &format!("11={id}|54={side}|38=1|44={price}|40=2|{ORDER}"),
        )
        .await;
        assert_eq!(a.recv().await.text(150), Some("0"));
    }
    a.send("D", &format!("11=m1|54=2|38=1|44=59500|40=P|18=M|{ORDER}"))
        .await;
    let new = a.recv().await;
    assert_eq!(
        (new.text(150), new.text(40), new.text(18), new.text(44)),
        (Some("0"), Some("P"), Some("M"), Some("59500"))
    );
    b.send("D", &format!("11=m2|54=1|38=1|40=P|18=M|59=3|{ORDER}"))
        .await;
    let new = b.recv().await;
    assert_eq!(
        (new.text(150), new.text(40), new.text(44)),
        (Some("0"), Some("P"), None)
    );
    let fill = b.recv().await;
    assert_eq!(
        (fill.text(150), fill.text(31), fill.text(39)),
        (Some("F"), Some("60000"), Some("2"))
    );
    assert_eq!(a.recv().await.text(31), Some("60000"));
    // The peg without its type is refused.
    b.send("D", &format!("11=m3|54=1|38=1|44=1|40=2|18=M|{ORDER}"))
        .await;
    let refused = b.recv().await;
    assert_eq!(
        (refused.text(150), refused.text(103)),
        (Some("8"), Some("11"))
    );
}
