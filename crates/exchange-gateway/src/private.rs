//! Routing of the WebSocket private stream: one task reads the sequencer's
//! broadcast and hands each applied entry only to the sockets of the
//! accounts it concerns.
//!
//! Each socket reading the whole broadcast itself would wake every socket
//! for every entry, to find nothing for it in most; with sixteen busy
//! sockets that cost more than the orders did. Each socket gets a bounded
//! queue of `events_buffer` entries, in log order. A socket whose queue
//! overflows, or every socket if the router itself falls behind the
//! broadcast, is cut off (its queue closes after what it holds) and told
//! `slow_consumer`: it never silently misses an update.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use exchange_types::AccountId;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::mpsc::{self, error::TrySendError};

use super::wire;
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
    lagged: Arc<AtomicBool>,
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
    lagged: Arc<AtomicBool>,
}

impl Feed {
    /// The next entry concerning the account, in log order.
    pub async fn recv(&mut self) -> Result<Arc<Applied>, FeedEnd> {
        match self.entries.recv().await {
            Some(applied) => Ok(applied),
            None if self.lagged.load(Ordering::Acquire) => Err(FeedEnd::Lagged),
            None => Err(FeedEnd::Closed),
        }
    }
}

impl PrivateStreams {
    /// `queue`: entries buffered per socket.
    pub fn new(handle: Handle, queue: usize) -> Arc<PrivateStreams> {
        Arc::new(PrivateStreams {
            handle,
            queue: queue.max(1),
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
        let lagged = Arc::new(AtomicBool::new(false));
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
        subscriber.lagged.store(true, Ordering::Release);
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
                        subscriber.lagged.store(true, Ordering::Release);
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
