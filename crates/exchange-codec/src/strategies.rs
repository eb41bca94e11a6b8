//! Commands for property tests of the codecs: every kind of command with
//! every field, each field's widest value half the time, so that a
//! command near the longest of its kind comes up often.

use exchange_types::ids::InlineStr;
use exchange_types::limits::MAX_DECIMAL_PLACES;
use exchange_types::{
    AddInstrument, Cancel, Command, Dec, InternalTransfer, MassCancel, OrderRef, OrderType, Phase,
    Place, PlaceExt, ReferencePriceRule, Replace, SelfTradePrevention, SetInstrumentRules, SetMmp,
    SetRiskLimits, Side, TimeInForce, Trailing, Transfer,
};
use proptest::prelude::*;

/// `N` double quotes: each is escaped, so no id of `N` characters makes a
/// longer JSON string.
pub(crate) fn longest_id<const N: usize>() -> InlineStr<N> {
    InlineStr::new(&"\"".repeat(N)).unwrap()
}

/// The longest text a parsed decimal is written as: a sign, `0.` and every
/// place there may be.
pub(crate) fn longest_dec() -> Dec {
    Dec::parse(&format!("-0.{}1", "0".repeat(MAX_DECIMAL_PLACES - 1))).unwrap()
}

pub(crate) fn id<const N: usize>() -> impl Strategy<Value = InlineStr<N>> {
    prop_oneof![
        Just(longest_id::<N>()),
        proptest::string::string_regex(&format!("[!-~]{{1,{N}}}"))
            .unwrap()
            .prop_map(|text| InlineStr::new(&text).unwrap()),
    ]
}

/// Decimals as a gateway reads them, written back as the log keeps them
/// (without trailing zeros).
pub(crate) fn dec() -> impl Strategy<Value = Dec> {
    prop_oneof![
        Just(longest_dec()),
        prop_oneof!["-?[0-9]{1,20}(\\.[0-9]{1,20})?", "-?0?\\.0{0,36}[1-9]{1,2}"]
            .prop_filter_map("not a decimal", |text| {
                Dec::parse(&text).ok().map(Dec::normalized)
            }),
    ]
}

pub(crate) fn wide_u64() -> impl Strategy<Value = u64> {
    prop_oneof![Just(u64::MAX), any::<u64>()]
}

pub(crate) fn wide_i32() -> impl Strategy<Value = i32> {
    prop_oneof![Just(i32::MIN), any::<i32>()]
}

pub(crate) fn option<S: Strategy>(inner: S) -> impl Strategy<Value = Option<S::Value>> {
    proptest::option::weighted(0.75, inner)
}

fn order_ref() -> impl Strategy<Value = OrderRef> {
    prop_oneof![
        wide_u64().prop_map(OrderRef::Id),
        id().prop_map(OrderRef::Client)
    ]
}

fn transfer() -> impl Strategy<Value = Transfer> {
    (wide_u64(), id(), dec()).prop_map(|(account, asset, amount)| Transfer {
        account,
        asset,
        amount,
    })
}

fn add_instrument_command() -> impl Strategy<Value = Command> {
    (
        (id(), id(), id(), dec(), dec()),
        (option(dec()), option(dec()), option(any::<u32>())),
        (option(dec()), wide_i32(), wide_i32(), option(dec())),
        (
            option(any::<u32>()),
            option(any::<u32>()),
            option(wide_u64()),
            prop::sample::select(ReferencePriceRule::ALL),
        ),
        (option(prop::sample::select(Phase::ALL)), option(dec())),
    )
        .prop_map(
            |(names, sizes, prices, bands, (phase, hidden_min_notional))| {
                let (symbol, base, quote, tick_size, lot_size) = names;
                let (min_qty, max_qty, collar_bps) = sizes;
                let (reference_price, maker_fee_bps, taker_fee_bps, min_notional) = prices;
                let (
                    static_band_bps,
                    dynamic_band_bps,
                    volatility_auction_ns,
                    reference_price_rule,
                ) = bands;
                Command::AddInstrument(Box::new(AddInstrument {
                    symbol,
                    base,
                    quote,
                    tick_size,
                    lot_size,
                    min_qty,
                    max_qty,
                    collar_bps,
                    reference_price,
                    maker_fee_bps,
                    taker_fee_bps,
                    min_notional,
                    static_band_bps,
                    dynamic_band_bps,
                    volatility_auction_ns,
                    reference_price_rule,
                    phase,
                    hidden_min_notional,
                }))
            },
        )
}

fn set_rules_command() -> impl Strategy<Value = Command> {
    (
        (id(), option(dec()), option(dec()), option(dec())),
        (
            option(dec()),
            option(dec()),
            option(wide_i32()),
            option(wide_i32()),
        ),
        (
            option(any::<u32>()),
            option(any::<u32>()),
            option(any::<u32>()),
        ),
        (option(wide_u64()), option(dec())),
    )
        .prop_map(
            |(sizes, fees, bands, (volatility_auction_ns, hidden_min_notional))| {
                let (symbol, tick_size, lot_size, min_qty) = sizes;
                let (max_qty, min_notional, maker_fee_bps, taker_fee_bps) = fees;
                let (collar_bps, static_band_bps, dynamic_band_bps) = bands;
                Command::SetInstrumentRules(Box::new(SetInstrumentRules {
                    symbol,
                    tick_size,
                    lot_size,
                    min_qty,
                    max_qty,
                    min_notional,
                    maker_fee_bps,
                    taker_fee_bps,
                    collar_bps,
                    static_band_bps,
                    dynamic_band_bps,
                    volatility_auction_ns,
                    hidden_min_notional,
                }))
            },
        )
}

