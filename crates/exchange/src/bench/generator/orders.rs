//! The orders of the timed stream and of the pre-fill: where they are
//! priced, how large they are, which side they take, and how a move
//! changes an open order.

use exchange_types::{
    ClientOrderId, OrderRef, OrderType, Place, Replace, SelfTradePrevention, Side, TimeInForce,
};

use anyhow::Context;

use super::{
    lots, ticks, Generator, AGGRESSIVE_GTC_PPM, LOT_UNITS, MAKER_SCALE, NEAR_TOP_LEVELS,
    NEAR_TOP_MOVE_PPM, NEAR_TOP_PASSIVE_PPM, START_TICKS, TICK_UNITS,
};

impl Generator {
    pub(super) fn levels(&self, side: Side) -> u64 {
        self.scratch
            .tracker
            .levels(0)
            .map_or(0, |l| l.side(side).len() as u64)
    }

    /// Best price of `side` in ticks.
    pub(super) fn best(&self, side: Side) -> Option<u64> {
        let levels = self.scratch.tracker.levels(0)?;
        match side {
            Side::Buy => levels.best_bid(),
            Side::Sell => levels.best_ask(),
        }
        .map(|units| units / TICK_UNITS)
    }

    /// Middle of the spread (or what is known of it) in ticks.
    pub(super) fn center(&self) -> u64 {
        match (self.best(Side::Buy), self.best(Side::Sell)) {
            (Some(bid), Some(ask)) => (bid + ask) / 2,
            (Some(bid), None) => bid + 1,
            (None, Some(ask)) => ask.saturating_sub(1).max(1),
            (None, None) => self.last_trade(),
        }
    }

    fn last_trade(&self) -> u64 {
        self.scratch
            .tracker
            .levels(0)
            .and_then(|l| l.last_trade)
            .map_or(START_TICKS, |units| units / TICK_UNITS)
    }

    /// exchange-core's size distribution: 1 + a·b·c with a, b, c in 0..6.
    fn size(&mut self) -> u64 {
        1 + self.rng.below(6) * self.rng.below(6) * self.rng.below(6)
    }

    /// Open orders above (or below) the target, in percent of it.
    fn pressure(&self) -> i64 {
        let target = self.spec.target_orders() as i64;
        let open = self.scratch.tracker.open_count() as i64;
        (open - target) * 100 / target.max(1)
    }

    /// A size for an order that takes liquidity, scaled so the takers
    /// remove about as many resting orders as the passive flow adds.
    pub(super) fn taker_size(&mut self) -> u64 {
        let percent = (100 + 20 * self.pressure()).clamp(5, 1_000) as u64;
        (self.size() * percent / 100).max(1)
    }

    /// Side of a taker: even odds, leaning against drift from the start.
    pub(super) fn taker_side(&mut self) -> Side {
        let drift = self.last_trade() as i64 - START_TICKS as i64;
        let buy_ppm = (500_000 - drift * 500).clamp(250_000, 750_000) as u64;
        if self.rng.chance(buy_ppm) {
            Side::Buy
        } else {
            Side::Sell
        }
    }

    /// A limit price up to two ticks through the opposite best.
    fn marketable_price(&mut self, side: Side) -> u64 {
        let through = self.rng.below(3);
        match (side, self.best(side.opposite())) {
            (Side::Buy, Some(ask)) => ask + through,
            (Side::Sell, Some(bid)) => bid.saturating_sub(through).max(1),
            (_, None) => self.center(),
        }
    }

    pub(super) fn place(
        &mut self,
        side: Side,
        price: u64,
        qty: u64,
        tif: TimeInForce,
    ) -> anyhow::Result<Place> {
        self.next_coid += 1;
        let client_order_id =
            ClientOrderId::new(&format!("b{}", self.next_coid)).context("bench client order id")?;
        Ok(Place {
            account: 1 + self.rng.below(self.spec.accounts),
            client_order_id,
            symbol: self.symbol,
            side,
            order_type: OrderType::Limit,
            price: Some(ticks(price)),
            qty: lots(qty),
            tif,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        })
    }

