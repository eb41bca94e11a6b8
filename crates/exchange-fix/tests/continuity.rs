//! A session's numbers in the log on a single node (a venue of one
//! process): commands carry their MsgSeqNums, a reset during the session
//! is recorded before the commands numbered from 2 again, a
//! reconnection continues from the node's own store, a logon recorded for
//! another process logs the connection out, and a session another process
//! held is taken over with the log's numbers, and a message another
//! process forwarded already is applied and answered once.

use exchange_fix::continuity::{link_id, RESERVE_BLOCK};
use exchange_node::fix_links::FixApplied;
use exchange_node::{LogEntry, OrderQuery};
use exchange_testkit::engine::limit;
use exchange_testkit::fix::{session, Client, Node};
use exchange_types::{Command, Side, Stamped};

const ORDER: &str = "55=BTC-USD|54=1|60=20240101-00:00:00|40=2|44=59000|38=0.01|";

async fn open_orders(node: &Node) -> usize {
    let query = OrderQuery::Open {
        accounts: vec![1],
        symbol: None,
    };
    node.handle
        .orders(query)
        .await
        .expect("orders")
        .orders
        .len()
}

async fn place(client: &mut Client, cl_ord_id: &str) {
    client.send("D", &format!("11={cl_ord_id}|{ORDER}")).await;
    let report = client.recv_until(|m| m.text(35) == Some("8")).await;
    assert_eq!(
        (report.text(11), report.text(150)),
        (Some(cl_ord_id), Some("0")),
        "{:?}",
        report.text(58)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_during_the_session_lets_numbers_start_again() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut events = node.handle.subscribe();
    let mut a = Client::logon(node.addr, "A").await;
    for n in 0..3 {
        place(&mut a, &format!("r{n}")).await;
    }
    // A Logon with ResetSeqNumFlag on the logged-on session.
    a.seq = 1;
    a.send("A", "98=0|108=30|141=Y|554=pw-A|").await;
    let answer = a.recv().await;
    assert_eq!((answer.text(35), answer.text(141)), (Some("A"), Some("Y")));
    // Numbered 2 again: applied, not refused as a copy of the first 2.
    place(&mut a, "after-reset").await;
    assert_eq!(open_orders(&node).await, 4);

    // Every order-entry command went through the log with its number.
    let mut numbers = Vec::new();
    while let Ok(applied) = events.try_recv() {
        match &applied.fix {
            Some(FixApplied::Sequenced { seq, .. }) => numbers.push(*seq),
            Some(FixApplied::Logon { last_in, .. }) => numbers.push(100 + last_in),
            _ => {}
        }
    }
    // The first Logon (a reset: 1), three orders, the reset, one order.
    assert_eq!(numbers, [101, 2, 3, 4, 101, 2]);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnection_continues_from_the_node_s_store() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    place(&mut a, "k1").await;
    a.send("5", "").await;
    let logout = a.recv().await;
    assert_eq!(logout.text(35), Some("5"));
    let next_seq = a.seq;
    let last_read = logout.seq_num().expect("MsgSeqNum");
    drop(a);

    let mut again = Client::logon_at(node.addr, "A", next_seq).await;
    let logon = again.recv().await;
    assert_eq!(logon.text(35), Some("A"), "{:?}", logon.text(58));
    assert_eq!(logon.seq_num(), Some(last_read + 1), "no gap where it was");
    place(&mut again, "k2").await;
    assert_eq!(open_orders(&node).await, 2);
    node.stop().await;
}

/// Records, as another process would, that the session `A` logged on
/// there.
async fn logon_elsewhere(node: &Node) {
    let entry = LogEntry::FixLogon {
        ts: 0,
        link: link_id("A", "EXCHANGE"),
        owner: 999,
        reset: false,
        reserve: RESERVE_BLOCK,
    };
    let applied = node.handle.submit(entry).await.expect("logon elsewhere");
    assert!(matches!(
        applied.fix,
        Some(FixApplied::Logon { owner: 999, .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_is_logged_out_when_its_session_logs_on_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    place(&mut a, "e1").await;
    logon_elsewhere(&node).await;
    let logout = a.recv().await;
    assert_eq!(
        (logout.text(35), logout.text(58)),
        (Some("5"), Some("the session logged on at another gateway"))
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_held_elsewhere_is_taken_over_with_the_log_s_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    place(&mut a, "t1").await;
    let last_applied = a.seq - 1;
    a.send("5", "").await;
    assert_eq!(a.recv().await.text(35), Some("5"));
    let next_seq = a.seq;
    drop(a);

    // Another process held the session since (and reserved numbers).
    logon_elsewhere(&node).await;
    let mut again = Client::logon_at(node.addr, "A", next_seq).await;
    let logon = again.recv().await;
    assert_eq!(logon.text(35), Some("A"), "{:?}", logon.text(58));
    // Above this node's reservation and the other process's.
    assert_eq!(logon.seq_num(), Some(1 + 2 * RESERVE_BLOCK));
    // The log applied up to the order: the Logout after it is asked for.
    let request = again.recv().await;
    assert_eq!(
        (request.text(35), request.uint(7)),
        (Some("2"), Some(last_applied + 1))
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_another_process_already_forwarded_is_applied_and_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    place(&mut a, "d1").await;
    // The copy another process forwarded of the counterparty's next
    // message reaches the log first.
    let place_copy = limit(1, "d2", Side::Buy, "59000", "0.01");
    let copy = LogEntry::FixSequenced {
        link: link_id("A", "EXCHANGE"),
        seq: a.seq,
        entry: Box::new(LogEntry::Core(Stamped {
            ts: 0,
            command: Command::Place(place_copy),
        })),
    };
    let applied = node.handle.submit(copy).await.expect("the copy");
    assert!(!applied.refused_unapplied());
    // The report of the order comes once, from the copy applied; the
    // message itself is refused by the log as a copy and answers nothing.
    place(&mut a, "d2").await;
    a.send("H", "11=d1|54=1|55=BTC-USD|").await;
    let status = a.recv().await;
    assert_eq!(
        (status.text(35), status.text(11), status.text(150)),
        (Some("8"), Some("d1"), Some("I")),
        "the next message is the status asked for, not a second d2 report"
    );
    assert_eq!(open_orders(&node).await, 2);
    node.stop().await;
}
