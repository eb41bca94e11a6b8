//! The state of volatility bands: each banded instrument's static and
//! dynamic bands and its interruption, and the bounds a listing may set.
//!
//! Data only: what the engine does with it (checking a trade, starting and
//! ending an interruption) is `volatility/mod.rs`, which also gives the rules'
//! sources.

use std::collections::BTreeMap;

use exchange_types::limits::MAX_COLLAR_BPS;
use exchange_types::RejectReason;

/// One instrument's bands and the state of its interruption.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bands {
    /// Half-widths in basis points; zero: no such band.
    pub static_bps: u32,
    pub dynamic_bps: u32,
    /// Length of a volatility auction's call; non-zero exactly when a band
    /// is (the listing rules enforce it).
    pub auction_ns: u64,
    /// The static band's centre, ticks.
    pub static_ref: Option<u64>,
    /// When the running volatility auction's call ends.
    pub end: Option<u64>,
    /// The running call was already extended once.
    pub extended: bool,
}

impl Bands {
    pub fn banded(&self) -> bool {
        self.static_bps != 0 || self.dynamic_bps != 0
    }

    /// Whether a trade at `price` may print, with `last` the last trade.
    /// A band without its centre yet does not bind.
    pub fn allows(&self, price: u64, last: Option<u64>) -> bool {
        let within = |centre: Option<u64>, bps: u32| {
            bps == 0
                || centre.is_none_or(|c| {
                    let (low, high) = band(c, bps);
                    (low..=high).contains(&price)
                })
        };
        within(self.static_ref, self.static_bps) && within(last, self.dynamic_bps)
    }

    /// The static band, if it binds.
    pub fn static_band(&self) -> Option<(u64, u64)> {
        (self.static_bps != 0)
            .then_some(self.static_ref)
            .flatten()
            .map(|c| band(c, self.static_bps))
    }
}

/// Inclusive band of `bps` around `centre`, computed as the collar is.
pub(crate) fn band(centre: u64, bps: u32) -> (u64, u64) {
    let width = u128::from(centre) * u128::from(bps) / 10_000;
    let width = u64::try_from(width).unwrap_or(u64::MAX);
    (
        centre.saturating_sub(width).max(1),
        centre.saturating_add(width),
    )
}

/// The bands of every instrument that has or had them.
#[derive(Clone, Debug)]
pub(crate) struct Volatility {
    /// By instrument index; an instrument without bands and without a
    /// running call has no entry.
    pub(super) bands: BTreeMap<u32, Bands>,
    /// Instruments with a band: while zero, matching pays one comparison.
    pub(super) banded: u32,
    /// The earliest end of a running volatility auction, or `u64::MAX`:
    /// the one comparison each command makes.
    pub(super) next_end: u64,
}

impl Default for Volatility {
    fn default() -> Self {
        Volatility {
            bands: BTreeMap::new(),
            banded: 0,
            next_end: u64::MAX,
        }
    }
}

impl Volatility {
    /// Whether some instrument has a band: while not, matching pays this
    /// one comparison.
    #[inline(always)]
    pub fn any_banded(&self) -> bool {
        self.banded != 0
    }

    /// Whether some instrument has bands or a running interruption.
    pub fn has_bands(&self) -> bool {
        !self.bands.is_empty()
    }

    /// Whether a running volatility auction ends at `now`: the one
    /// comparison each command makes.
    #[inline(always)]
    pub fn end_due(&self, now: u64) -> bool {
        now >= self.next_end
    }

    /// An instrument's static band, if it has one with a centre.
    pub fn static_band(&self, instrument: u32) -> Option<(u64, u64)> {
        self.bands.get(&instrument).and_then(Bands::static_band)
    }

    /// Every instrument's bands, by instrument index.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Bands)> + '_ {
        self.bands.iter().map(|(&index, b)| (index, b))
    }

    pub fn len(&self) -> usize {
        self.bands.len()
    }

    /// Files an instrument's bands read from a snapshot; `refresh` once
    /// all are read.
    pub fn restore(&mut self, instrument: u32, bands: Bands) {
        self.bands.insert(instrument, bands);
    }

    /// Recomputes what is derived from the table.
    pub fn refresh(&mut self) {
        self.bands.retain(|_, b| b.banded() || b.end.is_some());
        self.banded = self.bands.values().filter(|b| b.banded()).count() as u32;
        self.next_end = self
            .bands
            .values()
            .filter_map(|b| b.end)
            .min()
            .unwrap_or(u64::MAX);
    }
}

/// Checks a listing's (or a rule change's resulting) bands.
pub(crate) fn check_bands(
    static_bps: u32,
    dynamic_bps: u32,
    auction_ns: u64,
) -> Result<(), RejectReason> {
    if static_bps > MAX_COLLAR_BPS || dynamic_bps > MAX_COLLAR_BPS {
        return Err(RejectReason::InvalidVolatilityBand);
    }
    let banded = static_bps != 0 || dynamic_bps != 0;
    match (banded, auction_ns != 0) {
        (true, false) => Err(RejectReason::VolatilityAuctionRequired),
        (false, true) => Err(RejectReason::VolatilityBandRequired),
        _ => Ok(()),
    }
}
