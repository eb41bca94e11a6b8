//! Slow spells of a disk: syncs over [`SLOW_SYNC`] that come in clusters.
//!
//! The virtual disks measured here have spells, every second or two, in
//! which each flush takes 1-3 ms instead of 60-100 µs, for 50-100 ms. A
//! percentile cannot tell those from slow syncs spread evenly, yet they
//! cost a group-committing log much more: every command that arrives in
//! a spell waits for the flush in progress and then its own
//! (docs/benchmarking.md, "The disk's slow spells").

use std::time::Duration;

/// A sync slower than this is slow.
pub const SLOW_SYNC: Duration = Duration::from_millis(1);

/// Slow syncs this close together belong to one spell.
pub const SPELL_GAP: Duration = Duration::from_millis(50);

/// A spell has at least this many slow syncs; fewer are blips.
pub const SPELL_MIN_SYNCS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spell {
    /// When its first slow sync started, from the start of the pass.
    pub start: Duration,
    /// When its last slow sync ended.
    pub end: Duration,
    pub syncs: usize,
}

/// The spells among slow syncs, given as (start, duration) in the order
/// they ran.
pub fn spells(slow: &[(Duration, Duration)]) -> Vec<Spell> {
    let mut found = Vec::new();
    let mut current: Option<Spell> = None;
    for &(start, took) in slow {
        let end = start + took;
        current = match current {
            Some(mut spell) if start.saturating_sub(spell.end) <= SPELL_GAP => {
                spell.end = spell.end.max(end);
                spell.syncs += 1;
                Some(spell)
            }
            other => {
                found.extend(other.filter(|spell| spell.syncs >= SPELL_MIN_SYNCS));
                Some(Spell {
                    start,
                    end,
                    syncs: 1,
                })
            }
        };
    }
    found.extend(current.filter(|spell| spell.syncs >= SPELL_MIN_SYNCS));
    found
}

/// What a layout's passes showed, in one line.
pub fn summary(slow_syncs: usize, spells: &[Spell], measured: Duration) -> String {
    let in_spells: usize = spells.iter().map(|spell| spell.syncs).sum();
    let mut lengths: Vec<Duration> = spells.iter().map(|spell| spell.end - spell.start).collect();
    lengths.sort_unstable();
    let median_ms = lengths
        .get(lengths.len() / 2)
        .map_or(0.0, |length| length.as_secs_f64() * 1e3);
    let every = if spells.is_empty() {
        "none".to_owned()
    } else {
        format!(
            "one every {:.1} s",
            measured.as_secs_f64() / spells.len() as f64
        )
    };
    format!(
        "syncs over {} ms: {slow_syncs}, {:.0}% of them in {} spell{} \
         ({every}, median {median_ms:.0} ms long)",
        SLOW_SYNC.as_millis(),
        if slow_syncs == 0 {
            0.0
        } else {
            in_spells as f64 * 100.0 / slow_syncs as f64
        },
        spells.len(),
        if spells.len() == 1 { "" } else { "s" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn clusters_become_spells_and_blips_do_not() {
        let slow = [
            // A blip: alone.
            (ms(100), ms(2)),
            // A spell of four, each within 50 ms of the last one's end.
            (ms(1_000), ms(2)),
            (ms(1_020), ms(3)),
            (ms(1_070), ms(1)),
            (ms(1_100), ms(2)),
            // Two close together: too few.
            (ms(2_000), ms(2)),
            (ms(2_010), ms(2)),
            // 51 ms after the pair: a new cluster, a spell of three.
            (ms(2_063), ms(1)),
            (ms(2_064), ms(1)),
            (ms(2_065), ms(1)),
        ];
        assert_eq!(
            spells(&slow),
            vec![
                Spell {
                    start: ms(1_000),
                    end: ms(1_102),
                    syncs: 4
                },
                Spell {
                    start: ms(2_063),
                    end: ms(2_066),
                    syncs: 3
                },
            ]
        );
        assert!(spells(&[]).is_empty());
    }

    #[test]
    fn the_summary_says_how_often_and_how_long() {
        let found = [
            Spell {
                start: ms(0),
                end: ms(60),
                syncs: 30,
            },
            Spell {
                start: ms(1_500),
                end: ms(1_600),
                syncs: 50,
            },
        ];
        assert_eq!(
            summary(100, &found, ms(3_000)),
            "syncs over 1 ms: 100, 80% of them in 2 spells (one every 1.5 s, median 100 ms long)"
        );
        assert_eq!(
            summary(40, &found[..1], ms(3_000)),
            "syncs over 1 ms: 40, 75% of them in 1 spell (one every 3.0 s, median 60 ms long)"
        );
        assert_eq!(
            summary(0, &[], ms(3_000)),
            "syncs over 1 ms: 0, 0% of them in 0 spells (none, median 0 ms long)"
        );
    }
}
