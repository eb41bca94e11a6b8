//! Trading phases and session times in force: 15x validation of an
//! expiry, 22x what a phase refuses (and 226), 52x phase transitions.

use exchange_types::*;

use crate::R;
use exchange_testkit::engine::*;

#[test]
pub fn expire_ts_required() {
    let mut h = Harness::funded(1);
    let gtd = with_tif(limit(1, "a", Side::Buy, "100", "1"), TimeInForce::Gtd, None);
    assert_rejected(&mut h, cmd(gtd), R::ExpireTsRequired);
}

#[test]
pub fn expire_ts_not_allowed() {
    let mut h = Harness::funded(1);
    let gtc = with_tif(
        limit(1, "a", Side::Buy, "100", "1"),
        TimeInForce::Gtc,
        Some(1_000),
    );
    assert_rejected(&mut h, cmd(gtc), R::ExpireTsNotAllowed);
}

#[test]
pub fn expire_ts_passed() {
    let mut h = Harness::funded(1);
    // The next command runs at ts = h.ts + 1: an expiry then is too late.
    let at = h.ts + 1;
    let gtd = with_tif(
        limit(1, "a", Side::Buy, "100", "1"),
        TimeInForce::Gtd,
        Some(at),
    );
    assert_rejected(&mut h, cmd(gtd), R::ExpireTsPassed);
}

#[test]
pub fn instrument_closed() {
    let mut h = Harness::funded(1);
    let id = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    h.run_checked(set_phase(Phase::Closed));
    assert_rejected(
        &mut h,
        cmd(limit(1, "b", Side::Buy, "100", "1")),
        R::InstrumentClosed,
    );
    assert_rejected(
        &mut h,
        replace(1, "a", Some("99"), None),
        R::InstrumentClosed,
    );
    // Cancels still go through.
    let canceled = h.run_checked(cancel_id(1, id));
    assert_eq!(cancels(&canceled).len(), 1);
}

#[test]
pub fn cancels_only() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    h.run_checked(set_phase(Phase::PostClose));
    assert_rejected(
        &mut h,
        cmd(limit(1, "b", Side::Buy, "100", "1")),
        R::CancelsOnly,
    );
    assert_rejected(&mut h, replace(1, "a", Some("99"), None), R::CancelsOnly);
}

#[test]
pub fn at_open_outside_pre_open() {
    let mut h = Harness::funded(1);
    let at_open = with_tif(
        limit(1, "a", Side::Buy, "100", "1"),
        TimeInForce::AtOpen,
        None,
    );
    assert_rejected(&mut h, cmd(at_open.clone()), R::AtOpenOutsidePreOpen);
    h.run_checked(set_phase(Phase::ClosingCall));
    assert_rejected(&mut h, cmd(at_open), R::AtOpenOutsidePreOpen);
}

#[test]
pub fn at_close_outside_closing_call() {
    let mut h = Harness::funded(1);
    let at_close = with_tif(
        limit(1, "a", Side::Buy, "100", "1"),
        TimeInForce::AtClose,
        None,
    );
    assert_rejected(&mut h, cmd(at_close.clone()), R::AtCloseOutsideClosingCall);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    assert_rejected(&mut h, cmd(at_close), R::AtCloseOutsideClosingCall);
}

#[test]
pub fn market_in_call() {
    let mut h = Harness::funded(1);
    h.run_checked(set_phase(Phase::ClosingCall));
    // A funds order's size needs the book; a plain market sell is taken.
    assert_rejected(&mut h, cmd(funds_buy(1, "f", "100")), R::MarketInCall);
    let events = h.run_checked(cmd(gtc(market(1, "m", Side::Sell, "1"))));
    assert_eq!(reject_reason(&events), None);
}

fn gtc(place: Place) -> Place {
    Place {
        tif: TimeInForce::Gtc,
        ..place
    }
}

#[test]
pub fn immediate_in_call() {
    let mut h = Harness::funded(1);
    h.run_checked(set_phase(Phase::VolatilityAuction));
    let order = limit(1, "a", Side::Buy, "100", "1");
    assert_rejected(&mut h, cmd(ioc(order.clone())), R::ImmediateInCall);
    assert_rejected(&mut h, cmd(fok(order)), R::ImmediateInCall);
}

#[test]
pub fn invalid_phase_transition() {
    let mut h = Harness::funded(0);
    // Continuous trading cannot go back to the pre-open call, nor run an
    // opening auction.
    assert_rejected(&mut h, set_phase(Phase::PreOpen), R::InvalidPhaseTransition);
    h.run_checked(set_phase(Phase::Closed));
    assert_rejected(
        &mut h,
        set_phase(Phase::ClosingCall),
        R::InvalidPhaseTransition,
    );
    assert_rejected(
        &mut h,
        Command::SetPhase {
            symbol: sym("NOPE-USD"),
            phase: Phase::Closed,
        },
        R::UnknownInstrument,
    );
}

#[test]
pub fn already_in_phase() {
    let mut h = Harness::funded(0);
    assert_rejected(&mut h, set_phase(Phase::Continuous), R::AlreadyInPhase);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    assert_rejected(&mut h, set_phase(Phase::PreOpen), R::AlreadyInPhase);
    // The opening auction settles in continuous trading: a scheduler that
    // sends it again, or then sends continuous, changes nothing.
    h.run_checked(set_phase(Phase::OpeningAuction));
    assert_rejected(&mut h, set_phase(Phase::OpeningAuction), R::AlreadyInPhase);
    assert_rejected(&mut h, set_phase(Phase::Continuous), R::AlreadyInPhase);
}
