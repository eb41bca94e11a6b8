//! Drawn answers for the tests that hold hand-written JSON to
//! `serde_json`'s bytes: records, fills, balances, candles and text with
//! everything JSON escapes.

use exchange_core::BalanceView;
use exchange_marketdata::Candle;
use exchange_node::history::{OrderDetails, OrderRecord, OrderStatus};
use exchange_types::ids::InlineStr;
use exchange_types::limits::MAX_ASSET_LEN;
use exchange_types::{OrderType, Side, TimeInForce};
use proptest::prelude::*;

use crate::wire::{FillView, SignedUnits, Units};

/// Text with what JSON must escape: quotes, backslashes, every kind of
/// control character, and characters of more than one byte.
pub fn text() -> impl Strategy<Value = String> {
    "[a-z0-9\\-\"\\\\\\x00-\\x1f\\x7fé€😀]{0,8}"
}

pub fn units() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        (0..1_000_000u64, 0..12u32).prop_map(|(n, zeros)| n * 10u64.pow(zeros)),
        Just(0),
    ]
}

/// Identifiers as the core accepts them: printable ASCII, `"` and `\\`
/// included, so their escaping is exercised.
pub fn id<const N: usize>() -> impl Strategy<Value = InlineStr<N>> {
    proptest::string::string_regex(&format!("[!-~]{{1,{N}}}"))
        .expect("a valid pattern")
        .prop_map(|text| InlineStr::new(&text).expect("printable ASCII"))
}

pub fn details() -> impl Strategy<Value = Option<Box<OrderDetails>>> {
    let fields = (
        prop::option::of(units()),
        prop::option::of(units()),
        prop::option::of(any::<u32>()),
        prop::option::of(units()),
        prop::option::of(units()),
        prop::option::of(any::<u64>()),
        prop::option::of(id::<36>()),
        prop::option::of(any::<u64>()),
        prop::option::of(units()),
    );
    prop::option::of(fields.prop_map(|f| {
        Box::new(OrderDetails {
            stop_price: f.0,
            trailing_amount: f.1,
            trailing_bps: f.2,
            display_qty: f.3,
            funds: f.4,
            expire_ts: f.5,
            oco_with: f.6,
            triggered_ts: f.7,
            triggered_price: f.8,
            hidden: f.7.is_some_and(|ts| ts % 2 == 0),
            min_qty: f.5.filter(|ts| ts % 3 == 0),
        })
    }))
}

pub fn record() -> impl Strategy<Value = OrderRecord> {
    let head = (
        any::<u64>(),
        id::<36>(),
        id::<16>(),
        prop::sample::select(Side::ALL),
        prop::sample::select(OrderType::ALL),
    );
    let amounts = (prop::option::of(units()), units(), units(), 0..5usize);
    let tail = (
        prop::sample::select(TimeInForce::ALL),
        any::<u64>(),
        any::<u64>(),
        details(),
    );
    (head, amounts, tail).prop_map(|(head, amounts, tail)| OrderRecord {
        order_id: head.0,
        account: 1,
        client_order_id: head.1,
        symbol: head.2,
        side: head.3,
        order_type: head.4,
        price: amounts.0,
        qty: amounts.1,
        filled_qty: amounts.2,
        status: OrderStatus::ALL[amounts.3],
        tif: tail.0,
        created_ts: tail.1,
        updated_ts: tail.2,
        fill_notional: 0,
        details: tail.3,
    })
}

/// A fill's owned parts: its strings, then its numbers.
pub type FillParts = ((String, String, String), (u64, u64, u64, u64, i64, u64));

pub fn fill_parts() -> impl Strategy<Value = FillParts> {
    (
        (text(), text(), text()),
        (
            any::<u64>(),
            any::<u64>(),
            units(),
            units(),
            any::<i64>(),
            any::<u64>(),
        ),
    )
}

pub fn fill_view(parts: &FillParts) -> FillView<'_> {
    let ((symbol, side, liquidity), n) = parts;
    FillView {
        trade_id: n.0,
        order_id: n.1,
        symbol,
        side,
        price: Units(n.2),
        qty: Units(n.3),
        fee: SignedUnits(n.4),
        liquidity,
        ts: n.5,
    }
}

/// A balance of an asset named with any printable ASCII.
pub fn balance() -> impl Strategy<Value = BalanceView> {
    (id::<MAX_ASSET_LEN>(), units(), units()).prop_map(|(asset, total, available)| BalanceView {
        account: 1,
        asset,
        total,
        available,
    })
}

/// Volumes past `u64::MAX` as well: they are sums.
pub fn volume() -> impl Strategy<Value = u128> {
    prop_oneof![
        units().prop_map(u128::from),
        (0..1_000_000_000u128).prop_map(|n| u128::from(u64::MAX) - 500_000_000 + n),
        any::<u128>(),
    ]
}

pub fn candle() -> impl Strategy<Value = Candle> {
    let prices = (units(), units(), units(), units());
    (any::<u64>(), prices, volume(), any::<u64>()).prop_map(|(start, p, volume, trades)| Candle {
        start,
        open: p.0,
        high: p.1,
        low: p.2,
        close: p.3,
        volume,
        trades,
    })
}
