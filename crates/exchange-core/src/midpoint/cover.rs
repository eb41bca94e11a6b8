//! How many intervals of midpoints cover each midpoint, kept as the
//! points where that count changes: adding or removing an interval costs
//! a binary search and a shift of the points after it, and asking whether
//! a midpoint is covered a binary search.

/// Intervals of `u64` (both ends included), counted where they overlap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cover {
    /// `(from, count)`: `count` intervals cover every point from `from` up
    /// to the next mark's `from` (or without end for the last), none below
    /// the first. Two neighbours never have the same count and the first
    /// never has none, so equal sets of intervals have equal marks.
    marks: Vec<(u64, u32)>,
}

impl Cover {
    pub fn add(&mut self, low: u64, high: u64) {
        self.shift(low, high, true);
    }

    /// Takes out one interval added before with the same ends.
    pub fn remove(&mut self, low: u64, high: u64) {
        self.shift(low, high, false);
    }

    pub fn covers(&self, point: u64) -> bool {
        let after = self.marks.partition_point(|&(from, _)| from <= point);
        after > 0 && self.marks[after - 1].1 > 0
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The covered points as sorted, disjoint, non-adjacent intervals.
    pub fn spans(&self) -> Vec<(u64, u64)> {
        let mut spans: Vec<(u64, u64)> = Vec::new();
        let mut open = None;
        for &(from, count) in &self.marks {
            match (open, count > 0) {
                (None, true) => open = Some(from),
                (Some(low), false) => {
                    spans.push((low, from - 1));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(low) = open {
            spans.push((low, u64::MAX));
        }
        spans
    }

    fn shift(&mut self, low: u64, high: u64, up: bool) {
        debug_assert!(low <= high, "an interval {low}..={high}");
        let first = self.split(low);
        let end = match high.checked_add(1) {
            Some(past) => self.split(past),
            None => self.marks.len(),
        };
        for (_, count) in &mut self.marks[first..end] {
            *count = if up {
                *count + 1
            } else {
                // Only an interval that was added is removed.
                count
                    .checked_sub(1)
                    .expect("a removed interval was covered")
            };
        }
        // The later one first, so that `first` still names its mark.
        self.join(end);
        self.join(first);
    }

    /// The index of the mark at `point`, made with the count already
    /// there if there was none.
    fn split(&mut self, point: u64) -> usize {
        let after = self.marks.partition_point(|&(from, _)| from <= point);
        if after > 0 && self.marks[after - 1].0 == point {
            return after - 1;
        }
        let count = after.checked_sub(1).map_or(0, |i| self.marks[i].1);
        self.marks.insert(after, (point, count));
        after
    }

    /// Drops the mark at `at` if it changes nothing.
    fn join(&mut self, at: usize) {
        let Some(&(_, count)) = self.marks.get(at) else {
            return;
        };
        let before = at.checked_sub(1).map_or(0, |i| self.marks[i].1);
        if count == before {
            self.marks.remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Adding and removing intervals in any order covers what a count
        /// per point says, with the fewest marks.
        #[test]
        fn the_marks_count_the_intervals_over_each_point(
            steps in proptest::collection::vec((0..30u64, 0..8u64, any::<bool>()), 0..60),
        ) {
            let mut cover = Cover::default();
            let mut held: Vec<(u64, u64)> = Vec::new();
            for (low, len, add) in steps {
                if add || held.is_empty() {
                    cover.add(low, low + len);
                    held.push((low, low + len));
                } else {
                    let (low, high) = held.remove(low as usize % held.len());
                    cover.remove(low, high);
                }
                for point in 0..40 {
                    let counted = held.iter().any(|&(l, h)| l <= point && point <= h);
                    prop_assert_eq!(cover.covers(point), counted, "{} in {:?}", point, held);
                }
                for pair in cover.marks.windows(2) {
                    prop_assert!(pair[0].0 < pair[1].0 && pair[0].1 != pair[1].1);
                }
                prop_assert!(cover.marks.first().is_none_or(|m| m.1 > 0));
            }
            for (low, high) in held.drain(..) {
                cover.remove(low, high);
            }
            prop_assert!(cover.is_empty());
        }
    }

    #[test]
    fn an_interval_to_the_last_point_has_no_end_mark() {
        let mut cover = Cover::default();
        cover.add(5, u64::MAX);
        cover.add(0, 2);
        assert!(cover.covers(u64::MAX) && cover.covers(1) && !cover.covers(3));
        assert_eq!(cover.spans(), [(0, 2), (5, u64::MAX)]);
        cover.add(3, 4);
        assert_eq!(cover.spans(), [(0, u64::MAX)]);
        cover.remove(5, u64::MAX);
        cover.remove(0, 2);
        cover.remove(3, 4);
        assert!(cover.is_empty());
    }
}
