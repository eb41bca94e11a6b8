//! Small enums that describe an order.

/// Which side of the book an order is on.
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    Buy,
    Sell,
}

impl Side {
    /// Every value; a value's position is its code in the binary encoding,
    /// so values are only ever added at the end.
    pub const ALL: &'static [Side] = &[Side::Buy, Side::Sell];

    /// The value [`Side::as_str`] names.
    pub fn parse(name: &str) -> Option<Side> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == name)
    }

    pub fn opposite(self) -> Side {
        match self {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Side::Buy => "buy",
            Side::Sell => "sell",
        }
    }
}

#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderType {
    Limit,
    Market,
    /// Held off the book until the last trade price reaches its stop
    /// price, then enters as a market order.
    Stop,
    /// Held off the book until the last trade price reaches its stop
    /// price, then enters as a limit order at its price.
    StopLimit,
    /// Continuous trading only: becomes a limit order at the best price
    /// on the other side of the book, so it trades at that one level and
    /// what is left rests there (CME Globex's market-limit order,
    /// Euronext's market-to-limit order).
    MarketToLimit,
    /// Take-profit: held off the book until the last trade price reaches
    /// its stop price from the other side than a stop's (a buy when it
    /// falls to it, a sell when it rises to it), then enters as a market
    /// order (CME Globex's market-if-touched, Binance's `TAKE_PROFIT`).
    MarketIfTouched,
    /// As [`OrderType::MarketIfTouched`], but enters as a limit order at
    /// its price (Binance's `TAKE_PROFIT_LIMIT`).
    LimitIfTouched,
    /// Pegged to the midpoint of the best bid and offer, never displayed:
    /// it rests in the instrument's midpoint book and trades only with
    /// other midpoint orders, at the midpoint (Xetra's midpoint order,
    /// Nasdaq's Midpoint Peg). Its price, if any, is a limit.
    Midpoint,
}

impl OrderType {
    /// Every value; a value's position is its code in the binary encoding,
    /// so values are only ever added at the end.
    pub const ALL: &'static [OrderType] = &[
        OrderType::Limit,
        OrderType::Market,
        OrderType::Stop,
        OrderType::StopLimit,
        OrderType::MarketToLimit,
        OrderType::MarketIfTouched,
        OrderType::LimitIfTouched,
        OrderType::Midpoint,
    ];

    /// The value [`OrderType::as_str`] names.
    pub fn parse(name: &str) -> Option<OrderType> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == name)
    }

    /// Whether the order triggers when the last price moves against a
    /// stop's direction: a buy as it falls, a sell as it rises.
    pub fn is_if_touched(self) -> bool {
        matches!(self, OrderType::MarketIfTouched | OrderType::LimitIfTouched)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OrderType::Limit => "limit",
            OrderType::Market => "market",
            OrderType::Stop => "stop",
            OrderType::StopLimit => "stop_limit",
            OrderType::MarketToLimit => "market_to_limit",
            OrderType::MarketIfTouched => "market_if_touched",
            OrderType::LimitIfTouched => "limit_if_touched",
            OrderType::Midpoint => "midpoint",
        }
    }
}

/// Time in force.
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeInForce {
    /// Good till canceled: the remainder rests on the book.
    Gtc,
    /// Immediate or cancel: the remainder expires.
    Ioc,
    /// Fill or kill: fills completely at once, or expires whole.
    Fok,
    /// Rests until the instrument's trading day closes, then expires.
    Day,
    /// Good till date: rests until its expire time (log time) passes.
    Gtd,
    /// Takes part in the opening auction only; what it does not fill there
    /// expires.
    AtOpen,
    /// Takes part in the closing auction only; what it does not fill there
    /// expires.
    AtClose,
}

impl TimeInForce {
    /// Every value; a value's position is its code in the binary encoding,
    /// so values are only ever added at the end.
    pub const ALL: &'static [TimeInForce] = &[
        TimeInForce::Gtc,
        TimeInForce::Ioc,
        TimeInForce::Fok,
        TimeInForce::Day,
        TimeInForce::Gtd,
        TimeInForce::AtOpen,
        TimeInForce::AtClose,
    ];

    /// The value [`TimeInForce::as_str`] names.
    pub fn parse(name: &str) -> Option<TimeInForce> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TimeInForce::Gtc => "gtc",
            TimeInForce::Ioc => "ioc",
            TimeInForce::Fok => "fok",
            TimeInForce::Day => "day",
            TimeInForce::Gtd => "gtd",
            TimeInForce::AtOpen => "at_open",
            TimeInForce::AtClose => "at_close",
        }
    }
}

/// What happens when an incoming order would trade with a resting order of
/// the same account. The incoming (taker) order's mode decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SelfTradePrevention {
    /// Cancel the rest of the incoming order; the resting order stays.
    CancelNewest,
    /// Cancel the resting order and keep matching.
    CancelOldest,
    /// Cancel both.
    CancelBoth,
    /// Reduce both by the smaller quantity without a trade; an order left
    /// with nothing is canceled.
    Decrement,
}

