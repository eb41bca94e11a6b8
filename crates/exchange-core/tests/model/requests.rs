//! The model's requests on open orders: cancel, mass cancel and replace,
//! read from docs/protocol.md as the rest of the model is.

use exchange_types::*;

use super::{Amend, At, Ev, Model};

impl Model {
    pub(super) fn cancel(&mut self, c: &Cancel, out: &mut Vec<Ev>) -> Result<(), RejectReason> {
        let at = self.resolve(c.account, &c.order)?;
        // Canceling one of a pair by request cancels the other.
        let partner = self.unpair(self.order(at).id);
        let mut order = self.take(at);
        self.markets[at.market()].cancel_all(&mut order, CancelReason::Requested, out);
        self.close([order]);
        if let Some(partner) = partner {
            self.cancel_open(partner, CancelReason::OneCancelsOther, out);
        }
        Ok(())
    }

    pub(super) fn mass_cancel(
        &mut self,
        mc: &MassCancel,
        out: &mut Vec<Ev>,
    ) -> Result<(), RejectReason> {
        let only = mc
            .symbol
            .as_ref()
            .map(|s| self.market_index(s))
            .transpose()?;
        if !self.accounts.contains(&mc.account) {
            return Err(RejectReason::UnknownAccount);
        }
        let mut victims: Vec<OrderId> = (self.markets.iter().enumerate())
            .filter(|(index, _)| only.is_none_or(|only| only == *index))
            .flat_map(|(_, m)| {
                m.bids
                    .iter()
                    .chain(&m.asks)
                    .chain(m.stops.iter().map(|s| &s.order))
            })
            .chain(self.mids.iter().filter_map(|mid| {
                only.is_none_or(|only| only == mid.index)
                    .then_some(&mid.order)
            }))
            .filter(|o| o.account == mc.account)
            .map(|o| o.id)
            .collect();
        victims.sort();
        for id in victims {
            self.cancel_open(id, CancelReason::MassCancel, out);
        }
        Ok(())
    }

    pub(super) fn replace(
        &mut self,
        r: &Replace,
        stop_price: Option<Dec>,
        out: &mut Vec<Ev>,
    ) -> Result<(), RejectReason> {
        let amend = self.check_replace(r, stop_price)?;
        let m = &self.markets[amend.at.market()];
        out.push(Ev::Replaced {
            order_id: amend.old.id,
            client_order_id: amend.coid,
            price: amend.price * m.tick_units,
            qty: amend.qty * m.lot_units,
            leaves_qty: amend.leaves() * m.lot_units,
            stop_price: (amend.stop.as_ref())
                .map(|s| amend.new_stop.unwrap_or(s.stop) * m.tick_units),
        });
        match amend.at {
            At::Stop(index, pos) => {
                // A stop has no place on a book to keep or lose.
                let s = &mut self.markets[index].stops[pos];
                s.order.client_order_id = amend.coid;
                s.order.price = Some(amend.price);
                s.order.qty = amend.qty;
                s.stop = amend.new_stop.unwrap_or(s.stop);
            }
            At::Book(..) => self.amend_resting(&amend, out),
            At::Mid(..) => self.amend_mid(&amend, out),
        }
        Ok(())
    }

    /// Every check of a replace, in the order the refusals are documented.
    pub(super) fn check_replace(
        &self,
        r: &Replace,
        stop_price: Option<Dec>,
    ) -> Result<Amend, RejectReason> {
        let at = self.resolve(r.account, &r.order)?;
        let m = &self.markets[at.market()];
        if m.halted {
            return Err(RejectReason::InstrumentHalted);
        }
        let old = self.order(at).clone();
        let old_price = old.price.unwrap_or(0);
        let stop = match at {
            At::Stop(_, pos) => Some(m.stops[pos].clone()),
            At::Book(..) | At::Mid(..) => None,
        };
        if r.price.is_some() && stop.as_ref().is_some_and(|s| s.market) {
            return Err(RejectReason::PriceNotAllowed);
        }
        let price = r
            .price
            .map(|p| m.price_ticks(p))
            .transpose()?
            .unwrap_or(old_price);
        let new_stop = match (stop_price, &stop) {
            (None, _) => None,
            (Some(_), None) => return Err(RejectReason::StopPriceNotAllowed),
            (Some(to), Some(s)) => m.check_new_stop(to, s)?,
        };
        let qty = r.qty.map(|q| m.qty_lots(q)).transpose()?.unwrap_or(old.qty);
        let coid = r.new_client_order_id.unwrap_or(old.client_order_id);
        let renamed = coid != old.client_order_id;
        if price == old_price && qty == old.qty && !renamed && new_stop.is_none() {
            return Err(RejectReason::NothingToReplace);
        }
        if qty < old.filled {
            return Err(RejectReason::ReplaceBelowFilled);
        }
        if old.dark && qty > old.filled && m.below_hidden_minimum(price, qty) {
            return Err(RejectReason::HiddenBelowMinimum);
        }
        if renamed && self.is_open(old.account, &coid) {
            return Err(RejectReason::DuplicateClientOrderId);
        }
        let leaves = qty - old.filled;
        if leaves > 0
            && price != old_price
            && old.post_only
            && stop.is_none()
            && m.would_cross(old.side, price)
        {
            return Err(RejectReason::PostOnlyWouldTake);
        }
        Ok(Amend {
            at,
            old,
            price,
            qty,
            coid,
            stop,
            new_stop,
        })
    }

    /// Applies a checked replace to an order on a book.
    pub(super) fn amend_resting(&mut self, amend: &Amend, out: &mut Vec<Ev>) {
        let index = amend.at.market();
        let (price, qty) = (amend.price, amend.qty);
        let old_price = amend.old.price.unwrap_or(0);
        let keeps_priority = price == old_price && qty <= amend.old.qty;
        let mut order = self.take(amend.at);
        order.client_order_id = amend.coid;
        order.price = Some(price);
        // An iceberg that keeps its place loses hidden lots first; one that
        // moves takes whole and rests a new slice.
        let shrink = order.qty - qty.min(order.qty);
        order.hidden = if keeps_priority {
            order.hidden - shrink.min(order.hidden)
        } else {
            0
        };
        order.qty = qty;
        if amend.leaves() == 0 {
            self.close([order]);
        } else if keeps_priority {
            self.markets[index].put_back(order);
        } else {
            // A replace that loses priority is a new arrival, and trades
            // like a new order if it now crosses.
            let from = out.len();
            self.execute(index, order, TimeInForce::Gtc, out);
            self.note_fills(from, out);
        }
    }
}
