//! Volatility interruptions: static and dynamic price bands, and the
//! volatility auction a trade outside them starts instead of printing.
//!
//! This is Xetra's volatility interruption (Deutsche Börse, "Protective
//! mechanisms in continuous trading", xetra.com): before each execution in
//! continuous trading the potential price is checked against
//!
//! - the static band, around the static reference price: the price of the
//!   last auction of the day (opening, closing, volatility or reopening),
//!   or before any the listing's reference price (else the first trade),
//!   or the reference price the operator last set (`operator.rs`).
//!   Continuous trades do not move it, so a run of small trades cannot
//!   walk the price away from it;
//! - the dynamic band, around the last trade price, which stops a single
//!   sweep through a thin book.
//!
//! A price outside either does not print: matching stops, the trades
//! already done stand, the rest of the incoming order waits in the book
//! (an immediate-or-cancel or market remainder expires; a fill-or-kill
//! that would cross a band does not trade at all, as on Xetra) and the
//! instrument enters `volatility_auction` for `volatility_auction_ns`.
//! Euronext's dynamic and static collars instead "reserve" the instrument
//! for a fixed period, with a static reference that only its operations
//! team moves; Xetra's variant is chosen because it re-centres the static
//! band on each auction without an operator and states what happens to the
//! order that hit the band.
//!
//! The call ends at the first command (a `tick` the leader logs when idle
//! is enough) whose `ts` reaches its end. If the indicative price is then
//! outside the static band the call is extended once by the same length
//! (Xetra's extended volatility interruption); after that it uncrosses
//! whatever the price, re-centres the static band on the auction price and
//! returns to continuous trading. Xetra ends a call at a random time within
//! a short window to deter gaming the last instant; here the end is a
//! function of the log's timestamps only, so that every replica ends it at
//! the same command: a random end would need a seed in the log, and the
//! gain is small next to the published end time being deterministic.

pub(crate) mod bands;

use exchange_types::{Event, Phase};

use crate::engine::Engine;
use crate::instrument::Instrument;
use bands::{check_bands, Bands};

impl Engine {
    /// Whether the trade at `price` that matching is about to make may
    /// print. Called only while some instrument has bands. Anchors a static
    /// band that had no centre yet on the first trade it lets through.
    pub(crate) fn band_allows(&mut self, instrument: u32, price: u64) -> bool {
        let last = self.instruments[instrument as usize].reference_ticks;
        let Some(b) = self.volatility.bands.get_mut(&instrument) else {
            return true;
        };
        if !b.allows(price, last) {
            return false;
        }
        if b.static_bps != 0 && b.static_ref.is_none() {
            b.static_ref = Some(price);
        }
        true
    }

    /// The same check without side effects, for a walk of the book that
    /// simulates a match: `last` is the walk's own last price.
    pub(crate) fn band_allows_walk(&self, instrument: u32, price: u64, last: Option<u64>) -> bool {
        self.volatility
            .bands
            .get(&instrument)
            .is_none_or(|b| b.allows(price, last))
    }

    /// A trade would have printed outside a band: continuous trading stops
    /// and the call collects orders until the auction.
    pub(crate) fn interrupt(&mut self, instrument: u32, out: &mut Vec<Event>) {
        self.enter_phase(instrument, Phase::VolatilityAuction, out);
    }

    /// Keeps the interruption's end in step with the phase: entering a
    /// volatility auction (by a band or by an operator) starts the call's
    /// time, leaving it by any route ends it.
    pub(crate) fn volatility_phase_changed(&mut self, instrument: u32, phase: Phase) {
        let now = self.now;
        let Some(b) = self.volatility.bands.get_mut(&instrument) else {
            return;
        };
        if phase == Phase::VolatilityAuction && b.auction_ns != 0 {
            b.end = Some(now.saturating_add(b.auction_ns));
        } else {
            b.end = None;
        }
        b.extended = false;
        self.volatility.refresh();
    }

    /// An auction printed at `price`, or the operator set the reference
    /// price to it: it is the static band's new centre.
    pub(crate) fn volatility_auctioned(&mut self, instrument: u32, price: u64) {
        if let Some(b) = self.volatility.bands.get_mut(&instrument) {
            b.static_ref = Some(price);
        }
    }

