//! The JSON shapes of orders, fills and private-stream messages, written
//! straight from the records and events that hold them.
//!
//! One definition serves both paths, each writing them straight to text
//! by hand: REST's order answers in their keys' order
//! ([`super::rest_text`]), the WebSocket's in the fields' order
//! ([`super::wire_text`]); each is held by a property test to the bytes
//! `serde_json` wrote for the same shape, and skips building a map per
//! message and serde's per-field machinery.

use exchange_types::{
    lifecycle, order_updates, AccountId, Change, Dec, Event, EventKind, MmpState, Rejected,
    TrailingUnits, AMOUNT_SCALE,
};
use serde::{Serialize, Serializer};

use exchange_node::history::{Fill, OrderDetails, OrderRecord, OrderStatus};

/// Units written as a decimal string, without an intermediate `String`.
#[derive(Clone, Copy, Debug)]
pub struct Units(pub u64);

impl Serialize for Units {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Dec::from_units(self.0).text().as_str())
    }
}

/// Signed units (fees: negative is a rebate).
#[derive(Clone, Copy, Debug)]
pub struct SignedUnits(pub i64);

impl Serialize for SignedUnits {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Dec::new(self.0, AMOUNT_SCALE as u8).text().as_str())
    }
}

#[derive(Serialize)]
pub struct FillView<'a> {
    pub trade_id: u64,
    pub order_id: u64,
    pub symbol: &'a str,
    pub side: &'a str,
    pub price: Units,
    pub qty: Units,
    pub fee: SignedUnits,
    pub liquidity: &'a str,
    pub ts: u64,
}

impl<'a> From<&'a Fill> for FillView<'a> {
    fn from(fill: &'a Fill) -> Self {
        FillView {
            trade_id: fill.trade_id,
            order_id: fill.order_id,
            symbol: &fill.symbol,
            side: &fill.side,
            price: Units(fill.price),
            qty: Units(fill.qty),
            fee: SignedUnits(fill.fee),
            liquidity: &fill.liquidity,
            ts: fill.ts,
        }
    }
}

/// One order's fill in a trade, from the order fold's update.
fn fill_view<'a>(update: &lifecycle::OrderUpdate<'a>, ts: u64) -> Option<FillView<'a>> {
    let Change::Fill(fill) = update.change else {
        return None;
    };
    Some(FillView {
        trade_id: fill.trade.trade_id,
        order_id: update.order_id,
        symbol: fill.trade.symbol.as_str(),
        side: fill.side.as_str(),
        price: Units(fill.trade.price),
        qty: Units(fill.trade.qty),
        fee: SignedUnits(fill.fee),
        liquidity: fill.liquidity.as_str(),
        ts,
    })
}

/// The fills a trade event gives `account` (two when it traded with
/// itself), read as the history reads them.
pub fn fills_of_trade(event: &Event, account: AccountId) -> impl Iterator<Item = FillView<'_>> {
    order_updates(&event.kind)
        .filter(move |update| update.account == account)
        .filter_map(move |update| fill_view(&update, event.ts))
}

/// The fills among `events` of the order `order_id`.
pub fn fills_of_order(events: &[Event], order_id: u64) -> Vec<FillView<'_>> {
    events
        .iter()
        .flat_map(|event| {
            order_updates(&event.kind)
                .filter(move |update| update.order_id == order_id)
                .filter_map(move |update| fill_view(&update, event.ts))
        })
        .collect()
}

#[derive(Serialize)]
pub struct OrderView<'a> {
    pub order_id: u64,
    pub client_order_id: &'a str,
    pub symbol: &'a str,
    pub side: &'a str,
    #[serde(rename = "type")]
    pub order_type: &'a str,
    pub price: Option<Units>,
    pub qty: Units,
    pub filled_qty: Units,
    pub remaining_qty: Units,
    pub status: OrderStatus,
    pub tif: &'a str,
    pub created_ts: u64,
    pub updated_ts: u64,
    #[serde(flatten)]
    pub details: Option<DetailsView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fills: Option<Vec<FillView<'a>>>,
}

/// A stop's, iceberg's, funds-sized, good-till-date or paired order's
/// fields, each only when set; prices and quantities as decimals.
#[derive(Serialize)]
pub struct DetailsView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_price: Option<Units>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trailing_amount: Option<Units>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trailing_bps: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_qty: Option<Units>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub funds: Option<Units>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_ts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oco_with: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_ts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_price: Option<Units>,
    /// Only on a hidden order: shown to its owner.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The minimum acceptable quantity the order was entered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_qty: Option<Units>,
}

