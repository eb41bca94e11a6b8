//! Settlement: one fill between a taker and a maker, both legs and the fees
//! at once, in steps that each keep one part of the state whole:
//!
//! 1. **price** the fill (lots, notional, fees) and check the buyer's
//!    reservation pays for it; nothing changes if it cannot;
//! 2. the **orders**: what each has filled and still holds reserved;
//! 3. the **balances**: buyer, seller and the fee account;
//! 4. the **book**: the maker's level and the reference price;
//! 5. the buyer's reservation **trued up** to what its remainder needs;
//! 6. the **report**: the trade, the balances, the member counters and
//!    one-cancels-other partners;
//! 7. the **maker** closed when done, or its iceberg refilled.
//!
//! Stops that the trade triggers are handled after the command
//! (`stops/`), so settlement never re-enters matching.
//!
//! Asserted in release builds, since a wrong answer would move funds that
//! are not there: a limit buy's reservation pays for every fill and, after
//! it, still covers its remainder; a sell holds the base it delivers; the
//! fee account never pays out; the maker's level holds the lots it gives.
//! `Engine::audit` checks the sums (balances against supply, reservations
//! against holds) between commands.

use exchange_types::event;
use exchange_types::{Event, EventKind, Side};

use crate::accounts::sub_signed;
use crate::engine::{Engine, FEE_ACCOUNT};
use crate::instrument::{buy_cost, fee};
use crate::matching::Filled;

/// A fill, priced, before anything changes.
#[derive(Clone, Copy)]
struct Fill {
    taker: u32,
    maker: u32,
    buyer: u32,
    seller: u32,
    instrument: u32,
    taker_side: Side,
    price: u64,
    lots: u64,
    /// Of `lots`, those taken from the maker's shown slice; the rest
    /// were hidden.
    from_shown: u64,
    notional: u64,
    base_units: u64,
    maker_fee: i64,
    taker_fee: i64,
    buyer_fee: i64,
    seller_fee: i64,
    /// What the buyer's reservation pays: the notional and a fee; a
    /// rebate is paid to available instead.
    from_reservation: u64,
}

/// The accounts a fill moved, for its report.
#[derive(Clone, Copy)]
struct Legs {
    buyer_account: u32,
    seller_account: u32,
}

impl Engine {
    /// One trade between the taker and a maker on the best level, for as
    /// much as both have: what the maker shows, or with `deep` (every shown
    /// lot at this price has traded) its hidden quantity as well, which
    /// then goes first and leaves the slice whole while any is left. Changes
    /// nothing and says `Stopped` if a market buy's reservation cannot pay
    /// for it.
    #[inline(always)]
    pub(crate) fn fill(
        &mut self,
        taker: u32,
        maker: u32,
        price: u64,
        deep: bool,
        out: &mut Vec<Event>,
    ) -> Filled {
        let fill = self.price_fill(taker, maker, price, deep);
        if self.orders.get(fill.buyer).reserved < fill.from_reservation {
            // A market buy reserved what the book offered when it arrived,
            // and may stop short of it. A limit buy always holds its
            // remainder at its limit plus the largest fee, which covers any
            // fill at a price as good: falling short is a bug, and a trade
            // it could not pay for would take another order's funds.
            assert!(
                self.orders.get(fill.buyer).is_market,
                "a limit buy holds {} but its fill needs {}",
                self.orders.get(fill.buyer).reserved,
                fill.from_reservation
            );
            return Filled::Stopped;
        }
        let legs = self.settle_orders(&fill);
        self.settle_balances(&fill, legs);
        let maker_market = self.settle_book(&fill);
        self.true_up_buyer(&fill);
        self.report_fill(&fill, legs, out);
        self.settle_maker(&fill, maker_market, out)
    }

    /// One trade between two midpoint orders at the midpoint `price`:
    /// the orders, the balances, the buyer's reservation and the report,
    /// as in the lit book, but no level (the orders rest on none) and no
    /// last price (`midpoint/matching.rs`). The caller closes an order
    /// the trade completed.
    pub(crate) fn fill_midpoint(
        &mut self,
        taker: u32,
        maker: u32,
        price: u64,
        out: &mut Vec<Event>,
    ) {
        let fill = self.price_fill(taker, maker, price, false);
        // A midpoint buy holds its remainder at its limit (or bound), at
        // or above the midpoint, plus the largest fee.
        assert!(
            self.orders.get(fill.buyer).reserved >= fill.from_reservation,
            "a midpoint buy holds {} but its fill needs {}",
            self.orders.get(fill.buyer).reserved,
            fill.from_reservation
        );
        let legs = self.settle_orders(&fill);
        self.settle_balances(&fill, legs);
        self.true_up_buyer(&fill);
        self.report_fill(&fill, legs, out);
    }

