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
//!
//! The table is hashbrown's, as under std's `HashMap`, used bare so that a
//! growth can empty the old table bucket by bucket (see
//! [`Lookup::churning`]). Which entries have moved is as invisible as the
//! buckets themselves: every probe looks in both tables.

use std::fmt;
use std::hash::{BuildHasher, Hash};

use hashbrown::hash_table::Entry;

#[allow(
    clippy::disallowed_types,
    reason = "the table is private to `Lookup`, which exposes no iteration"
)]
type Table<K, V> = hashbrown::HashTable<(K, V)>;

/// Capacity a churning map keeps per entry, at the least (see
/// [`Lookup::churning`]). Buckets are a power of two holding 8/7 of the
/// capacity or more, so a map is at most 7/16 full. Sparser is slower:
/// twice the buckets spread the same entries over twice the cache lines
/// (`bench engine`'s p99 rose by a tenth at four buckets an entry).
const SPARSENESS: usize = 2;

/// Buckets of the old table emptied into the new one by each insert while
/// a churning map grows: one SSE group's worth, about six entries at the
/// old table's 3/8 load when its growth starts. A step is well under a
/// microsecond whatever the size of the map, and a command inserts an
/// order or two at most, so no command pays for many steps.
///
/// Only inserts take steps. Removals need not: they add nothing to the
/// new table, and an order closing takes its entry out of whichever table
/// holds it. So a command that closes many orders at once (a sweep, a mass
/// cancel) costs what it did, growth or not.
///
/// It must exceed the old table's buckets per entry of room (at most 32/7)
/// for the old table to be empty before the new one fills to its own room:
/// a growth then never starts while another is under way.
const STEP_BUCKETS: usize = 16;

#[inline]
fn hash_of<K: Hash>(key: &K) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(key)
}

/// A hash map from `K` to `V` without iteration.
///
/// Each key is in at most one of `table` and `old`.
#[derive(Clone)]
pub(crate) struct Lookup<K, V> {
    table: Table<K, V>,
    /// The table a growth is emptying into `table`; empty, and unallocated,
    /// whenever no growth is under way.
    old: Table<K, V>,
    /// The next bucket of `old` to empty.
    cursor: usize,
    /// Entries `table` is sized for; `usize::MAX` leaves growing to the
    /// table itself.
    room: usize,
    /// The length at which an insert takes the slow path: `room` when no
    /// growth is under way, zero while one is, so that the common insert
    /// pays one comparison for both.
    grow_at: usize,
}

impl<K, V> Default for Lookup<K, V> {
    fn default() -> Self {
        Lookup {
            table: Table::new(),
            old: Table::new(),
            cursor: 0,
            room: usize::MAX,
            grow_at: usize::MAX,
        }
    }
}

impl<K: Eq + Hash, V> Lookup<K, V> {
    /// A map for keys that come and go all the time (open orders), with
    /// room for `room` of them before it first grows.
    ///
    /// A hash map fills with tombstones as keys are removed, and when they
    /// use up its spare capacity it rehashes or doubles the whole table
    /// inside one insert, at a point no command can foresee. Kept less than
    /// half full, a removal rarely leaves a tombstone, so the table is
    /// rebuilt seldom, and in place.
    ///
    /// When the entries reach the room, the room doubles without copying
    /// the table inside one insert (0.3-1 ms for a few thousand entries): a
    /// new table is allocated (its control bytes, one per bucket, are all
    /// it writes), new keys go to it, and each later insert moves
    /// [`STEP_BUCKETS`] buckets' worth of the old table into it, so that
    /// the old one is freed after one insert per sixteen of its buckets at
    /// most (1,024 inserts for 16,384 buckets). Meanwhile a probe or a
    /// removal that misses the new table looks in the old one too.
    pub fn churning(room: usize) -> Self {
        Lookup {
            table: Table::with_capacity(room * SPARSENESS),
            old: Table::new(),
            cursor: 0,
            room,
            grow_at: room,
        }
    }

