//! A bounded memory of recently closed orders, by client order id.
//!
//! Closed orders leave the core at once so that memory follows open
//! interest, not history. This ring remembers the last
//! [`RECENTLY_CLOSED_CAPACITY`] of them so that a cancel racing a fill is
//! answered "order not open" (too late) rather than "unknown order".
//! Eviction is first in, first out, which keeps it deterministic.

use std::collections::VecDeque;

use exchange_types::limits::RECENTLY_CLOSED_CAPACITY;
use exchange_types::{ClientOrderId, OrderId};
use rustc_hash::FxHashMap;

pub(crate) type ClosedKey = (u32, ClientOrderId);

#[derive(Clone, Debug, Default)]
pub(crate) struct RecentlyClosed {
    ring: VecDeque<(ClosedKey, OrderId)>,
    latest: FxHashMap<ClosedKey, OrderId>,
}

impl RecentlyClosed {
    pub fn record(&mut self, account: u32, client_order_id: ClientOrderId, order_id: OrderId) {
        if self.ring.len() == RECENTLY_CLOSED_CAPACITY {
            if let Some((key, id)) = self.ring.pop_front() {
                // The id may have been reused and closed again since; only
                // forget it if this entry is still the latest.
                if self.latest.get(&key) == Some(&id) {
                    self.latest.remove(&key);
                }
            }
        }
        let key = (account, client_order_id);
        self.ring.push_back((key, order_id));
        self.latest.insert(key, order_id);
    }

    pub fn contains(&self, account: u32, client_order_id: &ClientOrderId) -> bool {
        self.latest.contains_key(&(account, *client_order_id))
    }

    /// Entries oldest first, for snapshots.
    pub fn entries(&self) -> impl Iterator<Item = &(ClosedKey, OrderId)> {
        self.ring.iter()
    }
}
