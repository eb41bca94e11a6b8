//! The demo market maker: one task per instrument quoting a ladder around
//! a slowly wandering fair price, moved by cancel-replace so the book keeps
//! changing.
//!
//! Its orders are post-only, so a quote that would cross is refused rather
//! than trading with the maker's own other side, and each refresh moves the
//! side that retreats from the other one before the side that approaches.
//! It quotes in continuous trading and in the calls, where its ladder is
//! the book the takers' auction orders cross; while the instrument takes
//! no orders (closed, post-close, halted) it leaves its quotes resting.

use std::sync::Arc;
use std::time::Duration;

use exchange_types::{
    AccountId, Cancel, ClientOrderId, Command, Dec, EventKind, MassCancel, OrderId, OrderRef,
    OrderType, Phase, Place, RejectReason, Replace, SelfTradePrevention, Side, TimeInForce,
    TradingStatus, UNITS_PER_WHOLE,
};
use tokio::sync::watch;

use super::ladder::{collar_band, ladder, next_fair, Ladder, Quote};
use super::rng::Rng;
use super::{core_entry, pause, submit_in_order, top_up, Funding, Market, MAKER_QUOTE};
use exchange_node::sequencer::{Handle, SubmitError};
use exchange_node::Applied;
use exchange_node::LogEntry;
use exchange_node::MarketQuery;

/// Refreshes between two checks of the maker's balances.
const TOP_UP_EVERY: u64 = 50;

pub(crate) struct Maker {
    pub handle: Handle,
    pub stop: watch::Receiver<bool>,
    pub account: AccountId,
    pub market: Market,
    pub funding: Arc<Vec<Funding>>,
    /// Start of every client order id of this maker.
    pub prefix: String,
}

/// One of the maker's orders as it last heard of it.
#[derive(Clone, Copy, Debug)]
struct Resting {
    order_id: OrderId,
    price: u64,
    /// Total quantity, filled included (what a replace names).
    qty: u64,
    /// Filled as of the last report; fills since then are unknown.
    filled: u64,
}

/// What the maker remembers of one instrument between refreshes.
struct Quoting {
    /// Bids then asks, one slot per level.
    book: [Vec<Option<Resting>>; 2],
    fair: u64,
    /// Quote units each level is worth.
    notionals: Vec<u64>,
    next_id: u64,
}

enum Action {
    Place(Quote),
    Replace(Resting, Quote),
    Cancel(OrderId),
}

/// Why a refresh ended early.
enum Halt {
    Overloaded,
    Stopped,
}

impl Maker {
    pub async fn run(mut self, mut rng: Rng) {
        let symbol = self.market.symbol;
        // Orders left by an earlier run would sit forever, unmanaged.
        let clear = core_entry(Command::MassCancel(MassCancel {
            account: self.account,
            symbol: Some(symbol),
        }));
        if matches!(self.handle.submit(clear).await, Err(SubmitError::Stopped)) {
            return;
        }
        let levels = self.market.spec.levels;
        let mut quoting = Quoting {
            book: [vec![None; levels], vec![None; levels]],
            fair: self.market.start,
            notionals: Vec::with_capacity(levels),
            next_id: 0,
        };
        let mut cycle = 0u64;
        loop {
            let mut wait = Duration::from_millis(rng.between(200, 500));
            match self.refresh(&mut rng, &mut quoting, cycle).await {
                Ok(()) => {}
                Err(Halt::Overloaded) => wait = Duration::from_millis(rng.between(1_000, 2_000)),
                Err(Halt::Stopped) => break,
            }
            cycle += 1;
            if !pause(&mut self.stop, wait).await {
                break;
            }
        }
        tracing::debug!(symbol = %symbol, "demo market maker stopped");
    }

    async fn refresh(&self, rng: &mut Rng, quoting: &mut Quoting, cycle: u64) -> Result<(), Halt> {
        if cycle.is_multiple_of(TOP_UP_EVERY) {
            self.top_up_balances().await?;
        }
        let Some(reference) = self.trading_reference().await? else {
            return Ok(());
        };
        let before = quoting.fair;
        let quotes = self.next_ladder(rng, quoting, reference);
        let order = if quoting.fair >= before {
            [Side::Sell, Side::Buy]
        } else {
            [Side::Buy, Side::Sell]
        };
        let (plan, entries) = self.plan(quoting, &quotes, order);
        let results = submit_in_order(&self.handle, entries).await;
        self.settle_all(quoting, plan, results).await
    }

