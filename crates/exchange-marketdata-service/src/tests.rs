//! The market-data service on a real node: a service that
//! missed entries resynchronises with a new snapshot; a subscriber that
//! stops reading is disconnected without slowing anyone.
//! (The tests through the gateway's routes are in `exchange-gateway`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::config::MarketDataConfig;
use exchange_node::state::Applied;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::testkit::{drive, node, workload, Level2Books, DEADLINE};
use crate::*;

fn text(delivery: Delivery) -> Value {
    match delivery {
        Delivery::Message(bytes) => serde_json::from_str(bytes.as_str()).expect("json"),
        Delivery::Kicked(reason) => panic!("kicked: {reason}"),
        Delivery::Closed => panic!("closed"),
    }
}

/// A broadcast of five entries after `applied`, with room for two: a
/// receiver has lagged before it reads anything.
fn lagged_broadcast(
    applied: u64,
) -> (
    tokio::sync::broadcast::Sender<Arc<Applied>>,
    tokio::sync::broadcast::Receiver<Arc<Applied>>,
) {
    let (events_tx, events) = tokio::sync::broadcast::channel(2);
    for offset in 1..=5 {
        let stale = Applied {
            index: applied + offset,
            ..Applied::default()
        };
        events_tx.send(Arc::new(stale)).expect("a receiver");
    }
    (events_tx, events)
}

/// The next snapshot, with nothing but heartbeats before it.
async fn snapshot_after_heartbeats(subscriber: &mut Subscriber) -> Value {
    loop {
        let msg = text(subscriber.next().await);
        if msg["type"] == "snapshot" {
            break msg;
        }
        assert_eq!(msg["type"], "heartbeat", "{msg}");
    }
}

#[tokio::test]
async fn a_service_that_missed_entries_sends_subscribers_a_fresh_snapshot() {
    let node = node(1_024).await;
    let handle = node.pipeline.handle.clone();
    let before = snapshot(&handle).await.expect("state");
    drive(&handle, workload(300, 3)).await;
    let now = snapshot(&handle).await.expect("state");

    let stats = Arc::new(Stats::default());
    let service = service::Service::new(
        handle.clone(),
        &before,
        None,
        &MarketDataConfig::default(),
        stats.clone(),
    );
    // A broadcast the service has already fallen behind on; its sender
    // stays open, as the node's does.
    let (_events_tx, events) = lagged_broadcast(before.applied_index);
    let (requests_tx, requests) = mpsc::channel(16);
    let market = MarketData {
        requests: requests_tx,
        next_id: Arc::new(AtomicU64::new(1)),
        subscriber_queue: 64,
        stats: stats.clone(),
    };
    let (tx, rx) = mpsc::channel(64);
    let (kick, kicked) = oneshot::channel();
    let mut subscriber = Subscriber {
        id: 1,
        market: market.clone(),
        rx,
        kicked,
    };
    // Queued before the task starts: it serves requests before entries.
    market
        .requests
        .send(Request::Attach { id: 1, tx, kick })
        .await
        .expect("queued");
    let (reply, subscribed) = oneshot::channel();
    let subscribe = Request::Subscribe {
        id: 1,
        subscribe: true,
        channel: Channel::Level2,
        symbols: vec!["BTC-USD".into()],
        request_id: json!("r"),
        reply,
    };
    market.requests.send(subscribe).await.expect("queued");
    let (stop_tx, stop) = oneshot::channel();
    let task = tokio::spawn(service.run(events, requests, stop, Duration::from_secs(3_600)));
    subscribed.await.expect("answered").expect("subscribed");

    assert_eq!(text(subscriber.next().await)["type"], "subscribed");
    let stale = text(subscriber.next().await);
    assert_eq!(
        (stale["type"].as_str(), stale["sequence"].as_u64()),
        (Some("snapshot"), Some(0))
    );
    let fresh = snapshot_after_heartbeats(&mut subscriber).await;
    let btc = &now.instruments[0];
    assert_eq!(fresh["sequence"].as_u64(), Some(btc.sequences.book));
    assert!(btc.sequences.book > 0);
    let mut books = Level2Books::default();
    books.apply(&fresh);
    assert_eq!(
        books.view("BTC-USD"),
        Some((btc.sequences.book, btc.book.clone()))
    );
    assert_eq!(stats.resyncs.load(Ordering::Relaxed), 1);
    let _ = stop_tx.send(());
    task.await.expect("service stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_dropped_and_nobody_else_waits() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let config = MarketDataConfig {
        subscriber_queue: 256,
        ..MarketDataConfig::default()
    };
    let service = start(handle.clone(), &config)
        .await
        .expect("market data starts");
    let mut stalled = service.market.attach().await.expect("attached");
    let mut reader = service.market.attach().await.expect("attached");
    for subscriber in [&stalled, &reader] {
        subscriber
            .subscribe(true, Channel::Level2, vec!["BTC-USD".into()], Value::Null)
            .await
            .expect("subscribed");
    }
    let read = tokio::spawn(async move {
        let mut books = Level2Books::default();
        let mut updates = 0u64;
        loop {
            let msg = text(reader.next().await);
            books.apply(&msg);
            updates += u64::from(msg["type"] == "update");
            if updates > 0 && books.view("BTC-USD").is_some_and(|(seq, _)| seq >= 400) {
                return books;
            }
        }
    });
    drive(&handle, workload(2_000, 5)).await;
    let books = tokio::time::timeout(DEADLINE, read)
        .await
        .expect("in time")
        .expect("reader");
    assert!(books.view("BTC-USD").is_some_and(|(seq, _)| seq >= 400));
    match tokio::time::timeout(DEADLINE, stalled.next())
        .await
        .expect("in time")
    {
        Delivery::Kicked(reason) => assert!(reason.contains("behind"), "{reason}"),
        _ => panic!("the stalled subscriber should have been disconnected"),
    }
    assert_eq!(service.market.stats.kicked.load(Ordering::Relaxed), 1);
    service.shutdown().await;
}

