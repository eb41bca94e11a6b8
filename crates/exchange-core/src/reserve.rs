//! The third stage of an order: reservation, the pre-trade risk check on
//! funds. An admitted order is priced at what it could spend (quote for a
//! buy: notional at its bound plus the largest fee; base for a sell) and
//! refused unless the account has that much available.
//!
//! Like admission it only reads: the amount is set aside when the order is
//! accepted (`place.rs`), with nothing run in between that could lower
//! what is available. Orders that need the book to be priced (a market
//! buy, a fill-or-kill, a buy sized by funds) or to know what would fill
//! (one with a minimum acceptable quantity) walk it without changing it.

use exchange_types::{Place, RejectReason, Side, TimeInForce};

use crate::admit::Admitted;
use crate::engine::Engine;
use crate::instrument::buy_cost;

/// An order ready to be accepted: admitted, and what it reserves.
pub(crate) struct Reserved {
    pub admitted: Admitted,
    /// What it sets aside, in units of `reserve_asset`.
    pub reserve: u64,
    pub reserve_asset: u32,
    /// False for a fill-or-kill the book cannot fill whole, or an order
    /// it cannot fill to its minimum acceptable quantity: it is accepted
    /// and expires at once, having traded nothing.
    pub feasible: bool,
}

impl Engine {
    /// Prices an admitted order's reservation and checks the account can
    /// hold it.
    #[inline(always)]
    pub(crate) fn reserve(
        &self,
        place: &Place,
        admitted: Admitted,
    ) -> Result<Reserved, RejectReason> {
        if let Some(funds) = admitted.funds {
            return self.reserve_funds(place, admitted, funds);
        }
        let inst = &self.instruments[admitted.instrument as usize];
        let is_market = admitted.is_market;
        let needs_walk = admitted.stop.is_none()
            && !admitted.call_market
            && (admitted.tif == TimeInForce::Fok
                || (is_market && place.side == Side::Buy)
                || admitted.min_lots.is_some());
        let walk = needs_walk.then(|| {
            self.walk(
                admitted.instrument,
                place.side,
                admitted.account,
                place.stp,
                admitted.price,
                admitted.lots,
                None,
            )
        });
        // A fill-or-kill stop is judged when it triggers (`trigger`), not
        // against the book it does not trade with yet.
        let fok_feasible = admitted.tif != TimeInForce::Fok
            || admitted.stop.is_some()
            || walk.is_some_and(|w| w.traded_lots == admitted.lots);
        // A minimum acceptable quantity is judged on entry only, against
        // what the book would fill at once (`docs/market-model.md`).
        let feasible = fok_feasible
            && admitted
                .min_lots
                .is_none_or(|min| walk.is_some_and(|w| w.traded_lots >= min));
        let (reserve, reserve_asset) = match place.side {
            Side::Sell => (
                admitted
                    .lots
                    .checked_mul(inst.lot_units)
                    .ok_or(RejectReason::AmountOverflow)?,
                inst.base,
            ),
            Side::Buy => {
                let notional = if is_market && admitted.stop.is_none() && !admitted.call_market {
                    walk.map_or(Some(0), |w| w.notional)
                } else {
                    inst.notional(admitted.price, admitted.lots)
                };
                let cost = notional
                    .and_then(|n| buy_cost(n, inst.max_fee_bps()))
                    .ok_or(RejectReason::AmountOverflow)?;
                (cost, inst.quote)
            }
        };
        // A fill-or-kill that cannot fill reserves nothing, but an order the
        // account could never pay for is refused either way.
        self.check_available(admitted.account, reserve_asset, reserve)?;
        Ok(Reserved {
            admitted,
            reserve,
            reserve_asset,
            feasible,
        })
    }

    /// A market buy sized by funds reserves exactly its funds; the lots
    /// they buy, found by walking the book, become its quantity and are
    /// held to the member's quantity limits.
    #[inline(never)]
    fn reserve_funds(
        &self,
        place: &Place,
        mut admitted: Admitted,
        funds: u64,
    ) -> Result<Reserved, RejectReason> {
        let walk = self.walk(
            admitted.instrument,
            place.side,
            admitted.account,
            place.stp,
            admitted.price,
            u64::MAX,
            Some(funds),
        );
        admitted.lots = walk.traded_lots;
        let account = &self.accounts.get(admitted.account);
        if let (Some(risk), true) = (account.risk(), admitted.lots > 0) {
            risk.check_order(
                &self.instruments[admitted.instrument as usize],
                place.side,
                None,
                admitted.price,
                admitted.lots,
                false,
                account.open_orders(),
            )?;
        }
        let quote = self.instruments[admitted.instrument as usize].quote;
        self.check_available(admitted.account, quote, funds)?;
        // It ends within the command, whatever expire time it was sent.
        admitted.expire_ts = None;
        Ok(Reserved {
            admitted,
            reserve: funds,
            reserve_asset: quote,
            feasible: true,
        })
    }

    #[inline(always)]
    fn check_available(&self, account: u32, asset: u32, amount: u64) -> Result<(), RejectReason> {
        let available = self.accounts.balance(account, asset).available;
        if available < amount {
            return Err(RejectReason::InsufficientFunds);
        }
        Ok(())
    }
}
