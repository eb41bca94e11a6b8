//! What the node keeps beside the engine for the gateways: every open
//! order as the API shows it, and each market's recent public trades.
//!
//! A projection of the core's events, maintained entry by entry in log
//! order (in a running node, on the publisher thread: see
//! [`crate::publisher`]) and saved in the server snapshot. It holds only what trading and the live
//! market views need: an order leaves it when it closes (its record goes
//! out once more with the entry that closed it, [`History::shared_order`]),
//! and trades are kept up to a fixed count per symbol. Closed orders and
//! fills are served from the reporting store (`exchange-reporter`), which
//! keeps the full record.

use crate::limits::TRADES_PER_SYMBOL;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use exchange_types::lifecycle::{order_updates, Change, Progress};
use exchange_types::{
    Accepted, AcceptedExt, AccountId, ClientOrderId, Event, EventKind, OrderId, OrderType, Side,
    Symbol, TimeInForce, TrailingUnits,
};
use serde::{Deserialize, Serialize};

pub use exchange_types::OrderStatus;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderRecord {
    pub order_id: OrderId,
    pub account: AccountId,
    pub client_order_id: ClientOrderId,
    pub symbol: Symbol,
    pub side: Side,
    #[serde(rename = "type")]
    pub order_type: OrderType,
    /// Units; `None` for market orders.
    pub price: Option<u64>,
    pub qty: u64,
    pub filled_qty: u64,
    pub status: OrderStatus,
    pub tif: TimeInForce,
    pub created_ts: u64,
    pub updated_ts: u64,
    /// Sum of price × quantity (units × units) over the order's fills, for
    /// its average price (the FIX gateway's AvgPx after a restart).
    #[serde(default)]
    pub fill_notional: u128,
    /// What only stops, icebergs, funds-sized, good-till-date and paired
    /// orders have; `None` for the plain orders that are most of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<OrderDetails>>,
}

/// An order's rarer parts, in units (docs/server.md, order fields).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrderDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_price: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trailing_amount: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trailing_bps: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_qty: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub funds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_ts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oco_with: Option<ClientOrderId>,
    /// When a stop triggered, and the trade price that reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_ts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_price: Option<u64>,
    /// A hidden order: its owner sees the flag, market data never the
    /// order. Left out when false, so older records keep their bytes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The minimum acceptable quantity it was entered with; left out
    /// when none, so older records keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_qty: Option<u64>,
}

