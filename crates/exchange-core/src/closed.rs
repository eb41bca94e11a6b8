//! A bounded memory of recently closed orders, by client order id.
//!
//! Closed orders leave the core at once so that memory follows open
//! interest, not history. This ring remembers the last
//! [`RECENTLY_CLOSED_CAPACITY`] of them so that a cancel racing a fill is
//! answered "order not open" (too late) rather than "unknown order".
//! Eviction is first in, first out, which keeps it deterministic.
//!
//! Every order that closes passes through here, so it is found with one
//! cache line: a 64-bit fingerprint of (account, client order id) picks a
//! bucket of a fixed table, whose eight ways hold the ring position and a
//! 32-bit tag of the entries last recorded there; a tag hit is confirmed
//! against the ring entry. Nothing is ever removed from the table: an
//! evicted position simply fails the check, and a new entry takes a way
//! whose position is stale, or else the oldest. With four times as many
//! ways as the ring has entries, a bucket almost never holds more live
//! entries than ways (about one in ten thousand is lost), and when
//! it does the older key is forgotten early (a late cancel then hears
//! "unknown order"), never a wrong answer about an open order. The table is
//! a function of the sequence of records alone, so a replica restored from
//! a snapshot (which replays the ring in order) answers as the original.
//!
//! The bucket is a random line of a 2 MiB table, which the closing command
//! found missing from the cache (close to a tenth of the core's time in
//! `bench engine`). So an entry enters its bucket [`LAG`] records after it enters
//! the ring: the record prefetches its bucket, and the bucket is written
//! when the load has long arrived. Until then a lookup finds the entry by
//! comparing the ring's newest entries. Each bucket still holds the newest
//! of the live entries that hash there, now of those [`LAG`] records old
//! or more, so the table stays a function of the ring alone.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use exchange_types::limits::RECENTLY_CLOSED_CAPACITY;
use exchange_types::{ClientOrderId, OrderId};
use rustc_hash::FxHasher;

pub(crate) type ClosedKey = (u32, ClientOrderId);

const WAYS: usize = 8;
/// Four ways per ring entry: two live entries per bucket on average.
const BUCKETS: usize = (RECENTLY_CLOSED_CAPACITY * 4 / WAYS).next_power_of_two();
/// Records between an entry's arrival and its bucket's write: enough for
/// the bucket's line to arrive when a sweep closes makers back to back
/// (a few tens of nanoseconds apart), few enough to compare on a lookup.
const LAG: usize = 4;
const _: () = assert!(
    LAG < RECENTLY_CLOSED_CAPACITY,
    "an entry is indexed before it is evicted"
);

/// One way of a bucket: the position (mod 2^32) of an entry and its tag;
/// tag 0 marks a way never written (real tags are never 0), which would
/// otherwise look like position 0.
#[derive(Clone, Copy, Debug, Default)]
struct Way {
    position: u32,
    tag: u32,
}

#[derive(Clone, Debug)]
#[repr(align(64))]
struct Bucket([Way; WAYS]);

#[derive(Clone, Debug)]
struct Closed {
    key: ClosedKey,
    order_id: OrderId,
    /// Where the key hashes, kept for the write [`LAG`] records later.
    bucket: u32,
    tag: u32,
}

#[derive(Debug)]
pub(crate) struct RecentlyClosed {
    ring: VecDeque<Closed>,
    /// Entries ever pushed (mod 2^32); the front of the ring is entry
    /// `pushed - len`.
    pushed: u32,
    buckets: Box<[Bucket]>,
}

/// A copy keeps the ring's whole capacity, as `default` reserves it.
impl Clone for RecentlyClosed {
    fn clone(&self) -> Self {
        let mut ring = VecDeque::with_capacity(RECENTLY_CLOSED_CAPACITY);
        ring.extend(self.ring.iter().cloned());
        RecentlyClosed {
            ring,
            pushed: self.pushed,
            buckets: self.buckets.clone(),
        }
    }
}

impl Default for RecentlyClosed {
    fn default() -> Self {
        RecentlyClosed {
            // Reserved whole, once: grown by doubling, the ring was copied
            // inside the command that filled it (0.2-0.9 ms at 16k, 32k and
            // 64k entries).
            ring: VecDeque::with_capacity(RECENTLY_CLOSED_CAPACITY),
            pushed: 0,
            buckets: vec![Bucket([Way::default(); WAYS]); BUCKETS].into_boxed_slice(),
        }
    }
}

/// The bucket (from the fingerprint's high bits, FxHash's best mixed) and
/// the tag (its low half, never 0).
fn locate(account: u32, client_order_id: &ClientOrderId) -> (usize, u32) {
    let mut hasher = FxHasher::default();
    account.hash(&mut hasher);
    client_order_id.as_bytes().hash(&mut hasher);
    let fingerprint = hasher.finish();
    (
        (fingerprint >> (64 - BUCKETS.trailing_zeros())) as usize,
        (fingerprint as u32).max(1),
    )
}

