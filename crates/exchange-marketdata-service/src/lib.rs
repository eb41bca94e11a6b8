//! The market-data service: public WebSocket channels and the binary feed,
//! derived from the committed event stream.
//!
//! One task consumes the sequencer's broadcast of applied entries (the
//! core never waits for it), advances the projection
//! (`exchange_marketdata::Projection`) and publishes each update once: to
//! the WebSocket subscribers' bounded queues ([`fanout`]) and to the
//! binary feed ([`feed`]). It starts from a consistent snapshot of the
//! replicated state (books, sequence numbers, recent trades, as of one log
//! index) and ignores broadcast entries at or before that index. Should it
//! ever fall behind the broadcast, it takes a fresh snapshot and tells
//! subscribers with a new level2 snapshot (and book messages on the feed).
//!
//! Sessions and the REST routes talk to the task through [`MarketData`].

pub mod config;
mod fanout;
mod feed;
#[cfg(test)]
mod feed_tests;
mod service;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use exchange_marketdata::{Candle, Channel, InstrumentSnapshot, Interval, MarketSnapshot};
use exchange_node::limits::{MARKETDATA_REQUEST_QUEUE, TRADES_PER_SYMBOL};
use exchange_node::prometheus::{Exposition, Kind};
use exchange_types::TradingStatus;
use serde_json::Value;
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::config::MarketDataConfig;
use exchange_node::{Handle, MarketQuery, SubmitError};