    async fn top_up_balances(&self) -> Result<(), Halt> {
        let market = &self.market;
        for asset in [market.base, market.quote] {
            if let Some(grant) = self.funding.iter().find(|f| f.asset == asset) {
                top_up(
                    &self.handle,
                    self.account,
                    asset,
                    grant.maker,
                    grant.maker / 4,
                )
                .await
                .map_err(halt)?;
            }
        }
        Ok(())
    }

    /// The price to quote around, or `None` while the instrument takes no
    /// orders.
    async fn trading_reference(&self) -> Result<Option<u64>, Halt> {
        let info = self
            .handle
            .markets(MarketQuery {
                symbol: Some(self.market.symbol),
                ..MarketQuery::default()
            })
            .await
            .map_err(halt)?
            .into_one()
            .map(|m| {
                let i = m.instrument;
                (i.reference_price, i.status, i.phase)
            });
        let Some((reference, TradingStatus::Trading, phase)) = info else {
            return Ok(None);
        };
        if !takes_quotes(phase) {
            return Ok(None);
        }
        Ok(Some(reference.unwrap_or(self.market.anchor)))
    }

    /// Moves the fair price and the level sizes, and lays out the ladder.
    fn next_ladder(&self, rng: &mut Rng, quoting: &mut Quoting, reference: u64) -> Ladder {
        let market = &self.market;
        let tick = market.spec.tick;
        let band = collar_band(reference, market.collar_bps, tick);
        // Half the collar leaves the ladder room on both sides of the fair.
        let fair_band = collar_band(reference, market.collar_bps / 2, tick);
        let before = quoting.fair;
        // The fair price moves on about half the refreshes and each level
        // is resized now and then: the book keeps moving without every
        // refresh rewriting every order.
        if rng.chance(50) {
            let shock = rng.between_signed(-15, 15);
            quoting.fair = next_fair(before, market.anchor, shock, fair_band, tick);
        }
        let level_notional = MAKER_QUOTE * UNITS_PER_WHOLE / 1_000;
        let levels = market.spec.levels;
        quoting.notionals.resize(levels, 0);
        for (level, notional) in quoting.notionals.iter_mut().enumerate() {
            if *notional == 0 || rng.chance(20) {
                let deeper = 4 + level as u64;
                *notional = level_notional / 100 * rng.between(20, 120) * deeper / 4;
            }
        }
        ladder(quoting.fair, &market.spec, &quoting.notionals, band)
    }

    /// The action each level needs to reach `quotes`, sides in `order`,
    /// with the commands that carry them out.
    fn plan(
        &self,
        quoting: &mut Quoting,
        quotes: &Ladder,
        order: [Side; 2],
    ) -> (Vec<(Side, usize, Action)>, Vec<LogEntry>) {
        let mut plan: Vec<(Side, usize, Action)> = Vec::new();
        let mut entries = Vec::new();
        for side in order {
            let (slots, wanted) = match side {
                Side::Buy => (&quoting.book[0], &quotes.bids),
                Side::Sell => (&quoting.book[1], &quotes.asks),
            };
            for (level, slot) in slots.iter().enumerate() {
                let action = match (*slot, wanted.get(level).copied()) {
                    (None, None) => continue,
                    (None, Some(quote)) => Action::Place(quote),
                    (Some(resting), None) => Action::Cancel(resting.order_id),
                    (Some(resting), Some(quote)) => {
                        if resting.price == quote.price && resting.qty == resting.filled + quote.qty
                        {
                            continue;
                        }
                        Action::Replace(resting, quote)
                    }
                };
                if let Some(entry) = self.entry(side, &action, &mut quoting.next_id) {
                    entries.push(entry);
                    plan.push((side, level, action));
                }
            }
        }
        (plan, entries)
    }