/// Asks the CPU to start loading a bucket: a hint, which reads nothing
/// into the program and cannot fault, so it changes no state.
#[inline]
fn prefetch(bucket: &Bucket) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch of any address is defined (it never faults and
    // loads nothing the program sees); this is the bucket's own line.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(bucket).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bucket;
}

impl RecentlyClosed {
    /// How far back from the newest entry `position` is (1 = the newest),
    /// if it is still in the ring.
    fn age(&self, way: Way) -> Option<usize> {
        if way.tag == 0 {
            return None;
        }
        let age = self.pushed.wrapping_sub(way.position) as usize;
        (1..=self.ring.len()).contains(&age).then_some(age)
    }

    /// The way a new entry takes in `bucket`: the first stale way if there
    /// is one, else the oldest live one. Live ways hold distinct
    /// positions, so the oldest is one way.
    #[inline]
    fn victim(&self, bucket: &Bucket) -> usize {
        let (mut oldest, mut oldest_age) = (0, 0);
        for (w, way) in bucket.0.iter().enumerate() {
            match self.age(*way) {
                None => return w,
                Some(age) if age > oldest_age => (oldest, oldest_age) = (w, age),
                Some(_) => {}
            }
        }
        oldest
    }

    pub fn record(&mut self, account: u32, client_order_id: ClientOrderId, order_id: OrderId) {
        if self.ring.len() == RECENTLY_CLOSED_CAPACITY {
            self.ring.pop_front();
        }
        let (bucket, tag) = locate(account, &client_order_id);
        prefetch(&self.buckets[bucket]);
        self.ring.push_back(Closed {
            key: (account, client_order_id),
            order_id,
            bucket: bucket as u32,
            tag,
        });
        self.pushed = self.pushed.wrapping_add(1);
        if let Some(due) = self.ring.len().checked_sub(LAG + 1) {
            self.index(due);
        }
    }

    /// Writes the ring's entry `at` into its bucket.
    fn index(&mut self, at: usize) {
        let Closed { bucket, tag, .. } = self.ring[at];
        let position = self.pushed.wrapping_sub((self.ring.len() - at) as u32);
        let victim = self.victim(&self.buckets[bucket as usize]);
        self.buckets[bucket as usize].0[victim] = Way { position, tag };
    }

    pub fn contains(&self, account: u32, client_order_id: &ClientOrderId) -> bool {
        let key = (account, *client_order_id);
        // The newest entries, not yet written into their buckets.
        if self
            .ring
            .iter()
            .rev()
            .take(LAG)
            .any(|entry| entry.key == key)
        {
            return true;
        }
        let (bucket, tag) = locate(account, client_order_id);
        self.buckets[bucket].0.iter().any(|way| {
            way.tag == tag
                && self.age(*way).is_some_and(|age| {
                    self.ring[self.ring.len() - age].key == (account, *client_order_id)
                })
        })
    }

