//! Events: everything the core says. Same log in, same events out.
//!
//! Values are in `10^-AMOUNT_SCALE` units (prices and quantities already
//! converted from ticks and lots), so an event can be written out without
//! knowing the instrument it came from.
//!
//! Each kind's fields are a named struct, so a consumer can hand one kind
//! to a function (an encoder, the order fold in [`crate::lifecycle`])
//! instead of taking it apart field by field where it matches.

use std::num::NonZeroU64;

use crate::ids::{AccountId, AssetCode, ClientOrderId, OrderId, Symbol, TradeId};
use crate::order::{OrderType, Phase, SelfTradePrevention, Side, TimeInForce, TradingStatus};
use crate::reject::{CancelReason, RejectReason};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Global sequence number: one more than the previous event's.
    pub seq: u64,
    /// Timestamp of the command that caused this event.
    pub ts: u64,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    InstrumentAdded(InstrumentAdded),
    Status(Status),
    Accepted(Accepted),
    Rejected(Rejected),
    Trade(Trade),
    Canceled(Canceled),
    Replaced(Replaced),
    Expired(Expired),
    Balance(Balance),
    Book(Book),
    MassCanceled(MassCanceled),
    RiskLimits(RiskLimits),
    AccountStatus(AccountStatus),
    Mmp(Mmp),
    SubAccountLinked(SubAccountLinked),
    Phase(PhaseChanged),
    Indicative(Indicative),
    Auction(Auction),
    Triggered(Triggered),
    /// Boxed: rare, and inline it would make every event larger.
    InstrumentRules(Box<InstrumentRules>),
    ReferencePrice(ReferencePrice),
    Error(Error),
}

/// A stop or stop-limit order's trigger was reached: the order leaves the
/// untriggered stops and enters the book (its trades, resting or expiry
/// follow as for a new order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Triggered {
    pub account: AccountId,
    pub order_id: OrderId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    /// The stop price that was reached, in price units (for a trailing
    /// stop, where it had trailed to).
    pub stop_price: u64,
    /// The last trade price that reached it, in price units.
    pub last_price: u64,
    /// The order's quantity (units): an untriggered stop never fills, so
    /// all of it enters the book.
    pub qty: u64,
}

/// An instrument's rules as they stand after a listing, a rule change or
/// a delisting, in units like every other event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentRules {
    pub symbol: Symbol,
    pub base: AssetCode,
    pub quote: AssetCode,
    pub tick_size: u64,
    pub lot_size: u64,
    pub min_qty: u64,
    pub max_qty: u64,
    /// Zero: no minimum beyond the minimum quantity.
    pub min_notional: u64,
    pub maker_fee_bps: i32,
    pub taker_fee_bps: i32,
    /// Zero: no collar.
    pub collar_bps: u32,
    /// Volatility bands, basis points; zero: no band.
    pub static_band_bps: u32,
    pub dynamic_band_bps: u32,
    /// How long a volatility auction's call lasts; zero without bands.
    pub volatility_auction_ns: u64,
    pub status: TradingStatus,
}

/// The operator set an instrument's reference price: the static band's
/// centre and the last price the collar, the dynamic band and the auction
/// price use, from this event until the next auction or trade moves them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferencePrice {
    pub symbol: Symbol,
    /// Price units.
    pub price: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentAdded {
    pub symbol: Symbol,
    pub base: AssetCode,
    pub quote: AssetCode,
    /// The listing's reference price (price units), when it names one:
    /// market data folds the reference from events alone, and a listing
    /// sets it without a `reference_price` event.
    pub reference_price: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub symbol: Symbol,
    pub status: TradingStatus,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub account: AccountId,
    pub client_order_id: ClientOrderId,
    pub order_id: OrderId,
    pub symbol: Symbol,
    pub side: Side,
    pub order_type: OrderType,
    pub price: Option<u64>,
    pub qty: u64,
    pub tif: TimeInForce,
    pub post_only: bool,
    pub stp: SelfTradePrevention,
    /// The rarer parts of the order, as accepted; boxed like the command's.
    pub ext: Option<Box<AcceptedExt>>,
}

