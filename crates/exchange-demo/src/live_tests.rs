//! The demo against a real pipeline: it quotes, it trades, it lets the
//! pipeline stop, and a restart reuses its accounts.

use std::path::Path;
use std::time::{Duration, Instant};

use exchange_types::Symbol;
use tokio::sync::watch;

use super::accounts::{self, DemoAccounts};
use super::{funding, markets, start, LEVELS};
use exchange_node::config::Config;
use exchange_node::instruments::ensure_instruments;
use exchange_node::recovery;
use exchange_node::sequencer::{Handle, Pipeline, PipelineConfig};
use exchange_node::{MarketQuery, OrderQuery};
use exchange_types::AccountId;

fn open(dir: &Path) -> Pipeline {
    let config = PipelineConfig {
        submit_queue: 4_096,
        core_queue: 64,
        events_buffer: 1_024,
        snapshot_every: 0,
        snapshot_dir: recovery::snapshot_dir(dir),
        master_key: exchange_node::master_key::MasterKey::from_bytes([1; 32]),
    };
    recovery::start(dir, config).unwrap().0
}

/// Joins the pipeline's threads, failing if something still holds a
/// handle after `limit`.
async fn join_within(pipeline: Pipeline, limit: Duration) {
    let joined =
        tokio::time::timeout(limit, tokio::task::spawn_blocking(move || pipeline.join())).await;
    assert!(
        joined.is_ok(),
        "the pipeline did not stop: a demo task still holds a handle"
    );
}

async fn open_orders(handle: &Handle, account: AccountId) -> usize {
    let query = OrderQuery::Open {
        accounts: vec![account],
        symbol: None,
    };
    handle.orders(query).await.unwrap().orders.len()
}

fn saved(dir: &Path) -> DemoAccounts {
    serde_json::from_str(&std::fs::read_to_string(accounts::accounts_file(dir)).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_quotes_trades_stops_and_reuses_its_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().into(),
        ..Config::default()
    };
    let pipeline = open(dir.path());
    let handle = pipeline.handle.clone();
    ensure_instruments(&handle, &config.instruments)
        .await
        .unwrap();
    let (stop, stopped) = watch::channel(false);
    start(handle.clone(), dir.path(), &config, stopped)
        .await
        .unwrap();
    let first = saved(dir.path());
    assert_eq!(first.takers.len(), accounts::TAKERS);

    let (depth, trades) = wait_for_a_full_book_and_trades(&handle).await;
    assert_eq!(
        depth,
        (LEVELS, LEVELS),
        "the maker should quote every level"
    );
    assert!(trades > 0, "the takers should have traded within 20 s");
    handle.audit().await.unwrap().unwrap();
    // None of the demo's own commands may break the instrument's rules.
    let rejects = handle.metrics.rejects();
    for reason in [
        "price_not_on_tick",
        "quantity_not_on_lot",
        "price_outside_collar",
        "duplicate_client_order_id",
    ] {
        assert_eq!(
            rejects.get(reason),
            None,
            "demo sent a command refused for {reason}"
        );
    }

    let maker = first.market_maker.account;
    assert!(open_orders(&handle, maker).await <= 2 * LEVELS * 2);

    stop.send_replace(true);
    drop(handle);
    join_within(pipeline, Duration::from_secs(10)).await;

    a_restart_reuses_the_accounts(dir.path(), &config, &first).await;
}

/// The BTC-USD book's depth and the trades of every instrument, once the
/// book is full and something traded, or after 20 s.
async fn wait_for_a_full_book_and_trades(handle: &Handle) -> ((usize, usize), usize) {
    let btc = Symbol::new("BTC-USD").unwrap();
    let started = Instant::now();
    let (mut depth, mut trades) = ((0, 0), 0);
    while started.elapsed() < Duration::from_secs(20) && (depth != (LEVELS, LEVELS) || trades == 0)
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let markets = handle
            .markets(MarketQuery {
                symbol: None,
                depth: 100,
                trades: 1_000,
            })
            .await
            .unwrap()
            .markets;
        let book = markets
            .iter()
            .find(|m| m.instrument.symbol == btc)
            .map(|m| m.book.clone())
            .unwrap_or_default();
        depth = (book.bids.len(), book.asks.len());
        trades = markets.iter().map(|m| m.trades.len()).sum();
    }
    (depth, trades)
}

async fn a_restart_reuses_the_accounts(dir: &Path, config: &Config, first: &DemoAccounts) {
    let maker = first.market_maker.account;
    let pipeline = open(dir);
    let handle = pipeline.handle.clone();
    // Accounts are numbered in order of creation, the demo's from 1.
    let newest = first
        .takers
        .iter()
        .map(|t| t.account)
        .chain([first.market_maker.account])
        .max()
        .unwrap();
    let plan = funding(&markets(&handle, config).await.unwrap());
    let (again, created) = accounts::load_or_create(&handle, dir, &plan).await.unwrap();
    assert!(!created);
    assert_eq!(&again, first);
    assert!(handle.account_exists(newest).await.unwrap());
    assert!(
        !handle.account_exists(newest + 1).await.unwrap(),
        "reusing the accounts created another"
    );
    // A second run clears the first one's quotes instead of stacking its
    // own on top: two instruments, never more than a ladder each.
    let (stop, stopped) = watch::channel(false);
    start(handle.clone(), dir, config, stopped).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let open = open_orders(&handle, maker).await;
    assert!(
        open > 0 && open <= 2 * LEVELS * 2,
        "{open} maker orders after a restart"
    );
    stop.send_replace(true);
    drop(handle);
    join_within(pipeline, Duration::from_secs(10)).await;
}
