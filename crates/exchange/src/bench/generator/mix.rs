//! The mixed workload (`--workload mix`): the standard stream with, in
//! place of some of its commands, the order types a real venue also sees
//! and the races it must answer cheaply:
//! - stop and stop-limit orders triggering a few ticks beyond the touch;
//! - market- and limit-if-touched (take-profit) orders triggering a few
//!   ticks behind their own side's touch;
//! - icebergs: resting orders that show a fifth of their size;
//! - market-to-limit orders, and immediate orders with a minimum
//!   acceptable quantity of half their size;
//! - midpoint orders limited a few ticks beyond the middle of the book,
//!   half of them with a minimum acceptable quantity of half their size,
//!   which holds while they rest;
//! - hidden orders: resting orders of a maker's size that the book never
//!   shows (the listing takes them from 500 USD, which a maker's order
//!   near the start price is worth);
//! - cancels and replaces naming an order that a trade has just closed,
//!   as a client does whose request crossed the fill on the wire (refused
//!   `order_not_open`).
//!
//! Nothing here assumes the core accepts stops or icebergs: what comes
//! back is followed through the events like every other command, so the
//! same stream is valid whether they rest, trigger or are refused.

use std::collections::VecDeque;

use anyhow::Context;
use exchange_types::{
    Cancel, Command, EventKind, OrderRef, OrderType, PlaceExt, Replace, Side, TimeInForce,
};

use super::{lots, ticks, Generator};

/// Shares of the timed commands, parts per million, taken before the
/// standard mix draws for the rest.
pub const STOP_PPM: u64 = 30_000;
pub const ICEBERG_PPM: u64 = 30_000;
pub const RACE_PPM: u64 = 30_000;
pub const MARKET_TO_LIMIT_PPM: u64 = 10_000;
pub const MIN_QTY_PPM: u64 = 10_000;
pub const HIDDEN_PPM: u64 = 10_000;
pub const IF_TOUCHED_PPM: u64 = 10_000;
pub const MIDPOINT_PPM: u64 = 10_000;
/// The bench listing's minimum value of a hidden order, in whole USD.
pub(super) const HIDDEN_MIN_NOTIONAL: u64 = 500;
/// Orders that filled completely, remembered for the racing requests.
const FILLED_MEMORY: usize = 256;

/// Makers closed by the last command's fills, newest last.
#[derive(Default)]
pub(super) struct Filled(VecDeque<(u64, u64)>);

impl Generator {
    /// A mixed command, or `None` to fall back to the standard mix.
    pub(super) fn mixed(&mut self) -> anyhow::Result<Option<Command>> {
        let draw = self.rng.below(1_000_000);
        if draw < STOP_PPM {
            return Ok(Some(Command::Place(self.stop()?)));
        }
        if draw < STOP_PPM + ICEBERG_PPM {
            return Ok(Some(Command::Place(self.iceberg()?)));
        }
        if draw < STOP_PPM + ICEBERG_PPM + RACE_PPM {
            return Ok(self.race());
        }
        let rest = draw - (STOP_PPM + ICEBERG_PPM + RACE_PPM);
        if rest < MARKET_TO_LIMIT_PPM {
            return Ok(Some(Command::Place(self.market_to_limit()?)));
        }
        if rest < MARKET_TO_LIMIT_PPM + MIN_QTY_PPM {
            return Ok(Some(Command::Place(self.min_qty()?)));
        }
        if rest < MARKET_TO_LIMIT_PPM + MIN_QTY_PPM + HIDDEN_PPM {
            return Ok(Some(Command::Place(self.hidden()?)));
        }
        if rest < MARKET_TO_LIMIT_PPM + MIN_QTY_PPM + HIDDEN_PPM + IF_TOUCHED_PPM {
            return Ok(Some(Command::Place(self.if_touched()?)));
        }
        if rest < MARKET_TO_LIMIT_PPM + MIN_QTY_PPM + HIDDEN_PPM + IF_TOUCHED_PPM + MIDPOINT_PPM {
            return Ok(Some(Command::Place(self.midpoint()?)));
        }
        Ok(None)
    }

    /// A midpoint order that the middle of the book reaches: it meets the
    /// other side's midpoint orders, unseen.
    fn midpoint(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = if self.rng.chance(500_000) {
            Side::Buy
        } else {
            Side::Sell
        };
        let qty = self.taker_size().max(2);
        let center = self.center();
        let limit = match side {
            Side::Buy => center + 2,
            Side::Sell => center.saturating_sub(2).max(1),
        };
        let mut place = self.place(side, limit, qty, TimeInForce::Gtc)?;
        place.order_type = OrderType::Midpoint;
        if self.rng.chance(500_000) {
            place.ext = Some(Box::new(PlaceExt {
                min_qty: Some(lots(qty / 2)),
                ..place.ext().clone()
            }));
        }
        Ok(place)
    }

    /// A passive maker's order that never shows on the book.
    fn hidden(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = if self.rng.chance(500_000) {
            Side::Buy
        } else {
            Side::Sell
        };
        let mut place = self.passive(side, false)?;
        place.ext = Some(Box::new(PlaceExt {
            hidden: true,
            ..place.ext().clone()
        }));
        Ok(place)
    }

