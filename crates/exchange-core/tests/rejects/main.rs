//! One test per reject reason the core can produce, grouped by the code's
//! hundreds. Every refused command must emit exactly one `rejected` event
//! and change nothing else (see `exchange_testkit::engine::assert_rejected`). The test below
//! keeps the suite honest: each `RejectReason` has a test here or a stated
//! reason it has none.

mod admin;
mod entry;
mod hidden;
mod iceberg;
mod limits;
mod member;
mod midpoint;
mod order_types;
mod orders;
mod phases;
mod risk;
mod rules;
mod stops;

use exchange_types::limits::{MAX_ASSETS, MAX_INSTRUMENTS};
use exchange_types::RejectReason;

use RejectReason as R;

/// Each reason with the test that provokes it.
const TESTED: &[(RejectReason, fn())] = &[
    (R::UnknownInstrument, entry::unknown_instrument),
    (R::UnknownAccount, entry::unknown_account),
    (R::PriceRequired, entry::price_required),
    (R::PriceNotAllowed, entry::price_not_allowed),
    (R::InvalidPrice, entry::invalid_price),
    (R::PriceNotOnTick, entry::price_not_on_tick),
    (R::InvalidQuantity, entry::invalid_quantity),
    (R::QuantityNotOnLot, entry::quantity_not_on_lot),
    (R::TooManyDecimals, entry::too_many_decimals),
    (R::QuantityBelowMinimum, entry::quantity_below_minimum),
    (R::QuantityAboveMaximum, entry::quantity_above_maximum),
    (R::PostOnlyNotAllowed, entry::post_only_not_allowed),
    (R::InvalidAmount, entry::invalid_amount),
    (R::UnknownAsset, entry::unknown_asset),
    (R::NothingToReplace, entry::nothing_to_replace),
    (R::DisplayQtyNotAllowed, iceberg::display_qty_not_allowed),
    (R::InvalidDisplayQty, iceberg::invalid_display_qty),
    (R::FundsNotAllowed, iceberg::funds_not_allowed),
    (R::FundsWithQty, iceberg::funds_with_qty),
    (R::InvalidFunds, iceberg::invalid_funds),
    (R::InsufficientFunds, risk::insufficient_funds),
    (R::PriceOutsideCollar, risk::price_outside_collar),
    (R::InstrumentHalted, risk::instrument_halted),
    (R::FeeAccountCannotTrade, risk::fee_account_cannot_trade),
    (R::PostOnlyWouldTake, risk::post_only_would_take),
    (R::OrderQtyOverLimit, member::order_qty_over_limit),
    (R::OrderNotionalOverLimit, member::order_notional_over_limit),
    (R::OpenOrdersOverLimit, member::open_orders_over_limit),
    (R::PriceOutsideBand, member::price_outside_band),
    (R::AccountSuspended, member::account_suspended),
    (R::MmpTripped, member::mmp_tripped),
    (R::AccountsNotRelated, member::accounts_not_related),
    (R::TransferFromSuspended, member::transfer_from_suspended),
    (
        R::FeeAccountNotSuspendable,
        member::fee_account_not_suspendable,
    ),
    (R::DuplicateClientOrderId, orders::duplicate_client_order_id),
    (R::UnknownOrder, orders::unknown_order),
    (R::OrderNotOpen, orders::order_not_open),
    (R::ReplaceBelowFilled, orders::replace_below_filled),
    (R::TooManyOpenOrders, limits::too_many_open_orders),
    (R::TooManyPriceLevels, limits::too_many_price_levels),
    (R::TooManyInstruments, limits::too_many_instruments),
    (R::TooManyAccounts, limits::too_many_accounts),
    (R::AmountOverflow, limits::amount_overflow),
    (R::InstrumentExists, admin::instrument_exists),
    (R::InvalidInstrument, admin::invalid_instrument),
    (R::InvalidFee, admin::invalid_fee),
    (R::InvalidCollar, admin::invalid_collar),
    (R::AlreadyInStatus, admin::already_in_status),
    (R::TooManyMmpConfigs, member::too_many_mmp_configs),
    (R::TooManySubAccounts, member::too_many_sub_accounts),
    (R::InvalidRiskLimits, member::invalid_risk_limits),
    (R::AccountAlreadyInStatus, member::account_already_in_status),
    (R::InvalidMmp, member::invalid_mmp),
    (R::MmpNotConfigured, member::mmp_not_configured),
    (R::InvalidSubAccount, member::invalid_sub_account),
    (R::ExpireTsRequired, phases::expire_ts_required),
    (R::ExpireTsNotAllowed, phases::expire_ts_not_allowed),
    (R::ExpireTsPassed, phases::expire_ts_passed),
    (R::InstrumentClosed, phases::instrument_closed),
    (R::CancelsOnly, phases::cancels_only),
    (R::AtOpenOutsidePreOpen, phases::at_open_outside_pre_open),
    (
        R::AtCloseOutsideClosingCall,
        phases::at_close_outside_closing_call,
    ),
    (R::MarketInCall, phases::market_in_call),
    (R::ImmediateInCall, phases::immediate_in_call),
    (R::InvalidPhaseTransition, phases::invalid_phase_transition),
    (R::AlreadyInPhase, phases::already_in_phase),
    (R::StopPriceRequired, stops::stop_price_required),
    (R::StopPriceNotAllowed, stops::stop_price_not_allowed),
    (
        R::StopWouldTriggerImmediately,
        stops::stop_would_trigger_immediately,
    ),
    (
        R::StopMarketBuyNeedsCollar,
        stops::stop_market_buy_needs_collar,
    ),
    (R::InvalidTrailing, stops::invalid_trailing),
    (R::TrailingNeedsLastPrice, stops::trailing_needs_last_price),
    (R::TrailingNotAllowed, stops::trailing_not_allowed),
    (R::StopPriceNotOnTick, stops::stop_price_not_on_tick),
    (R::OcoOrderNotFound, stops::oco_order_not_found),
    (R::OcoAlreadyLinked, stops::oco_already_linked),
    (R::TooManyStopOrders, stops::too_many_stop_orders),
    (R::TooManyTrailingStops, stops::too_many_trailing_stops),
    (R::NotionalBelowMinimum, rules::notional_below_minimum),
    (R::InstrumentDelisted, rules::instrument_delisted),
    (R::InvalidListingPhase, admin::invalid_listing_phase),
    (R::InvalidVolatilityBand, rules::invalid_volatility_band),
    (
        R::VolatilityAuctionRequired,
        rules::volatility_auction_required,
    ),
    (R::VolatilityBandRequired, rules::volatility_band_required),
    (R::NoRuleChange, rules::no_rule_change),
    (R::InvalidMinQty, order_types::invalid_min_qty),
    (R::MinQtyNotAllowed, order_types::min_qty_not_allowed),
    (R::MinQtyInCall, order_types::min_qty_in_call),
    (R::HiddenNotAllowed, hidden::hidden_not_allowed),
    (R::HiddenBelowMinimum, hidden::hidden_below_minimum),
    (R::HiddenNotOffered, hidden::hidden_not_offered),
    (
        R::MarketToLimitNoOpposite,
        order_types::market_to_limit_no_opposite,
    ),
    (R::MidpointNotAllowed, midpoint::midpoint_not_allowed),
    (R::MidpointInCall, midpoint::midpoint_in_call),
    (R::TooManyMidpointOrders, midpoint::too_many_midpoint_orders),
];

