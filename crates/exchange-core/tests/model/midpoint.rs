//! Midpoint orders in the reference model, from docs/market-model.md
//! ("Midpoint orders"), as plainly as the rest: every midpoint order of
//! every instrument in one vector, and matching by a fresh scan of all
//! buy-sell pairs after every trade until none can trade.
//!
//! The scan runs after every command for every instrument, not only when
//! the midpoint moved: a pair's chance to trade depends only on its two
//! orders and the midpoint, and matching leaves no pair that could trade,
//! so running it again where nothing moved finds nothing.

use exchange_types::*;

use super::book::{Market, Order};
use super::{Amend, At, Ev, Model};

/// A midpoint order in its instrument's midpoint book. `order.arrival` is
/// its entry into that book: time priority and who is the taker.
#[derive(Clone, Debug)]
pub(super) struct Mid {
    pub(super) index: usize,
    pub(super) order: Order,
    /// No limit: first in its side, and any midpoint is within reach.
    pub(super) unlimited: bool,
    /// The minimum acceptable quantity in lots, held on every execution.
    pub(super) min: Option<u64>,
}

impl Mid {
    fn reaches(&self, mid: u64) -> bool {
        let limit = self.order.price.unwrap_or(0);
        self.unlimited
            || match self.order.side {
                Side::Buy => limit >= mid,
                Side::Sell => limit <= mid,
            }
    }

    /// Unlimited first, then the better limit, then the earlier entry.
    fn rank(&self) -> (bool, i128, u64) {
        let limit = i128::from(self.order.price.unwrap_or(0));
        let key = match (self.unlimited, self.order.side) {
            (true, _) => 0,
            (false, Side::Buy) => -limit,
            (false, Side::Sell) => limit,
        };
        (!self.unlimited, key, self.order.arrival)
    }

    /// Whether a trade of `lots` meets the minimum; one above the
    /// remainder asks for the remainder only.
    fn accepts(&self, lots: u64) -> bool {
        lots >= self.min.unwrap_or(0).min(self.order.leaves())
    }
}

/// For a midpoint order, whether it is unlimited, once its time in force
/// and the absence of a pair are checked; `None` for any other order.
pub(super) fn terms(p: &Place, tif: TimeInForce) -> Result<Option<bool>, RejectReason> {
    if p.order_type != OrderType::Midpoint {
        return Ok(None);
    }
    let allowed = matches!(
        tif,
        TimeInForce::Gtc | TimeInForce::Day | TimeInForce::Gtd | TimeInForce::Ioc
    );
    if !allowed || p.ext().oco_with.is_some() {
        return Err(RejectReason::MidpointNotAllowed);
    }
    Ok(Some(p.price.is_none()))
}

impl Market {
    /// The midpoint of the displayed best bid and offer in ticks, when it
    /// is a whole tick and the instrument trades.
    fn midpoint(&self) -> Option<u64> {
        if self.halted {
            return None;
        }
        let shown = |o: &Order| if o.dark { None } else { o.price };
        let bid = self.bids.iter().filter_map(shown).max()?;
        let ask = self.asks.iter().filter_map(shown).min()?;
        (bid < ask && (bid + ask) % 2 == 0).then_some((bid + ask) / 2)
    }
}

impl Model {
    /// A midpoint order just accepted: it enters its book and matches; the
    /// rest of an immediate one expires.
    pub(super) fn enter_mid(
        &mut self,
        index: usize,
        mut order: Order,
        terms: (bool, Option<u64>),
        tif: TimeInForce,
        out: &mut Vec<Ev>,
    ) {
        let (unlimited, min) = terms;
        order.arrival = self.next_arrival;
        self.next_arrival += 1;
        let id = order.id;
        self.mids.push(Mid {
            index,
            order,
            unlimited,
            min,
        });
        self.match_mids(index, out);
        if tif == TimeInForce::Gtc {
            return;
        }
        if let Some(pos) = self.mids.iter().position(|m| m.order.id == id) {
            let o = self.mids.remove(pos).order;
            let lot = self.markets[index].lot_units;
            out.push(Ev::Expired {
                order_id: id,
                expired_qty: o.leaves() * lot,
                filled_qty: o.filled * lot,
            });
            self.close([o]);
        }
    }

