//! `Lookup` against a sorted map, through growths, copies and removals.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Buckets a table sized for `room` entries of a churning map has.
fn buckets_for(room: usize) -> usize {
    Table::<u32, u64>::with_capacity(room * SPARSENESS).num_buckets()
}

/// What must hold between any two updates: each key in one table at most,
/// the slow path armed exactly while a growth is under way, and a churning
/// table never grown by hashbrown itself (which would copy it whole).
fn check_shape(map: &Lookup<u32, u64>, keys: std::ops::Range<u32>) {
    for key in keys {
        let hash = hash_of(&key);
        let in_new = map.table.find(hash, |(k, _)| *k == key).is_some();
        let in_old = map.old.find(hash, |(k, _)| *k == key).is_some();
        assert!(!(in_new && in_old), "key {key} is in both tables");
    }
    if map.room == usize::MAX {
        assert!(map.old.is_empty());
        return;
    }
    if map.old.is_empty() {
        assert_eq!(map.old.allocation_size(), 0, "an empty old table is freed");
        assert_eq!(map.grow_at, map.room);
    } else {
        assert_eq!(map.grow_at, 0);
    }
    if map.table.num_buckets() != 0 {
        assert_eq!(map.table.num_buckets(), buckets_for(map.room));
    }
}

fn growing(map: &Lookup<u32, u64>) -> bool {
    !map.old.is_empty()
}

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
    let mut map: Lookup<u32, u64> = Lookup::churning(4);
    for key in 0..1_000 {
        assert_eq!(map.insert(key, u64::from(key) * 2), None);
    }
    for key in (0..1_000).step_by(2) {
        assert_eq!(map.remove(&key), Some(u64::from(key) * 2));
    }
    assert_eq!(map.len(), 500);
    assert!(map.room >= 500);
    for key in 0..1_000 {
        let expected = (key % 2 == 1).then_some(u64::from(key) * 2);
        assert_eq!(map.get(&key).copied(), expected);
    }
    check_shape(&map, 0..1_000);
    let empty: Lookup<u32, u64> = Lookup::churning(0);
    let mut grown = empty.clone();
    assert_eq!(grown.insert(1, 1), None);
    assert_eq!(grown.get(&1), Some(&1));
    check_shape(&grown, 0..2);
}

#[test]
fn a_growth_allocates_without_moving_and_ends_within_a_bounded_number_of_inserts() {
    let room = 1_024;
    let mut map: Lookup<u32, u64> = Lookup::churning(room);
    for key in 0..room as u32 {
        map.insert(key, u64::from(key));
    }
    assert!(!growing(&map));
    let old_buckets = map.table.num_buckets();
    // The insert past the room only swaps in a fresh table.
    assert_eq!(map.insert(room as u32, 0), None);
    assert!(growing(&map));
    assert_eq!(map.old.len(), room);
    assert_eq!(map.table.len(), 1);
    assert_eq!(map.room, 2 * room);
    let mut inserts = 0usize;
    let mut next = room as u32 + 1;
    while growing(&map) {
        // Removals move nothing: only the inserts drive the growth.
        let old_entries = map.old.len();
        assert_eq!(map.remove(&(next - 1)), Some(0));
        assert_eq!(map.old.len(), old_entries);
        assert_eq!(map.insert(next - 1, 0), None);
        assert_eq!(map.insert(next, 0), None);
        next += 1;
        inserts += 2;
        check_shape(&map, 0..4);
    }
    assert!(
        inserts <= old_buckets.div_ceil(STEP_BUCKETS) + 1,
        "{inserts}"
    );
    assert!(map.len() < map.room);
    check_shape(&map, 0..next);
    for key in 0..room as u32 {
        assert_eq!(map.get(&key), Some(&u64::from(key)));
    }
}

#[test]
fn a_copy_made_during_a_growth_finishes_it_on_its_own() {
    let mut map: Lookup<u32, u64> = Lookup::churning(256);
    for key in 0..300 {
        map.insert(key, u64::from(key));
    }
    assert!(growing(&map));
    let mut copy = map.clone();
    assert_eq!(copy.cursor, map.cursor);
    assert_eq!(copy.len(), 300);
    // The two diverge: one overwrites and removes, the other inserts.
    for key in 0..300u32 {
        if key.is_multiple_of(2) {
            assert_eq!(copy.remove(&key), Some(u64::from(key)));
        } else {
            assert_eq!(copy.insert(key, 7), Some(u64::from(key)));
        }
    }
    // Short of the new room (512), which would start the next growth.
    for key in 300..400 {
        assert_eq!(map.insert(key, u64::from(key)), None);
    }
    assert!(!growing(&map) && !growing(&copy));
    for key in 0..400 {
        assert_eq!(map.get(&key), Some(&u64::from(key)));
        let expected = (key < 300 && key % 2 == 1).then_some(7);
        assert_eq!(copy.get(&key).copied(), expected);
    }
    check_shape(&map, 0..400);
    check_shape(&copy, 0..400);
}

#[test]
fn an_old_table_emptied_by_removals_is_freed_at_once() {
    let mut map: Lookup<u32, u64> = Lookup::churning(64);
    for key in 0..65 {
        map.insert(key, 1);
    }
    assert!(growing(&map));
    // Remove in reverse, so that the cursor has not reached most of them.
    for key in (0..65).rev() {
        assert_eq!(map.remove(&key), Some(1));
        check_shape(&map, 0..65);
    }
    assert!(!growing(&map));
    assert_eq!(map.len(), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, u64),
    Remove(u32),
    /// Go on with a copy, as the server does with the engine it
    /// snapshots.
    Copy,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u32..96, any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        4 => (0u32..96).prop_map(Op::Remove),
        1 => Just(Op::Copy),
    ]
}

proptest! {
    #[test]
    fn a_lookup_answers_as_a_sorted_map_does(
        room in prop_oneof![Just(usize::MAX), 0usize..40],
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let mut map: Lookup<u32, u64> = if room == usize::MAX {
            Lookup::default()
        } else {
            Lookup::churning(room)
        };
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(key, value) => {
                    prop_assert_eq!(map.insert(key, value), model.insert(key, value));
                }
                Op::Remove(key) => {
                    prop_assert_eq!(map.remove(&key), model.remove(&key));
                }
                Op::Copy => map = map.clone(),
            }
            prop_assert_eq!(map.len(), model.len());
            check_shape(&map, 0..96);
        }
        for key in 0..100 {
            prop_assert_eq!(map.get(&key), model.get(&key));
            prop_assert_eq!(map.contains_key(&key), model.contains_key(&key));
        }
    }
}
