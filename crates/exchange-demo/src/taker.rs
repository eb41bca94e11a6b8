//! The demo takers: every 0.3 to 2 seconds one of them, at random, sends a
//! small market or immediate-or-cancel order on a random instrument, so the
//! maker's quotes trade and the tape moves.

use std::sync::Arc;
use std::time::Duration;

use exchange_types::{
    AccountId, ClientOrderId, Command, Dec, OrderType, Place, SelfTradePrevention, Side, Symbol,
    TimeInForce, TradingStatus, UNITS_PER_WHOLE,
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
}

impl Takers {
    pub async fn run(mut self, mut rng: Rng) {
        let mut next_id = 0u64;
        let mut wait = Duration::from_millis(rng.between(300, 2_000));
        while pause(&mut self.stop, wait).await {
            wait = Duration::from_millis(rng.between(300, 2_000));
            match self.trade_once(&mut rng, &mut next_id).await {
                Ok(()) => {}
                Err(SubmitError::Overloaded | SubmitError::NotLeader { .. }) => {
                    wait = Duration::from_millis(rng.between(1_000, 3_000))
                }
                Err(SubmitError::Stopped) => break,
            }
        }
        tracing::debug!("demo takers stopped");
    }

    async fn trade_once(&self, rng: &mut Rng, next_id: &mut u64) -> Result<(), SubmitError> {
        let (Some(&account), Some(market)) = (pick(rng, &self.accounts), pick(rng, &self.markets))
        else {
            return Ok(());
        };
        let symbol = market.symbol;
        let view = self.view(symbol).await?;
        let side = if rng.chance(50) {
            Side::Buy
        } else {
            Side::Sell
        };
        let best = match side {
            Side::Buy => view.best_ask,
            Side::Sell => view.best_bid,
        };
        let (Some(best), true) = (best, view.trading) else {
            return Ok(());
        };
        let notional = TAKER_QUOTE * UNITS_PER_WHOLE / 1_000 * rng.between(10, 300) / 100;
        let qty = lots_for_notional(notional, best, &market.spec) * market.spec.lot;
        // What the order may spend, with room for slippage and fees.
        let (asset, need) = match side {
            Side::Buy => (market.quote, notional.saturating_mul(2)),
            Side::Sell => (market.base, qty),
        };
        if let Some(grant) = self.funding.iter().find(|f| f.asset == asset) {
            top_up(&self.handle, account, asset, grant.taker.max(need), need).await?;
        }
        let price = if rng.chance(50) {
            let band = collar_band(
                view.reference.unwrap_or(market.anchor),
                market.collar_bps,
                market.spec.tick,
            );
            match taker_price(
                side == Side::Buy,
                best,
                rng.between(5, 20),
                market.spec.tick,
                band,
            ) {
                Some(price) => Some(price),
                None => return Ok(()),
            }
        } else {
            None
        };
        *next_id += 1;
        let Ok(client_order_id) = ClientOrderId::new(&format!("{}{next_id}", self.prefix)) else {
            return Ok(());
        };
        let place = immediate_or_cancel(account, client_order_id, symbol, side, price, qty);
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
            trading: live.is_some_and(|m| m.instrument.status == TradingStatus::Trading),
        })
    }
}

/// A taker's order: a limit at `price` if it has one, else a market order.
fn immediate_or_cancel(
    account: AccountId,
    client_order_id: ClientOrderId,
    symbol: Symbol,
    side: Side,
    price: Option<u64>,
    qty: u64,
) -> Place {
    Place {
        account,
        client_order_id,
        symbol,
        side,
        order_type: if price.is_some() {
            OrderType::Limit
        } else {
            OrderType::Market
        },
        price: price.map(Dec::from_units),
        qty: Dec::from_units(qty),
        tif: TimeInForce::Ioc,
        post_only: false,
        stp: SelfTradePrevention::CancelNewest,
        ext: None,
    }
}

fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> Option<&'a T> {
    if items.is_empty() {
        return None;
    }
    items.get(rng.between(0, items.len() as u64 - 1) as usize)
}
