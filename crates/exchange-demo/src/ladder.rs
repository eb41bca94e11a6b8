//! The demo's arithmetic, kept free of I/O and randomness so it can be
//! tested: the market maker's quote ladder, its fair-price walk, the
//! takers' limit prices and the collar band that bounds them all.
//!
//! Every price and quantity is an integer count of `10^-AMOUNT_SCALE`
//! units, the same as in the core's events, so a value produced here turns
//! into a [`Dec`] with [`Dec::from_units`] without rounding.

use exchange_types::{Dec, UNITS_PER_WHOLE};

/// One resting quote: price and quantity in units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quote {
    pub price: u64,
    pub qty: u64,
}

/// Quotes of both sides, best first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ladder {
    pub bids: Vec<Quote>,
    pub asks: Vec<Quote>,
}

/// An instrument's grid and the maker's shape of book.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LadderSpec {
    /// Units per tick of price.
    pub tick: u64,
    /// Units per lot of quantity.
    pub lot: u64,
    pub min_lots: u64,
    pub max_lots: u64,
    pub levels: usize,
    /// Distance from the fair price to the best quote on each side.
    pub half_spread_bps: u64,
    /// Distance between two levels of one side.
    pub step_bps: u64,
}

/// Units of a decimal written in a config file (`"0.01"`), if positive
/// and representable.
pub fn units_of(text: &str) -> Option<u64> {
    Dec::parse(text).ok()?.to_units().ok()
}

/// A collar percentage as basis points, converted exactly as the codec
/// does when it lists the instrument (at most two decimals).
pub fn percent_to_bps(text: &str) -> Option<u32> {
    let pct = Dec::parse(text).ok()?.normalized();
    if pct.is_negative() || pct.scale() > 2 {
        return None;
    }
    let bps = pct
        .magnitude()
        .checked_mul(10u64.pow(2 - u32::from(pct.scale())))?;
    u32::try_from(bps).ok()
}

/// The inclusive band of acceptable prices (units) around `reference`,
/// computed in ticks exactly as the core computes it, so a price this
/// band admits the core admits too.
pub fn collar_band(reference: u64, collar_bps: u32, tick: u64) -> Option<(u64, u64)> {
    if collar_bps == 0 || tick == 0 {
        return None;
    }
    let reference_ticks = reference / tick;
    let width = u128::from(reference_ticks) * u128::from(collar_bps) / 10_000;
    let width = u64::try_from(width).unwrap_or(u64::MAX);
    let low = reference_ticks.saturating_sub(width).max(1);
    let high = reference_ticks.saturating_add(width);
    Some((low.saturating_mul(tick), high.saturating_mul(tick)))
}

fn bps_in_ticks(ticks: u64, bps: u64) -> u64 {
    let value = u128::from(ticks) * u128::from(bps) / 10_000;
    u64::try_from(value).unwrap_or(u64::MAX).max(1)
}

/// Whole lots worth about `notional` quote units at `price`, within the
/// instrument's quantity limits.
pub fn lots_for_notional(notional: u64, price: u64, spec: &LadderSpec) -> u64 {
    let per_lot = u128::from(price) * u128::from(spec.lot) / u128::from(UNITS_PER_WHOLE);
    let lots = u128::from(notional)
        .checked_div(per_lot)
        .unwrap_or(u128::from(spec.min_lots));
    let lots = u64::try_from(lots).unwrap_or(u64::MAX);
    lots.clamp(
        spec.min_lots.max(1),
        spec.max_lots.max(spec.min_lots.max(1)),
    )
}

/// The maker's quotes around `fair` (units): level `i` of a side sits
/// `half_spread + i * step` away from the fair price, rounded away from it
/// onto the tick grid, and is worth about `notionals[i]` quote units.
/// Levels outside `band` or at a non-positive price are left out, so every
/// quote is acceptable to the core and the best bid is below the best ask.
pub fn ladder(fair: u64, spec: &LadderSpec, notionals: &[u64], band: Option<(u64, u64)>) -> Ladder {
    let mut out = Ladder::default();
    if spec.tick == 0 || spec.lot == 0 {
        return out;
    }
    let fair_ticks = fair / spec.tick;
    let half = bps_in_ticks(fair_ticks, spec.half_spread_bps);
    let step = bps_in_ticks(fair_ticks, spec.step_bps);
    let inside = |price: u64| band.is_none_or(|(low, high)| price >= low && price <= high);
    for (level, &notional) in notionals.iter().take(spec.levels).enumerate() {
        let offset = (level as u64).saturating_mul(step).saturating_add(half);
        if let Some(bid_ticks) = fair_ticks.checked_sub(offset).filter(|&t| t > 0) {
            let price = bid_ticks.saturating_mul(spec.tick);
            if inside(price) {
                out.bids.push(Quote {
                    price,
                    qty: lots_for_notional(notional, price, spec) * spec.lot,
                });
            }
        }
        let price = fair_ticks.saturating_add(offset).saturating_mul(spec.tick);
        if inside(price) {
            out.asks.push(Quote {
                price,
                qty: lots_for_notional(notional, price, spec) * spec.lot,
            });
        }
    }
    out
}

