//! Events for property tests of the codecs: every kind with every field,
//! each field's widest value often, and every code of every closed set.

use std::num::NonZeroU64;

use exchange_types::event::{
    self, Accepted, AcceptedExt, AccountStatus, Auction, AuctionKind, Balance, Book, Canceled,
    Expired, Indicative, InstrumentAdded, InstrumentRules, MassCanceled, Mmp, PhaseChanged,
    ReferencePrice, Rejected, Replaced, RiskLimits, Status, SubAccountLinked, Trade, Triggered,
};
use exchange_types::{
    CancelReason, Event, EventKind, MmpState, OrderType, Phase, RejectReason, SelfTradePrevention,
    Side, TimeInForce, TradingStatus, TrailingUnits,
};
use proptest::prelude::*;

use crate::binary::{MAX_TEXT_BYTES, TEMPLATES};
use crate::strategies::{id, option, wide_i32, wide_u64};

/// One of `values`, each equally likely.
fn one_of<T: Clone + std::fmt::Debug + 'static>(values: &'static [T]) -> impl Strategy<Value = T> {
    (0..values.len()).prop_map(move |at| values[at].clone())
}

fn wide_i64() -> impl Strategy<Value = i64> {
    prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()]
}

fn wide_u32() -> impl Strategy<Value = u32> {
    prop_oneof![Just(u32::MAX), any::<u32>()]
}

fn side() -> impl Strategy<Value = Side> {
    one_of(&[Side::Buy, Side::Sell])
}

fn status() -> impl Strategy<Value = TradingStatus> {
    one_of(&[
        TradingStatus::Trading,
        TradingStatus::Halted,
        TradingStatus::Delisted,
    ])
}

fn cancel_reason() -> impl Strategy<Value = CancelReason> {
    one_of(&[
        CancelReason::Requested,
        CancelReason::MassCancel,
        CancelReason::SelfTrade,
        CancelReason::AccountSuspended,
        CancelReason::Mmp,
        CancelReason::OneCancelsOther,
        CancelReason::RulesChanged,
        CancelReason::Delisted,
    ])
}

/// The longest message a reader takes: at the bound, in two-byte
/// characters so that a cut in the middle of one would show.
pub(crate) fn longest_text() -> String {
    "\u{e9}".repeat(MAX_TEXT_BYTES / 2)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(longest_text()), "(?s).{0,64}"]
}

fn instrument_added() -> impl Strategy<Value = EventKind> {
    (id(), id(), id(), proptest::option::of(wide_u64())).prop_map(
        |(symbol, base, quote, reference_price)| {
            EventKind::InstrumentAdded(InstrumentAdded {
                symbol,
                base,
                quote,
                reference_price,
            })
        },
    )
}

fn trailing() -> impl Strategy<Value = TrailingUnits> {
    prop_oneof![
        wide_u64().prop_map(TrailingUnits::Amount),
        wide_u32().prop_map(TrailingUnits::Bps)
    ]
}

/// The rarer part: absent, or present with any fields, none included (the
/// core never sends an empty one, but it is a value and reads back).
fn accepted_ext() -> impl Strategy<Value = Option<Box<AcceptedExt>>> {
    let ext = (
        (option(wide_u64()), option(trailing()), option(wide_u64())),
        (option(wide_u64()), option(wide_u64()), option(id())),
        (any::<bool>(), option(wide_u64())),
    )
        .prop_map(
            |((stop_price, trailing, display_qty), rest, (hidden, min_qty))| {
                let (funds, expire_ts, oco_with) = rest;
                Box::new(AcceptedExt {
                    stop_price,
                    trailing,
                    display_qty,
                    funds,
                    expire_ts,
                    oco_with,
                    hidden,
                    min_qty,
                })
            },
        );
    proptest::option::of(ext)
}

fn accepted() -> impl Strategy<Value = EventKind> {
    let order_types = OrderType::ALL;
    let tifs = TimeInForce::ALL;
    let stps = SelfTradePrevention::ALL;
    (
        (wide_u64(), id(), wide_u64(), id()),
        (side(), one_of(order_types), option(wide_u64()), wide_u64()),
        (one_of(tifs), any::<bool>(), one_of(stps), accepted_ext()),
    )
        .prop_map(|(who, what, how)| {
            let (account, client_order_id, order_id, symbol) = who;
            let (side, order_type, price, qty) = what;
            let (tif, post_only, stp, ext) = how;
            EventKind::Accepted(Accepted {
                account,
                client_order_id,
                order_id,
                symbol,
                side,
                order_type,
                price,
                qty,
                tif,
                post_only,
                stp,
                ext,
            })
        })
}

