//! The market-data service on a real node: books rebuilt from the
//! WebSocket level2 channel and from the binary feed (losing packets and
//! recovering them by retransmission) equal the core's after a random
//! workload; the REST book reports the level2 sequence; a service that
//! missed entries resynchronises with a new snapshot; a subscriber that
//! stops reading is disconnected without slowing anyone.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use exchange_marketdata::client::{ClientConfig, FeedClient};
use serde_json::Value;
use tower::ServiceExt;

use crate::md_test_support::{
    app, drive, next_json, node, serve, workload, ws_subscribe, Level2Books, Ws, DEADLINE, SYMBOLS,
};

use crate::{router, AppState};
use exchange_marketdata::InstrumentSequences;
use exchange_marketdata_service::config::MarketDataConfig;
use exchange_marketdata_service::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books_rebuilt_from_websocket_and_binary_feed_equal_the_core() {
    let node = node(65_536).await;
    let handle = node.pipeline.handle.clone();
    let feed_port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port");
    let service = start(handle.clone(), &feed_config(feed_port))
        .await
        .expect("market data starts");
    let app = app(&handle, &service);
    let addr = serve(app.clone()).await;
    let mut level2 = ws_subscribe(addr, "level2").await;
    let mut trades = ws_subscribe(addr, "trades").await;
    let ack = next_json(&mut level2).await.expect("ack");
    assert_eq!(
        (ack["type"].as_str(), ack["request_id"].as_i64()),
        (Some("subscribed"), Some(1)),
        "{ack}"
    );

    let feed = lossy_feed_client(feed_port, &service).await;

    drive(&handle, workload(2_500, 9)).await;
    let core = snapshot(&handle).await.expect("core state");
    let targets: BTreeMap<String, InstrumentSequences> = core
        .instruments
        .iter()
        .map(|i| (i.symbol.to_string(), i.sequences))
        .collect();
    let target = move |symbol: &str| targets[symbol];

    let books = level2_books_up_to(&mut level2, &target).await;
    read_gapless_trades_up_to(&mut trades, &target).await;
    let feed = feed_caught_up(feed, target).await;

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
        let rest = rest_book(&app, symbol).await;
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

/// Small packets and frequent heartbeats: the feed spans many packets.
fn feed_config(feed_port: std::net::SocketAddr) -> MarketDataConfig {
    MarketDataConfig {
        feed_targets: vec![feed_port],
        retransmit_listen: Some("127.0.0.1:0".parse().expect("address")),
        max_packet_bytes: 600,
        heartbeat_ms: 50,
        ..MarketDataConfig::default()
    }
}

/// A feed client on `feed_port` that drops one packet in four, to be
/// recovered from `service` by retransmission.
async fn lossy_feed_client(
    feed_port: std::net::SocketAddr,
    service: &MarketDataService,
) -> FeedClient {
    let client_config = ClientConfig {
        listen: feed_port,
        multicast: None,
        service: service.retransmit_addr.expect("retransmission address"),
        drop_one_in: 4,
        seed: 42,
    };
    tokio::task::spawn_blocking(move || FeedClient::connect(&client_config))
        .await
        .expect("joined")
        .expect("feed client connects")
}

/// Reads the level2 channel until every book reaches the core's sequence.
async fn level2_books_up_to(
    level2: &mut Ws,
    target: &impl Fn(&str) -> InstrumentSequences,
) -> Level2Books {
    let mut books = Level2Books::default();
    books.apply(&next_json(level2).await.expect("first snapshot"));
    while SYMBOLS
        .iter()
        .any(|s| books.view(s).map(|v| v.0) != Some(target(s).book))
    {
        books.apply(&next_json(level2).await.expect("level2 stream"));
    }
    books
}

/// Reads the trades channel until every instrument reaches the core's
/// trade sequence, checking that none is skipped.
async fn read_gapless_trades_up_to(trades: &mut Ws, target: &impl Fn(&str) -> InstrumentSequences) {
    let mut last_trade: BTreeMap<String, u64> = BTreeMap::new();
    while SYMBOLS
        .iter()
        .any(|s| last_trade.get(*s).copied().unwrap_or(0) != target(s).trades)
    {
        let msg = next_json(trades).await.expect("trades stream");
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
}

/// Polls the binary feed until every book it rebuilt reaches the core's
/// sequence, consistent.
async fn feed_caught_up(
    mut feed: FeedClient,
    target: impl Fn(&str) -> InstrumentSequences + Send + 'static,
) -> FeedClient {
    tokio::task::spawn_blocking(move || {
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
    .expect("feed client")
}

/// The REST book of `symbol`, at full depth.
async fn rest_book(app: &AppState, symbol: &str) -> Value {
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
    serde_json::from_slice(&bytes).expect("json")
}
