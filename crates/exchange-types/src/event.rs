//! Events: everything the core says. Same log in, same events out.
//!
//! Values are in `10^-AMOUNT_SCALE` units (prices and quantities already
//! converted from ticks and lots), so an event can be written out without
//! knowing the instrument it came from.

use crate::ids::{AccountId, AssetCode, ClientOrderId, OrderId, Symbol, TradeId};
use crate::order::{OrderType, SelfTradePrevention, Side, TimeInForce, TradingStatus};
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
    InstrumentAdded {
        symbol: Symbol,
        base: AssetCode,
        quote: AssetCode,
    },
    Status {
        symbol: Symbol,
        status: TradingStatus,
    },
    Accepted {
        account: AccountId,
        client_order_id: ClientOrderId,
        order_id: OrderId,
        symbol: Symbol,
        side: Side,
        order_type: OrderType,
        price: Option<u64>,
        qty: u64,
        tif: TimeInForce,
        post_only: bool,
        stp: SelfTradePrevention,
    },
    Rejected {
        command: &'static str,
        account: Option<AccountId>,
        client_order_id: Option<ClientOrderId>,
        order_id: Option<OrderId>,
        symbol: Option<Symbol>,
        reason: RejectReason,
    },
    Trade {
        trade_id: TradeId,
        symbol: Symbol,
        price: u64,
        qty: u64,
        maker_order_id: OrderId,
        taker_order_id: OrderId,
        maker_account: AccountId,
        taker_account: AccountId,
        aggressor_side: Side,
        /// Fee paid by the maker in quote units; negative is a rebate.
        maker_fee: i64,
        /// Fee paid by the taker in quote units.
        taker_fee: i64,
        /// Quantity still open on the maker order after this trade.
        maker_leaves_qty: u64,
        /// Quantity still unfilled on the taker order after this trade.
        taker_leaves_qty: u64,
    },
    Canceled {
        account: AccountId,
        order_id: OrderId,
        client_order_id: ClientOrderId,
        symbol: Symbol,
        reason: CancelReason,
        /// Quantity canceled by this event.
        canceled_qty: u64,
        filled_qty: u64,
        /// Quantity still open afterwards: zero unless self-trade
        /// prevention only decremented the order.
        leaves_qty: u64,
    },
    Replaced {
        account: AccountId,
        order_id: OrderId,
        old_client_order_id: ClientOrderId,
        client_order_id: ClientOrderId,
        symbol: Symbol,
        price: u64,
        /// New total quantity, filled included.
        qty: u64,
        leaves_qty: u64,
    },
    Expired {
        account: AccountId,
        order_id: OrderId,
        client_order_id: ClientOrderId,
        symbol: Symbol,
        /// Quantity that could not be filled and will never rest.
        expired_qty: u64,
        filled_qty: u64,
    },
    Balance {
        account: AccountId,
        asset: AssetCode,
        total: u64,
        available: u64,
    },
    Book {
        symbol: Symbol,
        side: Side,
        price: u64,
        /// New aggregate quantity at this level; zero removes the level.
        qty: u64,
    },
    /// A mass cancel finished: how many orders it canceled (each also has
    /// its own `Canceled` event), so even one that found nothing is
    /// acknowledged.
    MassCanceled {
        account: AccountId,
        symbol: Option<Symbol>,
        canceled: u32,
    },
    /// Input that never became a command (a malformed line); carries the
    /// line number and the cause.
    Error { line: u64, message: String },
}

impl EventKind {
    /// The snake_case name used on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::InstrumentAdded { .. } => "instrument_added",
            EventKind::Status { .. } => "status",
            EventKind::Accepted { .. } => "accepted",
            EventKind::Rejected { .. } => "rejected",
            EventKind::Trade { .. } => "trade",
            EventKind::Canceled { .. } => "canceled",
            EventKind::Replaced { .. } => "replaced",
            EventKind::Expired { .. } => "expired",
            EventKind::Balance { .. } => "balance",
            EventKind::Book { .. } => "book",
            EventKind::MassCanceled { .. } => "mass_canceled",
            EventKind::Error { .. } => "error",
        }
    }
}
