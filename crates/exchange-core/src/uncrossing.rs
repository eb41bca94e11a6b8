//! Executing an uncrossing: once `auction.rs` has chosen the price, the
//! orders that cross at it trade, pair by pair, until one side has none
//! left at that price.
//!
//! Each side is taken in price-time priority, a market order priced at
//! its bound and ahead of the limit orders at that price: so market
//! orders first, in time priority, whenever their bound is beyond every
//! limit price (a collar bounds both alike). Of each pair, the later order is
//! the taker for fees, as it would have been had both arrived in
//! continuous trading; a market order always takes. An iceberg takes part
//! with its whole volume (as on Xetra): its hidden lots trade first and
//! its shown slice last, so its level loses only what the slice loses.
//!
//! Every fill is within both orders' prices, so it is always paid for:
//! a fill that is not is a bug, asserted in release builds.

use std::collections::BTreeSet;

use exchange_types::event::{self, AuctionKind};
use exchange_types::{Event, EventKind, Side};

use crate::engine::Engine;
use crate::matching::Filled;

/// One side's market orders waiting for the uncrossing, in time priority.
struct MarketQueue {
    rest: std::vec::IntoIter<u32>,
    head: Option<u32>,
}

impl MarketQueue {
    fn new(slots: Vec<u32>) -> MarketQueue {
        let mut rest = slots.into_iter();
        let head = rest.next();
        MarketQueue { rest, head }
    }

    fn advance(&mut self) {
        self.head = self.rest.next();
    }
}

/// The uncrossing in progress on one instrument.
struct Uncrossing {
    index: u32,
    price: u64,
    buys: MarketQueue,
    sells: MarketQueue,
    /// Levels a fill changed, (0 for bids or 1 for asks, price), reported
    /// once at the end.
    touched: BTreeSet<(u8, u64)>,
}

/// A buy and a sell that cross at the uncrossing price, and which takes.
#[derive(Clone, Copy)]
struct Pair {
    buy: u32,
    sell: u32,
    taker: u32,
    maker: u32,
    taker_market: bool,
    maker_market: bool,
}

