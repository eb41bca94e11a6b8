//! The demo takers: every 0.3 to 2 seconds one of them, at random, sends a
//! small order on a random instrument. In continuous trading it is a
//! market or immediate-or-cancel order, so the maker's quotes trade and the
//! tape moves. In a call, where immediate orders are refused and nothing
//! matches, it is a limit order for the auction (`at_open` / `at_close`)
//! priced through the best opposite quote: the book crosses, the core
//! publishes an indicative price, and the auction has volume to uncross.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use exchange_types::{
    AccountId, ClientOrderId, Command, Dec, OrderType, Phase, Place, SelfTradePrevention, Side,
    Symbol, TimeInForce, TradingStatus, UNITS_PER_WHOLE,
};
use tokio::sync::watch;

use super::ladder::{collar_band, lots_for_notional, taker_price};
use super::rng::Rng;
use super::{core_entry, pause, top_up, Funding, Market, TAKER_QUOTE};
use exchange_node::sequencer::{Handle, SubmitError};
use exchange_node::MarketQuery;

pub(crate) struct Takers {
    pub handle: Handle,
    pub stop: watch::Receiver<bool>,
    pub accounts: Vec<AccountId>,
    pub markets: Vec<Market>,
    pub funding: Arc<Vec<Funding>>,
    pub prefix: String,
}

/// What a taker looks at before it trades.
struct View {
    best_bid: Option<u64>,
    best_ask: Option<u64>,
    reference: Option<u64>,
    trading: bool,
    phase: Phase,
}

/// An order a taker decided on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Order {
    side: Side,
    /// `None`: a market order.
    price: Option<u64>,
    qty: u64,
    tif: TimeInForce,
    /// Quote units it is worth, about.
    notional: u64,
}

/// Which takers buy in each instrument's call. Half of them buy and the
/// others sell, so that no taker trades with itself in the uncross (which,
/// as at the venues, applies no self-trade prevention); which half buys is
/// drawn again whenever the instrument changes phase.
#[derive(Default)]
struct CallSides(BTreeMap<Symbol, (Phase, bool)>);

impl CallSides {
    fn observe(&mut self, rng: &mut Rng, symbol: Symbol, phase: Phase) {
        let entry = self.0.entry(symbol).or_insert((phase, rng.chance(50)));
        if entry.0 != phase {
            *entry = (phase, rng.chance(50));
        }
    }

    fn side(&self, symbol: Symbol, taker: usize) -> Side {
        let even_buy = self.0.get(&symbol).is_some_and(|(_, coin)| *coin);
        if taker.is_multiple_of(2) == even_buy {
            Side::Buy
        } else {
            Side::Sell
        }
    }
}

impl Takers {
    pub async fn run(mut self, mut rng: Rng) {
        let mut next_id = 0u64;
        let mut sides = CallSides::default();
        let mut wait = Duration::from_millis(rng.between(300, 2_000));
        while pause(&mut self.stop, wait).await {
            wait = Duration::from_millis(rng.between(300, 2_000));
            match self.trade_once(&mut rng, &mut next_id, &mut sides).await {
                Ok(()) => {}
                Err(
                    SubmitError::Overloaded
                    | SubmitError::NotLeader { .. }
                    | SubmitError::NoSpace
                    | SubmitError::SessionExpired,
                ) => wait = Duration::from_millis(rng.between(1_000, 3_000)),
                Err(SubmitError::Stopped) => break,
            }
        }
        tracing::debug!("demo takers stopped");
    }

