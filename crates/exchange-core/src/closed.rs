//! A bounded memory of recently closed orders, by client order id.
//!
//! Closed orders leave the core at once so that memory follows open
//! interest, not history. This ring remembers the last
//! [`RECENTLY_CLOSED_CAPACITY`] of them so that a cancel racing a fill is
//! answered "order not open" (too late) rather than "unknown order".
//! Eviction is first in, first out, which keeps it deterministic.
//!
//! Every order that closes passes through here, so the map is keyed by a
//! 64-bit fingerprint of (account, client order id) rather than the 41-byte
//! key itself, and a hit is confirmed against the ring entry it points to.
//! Two keys with one fingerprint can only make the older one forgotten
//! early (a late cancel then hears "unknown order"), never a wrong answer
//! about an open order.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use exchange_types::limits::RECENTLY_CLOSED_CAPACITY;
use exchange_types::{ClientOrderId, OrderId};
use rustc_hash::{FxHashMap, FxHasher};

pub(crate) type ClosedKey = (u32, ClientOrderId);

#[derive(Clone, Debug)]
struct Closed {
    fingerprint: u64,
    key: ClosedKey,
    order_id: OrderId,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct RecentlyClosed {
    ring: VecDeque<Closed>,
    /// Entries ever pushed; the front of the ring is entry `pushed - len`.
    pushed: u64,
    /// Fingerprint -> absolute position of its latest entry.
    latest: FxHashMap<u64, u64>,
}

fn fingerprint(account: u32, client_order_id: &ClientOrderId) -> u64 {
    let mut hasher = FxHasher::default();
    account.hash(&mut hasher);
    client_order_id.as_bytes().hash(&mut hasher);
    hasher.finish()
}

impl RecentlyClosed {
    pub fn record(&mut self, account: u32, client_order_id: ClientOrderId, order_id: OrderId) {
        if self.ring.len() == RECENTLY_CLOSED_CAPACITY {
            let front = self.pushed - self.ring.len() as u64;
            if let Some(old) = self.ring.pop_front() {
                // Forget the fingerprint only if this entry is still its
                // latest: the id may have been reused and closed again.
                if self.latest.get(&old.fingerprint) == Some(&front) {
                    self.latest.remove(&old.fingerprint);
                }
            }
        }
        let fingerprint = fingerprint(account, &client_order_id);
        self.latest.insert(fingerprint, self.pushed);
        self.ring.push_back(Closed {
            fingerprint,
            key: (account, client_order_id),
            order_id,
        });
        self.pushed += 1;
    }

    pub fn contains(&self, account: u32, client_order_id: &ClientOrderId) -> bool {
        let Some(&position) = self.latest.get(&fingerprint(account, client_order_id)) else {
            return false;
        };
        let front = self.pushed - self.ring.len() as u64;
        self.ring
            .get((position - front) as usize)
            .is_some_and(|entry| entry.key == (account, *client_order_id))
    }

    /// Entries oldest first, for snapshots.
    pub fn entries(&self) -> impl Iterator<Item = (&ClosedKey, OrderId)> {
        self.ring.iter().map(|entry| (&entry.key, entry.order_id))
    }
}
