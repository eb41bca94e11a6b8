//! History reads from a store another process writes: an order-entry
//! gateway in front of replicas that keep no store, whose history is
//! written by `exchange reporter` ([`crate::remote`]).
//!
//! The reads are the replica's ([`Reporting::read_after`]): each waits
//! until the store holds what this process's state had applied when the
//! request came (a gateway's mirror applies the same log, so its command
//! indices are the store's). Only the store's position has to be learnt
//! differently: no writer in this process moves it, so a thread reads it
//! from the store every [`POLL`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use exchange_node::Handle;
use exchange_reporting::{Store, StoreError, Target};
use tokio::sync::watch;

use super::{Inner, Reporting, Stats};

/// How often the store's position is read: at most this much is added to
/// a history read's wait.
const POLL: Duration = Duration::from_millis(10);
/// How long a store that failed is left alone before it is tried again.
const RETRY: Duration = Duration::from_millis(500);

impl Reporting {
    /// History reads from the store at `target`, which another process
    /// writes. The store is opened by a thread of its own, and again
    /// whenever it fails: until it answers, reads wait and then answer
    /// that the store is behind. It is only opened once its writer has
    /// created it ([`Store::open_existing`]): a reader migrating it at the
    /// same time could make the writer's start fail.
    pub fn read_only(
        handle: &Handle,
        target: Target,
        read_wait: Duration,
    ) -> Result<Reporting, StoreError> {
        let (written, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            target,
            written,
            written_ts: AtomicU64::new(0),
            stats: Stats::default(),
            core: handle.metrics.clone(),
            readers: Mutex::new(Vec::new()),
            read_wait,
            written_elsewhere: true,
        });
        let follower = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("reporting-position".into())
            .spawn(move || follow_position(&follower))
            .map_err(|e| StoreError::Schema(format!("cannot start a thread: {e}")))?;
        Ok(Reporting { inner })
    }
}

/// Reads the store's position until the last [`Reporting`] is dropped.
fn follow_position(inner: &Weak<Inner>) {
    let mut store: Option<Store> = None;
    let mut failing = false;
    loop {
        std::thread::sleep(if failing { RETRY } else { POLL });
        let Some(inner) = inner.upgrade() else { return };
        let read = match store.as_mut() {
            Some(store) => store.refresh_position().map(|p| (p, store)),
            None => Store::open_existing(&inner.target).map(|s| (s.position(), store.insert(s))),
        };
        match read {
            Ok((position, store)) => {
                failing = false;
                if position.log_index != *inner.written.borrow() {
                    if let Ok(Some(ts)) = store.position_ts() {
                        inner.written_ts.store(ts, Ordering::Relaxed);
                    }
                    inner.written.send_replace(position.log_index);
                }
            }
            Err(error) => {
                if !failing {
                    tracing::warn!(%error, "reporting store: cannot read its position");
                }
                failing = true;
                store = None;
                inner.stats.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
