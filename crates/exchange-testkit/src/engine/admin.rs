//! Operator commands and order shapes that the phase and instrument-rule
//! tests share.

use exchange_types::event::{Auction, AuctionKind, PhaseChanged};
use exchange_types::*;

use super::sym;

/// Moves BTC-USD to `phase`.
pub fn set_phase(phase: Phase) -> Command {
    Command::SetPhase {
        symbol: sym("BTC-USD"),
        phase,
    }
}

/// `place` with time in force `tif` and, for good-till-date, its expiry.
pub fn with_tif(place: Place, tif: TimeInForce, expire_ts: Option<u64>) -> Place {
    Place {
        tif,
        ext: expire_ts.map(|ts| {
            Box::new(PlaceExt {
                expire_ts: Some(ts),
                ..PlaceExt::default()
            })
        }),
        ..place
    }
}

/// A rule change of `symbol` that changes nothing yet.
pub fn rules(symbol: &str) -> SetInstrumentRules {
    SetInstrumentRules {
        symbol: sym(symbol),
        tick_size: None,
        lot_size: None,
        min_qty: None,
        max_qty: None,
        min_notional: None,
        maker_fee_bps: None,
        taker_fee_bps: None,
        collar_bps: None,
        static_band_bps: None,
        dynamic_band_bps: None,
        volatility_auction_ns: None,
        hidden_min_notional: None,
    }
}

/// Sets `symbol`'s reference price to `price`.
pub fn set_reference(symbol: &str, price: &str) -> Command {
    Command::SetReferencePrice {
        symbol: sym(symbol),
        price: super::dec(price),
    }
}

pub fn set_rules(set: SetInstrumentRules) -> Command {
    Command::SetInstrumentRules(Box::new(set))
}

/// The phases the events enter, in order.
pub fn phases(events: &[Event]) -> Vec<Phase> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Phase(PhaseChanged { phase, .. }) => Some(*phase),
            _ => None,
        })
        .collect()
}

/// The auctions the events uncross: kind, price and volume.
pub fn auctions(events: &[Event]) -> Vec<(AuctionKind, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Auction(Auction {
                kind,
                price,
                volume,
                ..
            }) => Some((*kind, *price, *volume)),
            _ => None,
        })
        .collect()
}
