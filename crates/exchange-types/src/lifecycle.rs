//! An order's life, read from the core's events: the one reading that
//! every follower of orders (the node's open orders, the reporting store,
//! the FIX execution reports, the private stream, the bench) shares.
//!
//! [`order_updates`] turns one event into the changes it makes to orders:
//! none for most kinds, one for an order's own events, two for a trade
//! (the maker's fill and the taker's). [`Progress::apply`] and
//! [`OrderState::apply`] fold those changes into an order's state, so a
//! consumer only maps an [`OrderUpdate`] to its own output.

use crate::event::{Accepted, Canceled, EventKind, Expired, Replaced, Trade, Triggered};
use crate::ids::{AccountId, ClientOrderId, OrderId, Symbol};
use crate::order::{OrderType, Side, TimeInForce};

/// Where an order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum OrderStatus {
    New,
    PartiallyFilled,
    Filled,
    Canceled,
    Expired,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 5] = [
        OrderStatus::New,
        OrderStatus::PartiallyFilled,
        OrderStatus::Filled,
        OrderStatus::Canceled,
        OrderStatus::Expired,
    ];

    /// The snake_case name used on the wire and in the reporting store.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::New => "new",
            OrderStatus::PartiallyFilled => "partially_filled",
            OrderStatus::Filled => "filled",
            OrderStatus::Canceled => "canceled",
            OrderStatus::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<OrderStatus> {
        OrderStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Events can still reach the order.
    pub fn is_open(self) -> bool {
        matches!(self, OrderStatus::New | OrderStatus::PartiallyFilled)
    }
}

/// Which side of a trade an order was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Liquidity {
    /// It rested on the book.
    Maker,
    /// It came in and took.
    Taker,
}

impl Liquidity {
    pub fn as_str(self) -> &'static str {
        match self {
            Liquidity::Maker => "maker",
            Liquidity::Taker => "taker",
        }
    }
}

/// One order's part in a trade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill<'a> {
    pub trade: &'a Trade,
    pub liquidity: Liquidity,
    /// The order's side.
    pub side: Side,
    /// Quote units the order paid; negative is a rebate.
    pub fee: i64,
    /// What the order still has open after the trade.
    pub leaves_qty: u64,
}