    #[inline(always)]
    fn price_fill(&self, taker: u32, maker: u32, price: u64, deep: bool) -> Fill {
        let t = self.orders.get(taker);
        let m = self.orders.get(maker);
        let shown = m.displayed();
        let lots = t.leaves().min(if deep { m.leaves() } else { shown });
        let inst = &self.instruments[t.instrument as usize];
        // Not reachable from input: a resting buy's notional at its own
        // price was reserved when it was placed or replaced, a limit taker's
        // at a limit at least as good as `price`, and a market buy's whole
        // walk was summed without overflow before it was accepted. Skipping
        // the fill instead would leave a crossed book.
        let notional = inst
            .notional(price, lots)
            .unwrap_or_else(|| panic!("the notional of {lots} lots at {price} overflowed"));
        let maker_fee = fee(notional, inst.maker_fee_bps);
        let taker_fee = fee(notional, inst.taker_fee_bps);
        let (buyer, seller, buyer_fee, seller_fee) = match t.side {
            Side::Buy => (taker, maker, taker_fee, maker_fee),
            Side::Sell => (maker, taker, maker_fee, taker_fee),
        };
        Fill {
            taker,
            maker,
            buyer,
            seller,
            instrument: t.instrument,
            taker_side: t.side,
            price,
            lots,
            // A deep fill has traded every shown lot at this price: it
            // takes the iceberg's hidden lots first, so the slice shown
            // after it is min(display, open), as Coinbase and TSX publish
            // it. Otherwise `lots` is within the slice.
            from_shown: if deep {
                lots - lots.min(m.hidden)
            } else {
                lots
            },
            notional,
            base_units: lots * inst.lot_units,
            maker_fee,
            taker_fee,
            buyer_fee,
            seller_fee,
            from_reservation: notional + buyer_fee.max(0).unsigned_abs(),
        }
    }

    /// Both orders' fills and reservations, and the maker's hidden lots.
    #[inline(always)]
    fn settle_orders(&mut self, fill: &Fill) -> Legs {
        let buyer_order = self.orders.get_mut(fill.buyer);
        buyer_order.reserved -= fill.from_reservation;
        buyer_order.filled += fill.lots;
        let buyer_account = buyer_order.account;
        let seller_order = self.orders.get_mut(fill.seller);
        // A sell holds exactly its open quantity in base units; less would
        // wrap below in a release build and invent funds.
        assert!(
            seller_order.reserved >= fill.base_units,
            "a sell holds {} but delivers {}",
            seller_order.reserved,
            fill.base_units
        );
        seller_order.reserved -= fill.base_units;
        seller_order.filled += fill.lots;
        let seller_account = seller_order.account;
        if fill.lots > fill.from_shown {
            self.orders.get_mut(fill.maker).hidden -= fill.lots - fill.from_shown;
        }
        Legs {
            buyer_account,
            seller_account,
        }
    }

    /// The buyer pays the notional and its fee from what it reserved and
    /// receives base; the seller delivers base it reserved and receives
    /// the notional less its fee; the fee account collects both fees.
    #[inline(always)]
    fn settle_balances(&mut self, fill: &Fill, legs: Legs) {
        let inst = &self.instruments[fill.instrument as usize];
        let (base, quote) = (inst.base, inst.quote);
        let accounts = &mut self.accounts;
        accounts.pay_for_fill(legs.buyer_account, quote, fill.notional, fill.buyer_fee);
        accounts.credit(legs.buyer_account, base, fill.base_units);
        accounts.deliver_held(legs.seller_account, base, fill.base_units);
        let proceeds = sub_signed(fill.notional, 0, fill.seller_fee);
        accounts.credit(legs.seller_account, quote, proceeds);

        // Instruments are refused (and snapshots too) unless the taker
        // fee covers the maker rebate; paying out would take the fee
        // account's balance below zero.
        assert!(
            fill.buyer_fee + fill.seller_fee >= 0,
            "the fee account would pay out"
        );
        let collected = (fill.buyer_fee + fill.seller_fee).unsigned_abs();
        accounts.credit(FEE_ACCOUNT as u32, quote, collected);
    }

