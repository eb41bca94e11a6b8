//! An instrument's trading status as the `status` channel, the REST
//! status route and the binary feed's `P`, `I` and `R` messages tell it: the
//! phase the core is in, the indicative uncrossing while a call collects
//! orders, the last auction that executed and the reference price.
//!
//! The core publishes each of these as an event (`phase`, `indicative`,
//! `auction`, `reference_price`); [`MarketStatus::apply`] folds them, so
//! the projection, the node's reads and a rebuilt feed all derive the same
//! state from the log. The reference also moves without an event of its
//! own (the listing names it, every trade's price becomes it, a new tick
//! size rounds it): [`MarketStatus::follow_reference`] folds those as the
//! core sets them, and they send no status message (the binary feed's
//! `R` tells each move at once).

use exchange_types::event::{self, AuctionKind};
use exchange_types::{EventKind, Phase, Side};

/// The uncrossing an auction would run now. Only held while something
/// crosses: an indicative event without a price clears it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndicativeView {
    pub price: u64,
    pub volume: u64,
    pub imbalance_side: Option<Side>,
    pub imbalance_qty: u64,
}

impl IndicativeView {
    /// The view of an `indicative` event; `None` when nothing crosses.
    pub fn of(event: &event::Indicative) -> Option<IndicativeView> {
        Some(IndicativeView {
            price: event.price?,
            volume: event.volume,
            imbalance_side: event.imbalance_side,
            imbalance_qty: event.imbalance_qty,
        })
    }
}

/// The latest auction that executed something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastAuction {
    pub kind: AuctionKind,
    pub price: u64,
    pub volume: u64,
    /// Time of the command that ran it.
    pub ts: u64,
}

/// What changed an instrument's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusChange {
    Phase,
    Indicative,
    Auction,
    /// The operator set the reference price.
    ReferencePrice,
    /// Read whole from a snapshot of the replicated state.
    Snapshot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarketStatus {
    pub phase: Phase,
    pub indicative: Option<IndicativeView>,
    pub last_auction: Option<LastAuction>,
    /// The core's reference price (price units): the collar's centre and
    /// the last price the bands and the auction use; `None` before the
    /// listing named one or anything traded.
    pub reference_price: Option<u64>,
}

impl Default for MarketStatus {
    /// A newly listed instrument trades continuously until told otherwise.
    fn default() -> Self {
        MarketStatus {
            phase: Phase::Continuous,
            indicative: None,
            last_auction: None,
            reference_price: None,
        }
    }
}

/// Orders are collected and an indicative price may be published.
pub fn is_call(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::PreOpen | Phase::ClosingCall | Phase::VolatilityAuction
    )
}

impl MarketStatus {
    /// Folds one event at time `ts`; what it changed, if it is a status
    /// event.
    pub fn apply(&mut self, kind: &EventKind, ts: u64) -> Option<StatusChange> {
        match kind {
            EventKind::Phase(e) => {
                self.phase = e.phase;
                // The core forgets the indicative price when a call ends
                // without publishing an empty one.
                if !is_call(e.phase) {
                    self.indicative = None;
                }
                Some(StatusChange::Phase)
            }
            EventKind::Indicative(e) => {
                self.indicative = IndicativeView::of(e);
                Some(StatusChange::Indicative)
            }
            EventKind::Auction(e) => {
                self.last_auction = Some(LastAuction {
                    kind: e.kind,
                    price: e.price,
                    volume: e.volume,
                    ts,
                });
                Some(StatusChange::Auction)
            }
            EventKind::ReferencePrice(e) => {
                self.reference_price = Some(e.price);
                Some(StatusChange::ReferencePrice)
            }
            other => {
                self.follow_reference(other);
                None
            }
        }
    }

    /// Folds an event that moves the reference price without a status
    /// message: a listing's, a trade's price, a rule change's rounding.
    pub fn follow_reference(&mut self, kind: &EventKind) {
        match kind {
            EventKind::InstrumentAdded(e) => self.reference_price = e.reference_price,
            // A midpoint trade moves no last price in the core.
            EventKind::Trade(e) if !e.midpoint => self.reference_price = Some(e.price),
            // The core keeps the reference on the nearest tick at or below
            // it, at least one tick, when the tick size changes.
            EventKind::InstrumentRules(e) if e.tick_size > 0 => {
                self.reference_price = self
                    .reference_price
                    .map(|r| (r / e.tick_size).max(1).saturating_mul(e.tick_size));
            }
            _ => {}
        }
    }
}

/// The symbol a status event is about: one the `status` channel sends a
/// message for, and counts in its sequence.
pub fn status_symbol(kind: &EventKind) -> Option<exchange_types::Symbol> {
    match kind {
        EventKind::Phase(e) => Some(e.symbol),
        EventKind::Indicative(e) => Some(e.symbol),
        EventKind::Auction(e) => Some(e.symbol),
        EventKind::ReferencePrice(e) => Some(e.symbol),
        _ => None,
    }
}