/// An accepted order's stop, iceberg, funds, expiry and one-cancels-other
/// details, in units like every event value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AcceptedExt {
    pub stop_price: Option<u64>,
    pub trailing: Option<TrailingUnits>,
    pub display_qty: Option<u64>,
    pub funds: Option<u64>,
    pub expire_ts: Option<u64>,
    pub oco_with: Option<ClientOrderId>,
    /// A hidden order: shown to its owner here, never in market data.
    pub hidden: bool,
    /// The minimum acceptable quantity it was admitted with, echoed as
    /// FIX echoes MinQty (110) on the ExecutionReport.
    pub min_qty: Option<u64>,
}

/// A trailing stop's distance: a price in units or basis points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrailingUnits {
    Amount(u64),
    Bps(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub command: &'static str,
    pub account: Option<AccountId>,
    pub client_order_id: Option<ClientOrderId>,
    pub order_id: Option<OrderId>,
    pub symbol: Option<Symbol>,
    pub reason: RejectReason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trade {
    pub trade_id: TradeId,
    pub symbol: Symbol,
    pub price: u64,
    pub qty: u64,
    pub maker_order_id: OrderId,
    pub taker_order_id: OrderId,
    pub maker_account: AccountId,
    pub taker_account: AccountId,
    pub aggressor_side: Side,
    /// Fee paid by the maker in quote units; negative is a rebate.
    pub maker_fee: i64,
    /// Fee paid by the taker in quote units.
    pub taker_fee: i64,
    /// Quantity still open on the maker order after this trade.
    pub maker_leaves_qty: u64,
    /// Quantity still unfilled on the taker order after this trade.
    pub taker_leaves_qty: u64,
    /// Between two midpoint orders, at the lit book's midpoint: it moves
    /// no last price, so market data's reference must not follow it.
    pub midpoint: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canceled {
    pub account: AccountId,
    pub order_id: OrderId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub reason: CancelReason,
    /// Quantity canceled by this event.
    pub canceled_qty: u64,
    pub filled_qty: u64,
    /// Quantity still open afterwards: zero unless self-trade
    /// prevention only decremented the order.
    pub leaves_qty: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replaced {
    pub account: AccountId,
    pub order_id: OrderId,
    pub old_client_order_id: ClientOrderId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub price: u64,
    /// New total quantity, filled included.
    pub qty: u64,
    pub leaves_qty: u64,
    /// The stop price of an order that is still an untriggered stop
    /// (changed by this replace or not); `None` for any other order.
    /// Non-zero, so that the commonest command's event needs no box.
    pub stop_price: Option<NonZeroU64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired {
    pub account: AccountId,
    pub order_id: OrderId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    /// Quantity that could not be filled and will never rest.
    pub expired_qty: u64,
    pub filled_qty: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balance {
    pub account: AccountId,
    pub asset: AssetCode,
    pub total: u64,
    pub available: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Book {
    pub symbol: Symbol,
    pub side: Side,
    pub price: u64,
    /// New aggregate quantity at this level; zero removes the level.
    pub qty: u64,
}

/// A mass cancel finished: how many orders it canceled (each also has its
/// own `Canceled` event), so even one that found nothing is acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MassCanceled {
    pub account: AccountId,
    pub symbol: Option<Symbol>,
    pub canceled: u32,
}

/// An account's pre-trade limits as they now stand (`None`: no limit).
/// Quantity in base units, notional in quote units of the instrument an
/// order is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RiskLimits {
    pub account: AccountId,
    pub max_order_qty: Option<u64>,
    pub max_order_notional: Option<u64>,
    pub max_open_orders: Option<u32>,
    pub price_band_bps: Option<u32>,
}

/// An account was suspended (after its open orders were canceled, each
/// with its own `Canceled` event) or reinstated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountStatus {
    pub account: AccountId,
    pub suspended: bool,
    /// Orders the suspension canceled; zero on reinstatement.
    pub canceled: u32,
}

/// Market-maker protection of one account on one instrument changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmp {
    pub account: AccountId,
    pub symbol: Symbol,
    pub state: MmpState,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MmpState {
    /// Configured (or reconfigured, which restarts the window).
    Set {
        window_ns: u64,
        max_qty: Option<u64>,
        max_count: Option<u32>,
    },
    /// Removed by a configuration with no threshold.
    Removed,
    /// A fill exceeded a threshold: the account's orders on the instrument
    /// were canceled and new ones are refused until a reset.
    Tripped { filled_qty: u64, fills: u32 },
    /// Reset: the account may trade the instrument again.
    Reset,
}

impl MmpState {
    pub fn as_str(&self) -> &'static str {
        match self {
            MmpState::Set { .. } => "set",
            MmpState::Removed => "removed",
            MmpState::Tripped { .. } => "tripped",
            MmpState::Reset => "reset",
        }
    }
}

/// `sub` is now a sub-account of `owner`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubAccountLinked {
    pub owner: AccountId,
    pub sub: AccountId,
}

/// An instrument entered a trading phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseChanged {
    pub symbol: Symbol,
    pub phase: Phase,
}

