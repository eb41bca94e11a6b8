//! `exchange serve --demo`: demo accounts and a little market activity, so
//! a newcomer sees a live book and trades without writing a client: the
//! configured crypto pairs around the clock, and a few equities
//! ([`configure`]) on a trading day compressed into minutes, with its
//! calls and auctions.
//!
//! Everything goes through the [`Handle`] like any gateway's commands: it
//! is journaled, replicated and replayed like real flow. The tasks end on
//! ctrl-c or SIGTERM (the signals `serve` stops on), or when the sequencer
//! reports `Stopped`. They must not wait for `Stopped` alone: the pipeline
//! only stops once every handle is dropped, including theirs.

mod accounts;
mod equities;
mod ladder;
mod maker;
mod rng;
mod taker;

#[cfg(test)]
mod live_tests;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use exchange_types::{
    AccountId, AssetCode, Command, Dec, Stamped, Symbol, Transfer, UNITS_PER_WHOLE,
};
use tokio::sync::watch;

use exchange_node::config::Config;
use exchange_node::sequencer::{Handle, SubmitError};
use exchange_node::Applied;
use exchange_node::LogEntry;
use exchange_node::MarketQuery;
use ladder::{percent_to_bps, units_of, LadderSpec};
use rng::Rng;
use thiserror::Error;

pub use equities::{configure, CYCLE};

/// Quote levels on each side of every book.
const LEVELS: usize = 10;
/// Whole quote units (USD) given to the market maker and to each taker.
const MAKER_QUOTE: u64 = 10_000_000;
const TAKER_QUOTE: u64 = 1_000_000;
/// Worth, in whole quote units, of each base asset given to them.
const MAKER_BASE_WORTH: u64 = 5_000_000;
const TAKER_BASE_WORTH: u64 = 1_000_000;
/// Largest whole amount of one asset handed out, far below overflow.
const MAX_GRANT: u64 = 10_000_000_000;

/// An instrument the demo trades, with what it needs to quote it.
#[derive(Clone, Debug)]
pub(crate) struct Market {
    pub symbol: Symbol,
    pub base: AssetCode,
    pub quote: AssetCode,
    pub spec: LadderSpec,
    pub collar_bps: u32,
    /// The configured reference price: where the fair price is pulled to.
    pub anchor: u64,
    /// Where the fair price starts: the last trade if there was one.
    pub start: u64,
}

/// How much of an asset the demo accounts are given (units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Funding {
    pub asset: AssetCode,
    pub maker: u64,
    pub taker: u64,
}

