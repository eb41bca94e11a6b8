//! Commands: the only way to change the core's state.
//!
//! A command is what a gateway sequenced into the log. Numeric fields are
//! kept exactly as the client wrote them ([`Dec`]) so the core, not the
//! gateway, decides whether they are acceptable, and every replica decides
//! the same way.

use crate::decimal::Dec;
use crate::ids::{AccountId, AssetCode, ClientOrderId, OrderId, Symbol};
use crate::order::{OrderType, Phase, ReferencePriceRule, SelfTradePrevention, Side, TimeInForce};

/// A command with the timestamp its log entry carries (nanoseconds since
/// the Unix epoch). The core never reads a clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    pub ts: u64,
    pub command: Command,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Boxed: listing is rare, and inline it would make every command as
    /// large as this one.
    AddInstrument(Box<AddInstrument>),
    Deposit(Transfer),
    Withdraw(Transfer),
    Place(Place),
    Cancel(Cancel),
    /// Inline: replaces are the commonest command of a quoting market
    /// maker, and a pointer to chase on each costs the core its cache.
    Replace(Replace),
    /// A replace that also moves an untriggered stop's stop price: rare,
    /// so boxed, keeping [`Command::Replace`] within the size budget. Named
    /// `replace` on the wire like any other.
    ReplaceStop(Box<ReplaceStop>),
    MassCancel(MassCancel),
    Halt {
        symbol: Symbol,
    },
    Resume {
        symbol: Symbol,
    },
    /// Boxed for the same reason as a listing: operator-only and rare.
    SetRiskLimits(Box<SetRiskLimits>),
    /// Kill switch: cancels the account's open orders and refuses its new
    /// orders and replaces until [`Command::Reinstate`].
    Suspend {
        account: AccountId,
    },
    Reinstate {
        account: AccountId,
    },
    SetMmp(Box<SetMmp>),
    /// Lets an account whose market-maker protection tripped trade the
    /// instrument again (sent by the account or the operator).
    ResetMmp {
        account: AccountId,
        symbol: Symbol,
    },
    /// Operator: makes `sub` a sub-account of `owner`.
    LinkSubAccount {
        owner: AccountId,
        sub: AccountId,
    },
    /// Moves available funds between an owner and its sub-accounts, or
    /// between two sub-accounts of one owner.
    InternalTransfer(InternalTransfer),
    /// Moves an instrument to a phase of its trading day (sent by the
    /// server's scheduler at the scheduled time, or by the operator).
    SetPhase {
        symbol: Symbol,
        phase: Phase,
    },
    /// Operator: changes a listed instrument's rules from this log entry
    /// on. Boxed like a listing.
    SetInstrumentRules(Box<SetInstrumentRules>),
    /// Operator: sets an instrument's reference price (after a corporate
    /// action, or before its first trade), as a listing's reference price
    /// is set: the centre of the static band and the last price the
    /// collar, the dynamic band and the auction price use, until the next
    /// auction and the next trade move them.
    SetReferencePrice {
        symbol: Symbol,
        price: Dec,
    },
    /// Operator: cancels every order of the instrument and refuses new
    /// ones for good; the listing stays for history.
    Delist {
        symbol: Symbol,
    },
    /// Carries only its time: lets the core act on what falls due with
    /// time alone (good-till-date expiry, the end of a volatility
    /// auction) when no other command arrives.
    Tick,
}

impl Command {
    /// A replace of either kind, with the new stop price if it moves one.
    pub fn as_replace(&self) -> Option<(&Replace, Option<Dec>)> {
        match self {
            Command::Replace(replace) => Some((replace, None)),
            Command::ReplaceStop(stop) => Some((&stop.replace, Some(stop.stop_price))),
            _ => None,
        }
    }

    /// A replace that moves the stop price to `stop_price` when given.
    pub fn replace(replace: Replace, stop_price: Option<Dec>) -> Command {
        match stop_price {
            None => Command::Replace(replace),
            Some(stop_price) => Command::ReplaceStop(Box::new(ReplaceStop {
                replace,
                stop_price,
            })),
        }
    }

