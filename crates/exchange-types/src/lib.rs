//! Domain types shared by every part of the exchange.
//!
//! Nothing here does I/O or reads a clock; everything is an integer or an
//! exact decimal. The core (`exchange-core`) consumes [`command::Stamped`]
//! commands and produces [`event::Event`]s; gateways and codecs translate
//! between these types and their wire formats.

pub mod calendar;
pub mod command;
pub mod decimal;
pub mod event;
pub mod ids;
pub mod lifecycle;
pub mod limits;
pub mod order;
pub mod reject;
pub mod validate;

pub use command::{
    AddInstrument, Cancel, Command, InternalTransfer, MassCancel, OrderRef, Place, PlaceExt,
    Replace, ReplaceStop, SetInstrumentRules, SetMmp, SetRiskLimits, Stamped, Trailing, Transfer,
};
pub use decimal::{format_signed_units, format_units, Dec, AMOUNT_SCALE, UNITS_PER_WHOLE};
pub use event::{
    Accepted, AcceptedExt, AccountStatus, Auction, AuctionKind, AuctionTrades, Canceled, Event,
    EventKind, Expired, Indicative, InstrumentAdded, InstrumentRules, MassCanceled, Mmp, MmpState,
    PhaseChanged, Rejected, Replaced, RiskLimits, SubAccountLinked, Trade, TrailingUnits,
};
pub use ids::{
    account_id_in_range, order_id_in_range, AccountId, AssetCode, ClientOrderId, IdError, OrderId,
    Symbol, TradeId, MAX_ID,
};
pub use lifecycle::{
    order_updates, Change, Liquidity, OrderState, OrderStatus, OrderUpdate, Progress, StopState,
};
pub use order::{
    OrderType, Phase, ReferencePriceRule, SelfTradePrevention, Side, TimeInForce, TradingStatus,
};
pub use reject::{CancelReason, RejectReason};