    async fn trade_once(
        &self,
        rng: &mut Rng,
        next_id: &mut u64,
        sides: &mut CallSides,
    ) -> Result<(), SubmitError> {
        let (Some(taker), Some(market)) = (
            pick_index(rng, self.accounts.len()),
            pick(rng, &self.markets),
        ) else {
            return Ok(());
        };
        let account = self.accounts[taker];
        let symbol = market.symbol;
        let view = self.view(symbol).await?;
        if !view.trading {
            return Ok(());
        }
        sides.observe(rng, symbol, view.phase);
        let order = match view.phase {
            Phase::Continuous => immediate(rng, market, &view),
            Phase::PreOpen | Phase::ClosingCall => {
                for_the_auction(rng, market, &view, sides.side(symbol, taker))
            }
            // Nothing to take, or no orders taken.
            _ => None,
        };
        let Some(order) = order else {
            return Ok(());
        };
        // What the order may spend, with room for slippage and fees.
        let (asset, need) = match order.side {
            Side::Buy => (market.quote, order.notional.saturating_mul(2)),
            Side::Sell => (market.base, order.qty),
        };
        if let Some(grant) = self.funding.iter().find(|f| f.asset == asset) {
            top_up(&self.handle, account, asset, grant.taker.max(need), need).await?;
        }
        *next_id += 1;
        let Ok(client_order_id) = ClientOrderId::new(&format!("{}{next_id}", self.prefix)) else {
            return Ok(());
        };
        let place = place(account, client_order_id, symbol, order);
        self.handle
            .submit(core_entry(Command::Place(place)))
            .await?;
        Ok(())
    }

    async fn view(&self, symbol: Symbol) -> Result<View, SubmitError> {
        let live = self
            .handle
            .markets(MarketQuery {
                symbol: Some(symbol),
                depth: 1,
                trades: 0,
            })
            .await?
            .into_one();
        Ok(View {
            best_bid: live.as_ref().and_then(|m| m.book.bids.first().map(|l| l.0)),
            best_ask: live.as_ref().and_then(|m| m.book.asks.first().map(|l| l.0)),
            reference: live.as_ref().and_then(|m| m.instrument.reference_price),
            trading: live
                .as_ref()
                .is_some_and(|m| m.instrument.status == TradingStatus::Trading),
            phase: live.map_or(Phase::Closed, |m| m.instrument.phase),
        })
    }
}

/// About 100 to 3 000 quote units.
fn notional(rng: &mut Rng) -> u64 {
    TAKER_QUOTE * UNITS_PER_WHOLE / 1_000 * rng.between(10, 300) / 100
}

/// `slippage_bps` through `best`, inside the collar.
fn through(market: &Market, view: &View, buy: bool, best: u64, slippage_bps: u64) -> Option<u64> {
    let band = collar_band(
        view.reference.unwrap_or(market.anchor),
        market.collar_bps,
        market.spec.tick,
    );
    taker_price(buy, best, slippage_bps, market.spec.tick, band)
}

/// A market or immediate-or-cancel order against the best quote, on a
/// random side; `None` when that side of the book is empty.
fn immediate(rng: &mut Rng, market: &Market, view: &View) -> Option<Order> {
    let side = if rng.chance(50) {
        Side::Buy
    } else {
        Side::Sell
    };
    let best = match side {
        Side::Buy => view.best_ask,
        Side::Sell => view.best_bid,
    }?;
    let notional = notional(rng);
    let qty = lots_for_notional(notional, best, &market.spec) * market.spec.lot;
    let price = if rng.chance(50) {
        Some(through(
            market,
            view,
            side == Side::Buy,
            best,
            rng.between(5, 20),
        )?)
    } else {
        None
    };
    Some(Order {
        side,
        price,
        qty,
        tif: TimeInForce::Ioc,
        notional,
    })
}

/// A limit order for the call's auction, 5 to 20 basis points through the
/// best opposite order (or the reference price, on an empty side), so it
/// crosses the book; it lives for that auction only.
fn for_the_auction(rng: &mut Rng, market: &Market, view: &View, side: Side) -> Option<Order> {
    let tif = match view.phase {
        Phase::PreOpen => TimeInForce::AtOpen,
        Phase::ClosingCall => TimeInForce::AtClose,
        _ => return None,
    };
    let opposite = match side {
        Side::Buy => view.best_ask,
        Side::Sell => view.best_bid,
    };
    let best = opposite.or(view.reference).unwrap_or(market.anchor);
    let price = through(market, view, side == Side::Buy, best, rng.between(5, 20))?;
    let notional = notional(rng);
    let qty = lots_for_notional(notional, price, &market.spec) * market.spec.lot;
    Some(Order {
        side,
        price: Some(price),
        qty,
        tif,
        notional,
    })
}

