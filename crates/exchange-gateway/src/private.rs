//! Routing of the WebSocket private stream: one task reads the sequencer's
//! broadcast and hands each applied entry only to the sockets of the
//! accounts it concerns.
//!
//! Each socket reading the whole broadcast itself would wake every socket
//! for every entry, to find nothing for it in most; with sixteen busy
//! sockets that cost more than the orders did. Each socket gets a bounded
//! queue of entries ([`PRIVATE_STREAM_QUEUE`] at most), in log order. A
//! socket whose queue overflows, or every socket if the router itself
//! falls behind the broadcast, is cut off and told `slow_consumer`: it
//! never silently misses an update. The cut is signalled at once
//! ([`Feed::lag`]), so a socket stuck writing to a peer that stopped
//! reading is closed without first working through its queue.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use exchange_types::AccountId;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::sync::Notify;

use super::wire;
use exchange_node::limits::PRIVATE_STREAM_QUEUE;
use exchange_node::sequencer::Handle;
use exchange_node::state::Applied;

/// Why a socket's private stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedEnd {
    /// It fell behind and missed entries.
    Lagged,
    /// The node is stopping.
    Closed,
}

struct Subscriber {
    queue: mpsc::Sender<Arc<Applied>>,
    lagged: Arc<Lag>,
}

/// Set once a socket's stream has been cut off.
#[derive(Default)]
pub struct Lag {
    flag: AtomicBool,
    notify: Notify,
}

impl Lag {
    fn set(&self) {
        self.flag.store(true, Ordering::Release);
        // Stores a permit when nobody waits yet: the cut is never missed.
        self.notify.notify_one();
    }

    #[cfg(test)]
    pub fn set_for_tests(&self) {
        self.set();
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Completes once the stream has been cut off.
    pub async fn wait(&self) {
        if !self.is_set() {
            self.notify.notified().await;
        }
    }
}

#[derive(Default)]
struct Registry {
    routing: bool,
    by_account: HashMap<AccountId, Vec<Subscriber>>,
}

/// The sockets' private streams, by account.
pub struct PrivateStreams {
    handle: Handle,
    queue: usize,
    registry: Mutex<Registry>,
}

/// One socket's private stream.
pub struct Feed {
    entries: mpsc::Receiver<Arc<Applied>>,
    lagged: Arc<Lag>,
}

impl Feed {
    /// The next entry concerning the account, in log order.
    pub async fn recv(&mut self) -> Result<Arc<Applied>, FeedEnd> {
        match self.entries.recv().await {
            Some(applied) => Ok(applied),
            None if self.lagged.is_set() => Err(FeedEnd::Lagged),
            None => Err(FeedEnd::Closed),
        }
    }

    /// The signal that this stream has been cut off.
    pub fn lag(&self) -> Arc<Lag> {
        self.lagged.clone()
    }
}

impl PrivateStreams {
    /// `queue`: entries buffered per socket, within [`PRIVATE_STREAM_QUEUE`].
    pub fn new(handle: Handle, queue: usize) -> Arc<PrivateStreams> {
        Arc::new(PrivateStreams {
            handle,
            queue: queue.clamp(1, PRIVATE_STREAM_QUEUE),
            registry: Mutex::default(),
        })
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        // Nothing in the registry can be left half-updated by a panic.
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every entry concerning `account` from now on (the router may also
    /// deliver a few applied just before, never fewer). Must be called
    /// within the server's runtime: the first call starts the router.
    pub fn subscribe(self: &Arc<Self>, account: AccountId) -> Feed {
        let (queue, entries) = mpsc::channel(self.queue);
        let lagged = Arc::new(Lag::default());
        let mut registry = self.registry();
        if !registry.routing {
            registry.routing = true;
            // Subscribed before this returns, so nothing after it is missed.
            tokio::spawn(route(self.handle.subscribe(), Arc::downgrade(self)));
        }
        let subscribers = registry.by_account.entry(account).or_default();
        // Forget this account's sockets that have closed since its last entry.
        subscribers.retain(|subscriber| !subscriber.queue.is_closed());
        subscribers.push(Subscriber {
            queue,
            lagged: lagged.clone(),
        });
        Feed { entries, lagged }
    }
}

/// Cuts every socket off after what its queue holds.
fn lag_everyone(registry: &mut Registry) {
    for subscriber in registry.by_account.values().flatten() {
        subscriber.lagged.set();
    }
    registry.by_account.clear();
}

async fn route(mut events: broadcast::Receiver<Arc<Applied>>, streams: Weak<PrivateStreams>) {
    let mut accounts = Vec::new();
    loop {
        let received = events.recv().await;
        // Gone with the gateway: nobody left to route to.
        let Some(streams) = streams.upgrade() else {
            return;
        };
        let mut registry = streams.registry();
        let applied = match received {
            Ok(applied) => applied,
            Err(RecvError::Lagged(_)) => {
                lag_everyone(&mut registry);
                continue;
            }
            Err(RecvError::Closed) => {
                registry.by_account.clear();
                registry.routing = false;
                return;
            }
        };
        wire::accounts_of(&applied.events, &mut accounts);
        for account in &accounts {
            let Some(subscribers) = registry.by_account.get_mut(account) else {
                continue;
            };
            subscribers.retain(
                |subscriber| match subscriber.queue.try_send(applied.clone()) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        subscriber.lagged.set();
                        false
                    }
                    // The socket has gone.
                    Err(TrySendError::Closed(_)) => false,
                },
            );
            if subscribers.is_empty() {
                registry.by_account.remove(account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cut_is_signalled_whether_or_not_someone_waits() {
        let lag = Arc::new(Lag::default());
        assert!(!lag.is_set());
        let waiter = tokio::spawn({
            let lag = lag.clone();
            async move { lag.wait().await }
        });
        tokio::task::yield_now().await;
        lag.set();
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("the waiter wakes")
            .expect("joins");
        // Set before anyone waits: the wait completes at once.
        let early = Lag::default();
        early.set();
        tokio::time::timeout(std::time::Duration::from_secs(1), early.wait())
            .await
            .expect("completes at once");
    }
}