#[derive(Debug, Error)]
pub enum DemoError {
    #[error("demo accounts file: {0}")]
    Io(#[from] std::io::Error),
    #[error("the sequencer stopped: {0}")]
    Submit(#[from] SubmitError),
}

/// Creates or reuses the demo accounts, prints them, and starts the market
/// maker (one task per instrument) and the takers, which run until `stop`
/// turns true.
pub async fn start(
    handle: Handle,
    data_dir: &Path,
    config: &Config,
    stop: watch::Receiver<bool>,
) -> Result<(), DemoError> {
    let markets = markets(&handle, config).await?;
    if markets.is_empty() {
        eprintln!("demo: no configured instrument can be quoted; the demo does nothing");
        return Ok(());
    }
    let funding = Arc::new(funding(&markets));
    let (accounts, created) = accounts::load_or_create(&handle, data_dir, &funding).await?;
    print_banner(&accounts, created, data_dir, config, &markets);
    // Seeded from the clock: the demo is outside the deterministic core,
    // and two runs need not trade alike.
    let mut rng = Rng::from_clock();
    // Client order ids carry a per-run tag so that none repeats an id of
    // an earlier run still remembered by the core.
    let run = format!("{:08x}", rng.next_u64() as u32);
    for (index, market) in markets.iter().enumerate() {
        let maker = maker::Maker {
            handle: handle.clone(),
            stop: stop.clone(),
            account: accounts.market_maker.account,
            market: market.clone(),
            funding: funding.clone(),
            // Each instrument's maker counts on its own, and one account
            // holds all their orders: the index keeps their ids apart.
            prefix: format!("mm-{run}-{index}-"),
        };
        tokio::spawn(maker.run(rng.fork()));
    }
    let takers = taker::Takers {
        handle,
        stop,
        accounts: accounts.takers.iter().map(|t| t.account).collect(),
        markets,
        funding,
        prefix: format!("tk-{run}-"),
    };
    tokio::spawn(takers.run(rng.fork()));
    Ok(())
}

async fn markets(handle: &Handle, config: &Config) -> Result<Vec<Market>, DemoError> {
    let listed = handle.markets(MarketQuery::default()).await?.markets;
    let mut markets = Vec::new();
    for spec in &config.instruments {
        let Some(view) = listed
            .iter()
            .map(|m| &m.instrument)
            .find(|v| v.symbol.as_str() == spec.symbol)
        else {
            eprintln!("demo: {} is not listed; not quoting it", spec.symbol);
            continue;
        };
        let Some(anchor) = spec
            .reference_price
            .as_deref()
            .and_then(units_of)
            .or(view.reference_price)
        else {
            eprintln!(
                "demo: {} has no reference price to quote around; not quoting it",
                spec.symbol
            );
            continue;
        };
        let lot = view.lot_size.max(1);
        let lots =
            |qty: &Option<String>| qty.as_deref().and_then(units_of).map(|units| units / lot);
        let min_lots = lots(&spec.min_qty).unwrap_or(1).max(1);
        markets.push(Market {
            symbol: view.symbol,
            base: view.base,
            quote: view.quote,
            spec: LadderSpec {
                tick: view.tick_size.max(1),
                lot,
                min_lots,
                max_lots: lots(&spec.max_qty).unwrap_or(u64::MAX / lot).max(min_lots),
                levels: LEVELS,
                half_spread_bps: 2,
                step_bps: 1,
            },
            collar_bps: spec
                .price_collar_pct
                .as_deref()
                .and_then(percent_to_bps)
                .unwrap_or(0),
            anchor,
            start: view.reference_price.unwrap_or(anchor),
        });
    }
    Ok(markets)
}

/// Whole units of base worth `worth` whole quote units at `price`.
fn worth_in_base(worth: u64, price: u64) -> u64 {
    let whole = u128::from(worth) * u128::from(UNITS_PER_WHOLE) / u128::from(price.max(1));
    let whole = u64::try_from(whole)
        .unwrap_or(MAX_GRANT)
        .clamp(1, MAX_GRANT);
    whole * UNITS_PER_WHOLE
}

/// Generous balances: a fixed sum of every quote asset, and of every base
/// asset as much as a fixed sum of quote buys at its reference price.
fn funding(markets: &[Market]) -> Vec<Funding> {
    let mut plan: BTreeMap<AssetCode, (u64, u64)> = BTreeMap::new();
    let mut grant = |asset: AssetCode, maker: u64, taker: u64| {
        let entry = plan.entry(asset).or_default();
        *entry = (entry.0.max(maker), entry.1.max(taker));
    };
    for market in markets {
        grant(
            market.quote,
            MAKER_QUOTE * UNITS_PER_WHOLE,
            TAKER_QUOTE * UNITS_PER_WHOLE,
        );
        grant(
            market.base,
            worth_in_base(MAKER_BASE_WORTH, market.anchor),
            worth_in_base(TAKER_BASE_WORTH, market.anchor),
        );
    }
    plan.into_iter()
        .map(|(asset, (maker, taker))| Funding {
            asset,
            maker,
            taker,
        })
        .collect()
}

fn print_banner(
    accounts: &accounts::DemoAccounts,
    created: bool,
    data_dir: &Path,
    config: &Config,
    markets: &[Market],
) {
    let how = if created {
        "created now"
    } else {
        "reused from an earlier run"
    };
    let file = accounts::accounts_file(data_dir);
    let symbols: Vec<&str> = markets.iter().map(|m| m.symbol.as_str()).collect();
    eprintln!("==================== demo ====================");
    eprintln!("demo accounts ({how}; saved in {}):", file.display());
    let mut rows = vec![("market maker".to_string(), &accounts.market_maker)];
    rows.extend(
        accounts
            .takers
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("taker {}", i + 1), t)),
    );
    for (role, account) in rows {
        eprintln!(
            "  {role:<13} account {:<4} api_key {}  api_secret {}",
            account.account, account.api_key, account.api_secret
        );
    }
    eprintln!(
        "market maker quotes {LEVELS} levels a side on {}; takers trade every 0.3-2 s",
        symbols.join(", ")
    );
    let sessions = equities::describe(config, unix_now_ns());
    if !sessions.is_empty() {
        let cycle: Vec<String> = CYCLE
            .iter()
            .map(|(phase, length)| format!("{phase} {length}"))
            .collect();
        eprintln!(
            "equities trade a day in 8 minutes ({}), the takers' orders crossing in each call:",
            cycle.join(", ")
        );
        for line in sessions {
            eprintln!("  {line}");
        }
    }
    eprintln!(
        "see the book: curl http://{}/v1/markets/{}/book?depth=10",
        config.listen, symbols[0]
    );
    eprintln!(
        "trade in a browser: http://{}/ (paste a key and secret above); operators: http://{}/ops",
        config.listen, config.listen
    );
    eprintln!("==============================================");
}

fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Sleeps for `duration` unless the demo is stopping; false means stop.
pub(crate) async fn pause(stop: &mut watch::Receiver<bool>, duration: Duration) -> bool {
    if *stop.borrow() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(duration) => {},
        changed = stop.changed() => {
            // A vanished sender cannot raise the flag any more: just sleep.
            if changed.is_err() {
                tokio::time::sleep(duration).await;
            }
        }
    }
    !*stop.borrow()
}

pub(crate) fn core_entry(command: Command) -> LogEntry {
    LogEntry::Core(Stamped { ts: 0, command })
}

pub(crate) fn deposit_entry(account: AccountId, asset: AssetCode, units: u64) -> LogEntry {
    core_entry(Command::Deposit(Transfer {
        account,
        asset,
        amount: Dec::from_units(units),
    }))
}

/// Refills `asset` to `target` once its available balance is below
/// `floor`, so that a long demo never runs dry.
pub(crate) async fn top_up(
    handle: &Handle,
    account: AccountId,
    asset: AssetCode,
    target: u64,
    floor: u64,
) -> Result<(), SubmitError> {
    let available = handle
        .balances(account)
        .await?
        .into_iter()
        .find(|b| b.asset == asset)
        .map_or(0, |b| b.available);
    if available < floor && target > available {
        handle
            .submit(deposit_entry(account, asset, target - available))
            .await?;
    }
    Ok(())
}

/// Submits during start-up, waiting out a momentarily full queue.
pub(crate) async fn submit_retrying(
    handle: &Handle,
    entry: LogEntry,
) -> Result<Arc<Applied>, DemoError> {
    let mut backoff = Duration::from_millis(20);
    for _ in 0..30 {
        match handle.submit(entry.clone()).await {
            Err(SubmitError::Overloaded) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            other => return Ok(other?),
        }
    }
    Err(DemoError::Submit(SubmitError::Overloaded))
}

type Pending = Pin<Box<dyn Future<Output = Result<Arc<Applied>, SubmitError>> + Send>>;

/// Submits every entry and waits for all of them. Each is queued in the
/// order given (the first poll of a submit queues it, and they are first
/// polled in order), so they usually share one fsync and the core applies
/// them in that order.
pub(crate) async fn submit_in_order(
    handle: &Handle,
    entries: Vec<LogEntry>,
) -> Vec<Result<Arc<Applied>, SubmitError>> {
    let mut pending: Vec<Pending> = entries
        .into_iter()
        .map(|entry| {
            let handle = handle.clone();
            Box::pin(async move { handle.submit(entry).await }) as Pending
        })
        .collect();
    let mut results: Vec<Option<Result<Arc<Applied>, SubmitError>>> =
        pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (future, result) in pending.iter_mut().zip(results.iter_mut()) {
            if result.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(done) => *result = Some(done),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    results
        .into_iter()
        .map(|r| r.unwrap_or(Err(SubmitError::Stopped)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn market(symbol: &str, base: &str, anchor_whole: u64) -> Market {
        Market {
            symbol: Symbol::new(symbol).unwrap(),
            base: AssetCode::new(base).unwrap(),
            quote: AssetCode::new("USD").unwrap(),
            spec: LadderSpec {
                tick: 1_000_000,
                lot: 10_000,
                min_lots: 1,
                max_lots: u64::MAX,
                levels: LEVELS,
                half_spread_bps: 2,
                step_bps: 1,
            },
            collar_bps: 1_000,
            anchor: anchor_whole * UNITS_PER_WHOLE,
            start: anchor_whole * UNITS_PER_WHOLE,
        }
    }

    #[test]
    fn demo_funding_is_generous_in_every_asset() {
        let plan = funding(&[
            market("BTC-USD", "BTC", 60_000),
            market("ETH-USD", "ETH", 3_000),
        ]);
        let whole = |code: &str| {
            let item = plan.iter().find(|f| f.asset.as_str() == code).unwrap();
            (item.maker / UNITS_PER_WHOLE, item.taker / UNITS_PER_WHOLE)
        };
        assert_eq!(plan.len(), 3, "USD once, however many markets quote in it");
        assert_eq!(whole("USD"), (10_000_000, 1_000_000));
        assert_eq!(whole("BTC"), (83, 16));
        assert_eq!(whole("ETH"), (1_666, 333));
    }

    #[test]
    fn demo_base_grant_is_bounded_both_ways() {
        assert_eq!(worth_in_base(1, u64::MAX), UNITS_PER_WHOLE);
        assert_eq!(worth_in_base(u64::MAX, 1), MAX_GRANT * UNITS_PER_WHOLE);
    }
}
