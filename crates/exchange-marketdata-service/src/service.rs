//! The market-data task: the only owner of the projection, the
//! subscribers and the feed, so every subscriber's snapshot is taken
//! between two entries and every update is queued in log order.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use exchange_marketdata::wire::{self, Message};
use exchange_marketdata::{
    json, Channel, Listeners, MarketSnapshot, Projection, StatusChange, StatusUpdate, Update,
};
use exchange_node::limits::MARKETDATA_BATCH;
use exchange_types::Symbol;
use serde_json::{json as json_value, Value};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::MissedTickBehavior;

use super::fanout::{Fanout, Key};
use super::feed::{lock, Feed};
use super::{snapshot_patiently, Request, Stats, SubscribeError};
use crate::config::MarketDataConfig;
use exchange_node::Applied;
use exchange_node::Handle;

/// Who hears the service's updates: the binary feed every book update
/// (it carries no tickers or candles), a WebSocket client what it
/// subscribed to.
struct Heard<'a> {
    fanout: &'a Fanout,
    feed: bool,
}

impl Listeners for Heard<'_> {
    fn hears(&self, channel: Channel, locate: u16) -> bool {
        (self.feed && channel == Channel::Level2) || self.fanout.has(Key { channel, locate })
    }
}

pub(crate) struct Service {
    handle: Handle,
    projection: Projection,
    fanout: Fanout,
    feed: Option<Feed>,
    stats: Arc<Stats>,
    updates: Vec<Update>,
    messages: Vec<Message>,
    /// The latest level2 snapshot message per instrument, by sequence:
    /// subscribers arriving together share one.
    snapshots: HashMap<u16, (u64, Utf8Bytes)>,
}

impl Service {
    pub fn new(
        handle: Handle,
        snapshot: &MarketSnapshot,
        feed: Option<Feed>,
        config: &MarketDataConfig,
        stats: Arc<Stats>,
    ) -> Service {
        stats
            .applied_index
            .store(snapshot.applied_index, Ordering::Relaxed);
        Service {
            handle,
            projection: Projection::from_snapshot(snapshot),
            fanout: Fanout::new(config.subscriber_queue, stats.clone()),
            feed,
            stats,
            updates: Vec::new(),
            messages: Vec::new(),
            snapshots: HashMap::new(),
        }
    }