    /// Records what the core did with each planned command, cancelling any
    /// order a replace left unmanaged.
    async fn settle_all(
        &self,
        quoting: &mut Quoting,
        plan: Vec<(Side, usize, Action)>,
        results: Vec<Result<Arc<Applied>, SubmitError>>,
    ) -> Result<(), Halt> {
        let mut outcome = Ok(());
        for ((side, level, action), result) in plan.into_iter().zip(results) {
            let slot = match side {
                Side::Buy => &mut quoting.book[0][level],
                Side::Sell => &mut quoting.book[1][level],
            };
            match result {
                Ok(applied) => {
                    if let Some(orphan) = settle(slot, &action, &applied) {
                        let order = OrderRef::Id(orphan);
                        let cancel = core_entry(Command::Cancel(Cancel {
                            account: self.account,
                            order,
                        }));
                        if let Err(error) = self.handle.submit(cancel).await {
                            outcome = Err(halt(error));
                        }
                    }
                }
                Err(SubmitError::Stopped) => return Err(Halt::Stopped),
                // Not leading (any more), or a gateway's session renewed:
                // back off as when overloaded.
                Err(
                    SubmitError::Overloaded
                    | SubmitError::NotLeader { .. }
                    | SubmitError::NoSpace
                    | SubmitError::SessionExpired,
                ) => outcome = Err(Halt::Overloaded),
            }
        }
        outcome
    }

    /// The command for one level; `None` only if no client order id could
    /// be formed, which the prefix's length rules out.
    fn entry(&self, side: Side, action: &Action, next_id: &mut u64) -> Option<LogEntry> {
        let account = self.account;
        let command = match action {
            Action::Cancel(order_id) => Command::Cancel(Cancel {
                account,
                order: OrderRef::Id(*order_id),
            }),
            Action::Replace(resting, quote) => Command::Replace(Replace {
                account,
                order: OrderRef::Id(resting.order_id),
                new_client_order_id: None,
                price: Some(Dec::from_units(quote.price)),
                qty: Some(Dec::from_units(resting.filled + quote.qty)),
            }),
            Action::Place(quote) => {
                *next_id += 1;
                Command::Place(Place {
                    account,
                    client_order_id: ClientOrderId::new(&format!("{}{next_id}", self.prefix))
                        .ok()?,
                    symbol: self.market.symbol,
                    side,
                    order_type: OrderType::Limit,
                    price: Some(Dec::from_units(quote.price)),
                    qty: Dec::from_units(quote.qty),
                    tif: TimeInForce::Gtc,
                    post_only: true,
                    stp: SelfTradePrevention::CancelNewest,
                    ext: None,
                })
            }
        };
        Some(core_entry(command))
    }
}

/// Whether the core accepts a resting limit order in `phase`: anywhere
/// else a refresh would only collect refusals.
pub(crate) fn takes_quotes(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Continuous | Phase::PreOpen | Phase::ClosingCall | Phase::VolatilityAuction
    )
}

fn halt(error: SubmitError) -> Halt {
    match error {
        SubmitError::Overloaded
        | SubmitError::NotLeader { .. }
        | SubmitError::NoSpace
        | SubmitError::SessionExpired => Halt::Overloaded,
        SubmitError::Stopped => Halt::Stopped,
    }
}