    /// The snake_case name used on the wire and in reject events.
    pub fn name(&self) -> &'static str {
        match self {
            Command::AddInstrument(_) => "add_instrument",
            Command::Deposit(_) => "deposit",
            Command::Withdraw(_) => "withdraw",
            Command::Place(_) => "place",
            Command::Cancel(_) => "cancel",
            Command::Replace(_) | Command::ReplaceStop(_) => "replace",
            Command::MassCancel(_) => "mass_cancel",
            Command::Halt { .. } => "halt",
            Command::Resume { .. } => "resume",
            Command::SetRiskLimits(_) => "set_risk_limits",
            Command::Suspend { .. } => "suspend",
            Command::Reinstate { .. } => "reinstate",
            Command::SetMmp(_) => "set_mmp",
            Command::ResetMmp { .. } => "reset_mmp",
            Command::LinkSubAccount { .. } => "link_sub_account",
            Command::InternalTransfer(_) => "internal_transfer",
            Command::SetPhase { .. } => "set_phase",
            Command::SetInstrumentRules(_) => "set_instrument_rules",
            Command::Delist { .. } => "delist",
            Command::Tick => "tick",
            Command::SetReferencePrice { .. } => "set_reference_price",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddInstrument {
    pub symbol: Symbol,
    pub base: AssetCode,
    pub quote: AssetCode,
    pub tick_size: Dec,
    pub lot_size: Dec,
    /// Smallest order quantity; defaults to one lot.
    pub min_qty: Option<Dec>,
    /// Largest order quantity; defaults to no limit beyond overflow.
    pub max_qty: Option<Dec>,
    /// Collar half-width in basis points around the reference price; `None`
    /// or zero disables the collar.
    pub collar_bps: Option<u32>,
    /// Reference price for the collar until the first trade sets one.
    pub reference_price: Option<Dec>,
    pub maker_fee_bps: i32,
    pub taker_fee_bps: i32,
    /// Smallest notional (price times quantity, in quote units) an order
    /// may have; `None`: no minimum beyond the minimum quantity.
    pub min_notional: Option<Dec>,
    /// Static volatility band: half-width in basis points around the
    /// day's reference price (the last auction price, or the configured
    /// reference); `None` or zero disables it.
    pub static_band_bps: Option<u32>,
    /// Dynamic volatility band: half-width in basis points around the
    /// last trade; `None` or zero disables it.
    pub dynamic_band_bps: Option<u32>,
    /// How long a volatility auction's call phase lasts, nanoseconds of
    /// log time.
    pub volatility_auction_ns: Option<u64>,
    /// How the auction price uses the reference price. The encodings leave
    /// out [`ReferencePriceRule::UNNAMED`], so listings written before the
    /// setting existed read as the rule they ran under.
    pub reference_price_rule: ReferencePriceRule,
    /// The phase the instrument is listed in; `None`: `continuous`, as
    /// before the setting existed. The encodings leave `None` out, so older
    /// listings keep their bytes.
    pub phase: Option<Phase>,
    /// The smallest value (price times quantity, in quote units) a hidden
    /// order may have; `None`: the instrument takes no hidden orders. The
    /// encodings leave `None` out, so older listings keep their bytes.
    pub hidden_min_notional: Option<Dec>,
}

impl AddInstrument {
    /// A listing of `symbol`, `base` priced in `quote`, with every optional
    /// rule off: no quantity or notional limits, no collar, bands or
    /// volatility auctions, no fees, no hidden orders, listed in continuous
    /// trading under the reference-price rule of new listings. A listing
    /// that needs more sets it with struct update syntax.
    pub fn plain(
        symbol: Symbol,
        base: AssetCode,
        quote: AssetCode,
        tick_size: Dec,
        lot_size: Dec,
    ) -> AddInstrument {
        AddInstrument {
            symbol,
            base,
            quote,
            tick_size,
            lot_size,
            min_qty: None,
            max_qty: None,
            collar_bps: None,
            reference_price: None,
            maker_fee_bps: 0,
            taker_fee_bps: 0,
            min_notional: None,
            static_band_bps: None,
            dynamic_band_bps: None,
            volatility_auction_ns: None,
            reference_price_rule: ReferencePriceRule::FOR_NEW_LISTINGS,
            phase: None,
            hidden_min_notional: None,
        }
    }
}

/// New rules for a listed instrument: each field given replaces the rule,
/// each field left out keeps it. Resting orders that no longer fit are
/// canceled, never altered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetInstrumentRules {
    pub symbol: Symbol,
    pub tick_size: Option<Dec>,
    pub lot_size: Option<Dec>,
    pub min_qty: Option<Dec>,
    pub max_qty: Option<Dec>,
    /// Zero removes the minimum.
    pub min_notional: Option<Dec>,
    pub maker_fee_bps: Option<i32>,
    pub taker_fee_bps: Option<i32>,
    /// Zero disables the collar.
    pub collar_bps: Option<u32>,
    pub static_band_bps: Option<u32>,
    pub dynamic_band_bps: Option<u32>,
    pub volatility_auction_ns: Option<u64>,
    /// The smallest value of a hidden order, as at listing (zero: any);
    /// resting hidden orders worth less are cancelled (`rules_changed`).
    /// A listing that takes no hidden orders starts taking them.
    pub hidden_min_notional: Option<Dec>,
}

impl SetInstrumentRules {
    /// A command that names only the symbol changes nothing.
    pub fn is_empty(&self) -> bool {
        self.tick_size.is_none()
            && self.lot_size.is_none()
            && self.min_qty.is_none()
            && self.max_qty.is_none()
            && self.min_notional.is_none()
            && self.maker_fee_bps.is_none()
            && self.taker_fee_bps.is_none()
            && self.collar_bps.is_none()
            && self.static_band_bps.is_none()
            && self.dynamic_band_bps.is_none()
            && self.volatility_auction_ns.is_none()
            && self.hidden_min_notional.is_none()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub account: AccountId,
    pub asset: AssetCode,
    pub amount: Dec,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalTransfer {
    pub from: AccountId,
    pub to: AccountId,
    pub asset: AssetCode,
    pub amount: Dec,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub account: AccountId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub side: Side,
    pub order_type: OrderType,
    /// Required for limit orders, refused for market orders.
    pub price: Option<Dec>,
    pub qty: Dec,
    pub tif: TimeInForce,
    pub post_only: bool,
    pub stp: SelfTradePrevention,
    /// What only stops, icebergs, orders sized by funds, good-till-date,
    /// one-cancels-other and minimum-quantity orders carry. Boxed so that the plain limit
    /// and market orders that are nearly all of the traffic stay small.
    pub ext: Option<Box<PlaceExt>>,
}

/// The rarer parts of an order. An order whose `ext` has every field
/// `None` is the same order as one without `ext`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlaceExt {
    /// Trigger price of a stop or stop-limit order.
    pub stop_price: Option<Dec>,
    /// A trailing stop: the stop price follows the best last trade price
    /// at this distance.
    pub trailing: Option<Trailing>,
    /// An iceberg: the quantity shown on the book at a time.
    pub display_qty: Option<Dec>,
    /// A market order sized by quote amount instead of quantity; `qty`
    /// is then zero.
    pub funds: Option<Dec>,
    /// Expire time of a good-till-date order, nanoseconds of log time.
    pub expire_ts: Option<u64>,
    /// One-cancels-other: the client order id of an open order of the same
    /// account that is canceled when this one trades or triggers, and the
    /// other way round.
    pub oco_with: Option<ClientOrderId>,
    /// Minimum acceptable quantity: at entry the order trades at least
    /// this much at once or is canceled whole; what it leaves rests as an
    /// ordinary order, held to nothing more.
    pub min_qty: Option<Dec>,
    /// A hidden (non-displayed) limit order: it rests and trades like any
    /// other but is never shown in market data, and trades after the
    /// displayed orders at its price.
    pub hidden: bool,
}

/// How far a trailing stop's trigger stays from the price it follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trailing {
    /// A fixed price distance.
    Amount(Dec),
    /// A distance in basis points of the followed price.
    Bps(u32),
}

impl Place {
    /// The order's rarer parts, or the default (all `None`).
    pub fn ext(&self) -> &PlaceExt {
        static NONE: PlaceExt = PlaceExt {
            stop_price: None,
            trailing: None,
            display_qty: None,
            funds: None,
            expire_ts: None,
            oco_with: None,
            min_qty: None,
            hidden: false,
        };
        self.ext.as_deref().unwrap_or(&NONE)
    }
}

/// Names an order either by the exchange's id or by the client's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderRef {
    Id(OrderId),
    Client(ClientOrderId),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancel {
    pub account: AccountId,
    pub order: OrderRef,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replace {
    pub account: AccountId,
    pub order: OrderRef,
    /// The client's id for the order from now on; `None` keeps the old one.
    pub new_client_order_id: Option<ClientOrderId>,
    /// New limit price; `None` keeps the old one.
    pub price: Option<Dec>,
    /// New total quantity, filled quantity included; `None` keeps it.
    pub qty: Option<Dec>,
}

/// A replace with a new stop price for an untriggered stop or stop-limit
/// order; refused on any other order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplaceStop {
    pub replace: Replace,
    pub stop_price: Dec,
}

/// An account's pre-trade limits, replacing any it had; every field `None`
/// clears them. Quantities are in the traded instrument's base asset and
/// notionals in its quote asset, whichever instrument an order is for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetRiskLimits {
    pub account: AccountId,
    pub max_order_qty: Option<Dec>,
    pub max_order_notional: Option<Dec>,
    pub max_open_orders: Option<u32>,
    /// Fat-finger band: half-width in basis points around the
    /// instrument's reference price.
    pub price_band_bps: Option<u32>,
}

/// Market-maker protection for one account on one instrument, replacing
/// any it had; neither threshold set removes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetMmp {
    pub account: AccountId,
    pub symbol: Symbol,
    /// Length of the window fills are counted in, nanoseconds of log time.
    pub window_ns: u64,
    /// Trips when the window's filled quantity exceeds this (base units).
    pub max_qty: Option<Dec>,
    /// Trips when the window's number of fills exceeds this.
    pub max_count: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MassCancel {
    pub account: AccountId,
    pub symbol: Option<Symbol>,
}

// The core reads a stream of these at millions a second, and fetching them
// was most of its cache misses when one was 288 bytes: two cache lines is
// the budget (hence the boxed listing and the 16-byte `Dec`).
const _: () = assert!(std::mem::size_of::<Stamped>() <= 128);