impl<'a> DetailsView<'a> {
    fn new(details: &'a OrderDetails) -> Self {
        DetailsView {
            stop_price: details.stop_price.map(Units),
            trailing_amount: details.trailing_amount.map(Units),
            trailing_bps: details.trailing_bps,
            display_qty: details.display_qty.map(Units),
            funds: details.funds.map(Units),
            expire_ts: details.expire_ts,
            oco_with: details.oco_with.as_ref().map(|id| id.as_str()),
            triggered_ts: details.triggered_ts,
            triggered_price: details.triggered_price.map(Units),
            hidden: details.hidden,
            min_qty: details.min_qty.map(Units),
        }
    }
}

impl<'a> OrderView<'a> {
    /// The order as recorded, with `fills` if given.
    pub fn new(record: &'a OrderRecord, fills: Option<Vec<FillView<'a>>>) -> Self {
        let remaining = if record.status.is_open() {
            record.qty.saturating_sub(record.filled_qty)
        } else {
            0
        };
        OrderView {
            order_id: record.order_id,
            client_order_id: record.client_order_id.as_str(),
            symbol: record.symbol.as_str(),
            side: record.side.as_str(),
            order_type: record.order_type.as_str(),
            price: record.price.map(Units),
            qty: Units(record.qty),
            filled_qty: Units(record.filled_qty),
            remaining_qty: Units(remaining),
            status: record.status,
            tif: record.tif.as_str(),
            created_ts: record.created_ts,
            updated_ts: record.updated_ts,
            details: record.details.as_deref().map(DetailsView::new),
            fills,
        }
    }
}

/// One message of the WebSocket private stream.
#[derive(Serialize)]
#[serde(untagged)]
pub enum PrivateMessage<'a> {
    Order(OrderUpdate<'a>),
    Fill {
        #[serde(rename = "type")]
        kind: &'static str,
        seq: u64,
        #[serde(flatten)]
        fill: FillView<'a>,
    },
    /// What the operator or a protection did to the account itself: a
    /// member must see its own suspension or tripped protection as it
    /// happens, not only the cancels it caused.
    Account {
        #[serde(rename = "type")]
        kind: &'static str,
        event: &'static str,
        seq: u64,
        ts: u64,
        #[serde(flatten)]
        fields: AccountFields<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum AccountFields<'a> {
    Status {
        status: &'static str,
        canceled: u32,
    },
    Mmp {
        symbol: &'a str,
        state: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        filled_qty: Option<Units>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fills: Option<u32>,
    },
}

/// The account a control event concerns, and its fields.
fn account_event(kind: &EventKind) -> Option<(AccountId, AccountFields<'_>)> {
    match kind {
        EventKind::AccountStatus(e) => Some((
            e.account,
            AccountFields::Status {
                status: if e.suspended { "suspended" } else { "active" },
                canceled: e.canceled,
            },
        )),
        EventKind::Mmp(e) => {
            let (filled_qty, fills) = match e.state {
                MmpState::Tripped { filled_qty, fills } => (Some(Units(filled_qty)), Some(fills)),
                _ => (None, None),
            };
            Some((
                e.account,
                AccountFields::Mmp {
                    symbol: e.symbol.as_str(),
                    state: e.state.as_str(),
                    filled_qty,
                    fills,
                },
            ))
        }
        _ => None,
    }
}

/// An order update: what is common to every event, then its own fields.
#[derive(Serialize)]
pub struct OrderUpdate<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) event: &'static str,
    pub(crate) seq: u64,
    pub(crate) ts: u64,
    #[serde(flatten)]
    pub(crate) fields: UpdateFields<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum UpdateFields<'a> {
    Accepted {
        order_id: u64,
        client_order_id: &'a str,
        symbol: &'a str,
        side: &'static str,
        order_type: &'static str,
        price: Option<Units>,
        qty: Units,
        tif: &'static str,
        post_only: bool,
        stp: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop_price: Option<Units>,
        #[serde(skip_serializing_if = "Option::is_none")]
        trailing_amount: Option<Units>,
        #[serde(skip_serializing_if = "Option::is_none")]
        trailing_bps: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        oco_with: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        display_qty: Option<Units>,
        #[serde(skip_serializing_if = "Option::is_none")]
        funds: Option<Units>,
        /// Log time (ns) a good-till-date order expires at.
        #[serde(skip_serializing_if = "Option::is_none")]
        expire_ts: Option<u64>,
        /// Only on a hidden order.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        hidden: bool,
        /// Only with a minimum acceptable quantity.
        #[serde(skip_serializing_if = "Option::is_none")]
        min_qty: Option<Units>,
    },
    /// A stop's trigger was reached; the order now enters the book.
    Triggered {
        order_id: u64,
        client_order_id: &'a str,
        symbol: &'a str,
        stop_price: Units,
        last_price: Units,
        qty: Units,
    },
    Rejected {
        command: &'static str,
        order_id: Option<u64>,
        client_order_id: Option<&'a str>,
        symbol: Option<&'a str>,
        code: &'static str,
        message: &'static str,
    },
    Canceled {
        order_id: u64,
        client_order_id: &'a str,
        symbol: &'a str,
        reason: &'static str,
        canceled_qty: Units,
        filled_qty: Units,
        leaves_qty: Units,
    },
    Replaced {
        order_id: u64,
        old_client_order_id: &'a str,
        client_order_id: &'a str,
        symbol: &'a str,
        price: Units,
        qty: Units,
        leaves_qty: Units,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop_price: Option<Units>,
    },
    Expired {
        order_id: u64,
        client_order_id: &'a str,
        symbol: &'a str,
        expired_qty: Units,
        filled_qty: Units,
    },
}