/// The next message that is neither a heartbeat nor an acknowledgement.
async fn next_message(subscriber: &mut Subscriber) -> Value {
    loop {
        let msg = text(
            tokio::time::timeout(DEADLINE, subscriber.next())
                .await
                .expect("in time"),
        );
        if msg["type"] != "heartbeat" && msg["type"] != "subscribed" {
            return msg;
        }
    }
}

/// A closing call in which two orders cross, then its auction.
fn closing_call_and_auction() -> Vec<String> {
    let place = |n: u32, account: u32, side: &str, price: &str| {
        format!(
            concat!(
                r#"{{"cmd":"place","account":{account},"client_order_id":"s{n}","#,
                r#""symbol":"BTC-USD","side":"{side}","type":"limit","price":"{price}","#,
                r#""qty":"1","tif":"gtc"}}"#,
            ),
            account = account,
            n = n,
            side = side,
            price = price,
        )
    };
    vec![
        r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"closing_call"}"#.to_string(),
        place(1, 1, "buy", "101"),
        place(2, 2, "sell", "100"),
        r#"{"cmd":"set_phase","symbol":"BTC-USD","phase":"closing_auction"}"#.to_string(),
    ]
}

/// Messages up to the status that tells of the post-close phase.
async fn messages_through_post_close(subscriber: &mut Subscriber) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let msg = next_message(subscriber).await;
        let done = msg["type"] == "status" && msg["phase"] == "post_close";
        seen.push(msg);
        if done {
            break;
        }
    }
    seen
}

/// The node's market read ends where the status channel did.
async fn assert_market_read_after_close(handle: &exchange_node::Handle, status_sequence: u64) {
    let market = handle
        .markets(exchange_node::MarketQuery {
            symbol: exchange_types::Symbol::new("BTC-USD").ok(),
            depth: 0,
            trades: 1,
        })
        .await
        .expect("read")
        .into_one()
        .expect("listed");
    assert_eq!(market.sequences.status, status_sequence);
    assert_eq!(market.status.phase, exchange_types::Phase::PostClose);
    assert_eq!(
        market.status.last_auction.map(|a| a.kind),
        Some(exchange_types::event::AuctionKind::Close)
    );
    assert_eq!(
        market.trades[0].auction,
        Some(exchange_types::event::AuctionKind::Close)
    );
}

/// The `status` channel on a real node: the current status on
/// subscribing, then one numbered message per change through a call and
/// its auction, whose trades the `trades` channel tags; the node's market
/// read (the REST route's source) ends in the same status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_channel_tells_a_call_and_its_auction() {
    use crate::testkit::submit;
    let node = node(1_024).await;
    let handle = node.pipeline.handle.clone();
    let service = start(handle.clone(), &MarketDataConfig::default())
        .await
        .expect("market data starts");
    let mut subscriber = service.market.attach().await.expect("attached");
    for channel in [Channel::Status, Channel::Trades] {
        subscriber
            .subscribe(true, channel, vec!["BTC-USD".into()], Value::Null)
            .await
            .expect("subscribed");
    }
    let first = next_message(&mut subscriber).await;
    assert_eq!(first["type"], "status");
    assert_eq!(first["phase"], "continuous");
    assert_eq!(first["sequence"], 0);
    assert_eq!(first["indicative"], Value::Null);

    for line in closing_call_and_auction() {
        submit(&handle, &line).await;
    }
    let seen = messages_through_post_close(&mut subscriber).await;
    let statuses: Vec<&Value> = seen.iter().filter(|m| m["type"] == "status").collect();
    let sequences: Vec<u64> = statuses
        .iter()
        .map(|m| m["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sequences,
        (1..=statuses.len() as u64).collect::<Vec<_>>(),
        "{seen:?}"
    );
    assert_eq!(statuses[0]["phase"], "closing_call");
    assert!(
        statuses.iter().any(
            |m| m["indicative"]["volume"] == "1" && m["indicative"]["imbalance_side"].is_null()
        ),
        "{statuses:?}"
    );
    let trade = seen
        .iter()
        .find(|m| m["type"] == "trade")
        .expect("the auction traded");
    assert_eq!(trade["auction"], "close");
    let last = statuses.last().unwrap();
    assert_eq!(last["last_auction"]["kind"], "close");
    assert_eq!(last["last_auction"]["volume"], "1");
    assert_eq!(last["indicative"], Value::Null);

    assert_market_read_after_close(&handle, *sequences.last().unwrap()).await;
    service.shutdown().await;
}