    /// Entries oldest first, for snapshots.
    pub fn entries(&self) -> impl Iterator<Item = (&ClosedKey, OrderId)> {
        self.ring.iter().map(|entry| (&entry.key, entry.order_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The victim is the one the rule names, as a plain `max_by_key`
        /// over the ways states it: ages near the ring's length on both
        /// sides, never-written ways, positions that wrap.
        #[test]
        fn the_victim_is_the_first_stale_way_else_the_oldest(
            pushed: u32,
            len in 0usize..48,
            ways in proptest::collection::vec((0u32..64, any::<bool>()), WAYS),
        ) {
            let mut closed = RecentlyClosed { pushed, ..RecentlyClosed::default() };
            let key = (0, ClientOrderId::new("k").expect("test id"));
            let entry = |n: usize| Closed { key, order_id: n as u64, bucket: 0, tag: 1 };
            closed.ring.extend((0..len).map(entry));
            let mut bucket = Bucket([Way::default(); WAYS]);
            for (way, &(back, written)) in bucket.0.iter_mut().zip(&ways) {
                *way = Way { position: pushed.wrapping_sub(back), tag: u32::from(written) };
            }
            let expected = (0..WAYS)
                .rev()
                .max_by_key(|&w| closed.age(bucket.0[w]).unwrap_or(usize::MAX))
                .unwrap_or(0);
            prop_assert_eq!(closed.victim(&bucket), expected);
        }
    }

    fn id(n: usize) -> ClientOrderId {
        ClientOrderId::new(&format!("c{n}")).expect("test id")
    }

    #[test]
    fn remembers_the_last_capacity_closures_first_in_first_out() {
        let mut closed = RecentlyClosed::default();
        let total = RECENTLY_CLOSED_CAPACITY + 1_000;
        for n in 0..total {
            closed.record(7, id(n), n as u64);
        }
        let evicted = total - RECENTLY_CLOSED_CAPACITY;
        assert!((0..evicted).all(|n| !closed.contains(7, &id(n))));
        // The table may forget an entry whose bucket overflowed, but with
        // four ways per entry that is rare: nearly all remain.
        let kept = (evicted..total)
            .filter(|&n| closed.contains(7, &id(n)))
            .count();
        assert!(kept > RECENTLY_CLOSED_CAPACITY * 999 / 1000, "kept {kept}");
        assert!(closed.contains(7, &id(total - 1)));
        assert!(!closed.contains(8, &id(total - 1)), "another account's id");
        assert!(!closed.contains(7, &id(total)), "never closed");
        assert_eq!(closed.entries().count(), RECENTLY_CLOSED_CAPACITY);
        let (first, order) = closed.entries().next().expect("full ring");
        assert_eq!((*first, order), ((7, id(evicted)), evicted as u64));
    }

    #[test]
    fn a_full_bucket_forgets_its_oldest_entry_first() {
        let (bucket, _) = locate(1, &id(0));
        let same_bucket = &same_bucket(WAYS + 1)[1..];
        let mut closed = RecentlyClosed::default();
        closed.record(1, id(0), 0);
        for &n in &same_bucket[..WAYS - 1] {
            closed.record(1, id(n), n as u64);
        }
        assert!(closed.contains(1, &id(0)), "the bucket had room for it");
        closed.record(1, id(same_bucket[WAYS - 1]), 1);
        assert!(closed.contains(1, &id(0)), "still among the unindexed");
        index_all(&mut closed, bucket);
        assert!(!closed.contains(1, &id(0)), "the oldest made way");
        assert!(same_bucket.iter().all(|&n| closed.contains(1, &id(n))));
    }

    /// Records [`LAG`] entries of another account that hash elsewhere, so
    /// that every earlier entry has been written into its bucket.
    fn index_all(closed: &mut RecentlyClosed, bucket: usize) {
        let others = (0..).filter(|&n| locate(99, &id(n)).0 != bucket);
        for n in others.take(LAG) {
            closed.record(99, id(n), 0);
        }
    }

    /// Entries hashing to the bucket of `id(0)` for account 1.
    fn same_bucket(count: usize) -> Vec<usize> {
        let (bucket, _) = locate(1, &id(0));
        (0..)
            .filter(|&n| locate(1, &id(n)).0 == bucket)
            .take(count)
            .collect()
    }

    #[test]
    fn a_restored_ring_answers_as_the_original() {
        // More ids than a bucket has ways, closed on both sides of the
        // point the ring has evicted up to and again at its end: the
        // bucket holds evicted positions when the last ones arrive, and
        // overflows and forgets; a copy rebuilt from the ring's entries, as
        // a snapshot restores it, must forget the same ones.
        let crowded = same_bucket(WAYS + 4);
        let total = RECENTLY_CLOSED_CAPACITY + 5_000;
        let crowding = |n: usize| (3_000..4_600).contains(&n) || n >= total - 1_000;
        let mut original = RecentlyClosed::default();
        for n in 0..total {
            if crowding(n) && n % 100 == 0 {
                let k = crowded[(n / 100) % crowded.len()];
                original.record(1, id(k), n as u64);
            } else {
                original.record(2, id(n), n as u64);
            }
        }
        let mut restored = RecentlyClosed::default();
        for (&(account, coid), order_id) in original.entries() {
            restored.record(account, coid, order_id);
        }
        let answers = |closed: &RecentlyClosed| -> Vec<bool> {
            crowded
                .iter()
                .map(|&k| closed.contains(1, &id(k)))
                .collect()
        };
        assert_eq!(answers(&original), answers(&restored));
        assert!(answers(&original).contains(&false), "the bucket overflowed");
        assert!(answers(&original).contains(&true));
    }

    #[test]
    fn a_reused_id_closed_again_is_found_at_its_newest_closure() {
        let mut closed = RecentlyClosed::default();
        closed.record(1, id(1), 1);
        for n in 2..=RECENTLY_CLOSED_CAPACITY {
            closed.record(2, id(n), n as u64);
        }
        closed.record(1, id(1), 99);
        // The first closure is evicted now; the second keeps the id known.
        closed.record(2, id(0), 100);
        assert!(closed.contains(1, &id(1)));
    }

    #[test]
    fn positions_wrap_around_without_false_hits() {
        let mut closed = RecentlyClosed {
            pushed: u32::MAX - 10,
            ..RecentlyClosed::default()
        };
        assert!(!closed.contains(1, &id(1)), "stale zeros are not entries");
        for n in 0..20 {
            closed.record(1, id(n), n as u64);
        }
        assert!((0..20).all(|n| closed.contains(1, &id(n))));
        assert!(!closed.contains(1, &id(20)));
    }
}