/// One step of the fair price's walk: a shock of `shock_tenth_bps` tenths
/// of a basis point, a slight pull back towards `anchor` (so an unattended
/// demo does not wander off), then clamped into `band` and onto the tick.
pub fn next_fair(
    fair: u64,
    anchor: u64,
    shock_tenth_bps: i64,
    band: Option<(u64, u64)>,
    tick: u64,
) -> u64 {
    let tick = tick.max(1);
    let fair_i = i128::from(fair);
    let shock = fair_i * i128::from(shock_tenth_bps) / 100_000;
    let pull = (i128::from(anchor) - fair_i) / 500;
    let mut next = (fair_i + shock + pull).max(i128::from(tick));
    if let Some((low, high)) = band {
        next = next.clamp(i128::from(low), i128::from(high.max(low)));
    }
    let next = u64::try_from(next).unwrap_or(fair);
    (next / tick * tick).max(tick)
}

/// A marketable limit price for a taker: `slippage_bps` through the best
/// opposite price, on the tick grid and inside `band`.
pub fn taker_price(
    buy: bool,
    best: u64,
    slippage_bps: u64,
    tick: u64,
    band: Option<(u64, u64)>,
) -> Option<u64> {
    let tick = tick.max(1);
    let best_ticks = best / tick;
    let slip =
        u64::try_from(u128::from(best_ticks) * u128::from(slippage_bps) / 10_000).unwrap_or(0);
    let ticks = if buy {
        best_ticks.saturating_add(slip)
    } else {
        best_ticks.saturating_sub(slip)
    };
    let mut price = ticks.saturating_mul(tick);
    if let Some((low, high)) = band {
        price = price.clamp(low, high.max(low));
    }
    (price > 0).then_some(price)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BTC: LadderSpec = LadderSpec {
        tick: 1_000_000, // 0.01
        lot: 10_000,     // 0.0001
        min_lots: 1,
        max_lots: u64::MAX / 10_000,
        levels: 10,
        half_spread_bps: 2,
        step_bps: 1,
    };

    fn usd(whole: u64) -> u64 {
        whole * UNITS_PER_WHOLE
    }

    #[test]
    fn demo_ladder_is_on_the_grid_sorted_and_uncrossed() {
        let fair = usd(60_000) + 123_456; // off the tick on purpose
        let notionals = [usd(10_000); 10];
        let band = collar_band(usd(60_000), 1_000, BTC.tick);
        let book = ladder(fair, &BTC, &notionals, band);
        assert_eq!(book.bids.len(), 10);
        assert_eq!(book.asks.len(), 10);
        for quote in book.bids.iter().chain(&book.asks) {
            assert_eq!(quote.price % BTC.tick, 0, "price {} off tick", quote.price);
            assert_eq!(quote.qty % BTC.lot, 0, "qty {} off lot", quote.qty);
            assert!(quote.qty > 0);
        }
        assert!(book.bids.windows(2).all(|w| w[0].price > w[1].price));
        assert!(book.asks.windows(2).all(|w| w[0].price < w[1].price));
        assert!(book.bids[0].price < fair && fair < book.asks[0].price);
        // 2 bps of 60 000 is 12.00, one level more is 6.00.
        assert_eq!(book.asks[0].price, usd(60_012));
        assert_eq!(book.bids[0].price, usd(59_988));
        assert_eq!(book.asks[1].price - book.asks[0].price, usd(6));
        // 10 000 USD at 59 988 is 0.1667 BTC once rounded down to the lot.
        assert_eq!(book.bids[0].qty, 16_670_000);
    }

    #[test]
    fn demo_ladder_stays_inside_the_collar() {
        let spec = LadderSpec {
            half_spread_bps: 50,
            step_bps: 40,
            ..BTC
        };
        let band = collar_band(usd(60_000), 200, spec.tick);
        let (low, high) = band.unwrap();
        assert_eq!((low, high), (usd(58_800), usd(61_200)));
        let book = ladder(usd(60_000), &spec, &[usd(5_000); 10], band);
        // 0.5% + i * 0.4% passes 2% from the fifth level on.
        assert_eq!(book.bids.len(), 4);
        assert_eq!(book.asks.len(), 4);
        assert!(book
            .bids
            .iter()
            .chain(&book.asks)
            .all(|q| q.price >= low && q.price <= high));
    }

    #[test]
    fn demo_coarse_grid_still_separates_levels_and_sides() {
        // A tick worth more than the spread: every gap becomes one tick.
        let spec = LadderSpec {
            tick: usd(1),
            lot: UNITS_PER_WHOLE,
            levels: 3,
            ..BTC
        };
        let book = ladder(usd(100), &spec, &[usd(1); 3], None);
        let bids: Vec<u64> = book.bids.iter().map(|q| q.price / usd(1)).collect();
        let asks: Vec<u64> = book.asks.iter().map(|q| q.price / usd(1)).collect();
        assert_eq!(bids, vec![99, 98, 97]);
        assert_eq!(asks, vec![101, 102, 103]);
        // Notional below one lot still quotes the minimum of one lot.
        assert!(book.bids.iter().all(|q| q.qty == UNITS_PER_WHOLE));
    }

    #[test]
    fn demo_ladder_near_zero_drops_non_positive_bids() {
        let spec = LadderSpec {
            tick: 1,
            lot: 1,
            levels: 5,
            ..BTC
        };
        let book = ladder(3, &spec, &[1; 5], None);
        assert_eq!(
            book.bids.iter().map(|q| q.price).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(book.asks.len(), 5);
    }

    #[test]
    fn demo_quantities_respect_min_and_max() {
        let spec = LadderSpec {
            min_lots: 5,
            max_lots: 20,
            ..BTC
        };
        assert_eq!(lots_for_notional(1, usd(60_000), &spec), 5);
        assert_eq!(lots_for_notional(usd(1_000_000), usd(60_000), &spec), 20);
        assert_eq!(lots_for_notional(usd(60), usd(60_000), &spec), 10);
    }

    #[test]
    fn demo_collar_band_matches_the_core() {
        // reference 100.00 at tick 0.01 = 10 000 ticks; 2.5% = 250 ticks.
        assert_eq!(
            collar_band(usd(100), 250, 1_000_000),
            Some((usd(97) + usd(1) / 2, usd(102) + usd(1) / 2))
        );
        assert_eq!(collar_band(usd(100), 0, 1_000_000), None);
        // Never below one tick, even with a 100% collar.
        assert_eq!(
            collar_band(usd(100), 10_000, 1_000_000),
            Some((1_000_000, usd(200)))
        );
    }

    #[test]
    fn demo_fair_walk_stays_in_band_and_on_tick() {
        let band = collar_band(usd(60_000), 500, BTC.tick);
        let (low, high) = band.unwrap();
        let mut fair = usd(60_000);
        for step in 0..10_000i64 {
            // Always pushed the same way: only the band holds it.
            let shock = if step % 7 == 0 { -3 } else { 15 };
            fair = next_fair(fair, usd(60_000), shock, band, BTC.tick);
            assert!(fair >= low && fair <= high, "fair {fair} left the band");
            assert_eq!(fair % BTC.tick, 0);
        }
        assert!(fair > usd(60_000), "the walk never moved");
    }

    #[test]
    fn demo_fair_walk_is_pulled_back_to_the_anchor() {
        let fair = next_fair(usd(61_000), usd(60_000), 0, None, BTC.tick);
        assert_eq!(fair, usd(61_000) - usd(1_000) / 500);
    }

    #[test]
    fn demo_taker_prices_cross_on_tick_within_band() {
        let band = collar_band(usd(60_000), 1_000, BTC.tick);
        assert_eq!(
            taker_price(true, usd(60_000), 10, BTC.tick, band),
            Some(usd(60_060))
        );
        assert_eq!(
            taker_price(false, usd(60_000), 10, BTC.tick, band),
            Some(usd(59_940))
        );
        // Slippage past the collar is clipped to its edge.
        assert_eq!(
            taker_price(true, usd(65_990), 100, BTC.tick, band),
            Some(usd(66_000))
        );
    }

    #[test]
    fn demo_config_numbers_convert_exactly() {
        assert_eq!(units_of("0.01"), Some(1_000_000));
        assert_eq!(units_of("0"), None);
        assert_eq!(units_of("abc"), None);
        assert_eq!(percent_to_bps("10"), Some(1_000));
        assert_eq!(percent_to_bps("2.50"), Some(250));
        assert_eq!(percent_to_bps("0.001"), None);
        assert_eq!(percent_to_bps("-1"), None);
    }
}