/// The symbol whose reference price an event moves without a status
/// message ([`MarketStatus::follow_reference`]).
pub fn reference_symbol(kind: &EventKind) -> Option<exchange_types::Symbol> {
    match kind {
        EventKind::InstrumentAdded(e) => Some(e.symbol),
        EventKind::Trade(e) if !e.midpoint => Some(e.symbol),
        EventKind::InstrumentRules(e) => Some(e.symbol),
        _ => None,
    }
}

/// The snake_case name of an auction kind, parsed back.
pub fn parse_auction_kind(text: &str) -> Option<AuctionKind> {
    [
        AuctionKind::Open,
        AuctionKind::Close,
        AuctionKind::Volatility,
        AuctionKind::Reopen,
    ]
    .into_iter()
    .find(|k| k.as_str() == text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exchange_types::Symbol;

    fn sym() -> Symbol {
        Symbol::new("X").unwrap()
    }

    #[test]
    fn a_call_publishes_an_indicative_that_its_end_clears() {
        let mut status = MarketStatus::default();
        let phase = |phase| {
            EventKind::Phase(event::PhaseChanged {
                symbol: sym(),
                phase,
            })
        };
        assert_eq!(
            status.apply(&phase(Phase::PreOpen), 1),
            Some(StatusChange::Phase)
        );
        let indicative = EventKind::Indicative(event::Indicative {
            symbol: sym(),
            price: Some(100),
            volume: 3,
            imbalance_side: Some(Side::Buy),
            imbalance_qty: 2,
        });
        assert_eq!(status.apply(&indicative, 2), Some(StatusChange::Indicative));
        assert_eq!(status.indicative.map(|i| i.price), Some(100));
        let auction = EventKind::Auction(event::Auction {
            symbol: sym(),
            kind: AuctionKind::Open,
            price: 100,
            volume: 3,
        });
        status.apply(&phase(Phase::OpeningAuction), 3);
        assert_eq!(status.indicative, None);
        assert_eq!(status.apply(&auction, 3), Some(StatusChange::Auction));
        assert_eq!(
            status.last_auction,
            Some(LastAuction {
                kind: AuctionKind::Open,
                price: 100,
                volume: 3,
                ts: 3
            })
        );
        // Nothing crossing is no indicative at all.
        status.apply(&phase(Phase::ClosingCall), 4);
        let empty = EventKind::Indicative(event::Indicative {
            symbol: sym(),
            price: None,
            volume: 0,
            imbalance_side: None,
            imbalance_qty: 0,
        });
        status.apply(&indicative, 5);
        status.apply(&empty, 6);
        assert_eq!(status.indicative, None);
        assert_eq!(
            status.apply(
                &EventKind::Error(event::Error {
                    line: 1,
                    message: String::new()
                }),
                7
            ),
            None
        );
    }

    #[test]
    fn the_reference_follows_listing_trades_ticks_and_the_operator() {
        let mut status = MarketStatus::default();
        let added = EventKind::InstrumentAdded(event::InstrumentAdded {
            symbol: sym(),
            base: exchange_types::AssetCode::new("B").unwrap(),
            quote: exchange_types::AssetCode::new("Q").unwrap(),
            reference_price: Some(1_000),
        });
        assert_eq!(status.apply(&added, 1), None);
        assert_eq!(status.reference_price, Some(1_000));
        let set = EventKind::ReferencePrice(event::ReferencePrice {
            symbol: sym(),
            price: 1_250,
        });
        assert_eq!(status.apply(&set, 2), Some(StatusChange::ReferencePrice));
        assert_eq!(status.reference_price, Some(1_250));
        assert_eq!(status_symbol(&set), Some(sym()));
        assert_eq!(status_symbol(&added), None);
        assert_eq!(reference_symbol(&added), Some(sym()));
        let mut rules = exchange_types::event::InstrumentRules {
            symbol: sym(),
            base: exchange_types::AssetCode::new("B").unwrap(),
            quote: exchange_types::AssetCode::new("Q").unwrap(),
            tick_size: 500,
            lot_size: 1,
            min_qty: 1,
            max_qty: 1,
            min_notional: 0,
            maker_fee_bps: 0,
            taker_fee_bps: 0,
            collar_bps: 0,
            static_band_bps: 0,
            dynamic_band_bps: 0,
            volatility_auction_ns: 0,
            status: exchange_types::TradingStatus::Trading,
        };
        status.follow_reference(&EventKind::InstrumentRules(Box::new(rules.clone())));
        assert_eq!(status.reference_price, Some(1_000));
        // Never below one tick, as the core keeps it.
        rules.tick_size = 2_000;
        status.follow_reference(&EventKind::InstrumentRules(Box::new(rules)));
        assert_eq!(status.reference_price, Some(2_000));
    }

    #[test]
    fn auction_kinds_parse_back_from_their_names() {
        assert_eq!(parse_auction_kind("reopen"), Some(AuctionKind::Reopen));
        assert_eq!(parse_auction_kind("x"), None);
    }
}
