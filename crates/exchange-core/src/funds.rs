//! Market buys sized by quote amount ("funds") instead of quantity, as
//! Coinbase's `funds` and Binance's `quoteOrderQty` do.
//!
//! Only buys: a buy spends at most `funds` quote units, taker fees
//! included. On entry the book is walked (self-trade prevention and
//! icebergs included) with that budget, fill by fill, each in whole lots
//! with its fee rounded down as the fill itself will be; the lots it buys
//! become the order's quantity (reported in `accepted.qty`), and exactly
//! `funds` is reserved. The order then matches as a market order of that
//! quantity and, at the end of the command, every unit it did not spend
//! (what less than a lot at the next price would have cost, or what a
//! shallow book left) is released. The walk stops at the first fill the
//! budget cuts short, and short of an own order that self-trade prevention
//! would make it cancel or decrement: such an order is never reached.
//! A sell sized by funds is refused (`funds_not_allowed`): raising an
//! amount means reserving base the order cannot size before it trades.

//! The funds' shape is checked by `exchange_types::validate`; the walk that
//! sizes the order is reservation's (`reserve.rs`).

use crate::instrument::fee;
use crate::instrument::Instrument;

/// The most of `lots` at `price` that `budget` pays for, notional and
/// taker fee together (the fee is rounded down per fill, as `fill` does).
pub(crate) fn affordable(inst: &Instrument, price: u64, lots: u64, budget: u64) -> u64 {
    let fits = |q: u64| funds_cost(inst, price, q).is_some_and(|c| c <= budget);
    if fits(lots) {
        return lots;
    }
    // The cost grows with the lots: bisect for the largest that fits.
    let (mut low, mut high) = (0u64, lots);
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if fits(mid) {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

/// What a taker buy of `lots` at `price` takes from its reservation.
pub(crate) fn funds_cost(inst: &Instrument, price: u64, lots: u64) -> Option<u64> {
    let notional = inst.notional(price, lots)?;
    notional.checked_add(fee(notional, inst.taker_fee_bps).max(0).unsigned_abs())
}