/// What an event did to one order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change<'a> {
    /// The order was accepted: it exists from here on.
    New(&'a Accepted),
    Fill(Fill<'a>),
    /// The order left the book or, for a self-trade decrement with
    /// quantity left, only shrank.
    Canceled(&'a Canceled),
    Replaced(&'a Replaced),
    Expired(&'a Expired),
    /// A stop's trigger was reached: the order enters the book now.
    Triggered(&'a Triggered),
}

/// Where a stop order stands; orders of other types are never stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopState {
    NotStop,
    /// Held off the book until the last price reaches its stop price.
    Untriggered,
    /// Its stop price was reached: from then on it is an order like others.
    Triggered,
}

impl StopState {
    /// An order of this type when accepted.
    pub fn of(order_type: OrderType) -> StopState {
        match order_type {
            OrderType::Stop
            | OrderType::StopLimit
            | OrderType::MarketIfTouched
            | OrderType::LimitIfTouched => StopState::Untriggered,
            OrderType::Limit
            | OrderType::Market
            | OrderType::MarketToLimit
            | OrderType::Midpoint => StopState::NotStop,
        }
    }
}

/// One change to one order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderUpdate<'a> {
    pub order_id: OrderId,
    pub account: AccountId,
    pub change: Change<'a>,
}

impl<'a> OrderUpdate<'a> {
    pub fn symbol(&self) -> &'a Symbol {
        match self.change {
            Change::New(e) => &e.symbol,
            Change::Fill(f) => &f.trade.symbol,
            Change::Canceled(e) => &e.symbol,
            Change::Replaced(e) => &e.symbol,
            Change::Expired(e) => &e.symbol,
            Change::Triggered(e) => &e.symbol,
        }
    }

    /// The client's id for the order, as the event names it (after a
    /// replace, the new one); a trade does not carry it.
    pub fn client_order_id(&self) -> Option<&'a ClientOrderId> {
        match self.change {
            Change::New(e) => Some(&e.client_order_id),
            Change::Fill(_) => None,
            Change::Canceled(e) => Some(&e.client_order_id),
            Change::Replaced(e) => Some(&e.client_order_id),
            Change::Expired(e) => Some(&e.client_order_id),
            Change::Triggered(e) => Some(&e.client_order_id),
        }
    }

    /// Quantity open on the order afterwards.
    pub fn leaves_qty(&self) -> u64 {
        match self.change {
            Change::New(e) => e.qty,
            Change::Fill(f) => f.leaves_qty,
            Change::Canceled(e) => e.leaves_qty,
            Change::Replaced(e) => e.leaves_qty,
            Change::Expired(_) => 0,
            Change::Triggered(e) => e.qty,
        }
    }

    /// The order is closed afterwards: no event reaches it any more.
    pub fn closes(&self) -> bool {
        self.leaves_qty() == 0
    }
}

/// The changes `kind` makes to orders, in the order a follower applies
/// them (a trade: the maker's fill, then the taker's).
pub fn order_updates(kind: &EventKind) -> impl Iterator<Item = OrderUpdate<'_>> + Clone {
    let (first, second) = match kind {
        EventKind::Accepted(e) => (Some(update(e.order_id, e.account, Change::New(e))), None),
        EventKind::Trade(t) => {
            let [maker, taker] = fills(t);
            (Some(maker), Some(taker))
        }
        EventKind::Canceled(e) => (
            Some(update(e.order_id, e.account, Change::Canceled(e))),
            None,
        ),
        EventKind::Replaced(e) => (
            Some(update(e.order_id, e.account, Change::Replaced(e))),
            None,
        ),
        EventKind::Expired(e) => (
            Some(update(e.order_id, e.account, Change::Expired(e))),
            None,
        ),
        EventKind::Triggered(e) => (
            Some(update(e.order_id, e.account, Change::Triggered(e))),
            None,
        ),
        EventKind::InstrumentAdded(_)
        | EventKind::Status(_)
        | EventKind::Rejected(_)
        | EventKind::Balance(_)
        | EventKind::Book(_)
        | EventKind::MassCanceled(_)
        | EventKind::RiskLimits(_)
        | EventKind::AccountStatus(_)
        | EventKind::Mmp(_)
        | EventKind::SubAccountLinked(_)
        | EventKind::Phase(_)
        | EventKind::Indicative(_)
        | EventKind::Auction(_)
        | EventKind::InstrumentRules(_)
        | EventKind::ReferencePrice(_)
        | EventKind::Error(_) => (None, None),
    };
    first.into_iter().chain(second)
}

fn update(order_id: OrderId, account: AccountId, change: Change<'_>) -> OrderUpdate<'_> {
    OrderUpdate {
        order_id,
        account,
        change,
    }
}

/// The maker's and the taker's fill in a trade.
pub fn fills(trade: &Trade) -> [OrderUpdate<'_>; 2] {
    let maker = Fill {
        trade,
        liquidity: Liquidity::Maker,
        side: trade.aggressor_side.opposite(),
        fee: trade.maker_fee,
        leaves_qty: trade.maker_leaves_qty,
    };
    let taker = Fill {
        trade,
        liquidity: Liquidity::Taker,
        side: trade.aggressor_side,
        fee: trade.taker_fee,
        leaves_qty: trade.taker_leaves_qty,
    };
    [
        update(
            trade.maker_order_id,
            trade.maker_account,
            Change::Fill(maker),
        ),
        update(
            trade.taker_order_id,
            trade.taker_account,
            Change::Fill(taker),
        ),
    ]
}

/// What an order's events change: the quantities, the price and the
/// status. Kept apart from the order's fixed fields so that a consumer
/// that keeps those in its own form (text, for an API record) still
/// advances the order here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Units; `None` for a market order.
    pub price: Option<u64>,
    /// Total quantity, filled included (units).
    pub qty: u64,
    pub filled_qty: u64,
    /// Sum of price × quantity (units × units) over the fills, for the
    /// average price.
    pub fill_notional: u128,
    pub status: OrderStatus,
}

impl Progress {
    pub fn new(accepted: &Accepted) -> Progress {
        Progress {
            price: accepted.price,
            qty: accepted.qty,
            filled_qty: 0,
            fill_notional: 0,
            status: OrderStatus::New,
        }
    }