/// Updates a level's slot from what the core said about its command, and
/// names an order to cancel if one was left on the book unmanaged.
fn settle(slot: &mut Option<Resting>, action: &Action, applied: &Applied) -> Option<OrderId> {
    match action {
        Action::Cancel(_) => *slot = None,
        Action::Place(_) => {
            *slot = applied.events.iter().find_map(|e| match &e.kind {
                EventKind::Accepted(accepted) => Some(Resting {
                    order_id: accepted.order_id,
                    price: accepted.price.unwrap_or(0),
                    qty: accepted.qty,
                    filled: 0,
                }),
                _ => None,
            });
        }
        Action::Replace(resting, _) => {
            for event in &applied.events {
                match &event.kind {
                    EventKind::Replaced(replaced) => {
                        *slot = (replaced.leaves_qty > 0).then_some(Resting {
                            order_id: resting.order_id,
                            price: replaced.price,
                            qty: replaced.qty,
                            filled: replaced.qty.saturating_sub(replaced.leaves_qty),
                        });
                        return None;
                    }
                    EventKind::Rejected(rejected) => match rejected.reason {
                        RejectReason::OrderNotOpen | RejectReason::UnknownOrder => *slot = None,
                        // It filled past the new size and still rests.
                        RejectReason::ReplaceBelowFilled => {
                            *slot = None;
                            return Some(resting.order_id);
                        }
                        // Collar, funds, post-only: it keeps its old place.
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use exchange_types::{Accepted, Event, Rejected, Replaced};

    use super::*;

    fn applied(kind: EventKind) -> Applied {
        Applied {
            index: 1,
            events: vec![Event {
                seq: 1,
                ts: 1,
                kind,
            }],
            ..Applied::default()
        }
    }

    fn rejected(reason: RejectReason) -> Applied {
        applied(EventKind::Rejected(Rejected {
            command: "replace",
            account: Some(1),
            client_order_id: None,
            order_id: Some(7),
            symbol: None,
            reason,
        }))
    }

    const RESTING: Resting = Resting {
        order_id: 7,
        price: 100,
        qty: 10,
        filled: 0,
    };
    const QUOTE: Quote = Quote {
        price: 101,
        qty: 10,
    };

    #[test]
    fn demo_maker_follows_replies_to_replace() {
        let replace = Action::Replace(RESTING, QUOTE);
        let mut slot = Some(RESTING);
        let replaced = |leaves_qty| {
            applied(EventKind::Replaced(Replaced {
                account: 1,
                order_id: 7,
                old_client_order_id: ClientOrderId::new("a").unwrap(),
                client_order_id: ClientOrderId::new("a").unwrap(),
                symbol: exchange_types::Symbol::new("X-Y").unwrap(),
                price: 101,
                qty: 14,
                leaves_qty,
                stop_price: None,
            }))
        };
        assert_eq!(settle(&mut slot, &replace, &replaced(10)), None);
        let now = slot.unwrap();
        assert_eq!((now.price, now.qty, now.filled), (101, 14, 4));
        assert_eq!(settle(&mut slot, &replace, &replaced(0)), None);
        assert!(
            slot.is_none(),
            "replaced down to its fills, the order is done"
        );

        let mut slot = Some(RESTING);
        assert_eq!(
            settle(
                &mut slot,
                &replace,
                &rejected(RejectReason::PriceOutsideCollar)
            ),
            None
        );
        assert_eq!(
            slot.map(|r| r.price),
            Some(100),
            "a refused replace leaves the order where it was"
        );
        assert_eq!(
            settle(
                &mut slot,
                &replace,
                &rejected(RejectReason::ReplaceBelowFilled)
            ),
            Some(7)
        );
        assert!(slot.is_none());
        let mut slot = Some(RESTING);
        assert_eq!(
            settle(&mut slot, &replace, &rejected(RejectReason::OrderNotOpen)),
            None
        );
        assert!(slot.is_none());
    }

    #[test]
    fn demo_maker_remembers_accepted_places_only() {
        let mut slot = None;
        let rejected_place = rejected(RejectReason::PostOnlyWouldTake);
        settle(&mut slot, &Action::Place(QUOTE), &rejected_place);
        assert!(slot.is_none());
        let accepted = applied(EventKind::Accepted(Accepted {
            account: 1,
            client_order_id: ClientOrderId::new("a").unwrap(),
            order_id: 9,
            symbol: exchange_types::Symbol::new("X-Y").unwrap(),
            side: Side::Buy,
            order_type: OrderType::Limit,
            price: Some(101),
            qty: 10,
            tif: TimeInForce::Gtc,
            post_only: true,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        }));
        settle(&mut slot, &Action::Place(QUOTE), &accepted);
        assert_eq!(
            slot.map(|r| (r.order_id, r.price, r.qty)),
            Some((9, 101, 10))
        );
        settle(
            &mut slot,
            &Action::Cancel(9),
            &rejected(RejectReason::UnknownOrder),
        );
        assert!(slot.is_none());
    }
}
