//! The binary feed's reference price on a real node: a receiver that
//! followed the feed through the operator's changes and a trade, and one
//! that joins afterwards from the snapshot service, both hold the
//! reference the `status` channel tells.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use exchange_marketdata::client::{ClientConfig, FeedClient};
use exchange_types::Dec;
use serde_json::Value;

use crate::config::MarketDataConfig;
use crate::testkit::{node, submit, DEADLINE};
use crate::*;

fn free_udp_port() -> SocketAddr {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
}

async fn feed_client(listen: SocketAddr, service: &MarketDataService) -> FeedClient {
    let config = ClientConfig {
        listen,
        multicast: None,
        service: service.retransmit_addr.expect("retransmission address"),
        drop_one_in: 0,
        seed: 1,
    };
    tokio::task::spawn_blocking(move || FeedClient::connect(&config))
        .await
        .expect("joined")
        .expect("feed client connects")
}

/// Reads `live` until it has applied everything before `next_seq`.
async fn caught_up(mut live: FeedClient, next_seq: u64) -> FeedClient {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        while live.next_seq() < next_seq {
            assert!(
                started.elapsed() < DEADLINE,
                "feed stuck: {:?}",
                live.stats()
            );
            live.poll(Duration::from_millis(100)).expect("feed");
        }
        live
    })
    .await
    .expect("feed client")
}

fn reference_of(feed: &FeedClient) -> Option<u64> {
    feed.books()
        .by_symbol("BTC-USD")
        .expect("on the feed")
        .reference_price
}

fn units(text: &str) -> u64 {
    Dec::parse(text)
        .ok()
        .and_then(|d| d.to_units_allow_zero().ok())
        .expect("a price")
}

fn units_of(message: &Value) -> Option<u64> {
    message["reference_price"].as_str().map(units)
}

/// The next status message, past acknowledgements and heartbeats.
async fn next_status(subscriber: &mut Subscriber) -> Value {
    loop {
        let delivery = tokio::time::timeout(DEADLINE, subscriber.next())
            .await
            .expect("in time");
        let Delivery::Message(bytes) = delivery else {
            panic!("subscriber closed");
        };
        let message: Value = serde_json::from_str(bytes.as_str()).expect("json");
        if message["type"] == "status" {
            return message;
        }
    }
}

async fn status_subscriber(service: &MarketDataService) -> Subscriber {
    let subscriber = service.market.attach().await.expect("attached");
    subscriber
        .subscribe(true, Channel::Status, vec!["BTC-USD".into()], Value::Null)
        .await
        .expect("subscribed");
    subscriber
}

fn place(n: u32, account: u32, side: &str) -> String {
    format!(
        concat!(
            r#"{{"cmd":"place","account":{account},"client_order_id":"r{n}","#,
            r#""symbol":"BTC-USD","side":"{side}","type":"limit","price":"101","#,
            r#""qty":"1","tif":"gtc"}}"#,
        ),
        account = account,
        n = n,
        side = side,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_tells_the_reference_the_status_channel_tells() {
    let node = node(1_024).await;
    let handle = node.pipeline.handle.clone();
    let listen = free_udp_port();
    let config = MarketDataConfig {
        feed_targets: vec![listen],
        retransmit_listen: Some("127.0.0.1:0".parse().expect("address")),
        heartbeat_ms: 50,
        ..MarketDataConfig::default()
    };
    let service = start(handle.clone(), &config)
        .await
        .expect("market data starts");
    let live = feed_client(listen, &service).await;
    assert_eq!(reference_of(&live), None, "the listing named none");
    let mut subscriber = status_subscriber(&service).await;
    assert_eq!(units_of(&next_status(&mut subscriber).await), None);

    submit(
        &handle,
        r#"{"cmd":"set_reference_price","symbol":"BTC-USD","price":"100.5"}"#,
    )
    .await;
    // The trade at 101 moves it without a status message.
    submit(&handle, &place(1, 1, "buy")).await;
    submit(&handle, &place(2, 2, "sell")).await;
    submit(
        &handle,
        r#"{"cmd":"set_reference_price","symbol":"BTC-USD","price":"99.25"}"#,
    )
    .await;
    let told: Vec<Option<u64>> = [
        next_status(&mut subscriber).await,
        next_status(&mut subscriber).await,
    ]
    .iter()
    .map(units_of)
    .collect();
    assert_eq!(told, [Some(units("100.5")), Some(units("99.25"))]);

    // Everything the status channel told is on the feed by now: a late
    // joiner's snapshot is taken after it, and the live receiver reads
    // up to that snapshot.
    let late = feed_client(free_udp_port(), &service).await;
    let live = caught_up(live, late.next_seq()).await;
    assert_eq!(reference_of(&late), told[1]);
    assert_eq!(reference_of(&live), told[1]);
    let rebuilt = live.books().by_symbol("BTC-USD").expect("on the feed");
    assert_eq!(rebuilt.trade_seq, 1, "the trade came before");

    // A new subscription tells what the late joiner holds.
    let mut fresh = status_subscriber(&service).await;
    assert_eq!(
        units_of(&next_status(&mut fresh).await),
        reference_of(&late)
    );
    service.shutdown().await;
}