    pub async fn run(
        mut self,
        mut events: broadcast::Receiver<Arc<Applied>>,
        mut requests: mpsc::Receiver<Request>,
        mut stop: oneshot::Receiver<()>,
        heartbeat: Duration,
    ) {
        let mut beat = tokio::time::interval(heartbeat);
        beat.set_missed_tick_behavior(MissedTickBehavior::Skip);
        // The feed's own timer: a fixed tick would find the last packet just
        // under an interval old and wait a second interval (docs/marketdata.md
        // promises one heartbeat per interval of silence).
        let feed_beat = tokio::time::sleep(heartbeat);
        tokio::pin!(feed_beat);
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => break,
                Some(request) = requests.recv() => self.handle(request),
                _ = beat.tick() => self.heartbeat(),
                _ = &mut feed_beat, if self.feed.is_some() => {
                    if let Some(feed) = self.feed.as_mut() {
                        feed.heartbeat(heartbeat);
                        let due = feed.heartbeat_due(heartbeat);
                        feed_beat.as_mut().reset(tokio::time::Instant::from_std(due));
                    }
                }
                received = events.recv() => {
                    let mut next = Some(received);
                    let mut applied = 0;
                    while let Some(item) = next.take() {
                        match item {
                            Ok(entry) => self.apply(&entry),
                            Err(RecvError::Lagged(missed)) => {
                                if !self.resync(missed).await {
                                    return;
                                }
                            }
                            Err(RecvError::Closed) => {
                                self.flush_feed();
                                return;
                            }
                        }
                        applied += 1;
                        if applied < MARKETDATA_BATCH {
                            next = match events.try_recv() {
                                Ok(entry) => Some(Ok(entry)),
                                Err(TryRecvError::Lagged(missed)) => {
                                    Some(Err(RecvError::Lagged(missed)))
                                }
                                Err(TryRecvError::Empty | TryRecvError::Closed) => None,
                            };
                        }
                    }
                    self.flush_feed();
                    self.stats
                        .applied_index
                        .store(self.projection.applied_index(), Ordering::Relaxed);
                }
            }
        }
        if let Some(feed) = self.feed.as_mut() {
            feed.end_session();
        }
    }

    fn apply(&mut self, applied: &Applied) {
        self.updates.clear();
        let heard = Heard {
            fanout: &self.fanout,
            feed: self.feed.is_some(),
        };
        self.projection
            .apply_heard(applied.index, &applied.events, &heard, &mut self.updates);
        self.publish();
    }

    /// The projection missed entries: start over from a fresh snapshot.
    async fn resync(&mut self, missed: u64) -> bool {
        tracing::warn!(
            missed,
            "market data fell behind the event stream; resynchronising"
        );
        self.stats.resyncs.fetch_add(1, Ordering::Relaxed);
        let Ok(snapshot) = snapshot_patiently(&self.handle).await else {
            return false;
        };
        self.updates.clear();
        self.projection.resync(&snapshot, &mut self.updates);
        self.publish();
        true
    }

    fn flush_feed(&mut self) {
        if let Some(feed) = self.feed.as_mut() {
            feed.flush();
        }
    }

    fn publish(&mut self) {
        let updates = std::mem::take(&mut self.updates);
        for update in &updates {
            self.publish_ws(update);
            if let Some(feed) = self.feed.as_mut() {
                self.messages.clear();
                wire::messages_of(update, &self.projection, &mut self.messages);
                feed.push(&self.messages);
            }
        }
        self.updates = updates;
    }

    fn publish_ws(&mut self, update: &Update) {
        let key = |channel, locate| Key { channel, locate };
        match update {
            Update::Book(book) => {
                self.fanout
                    .publish(key(Channel::Level2, book.locate), false, || {
                        json::level2_update(book)
                    })
            }
            Update::Snapshot { locate, .. } => {
                let k = key(Channel::Level2, *locate);
                if self.fanout.has(k) {
                    let text = self.level2_snapshot(*locate);
                    self.fanout.publish_bytes(k, false, text);
                }
            }
            Update::Trade(trade) => {
                self.fanout
                    .publish(key(Channel::Trades, trade.locate), false, || {
                        json::trade(trade)
                    })
            }
            Update::Ticker(ticker) => {
                self.fanout
                    .publish(key(Channel::Ticker, ticker.locate), true, || {
                        json::ticker(ticker)
                    })
            }
            Update::Candle {
                locate,
                symbol,
                interval,
                sequence,
                candle,
            } => self
                .fanout
                .publish(key(Channel::Candles(*interval), *locate), false, || {
                    json::candle(symbol.as_str(), *interval, *sequence, candle)
                }),
            Update::MarketStatus(status) => {
                self.fanout
                    .publish(key(Channel::Status, status.locate), false, || {
                        json::status(status)
                    })
            }
            // The status channel tells a reference moved without a status
            // event with its next message, as it has no sequence number
            // for it; only the binary feed says it at once.
            Update::Listed { .. } | Update::Status { .. } | Update::Reference { .. } => {}
        }
    }

    fn level2_snapshot(&mut self, locate: u16) -> Utf8Bytes {
        let Some(info) = self.projection.instrument(locate) else {
            return Utf8Bytes::default();
        };
        let sequence = info.sequences.book;
        match self.snapshots.get(&locate) {
            Some((seq, text)) if *seq == sequence => text.clone(),
            _ => {
                let text = Utf8Bytes::from(json::level2_snapshot(
                    info.symbol.as_str(),
                    sequence,
                    info.book,
                ));
                self.snapshots.insert(locate, (sequence, text.clone()));
                text
            }
        }
    }

    fn heartbeat(&mut self) {
        for key in self.fanout.keys() {
            let Some(info) = self.projection.instrument(key.locate) else {
                continue;
            };
            let sequence = match key.channel {
                Channel::Level2 | Channel::Ticker => info.sequences.book,
                Channel::Trades | Channel::Candles(_) => info.sequences.trades,
                Channel::Status => info.sequences.status,
            };
            let symbol = info.symbol;
            self.fanout.publish(key, true, || {
                json::heartbeat(key.channel, symbol.as_str(), sequence)
            });
        }
    }

    fn handle(&mut self, request: Request) {
        match request {
            Request::Attach { id, tx, kick } => self.fanout.attach(id, tx, kick),
            Request::Detach { id } => self.fanout.detach(id),
            Request::Subscribe {
                id,
                subscribe,
                channel,
                symbols,
                request_id,
                reply,
            } => {
                let result = self.subscribe(id, subscribe, channel, &symbols, request_id);
                let _ = reply.send(result);
            }
            Request::Candles {
                symbol,
                interval,
                start,
                end,
                limit,
                reply,
            } => {
                let found = Symbol::new(&symbol)
                    .ok()
                    .and_then(|s| self.projection.locate(&s))
                    .and_then(|locate| self.projection.candles(locate))
                    .map(|c| c.series(interval).range(start, end, limit));
                let _ = reply.send(found);
            }
            Request::FeedSnapshot { reply } => {
                if let Some(body) = self.feed_snapshot() {
                    let _ = reply.send(body);
                }
            }
        }
    }

    fn subscribe(
        &mut self,
        id: u64,
        subscribe: bool,
        channel: Channel,
        symbols: &[String],
        request_id: Value,
    ) -> Result<(), SubscribeError> {
        let mut locates = Vec::with_capacity(symbols.len());
        for text in symbols {
            let locate = Symbol::new(text)
                .ok()
                .and_then(|s| self.projection.locate(&s))
                .ok_or_else(|| SubscribeError::UnknownInstrument(text.clone()))?;
            locates.push(locate);
        }
        let mut ack = json_value!({
            "type": if subscribe { "subscribed" } else { "unsubscribed" },
            "channel": channel.name(),
            "symbols": symbols,
            "request_id": request_id,
        });
        if let Channel::Candles(interval) = channel {
            ack["interval"] = interval.as_str().into();
        }
        self.fanout.send_to(id, Utf8Bytes::from(ack.to_string()));
        for locate in locates {
            let key = Key { channel, locate };
            if !subscribe {
                self.fanout.unsubscribe(id, key);
                continue;
            }
            if !self.fanout.subscribe(id, key) {
                continue;
            }
            let first = match channel {
                Channel::Level2 => Some(self.level2_snapshot(locate)),
                Channel::Ticker => self
                    .projection
                    .ticker(locate)
                    .map(|t| Utf8Bytes::from(json::ticker(&t))),
                Channel::Candles(interval) => self.projection.instrument(locate).and_then(|info| {
                    let (symbol, sequence) = (info.symbol, info.sequences.trades);
                    let candle = self.projection.candles(locate)?.latest(interval)?;
                    Some(Utf8Bytes::from(json::candle(
                        symbol.as_str(),
                        interval,
                        sequence,
                        &candle,
                    )))
                }),
                Channel::Status => self.projection.instrument(locate).map(|info| {
                    Utf8Bytes::from(json::status(&StatusUpdate {
                        locate,
                        symbol: info.symbol,
                        sequence: info.sequences.status,
                        ts: self.projection.now(),
                        status: info.status,
                        change: StatusChange::Snapshot,
                    }))
                }),
                Channel::Trades => None,
            };
            if let Some(first) = first {
                self.fanout.send_to(id, first);
            }
        }
        Ok(())
    }

    /// Every book as feed messages, valid just before the feed's next
    /// message; everything before it has been sent.
    fn feed_snapshot(&mut self) -> Option<Vec<u8>> {
        let feed = self.feed.as_mut()?;
        feed.flush();
        let mut messages = Vec::new();
        wire::snapshot_messages(&self.projection, &mut messages);
        let body = lock(&feed.publisher()).snapshot(&messages).encode();
        Some(body)
    }
}