    /// Applies one change to this order.
    pub fn apply(&mut self, change: &Change<'_>) {
        match change {
            Change::New(accepted) => *self = Progress::new(accepted),
            Change::Fill(fill) => {
                let (price, qty) = (fill.trade.price, fill.trade.qty);
                self.filled_qty = self.filled_qty.saturating_add(qty);
                self.fill_notional += u128::from(price) * u128::from(qty);
                self.status = if fill.leaves_qty == 0 {
                    OrderStatus::Filled
                } else {
                    OrderStatus::PartiallyFilled
                };
            }
            Change::Canceled(canceled) => {
                if canceled.leaves_qty > 0 {
                    // Only a self-trade decrement leaves quantity: the
                    // order stays, smaller. A full cancel keeps the
                    // quantity the client asked for.
                    self.qty = self.qty.saturating_sub(canceled.canceled_qty);
                } else {
                    self.status = OrderStatus::Canceled;
                }
            }
            Change::Replaced(replaced) => {
                self.price = Some(replaced.price);
                self.qty = replaced.qty;
                if replaced.leaves_qty == 0 {
                    // Replaced down to what had already filled.
                    self.status = OrderStatus::Filled;
                }
            }
            Change::Expired(_) => self.status = OrderStatus::Expired,
            // Nothing filled or changed size: the order is still new.
            Change::Triggered(_) => {}
        }
    }

    /// Quantity still open: zero once the order is closed.
    pub fn leaves_qty(&self) -> u64 {
        if self.status.is_open() {
            self.qty.saturating_sub(self.filled_qty)
        } else {
            0
        }
    }

    /// Average fill price in units (rounded down); 0 before any fill.
    pub fn avg_price(&self) -> u64 {
        match u128::from(self.filled_qty) {
            0 => 0,
            filled => u64::try_from(self.fill_notional / filled).unwrap_or(u64::MAX),
        }
    }
}

/// An order as its events leave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderState {
    pub order_id: OrderId,
    pub account: AccountId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub side: Side,
    pub order_type: OrderType,
    pub tif: TimeInForce,
    pub stop: StopState,
    pub progress: Progress,
}

impl OrderState {
    pub fn new(accepted: &Accepted) -> OrderState {
        OrderState {
            order_id: accepted.order_id,
            account: accepted.account,
            client_order_id: accepted.client_order_id,
            symbol: accepted.symbol,
            side: accepted.side,
            order_type: accepted.order_type,
            tif: accepted.tif,
            stop: StopState::of(accepted.order_type),
            progress: Progress::new(accepted),
        }
    }

    /// Applies one change to this order (the caller matched the update's
    /// order id to it).
    pub fn apply(&mut self, change: &Change<'_>) {
        match change {
            Change::New(accepted) => *self = OrderState::new(accepted),
            Change::Replaced(replaced) => {
                self.client_order_id = replaced.client_order_id;
                self.progress.apply(change);
            }
            Change::Triggered(_) => self.stop = StopState::Triggered,
            _ => self.progress.apply(change),
        }
    }

    pub fn is_open(&self) -> bool {
        self.progress.status.is_open()
    }