    #[inline]
    pub fn get(&self, key: &K) -> Option<&V> {
        let hash = hash_of(key);
        match self.table.find(hash, |(k, _)| k == key) {
            Some((_, value)) => Some(value),
            None if self.old.is_empty() => None,
            None => self.get_old(hash, key),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_old(&self, hash: u64, key: &K) -> Option<&V> {
        self.old
            .find(hash, |(k, _)| k == key)
            .map(|(_, value)| value)
    }

    #[inline]
    pub fn contains_key(&self, key: &K) -> bool {
        self.get(key).is_some()
    }

    /// The value that was there before, if any.
    #[inline]
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.table.len() >= self.grow_at {
            return self.insert_growing(key, value);
        }
        put(&mut self.table, hash_of(&key), key, value)
    }

    /// An insert that starts a growth or, during one, moves a step of it.
    #[cold]
    #[inline(never)]
    fn insert_growing(&mut self, key: K, value: V) -> Option<V> {
        if self.old.is_empty() {
            self.start_growth();
        } else {
            self.migrate_step();
        }
        let hash = hash_of(&key);
        let before = self.take_old(hash, &key);
        put(&mut self.table, hash, key, value).or(before)
    }

    #[inline]
    pub fn remove(&mut self, key: &K) -> Option<V> {
        if !self.old.is_empty() {
            return self.remove_growing(key);
        }
        take(&mut self.table, hash_of(key), key)
    }

    #[cold]
    #[inline(never)]
    fn remove_growing(&mut self, key: &K) -> Option<V> {
        let hash = hash_of(key);
        match take(&mut self.table, hash, key) {
            Some(value) => Some(value),
            None => self.take_old(hash, key),
        }
    }

    /// Doubles the room: the full table becomes the old one, to be emptied
    /// step by step into a fresh one that is allocated but not filled.
    fn start_growth(&mut self) {
        self.room = self.room.saturating_mul(2).max(1);
        let fresh = Table::with_capacity(self.room.saturating_mul(SPARSENESS));
        self.old = std::mem::replace(&mut self.table, fresh);
        self.cursor = 0;
        self.grow_at = 0;
        if self.old.is_empty() {
            self.finish_growth();
        }
    }

    /// Moves the entries of the next [`STEP_BUCKETS`] buckets of the old
    /// table into the new one. Nothing is inserted into the old table, so
    /// its entries stay in their buckets and one pass of the cursor visits
    /// each; the cursor wraps all the same, so that even a table whose
    /// layout changed (a copy made during a growth) is emptied.
    fn migrate_step(&mut self) {
        let buckets = self.old.num_buckets();
        let end = self.cursor.saturating_add(STEP_BUCKETS).min(buckets);
        for index in self.cursor..end {
            if let Ok(entry) = self.old.get_bucket_entry(index) {
                let ((key, value), _) = entry.remove();
                self.table
                    .insert_unique(hash_of(&key), (key, value), |(k, _)| hash_of(k));
            }
        }
        self.cursor = if end >= buckets { 0 } else { end };
        if self.old.is_empty() {
            self.finish_growth();
        }
    }

    fn take_old(&mut self, hash: u64, key: &K) -> Option<V> {
        if self.old.is_empty() {
            return None;
        }
        let value = take(&mut self.old, hash, key);
        if self.old.is_empty() {
            self.finish_growth();
        }
        value
    }

    fn finish_growth(&mut self) {
        self.old = Table::new();
        self.cursor = 0;
        self.grow_at = self.room;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.table.len() + self.old.len()
    }
}

#[inline(always)]
fn put<K: Eq + Hash, V>(table: &mut Table<K, V>, hash: u64, key: K, value: V) -> Option<V> {
    match table.entry(hash, |(k, _)| *k == key, |(k, _)| hash_of(k)) {
        Entry::Occupied(mut entry) => Some(std::mem::replace(&mut entry.get_mut().1, value)),
        Entry::Vacant(entry) => {
            entry.insert((key, value));
            None
        }
    }
}

#[inline(always)]
fn take<K: Eq, V>(table: &mut Table<K, V>, hash: u64, key: &K) -> Option<V> {
    let entry = table.find_entry(hash, |(k, _)| k == key).ok()?;
    let ((_, value), _) = entry.remove();
    Some(value)
}

/// The size only: printing the entries would list them in hash order,
/// which is exactly what this type keeps out of sight.
impl<K, V> fmt::Debug for Lookup<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lookup({} entries)", self.table.len() + self.old.len())
    }
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;
