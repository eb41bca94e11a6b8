//! Market operations' actions on a listed instrument beyond its rules:
//! listing it straight into a phase of its trading day, and setting its
//! reference price.
//!
//! A listing names the phase it starts in (`None`: `continuous`, as every
//! listing before the setting existed). It may start in a phase the
//! trading day rests in: `closed`, `pre_open`, `continuous`,
//! `closing_call`, `post_close` or `halted`. The two auction phases are
//! instants that run an uncross, and a volatility auction interrupts
//! continuous trading after a price left its band: a new listing has no
//! book to uncross and no trade to interrupt, so those are
//! `invalid_listing_phase`.
//!
//! `set_reference_price` sets the price both references start from, as a
//! listing's `reference_price` does: the static band's centre, and the
//! last price that the collar, the dynamic band, the auction price's
//! reference rule and a carried market order's resting price use. The next
//! auction re-centres the static band and the next trade moves the last
//! price, as they would have moved the listing's. Setting only the static
//! centre would leave the dynamic band around a price the corporate action
//! made stale, so that the first trade at the adjusted level would
//! interrupt trading. Xetra shows the allocation price as the last price
//! before a new issue's first auction, and adjusts reference prices by the
//! dividend on the ex-date; Euronext's market operations move the static
//! reference by hand (docs/market-model.md has the sources). Allowed in
//! every phase but delisted: an auction runs inside one command here, so
//! no command can arrive while it uncrosses, and during a call the new
//! reference takes part in the indicative price at once.

use exchange_types::{event, Dec, Event, EventKind, Phase, RejectReason, Symbol};

use crate::engine::{Engine, Subject};

/// Whether an instrument may be listed in `phase`.
pub(crate) fn check_listing_phase(phase: Phase) -> Result<(), RejectReason> {
    match phase {
        Phase::Closed
        | Phase::PreOpen
        | Phase::Continuous
        | Phase::ClosingCall
        | Phase::PostClose
        | Phase::Halted => Ok(()),
        Phase::OpeningAuction | Phase::ClosingAuction | Phase::VolatilityAuction => {
            Err(RejectReason::InvalidListingPhase)
        }
    }
}

impl Engine {
    /// Moves a just-listed instrument (continuous, empty) to the phase its
    /// listing named, already checked.
    pub(crate) fn enter_listing_phase(&mut self, index: u32, phase: Phase, out: &mut Vec<Event>) {
        if phase != Phase::Continuous {
            self.enter_phase(index, phase, out);
        }
    }

    pub(crate) fn set_reference_price(
        &mut self,
        symbol: &Symbol,
        price: Dec,
        out: &mut Vec<Event>,
    ) {
        let checked = self.listed(symbol).and_then(|index| {
            let ticks = self.instruments[index as usize].price_to_ticks(price)?;
            Ok((index, ticks))
        });
        let (index, ticks) = match checked {
            Ok(checked) => checked,
            Err(reason) => {
                let subject = Subject {
                    symbol: Some(*symbol),
                    ..Subject::default()
                };
                return self.reject(out, "set_reference_price", subject, reason);
            }
        };
        self.instruments[index as usize].reference_ticks = Some(ticks);
        // The static band's new centre, as an auction's price would be.
        self.volatility_auctioned(index, ticks);
        let inst = &self.instruments[index as usize];
        let (symbol, price) = (inst.symbol, inst.price_units(ticks));
        self.emit(
            out,
            EventKind::ReferencePrice(event::ReferencePrice { symbol, price }),
        );
    }
}