    pub fn leaves_qty(&self) -> u64 {
        self.progress.leaves_qty()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::event::Event;
    use crate::order::SelfTradePrevention;
    use crate::reject::CancelReason;

    fn coid(text: &str) -> ClientOrderId {
        ClientOrderId::new(text).unwrap()
    }

    fn sym() -> Symbol {
        Symbol::new("BTC-USD").unwrap()
    }

    fn accepted(order_id: OrderId, account: AccountId, side: Side, qty: u64) -> Accepted {
        Accepted {
            account,
            client_order_id: coid("a"),
            order_id,
            symbol: sym(),
            side,
            order_type: OrderType::Limit,
            price: Some(100),
            qty,
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        }
    }

    fn trade(qty: u64, maker_leaves_qty: u64, taker_leaves_qty: u64) -> Trade {
        Trade {
            trade_id: 9,
            symbol: sym(),
            price: 100,
            qty,
            maker_order_id: 1,
            taker_order_id: 2,
            maker_account: 7,
            taker_account: 8,
            aggressor_side: Side::Buy,
            maker_fee: -1,
            taker_fee: 2,
            maker_leaves_qty,
            taker_leaves_qty,
            midpoint: false,
        }
    }

    fn canceled(canceled_qty: u64, filled_qty: u64, leaves_qty: u64) -> Canceled {
        Canceled {
            account: 7,
            order_id: 1,
            client_order_id: coid("a"),
            symbol: sym(),
            reason: CancelReason::Requested,
            canceled_qty,
            filled_qty,
            leaves_qty,
        }
    }

    fn replaced(price: u64, qty: u64, leaves_qty: u64) -> Replaced {
        Replaced {
            account: 7,
            order_id: 1,
            old_client_order_id: coid("a"),
            client_order_id: coid("b"),
            symbol: sym(),
            price,
            qty,
            leaves_qty,
            stop_price: None,
        }
    }

    #[test]
    fn a_stop_is_untriggered_until_its_triggered_event_and_stays_new() {
        let stop = Accepted {
            order_type: OrderType::StopLimit,
            ..accepted(1, 7, Side::Buy, 5)
        };
        let mut state = OrderState::new(&stop);
        assert_eq!(state.stop, StopState::Untriggered);
        let kind = EventKind::Triggered(crate::event::Triggered {
            account: 7,
            order_id: 1,
            client_order_id: coid("a"),
            symbol: sym(),
            stop_price: 105,
            last_price: 106,
            qty: 5,
        });
        let updates: Vec<_> = order_updates(&kind).collect();
        assert_eq!(updates.len(), 1);
        assert_eq!((updates[0].order_id, updates[0].leaves_qty()), (1, 5));
        assert!(!updates[0].closes());
        state.apply(&updates[0].change);
        assert_eq!(state.stop, StopState::Triggered);
        assert_eq!(state.progress.status, OrderStatus::New);
        assert_eq!(state.leaves_qty(), 5);
        let plain = OrderState::new(&accepted(2, 7, Side::Buy, 5));
        assert_eq!(plain.stop, StopState::NotStop);
    }

    #[test]
    fn a_trade_updates_the_maker_then_the_taker() {
        let kind = EventKind::Trade(trade(4, 6, 0));
        let updates: Vec<_> = order_updates(&kind).collect();
        let sides: Vec<_> = updates
            .iter()
            .map(|u| match u.change {
                Change::Fill(f) => (u.order_id, u.account, f.liquidity, f.side, f.fee),
                other => panic!("not a fill: {other:?}"),
            })
            .collect();
        assert_eq!(
            sides,
            [
                (1, 7, Liquidity::Maker, Side::Sell, -1),
                (2, 8, Liquidity::Taker, Side::Buy, 2),
            ]
        );
        assert_eq!(
            updates.iter().map(|u| u.closes()).collect::<Vec<_>>(),
            [false, true]
        );
        assert_eq!(updates[0].client_order_id(), None);
        assert_eq!(updates[1].symbol(), &sym());
    }

    #[test]
    fn only_order_events_update_orders() {
        let book = EventKind::Book(crate::event::Book {
            symbol: sym(),
            side: Side::Buy,
            price: 1,
            qty: 1,
        });
        assert_eq!(order_updates(&book).count(), 0);
        let accepted = accepted(1, 7, Side::Sell, 10);
        let event = Event {
            seq: 1,
            ts: 1,
            kind: EventKind::Accepted(accepted.clone()),
        };
        let updates: Vec<_> = order_updates(&event.kind).collect();
        assert_eq!(
            updates,
            [OrderUpdate {
                order_id: 1,
                account: 7,
                change: Change::New(&accepted),
            }]
        );
        assert_eq!(updates[0].leaves_qty(), 10);
        assert_eq!(updates[0].client_order_id(), Some(&coid("a")));
    }

    /// (qty, filled, leaves, status)
    fn seen(order: &OrderState) -> (u64, u64, u64, OrderStatus) {
        let p = &order.progress;
        (p.qty, p.filled_qty, order.leaves_qty(), p.status)
    }

    #[test]
    fn an_order_through_fills_a_decrement_and_a_cancel() {
        let mut order = OrderState::new(&accepted(1, 7, Side::Sell, 10));
        assert_eq!(seen(&order), (10, 0, 10, OrderStatus::New));
        let first = trade(4, 6, 0);
        let [maker, _] = fills(&first);
        order.apply(&maker.change);
        assert_eq!(seen(&order), (10, 4, 6, OrderStatus::PartiallyFilled));
        // A self-trade decrement shrinks the order and leaves it open.
        order.apply(&Change::Canceled(&canceled(2, 4, 4)));
        assert_eq!(seen(&order), (8, 4, 4, OrderStatus::PartiallyFilled));
        // A full cancel keeps the quantity asked and closes it.
        order.apply(&Change::Canceled(&canceled(4, 4, 0)));
        assert_eq!(seen(&order), (8, 4, 0, OrderStatus::Canceled));
        assert_eq!(order.progress.avg_price(), 100);
    }

    #[test]
    fn a_replace_changes_the_order_and_closes_it_at_its_fills() {
        let mut order = OrderState::new(&accepted(1, 7, Side::Sell, 10));
        let first = trade(4, 6, 0);
        let [maker, _] = fills(&first);
        order.apply(&maker.change);
        order.apply(&Change::Replaced(&replaced(101, 12, 8)));
        assert_eq!(
            (order.client_order_id, order.progress.price),
            (coid("b"), Some(101))
        );
        assert_eq!(seen(&order), (12, 4, 8, OrderStatus::PartiallyFilled));
        order.apply(&Change::Replaced(&replaced(101, 4, 0)));
        assert_eq!(seen(&order), (4, 4, 0, OrderStatus::Filled));
    }

    #[test]
    fn statuses_read_back_from_their_names() {
        for status in OrderStatus::ALL {
            assert_eq!(OrderStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(OrderStatus::parse("open"), None);
        assert!(OrderStatus::New.is_open() && OrderStatus::PartiallyFilled.is_open());
        assert!(!OrderStatus::Expired.is_open());
    }

    proptest! {
        /// Any run of fills, then a cancel or an expiry of the rest, keeps
        /// filled + open + gone equal to the quantity, and the average
        /// price between the lowest and the highest fill.
        #[test]
        fn fills_and_an_ending_account_for_every_unit(
            qty in 1u64..1_000_000,
            fills_in in proptest::collection::vec((1u64..1_000, 1u64..1_000_000), 0..20),
            expire in any::<bool>(),
        ) {
            let mut order = OrderState::new(&accepted(1, 7, Side::Sell, qty));
            let mut filled = 0;
            let mut prices = Vec::new();
            for (share, price) in fills_in {
                let left = qty - filled;
                if left == 0 {
                    break;
                }
                let part = (share * left / 1_000).clamp(1, left);
                filled += part;
                prices.push(price);
                let trade = Trade { price, ..trade(part, left - part, 0) };
                let [maker, _] = fills(&trade);
                order.apply(&maker.change);
                prop_assert_eq!(order.progress.filled_qty + order.leaves_qty(), qty);
                prop_assert_eq!(order.is_open(), filled < qty);
            }
            let rest = order.leaves_qty();
            if rest > 0 {
                let expired = Expired {
                    account: 7,
                    order_id: 1,
                    client_order_id: coid("a"),
                    symbol: sym(),
                    expired_qty: rest,
                    filled_qty: filled,
                };
                let cancel = canceled(rest, filled, 0);
                let change = if expire {
                    Change::Expired(&expired)
                } else {
                    Change::Canceled(&cancel)
                };
                order.apply(&change);
                let want = if expire { OrderStatus::Expired } else { OrderStatus::Canceled };
                prop_assert_eq!(order.progress.status, want);
            } else {
                prop_assert_eq!(order.progress.status, OrderStatus::Filled);
            }
            prop_assert_eq!(order.progress.filled_qty + rest, qty);
            prop_assert_eq!(order.leaves_qty(), 0);
            if let (Some(low), Some(high)) = (prices.iter().min(), prices.iter().max()) {
                let avg = order.progress.avg_price();
                prop_assert!(*low <= avg && avg <= *high, "{} outside {}..={}", avg, low, high);
            }
        }
    }
}
