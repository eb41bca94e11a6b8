//! Reject reasons, numbered per subsystem in the manner of exchange-core:
//! 1xx validation of the command itself, 2xx pre-trade risk, 3xx order
//! management, 4xx limits, 5xx administration. The snake_case name is what
//! clients see; the number is what dashboards and FIX mappings key on.

macro_rules! reject_reasons {
    ($( $variant:ident = $code:literal, $name:literal, $text:literal; )*) => {
        /// Why a command was refused. A refused command changes nothing.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum RejectReason {
            $( $variant, )*
        }

        impl RejectReason {
            /// Every reason, in code order.
            pub const ALL: &'static [RejectReason] = &[$( RejectReason::$variant, )*];

            pub fn code(self) -> u16 {
                match self { $( RejectReason::$variant => $code, )* }
            }

            /// The snake_case name used on every wire.
            pub fn as_str(self) -> &'static str {
                match self { $( RejectReason::$variant => $name, )* }
            }

            /// One sentence for a human.
            pub fn message(self) -> &'static str {
                match self { $( RejectReason::$variant => $text, )* }
            }
        }
    };
}

reject_reasons! {
    UnknownInstrument = 101, "unknown_instrument", "no instrument has this symbol";
    UnknownAccount = 102, "unknown_account", "the account has never been funded";
    PriceRequired = 103, "price_required", "a limit order needs a price";
    PriceNotAllowed = 104, "price_not_allowed", "a market order takes no price";
    InvalidPrice = 105, "invalid_price", "the price must be greater than zero";
    PriceNotOnTick = 106, "price_not_on_tick", "the price is not a multiple of the tick size";
    InvalidQuantity = 107, "invalid_quantity", "the quantity must be greater than zero";
    QuantityNotOnLot = 108, "quantity_not_on_lot", "the quantity is not a multiple of the lot size";
    TooManyDecimals = 109, "too_many_decimals",
        "the number has more decimals than the exchange keeps";
    QuantityBelowMinimum = 110, "quantity_below_minimum",
        "the quantity is below the instrument's minimum";
    QuantityAboveMaximum = 111, "quantity_above_maximum",
        "the quantity is above the instrument's maximum";
    PostOnlyNotAllowed = 112, "post_only_not_allowed",
        "post-only needs a limit order that is good till canceled";
    InvalidAmount = 113, "invalid_amount", "the amount must be greater than zero";
    UnknownAsset = 114, "unknown_asset", "no listed instrument uses this asset";
    NothingToReplace = 115, "nothing_to_replace",
        "a replace must change the price, the quantity, the stop price or the client order id";
    ExpireTsRequired = 150, "expire_ts_required", "a good-till-date order needs expire_ts";
    ExpireTsNotAllowed = 151, "expire_ts_not_allowed",
        "only a good-till-date order takes expire_ts";
    ExpireTsPassed = 152, "expire_ts_passed", "expire_ts is not after the time of the order";
    StopPriceRequired = 120, "stop_price_required",
        "a stop or stop-limit order needs a stop price or a trailing distance, an if-touched order \
        a stop price";
    StopPriceNotAllowed = 121, "stop_price_not_allowed",
        "only stop, stop-limit and if-touched orders take a stop price or a trailing distance";
    StopWouldTriggerImmediately = 122, "stop_would_trigger_immediately",
        "the last price has already reached the stop price";
    StopMarketBuyNeedsCollar = 123, "stop_market_buy_needs_collar",
        "a stop market buy needs an instrument with a price collar to bound what it reserves";
    InvalidTrailing = 124, "invalid_trailing",
        "a trailing distance must be greater than zero, below 100% and not given with a stop price";
    TrailingNeedsLastPrice = 125, "trailing_needs_last_price",
        "a trailing stop needs a last price to follow";
    StopPriceNotOnTick = 126, "stop_price_not_on_tick",
        "the stop price must be greater than zero and a multiple of the tick size";
    TrailingNotAllowed = 127, "trailing_not_allowed",
        "an if-touched order triggers at a fixed stop price and takes no trailing distance";
    DisplayQtyNotAllowed = 130, "display_qty_not_allowed",
        "a display quantity needs a limit order that is good till canceled";
    InvalidDisplayQty = 131, "invalid_display_qty",
        "the display quantity must be on the lot, at least the minimum quantity and less than the \
        quantity";
    FundsNotAllowed = 132, "funds_not_allowed", "funds size a market buy only";
    FundsWithQty = 133, "funds_with_qty", "an order sized by funds takes a quantity of zero";
    InvalidFunds = 134, "invalid_funds", "the funds must be greater than zero";
    InvalidMinQty = 160, "invalid_min_qty",
        "the minimum acceptable quantity must be greater than zero, on the lot and at most the \
        quantity";
    MinQtyNotAllowed = 161, "min_qty_not_allowed",
        "a minimum acceptable quantity needs a limit, market, market-to-limit or midpoint order \
        sized by quantity and not post-only";
    MidpointNotAllowed = 170, "midpoint_not_allowed",
        "a midpoint order is good-till-canceled, day, good-till-date or immediate-or-cancel, and \
        in no one-cancels-other pair";
    HiddenNotAllowed = 135, "hidden_not_allowed",
        "a hidden order must be a limit order that may rest, and neither an iceberg nor a stop";
    HiddenBelowMinimum = 141, "hidden_below_minimum",
        "the hidden order's value (price times quantity) is below the instrument's minimum for \
        hidden orders";
    HiddenNotOffered = 142, "hidden_not_offered", "the instrument takes no hidden orders";
    NotionalBelowMinimum = 140, "notional_below_minimum",
        "the order's notional (price times quantity) is below the instrument's minimum";
    InsufficientFunds = 201, "insufficient_funds", "the available balance does not cover the order";
    PriceOutsideCollar = 202, "price_outside_collar",
        "the price is outside the instrument's price collar";
    InstrumentHalted = 203, "instrument_halted", "the instrument is halted";
    FeeAccountCannotTrade = 204, "fee_account_cannot_trade", "the fee account cannot place orders";
    PostOnlyWouldTake = 205, "post_only_would_take", "a post-only order would have taken liquidity";
    OrderQtyOverLimit = 206, "order_qty_over_limit",
        "the quantity is above the account's limit per order";
    OrderNotionalOverLimit = 207, "order_notional_over_limit",
        "the notional is above the account's limit per order";
    OpenOrdersOverLimit = 208, "open_orders_over_limit",
        "the account has reached its risk limit of open orders";
    PriceOutsideBand = 209, "price_outside_band",
        "the price is outside the account's band around the reference price";
    AccountSuspended = 210, "account_suspended", "the account is suspended";
    MmpTripped = 211, "mmp_tripped",
        "market-maker protection tripped on this instrument; reset it to trade again";
    AccountsNotRelated = 212, "accounts_not_related",
        "transfers move funds only between an owner and its sub-accounts";
    TransferFromSuspended = 213, "transfer_from_suspended",
        "a suspended account cannot move funds to another account until it is reinstated";
    InstrumentClosed = 220, "instrument_closed", "the instrument is closed: no orders are accepted";
    CancelsOnly = 221, "cancels_only", "in this phase the instrument accepts cancels only";
    AtOpenOutsidePreOpen = 222, "at_open_outside_pre_open",
        "an at-the-open order is accepted only during the pre-open call";
    AtCloseOutsideClosingCall = 223, "at_close_outside_closing_call",
        "an at-the-close order is accepted only during the closing call";
    MarketInCall = 224, "market_in_call",
        "a market buy sized by funds is not accepted during a call phase";
    ImmediateInCall = 225, "immediate_in_call",
        "nothing matches during a call phase, so immediate-or-cancel and fill-or-kill are refused";
    MarketInCallNeedsBound = 226, "market_in_call_needs_bound",
        "retired: a market buy in a call is now bounded by what its account can pay";
    MinQtyInCall = 227, "min_qty_in_call",
        "nothing matches in a call phase, so a minimum acceptable quantity cannot be met on entry";
    MarketToLimitInCall = 228, "market_to_limit_in_call",
        "retired: a market-to-limit order in a call now waits for the auction";
    MarketToLimitNoOpposite = 229, "market_to_limit_no_opposite",
        "a market-to-limit order takes its price from the other side of the book, which is empty";
    MidpointInCall = 235, "midpoint_in_call",
        "midpoint orders take no part in auctions and are accepted in continuous trading only";
    DuplicateClientOrderId = 301, "duplicate_client_order_id",
        "the account already has an open order with this client order id";
    UnknownOrder = 302, "unknown_order", "no open order of this account has this id";
    OrderNotOpen = 303, "order_not_open", "the order is no longer open";
    OcoOrderNotFound = 310, "oco_order_not_found",
        "one-cancels-other must name another open order of the account on the same instrument";
    OcoAlreadyLinked = 311, "oco_already_linked",
        "the order named by one-cancels-other is already in a pair";
    ReplaceBelowFilled = 304, "replace_below_filled",
        "the new quantity is less than what has already filled";
    TooManyOpenOrders = 401, "too_many_open_orders",
        "the account has reached its limit of open orders";
    TooManyPriceLevels = 402, "too_many_price_levels",
        "the book side has reached its limit of price levels";
    TooManyInstruments = 403, "too_many_instruments",
        "the exchange has reached its limit of instruments";
    TooManyAccounts = 404, "too_many_accounts", "the exchange has reached its limit of accounts";
    TooManyAssets = 405, "too_many_assets", "the exchange has reached its limit of assets";
    AmountOverflow = 406, "amount_overflow", "the amount is larger than the exchange can represent";
    ExchangeFull = 407, "exchange_full", "the exchange has reached its limit of open orders";
    TooManyMmpConfigs = 408, "too_many_mmp_configs",
        "the exchange has reached its limit of market-maker protection settings";
    TooManySubAccounts = 409, "too_many_sub_accounts",
        "the owner has reached its limit of sub-accounts";
    TooManyStopOrders = 410, "too_many_stop_orders",
        "the instrument has reached its limit of untriggered stop orders";
    TooManyTrailingStops = 411, "too_many_trailing_stops",
        "the instrument has reached its limit of trailing stops";
    TooManyMidpointOrders = 415, "too_many_midpoint_orders",
        "the instrument's midpoint book has reached its limit of orders";
    InstrumentExists = 501, "instrument_exists", "an instrument with this symbol already exists";
    InvalidInstrument = 502, "invalid_instrument",
        "the instrument's tick, lot or quantity limits are inconsistent";
    InvalidFee = 503, "invalid_fee",
        "fees must lie within 100% and a maker rebate cannot exceed the taker fee";
    InvalidCollar = 504, "invalid_collar", "the price collar must lie between 0 and 100%";
    AlreadyInStatus = 505, "already_in_status",
        "the instrument is already in the requested trading status";
    InvalidRiskLimits = 506, "invalid_risk_limits",
        "risk limits must be greater than zero and a band within 100%";
    AccountAlreadyInStatus = 507, "account_already_in_status",
        "the account is already suspended or already active";
    InvalidMmp = 508, "invalid_mmp",
        "market-maker protection needs a window and thresholds greater than zero";
    MmpNotConfigured = 509, "mmp_not_configured",
        "the account has no market-maker protection on this instrument";
    InvalidPhaseTransition = 520, "invalid_phase_transition",
        "the instrument cannot move from its phase to the requested one";
    AlreadyInPhase = 521, "already_in_phase", "the instrument is already in the requested phase";
    InvalidSubAccount = 510, "invalid_sub_account",
        "a sub-account must be another account, without an owner or sub-accounts of its own";
    InstrumentDelisted = 511, "instrument_delisted", "the instrument is delisted";
    NoRuleChange = 512, "no_rule_change", "set_instrument_rules must change at least one rule";
    FeeAccountNotSuspendable = 513, "fee_account_not_suspendable",
        "the fee account places no orders, so it cannot be suspended";
    InvalidVolatilityBand = 522, "invalid_volatility_band",
        "a volatility band must lie between 0 and 100%";
    VolatilityAuctionRequired = 523, "volatility_auction_required",
        "a volatility band needs volatility_auction_ns greater than zero";
    VolatilityBandRequired = 524, "volatility_band_required",
        "volatility_auction_ns needs a static or dynamic band";
    InvalidListingPhase = 525, "invalid_listing_phase",
        "an instrument is listed in closed, pre_open, continuous, closing_call, post_close or \
        halted";
}

