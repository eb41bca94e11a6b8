//! Hash maps the core may probe but never walk.
//!
//! A hash map visits its keys in an order set by the hasher and by the
//! history of inserts and removals, not by the keys. Anything the core
//! derived from such a walk (which orders a mass cancel closes first, the
//! bytes of a snapshot) could differ between two replicas whose maps grew
//! differently, say one restored from a snapshot and one that replayed the
//! log. [`Lookup`] therefore offers lookups and updates only: no `iter`, no
//! `keys`, no `IntoIterator`. Whatever must be walked lives in a `Vec` or a
//! list with an order of its own.
//!
//! This is the one module of the core allowed to name a hash map type
//! (`clippy.toml` bans them elsewhere, since lints on iteration methods
//! cannot see a `for` loop over a map). FxHash keeps the probes fast: it is
//! not keyed, so it hashes the same on every replica too.

use std::fmt;
use std::hash::Hash;

#[allow(
    clippy::disallowed_types,
    reason = "the map is private to `Lookup`, which exposes no iteration"
)]
type Map<K, V> = rustc_hash::FxHashMap<K, V>;

/// Capacity a churning map keeps per entry, at the least (see
/// [`Lookup::churning`]). Buckets are a power of two holding 8/7 of the
/// capacity or more, so a map is at most 7/16 full. Sparser is slower:
/// twice the buckets spread the same entries over twice the cache lines
/// (`bench engine`'s p99 rose by a tenth at four buckets an entry).
const SPARSENESS: usize = 2;

/// A hash map from `K` to `V` without iteration.
#[derive(Clone)]
pub(crate) struct Lookup<K, V> {
    map: Map<K, V>,
    /// Entries held before the map is grown by [`Lookup::insert`];
    /// `usize::MAX` leaves growing to the map itself.
    room: usize,
}

impl<K, V> Default for Lookup<K, V> {
    fn default() -> Self {
        Lookup {
            map: Map::default(),
            room: usize::MAX,
        }
    }
}

impl<K: Eq + Hash, V> Lookup<K, V> {
    /// A map for keys that come and go all the time (open orders), with
    /// room for `room` of them before it first grows.
    ///
    /// A hash map fills with tombstones as keys are removed, and when they
    /// use up its spare capacity it rehashes or doubles the whole table
    /// inside one insert, at a point no command can foresee: 0.3-1 ms
    /// for a few thousand open orders, long after the map stopped
    /// growing. Kept less than half full, a removal rarely leaves a
    /// tombstone, so the table is rebuilt when the number of keys doubles
    /// past `room`, and otherwise seldom (in place, without allocating).
    pub fn churning(room: usize) -> Self {
        Lookup {
            map: Map::with_capacity_and_hasher(room * SPARSENESS, Default::default()),
            room,
        }
    }

    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    #[inline]
    pub fn contains_key(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// The value that was there before, if any.
    #[inline]
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.map.len() >= self.room {
            self.grow();
        }
        self.map.insert(key, value)
    }

    #[cold]
    fn grow(&mut self) {
        self.room = self.room.saturating_mul(2).max(1);
        let wanted = self.room.saturating_mul(SPARSENESS);
        self.map.reserve(wanted.saturating_sub(self.map.len()));
    }

    #[inline]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

/// The size only: printing the entries would list them in hash order,
/// which is exactly what this type keeps out of sight.
impl<K, V> fmt::Debug for Lookup<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lookup({} entries)", self.map.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_and_updates() {
        let mut map: Lookup<u64, u32> = Lookup::default();
        assert_eq!(map.insert(7, 1), None);
        assert_eq!(map.insert(7, 2), Some(1));
        assert_eq!(map.get(&7), Some(&2));
        assert!(map.contains_key(&7));
        assert!(!map.contains_key(&8));
        assert_eq!(map.len(), 1);
        assert_eq!(map.remove(&7), Some(2));
        assert_eq!(map.remove(&7), None);
        assert_eq!(map.len(), 0);
        assert_eq!(format!("{map:?}"), "Lookup(0 entries)");
    }

    #[test]
    fn a_churning_map_grows_past_its_room_and_keeps_every_key() {
        let mut map: Lookup<u64, u64> = Lookup::churning(4);
        for key in 0..1_000 {
            assert_eq!(map.insert(key, key * 2), None);
        }
        for key in (0..1_000).step_by(2) {
            assert_eq!(map.remove(&key), Some(key * 2));
        }
        assert_eq!(map.len(), 500);
        assert!(map.room >= 500);
        for key in 0..1_000 {
            let expected = (key % 2 == 1).then_some(key * 2);
            assert_eq!(map.get(&key).copied(), expected);
        }
        let empty: Lookup<u64, u64> = Lookup::churning(0);
        let mut grown = empty.clone();
        assert_eq!(grown.insert(1, 1), None);
        assert_eq!(grown.get(&1), Some(&1));
    }
}