#[derive(Debug, Error)]
pub enum MarketDataError {
    #[error("market-data sockets: {0}")]
    Io(#[from] std::io::Error),
    #[error("market data could not read the state: {0}")]
    Submit(#[from] SubmitError),
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SubscribeError {
    #[error("no instrument has the symbol {0:?}")]
    UnknownInstrument(String),
    #[error("the market-data service has stopped")]
    Stopped,
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct Stats {
    pub subscribers: AtomicU64,
    pub messages: AtomicU64,
    pub conflated: AtomicU64,
    pub kicked: AtomicU64,
    pub resyncs: AtomicU64,
    pub applied_index: AtomicU64,
    pub feed_next_seq: AtomicU64,
    pub feed_packets: AtomicU64,
    pub feed_send_errors: AtomicU64,
}

pub(crate) enum Request {
    Attach {
        id: u64,
        tx: fanout::Queue,
        kick: oneshot::Sender<String>,
    },
    Detach {
        id: u64,
    },
    Subscribe {
        id: u64,
        subscribe: bool,
        channel: Channel,
        symbols: Vec<String>,
        request_id: Value,
        reply: oneshot::Sender<Result<(), SubscribeError>>,
    },
    Candles {
        symbol: String,
        interval: Interval,
        start: u64,
        end: u64,
        limit: usize,
        reply: oneshot::Sender<Option<Vec<Candle>>>,
    },
    FeedSnapshot {
        reply: oneshot::Sender<Vec<u8>>,
    },
}

/// A cloneable way in to the running service.
#[derive(Clone)]
pub struct MarketData {
    requests: mpsc::Sender<Request>,
    next_id: Arc<AtomicU64>,
    subscriber_queue: usize,
    pub stats: Arc<Stats>,
}

/// What a subscriber's session receives.
pub enum Delivery {
    Message(Utf8Bytes),
    /// Disconnected for falling behind; the reason.
    Kicked(String),
    /// The service has stopped.
    Closed,
}

/// One socket's subscriptions: the queue the service fills for it.
pub struct Subscriber {
    id: u64,
    market: MarketData,
    rx: mpsc::Receiver<Utf8Bytes>,
    kicked: oneshot::Receiver<String>,
}

impl MarketData {
    /// Registers a new subscriber with an empty queue.
    pub async fn attach(&self) -> Option<Subscriber> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.subscriber_queue.max(1));
        let (kick, kicked) = oneshot::channel();
        self.requests
            .send(Request::Attach { id, tx, kick })
            .await
            .ok()?;
        Some(Subscriber {
            id,
            market: self.clone(),
            rx,
            kicked,
        })
    }

    /// A symbol's candles starting in `[start, end)`, newest first;
    /// `None` if the symbol is not listed.
    pub async fn candles(
        &self,
        symbol: &str,
        interval: Interval,
        start: u64,
        end: u64,
        limit: usize,
    ) -> Result<Option<Vec<Candle>>, SubscribeError> {
        let (reply, answer) = oneshot::channel();
        let request = Request::Candles {
            symbol: symbol.to_owned(),
            interval,
            start,
            end,
            limit,
            reply,
        };
        self.requests
            .send(request)
            .await
            .map_err(|_| SubscribeError::Stopped)?;
        answer.await.map_err(|_| SubscribeError::Stopped)
    }

    /// Adds the market-data families to a `/metrics` page.
    pub fn write_metrics(&self, page: &mut Exposition) {
        let s = &self.stats;
        let get = |v: &AtomicU64| v.load(Ordering::Relaxed);
        let lines = [
            (
                "exchange_marketdata_subscribers",
                Kind::Gauge,
                "WebSocket market-data subscribers attached.",
                get(&s.subscribers),
            ),
            (
                "exchange_marketdata_messages_total",
                Kind::Counter,
                "Market-data messages queued to WebSocket subscribers.",
                get(&s.messages),
            ),
            (
                "exchange_marketdata_conflated_total",
                Kind::Counter,
                "Conflatable messages skipped because a subscriber's queue was full.",
                get(&s.conflated),
            ),
            (
                "exchange_marketdata_slow_consumers_total",
                Kind::Counter,
                "Subscribers disconnected for falling behind the market-data stream.",
                get(&s.kicked),
            ),
            (
                "exchange_marketdata_resyncs_total",
                Kind::Counter,
                "Times the market-data projection fell behind the event stream and restarted \
                 from a snapshot.",
                get(&s.resyncs),
            ),
            (
                "exchange_marketdata_applied_index",
                Kind::Gauge,
                "Last log index applied to the market-data projection.",
                get(&s.applied_index),
            ),
            (
                "exchange_feed_next_sequence",
                Kind::Gauge,
                "Sequence number of the binary feed's next message.",
                get(&s.feed_next_seq),
            ),
            (
                "exchange_feed_packets_total",
                Kind::Counter,
                "Binary feed packets sent, heartbeats excluded.",
                get(&s.feed_packets),
            ),
            (
                "exchange_feed_send_errors_total",
                Kind::Counter,
                "Binary feed packets the kernel refused for a target (dropped; receivers \
                 recover them by retransmission).",
                get(&s.feed_send_errors),
            ),
        ];
        for (name, kind, help, value) in lines {
            page.family(name, kind, help).sample(&[], value);
        }
    }
}

impl Subscriber {
    /// Subscribes (or unsubscribes) to `channel` for `symbols`. On success
    /// the acknowledgement, then any snapshot, arrive through the queue,
    /// ahead of the channel's updates.
    pub async fn subscribe(
        &self,
        subscribe: bool,
        channel: Channel,
        symbols: Vec<String>,
        request_id: Value,
    ) -> Result<(), SubscribeError> {
        let (reply, answer) = oneshot::channel();
        let request = Request::Subscribe {
            id: self.id,
            subscribe,
            channel,
            symbols,
            request_id,
            reply,
        };
        self.market
            .requests
            .send(request)
            .await
            .map_err(|_| SubscribeError::Stopped)?;
        answer.await.map_err(|_| SubscribeError::Stopped)?
    }

    /// The next message for the socket, or why there is none.
    pub async fn next(&mut self) -> Delivery {
        tokio::select! {
            biased;
            reason = &mut self.kicked => match reason {
                Ok(reason) => Delivery::Kicked(reason),
                Err(_) => Delivery::Closed,
            },
            message = self.rx.recv() => match message {
                Some(message) => Delivery::Message(message),
                None => Delivery::Closed,
            },
        }
    }

    /// `first` and up to `max - 1` messages queued behind it, to be
    /// written with one flush.
    pub fn batch(&mut self, first: Utf8Bytes, max: usize) -> Vec<Utf8Bytes> {
        let mut batch = vec![first];
        while batch.len() < max {
            match self.rx.try_recv() {
                Ok(message) => batch.push(message),
                Err(_) => break,
            }
        }
        batch
    }

    /// Resolves once the service disconnects this subscriber (or stops),
    /// so a write stuck on a client that stopped reading can be abandoned.
    pub async fn kicked(&mut self) -> Delivery {
        match (&mut self.kicked).await {
            Ok(reason) => Delivery::Kicked(reason),
            Err(_) => Delivery::Closed,
        }
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        // If the request queue is full, the service finds the queue closed
        // at its next publish and forgets the subscriber then.
        let _ = self
            .market
            .requests
            .try_send(Request::Detach { id: self.id });
    }
}

/// The running service; [`MarketDataService::shutdown`] stops it.
pub struct MarketDataService {
    pub market: MarketData,
    /// Where the retransmission and snapshot service listens, if it does.
    pub retransmit_addr: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    listener: Option<JoinHandle<()>>,
}

impl MarketDataService {
    /// Stops the task (it lets go of its sequencer handle) and ends the
    /// feed's session.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
    }
}

impl Drop for MarketDataService {
    fn drop(&mut self) {
        if let Some(listener) = &self.listener {
            listener.abort();
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The replicated state's market data as of one log index, read on the
/// core thread between batches.
pub async fn snapshot(handle: &Handle) -> Result<MarketSnapshot, SubmitError> {
    let markets = handle
        .markets(MarketQuery {
            symbol: None,
            depth: usize::MAX,
            trades: TRADES_PER_SYMBOL,
        })
        .await?;
    Ok(MarketSnapshot {
        applied_index: markets.applied_index,
        now: markets.now,
        instruments: markets
            .markets
            .into_iter()
            .map(|market| {
                let mut recent_trades = market.trades;
                recent_trades.reverse();
                InstrumentSnapshot {
                    symbol: market.instrument.symbol,
                    halted: market.instrument.status == TradingStatus::Halted,
                    status: market.status,
                    book: market.book,
                    sequences: market.sequences,
                    recent_trades,
                }
            })
            .collect(),
    })
}

/// Snapshot, retrying while the core's queue is full.
async fn snapshot_patiently(handle: &Handle) -> Result<MarketSnapshot, SubmitError> {
    loop {
        match snapshot(handle).await {
            Err(SubmitError::Overloaded) => tokio::time::sleep(Duration::from_millis(5)).await,
            other => return other,
        }
    }
}

/// Starts the service: subscribes to the broadcast, then reads the
/// snapshot it continues from, opens the feed's sockets and spawns the task.
pub async fn start(
    handle: Handle,
    config: &MarketDataConfig,
) -> Result<MarketDataService, MarketDataError> {
    let events = handle.subscribe();
    let snapshot = snapshot_patiently(&handle).await?;
    let stats = Arc::new(Stats::default());
    let feed = feed::Feed::open(config, stats.clone())?;
    let (requests_tx, requests) = mpsc::channel(MARKETDATA_REQUEST_QUEUE);
    let mut retransmit_addr = None;
    let mut listener = None;
    if let (Some(addr), Some(feed)) = (config.retransmit_listen, &feed) {
        let tcp = tokio::net::TcpListener::bind(addr).await?;
        retransmit_addr = Some(tcp.local_addr()?);
        listener = Some(tokio::spawn(feed::serve(
            tcp,
            feed.publisher(),
            requests_tx.clone(),
        )));
    }
    let market = MarketData {
        requests: requests_tx,
        next_id: Arc::new(AtomicU64::new(1)),
        subscriber_queue: config.subscriber_queue,
        stats: stats.clone(),
    };
    let (stop_tx, stop) = oneshot::channel();
    let service = service::Service::new(handle, &snapshot, feed, config, stats);
    let heartbeat = Duration::from_millis(config.heartbeat_ms.max(1));
    let task = tokio::spawn(service.run(events, requests, stop, heartbeat));
    Ok(MarketDataService {
        market,
        retransmit_addr,
        stop: Some(stop_tx),
        task: Some(task),
        listener,
    })
}
