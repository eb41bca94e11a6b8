//! Subscribers of the public channels and their bounded queues.
//!
//! Each update is serialized once, only if someone listens, and the same
//! bytes (reference-counted) are queued for every subscriber of its
//! channel and instrument, in one pass: every subscriber sees one ordered
//! stream. Queuing never waits. A subscriber whose queue is full is
//! disconnected with a reason, except for conflatable messages (ticker,
//! heartbeat), which it simply misses: the next one supersedes them.

use rustc_hash::FxHashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::ws::Utf8Bytes;
use exchange_marketdata::Channel;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use super::Stats;

/// One channel of one instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub channel: Channel,
    pub locate: u16,
}

pub(crate) type Queue = mpsc::Sender<Utf8Bytes>;

struct Subscriber {
    tx: Queue,
    kick: Option<oneshot::Sender<String>>,
    keys: Vec<Key>,
}

pub(crate) struct Fanout {
    /// Fx, not SipHash: `by_key` is looked up for every update, and both
    /// are keyed by the service's own numbers, never a client's choice.
    subscribers: FxHashMap<u64, Subscriber>,
    by_key: FxHashMap<Key, Vec<(u64, Queue)>>,
    bound: usize,
    stats: Arc<Stats>,
    failed: Vec<(u64, bool)>,
}

impl Fanout {
    pub fn new(bound: usize, stats: Arc<Stats>) -> Fanout {
        Fanout {
            subscribers: FxHashMap::default(),
            by_key: FxHashMap::default(),
            bound,
            stats,
            failed: Vec::new(),
        }
    }

    pub fn attach(&mut self, id: u64, tx: Queue, kick: oneshot::Sender<String>) {
        self.subscribers.insert(
            id,
            Subscriber {
                tx,
                kick: Some(kick),
                keys: Vec::new(),
            },
        );
        self.stats.subscribers.fetch_add(1, Ordering::Relaxed);
    }

    pub fn detach(&mut self, id: u64) {
        let Some(subscriber) = self.subscribers.remove(&id) else {
            return;
        };
        self.stats.subscribers.fetch_sub(1, Ordering::Relaxed);
        for key in subscriber.keys {
            self.remove_from(key, id);
        }
    }

    fn remove_from(&mut self, key: Key, id: u64) {
        if let Some(list) = self.by_key.get_mut(&key) {
            list.retain(|(sub, _)| *sub != id);
            if list.is_empty() {
                self.by_key.remove(&key);
            }
        }
    }

    /// Adds `id` to `key`'s subscribers; false if it was one already.
    pub fn subscribe(&mut self, id: u64, key: Key) -> bool {
        let Some(subscriber) = self.subscribers.get_mut(&id) else {
            return false;
        };
        if subscriber.keys.contains(&key) {
            return false;
        }
        subscriber.keys.push(key);
        self.by_key
            .entry(key)
            .or_default()
            .push((id, subscriber.tx.clone()));
        true
    }

    pub fn unsubscribe(&mut self, id: u64, key: Key) {
        if let Some(subscriber) = self.subscribers.get_mut(&id) {
            subscriber.keys.retain(|k| *k != key);
            self.remove_from(key, id);
        }
    }

    /// Every key someone listens to.
    pub fn keys(&self) -> Vec<Key> {
        self.by_key.keys().copied().collect()
    }

    pub fn has(&self, key: Key) -> bool {
        self.by_key.contains_key(&key)
    }

    /// Queues the message `build` makes for every subscriber of `key`;
    /// builds nothing if there is none.
    pub fn publish(&mut self, key: Key, conflate: bool, build: impl FnOnce() -> String) {
        if self.has(key) {
            self.publish_bytes(key, conflate, Utf8Bytes::from(build()));
        }
    }

    pub fn publish_bytes(&mut self, key: Key, conflate: bool, bytes: Utf8Bytes) {
        let Some(list) = self.by_key.get(&key) else {
            return;
        };
        for (id, tx) in list {
            match tx.try_send(bytes.clone()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) if conflate => {
                    self.stats.conflated.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Full(_)) => self.failed.push((*id, true)),
                Err(TrySendError::Closed(_)) => self.failed.push((*id, false)),
            }
        }
        self.stats
            .messages
            .fetch_add(list.len() as u64, Ordering::Relaxed);
        self.drop_failed();
    }

    /// Queues a message for one subscriber (acknowledgements, snapshots).
    pub fn send_to(&mut self, id: u64, bytes: Utf8Bytes) {
        let Some(subscriber) = self.subscribers.get(&id) else {
            return;
        };
        match subscriber.tx.try_send(bytes) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.failed.push((id, true)),
            Err(TrySendError::Closed(_)) => self.failed.push((id, false)),
        }
        self.drop_failed();
    }

    fn drop_failed(&mut self) {
        while let Some((id, full)) = self.failed.pop() {
            if full {
                if let Some(kick) = self.subscribers.get_mut(&id).and_then(|s| s.kick.take()) {
                    let reason = format!(
                        "the socket fell {} messages behind the market-data stream",
                        self.bound
                    );
                    let _ = kick.send(reason);
                    self.stats.kicked.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.detach(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(locate: u16) -> Key {
        Key {
            channel: Channel::Level2,
            locate,
        }
    }

    #[tokio::test]
    async fn a_full_queue_is_disconnected_and_the_others_keep_receiving() {
        let mut fanout = Fanout::new(2, Arc::default());
        let (fast_tx, mut fast_rx) = mpsc::channel(8);
        let (slow_tx, _slow_rx) = mpsc::channel(2);
        let (fast_kick, _fast_kicked) = oneshot::channel();
        let (slow_kick, slow_kicked) = oneshot::channel();
        fanout.attach(1, fast_tx, fast_kick);
        fanout.attach(2, slow_tx, slow_kick);
        assert!(fanout.subscribe(1, key(0)) && fanout.subscribe(2, key(0)));
        assert!(!fanout.subscribe(2, key(0)), "already subscribed");
        for n in 0..3 {
            fanout.publish(key(0), false, || format!("m{n}"));
        }
        fanout.publish(key(1), false, || unreachable!("nobody listens"));
        let reason = slow_kicked.await.expect("kicked with a reason");
        assert!(reason.contains("behind"), "{reason}");
        assert_eq!(fanout.keys(), vec![key(0)]);
        fanout.publish(key(0), false, || "m3".into());
        let mut got = Vec::new();
        while let Ok(message) = fast_rx.try_recv() {
            got.push(message.as_str().to_owned());
        }
        assert_eq!(got, ["m0", "m1", "m2", "m3"]);
    }

    #[tokio::test]
    async fn conflatable_messages_are_skipped_not_fatal() {
        let mut fanout = Fanout::new(1, Arc::default());
        let (tx, mut rx) = mpsc::channel(1);
        let (kick, mut kicked) = oneshot::channel();
        fanout.attach(1, tx, kick);
        fanout.subscribe(1, key(0));
        fanout.publish(key(0), true, || "t1".into());
        fanout.publish(key(0), true, || "t2".into());
        assert_eq!(
            rx.try_recv().map(|m| m.as_str().to_owned()).ok(),
            Some("t1".into())
        );
        assert!(kicked.try_recv().is_err(), "still connected");
        fanout.detach(1);
        assert!(fanout.keys().is_empty());
    }
}
