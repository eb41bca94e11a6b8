//! The direct-mapped window of a book side, and how it moves a step at a
//! time.
//!
//! The window holds every level whose key is in `lo..lo + span`: `lo` and
//! `span` are multiples of 64 and `span` is at most [`WINDOW`], so the
//! key `k` can have the slot `k % WINDOW` of its own (a ring: keys that
//! stay in the window when it moves never change slots). The bitmap is
//! indexed by slot, and its summary word is rotated by the ring position
//! of `lo` to find the smallest key.
//!
//! Moving the window changes which levels it holds: those it leaves go to
//! the overflow and those it reaches come in from there. It never does
//! that all at once: it is given a target, and each addition to the side
//! takes it one step of about [`STEP`] levels closer, whole 64-key words
//! at a time. First it lets go of the keys outside the target (from
//! either end), then it grows towards the target's ends, so at every step
//! it holds one run of consecutive keys. A run of words with no level
//! costs no budget: an empty stretch of the overflow is crossed with one
//! range query, an empty word of the window with one load.

use std::collections::BTreeMap;

use super::Level;

/// Direct-mapped keys per side; 64 bitmap words, so one summary word.
pub(super) const WINDOW: usize = 4096;
const WORDS: usize = WINDOW / 64;
const _: () = assert!(WORDS == 64 && WINDOW.is_power_of_two());
const SPAN: u64 = WINDOW as u64;
/// Keys left on the better side of the price that places the window.
const AHEAD: u64 = SPAN / 4;
/// Levels a moving window takes across per addition to its side, before
/// the word in hand is finished (up to 63 more). Bounds one command's
/// share of a move at a few microseconds; a whole move (at most
/// `2 * WINDOW` levels, asked for by at least half the side's levels
/// added outside the window) ends long before the next may be asked for.
pub(super) const STEP: usize = 32;

/// The window base that puts `key` a quarter of the way in, on a word
/// boundary, and keeps the window's end from wrapping.
pub(super) fn placement(key: u64) -> u64 {
    key.saturating_sub(AHEAD).min(u64::MAX - SPAN) & !63
}

/// The ring word of `key`.
#[inline]
fn word_of(key: u64) -> usize {
    ((key >> 6) % WORDS as u64) as usize
}

#[derive(Clone, Debug)]
pub(super) struct Window {
    /// First key held; a multiple of 64.
    lo: u64,
    /// Keys held from `lo`: a multiple of 64, at most `WINDOW`, and
    /// `lo + span` does not wrap.
    span: u64,
    /// `Some(base)` while the window is on its way to hold
    /// `base..base + WINDOW`.
    target: Option<u64>,
    /// Levels in the window.
    pub(super) count: usize,
    /// Bit `w` is set iff `words[w] != 0`.
    summary: u64,
    /// Bit `s % 64` of word `s / 64` is set iff slot `s` holds a level.
    words: [u64; WORDS],
    /// `WINDOW` slots; only those with their bit set mean anything.
    slots: Box<[Level]>,
}

impl Window {
    /// A window around `key`, on a side with no level yet.
    pub(super) fn new(key: u64) -> Self {
        Window {
            lo: placement(key),
            span: SPAN,
            target: None,
            count: 0,
            summary: 0,
            words: [0; WORDS],
            slots: vec![Level::empty(0); WINDOW].into_boxed_slice(),
        }
    }

    /// The slot of `key`, if the window holds its range.
    #[inline]
    pub(super) fn slot(&self, key: u64) -> Option<usize> {
        (key.wrapping_sub(self.lo) < self.span).then_some(key as usize % WINDOW)
    }

    #[inline]
    pub(super) fn lo(&self) -> u64 {
        self.lo
    }

    #[inline]
    pub(super) fn hi(&self) -> u64 {
        self.lo + self.span
    }

    #[inline]
    pub(super) fn occupied(&self, s: usize) -> bool {
        self.words[s / 64] & (1 << (s % 64)) != 0
    }

    #[inline]
    pub(super) fn level(&self, s: usize) -> Option<&Level> {
        self.slots.get(s)
    }