fn trailing() -> impl Strategy<Value = Trailing> {
    prop_oneof![
        dec().prop_map(Trailing::Amount),
        any::<u32>().prop_map(Trailing::Bps)
    ]
}

/// The rarer part of an order, absent half the time; never present and
/// empty, as the JSON decoder never makes one.
fn place_ext() -> impl Strategy<Value = Option<Box<PlaceExt>>> {
    let ext = (
        (option(dec()), option(trailing()), option(dec())),
        (
            option(dec()),
            option(wide_u64()),
            option(id()),
            option(dec()),
        ),
        any::<bool>(),
    )
        .prop_map(|(prices, rest, hidden)| {
            let (stop_price, trailing, display_qty) = prices;
            let (funds, expire_ts, oco_with, min_qty) = rest;
            PlaceExt {
                stop_price,
                trailing,
                display_qty,
                funds,
                expire_ts,
                oco_with,
                min_qty,
                hidden,
            }
        });
    proptest::option::of(ext)
        .prop_map(|ext| ext.filter(|ext| *ext != PlaceExt::default()).map(Box::new))
}

const ORDER_TYPES: &[OrderType] = OrderType::ALL;
const TIFS: &[TimeInForce] = TimeInForce::ALL;
const STPS: &[SelfTradePrevention] = SelfTradePrevention::ALL;

fn place_command() -> impl Strategy<Value = Command> {
    (
        (wide_u64(), id(), id(), any::<bool>(), 0..ORDER_TYPES.len()),
        (option(dec()), dec()),
        (0..TIFS.len(), any::<bool>(), 0..STPS.len()),
        place_ext(),
    )
        .prop_map(|(who, (price, qty), (tif, post_only, stp), ext)| {
            let (account, client_order_id, symbol, sell, order_type) = who;
            Command::Place(Place {
                account,
                client_order_id,
                symbol,
                side: if sell { Side::Sell } else { Side::Buy },
                order_type: ORDER_TYPES[order_type],
                price,
                qty,
                tif: TIFS[tif],
                post_only,
                stp: STPS[stp],
                ext,
            })
        })
}

fn replace_command() -> impl Strategy<Value = Command> {
    (
        wide_u64(),
        order_ref(),
        option(id()),
        option(dec()),
        option(dec()),
        option(dec()),
    )
        .prop_map(
            |(account, order, new_client_order_id, price, qty, stop_price)| {
                Command::replace(
                    Replace {
                        account,
                        order,
                        new_client_order_id,
                        price,
                        qty,
                    },
                    stop_price,
                )
            },
        )
}

fn set_risk_limits_command() -> impl Strategy<Value = Command> {
    (
        wide_u64(),
        option(dec()),
        option(dec()),
        option(any::<u32>()),
        option(any::<u32>()),
    )
        .prop_map(|(account, qty, notional, open, band)| {
            Command::SetRiskLimits(Box::new(SetRiskLimits {
                account,
                max_order_qty: qty,
                max_order_notional: notional,
                max_open_orders: open,
                price_band_bps: band,
            }))
        })
}

fn set_mmp_command() -> impl Strategy<Value = Command> {
    (
        wide_u64(),
        id(),
        wide_u64(),
        option(dec()),
        option(any::<u32>()),
    )
        .prop_map(|(account, symbol, window_ns, max_qty, max_count)| {
            Command::SetMmp(Box::new(SetMmp {
                account,
                symbol,
                window_ns,
                max_qty,
                max_count,
            }))
        })
}

fn internal_transfer_command() -> impl Strategy<Value = Command> {
    (wide_u64(), wide_u64(), id(), dec()).prop_map(|(from, to, asset, amount)| {
        Command::InternalTransfer(InternalTransfer {
            from,
            to,
            asset,
            amount,
        })
    })
}

/// Any command, every kind equally likely.
pub(crate) fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        add_instrument_command(),
        transfer().prop_map(Command::Deposit),
        transfer().prop_map(Command::Withdraw),
        place_command(),
        (wide_u64(), order_ref())
            .prop_map(|(account, order)| Command::Cancel(Cancel { account, order })),
        replace_command(),
        (wide_u64(), option(id()))
            .prop_map(|(account, symbol)| Command::MassCancel(MassCancel { account, symbol })),
        id().prop_map(|symbol| Command::Halt { symbol }),
        id().prop_map(|symbol| Command::Resume { symbol }),
        (id(), 0..Phase::ALL.len()).prop_map(|(symbol, phase)| Command::SetPhase {
            symbol,
            phase: Phase::ALL[phase],
        }),
        Just(Command::Tick),
        set_risk_limits_command(),
        wide_u64().prop_map(|account| Command::Suspend { account }),
        wide_u64().prop_map(|account| Command::Reinstate { account }),
        set_mmp_command(),
        (wide_u64(), id()).prop_map(|(account, symbol)| Command::ResetMmp { account, symbol }),
        (wide_u64(), wide_u64()).prop_map(|(owner, sub)| Command::LinkSubAccount { owner, sub }),
        internal_transfer_command(),
        set_rules_command(),
        id().prop_map(|symbol| Command::Delist { symbol }),
        (id(), dec()).prop_map(|(symbol, price)| Command::SetReferencePrice { symbol, price }),
    ]
}
