//! The state of trading phases kept outside the instruments: which
//! instruments are in a call, the good-till-date expiries, and the market
//! orders waiting for a call's uncrossing; with the rules of phases that
//! need no state.
//!
//! Data only: what the engine does with it is `phase.rs` (transitions and
//! auctions) and `call_market.rs` (market orders in a call).

use std::collections::{BTreeMap, BTreeSet};

use exchange_types::{OrderId, Phase, RejectReason, TimeInForce};

/// Phase bookkeeping kept outside the instruments: how many instruments
/// are in a call, and the good-till-date expiries in time order.
///
/// Invariant (checked by `Engine::audit`): `next_expiry` is the time of the
/// first expiry, or `u64::MAX` when there is none.
#[derive(Clone, Debug)]
pub(crate) struct Sessions {
    /// Instruments in a call phase; while zero, no command pays for the
    /// indicative price.
    calls: u32,
    /// Good-till-date orders by expiry. Entries of orders that closed
    /// otherwise stay until their time and are skipped then: order ids are
    /// never reused, and removing them on every close would cost the hot
    /// path a lookup.
    expiries: BTreeSet<(u64, OrderId)>,
    /// The first expiry, or `u64::MAX`: the one comparison each command
    /// makes.
    next_expiry: u64,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            calls: 0,
            expiries: BTreeSet::new(),
            next_expiry: u64::MAX,
        }
    }
}

impl Sessions {
    /// Whether some instrument is in a call (the indicative price is then
    /// published after each command).
    #[inline(always)]
    pub fn any_call(&self) -> bool {
        self.calls != 0
    }

    /// Instruments in a call phase.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Counts an instrument's move into (`true`) or out of a call.
    pub fn count_call(&mut self, entering: bool) {
        if entering {
            self.calls += 1;
        } else {
            assert!(self.calls > 0, "an instrument left a call none was in");
            self.calls -= 1;
        }
    }

    /// Sets the count of instruments in a call (a restored state).
    pub fn set_calls(&mut self, calls: u32) {
        self.calls = calls;
    }

    /// Whether an expiry is due at `now`: the one comparison each command
    /// makes.
    #[inline(always)]
    pub fn expiry_due(&self, now: u64) -> bool {
        now >= self.next_expiry
    }

    pub fn add_expiry(&mut self, ts: u64, id: OrderId) {
        self.expiries.insert((ts, id));
        self.next_expiry = self.next_expiry.min(ts);
    }

    /// Takes the first expiry due at `now`, if any.
    pub fn pop_due(&mut self, now: u64) -> Option<OrderId> {
        let &(ts, id) = self.expiries.first()?;
        if ts > now {
            return None;
        }
        self.expiries.pop_first();
        Some(id)
    }

    /// The expiries in time order: (expire time, order id).
    pub fn expiries(&self) -> impl Iterator<Item = (u64, OrderId)> + '_ {
        self.expiries.iter().copied()
    }

    pub fn has_expiries(&self) -> bool {
        !self.expiries.is_empty()
    }

    pub fn expiry_count(&self) -> usize {
        self.expiries.len()
    }

    /// Whether the cached next expiry is the first one.
    pub fn next_expiry_is_first(&self) -> bool {
        self.next_expiry == self.expiries.first().map_or(u64::MAX, |e| e.0)
    }

    pub fn refresh_next(&mut self) {
        self.next_expiry = self.expiries.first().map_or(u64::MAX, |e| e.0);
    }
}

/// Orders are collected in a call and nothing matches.
pub(crate) fn is_call(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::PreOpen | Phase::ClosingCall | Phase::VolatilityAuction
    )
}

/// The book may be crossed: collected in a call, or halted out of one.
pub(crate) fn may_cross(phase: Phase) -> bool {
    is_call(phase) || phase == Phase::Halted
}

/// At-the-open and at-the-close orders belong to the call before their
/// auction.
pub(crate) fn check_session_tif(phase: Phase, tif: TimeInForce) -> Result<(), RejectReason> {
    match tif {
        TimeInForce::AtOpen if phase != Phase::PreOpen => Err(RejectReason::AtOpenOutsidePreOpen),
        TimeInForce::AtClose if phase != Phase::ClosingCall => {
            Err(RejectReason::AtCloseOutsideClosingCall)
        }
        _ => Ok(()),
    }
}

pub(crate) use exchange_types::validate::rests;

/// Market orders waiting for their instrument's uncrossing, by instrument
/// and then order id, which is their time priority.
pub(crate) type CallMarkets = BTreeMap<(u32, OrderId), u32>;
