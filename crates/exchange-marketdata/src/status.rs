//! An instrument's trading status as the `status` channel, the REST
//! status route and the binary feed's `P` and `I` messages tell it: the
//! phase the core is in, the indicative uncrossing while a call collects
//! orders, and the last auction that executed.
//!
//! The core publishes each of these as an event (`phase`, `indicative`,
//! `auction`); [`MarketStatus::apply`] folds them, so the projection, the
//! node's reads and a rebuilt feed all derive the same state from the log.

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
    /// Read whole from a snapshot of the replicated state.
    Snapshot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarketStatus {
    pub phase: Phase,
    pub indicative: Option<IndicativeView>,
    pub last_auction: Option<LastAuction>,
}

impl Default for MarketStatus {
    /// A newly listed instrument trades continuously until told otherwise.
    fn default() -> Self {
        MarketStatus {
            phase: Phase::Continuous,
            indicative: None,
            last_auction: None,
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
            _ => None,
        }
    }
}

/// The symbol a status event is about.
pub fn status_symbol(kind: &EventKind) -> Option<exchange_types::Symbol> {
    match kind {
        EventKind::Phase(e) => Some(e.symbol),
        EventKind::Indicative(e) => Some(e.symbol),
        EventKind::Auction(e) => Some(e.symbol),
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
    fn auction_kinds_parse_back_from_their_names() {
        assert_eq!(parse_auction_kind("reopen"), Some(AuctionKind::Reopen));
        assert_eq!(parse_auction_kind("x"), None);
    }
}