fn update<'a>(event: &Event, name: &'static str, fields: UpdateFields<'a>) -> PrivateMessage<'a> {
    PrivateMessage::Order(OrderUpdate {
        kind: "order",
        event: name,
        seq: event.seq,
        ts: event.ts,
        fields,
    })
}

/// `account`'s order updates and fills among one entry's events, in event
/// order.
pub fn private_messages(events: &[Event], account: AccountId) -> Vec<PrivateMessage<'_>> {
    let mut out = Vec::new();
    for event in events {
        if let Some((owner, fields)) = account_event(&event.kind) {
            if owner == account {
                out.push(PrivateMessage::Account {
                    kind: "account",
                    event: event.kind.name(),
                    seq: event.seq,
                    ts: event.ts,
                    fields,
                });
            }
            continue;
        }
        if let EventKind::Rejected(rejected) = &event.kind {
            if rejected.account == Some(account) {
                out.push(update(event, "rejected", rejected_fields(rejected)));
            }
            continue;
        }
        for order in order_updates(&event.kind).filter(|u| u.account == account) {
            let message = match (fill_view(&order, event.ts), order_fields(order.change)) {
                (Some(fill), _) => PrivateMessage::Fill {
                    kind: "fill",
                    seq: event.seq,
                    fill,
                },
                (None, Some(fields)) => update(event, event.kind.name(), fields),
                (None, None) => continue,
            };
            out.push(message);
        }
    }
    out
}

fn rejected_fields(e: &Rejected) -> UpdateFields<'_> {
    UpdateFields::Rejected {
        command: e.command,
        order_id: e.order_id,
        client_order_id: e.client_order_id.as_ref().map(|c| c.as_str()),
        symbol: e.symbol.as_ref().map(|s| s.as_str()),
        code: e.reason.as_str(),
        message: e.reason.message(),
    }
}

