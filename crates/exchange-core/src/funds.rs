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

use exchange_types::decimal::UnitsError;
use exchange_types::{OrderType, Place, RejectReason, Side};

use crate::engine::Engine;

impl Engine {
    /// Validates an order's funds; returns them in quote units.
    pub(crate) fn check_funds(place: &Place, is_market: bool) -> Result<Option<u64>, RejectReason> {
        let Some(funds) = place.ext().funds else {
            return Ok(None);
        };
        if !is_market || place.order_type != OrderType::Market || place.side != Side::Buy {
            return Err(RejectReason::FundsNotAllowed);
        }
        if place.qty.to_units_allow_zero() != Ok(0) {
            return Err(RejectReason::FundsWithQty);
        }
        funds.to_units().map(Some).map_err(|e| match e {
            UnitsError::TooManyDecimals => RejectReason::TooManyDecimals,
            UnitsError::Overflow => RejectReason::AmountOverflow,
            UnitsError::Negative | UnitsError::Zero => RejectReason::InvalidFunds,
        })
    }
}