impl Engine {
    /// Executes the uncrossing of instrument `index` at one price, and
    /// returns that price; `None` when nothing crossed.
    pub(crate) fn run_auction(
        &mut self,
        index: u32,
        kind: AuctionKind,
        out: &mut Vec<Event>,
    ) -> Option<u64> {
        let u = self.uncross_of(index)?;
        let price = u.price;
        self.volatility_auctioned(index, price);
        self.emit_with(out, |e| {
            let inst = &e.instruments[index as usize];
            EventKind::Auction(event::Auction {
                symbol: inst.symbol,
                kind,
                price: inst.price_units(price),
                volume: inst.qty_units(u.volume),
            })
        });
        let (market_buys, market_sells) = if self.call_markets.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            self.call_markets_at(index, price)
        };
        let mut run = Uncrossing {
            index,
            price,
            buys: MarketQueue::new(market_buys),
            sells: MarketQueue::new(market_sells),
            touched: BTreeSet::new(),
        };
        while let Some(pair) = self.next_pair(&run) {
            self.trade_pair(&mut run, pair, out);
        }
        for &(side, level_price) in &run.touched {
            let side = if side == 0 { Side::Buy } else { Side::Sell };
            let qty = self.books[index as usize]
                .side(side)
                .levels_best_first()
                .find(|l| l.price == level_price)
                .map_or(0, |l| l.qty);
            self.emit_book(out, index, side, level_price, qty);
        }
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
        Some(price)
    }

    /// The next buy and sell to trade at the price, if both sides have one.
    fn next_pair(&self, run: &Uncrossing) -> Option<Pair> {
        let book = &self.books[run.index as usize];
        let price = run.price;
        // Hidden orders execute too, after the displayed ones at a price.
        let best_bid = book
            .next_level(Side::Buy)
            .map(|(l, _)| l)
            .filter(|l| l.price >= price);
        let best_ask = book
            .next_level(Side::Sell)
            .map(|(l, _)| l)
            .filter(|l| l.price <= price);
        // A market order's bound is its price for priority, ahead of a
        // limit order at the same price: a limit order priced beyond it
        // goes first, or it could be left crossing the book.
        let market_buy = run
            .buys
            .head
            .filter(|&m| best_bid.is_none_or(|l| self.orders.get(m).price >= l.price));
        let market_sell = run
            .sells
            .head
            .filter(|&m| best_ask.is_none_or(|l| self.orders.get(m).price <= l.price));
        let buy = market_buy.or(best_bid.map(|l| l.head))?;
        let sell = market_sell.or(best_ask.map(|l| l.head))?;
        // A market order takes: it is on no level a maker's fill could
        // reduce, and it would have taken in continuous trading too.
        // Between two market orders, or two limit orders, the later one
        // takes.
        let (buy_market, sell_market) = (market_buy.is_some(), market_sell.is_some());
        let (taker, maker) = if buy_market != sell_market {
            if buy_market {
                (buy, sell)
            } else {
                (sell, buy)
            }
        } else if self.orders.get(buy).id > self.orders.get(sell).id {
            (buy, sell)
        } else {
            (sell, buy)
        };
        Some(Pair {
            buy,
            sell,
            taker,
            maker,
            taker_market: buy_market || sell_market,
            maker_market: buy_market && sell_market,
        })
    }

    /// Trades one pair for as much as both have, then moves past whichever
    /// of them is done.
    fn trade_pair(&mut self, run: &mut Uncrossing, pair: Pair, out: &mut Vec<Event>) {
        let Pair { taker, maker, .. } = pair;
        // The displayed levels the pair changes, reported once the
        // auction is done; a hidden order's level is never reported.
        let limit_orders = if pair.taker_market {
            [(!pair.maker_market).then_some(maker), None]
        } else {
            [Some(pair.buy), Some(pair.sell)]
        };
        for slot in limit_orders.into_iter().flatten() {
            let o = self.orders.get(slot);
            if !o.is_hidden {
                run.touched
                    .insert((u8::from(o.side == Side::Sell), o.price));
            }
        }
        let maker_id = self.orders.get(maker).id;
        let shown_before = self.orders.get(taker).displayed();
        self.orders.get_mut(taker).hidden = 0;
        // Limit orders hold a reservation at their limit and market buys
        // at their bound, which the uncrossing price never passes.
        let filled = self.fill(taker, maker, run.price, true, out);
        assert!(
            !matches!(filled, Filled::Stopped),
            "an auction fill within the orders' prices failed"
        );
        // `fill` closes a maker it fills whole.
        if pair.maker_market && !self.order_by_id.contains_key(&maker_id) {
            run.queue_of(pair, maker).advance();
        }
        if pair.taker_market {
            if self.orders.get(taker).leaves() == 0 {
                self.unhold_call_market(taker);
                self.release_all(taker, out);
                self.close_order(taker);
                run.queue_of(pair, taker).advance();
            }
            return;
        }
        self.settle_limit_taker(run.index, taker, shown_before, out);
    }

    /// A limit taker shows again what is left of its slice, and leaves its
    /// level when done.
    fn settle_limit_taker(
        &mut self,
        index: u32,
        taker: u32,
        shown_before: u64,
        out: &mut Vec<Event>,
    ) {
        let (taker_side, taker_price, leaves, hidden) = {
            let t = self.orders.get(taker);
            (t.side, t.price, t.leaves(), t.is_hidden)
        };
        let shown_after = leaves.min(shown_before);
        self.orders.get_mut(taker).hidden = leaves - shown_after;
        let side = self.books[index as usize].resting_side_mut(taker_side, hidden);
        side.reduce(taker_price, shown_before - shown_after);
        if leaves == 0 {
            side.unlink(&mut self.orders, taker);
            self.release_all(taker, out);
            self.close_order(taker);
        }
    }
}

impl Uncrossing {
    /// The market queue `slot` of `pair` came from.
    fn queue_of(&mut self, pair: Pair, slot: u32) -> &mut MarketQueue {
        if slot == pair.buy {
            &mut self.buys
        } else {
            &mut self.sells
        }
    }
}