impl OrderDetails {
    fn of(ext: &AcceptedExt) -> OrderDetails {
        let (trailing_amount, trailing_bps) = match ext.trailing {
            Some(TrailingUnits::Amount(amount)) => (Some(amount), None),
            Some(TrailingUnits::Bps(bps)) => (None, Some(bps)),
            None => (None, None),
        };
        OrderDetails {
            stop_price: ext.stop_price,
            trailing_amount,
            trailing_bps,
            display_qty: ext.display_qty,
            funds: ext.funds,
            expire_ts: ext.expire_ts,
            oco_with: ext.oco_with,
            triggered_ts: None,
            triggered_price: None,
            hidden: ext.hidden,
            min_qty: ext.min_qty,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fill {
    pub trade_id: u64,
    pub order_id: OrderId,
    pub symbol: String,
    pub side: String,
    pub price: u64,
    pub qty: u64,
    /// Quote units; negative is a rebate.
    pub fee: i64,
    pub liquidity: String,
    pub ts: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicTrade {
    pub trade_id: u64,
    pub price: u64,
    pub qty: u64,
    pub side: String,
    pub ts: u64,
    /// The auction it executed in (`open`, `close`, `volatility`,
    /// `reopen`); absent for continuous trading and in snapshots written
    /// before auctions were told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auction: Option<String>,
}

/// A market's latest auction that executed something.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuctionRecord {
    pub kind: String,
    pub price: u64,
    pub volume: u64,
    pub ts: u64,
}

impl AuctionRecord {
    pub fn last_auction(&self) -> Option<exchange_marketdata::LastAuction> {
        Some(exchange_marketdata::LastAuction {
            kind: exchange_marketdata::status::parse_auction_kind(&self.kind)?,
            price: self.price,
            volume: self.volume,
            ts: self.ts,
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    // Records are shared, so copying the history for a snapshot (between
    // two entries) copies pointers, not thousands of records; a record
    // changed later is copied then. Hashed rather than ordered: every
    // order event looks its order up on the thread that keeps the history,
    // and with a hundred thousand open orders a tree's walk was a cache
    // miss per level. The rare reads that list orders sort what they
    // find, and a snapshot writes them in id order.
    #[serde(with = "shared::orders")]
    orders: FxHashMap<OrderId, Arc<OrderRecord>>,
    trades: BTreeMap<String, VecDeque<PublicTrade>>,
    /// Each market's latest auction (the core keeps none once it is over).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    auctions: BTreeMap<String, AuctionRecord>,
    /// The auction whose trades follow in the entry being recorded (the
    /// core emits an auction and its trades in one entry).
    #[serde(skip)]
    auction_trades: Option<(exchange_types::Symbol, exchange_types::AuctionTrades)>,
    /// Orders closed by the entry being applied: the answer to it still
    /// shows them. Emptied when the next entry is recorded.
    #[serde(skip)]
    just_closed: Vec<Arc<OrderRecord>>,
}

fn push_bounded<T>(queue: &mut VecDeque<T>, item: T, limit: usize) -> Option<T> {
    queue.push_back(item);
    if queue.len() > limit {
        queue.pop_front()
    } else {
        None
    }
}

impl History {
    /// An open order.
    pub fn order(&self, id: OrderId) -> Option<&OrderRecord> {
        self.orders.get(&id).map(|o| &**o)
    }

    /// The record, shared rather than copied: an open order, or one the
    /// entry just recorded closed.
    pub fn shared_order(&self, id: OrderId) -> Option<Arc<OrderRecord>> {
        self.orders.get(&id).cloned().or_else(|| {
            self.just_closed
                .iter()
                .rev()
                .find(|o| o.order_id == id)
                .cloned()
        })
    }

    /// The account's open orders, newest first.
    pub fn open_orders_of(&self, account: AccountId, symbol: Option<&str>) -> Vec<&OrderRecord> {
        let mut found: Vec<&OrderRecord> = self
            .orders
            .values()
            .map(|o| &**o)
            .filter(|o| o.account == account)
            .filter(|o| symbol.is_none_or(|s| o.symbol.as_str() == s))
            .collect();
        found.sort_unstable_by_key(|o| std::cmp::Reverse(o.order_id));
        found
    }

    /// A market's trades, newest first.
    pub fn trades_of(&self, symbol: &str, limit: usize) -> Vec<&PublicTrade> {
        self.trades
            .get(symbol)
            .map(|t| t.iter().rev().take(limit).collect())
            .unwrap_or_default()
    }

    /// A market's latest auction.
    pub fn last_auction(&self, symbol: &str) -> Option<&AuctionRecord> {
        self.auctions.get(symbol)
    }

    pub fn record(&mut self, events: &[Event]) {
        self.just_closed.clear();
        self.auction_trades = None;
        for event in events {
            self.record_one(event);
        }
    }

    /// Moves a closed order (its record already final) out of the open
    /// ones.
    fn close(&mut self, id: OrderId) {
        if let Some(order) = self.orders.remove(&id) {
            self.just_closed.push(order);
        }
    }

    fn record_one(&mut self, event: &Event) {
        let ts = event.ts;
        for update in order_updates(&event.kind) {
            match &update.change {
                Change::New(accepted) => {
                    let record = OrderRecord::accepted(accepted, ts);
                    self.orders.insert(update.order_id, Arc::new(record));
                }
                change => {
                    if let Some(order) = self.orders.get_mut(&update.order_id) {
                        Arc::make_mut(order).apply(change, ts);
                    }
                    if update.closes() {
                        self.close(update.order_id);
                    }
                }
            }
        }
        if let EventKind::Auction(auction) = &event.kind {
            self.auctions.insert(
                auction.symbol.to_string(),
                AuctionRecord {
                    kind: auction.kind.as_str().into(),
                    price: auction.price,
                    volume: auction.volume,
                    ts,
                },
            );
            let mut tags = exchange_types::AuctionTrades::default();
            tags.start(auction);
            self.auction_trades = Some((auction.symbol, tags));
        }
        if let EventKind::Trade(trade) = &event.kind {
            let auction = match &mut self.auction_trades {
                Some((symbol, tags)) if *symbol == trade.symbol => {
                    tags.trade(trade.qty).map(|k| k.as_str().to_string())
                }
                _ => None,
            };
            let public = PublicTrade {
                trade_id: trade.trade_id,
                price: trade.price,
                qty: trade.qty,
                side: trade.aggressor_side.as_str().into(),
                ts,
                auction,
            };
            push_bounded(
                self.trades.entry(trade.symbol.to_string()).or_default(),
                public,
                TRADES_PER_SYMBOL,
            );
        }
    }
}

impl OrderRecord {
    fn accepted(accepted: &Accepted, ts: u64) -> OrderRecord {
        OrderRecord {
            order_id: accepted.order_id,
            account: accepted.account,
            client_order_id: accepted.client_order_id,
            symbol: accepted.symbol,
            side: accepted.side,
            order_type: accepted.order_type,
            price: accepted.price,
            qty: accepted.qty,
            filled_qty: 0,
            status: OrderStatus::New,
            tif: accepted.tif,
            created_ts: ts,
            updated_ts: ts,
            fill_notional: 0,
            details: accepted
                .ext
                .as_deref()
                .map(|ext| Box::new(OrderDetails::of(ext))),
        }
    }

    /// The record's part that events change, as the order fold keeps it.
    pub fn progress(&self) -> Progress {
        Progress {
            price: self.price,
            qty: self.qty,
            filled_qty: self.filled_qty,
            fill_notional: self.fill_notional,
            status: self.status,
        }
    }

    fn apply(&mut self, change: &Change<'_>, ts: u64) {
        let mut progress = self.progress();
        progress.apply(change);
        self.price = progress.price;
        self.qty = progress.qty;
        self.filled_qty = progress.filled_qty;
        self.fill_notional = progress.fill_notional;
        self.status = progress.status;
        match change {
            Change::Replaced(replaced) => {
                self.client_order_id = replaced.client_order_id;
                if let Some(stop_price) = replaced.stop_price {
                    self.details.get_or_insert_with(Default::default).stop_price =
                        Some(stop_price.get());
                }
            }
            Change::Triggered(triggered) => {
                let details = self.details.get_or_insert_with(Default::default);
                details.stop_price = Some(triggered.stop_price);
                details.triggered_ts = Some(ts);
                details.triggered_price = Some(triggered.last_price);
            }
            _ => {}
        }
        self.updated_ts = ts;
    }
}

/// (De)serialisation of the shared records exactly as if they were plain
/// values, so snapshots keep their format.
mod shared {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use rustc_hash::FxHashMap;

    use serde::ser::Serializer;
    use serde::{Deserialize, Deserializer};

    pub mod orders {
        use super::*;
        use crate::history::OrderRecord;
        use exchange_types::OrderId;

        /// In id order, so every replica writes the same bytes.
        pub fn serialize<S: Serializer>(
            map: &FxHashMap<OrderId, Arc<OrderRecord>>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            let ordered: BTreeMap<&OrderId, &OrderRecord> =
                map.iter().map(|(id, record)| (id, &**record)).collect();
            serializer.collect_map(ordered)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<FxHashMap<OrderId, Arc<OrderRecord>>, D::Error> {
            let plain = BTreeMap::<OrderId, OrderRecord>::deserialize(deserializer)?;
            // Snapshots written before the reporting store also held
            // closed orders; the store has those now.
            Ok(plain
                .into_iter()
                .filter(|(_, record)| record.status.is_open())
                .map(|(id, record)| (id, Arc::new(record)))
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use exchange_types::{Expired, OrderType, SelfTradePrevention, Side, TimeInForce, Trade};

    use super::*;

    fn accepted(order_id: OrderId, account: AccountId, side: Side) -> Event {
        let kind = EventKind::Accepted(Accepted {
            account,
            client_order_id: exchange_types::ClientOrderId::new(&format!("c{order_id}"))
                .expect("id"),
            order_id,
            symbol: exchange_types::Symbol::new("BTC-USD").expect("symbol"),
            side,
            order_type: OrderType::Limit,
            price: Some(100),
            qty: 10,
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        });
        Event {
            seq: order_id,
            ts: order_id,
            kind,
        }
    }

    fn trade() -> Event {
        let kind = EventKind::Trade(Trade {
            trade_id: 1,
            symbol: exchange_types::Symbol::new("BTC-USD").expect("symbol"),
            price: 100,
            qty: 4,
            maker_order_id: 1,
            taker_order_id: 2,
            maker_account: 7,
            taker_account: 8,
            aggressor_side: Side::Buy,
            maker_fee: -1,
            taker_fee: 2,
            maker_leaves_qty: 6,
            taker_leaves_qty: 6,
            midpoint: false,
        });
        Event {
            seq: 3,
            ts: 3,
            kind,
        }
    }

    #[test]
    fn copies_share_records_and_closed_orders_leave() {
        let mut history = History::default();
        history.record(&[
            accepted(1, 7, Side::Sell),
            accepted(2, 8, Side::Buy),
            trade(),
        ]);
        let copy = history.clone();
        assert!(Arc::ptr_eq(&copy.orders[&1], &history.orders[&1]));
        // A later change copies the record: the copy keeps what it had.
        history.record(&[Event {
            seq: 4,
            ts: 4,
            kind: EventKind::Expired(Expired {
                account: 8,
                order_id: 2,
                client_order_id: exchange_types::ClientOrderId::new("c2").expect("id"),
                symbol: exchange_types::Symbol::new("BTC-USD").expect("symbol"),
                expired_qty: 6,
                filled_qty: 4,
            }),
        }]);
        // Closed: out of the open orders, but still the answer to the
        // entry that closed it.
        assert_eq!(history.order(2), None);
        assert_eq!(
            history.shared_order(2).map(|o| o.status),
            Some(OrderStatus::Expired)
        );
        assert_eq!(
            copy.order(2).map(|o| (o.status, o.filled_qty)),
            Some((OrderStatus::PartiallyFilled, 4))
        );
        assert!(Arc::ptr_eq(&copy.orders[&1], &history.orders[&1]));

        let json = serde_json::to_value(&copy).expect("serialises");
        assert_eq!(json["orders"]["1"]["client_order_id"], "c1");
        assert_eq!(json["orders"]["2"]["filled_qty"], 4);
        let back: History = serde_json::from_value(json.clone()).expect("deserialises");
        assert_eq!(back, copy);

        // A snapshot from before the reporting store, with closed orders
        // and fills: the closed orders are dropped on load.
        let mut old = json;
        old["orders"]["2"]["status"] = "filled".into();
        old["fills"] = serde_json::json!({"7": []});
        old["closed"] = serde_json::json!({"8": [2]});
        let back: History = serde_json::from_value(old).expect("old format");
        assert!(back.order(1).is_some());
        assert_eq!(back.order(2), None);
    }

    /// An auction's trades are tagged with it up to its volume, and the
    /// last auction survives a snapshot (and is absent from one written
    /// before it existed).
    #[test]
    fn auction_trades_are_tagged_and_the_last_auction_kept() {
        use exchange_types::event::{Auction, AuctionKind};
        let auction = Event {
            seq: 1,
            ts: 3,
            kind: EventKind::Auction(Auction {
                symbol: exchange_types::Symbol::new("BTC-USD").expect("symbol"),
                kind: AuctionKind::Open,
                price: 100,
                volume: 4,
            }),
        };
        let mut history = History::default();
        let plain = serde_json::to_value(&history).expect("serialises");
        assert!(plain.get("auctions").is_none());
        history.record(&[auction, trade(), trade()]);
        let trades = history.trades_of("BTC-USD", 2);
        // Newest first: the second trade is past the auction's volume.
        assert_eq!(trades[0].auction, None);
        assert_eq!(trades[1].auction.as_deref(), Some("open"));
        let last = history
            .last_auction("BTC-USD")
            .and_then(|a| a.last_auction());
        assert_eq!(
            last.map(|a| (a.kind, a.price, a.volume, a.ts)),
            Some((AuctionKind::Open, 100, 4, 3))
        );
        // The next entry's trades are continuous.
        history.record(&[trade()]);
        assert_eq!(history.trades_of("BTC-USD", 1)[0].auction, None);
        let back: History =
            serde_json::from_value(serde_json::to_value(&history).expect("serialises"))
                .expect("deserialises");
        assert_eq!(
            back.last_auction("BTC-USD"),
            history.last_auction("BTC-USD")
        );
        assert_eq!(
            back.trades_of("BTC-USD", 3)[2].auction.as_deref(),
            Some("open")
        );
    }

    /// A stop's details come with its acceptance, follow a replace of its
    /// stop price and record its trigger; they survive a snapshot, and a
    /// plain order has none.
    #[test]
    fn a_stop_keeps_its_details_through_replace_and_trigger() {
        use exchange_types::event::Triggered;
        use exchange_types::{AcceptedExt, Replaced};
        let symbol = exchange_types::Symbol::new("BTC-USD").expect("symbol");
        let id = |c: &str| exchange_types::ClientOrderId::new(c).expect("id");
        let mut stop = accepted(5, 7, Side::Sell);
        if let EventKind::Accepted(a) = &mut stop.kind {
            a.order_type = OrderType::Stop;
            a.price = None;
            a.ext = Some(Box::new(AcceptedExt {
                stop_price: Some(95),
                expire_ts: Some(1_000),
                ..AcceptedExt::default()
            }));
        }
        let mut history = History::default();
        history.record(&[stop, accepted(6, 7, Side::Buy)]);
        let details = |h: &History| h.order(5).and_then(|o| o.details.as_deref().cloned());
        assert_eq!(
            details(&history).map(|d| (d.stop_price, d.expire_ts, d.triggered_ts)),
            Some((Some(95), Some(1_000), None))
        );
        assert_eq!(history.order(6).map(|o| o.details.is_none()), Some(true));

        history.record(&[Event {
            seq: 7,
            ts: 7,
            kind: EventKind::Replaced(Replaced {
                account: 7,
                order_id: 5,
                old_client_order_id: id("c5"),
                client_order_id: id("c5"),
                symbol,
                price: 0,
                qty: 10,
                leaves_qty: 10,
                stop_price: std::num::NonZeroU64::new(94),
            }),
        }]);
        history.record(&[Event {
            seq: 8,
            ts: 8,
            kind: EventKind::Triggered(Triggered {
                account: 7,
                order_id: 5,
                client_order_id: id("c5"),
                symbol,
                stop_price: 94,
                last_price: 93,
                qty: 10,
            }),
        }]);
        let after = details(&history).expect("details");
        assert_eq!(
            (after.stop_price, after.triggered_ts, after.triggered_price),
            (Some(94), Some(8), Some(93))
        );
        let back: History =
            serde_json::from_value(serde_json::to_value(&history).expect("serialises"))
                .expect("deserialises");
        assert_eq!(details(&back), Some(after));
    }
}
