//! The writer's rows, one type per table: plain structs of integers,
//! inline ids and static names, so none owns heap memory and binding one
//! borrows its fields ([`Param`]): a row costs no allocation from the
//! event to the statement.

mod audit;
mod order;

use exchange_types::{AssetCode, Side, Symbol};

pub(crate) use audit::NewAudit;
pub(crate) use order::{CachedOrder, OrderExtra, ORDER_COLUMNS};

use crate::batch::{Kept, Row, Table};
use crate::db::Param;

/// The balances of an account and asset as of its last `balance` event
/// (a hold included, which has no ledger row).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CachedBalance {
    pub account: i64,
    pub asset: AssetCode,
    pub total: i64,
    pub available: i64,
    /// The sequence of that event.
    pub seq: i64,
    /// As [`CachedOrder::stored`].
    pub stored: bool,
    /// As [`CachedOrder::dirty`].
    pub dirty: bool,
}

impl Row for CachedBalance {
    const TABLE: Table = Table {
        name: "balances",
        columns: &["account", "asset", "total", "available", "seq"],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.seq),
        ]);
    }
}

impl Kept for CachedBalance {
    fn stored(&self) -> bool {
        self.stored
    }

    const UPDATE: &'static str =
        "UPDATE balances SET total = ?, available = ?, seq = ? WHERE account = ? AND asset = ?";

    const KEY: &'static str = "account, asset";
    const CHANGING: &'static [&'static str] = &["total", "available", "seq"];

    fn update_params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.seq),
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewTrade {
    pub trade_id: i64,
    pub seq: i64,
    pub log_index: i64,
    pub ts: i64,
    pub symbol: Symbol,
    pub price: i64,
    pub qty: i64,
    pub notional: i64,
    pub aggressor_side: Side,
    pub maker_order_id: i64,
    pub taker_order_id: i64,
    pub maker_account: i64,
    pub taker_account: i64,
    pub maker_fee: i64,
    pub taker_fee: i64,
    /// The kind of auction it executed in; `None` in continuous trading.
    pub auction: Option<&'static str>,
}

impl Row for NewTrade {
    const TABLE: Table = Table {
        name: "trades",
        columns: &[
            "trade_id",
            "seq",
            "log_index",
            "ts",
            "symbol",
            "price",
            "qty",
            "notional",
            "aggressor_side",
            "maker_order_id",
            "taker_order_id",
            "maker_account",
            "taker_account",
            "maker_fee",
            "taker_fee",
            "auction",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.trade_id),
            Param::Int(self.seq),
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Text(self.symbol.as_str()),
            Param::Int(self.price),
            Param::Int(self.qty),
            Param::Int(self.notional),
            Param::Text(self.aggressor_side.as_str()),
            Param::Int(self.maker_order_id),
            Param::Int(self.taker_order_id),
            Param::Int(self.maker_account),
            Param::Int(self.taker_account),
            Param::Int(self.maker_fee),
            Param::Int(self.taker_fee),
            self.auction.into(),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewFill {
    pub trade_id: i64,
    pub liquidity: &'static str,
    pub order_id: i64,
    pub account: i64,
    pub symbol: Symbol,
    pub side: Side,
    pub price: i64,
    pub qty: i64,
    pub notional: i64,
    pub fee: i64,
    pub ts: i64,
}

impl Row for NewFill {
    const TABLE: Table = Table {
        name: "fills",
        columns: &[
            "trade_id",
            "liquidity",
            "order_id",
            "account",
            "symbol",
            "side",
            "price",
            "qty",
            "notional",
            "fee",
            "ts",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.trade_id),
            Param::Text(self.liquidity),
            Param::Int(self.order_id),
            Param::Int(self.account),
            Param::Text(self.symbol.as_str()),
            Param::Text(self.side.as_str()),
            Param::Int(self.price),
            Param::Int(self.qty),
            Param::Int(self.notional),
            Param::Int(self.fee),
            Param::Int(self.ts),
        ]);
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct NewLedger<'e> {
    pub seq: i64,
    pub log_index: i64,
    pub ts: i64,
    pub account: i64,
    pub asset: AssetCode,
    pub total: i64,
    pub available: i64,
    pub delta: i64,
    pub cause: &'e str,
}

impl Row for NewLedger<'_> {
    const TABLE: Table = Table {
        name: "ledger",
        columns: &[
            "seq",
            "log_index",
            "ts",
            "account",
            "asset",
            "total",
            "available",
            "delta",
            "cause",
        ],
    };

    fn params<'a>(&'a self, out: &mut Vec<Param<'a>>) {
        out.extend([
            Param::Int(self.seq),
            Param::Int(self.log_index),
            Param::Int(self.ts),
            Param::Int(self.account),
            Param::Text(self.asset.as_str()),
            Param::Int(self.total),
            Param::Int(self.available),
            Param::Int(self.delta),
            Param::Text(self.cause),
        ]);
    }
}