/// The fields of an order's own event; `None` for a fill, which is a
/// message of its own.
fn order_fields(change: Change<'_>) -> Option<UpdateFields<'_>> {
    let fields = match change {
        Change::New(e) => UpdateFields::Accepted {
            order_id: e.order_id,
            client_order_id: e.client_order_id.as_str(),
            symbol: e.symbol.as_str(),
            side: e.side.as_str(),
            order_type: e.order_type.as_str(),
            price: e.price.map(Units),
            qty: Units(e.qty),
            tif: e.tif.as_str(),
            post_only: e.post_only,
            stp: e.stp.as_str(),
            stop_price: e.ext.as_ref().and_then(|x| x.stop_price).map(Units),
            trailing_amount: e.ext.as_ref().and_then(|x| match x.trailing {
                Some(TrailingUnits::Amount(amount)) => Some(Units(amount)),
                _ => None,
            }),
            trailing_bps: e.ext.as_ref().and_then(|x| match x.trailing {
                Some(TrailingUnits::Bps(bps)) => Some(bps),
                _ => None,
            }),
            oco_with: e
                .ext
                .as_ref()
                .and_then(|x| x.oco_with.as_ref())
                .map(|c| c.as_str()),
            display_qty: e.ext.as_deref().and_then(|x| x.display_qty).map(Units),
            funds: e.ext.as_deref().and_then(|x| x.funds).map(Units),
            expire_ts: e.ext.as_deref().and_then(|x| x.expire_ts),
            hidden: e.ext.as_deref().is_some_and(|x| x.hidden),
            min_qty: e.ext.as_deref().and_then(|x| x.min_qty).map(Units),
        },
        Change::Triggered(e) => UpdateFields::Triggered {
            order_id: e.order_id,
            client_order_id: e.client_order_id.as_str(),
            symbol: e.symbol.as_str(),
            stop_price: Units(e.stop_price),
            last_price: Units(e.last_price),
            qty: Units(e.qty),
        },
        Change::Canceled(e) => UpdateFields::Canceled {
            order_id: e.order_id,
            client_order_id: e.client_order_id.as_str(),
            symbol: e.symbol.as_str(),
            reason: e.reason.as_str(),
            canceled_qty: Units(e.canceled_qty),
            filled_qty: Units(e.filled_qty),
            leaves_qty: Units(e.leaves_qty),
        },
        Change::Replaced(e) => UpdateFields::Replaced {
            order_id: e.order_id,
            old_client_order_id: e.old_client_order_id.as_str(),
            client_order_id: e.client_order_id.as_str(),
            symbol: e.symbol.as_str(),
            price: Units(e.price),
            qty: Units(e.qty),
            leaves_qty: Units(e.leaves_qty),
            stop_price: e.stop_price.map(|p| Units(p.get())),
        },
        Change::Expired(e) => UpdateFields::Expired {
            order_id: e.order_id,
            client_order_id: e.client_order_id.as_str(),
            symbol: e.symbol.as_str(),
            expired_qty: Units(e.expired_qty),
            filled_qty: Units(e.filled_qty),
        },
        Change::Fill(_) => return None,
    };
    Some(fields)
}

/// The accounts whose orders `events` touch, each once: who the private
/// stream sends this entry to.
pub fn accounts_of(events: &[Event], out: &mut Vec<AccountId>) {
    out.clear();
    for event in events {
        let rejected = match &event.kind {
            EventKind::Rejected(rejected) => rejected.account,
            kind => account_event(kind).map(|(account, _)| account),
        };
        let touched = order_updates(&event.kind).map(|u| u.account);
        for account in touched.chain(rejected) {
            if !out.contains(&account) {
                out.push(account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use exchange_types::{format_signed_units, format_units};

    use super::*;

    #[test]
    fn units_read_exactly_as_the_decimal_type_writes_them() {
        let mut values = vec![
            0,
            1,
            9,
            10,
            99_999_999,
            100_000_000,
            100_000_001,
            6_000_000_000_000,
            150_000,
            u64::MAX,
            u64::MAX - 1,
        ];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Every magnitude, and round numbers (trailing zeros) often.
            values.push(x >> (x % 64));
            values.push((x % 1_000_000) * 10u64.pow((x % 12) as u32));
        }
        for units in values {
            let text = serde_json::to_string(&Units(units)).expect("serialises");
            assert_eq!(text, format!("\"{}\"", format_units(units)), "{units}");
            let signed = units as i64;
            let text = serde_json::to_string(&SignedUnits(signed)).expect("serialises");
            assert_eq!(
                text,
                format!("\"{}\"", format_signed_units(signed)),
                "{signed}"
            );
        }
        assert_eq!(
            serde_json::to_string(&SignedUnits(i64::MIN)).unwrap(),
            format!("\"{}\"", format_signed_units(i64::MIN))
        );
    }
    #[test]
    fn a_replaced_stop_carries_its_stop_price_and_another_order_none() {
        let id = |text: &str| exchange_types::ClientOrderId::new(text).unwrap();
        let stop = exchange_types::event::Replaced {
            account: 1,
            order_id: 2,
            old_client_order_id: id("a"),
            client_order_id: id("a"),
            symbol: exchange_types::Symbol::new("BTC-USD").unwrap(),
            price: 10_600_000_000,
            qty: 100_000_000,
            leaves_qty: 100_000_000,
            stop_price: std::num::NonZeroU64::new(9_550_000_000),
        };
        let json = |r: &exchange_types::event::Replaced| {
            let fields = order_fields(Change::Replaced(r)).expect("an order update");
            serde_json::to_value(fields).expect("serialises")
        };
        assert_eq!(json(&stop)["stop_price"], "95.5");
        let plain = exchange_types::event::Replaced {
            stop_price: None,
            ..stop
        };
        assert!(json(&plain).get("stop_price").is_none());
    }
}