fn rejected() -> impl Strategy<Value = EventKind> {
    (
        one_of(TEMPLATES),
        option(wide_u64()),
        option(id()),
        option(wide_u64()),
        option(id()),
        one_of(RejectReason::ALL),
    )
        .prop_map(
            |(command, account, client_order_id, order_id, symbol, reason)| {
                EventKind::Rejected(Rejected {
                    command,
                    account,
                    client_order_id,
                    order_id,
                    symbol,
                    reason,
                })
            },
        )
}

fn trade() -> impl Strategy<Value = EventKind> {
    (
        (wide_u64(), id(), wide_u64(), wide_u64()),
        (wide_u64(), wide_u64(), wide_u64(), wide_u64()),
        (side(), wide_i64(), wide_i64(), wide_u64(), wide_u64()),
        any::<bool>(),
    )
        .prop_map(|(what, who, how, midpoint)| {
            let (trade_id, symbol, price, qty) = what;
            let (maker_order_id, taker_order_id, maker_account, taker_account) = who;
            let (aggressor_side, maker_fee, taker_fee, maker_leaves_qty, taker_leaves_qty) = how;
            EventKind::Trade(Trade {
                trade_id,
                symbol,
                price,
                qty,
                maker_order_id,
                taker_order_id,
                maker_account,
                taker_account,
                aggressor_side,
                maker_fee,
                taker_fee,
                maker_leaves_qty,
                taker_leaves_qty,
                midpoint,
            })
        })
}

fn canceled() -> impl Strategy<Value = EventKind> {
    (
        (wide_u64(), wide_u64(), id(), id()),
        (cancel_reason(), wide_u64(), wide_u64(), wide_u64()),
    )
        .prop_map(|(who, what)| {
            let (account, order_id, client_order_id, symbol) = who;
            let (reason, canceled_qty, filled_qty, leaves_qty) = what;
            EventKind::Canceled(Canceled {
                account,
                order_id,
                client_order_id,
                symbol,
                reason,
                canceled_qty,
                filled_qty,
                leaves_qty,
            })
        })
}

fn replaced() -> impl Strategy<Value = EventKind> {
    (
        (wide_u64(), wide_u64(), id(), id(), id()),
        (wide_u64(), wide_u64(), wide_u64(), option(wide_u64())),
    )
        .prop_map(|(who, what)| {
            let (account, order_id, old_client_order_id, client_order_id, symbol) = who;
            let (price, qty, leaves_qty, stop_price) = what;
            EventKind::Replaced(Replaced {
                account,
                order_id,
                old_client_order_id,
                client_order_id,
                symbol,
                price,
                qty,
                leaves_qty,
                stop_price: stop_price.and_then(NonZeroU64::new),
            })
        })
}

fn expired() -> impl Strategy<Value = EventKind> {
    (
        (wide_u64(), wide_u64(), id(), id()),
        (wide_u64(), wide_u64()),
    )
        .prop_map(|(who, (expired_qty, filled_qty))| {
            let (account, order_id, client_order_id, symbol) = who;
            EventKind::Expired(Expired {
                account,
                order_id,
                client_order_id,
                symbol,
                expired_qty,
                filled_qty,
            })
        })
}

fn triggered() -> impl Strategy<Value = EventKind> {
    (
        (wide_u64(), wide_u64(), id(), id()),
        (wide_u64(), wide_u64(), wide_u64()),
    )
        .prop_map(|(who, (stop_price, last_price, qty))| {
            let (account, order_id, client_order_id, symbol) = who;
            EventKind::Triggered(Triggered {
                account,
                order_id,
                client_order_id,
                symbol,
                stop_price,
                last_price,
                qty,
            })
        })
}

fn risk_limits() -> impl Strategy<Value = EventKind> {
    (
        wide_u64(),
        option(wide_u64()),
        option(wide_u64()),
        option(wide_u32()),
        option(wide_u32()),
    )
        .prop_map(|(account, qty, notional, open, band)| {
            EventKind::RiskLimits(RiskLimits {
                account,
                max_order_qty: qty,
                max_order_notional: notional,
                max_open_orders: open,
                price_band_bps: band,
            })
        })
}

