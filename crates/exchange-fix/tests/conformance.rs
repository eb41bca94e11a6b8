//! FIX 4.4 application-level conformance over TCP against a real node:
//! the standard fields of the accepted messages, OrderQtyData, the Parties
//! group, OrderStatusRequest and PossResend, and a message of another
//! FIX version on a logged-on connection.

use exchange_fix::message::Message;
use exchange_testkit::fix::{session, Client, Node};

const ORDER: &str = "55=BTC-USD|54=1|60=20240101-00:00:00|40=2|44=59000|";

async fn open_orders(node: &Node, account: u64) -> usize {
    let query = exchange_node::OrderQuery::Open {
        accounts: vec![account],
        symbol: None,
    };
    node.handle
        .orders(query)
        .await
        .expect("orders")
        .orders
        .len()
}

fn reject_of(m: &Message) -> (Option<&str>, Option<&str>, Option<&str>) {
    (m.text(35), m.text(373), m.text(371))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_order_fields_are_accepted_and_their_values_checked() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    let standard = "1=1|21=1|48=US0000000001|22=4|167=FOR|526=s1|58=hello|\
                    453=2|448=DESK1|447=D|452=3|448=TRADER7|447=D|452=11|";
    a.send("D", &format!("11=f1|38=0.1|{ORDER}{standard}"))
        .await;
    let ack = a.recv().await;
    assert_eq!(
        (ack.text(35), ack.text(150), ack.text(11)),
        (Some("8"), Some("0"), Some("f1")),
        "{:?}",
        ack.text(58)
    );
    a.send(
        "F",
        "11=f1c|41=f1|55=BTC-USD|54=1|60=20240101-00:00:00|167=FOR|453=1|448=DESK1|447=D|452=3|",
    )
    .await;
    let canceled = a.recv().await;
    assert_eq!(
        (canceled.text(150), canceled.text(11)),
        (Some("4"), Some("f1c"))
    );

    let cases = [
        ("167=BOO|", ("5", "167")),
        ("48=X1|22=Z|", ("5", "22")),
        ("48=X1|", ("1", "22")),
        ("58=|", ("4", "58")),
        ("453=x|", ("6", "453")),
        ("453=1|448=D|452=999|", ("5", "452")),
        ("59=6|126=not-a-time|", ("6", "126")),
        ("386=2|336=PRE-OPEN|", ("16", "386")),
    ];
    for (extra, (reason, tag)) in cases {
        a.send("D", &format!("11=bad|38=0.1|{ORDER}{extra}")).await;
        let reject = a.recv().await;
        assert_eq!(
            reject_of(&reject),
            (Some("3"), Some(reason), Some(tag)),
            "{extra}"
        );
    }
    // TransactTime in the wrong format.
    a.send(
        "D",
        "11=bad|38=0.1|55=BTC-USD|54=1|60=yesterday|40=2|44=59000|",
    )
    .await;
    assert_eq!(
        reject_of(&a.recv().await),
        (Some("3"), Some("6"), Some("60"))
    );
    assert_eq!(open_orders(&node, 1).await, 0);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parties_group_count_must_match_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    let cases = [
        (
            "453=3|448=P1|447=D|452=3|448=P2|447=D|452=3|",
            ("16", "453"),
        ),
        ("453=1|448=P1|452=3|448=P2|452=3|", ("16", "453")),
        ("453=0|448=P1|", ("16", "453")),
        ("453=1|447=D|448=P1|", ("15", "447")),
        ("448=P1|", ("2", "448")),
    ];
    for (group, (reason, tag)) in cases {
        a.send("D", &format!("11=g1|38=0.1|{ORDER}{group}")).await;
        let reject = a.recv().await;
        assert_eq!(
            reject_of(&reject),
            (Some("3"), Some(reason), Some(tag)),
            "{group}"
        );
    }
    a.send("D", &format!("11=g2|38=0.1|{ORDER}453=0|")).await;
    assert_eq!(a.recv().await.text(150), Some("0"));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_quantity_data_is_refused_by_the_application_not_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    // CashOrderQty on a limit order reaches the core, which refuses funds
    // on anything but a market buy.
    let cases = [("", "(38)"), ("152=1000|", "funds"), ("516=50|", "(516)")];
    for (qty, named) in cases {
        a.send("D", &format!("11=q1|{ORDER}{qty}")).await;
        let refused = a.recv().await;
        assert_eq!(refused.problem(), None, "the answer is valid FIX");
        assert_eq!(
            (refused.text(35), refused.text(150), refused.text(39)),
            (Some("8"), Some("8"), Some("8")),
            "{qty}"
        );
        let text = refused.text(58).unwrap_or_default();
        assert!(text.contains(named), "{qty}: {text}");
    }
    a.send("D", &format!("11=q2|38=0.1|{ORDER}")).await;
    assert_eq!(a.recv().await.text(150), Some("0"));
    a.send("G", &format!("11=q3|41=q2|{ORDER}152=10|")).await;
    let refused = a.recv().await;
    assert_eq!(
        (refused.text(35), refused.text(434)),
        (Some("9"), Some("2"))
    );
    assert!(refused.text(58).unwrap_or_default().contains("(152)"));
    assert_eq!(open_orders(&node, 1).await, 1);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_status_request_answers_with_the_order_as_it_stands() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(
        dir.path(),
        vec![session("A", 1, false), session("B", 2, false)],
        &[1, 2],
    )
    .await;
    let mut a = Client::logon(node.addr, "A").await;
    let mut b = Client::logon(node.addr, "B").await;
    a.send("D", &format!("11=s1|38=1|{ORDER}")).await;
    let ack = a.recv().await;
    let order_id = ack.text(37).expect("an OrderID").to_string();

    a.send("H", "11=s1|55=BTC-USD|54=1|790=r1|").await;
    let status = a.recv().await;
    assert_eq!(
        (
            status.text(35),
            status.text(150),
            status.text(39),
            status.text(37),
            status.text(790),
            status.text(151)
        ),
        (
            Some("8"),
            Some("I"),
            Some("0"),
            Some(order_id.as_str()),
            Some("r1"),
            Some("1")
        )
    );
    a.send("H", &format!("37={order_id}|11=whatever|55=BTC-USD|54=1|"))
        .await;
    let by_id = a.recv().await;
    assert_eq!((by_id.text(150), by_id.text(11)), (Some("I"), Some("s1")));

    a.send("H", "11=nope|55=BTC-USD|54=1|790=r2|").await;
    let unknown = a.recv().await;
    assert_eq!(
        (
            unknown.text(35),
            unknown.text(150),
            unknown.text(39),
            unknown.text(790)
        ),
        (Some("8"), Some("I"), Some("8"), Some("r2"))
    );
    // Another account's order is not this session's to see.
    b.send("H", &format!("37={order_id}|11=s1|55=BTC-USD|54=1|"))
        .await;
    assert_eq!(b.recv().await.text(39), Some("8"));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_order_already_taken_is_answered_with_its_state_not_placed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    let order = format!("11=r1|38=1|{ORDER}");
    a.send("D", &order).await;
    let ack = a.recv().await;
    assert_eq!(ack.text(150), Some("0"));
    let resent = a.encode_with_header("D", "97=Y|", &order);
    a.write(&resent).await;
    let answer = a.recv().await;
    assert_eq!(
        (
            answer.text(35),
            answer.text(150),
            answer.text(39),
            answer.text(37)
        ),
        (Some("8"), Some("I"), Some("0"), ack.text(37))
    );
    // Sent again before the first was even applied: still one order.
    let order = format!("11=r2|38=1|{ORDER}");
    let mut burst = a.encode("D", &order);
    burst.extend(a.encode_with_header("D", "97=Y|", &order));
    a.write(&burst).await;
    let first = a.recv().await;
    let second = a.recv().await;
    assert_eq!(
        (first.text(150), second.text(150), second.text(37)),
        (Some("0"), Some("I"), first.text(37))
    );
    // A PossResend order never seen before is an order like any other.
    let fresh = a.encode_with_header("D", "97=Y|", &format!("11=r3|38=1|{ORDER}"));
    a.write(&fresh).await;
    assert_eq!(a.recv().await.text(150), Some("0"));
    assert_eq!(open_orders(&node, 1).await, 3);
    // One the core refused is not submitted again either: the copy gets
    // the order's status (rejected), not a second rejection.
    let refused = format!("11=r4|38=100000000|{ORDER}");
    a.send("D", &refused).await;
    let first = a.recv().await;
    assert_eq!((first.text(150), first.text(39)), (Some("8"), Some("8")));
    let resent = a.encode_with_header("D", "97=Y|", &refused);
    a.write(&resent).await;
    let copy = a.recv().await;
    assert_eq!((copy.text(150), copy.text(39)), (Some("I"), Some("8")));
    assert_eq!(open_orders(&node, 1).await, 3);
    node.stop().await;
}