    /// A checked replace of a midpoint order: a new limit makes it
    /// limited, and a new limit or a larger quantity is a new entry; then
    /// it matches.
    pub(super) fn amend_mid(&mut self, amend: &Amend, out: &mut Vec<Ev>) {
        let At::Mid(index, pos) = amend.at else {
            return;
        };
        let new_limit = amend.price != amend.old.price.unwrap_or(0);
        let keeps = !new_limit && amend.qty <= amend.old.qty;
        let m = &mut self.mids[pos];
        m.order.client_order_id = amend.coid;
        m.order.price = Some(amend.price);
        m.order.qty = amend.qty;
        m.unlimited &= !new_limit;
        if amend.leaves() == 0 {
            let o = self.mids.remove(pos).order;
            self.close([o]);
            return;
        }
        if !keeps {
            m.order.arrival = self.next_arrival;
            self.next_arrival += 1;
        }
        self.match_mids(index, out);
    }

    /// Matching in every instrument, at the end of a command.
    pub(super) fn match_all_mids(&mut self, out: &mut Vec<Ev>) {
        for index in 0..self.markets.len() {
            self.match_mids(index, out);
        }
    }

    fn match_mids(&mut self, index: usize, out: &mut Vec<Ev>) {
        let Some(mid) = self.markets[index].midpoint() else {
            return;
        };
        let from = out.len();
        while let Some((buy, sell)) = self.first_pair(index, mid) {
            self.act_on_pair(index, mid, buy, sell, out);
        }
        self.note_fills(from, out);
    }

    /// The first pair in priority order (buys first, each against the
    /// sells in theirs) that may trade at `mid`: by order id.
    fn first_pair(&self, index: usize, mid: u64) -> Option<(OrderId, OrderId)> {
        let side = |side: Side| {
            let mut all: Vec<&Mid> = (self.mids.iter())
                .filter(|m| m.index == index && m.order.side == side && m.reaches(mid))
                .collect();
            all.sort_by_key(|m| m.rank());
            all
        };
        let sells = side(Side::Sell);
        for b in side(Side::Buy) {
            for s in &sells {
                let lots = b.order.leaves().min(s.order.leaves());
                if b.accepts(lots) && s.accepts(lots) {
                    return Some((b.order.id, s.order.id));
                }
            }
        }
        None
    }

    fn mid_pos(&self, id: OrderId) -> usize {
        (self.mids.iter())
            .position(|m| m.order.id == id)
            .expect("a pair's orders are in the midpoint book")
    }

    /// The pair trades the smaller remainder, or, within one account, the
    /// later entry's self-trade prevention acts on it.
    fn act_on_pair(
        &mut self,
        index: usize,
        mid: u64,
        buy: OrderId,
        sell: OrderId,
        out: &mut Vec<Ev>,
    ) {
        let (b, s) = (
            &self.mids[self.mid_pos(buy)],
            &self.mids[self.mid_pos(sell)],
        );
        let (taker, maker) = if b.order.arrival > s.order.arrival {
            (b.order.clone(), s.order.clone())
        } else {
            (s.order.clone(), b.order.clone())
        };
        if taker.account == maker.account {
            self.prevent_mid_self_trade(index, &taker, &maker, out);
            return;
        }
        let lots = taker.leaves().min(maker.leaves());
        let m = &self.markets[index];
        out.push(Ev::Trade {
            symbol: m.symbol,
            price: mid * m.tick_units,
            qty: lots * m.lot_units,
            maker_order_id: maker.id,
            taker_order_id: taker.id,
            maker_account: maker.account,
            taker_account: taker.account,
            aggressor_side: taker.side,
        });
        for id in [buy, sell] {
            let pos = self.mid_pos(id);
            self.mids[pos].order.filled += lots;
            if self.mids[pos].order.leaves() == 0 {
                let done = self.mids.remove(pos).order;
                self.close([done]);
            }
        }
    }

    fn prevent_mid_self_trade(
        &mut self,
        index: usize,
        taker: &Order,
        maker: &Order,
        out: &mut Vec<Ev>,
    ) {
        let both = [taker.id, maker.id];
        let (victims, lots): (&[OrderId], u64) = match taker.stp {
            SelfTradePrevention::CancelNewest => (&both[..1], u64::MAX),
            SelfTradePrevention::CancelOldest => (&both[1..], u64::MAX),
            SelfTradePrevention::CancelBoth => (&both[..], u64::MAX),
            SelfTradePrevention::Decrement => (&both[..], taker.leaves().min(maker.leaves())),
        };
        for &id in victims {
            let pos = self.mid_pos(id);
            let m = &self.markets[index];
            let o = &mut self.mids[pos].order;
            if o.leaves() <= lots {
                let mut o = self.mids.remove(pos).order;
                m.cancel_all(&mut o, CancelReason::SelfTrade, out);
                self.close([o]);
            } else {
                o.qty -= lots;
                out.push(m.canceled(o, CancelReason::SelfTrade, lots));
            }
        }
    }
}