    /// A resting order behind the best price of its side. The pre-fill
    /// builds both sides out from the start price instead, so that its
    /// first random orders do not set where the price starts.
    pub(super) fn passive(&mut self, side: Side, prefill: bool) -> anyhow::Result<Place> {
        let depth = self.spec.levels;
        let distance = if self.rng.chance(NEAR_TOP_PASSIVE_PPM) {
            // Joining or improving the best few levels, where most orders sit.
            self.rng.below(5)
        } else if self.levels(side) < depth {
            // Too shallow: spread out over twice the target, opening levels.
            self.rng.below(2 * depth)
        } else {
            // Deep enough: refresh the depth that cancels and moves thin out.
            self.rng.below(depth)
        };
        let opposite = if prefill {
            None
        } else {
            self.best(side.opposite())
        };
        let price = match side {
            Side::Buy => {
                let anchor = opposite.unwrap_or(START_TICKS);
                anchor.saturating_sub(1 + distance).max(1)
            }
            Side::Sell => opposite.unwrap_or(START_TICKS) + 1 + distance,
        };
        let qty = MAKER_SCALE * self.size();
        self.place(side, price, qty, TimeInForce::Gtc)
    }

    pub(super) fn gtc(&mut self) -> anyhow::Result<Place> {
        // A book far below its target refills first.
        if self.rng.chance(AGGRESSIVE_GTC_PPM) && self.pressure() > -10 {
            let side = self.taker_side();
            let price = self.marketable_price(side);
            let qty = self.taker_size();
            return self.place(side, price, qty, TimeInForce::Gtc);
        }
        // Feed the side with fewer levels a little more often.
        let gap = self.levels(Side::Sell) as i64 - self.levels(Side::Buy) as i64;
        let buy_ppm = (500_000 + gap * 2_000).clamp(250_000, 750_000) as u64;
        let side = if self.rng.chance(buy_ppm) {
            Side::Buy
        } else {
            Side::Sell
        };
        self.passive(side, false)
    }

    pub(super) fn ioc(&mut self) -> anyhow::Result<Place> {
        let side = self.taker_side();
        let price = self.marketable_price(side);
        let qty = self.taker_size();
        self.place(side, price, qty, TimeInForce::Ioc)
    }

    /// A move: a few ticks (mostly towards the middle), sometimes with a
    /// new size, sometimes only a new size. Moves stay passive (a bid stays
    /// below the best ask): re-quoting, not taking, so the trades come from
    /// the IOC and aggressive GTC orders.
    pub(super) fn replace(&mut self) -> Option<Replace> {
        let tracker = &self.scratch.tracker;
        let near_top = if self.rng.chance(NEAR_TOP_MOVE_PPM) {
            let side = if self.rng.chance(500_000) {
                Side::Buy
            } else {
                Side::Sell
            };
            tracker
                .levels(0)
                .and_then(|l| l.near_top(side, NEAR_TOP_LEVELS, &mut self.rng))
        } else {
            None
        };
        let (id, order) = match near_top.and_then(|id| tracker.order(id).map(|o| (id, *o))) {
            Some(found) => found,
            None => tracker.random_order(&mut self.rng)?,
        };
        let old_price = order.price() / TICK_UNITS;
        let old_qty = order.qty() / LOT_UNITS;
        let kind = self.rng.below(100);
        let mut price = old_price;
        if kind < 90 {
            // A random walk of a few ticks, plus a pull towards the middle
            // of 1% of the distance, as exchange-core's generator moves.
            let step = match self.rng.below(10) {
                0..=5 => 1,
                6..=8 => self.rng.range(2, 3),
                _ => self.rng.range(4, 10),
            };
            let center = self.center();
            let pull = old_price.abs_diff(center) / 100;
            let inwards = |p: u64| {
                if p < center {
                    p + pull
                } else {
                    p.saturating_sub(pull)
                }
            };
            let up = inwards(old_price) + step;
            let down = inwards(old_price).saturating_sub(step).max(1);
            // A move that would cross turns back, so that the touch is not
            // a trap where moved orders pile up.
            price = match (
                order.side(),
                self.best(order.side().opposite()),
                self.rng.chance(500_000),
            ) {
                (Side::Buy, Some(ask), true) if up < ask => up,
                (Side::Sell, Some(bid), false) if down > bid => down,
                (Side::Buy, _, _) => down,
                (Side::Sell, _, _) => up,
            };
        }
        let mut qty = old_qty;
        if kind >= 80 {
            qty = order.filled() / LOT_UNITS + MAKER_SCALE * self.size();
        }
        if price == old_price && qty == old_qty {
            // Nothing would change (the price was pinned): resize by a lot.
            qty = if old_qty > order.filled() / LOT_UNITS + 1 {
                old_qty - 1
            } else {
                old_qty + 1
            };
        }
        Some(Replace {
            account: order.account(),
            order: OrderRef::Id(id),
            new_client_order_id: None,
            price: (price != old_price).then(|| ticks(price)),
            qty: (qty != old_qty).then(|| lots(qty)),
        })
    }
}