    #[inline]
    pub(super) fn level_mut(&mut self, s: usize) -> Option<&mut Level> {
        self.slots.get_mut(s)
    }

    /// Puts a level in the free slot `s`.
    #[inline]
    pub(super) fn fill(&mut self, s: usize, level: Level) -> &mut Level {
        self.words[s / 64] |= 1 << (s % 64);
        self.summary |= 1 << (s / 64);
        self.count += 1;
        let slot = &mut self.slots[s];
        *slot = level;
        slot
    }

    #[inline]
    pub(super) fn clear(&mut self, s: usize) {
        let word = &mut self.words[s / 64];
        *word &= !(1 << (s % 64));
        if *word == 0 {
            self.summary &= !(1 << (s / 64));
        }
        self.count -= 1;
    }

    /// The smallest key held.
    #[inline]
    pub(super) fn first_key(&self) -> Option<u64> {
        if self.summary == 0 {
            return None;
        }
        let ring = word_of(self.lo);
        let ahead = u64::from(self.summary.rotate_right(ring as u32).trailing_zeros());
        let w = (ring + ahead as usize) % WORDS;
        Some(self.lo + ahead * 64 + u64::from(self.words[w].trailing_zeros()))
    }

    /// The levels held, in key order.
    pub(super) fn levels(&self) -> WindowLevels<'_> {
        WindowLevels {
            window: self,
            ahead: 0,
            bits: if self.span == 0 {
                0
            } else {
                self.words[word_of(self.lo)]
            },
        }
    }

    /// Where the window is, or is going: the `lo` it will have.
    #[inline]
    pub(super) fn destination(&self) -> u64 {
        self.target.unwrap_or(self.lo)
    }

    #[inline]
    pub(super) fn moving(&self) -> bool {
        self.target.is_some()
    }

    /// Sends the window towards `base..base + WINDOW` (a [`placement`]).
    pub(super) fn head_for(&mut self, base: u64) {
        self.target = (base != self.lo || self.span != SPAN).then_some(base);
    }

    /// Takes the window one step towards its target: about [`STEP`]
    /// levels moved between it and `overflow`, whole words at a time.
    #[cold]
    #[inline(never)]
    pub(super) fn step(&mut self, overflow: &mut BTreeMap<u64, Level>) {
        let Some(base) = self.target else {
            return;
        };
        let end = base + SPAN;
        let mut budget = STEP;
        while budget > 0 {
            if self.span == 0 {
                // Holding nothing, the window may start anywhere.
                self.lo = base;
            }
            let (lo, hi) = (self.lo, self.hi());
            budget = if self.span > 0 && (hi <= base || lo >= end) {
                self.release_front(overflow, hi, budget)
            } else if lo < base {
                self.release_front(overflow, base, budget)
            } else if hi > end {
                self.release_back(overflow, end, budget)
            } else if lo > base {
                self.take_front(overflow, base, budget)
            } else if hi < end {
                self.take_back(overflow, end, budget)
            } else {
                self.target = None;
                return;
            };
        }
    }

    /// Lets go of the words from `lo` up to `stop`.
    fn release_front(
        &mut self,
        overflow: &mut BTreeMap<u64, Level>,
        stop: u64,
        mut budget: usize,
    ) -> usize {
        while self.lo < stop && budget > 0 {
            budget = budget.saturating_sub(self.release_word(overflow, self.lo));
            self.lo += 64;
            self.span -= 64;
        }
        budget
    }

    /// Lets go of the words from the end down to `stop`.
    fn release_back(
        &mut self,
        overflow: &mut BTreeMap<u64, Level>,
        stop: u64,
        mut budget: usize,
    ) -> usize {
        while self.hi() > stop && budget > 0 {
            budget = budget.saturating_sub(self.release_word(overflow, self.hi() - 64));
            self.span -= 64;
        }
        budget
    }

    /// Moves the levels of the word starting at key `from` to the
    /// overflow and returns how many there were.
    fn release_word(&mut self, overflow: &mut BTreeMap<u64, Level>, from: u64) -> usize {
        let w = word_of(from);
        let mut bits = self.words[w];
        let moved = bits.count_ones() as usize;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            overflow.insert(from + b as u64, self.slots[w * 64 + b]);
        }
        self.words[w] = 0;
        self.summary &= !(1 << w);
        self.count -= moved;
        moved
    }

    /// Grows the window's end up to `stop`, taking in the overflow's
    /// levels on the way.
    fn take_back(
        &mut self,
        overflow: &mut BTreeMap<u64, Level>,
        stop: u64,
        mut budget: usize,
    ) -> usize {
        loop {
            let next = overflow.range(self.hi()..stop).next().map(|(&k, _)| k);
            let Some(key) = next else {
                self.span = stop - self.lo;
                return budget;
            };
            let from = key & !63;
            if budget == 0 {
                self.span = from - self.lo;
                return 0;
            }
            budget = budget.saturating_sub(self.take_word(overflow, from));
            self.span = from + 64 - self.lo;
        }
    }

    /// Grows the window's start down to `stop`, taking in the overflow's
    /// levels on the way.
    fn take_front(
        &mut self,
        overflow: &mut BTreeMap<u64, Level>,
        stop: u64,
        mut budget: usize,
    ) -> usize {
        loop {
            let next = overflow.range(stop..self.lo).next_back().map(|(&k, _)| k);
            let Some(key) = next else {
                self.span += self.lo - stop;
                self.lo = stop;
                return budget;
            };
            let from = key & !63;
            if budget == 0 {
                self.span += self.lo - (from + 64);
                self.lo = from + 64;
                return 0;
            }
            budget = budget.saturating_sub(self.take_word(overflow, from));
            self.span += self.lo - from;
            self.lo = from;
        }
    }

    /// Moves the overflow's levels of the word starting at key `from`
    /// into the window (which must not hold that word yet) and returns
    /// how many there were.
    fn take_word(&mut self, overflow: &mut BTreeMap<u64, Level>, from: u64) -> usize {
        let mut moved = 0;
        for (key, level) in overflow.extract_if(from..from + 64, |_, _| true) {
            self.fill(key as usize % WINDOW, level);
            moved += 1;
        }
        moved
    }
}