/// Reasons without a test, and why.
const NOT_TESTED: &[(RejectReason, &str)] = &[
    (
        R::MarketInCallNeedsBound,
        "retired: a market buy in a call without a collar or static band is bounded by \
         what its account can pay (tests/market_call.rs); the code stays assigned",
    ),
    (
        R::MarketToLimitInCall,
        "retired: a market-to-limit order entered in a call waits for the auction as \
         Euronext's does (tests/order_types.rs); the code stays assigned",
    ),
    (
        R::TooManyAssets,
        "unreachable: only a listing creates assets, at most two, and the instrument \
         limit is checked first with MAX_INSTRUMENTS * 2 <= MAX_ASSETS",
    ),
    (
        R::ExchangeFull,
        "needs MAX_OPEN_ORDERS (10 million) resting orders from 1,000 accounts at their own \
         limit: gigabytes and minutes, beyond an example test",
    ),
];

// The argument for TooManyAssets being unreachable, checked at compile time
// so that raising one limit without the other fails the build.
const _: () = assert!(MAX_INSTRUMENTS * 2 <= MAX_ASSETS);

#[test]
fn every_reject_reason_has_a_test_or_a_reason_it_has_none() {
    for reason in RejectReason::ALL {
        let tested = TESTED.iter().filter(|(r, _)| r == reason).count();
        let excused = NOT_TESTED.iter().filter(|(r, _)| r == reason).count();
        assert_eq!(
            tested + excused,
            1,
            "{reason}: needs exactly one test or one excuse"
        );
    }
    assert_eq!(TESTED.len() + NOT_TESTED.len(), RejectReason::ALL.len());
}