impl std::fmt::Display for RejectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an order left the book other than by filling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// The owner asked.
    Requested,
    /// A mass cancel of the owner's orders.
    MassCancel,
    /// Self-trade prevention.
    SelfTrade,
    /// The operator suspended the account.
    AccountSuspended,
    /// The account's market-maker protection tripped on the instrument.
    Mmp,
    /// The other order of a one-cancels-other pair traded, triggered or
    /// was canceled by request.
    OneCancelsOther,
    /// The operator changed the instrument's rules and the order no
    /// longer fits them (price off the tick, quantity off the lot or out
    /// of bounds, notional below the minimum, fees its funds cannot cover).
    RulesChanged,
    /// The operator delisted the instrument.
    Delisted,
}

impl CancelReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Requested => "requested",
            CancelReason::MassCancel => "mass_cancel",
            CancelReason::SelfTrade => "self_trade_prevention",
            CancelReason::AccountSuspended => "account_suspended",
            CancelReason::Mmp => "mmp",
            CancelReason::OneCancelsOther => "one_cancels_other",
            CancelReason::RulesChanged => "rules_changed",
            CancelReason::Delisted => "delisted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique() {
        let mut codes: Vec<u16> = RejectReason::ALL.iter().map(|r| r.code()).collect();
        let mut names: Vec<&str> = RejectReason::ALL.iter().map(|r| r.as_str()).collect();
        codes.sort_unstable();
        names.sort_unstable();
        let before = (codes.len(), names.len());
        codes.dedup();
        names.dedup();
        assert_eq!(before, (codes.len(), names.len()));
        for reason in RejectReason::ALL {
            assert!(reason
                .as_str()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_'));
            assert!(!reason.message().is_empty());
        }
    }
}