/// The Logout a Logon from `sender` with `password` gets, read until the
/// exchange closes the connection.
async fn refusal(addr: std::net::SocketAddr, sender: &str, password: &str) -> Message {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let fields = format!(
        "35=A|49={sender}|56=EXCHANGE|34=1|52={}|98=0|108=30|554={password}|",
        exchange_fix::time::format(exchange_fix::time::now_ns())
    );
    let logon = exchange_fix::frame::seal(&fields.replace('|', "\x01").into_bytes());
    stream.write_all(&logon).await.expect("write");
    let mut answer = Vec::new();
    tokio::time::timeout(exchange_testkit::fix::WAIT, stream.read_to_end(&mut answer))
        .await
        .expect("the exchange closes the connection")
        .expect("read");
    match exchange_fix::frame::next_frame(&answer) {
        Ok(Some((exchange_fix::frame::Frame::Message(raw), _))) => Message::parse(raw),
        other => panic!("no Logout: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_comp_ids_and_a_wrong_password_get_the_same_answer() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    for n in 0..3 {
        a.send("1", &format!("112=t{n}|")).await;
        a.recv().await;
    }
    let unknown = refusal(node.addr, "NOBODY", "pw-NOBODY").await;
    let wrong = refusal(node.addr, "A", "guess").await;
    for logout in [&unknown, &wrong] {
        assert_eq!((logout.text(35), logout.seq_num()), (Some("5"), Some(1)));
    }
    assert_eq!(unknown.text(58), wrong.text(58));
    assert!(unknown
        .text(58)
        .unwrap_or_default()
        .contains("or invalid Password (554)"));
    // The logged-on session is untouched and goes on in sequence.
    a.send("1", "112=after|").await;
    let heartbeat = a.recv().await;
    assert_eq!(
        (heartbeat.text(112), heartbeat.seq_num()),
        (Some("after"), Some(5))
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_begin_string_is_answered_with_logout_and_the_connection_closes() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path(), vec![session("A", 1, false)], &[1]).await;
    let mut a = Client::logon(node.addr, "A").await;
    // The next TestRequest of the session, as a FIX 4.2 message.
    let fix44 = String::from_utf8(a.encode("1", "112=id|")).expect("ASCII");
    let (_, rest) = fix44.split_once("\x019=").expect("BodyLength");
    let (body, _) = rest.rsplit_once("10=").expect("CheckSum");
    let mut fix42 = format!("8=FIX.4.2\x019={body}").into_bytes();
    let sum = exchange_fix::frame::checksum(&fix42);
    fix42.extend(format!("10={sum:03}\x01").into_bytes());
    a.write(&fix42).await;
    let logout = a.recv().await;
    assert_eq!(logout.text(35), Some("5"));
    assert!(
        logout.text(58).unwrap_or_default().contains("BeginString"),
        "{:?}",
        logout.text(58)
    );
    let after = tokio::time::timeout(exchange_testkit::fix::WAIT, a.next()).await;
    assert!(
        matches!(after, Ok(None)),
        "the connection closes after the Logout"
    );
    node.stop().await;
}
