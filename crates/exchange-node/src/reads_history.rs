//! The reads of the history: answered where the history is kept.

use std::sync::Arc;

use exchange_marketdata::SnapshotTrade;
use exchange_types::Side;
use tokio::sync::oneshot;

use super::{Markets, OrderQuery, Orders};
use crate::history::{History, OrderRecord, PublicTrade};

/// A read of the history, answered on the thread that keeps it (see
/// [`crate::publisher`]) once the entries applied before it are recorded,
/// so that it is as of the same command as the state's part of it.
pub(crate) enum HistoryRead {
    /// The markets with the state's part filled in; the recent trades
    /// (this many per market) and the last auctions are the history's.
    Markets {
        markets: Markets,
        trades: usize,
        reply: oneshot::Sender<Markets>,
    },
    Orders {
        applied_index: u64,
        query: OrderQuery,
        reply: oneshot::Sender<Orders>,
    },
}

impl HistoryRead {
    /// Answers it from `history`. A caller that gave up waiting is no
    /// error.
    pub(crate) fn answer(self, history: &History) {
        match self {
            HistoryRead::Markets {
                mut markets,
                trades,
                reply,
            } => {
                for market in &mut markets.markets {
                    let symbol = market.instrument.symbol;
                    market.trades = history
                        .trades_of(symbol.as_str(), trades)
                        .into_iter()
                        .map(snapshot_trade)
                        .collect();
                    market.status.last_auction = history
                        .last_auction(symbol.as_str())
                        .and_then(|a| a.last_auction());
                }
                let _ = reply.send(markets);
            }
            HistoryRead::Orders {
                applied_index,
                query,
                reply,
            } => {
                let _ = reply.send(orders(applied_index, history, &query));
            }
        }
    }
}

fn snapshot_trade(trade: &PublicTrade) -> SnapshotTrade {
    SnapshotTrade {
        trade_id: trade.trade_id,
        price: trade.price,
        qty: trade.qty,
        aggressor: if trade.side == Side::Sell.as_str() {
            Side::Sell
        } else {
            Side::Buy
        },
        ts: trade.ts,
        auction: trade
            .auction
            .as_deref()
            .and_then(exchange_marketdata::status::parse_auction_kind),
    }
}

fn orders(applied_index: u64, history: &History, query: &OrderQuery) -> Orders {
    let orders = match query {
        OrderQuery::One { account, order_id } => history
            .shared_order(*order_id)
            .filter(|o| o.account == *account && o.status.is_open())
            .into_iter()
            .collect(),
        OrderQuery::Open { accounts, symbol } => {
            let mut found: Vec<Arc<OrderRecord>> = accounts
                .iter()
                .flat_map(|&account| history.open_orders_of(account, symbol.as_deref()))
                .filter_map(|o| history.shared_order(o.order_id))
                .collect();
            if accounts.len() > 1 {
                found.sort_unstable_by_key(|o| std::cmp::Reverse(o.order_id));
            }
            found
        }
    };
    Orders {
        applied_index,
        orders,
    }
}