    /// Ends (or extends once) every volatility auction whose time is up.
    #[cold]
    pub(crate) fn end_volatility_auctions(&mut self, out: &mut Vec<Event>) {
        let now = self.now;
        let due: Vec<u32> = self
            .volatility
            .bands
            .iter()
            .filter(|(_, b)| b.end.is_some_and(|end| end <= now))
            .map(|(&index, _)| index)
            .collect();
        for index in due {
            let Some(b) = self.volatility.bands.get(&index).copied() else {
                continue;
            };
            if self.instruments[index as usize].phase != Phase::VolatilityAuction {
                self.volatility_phase_changed(index, self.instruments[index as usize].phase);
                continue;
            }
            let outside = match (self.uncross_of(index), b.static_band()) {
                (Some(u), Some((low, high))) => u.price < low || u.price > high,
                _ => false,
            };
            if outside && !b.extended && b.auction_ns != 0 {
                if let Some(entry) = self.volatility.bands.get_mut(&index) {
                    entry.end = Some(now.saturating_add(b.auction_ns));
                    entry.extended = true;
                }
                self.volatility.refresh();
                continue;
            }
            self.enter_phase(index, Phase::Continuous, out);
        }
        self.volatility.refresh();
    }

    /// Applies new band rules to a listed instrument (already checked).
    pub(crate) fn set_bands(
        &mut self,
        instrument: u32,
        static_bps: u32,
        dynamic_bps: u32,
        ns: u64,
    ) {
        let last = self.instruments[instrument as usize].reference_ticks;
        let entry = self.volatility.bands.entry(instrument).or_default();
        entry.static_bps = static_bps;
        entry.dynamic_bps = dynamic_bps;
        entry.auction_ns = ns;
        if entry.static_ref.is_none() {
            entry.static_ref = last;
        }
        // Bands given during an operator's volatility call time it too.
        if self.instruments[instrument as usize].phase == Phase::VolatilityAuction
            && entry.end.is_none()
            && ns != 0
        {
            entry.end = Some(self.now.saturating_add(ns));
        }
        self.volatility.refresh();
    }

    /// The bands of an instrument, zero where none.
    pub(crate) fn bands_of(&self, instrument: u32) -> Bands {
        self.volatility
            .bands
            .get(&instrument)
            .copied()
            .unwrap_or_default()
    }

    /// Re-expresses the static centre after a tick change, as the collar's
    /// reference is (nearest tick at or below, at least one).
    pub(crate) fn regrid_bands(&mut self, instrument: u32, old: &Instrument, new: &Instrument) {
        if let Some(b) = self.volatility.bands.get_mut(&instrument) {
            b.static_ref = b
                .static_ref
                .map(|t| (old.price_units(t) / new.tick_units).max(1));
        }
    }

    /// The invariants of the bands, for [`Engine::audit`].
    pub(crate) fn audit_volatility(&self) -> Result<(), String> {
        let mut banded = 0;
        let mut next_end = u64::MAX;
        for (&index, b) in &self.volatility.bands {
            let Some(inst) = self.instruments.get(index as usize) else {
                return Err(format!("bands of instrument {index}, never listed"));
            };
            check_bands(b.static_bps, b.dynamic_bps, b.auction_ns)
                .map_err(|r| format!("{} has bands {r}", inst.symbol))?;
            if !b.banded() && b.end.is_none() {
                return Err(format!("{} keeps an empty band entry", inst.symbol));
            }
            if b.end.is_some() != (inst.phase == Phase::VolatilityAuction) {
                return Err(format!(
                    "{} has a volatility auction end outside the phase",
                    inst.symbol
                ));
            }
            if b.static_ref == Some(0) {
                return Err(format!("{} has a static reference of zero", inst.symbol));
            }
            banded += u32::from(b.banded());
            if let Some(end) = b.end {
                next_end = next_end.min(end);
            }
        }
        if banded != self.volatility.banded || next_end != self.volatility.next_end {
            return Err("the band counters are not the table's".into());
        }
        Ok(())
    }
}