/// The uncrossing an auction would run now, published during a call
/// whenever it changes. All `None`/zero when nothing crosses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indicative {
    pub symbol: Symbol,
    pub price: Option<u64>,
    /// Quantity that would execute at `price`.
    pub volume: u64,
    /// The side with quantity left over at `price`, if any.
    pub imbalance_side: Option<Side>,
    pub imbalance_qty: u64,
}

/// Which auction uncrossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuctionKind {
    Open,
    Close,
    Volatility,
    /// After a halt.
    Reopen,
}

impl AuctionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuctionKind::Open => "open",
            AuctionKind::Close => "close",
            AuctionKind::Volatility => "volatility",
            AuctionKind::Reopen => "reopen",
        }
    }
}

/// An auction uncrossed: every `trade` that follows with this symbol up
/// to `volume` executed in it, at `price`. Emitted before those trades,
/// and only when something executes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Auction {
    pub symbol: Symbol,
    pub kind: AuctionKind,
    pub price: u64,
    pub volume: u64,
}

/// Tags the trades that follow an `auction` event with its kind: the
/// core emits the auction, then its trades, up to its volume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuctionTrades {
    left: u64,
    kind: Option<AuctionKind>,
}

impl AuctionTrades {
    pub fn start(&mut self, auction: &Auction) {
        self.left = auction.volume;
        self.kind = Some(auction.kind);
    }

    /// The auction a trade of `qty` executed in, if any.
    pub fn trade(&mut self, qty: u64) -> Option<AuctionKind> {
        if self.left == 0 {
            return None;
        }
        self.left = self.left.saturating_sub(qty);
        self.kind
    }
}

/// Input that never became a command (a malformed line): its line number
/// and the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub line: u64,
    pub message: String,
}

impl EventKind {
    /// The snake_case name used on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::InstrumentAdded(_) => "instrument_added",
            EventKind::Status(_) => "status",
            EventKind::Accepted(_) => "accepted",
            EventKind::Rejected(_) => "rejected",
            EventKind::Trade(_) => "trade",
            EventKind::Canceled(_) => "canceled",
            EventKind::Replaced(_) => "replaced",
            EventKind::Expired(_) => "expired",
            EventKind::Balance(_) => "balance",
            EventKind::Book(_) => "book",
            EventKind::MassCanceled(_) => "mass_canceled",
            EventKind::RiskLimits(_) => "risk_limits",
            EventKind::AccountStatus(_) => "account_status",
            EventKind::Mmp(_) => "mmp",
            EventKind::SubAccountLinked(_) => "sub_account_linked",
            EventKind::Phase(_) => "phase",
            EventKind::Indicative(_) => "indicative",
            EventKind::Auction(_) => "auction",
            EventKind::Triggered(_) => "triggered",
            EventKind::InstrumentRules(_) => "instrument_rules",
            EventKind::ReferencePrice(_) => "reference_price",
            EventKind::Error(_) => "error",
        }
    }
}

// The core writes several of these per command into a reused buffer, at
// millions a second: a payload that grows past this should be boxed if it
// is rare (as `Command::AddInstrument` is), not make every event larger.
// `Replaced` sets the size: replaces are the commonest command, and a box
// would allocate on every one of them.
const _: () = assert!(std::mem::size_of::<Event>() <= 168);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trades_are_tagged_up_to_the_auction_volume() {
        let mut tags = AuctionTrades::default();
        assert_eq!(tags.trade(1), None);
        tags.start(&Auction {
            symbol: Symbol::new("X").unwrap(),
            kind: AuctionKind::Close,
            price: 1,
            volume: 5,
        });
        assert_eq!(tags.trade(2), Some(AuctionKind::Close));
        assert_eq!(tags.trade(3), Some(AuctionKind::Close));
        assert_eq!(tags.trade(1), None);
    }
}