fn mmp() -> impl Strategy<Value = EventKind> {
    let state = prop_oneof![
        (wide_u64(), option(wide_u64()), option(wide_u32())).prop_map(
            |(window_ns, max_qty, max_count)| MmpState::Set {
                window_ns,
                max_qty,
                max_count,
            }
        ),
        Just(MmpState::Removed),
        (wide_u64(), wide_u32())
            .prop_map(|(filled_qty, fills)| MmpState::Tripped { filled_qty, fills }),
        Just(MmpState::Reset),
    ];
    (wide_u64(), id(), state).prop_map(|(account, symbol, state)| {
        EventKind::Mmp(Mmp {
            account,
            symbol,
            state,
        })
    })
}

fn indicative() -> impl Strategy<Value = EventKind> {
    (
        id(),
        option(wide_u64()),
        wide_u64(),
        option(side()),
        wide_u64(),
    )
        .prop_map(|(symbol, price, volume, imbalance_side, imbalance_qty)| {
            EventKind::Indicative(Indicative {
                symbol,
                price,
                volume,
                imbalance_side,
                imbalance_qty,
            })
        })
}

fn auction() -> impl Strategy<Value = EventKind> {
    let kinds: &'static [AuctionKind] = &[
        AuctionKind::Open,
        AuctionKind::Close,
        AuctionKind::Volatility,
        AuctionKind::Reopen,
    ];
    (id(), one_of(kinds), wide_u64(), wide_u64()).prop_map(|(symbol, kind, price, volume)| {
        EventKind::Auction(Auction {
            symbol,
            kind,
            price,
            volume,
        })
    })
}

fn instrument_rules() -> impl Strategy<Value = EventKind> {
    (
        (id(), id(), id(), wide_u64(), wide_u64()),
        (wide_u64(), wide_u64(), wide_u64(), wide_i32(), wide_i32()),
        (wide_u32(), wide_u32(), wide_u32(), wide_u64(), status()),
    )
        .prop_map(|(names, sizes, bands)| {
            let (symbol, base, quote, tick_size, lot_size) = names;
            let (min_qty, max_qty, min_notional, maker_fee_bps, taker_fee_bps) = sizes;
            let (collar_bps, static_band_bps, dynamic_band_bps, volatility_auction_ns, status) =
                bands;
            EventKind::InstrumentRules(Box::new(InstrumentRules {
                symbol,
                base,
                quote,
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
                status,
            }))
        })
}

/// The kinds whose payloads are small, each equally likely.
fn small_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        (id(), status()).prop_map(|(symbol, status)| EventKind::Status(Status { symbol, status })),
        (wide_u64(), id(), wide_u64(), wide_u64()).prop_map(
            |(account, asset, total, available)| EventKind::Balance(Balance {
                account,
                asset,
                total,
                available,
            })
        ),
        (id(), side(), wide_u64(), wide_u64()).prop_map(|(symbol, side, price, qty)| {
            EventKind::Book(Book {
                symbol,
                side,
                price,
                qty,
            })
        }),
        (wide_u64(), option(id()), wide_u32()).prop_map(|(account, symbol, canceled)| {
            EventKind::MassCanceled(MassCanceled {
                account,
                symbol,
                canceled,
            })
        }),
        (wide_u64(), any::<bool>(), wide_u32()).prop_map(|(account, suspended, canceled)| {
            EventKind::AccountStatus(AccountStatus {
                account,
                suspended,
                canceled,
            })
        }),
        (wide_u64(), wide_u64())
            .prop_map(|(owner, sub)| EventKind::SubAccountLinked(SubAccountLinked { owner, sub })),
        (id(), one_of(Phase::ALL))
            .prop_map(|(symbol, phase)| EventKind::Phase(PhaseChanged { symbol, phase })),
        (id(), wide_u64()).prop_map(|(symbol, price)| EventKind::ReferencePrice(ReferencePrice {
            symbol,
            price
        })),
        (wide_u64(), text())
            .prop_map(|(line, message)| EventKind::Error(event::Error { line, message })),
    ]
}

/// Any event kind: each with a large payload as likely as all the small
/// ones together is.
pub(crate) fn event_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        instrument_added(),
        accepted(),
        rejected(),
        trade(),
        canceled(),
        replaced(),
        expired(),
        triggered(),
        risk_limits(),
        mmp(),
        indicative(),
        auction(),
        instrument_rules(),
        small_kind(),
    ]
}

/// Any event, with a wide `seq` and `ts`.
pub(crate) fn event() -> impl Strategy<Value = Event> {
    (wide_u64(), wide_u64(), event_kind()).prop_map(|(seq, ts, kind)| Event { seq, ts, kind })
}