/// The command for a taker's order: a limit at its price if it has one,
/// else a market order.
fn place(
    account: AccountId,
    client_order_id: ClientOrderId,
    symbol: Symbol,
    order: Order,
) -> Place {
    Place {
        account,
        client_order_id,
        symbol,
        side: order.side,
        order_type: if order.price.is_some() {
            OrderType::Limit
        } else {
            OrderType::Market
        },
        price: order.price.map(Dec::from_units),
        qty: Dec::from_units(order.qty),
        tif: order.tif,
        post_only: false,
        stp: SelfTradePrevention::CancelNewest,
        ext: None,
    }
}

fn pick_index(rng: &mut Rng, len: usize) -> Option<usize> {
    (len > 0).then(|| rng.between(0, len as u64 - 1) as usize)
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> Option<&'a T> {
    items.get(pick_index(rng, items.len())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder::LadderSpec;
    use exchange_types::AssetCode;

    fn acme() -> Market {
        let cents = UNITS_PER_WHOLE / 100;
        Market {
            symbol: Symbol::new("ACME-USD").unwrap(),
            base: AssetCode::new("ACME").unwrap(),
            quote: AssetCode::new("USD").unwrap(),
            spec: LadderSpec {
                tick: cents,
                lot: UNITS_PER_WHOLE,
                min_lots: 1,
                max_lots: 50_000,
                levels: 10,
                half_spread_bps: 2,
                step_bps: 1,
            },
            collar_bps: 1_000,
            anchor: 14_250 * cents,
            start: 14_250 * cents,
        }
    }

    fn view(phase: Phase) -> View {
        let cents = UNITS_PER_WHOLE / 100;
        View {
            best_bid: Some(14_249 * cents),
            best_ask: Some(14_251 * cents),
            reference: Some(14_250 * cents),
            trading: true,
            phase,
        }
    }

    /// In a call the order rests for the auction only and crosses the
    /// opposite best quote; in continuous trading it is immediate.
    #[test]
    fn demo_taker_orders_fit_the_phase() {
        let market = acme();
        let mut rng = Rng::new(7);
        for (phase, tif) in [
            (Phase::PreOpen, TimeInForce::AtOpen),
            (Phase::ClosingCall, TimeInForce::AtClose),
        ] {
            let call = view(phase);
            for side in [Side::Buy, Side::Sell] {
                let order = for_the_auction(&mut rng, &market, &call, side).unwrap();
                assert_eq!((order.side, order.tif), (side, tif));
                let price = order.price.unwrap();
                match side {
                    Side::Buy => assert!(price > call.best_ask.unwrap()),
                    Side::Sell => assert!(price < call.best_bid.unwrap()),
                }
                assert_eq!(price % market.spec.tick, 0);
                assert!(order.qty > 0 && order.qty.is_multiple_of(market.spec.lot));
            }
        }
        assert_eq!(
            for_the_auction(&mut rng, &market, &view(Phase::Continuous), Side::Buy),
            None
        );
        let continuous = view(Phase::Continuous);
        for _ in 0..20 {
            let order = immediate(&mut rng, &market, &continuous).unwrap();
            assert_eq!(order.tif, TimeInForce::Ioc);
        }
    }

    #[test]
    fn demo_takers_split_into_buyers_and_sellers_for_each_call() {
        let symbol = Symbol::new("ACME-USD").unwrap();
        let mut rng = Rng::new(1);
        let mut sides = CallSides::default();
        let mut flips = 0;
        let mut last = None;
        for round in 0..40 {
            let phase = if round % 2 == 0 {
                Phase::PreOpen
            } else {
                Phase::Continuous
            };
            sides.observe(&mut rng, symbol, phase);
            let three: Vec<Side> = (0..3).map(|taker| sides.side(symbol, taker)).collect();
            assert_eq!(three[0], three[2]);
            assert_ne!(three[0], three[1], "both sides in every call");
            flips += usize::from(last.is_some_and(|side| side != three[0]));
            last = Some(three[0]);
        }
        assert!(flips > 0, "which half buys changes from call to call");
    }
}
