//! Candles (open, high, low, close, volume) from trades, by the trades'
//! event time (nanoseconds since the Unix epoch).
//!
//! One-minute candles are the building block: a five-minute, hourly or
//! daily candle is the roll-up of the one-minute candles it covers
//! ([`roll_up`]). Each series is updated as trades arrive, which gives the
//! same result as rolling up without re-reading the minutes. Intervals
//! without trades have no candle. Each series keeps a bounded number of
//! candles; the reporting store keeps the full history.

use std::collections::VecDeque;

/// Nanoseconds in a minute.
pub const MINUTE_NS: u64 = 60_000_000_000;
/// Nanoseconds in a day: the ticker's volume window.
pub const DAY_NS: u64 = 24 * 60 * MINUTE_NS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interval {
    M1,
    M5,
    H1,
    D1,
}

impl Interval {
    pub const ALL: [Interval; 4] = [Interval::M1, Interval::M5, Interval::H1, Interval::D1];

    pub fn nanos(self) -> u64 {
        match self {
            Interval::M1 => MINUTE_NS,
            Interval::M5 => 5 * MINUTE_NS,
            Interval::H1 => 60 * MINUTE_NS,
            Interval::D1 => DAY_NS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Interval::M1 => "1m",
            Interval::M5 => "5m",
            Interval::H1 => "1h",
            Interval::D1 => "1d",
        }
    }

    pub fn parse(text: &str) -> Option<Interval> {
        Interval::ALL.into_iter().find(|i| i.as_str() == text)
    }

    /// Candles kept per instrument: a day of minutes, a week of five
    /// minutes, a month of hours, about three years of days.
    pub fn capacity(self) -> usize {
        match self {
            Interval::M1 => 1_440,
            Interval::M5 => 2_016,
            Interval::H1 => 720,
            Interval::D1 => 1_100,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Start of the interval that contains `ts`.
    pub fn start_of(self, ts: u64) -> u64 {
        ts - ts % self.nanos()
    }
}

/// Prices in units; volume in units of the base asset (a sum, so wider).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candle {
    pub start: u64,
    pub open: u64,
    pub high: u64,
    pub low: u64,
    pub close: u64,
    pub volume: u128,
    pub trades: u64,
}

impl Candle {
    pub fn new(start: u64, price: u64, qty: u64) -> Candle {
        Candle {
            start,
            open: price,
            high: price,
            low: price,
            close: price,
            volume: u128::from(qty),
            trades: 1,
        }
    }

    fn add(&mut self, price: u64, qty: u64) {
        self.high = self.high.max(price);
        self.low = self.low.min(price);
        self.close = price;
        self.volume += u128::from(qty);
        self.trades += 1;
    }

    /// Extends this candle by a later one.
    pub fn merge(&mut self, later: &Candle) {
        self.high = self.high.max(later.high);
        self.low = self.low.min(later.low);
        self.close = later.close;
        self.volume += later.volume;
        self.trades += later.trades;
    }
}

/// Rolls candles of a finer interval (oldest first) up into `interval`.
pub fn roll_up(candles: &[Candle], interval: Interval) -> Vec<Candle> {
    let mut out: Vec<Candle> = Vec::new();
    for candle in candles {
        let start = interval.start_of(candle.start);
        match out.last_mut() {
            Some(last) if last.start == start => last.merge(candle),
            _ => out.push(Candle { start, ..*candle }),
        }
    }
    out
}

/// The candles of one interval, oldest first, bounded.
#[derive(Clone, Debug)]
pub struct CandleSeries {
    interval: Interval,
    candles: VecDeque<Candle>,
}

impl CandleSeries {
    pub fn new(interval: Interval) -> CandleSeries {
        CandleSeries {
            interval,
            candles: VecDeque::new(),
        }
    }

    /// Adds a trade and returns the candle it landed in.
    pub fn record(&mut self, ts: u64, price: u64, qty: u64) -> Candle {
        let start = self.interval.start_of(ts);
        let index = match self.candles.back() {
            Some(last) if last.start == start => self.candles.len() - 1,
            Some(last) if last.start > start => {
                // Event time never runs backwards in the log; should an
                // older trade arrive anyway, it still lands where it
                // belongs rather than corrupting the newest candle.
                match self.candles.binary_search_by_key(&start, |c| c.start) {
                    Ok(found) => found,
                    Err(at) => {
                        self.candles.insert(at, Candle::new(start, price, qty));
                        return self.candles[at];
                    }
                }
            }
            _ => {
                self.candles.push_back(Candle::new(start, price, qty));
                if self.candles.len() > self.interval.capacity() {
                    self.candles.pop_front();
                }
                return self.candles[self.candles.len() - 1];
            }
        };
        self.candles[index].add(price, qty);
        self.candles[index]
    }