impl SelfTradePrevention {
    /// Every value; a value's position is its code in the binary encoding,
    /// so values are only ever added at the end.
    pub const ALL: &'static [SelfTradePrevention] = &[
        SelfTradePrevention::CancelNewest,
        SelfTradePrevention::CancelOldest,
        SelfTradePrevention::CancelBoth,
        SelfTradePrevention::Decrement,
    ];

    /// The value [`SelfTradePrevention::as_str`] names.
    pub fn parse(name: &str) -> Option<SelfTradePrevention> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SelfTradePrevention::CancelNewest => "cancel_newest",
            SelfTradePrevention::CancelOldest => "cancel_oldest",
            SelfTradePrevention::CancelBoth => "cancel_both",
            SelfTradePrevention::Decrement => "decrement",
        }
    }
}

/// Where an instrument is in its trading day. An instrument without a
/// schedule stays `Continuous` around the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// No orders accepted; resting orders stay.
    Closed,
    /// Call phase before the open: orders, replaces and cancels are
    /// accepted and nothing matches.
    PreOpen,
    /// The opening uncross is running.
    OpeningAuction,
    /// Continuous matching.
    Continuous,
    /// Call phase before the close.
    ClosingCall,
    /// The closing uncross is running.
    ClosingAuction,
    /// After the close: cancels only.
    PostClose,
    /// Stopped by the operator: cancels only; reopens through an auction.
    Halted,
    /// A call phase started by a price moving outside its band.
    VolatilityAuction,
}

impl Phase {
    pub const ALL: &'static [Phase] = &[
        Phase::Closed,
        Phase::PreOpen,
        Phase::OpeningAuction,
        Phase::Continuous,
        Phase::ClosingCall,
        Phase::ClosingAuction,
        Phase::PostClose,
        Phase::Halted,
        Phase::VolatilityAuction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Closed => "closed",
            Phase::PreOpen => "pre_open",
            Phase::OpeningAuction => "opening_auction",
            Phase::Continuous => "continuous",
            Phase::ClosingCall => "closing_call",
            Phase::ClosingAuction => "closing_auction",
            Phase::PostClose => "post_close",
            Phase::Halted => "halted",
            Phase::VolatilityAuction => "volatility_auction",
        }
    }
}

/// How an auction uses the reference price when several prices tie on
/// executable volume and surplus with surpluses on both sides or none.
///
/// New listings take [`ReferencePriceRule::FOR_NEW_LISTINGS`] (the node's
/// configuration and admin route fill it in); a listing command that names
/// no rule, as every one journaled before the setting existed, takes
/// [`ReferencePriceRule::UNNAMED`], the rule those listings ran under, so
/// old journals and snapshots replay and restore to the trades they made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReferencePriceRule {
    /// Xetra's: only the orders' limit prices are candidates, and the
    /// reference picks the one nearest it, the higher of two equally near.
    /// When only market orders execute, the reference is the price.
    LimitNearest,
    /// Euronext's: the reference is a candidate price itself, so a
    /// reference within the tied prices is the auction price.
    Reference,
}

impl ReferencePriceRule {
    /// What a listing gets unless its operator chooses: Xetra's rule, as
    /// the rest of the market model follows Xetra.
    pub const FOR_NEW_LISTINGS: ReferencePriceRule = ReferencePriceRule::LimitNearest;
    /// What a listing command that names no rule means: the rule of every
    /// listing before the setting existed. Encodings leave it out.
    pub const UNNAMED: ReferencePriceRule = ReferencePriceRule::Reference;

    /// In wire-code order: the list only ever grows at its end.
    pub const ALL: &'static [ReferencePriceRule] = &[
        ReferencePriceRule::LimitNearest,
        ReferencePriceRule::Reference,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReferencePriceRule::LimitNearest => "limit_nearest",
            ReferencePriceRule::Reference => "reference",
        }
    }

    pub fn parse(text: &str) -> Option<ReferencePriceRule> {
        Self::ALL.iter().copied().find(|r| r.as_str() == text)
    }
}

/// Whether an instrument accepts new orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TradingStatus {
    Trading,
    Halted,
    /// Taken off the exchange by the operator: every order was canceled
    /// and none is accepted again; the listing stays for history.
    Delisted,
}

impl TradingStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TradingStatus::Trading => "trading",
            TradingStatus::Halted => "halted",
            TradingStatus::Delisted => "delisted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_its_value_and_no_other_name_does() {
        for side in Side::ALL {
            assert_eq!(Side::parse(side.as_str()), Some(*side));
        }
        for order_type in OrderType::ALL {
            assert_eq!(OrderType::parse(order_type.as_str()), Some(*order_type));
        }
        for tif in TimeInForce::ALL {
            assert_eq!(TimeInForce::parse(tif.as_str()), Some(*tif));
        }
        for stp in SelfTradePrevention::ALL {
            assert_eq!(SelfTradePrevention::parse(stp.as_str()), Some(*stp));
        }
        for rule in ReferencePriceRule::ALL {
            assert_eq!(ReferencePriceRule::parse(rule.as_str()), Some(*rule));
        }
        assert_eq!(ReferencePriceRule::parse("Reference"), None);
        assert_eq!(SelfTradePrevention::ALL.len(), 4);
        assert_eq!(Side::ALL.len(), 2);
        assert_eq!(OrderType::ALL.len(), 8);
        assert_eq!(TimeInForce::ALL.len(), 7);
        assert_eq!(Side::parse("BUY"), None);
        assert_eq!(OrderType::parse("stoplimit"), None);
        assert_eq!(TimeInForce::parse(""), None);
    }
}
