//! The market-data service on a real node: books rebuilt from the
//! WebSocket level2 channel and from the binary feed (losing packets and
//! recovering them by retransmission) equal the core's after a random
//! workload; the REST book reports the level2 sequence; a service that
//! missed entries resynchronises with a new snapshot; a subscriber that
//! stops reading is disconnected without slowing anyone.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use axum::body::Body;
use exchange_marketdata::client::{ClientConfig, FeedClient};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::test_support::{
    drive, next_json, node, serve, workload, ws_subscribe, Level2Books, DEADLINE, SYMBOLS,
};
use super::*;
use crate::config::Config;
use crate::http::{router, AppState};
use crate::state::Applied;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_rebuilt_from_websocket_and_binary_feed_equal_the_core() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let feed_port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port");
    let config = MarketDataConfig {
        feed_targets: vec![feed_port],
        retransmit_listen: Some("127.0.0.1:0".parse().expect("address")),
        max_packet_bytes: 600,
        heartbeat_ms: 50,
        ..MarketDataConfig::default()
    };
    let service = start(handle.clone(), &config)
        .await
        .expect("market data starts");
    let app = AppState::new(
        handle.clone(),
        Config::default(),
        "t".into(),
        Arc::new(AtomicBool::new(true)),
    )
    .with_market_data(service.market.clone());
    let addr = serve(app.clone()).await;
    let mut level2 = ws_subscribe(addr, "level2").await;
    let mut trades = ws_subscribe(addr, "trades").await;
    let ack = next_json(&mut level2).await.expect("ack");
    assert_eq!(
        (ack["type"].as_str(), ack["request_id"].as_i64()),
        (Some("subscribed"), Some(1)),
        "{ack}"
    );

    let client_config = ClientConfig {
        listen: feed_port,
        multicast: None,
        service: service.retransmit_addr.expect("retransmission address"),
        drop_one_in: 4,
        seed: 42,
    };
    let mut feed = tokio::task::spawn_blocking(move || FeedClient::connect(&client_config))
        .await
        .expect("joined")
        .expect("feed client connects");

    drive(&handle, workload(2_500, 9)).await;
    let core = snapshot(&handle).await.expect("core state");
    let targets: BTreeMap<String, exchange_marketdata::InstrumentSequences> = core
        .instruments
        .iter()
        .map(|i| (i.symbol.to_string(), i.sequences))
        .collect();
    let target = move |symbol: &str| targets[symbol];

    let mut books = Level2Books::default();
    books.apply(&next_json(&mut level2).await.expect("first snapshot"));
    while SYMBOLS
        .iter()
        .any(|s| books.view(s).map(|v| v.0) != Some(target(s).book))
    {
        books.apply(&next_json(&mut level2).await.expect("level2 stream"));
    }
    let mut last_trade: BTreeMap<String, u64> = BTreeMap::new();
    while SYMBOLS
        .iter()
        .any(|s| last_trade.get(*s).copied().unwrap_or(0) != target(s).trades)
    {
        let msg = next_json(&mut trades).await.expect("trades stream");
        if msg["type"] == "trade" {
            let last = last_trade
                .entry(msg["symbol"].as_str().expect("symbol").to_owned())
                .or_default();
            assert_eq!(
                msg["sequence"].as_u64(),
                Some(*last + 1),
                "trade gap at {msg}"
            );
            *last += 1;
        }
    }

    let feed = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let caught_up = |feed: &FeedClient| {
            SYMBOLS.iter().all(|s| {
                feed.books()
                    .by_symbol(s)
                    .is_some_and(|b| b.book_seq == target(s).book && b.consistent)
            })
        };
        while !caught_up(&feed) {
            assert!(
                started.elapsed() < DEADLINE,
                "feed stuck at {}: {:?}",
                feed.next_seq(),
                feed.stats()
            );
            feed.poll(Duration::from_millis(100)).expect("feed");
        }
        feed
    })
    .await
    .expect("feed client");

    for inst in &core.instruments {
        let symbol = inst.symbol.as_str();
        assert!(
            inst.sequences.book > 100 && inst.sequences.trades > 50,
            "{symbol}: {:?}",
            inst.sequences
        );
        assert_eq!(
            books.view(symbol),
            Some((inst.sequences.book, inst.book.clone())),
            "level2 {symbol}"
        );
        let rebuilt = feed.books().by_symbol(symbol).expect("on the feed");
        assert_eq!(
            rebuilt.book.view(usize::MAX),
            inst.book,
            "binary feed {symbol}"
        );
        assert_eq!(rebuilt.trade_seq, inst.sequences.trades);
        let rest = router(app.clone())
            .oneshot(
                axum::http::Request::get(format!("/v1/markets/{symbol}/book?depth=1000"))
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("response");
        let bytes = http_body_util::BodyExt::collect(rest.into_body())
            .await
            .expect("body")
            .to_bytes();
        let rest: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(
            rest["sequence"].as_u64(),
            Some(inst.sequences.book),
            "REST book {symbol}"
        );
    }
    let stats = feed.stats();
    assert!(
        stats.dropped > 0 && stats.retransmitted > 0,
        "loss was injected and recovered: {stats:?}"
    );
    assert_eq!(
        stats.snapshots, 1,
        "recovered by retransmission alone: {stats:?}"
    );
    service.shutdown().await;
}

fn text(delivery: Delivery) -> Value {
    match delivery {
        Delivery::Message(bytes) => serde_json::from_str(bytes.as_str()).expect("json"),
        Delivery::Kicked(reason) => panic!("kicked: {reason}"),
        Delivery::Closed => panic!("closed"),
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
    // A broadcast the service has already fallen behind on.
    let (events_tx, events) = tokio::sync::broadcast::channel(2);
    for offset in 1..=5 {
        let stale = Applied {
            index: before.applied_index + offset,
            ..Applied::default()
        };
        events_tx.send(Arc::new(stale)).expect("a receiver");
    }
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
    let fresh = loop {
        let msg = text(subscriber.next().await);
        if msg["type"] == "snapshot" {
            break msg;
        }
        assert_eq!(msg["type"], "heartbeat", "{msg}");
    };
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