    /// Takes the shown lots off the maker's level and makes the fill's
    /// price the reference. Returns whether the maker was a market order
    /// (an auction's, the only kind), which is on no level.
    #[inline(always)]
    fn settle_book(&mut self, fill: &Fill) -> bool {
        // The maker rests on the best level, whose aggregate includes its
        // open quantity. Skipping a missing level, or wrapping a short
        // aggregate, would publish wrong levels from here on.
        let m = self.orders.get(fill.maker);
        let (maker_market, hidden) = (m.is_market, m.is_hidden);
        if !maker_market {
            self.books[fill.instrument as usize]
                .resting_side_mut(fill.taker_side.opposite(), hidden)
                .fill_best(fill.from_shown);
        }
        self.instruments[fill.instrument as usize].reference_ticks = Some(fill.price);
        maker_market
    }

    /// A limit buy keeps exactly what its remainder needs at its limit;
    /// what a better price or a smaller fee left over goes back.
    #[inline(always)]
    fn true_up_buyer(&mut self, fill: &Fill) {
        let buyer_order = self.orders.get(fill.buyer);
        if buyer_order.is_market {
            return;
        }
        let inst = &self.instruments[fill.instrument as usize];
        // Both hold from input: the remainder is smaller than what was
        // reserved for at this limit, and what this fill took from the
        // reservation is at most what those lots had set aside (the
        // price is as good as the limit, and the fee at most the
        // largest, each rounded down). Clamping would hide an order
        // left holding less than its remainder needs.
        let needed = inst
            .notional(buyer_order.price, buyer_order.leaves())
            .and_then(|n| buy_cost(n, inst.max_fee_bps()))
            .expect("a limit buy's remainder costs less than the whole");
        let excess = buyer_order.reserved.checked_sub(needed).unwrap_or_else(|| {
            panic!(
                "a limit buy holds {} after a fill but its remainder needs {needed}",
                buyer_order.reserved
            )
        });
        self.release(fill.buyer, excess);
    }

    /// The trade and the balances it moved, then the member counters and
    /// one-cancels-other partners the fill concerns.
    #[inline(always)]
    fn report_fill(&mut self, fill: &Fill, legs: Legs, out: &mut Vec<Event>) {
        let trade_id = self.next_trade_id;
        self.next_trade_id += 1;
        let f = *fill;
        self.emit_with(out, |e| {
            let inst = &e.instruments[f.instrument as usize];
            let (t, m) = (e.orders.get(f.taker), e.orders.get(f.maker));
            EventKind::Trade(event::Trade {
                trade_id,
                symbol: inst.symbol,
                price: inst.price_units(f.price),
                qty: inst.qty_units(f.lots),
                maker_order_id: m.id,
                taker_order_id: t.id,
                maker_account: e.accounts.get(m.account).id(),
                taker_account: e.accounts.get(t.account).id(),
                aggressor_side: f.taker_side,
                maker_fee: f.maker_fee,
                taker_fee: f.taker_fee,
                maker_leaves_qty: inst.qty_units(m.leaves()),
                taker_leaves_qty: inst.qty_units(t.leaves()),
                midpoint: t.is_midpoint,
            })
        });
        let inst = &self.instruments[fill.instrument as usize];
        let (base, quote) = (inst.base, inst.quote);
        self.emit_balance(out, legs.buyer_account, quote);
        self.emit_balance(out, legs.buyer_account, base);
        self.emit_balance(out, legs.seller_account, base);
        self.emit_balance(out, legs.seller_account, quote);
        self.emit_balance(out, FEE_ACCOUNT as u32, quote);
        self.count_fill(legs.buyer_account, fill.instrument, fill.lots, out);
        self.count_fill(legs.seller_account, fill.instrument, fill.lots, out);
        if self.orders.get(fill.taker).oco {
            self.note_oco_fill(fill.taker);
        }
        if self.orders.get(fill.maker).oco {
            self.note_oco_fill(fill.maker);
        }
    }

    /// Closes a maker the fill completed, or shows the next slice of an
    /// iceberg whose shown part it took.
    #[inline(always)]
    fn settle_maker(&mut self, fill: &Fill, maker_market: bool, out: &mut Vec<Event>) -> Filled {
        let maker = fill.maker;
        let m = self.orders.get(maker);
        if m.leaves() == 0 {
            if maker_market {
                self.unhold_call_market(maker);
            } else {
                let book_side = self.books[fill.instrument as usize]
                    .resting_side_mut(fill.taker_side.opposite(), m.is_hidden);
                book_side.unlink(&mut self.orders, maker);
            }
            self.release_all(maker, out);
            self.close_order(maker);
        } else if m.hidden != 0 && m.hidden == m.leaves() {
            self.refill_iceberg(maker);
            return Filled::Refilled;
        }
        Filled::Traded
    }
}