    pub fn latest(&self) -> Option<Candle> {
        self.candles.back().copied()
    }

    /// Candles starting in `[start, end)`, newest first, at most `limit`.
    pub fn range(&self, start: u64, end: u64, limit: usize) -> Vec<Candle> {
        self.candles
            .iter()
            .rev()
            .filter(|c| c.start >= start && c.start < end)
            .take(limit)
            .copied()
            .collect()
    }
}

/// Every interval's candles of one instrument, and its 24-hour volume.
#[derive(Clone, Debug)]
pub struct Candles {
    series: [CandleSeries; 4],
    /// Volume per minute over the last day, oldest first.
    window: VecDeque<(u64, u128)>,
    volume_24h: u128,
}

impl Default for Candles {
    fn default() -> Self {
        Candles {
            series: Interval::ALL.map(CandleSeries::new),
            window: VecDeque::new(),
            volume_24h: 0,
        }
    }
}

impl Candles {
    pub fn record(&mut self, ts: u64, price: u64, qty: u64) {
        for series in &mut self.series {
            series.record(ts, price, qty);
        }
        let minute = Interval::M1.start_of(ts);
        match self.window.back_mut() {
            Some((last, volume)) if *last == minute => *volume += u128::from(qty),
            // A late trade for an earlier minute still counts in the day.
            Some((last, _)) if *last > minute => {
                if let Some(slot) = self.window.iter_mut().find(|(m, _)| *m == minute) {
                    slot.1 += u128::from(qty);
                } else if let Some(front) = self.window.front_mut() {
                    front.1 += u128::from(qty);
                }
            }
            _ => self.window.push_back((minute, u128::from(qty))),
        }
        self.volume_24h += u128::from(qty);
    }

    /// Volume traded in the minute containing `now` and the 1,439 before.
    pub fn volume_24h(&mut self, now: u64) -> u128 {
        let minute = Interval::M1.start_of(now);
        while let Some(&(start, volume)) = self.window.front() {
            if start + DAY_NS > minute {
                break;
            }
            self.volume_24h -= volume;
            self.window.pop_front();
        }
        self.volume_24h
    }

    pub fn series(&self, interval: Interval) -> &CandleSeries {
        &self.series[interval.index()]
    }

    pub fn latest(&self, interval: Interval) -> Option<Candle> {
        self.series(interval).latest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn trades_fill_one_minute_candles() {
        let mut series = CandleSeries::new(Interval::M1);
        series.record(MINUTE_NS + 1, 100, 2);
        series.record(MINUTE_NS + 5, 105, 1);
        let candle = series.record(2 * MINUTE_NS - 1, 99, 3);
        assert_eq!(
            candle,
            Candle {
                start: MINUTE_NS,
                open: 100,
                high: 105,
                low: 99,
                close: 99,
                volume: 6,
                trades: 3
            }
        );
        series.record(3 * MINUTE_NS, 101, 1);
        assert_eq!(series.range(0, u64::MAX, 10).len(), 2);
        assert_eq!(series.range(2 * MINUTE_NS, u64::MAX, 10)[0].open, 101);
        assert_eq!(series.range(0, 2 * MINUTE_NS, 10)[0].start, MINUTE_NS);
    }

    #[test]
    fn volume_24h_forgets_minutes_older_than_a_day() {
        let mut candles = Candles::default();
        candles.record(0, 100, 5);
        candles.record(DAY_NS - 1, 100, 7);
        assert_eq!(candles.volume_24h(DAY_NS - 1), 12);
        assert_eq!(candles.volume_24h(DAY_NS), 7);
        assert_eq!(candles.volume_24h(2 * DAY_NS), 0);
    }

    proptest! {
        /// Each interval's series equals the roll-up of the minutes.
        #[test]
        fn series_equal_the_roll_up_of_minutes(
            steps in proptest::collection::vec((0u64..7 * MINUTE_NS, 1u64..1_000, 1u64..50), 1..200)
        ) {
            // Under a day of minutes in all (none evicted), across midnight.
            let mut candles = Candles::default();
            let mut ts = 3 * DAY_NS - 300 * MINUTE_NS;
            for (gap, price, qty) in steps {
                ts += gap;
                candles.record(ts, price, qty);
            }
            let mut minutes = candles.series(Interval::M1).range(0, u64::MAX, usize::MAX);
            minutes.reverse();
            for interval in [Interval::M5, Interval::H1, Interval::D1] {
                let mut direct = candles.series(interval).range(0, u64::MAX, usize::MAX);
                direct.reverse();
                prop_assert_eq!(roll_up(&minutes, interval), direct);
            }
        }
    }
}