/// The window's levels in key order.
pub(super) struct WindowLevels<'a> {
    window: &'a Window,
    /// Words from `lo` to the one `bits` came from.
    ahead: u64,
    bits: u64,
}

impl<'a> Iterator for WindowLevels<'a> {
    type Item = &'a Level;

    fn next(&mut self) -> Option<&'a Level> {
        let window = self.window;
        while self.bits == 0 {
            self.ahead += 1;
            if self.ahead * 64 >= window.span {
                return None;
            }
            self.bits = window.words[word_of(window.lo + self.ahead * 64)];
        }
        let w = word_of(window.lo + self.ahead * 64);
        let s = w * 64 + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        window.slots.get(s)
    }
}

#[cfg(test)]
impl Window {
    /// Checks the window's own invariants and that `overflow` holds no
    /// key of its range; returns the keys it holds, in order.
    pub(super) fn checked_keys(&self, overflow: &BTreeMap<u64, Level>) -> Vec<u64> {
        assert!(self.lo.is_multiple_of(64) && self.span.is_multiple_of(64) && self.span <= SPAN);
        assert!(self.lo.checked_add(self.span).is_some());
        assert!(overflow.range(self.lo..self.hi()).next().is_none());
        let mut keys = Vec::new();
        for (w, &word) in self.words.iter().enumerate() {
            assert_eq!(
                self.summary & (1 << w) != 0,
                word != 0,
                "summary of word {w}"
            );
            let mut bits = word;
            while bits != 0 {
                let b = bits.trailing_zeros() as u64;
                bits &= bits - 1;
                // The key in the window's range whose ring word is `w`.
                let ahead = (w as u64 + WORDS as u64 - word_of(self.lo) as u64) % WORDS as u64;
                assert!(ahead * 64 < self.span, "a level outside the range");
                keys.push(self.lo + ahead * 64 + b);
            }
        }
        keys.sort_unstable();
        assert_eq!(keys.len(), self.count);
        assert_eq!(keys.first().copied(), self.first_key());
        keys
    }
}
