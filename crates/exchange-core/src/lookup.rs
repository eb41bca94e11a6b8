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

/// A hash map from `K` to `V` without iteration.
#[derive(Clone)]
pub(crate) struct Lookup<K, V>(Map<K, V>);

impl<K, V> Default for Lookup<K, V> {
    fn default() -> Self {
        Lookup(Map::default())
    }
}

impl<K: Eq + Hash, V> Lookup<K, V> {
    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        self.0.get(key)
    }

    #[inline]
    pub fn contains_key(&self, key: &K) -> bool {
        self.0.contains_key(key)
    }

    /// The value that was there before, if any.
    #[inline]
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.0.insert(key, value)
    }

    #[inline]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.0.remove(key)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// The size only: printing the entries would list them in hash order,
/// which is exactly what this type keeps out of sight.
impl<K, V> fmt::Debug for Lookup<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lookup({} entries)", self.0.len())
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
}
