//! The gateway end to end in-process: a real node (journal, core) and the
//! FIX acceptor, over TCP.

use exchange_node::LogEntry;
use exchange_testkit::fix::{session, Client, Node, WAIT};
use exchange_types::{Command, Dec, Phase, Stamped, Symbol};

const ORDER: &str = "55=BTC-USD|60=20240101-00:00:00|40=2|";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_fill_across_sessions_and_cancel_on_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let (node, mut a, mut b) = Node::with_two_clients(dir.path()).await;

    a.send("D", &format!("11=a1|54=2|38=1|44=60000|{ORDER}"))
        .await;
    let ack = a.recv().await;
    assert_eq!((ack.text(150), ack.text(11)), (Some("0"), Some("a1")));
    b.send("D", &format!("11=b1|54=1|38=0.25|44=60000|{ORDER}"))
        .await;
    let b_new = b.recv().await;
    let b_fill = b.recv().await;
    assert_eq!(
        (b_new.text(150), b_fill.text(150), b_fill.text(39)),
        (Some("0"), Some("F"), Some("2"))
    );
    let a_fill = a.recv().await;
    assert_eq!(
        (a_fill.text(150), a_fill.text(14), a_fill.text(151)),
        (Some("F"), Some("0.25"), Some("0.75"))
    );

    // A leaves without logging out: its resting order is canceled.
    drop(a);
    let remaining = tokio::time::timeout(WAIT, async {
        loop {
            let query = exchange_node::OrderQuery::Open {
                accounts: vec![1],
                symbol: None,
            };
            let orders = node.handle.orders(query).await.unwrap().orders.len();
            if orders == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        remaining.is_ok(),
        "cancel-on-disconnect did not cancel account 1's order"
    );
    b.send("5", "").await;
    assert_eq!(b.recv().await.text(35), Some("5"));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_keep_request_order_and_a_second_logon_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    // Pipelined: a valid order, one the gateway refuses itself (TimeInForce
    // 5, good till crossing), then another valid one; the answers come back in that order.
    let mut burst = a.encode("D", &format!("11=p1|54=1|38=0.1|44=59000|{ORDER}"));
    burst.extend(a.encode("D", &format!("11=p2|54=1|38=0.1|44=59000|59=5|{ORDER}")));
    burst.extend(a.encode("D", &format!("11=p3|54=1|38=0.1|44=59000|{ORDER}")));
    a.write(&burst).await;
    let ids: Vec<(String, String)> = [a.recv().await, a.recv().await, a.recv().await]
        .iter()
        .map(|m| {
            (
                m.text(11).unwrap_or_default().to_string(),
                m.text(150).unwrap_or_default().to_string(),
            )
        })
        .collect();
    let expected =
        [("p1", "0"), ("p2", "8"), ("p3", "0")].map(|(c, e)| (c.to_string(), e.to_string()));
    assert_eq!(ids, expected);

    let mut intruder = Client::logon_raw(node.addr, "A").await;
    let refused = intruder.recv().await;
    assert_eq!(refused.text(35), Some("5"));
    assert!(refused
        .text(58)
        .unwrap_or_default()
        .contains("already logged on"));
    // The first connection is untouched.
    a.send("1", "112=still-here|").await;
    assert_eq!(
        a.recv_until(|m| m.text(35) == Some("0")).await.text(112),
        Some("still-here")
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_logs_sessions_out() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    let stopping = tokio::spawn(node.stop());
    let logout = a.recv().await;
    assert_eq!(
        (logout.text(35), logout.text(58)),
        (Some("5"), Some("the exchange is shutting down"))
    );
    a.send("5", "").await;
    tokio::time::timeout(WAIT, stopping)
        .await
        .expect("the node stops")
        .expect("stop task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_carry_the_routing_fields_reversed() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    let routing = |m: &exchange_fix::message::Message| {
        [115, 116, 144, 128, 129, 145].map(|tag| m.text(tag).map(str::to_string))
    };
    let some = |v: &str| Some(v.to_string());

    // Accepted by the core: the ExecutionReport.
    a.send(
        "D",
        &format!("115=DESK|129=TRADER|144=NY|11=r1|54=1|38=0.1|44=59000|{ORDER}"),
    )
    .await;
    let ack = a.recv().await;
    assert_eq!((ack.text(35), ack.text(150)), (Some("8"), Some("0")));
    assert_eq!(
        routing(&ack),
        [None, some("TRADER"), None, some("DESK"), None, some("NY")]
    );

    // Refused by the gateway itself: the rejected ExecutionReport.
    a.send(
        "D",
        &format!("128=BROKER|116=SUB|145=LDN|11=r2|54=1|38=0.1|44=59000|59=5|{ORDER}"),
    )
    .await;
    let refused = a.recv().await;
    assert_eq!(
        (refused.text(35), refused.text(150)),
        (Some("8"), Some("8"))
    );
    assert_eq!(
        routing(&refused),
        [some("BROKER"), None, some("LDN"), None, some("SUB"), None]
    );

    // A value no FIX field allows: the session-level Reject.
    a.send("D", &format!("115=DESK|11=r3|54=Z|38=0.1|44=59000|{ORDER}"))
        .await;
    let reject = a.recv().await;
    assert_eq!((reject.text(35), reject.text(373)), (Some("3"), Some("5")));
    assert_eq!(
        routing(&reject),
        [None, None, None, some("DESK"), None, None]
    );

    // A message type the exchange does not take: BusinessMessageReject.
    a.send("V", "144=NY|262=md1|").await;
    let business = a.recv().await;
    assert_eq!(business.text(35), Some("j"));
    assert_eq!(
        routing(&business),
        [None, None, None, None, None, some("NY")]
    );
    node.stop().await;
}

fn set_phase(symbol: &str, phase: Phase) -> LogEntry {
    LogEntry::Core(Stamped {
        ts: 0,
        command: Command::SetPhase {
            symbol: Symbol::new(symbol).unwrap(),
            phase,
        },
    })
}

/// SecurityStatusRequest over a real session: the answer, a pushed change
/// (the core's closing call, with its indicative uncrossing), and no more
/// pushes once unsubscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_status_is_answered_pushed_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;

    answered_then_pushed_the_closing_call(&mut a, &node).await;
    crossing_orders_bring_an_indication(&mut a).await;
    only_subscribed_symbols_are_pushed(&mut a, &node).await;
    the_operators_reference_price_is_pushed(&mut a, &node).await;

    // An unknown symbol: 326=20.
    a.send("e", "324=s3|55=NOPE-USD|263=0|").await;
    let unknown = a.recv_until(|m| m.text(35) == Some("f")).await;
    assert_eq!(
        (unknown.text(324), unknown.text(326)),
        (Some("s3"), Some("20"))
    );
    node.stop().await;
}

async fn answered_then_pushed_the_closing_call(a: &mut Client, node: &Node) {
    a.send("e", "324=s1|55=BTC-USD|263=1|").await;
    let answer = a.recv().await;
    assert_eq!(
        (
            answer.text(35),
            answer.text(324),
            answer.text(326),
            answer.text(325)
        ),
        (Some("f"), Some("s1"), Some("17"), Some("N"))
    );
    node.handle
        .submit(set_phase("BTC-USD", Phase::ClosingCall))
        .await
        .unwrap();
    let pushed = a.recv_until(|m| m.text(35) == Some("f")).await;
    assert_eq!(
        (pushed.text(326), pushed.text(625), pushed.text(325)),
        (Some("21"), Some("4"), Some("Y"))
    );
}

/// A crossing buy and sell: the indication follows.
async fn crossing_orders_bring_an_indication(a: &mut Client) {
    a.send("D", &format!("11=i1|54=1|38=0.2|44=60000|{ORDER}"))
        .await;
    a.send("D", &format!("11=i2|54=2|38=0.1|44=59000|{ORDER}"))
        .await;
    let indication = a
        .recv_until(|m| m.text(35) == Some("f") && m.text(332).is_some())
        .await;
    let volumes = |m: &exchange_fix::message::Message| {
        (
            m.text(330).map(str::to_string),
            m.text(331).map(str::to_string),
        )
    };
    let (buy, sell) = volumes(&indication);
    assert!(buy.is_some() && sell.is_some(), "{indication:?}");
    assert_eq!(indication.text(332), indication.text(333));
}

/// Unsubscribed from BTC-USD, subscribed to ETH-USD: a change of each, in
/// that order, brings only ETH-USD's.
async fn only_subscribed_symbols_are_pushed(a: &mut Client, node: &Node) {
    a.send("e", "324=s1|55=BTC-USD|263=2|").await;
    a.send("e", "324=s2|55=ETH-USD|263=1|").await;
    let eth = a.recv_until(|m| m.text(35) == Some("f")).await;
    assert_eq!((eth.text(55), eth.text(325)), (Some("ETH-USD"), Some("N")));
    node.handle
        .submit(set_phase("BTC-USD", Phase::PostClose))
        .await
        .unwrap();
    node.handle
        .submit(set_phase("ETH-USD", Phase::ClosingCall))
        .await
        .unwrap();
    let next = a.recv_until(|m| m.text(35) == Some("f")).await;
    assert_eq!(
        (next.text(55), next.text(324)),
        (Some("ETH-USD"), Some("s2"))
    );
}

/// Subscribed to ETH-USD: the operator's new reference price is pushed,
/// in LastPx (31).
async fn the_operators_reference_price_is_pushed(a: &mut Client, node: &Node) {
    node.handle
        .submit(LogEntry::Core(Stamped {
            ts: 0,
            command: Command::SetReferencePrice {
                symbol: Symbol::new("ETH-USD").unwrap(),
                price: Dec::new(12_345, 1),
            },
        }))
        .await
        .unwrap();
    let pushed = a
        .recv_until(|m| m.text(35) == Some("f") && m.text(31).is_some())
        .await;
    assert_eq!(
        (pushed.text(55), pushed.text(324), pushed.text(325)),
        (Some("ETH-USD"), Some("s2"), Some("Y"))
    );
    assert_eq!(pushed.text(31), Some("1234.5"));
}