    /// A taker that trades at the touch only and rests what is left there.
    fn market_to_limit(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = self.taker_side();
        let qty = self.taker_size();
        let mut place = self.place(side, self.center(), qty, TimeInForce::Gtc)?;
        (place.order_type, place.price) = (OrderType::MarketToLimit, None);
        Ok(place)
    }

    /// An immediate taker at the touch that must fill half its size.
    fn min_qty(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = self.taker_side();
        let qty = self.taker_size().max(2);
        let touch = self.best(side.opposite()).unwrap_or_else(|| self.center());
        let mut place = self.place(side, touch, qty, TimeInForce::Ioc)?;
        place.ext = Some(Box::new(PlaceExt {
            min_qty: Some(lots(qty / 2)),
            ..place.ext().clone()
        }));
        Ok(place)
    }

    fn stop(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = self.taker_side();
        let beyond = 1 + self.rng.below(20);
        let touch = self.best(side.opposite()).unwrap_or_else(|| self.center());
        let trigger = match side {
            Side::Buy => touch + beyond,
            Side::Sell => touch.saturating_sub(beyond).max(1),
        };
        let market = self.rng.chance(500_000);
        let (market_type, limit_type) = (OrderType::Stop, OrderType::StopLimit);
        self.triggered(side, trigger, market, market_type, limit_type)
    }

    /// A taker's order waiting for `trigger`: a market order once
    /// triggered, or a limit order 2 ticks beyond its trigger.
    fn triggered(
        &mut self,
        side: Side,
        trigger: u64,
        market: bool,
        market_type: OrderType,
        limit_type: OrderType,
    ) -> anyhow::Result<exchange_types::Place> {
        let qty = self.taker_size();
        let mut place = self.place(side, trigger, qty, TimeInForce::Gtc)?;
        if market {
            place.order_type = market_type;
            place.price = None;
        } else {
            place.order_type = limit_type;
            let limit = match side {
                Side::Buy => trigger + 2,
                Side::Sell => trigger.saturating_sub(2).max(1),
            };
            place.price = Some(ticks(limit));
        }
        place.ext = Some(Box::new(PlaceExt {
            stop_price: Some(ticks(trigger)),
            ..place.ext().clone()
        }));
        Ok(place)
    }

    /// A take-profit: a buy waits below its own side's touch for the price
    /// to fall to it, a sell above it for the price to rise.
    fn if_touched(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = self.taker_side();
        let behind = 1 + self.rng.below(20);
        let touch = self.best(side).unwrap_or_else(|| self.center());
        let trigger = match side {
            Side::Buy => touch.saturating_sub(behind).max(1),
            Side::Sell => touch + behind,
        };
        // A market-if-touched buy needs a collar, which the bench listing
        // does not have: buys are limit-if-touched.
        let market = side == Side::Sell && self.rng.chance(500_000);
        let (market_type, limit_type) = (OrderType::MarketIfTouched, OrderType::LimitIfTouched);
        self.triggered(side, trigger, market, market_type, limit_type)
    }

    fn iceberg(&mut self) -> anyhow::Result<exchange_types::Place> {
        let side = if self.rng.chance(500_000) {
            Side::Buy
        } else {
            Side::Sell
        };
        let mut place = self.passive(side, false)?;
        let qty = place.qty.to_units().context("bench iceberg size")? / 100_000_000;
        let display = (qty / 5).max(1);
        place.ext = Some(Box::new(PlaceExt {
            display_qty: Some(lots(display)),
            ..place.ext().clone()
        }));
        Ok(place)
    }

    /// A cancel or replace naming an order that has just filled.
    fn race(&mut self) -> Option<Command> {
        let (account, id) = self.filled.0.pop_back()?;
        Some(if self.rng.chance(500_000) {
            Command::Cancel(Cancel {
                account,
                order: OrderRef::Id(id),
            })
        } else {
            Command::Replace(Replace {
                account,
                order: OrderRef::Id(id),
                new_client_order_id: None,
                price: None,
                qty: Some(lots(1 + self.rng.below(10))),
            })
        })
    }

    /// Remembers the orders the last command's trades closed: makers
    /// filled completely (rare: they are ten times a taker's size) and
    /// takers, which a trade leaves filled or, for the rest of an IOC,
    /// expired.
    pub(super) fn note_fills(&mut self) {
        let mut closed = Vec::new();
        for event in self.scratch.events() {
            if let EventKind::Trade(trade) = &event.kind {
                for (account, id) in [
                    (trade.maker_account, trade.maker_order_id),
                    (trade.taker_account, trade.taker_order_id),
                ] {
                    if self.scratch.tracker.order(id).is_none() && !closed.contains(&(account, id))
                    {
                        closed.push((account, id));
                    }
                }
            }
        }
        for entry in closed {
            if self.filled.0.len() == FILLED_MEMORY {
                self.filled.0.pop_front();
            }
            self.filled.0.push_back(entry);
        }
    }
}
