//! `bench marketdata`: fairness and throughput of the public level2
//! channel under load.
//!
//! Starts `exchange serve` in a temporary directory (or uses `--url`),
//! connects `--subscribers` WebSocket clients to one symbol's level2
//! channel, waits until every one holds the snapshot, then lets
//! `--traders` authenticated sockets place and cancel `--orders` orders as
//! fast as the server answers. Every subscriber stamps the arrival of each
//! update (one clock: all clients run in this process); for each update
//! the spread is the time between its first and its last arrival. Reported:
//! the spread's percentiles, the rate updates were published at, messages
//! delivered per second, and subscribers disconnected for falling behind.
//!
//! The clients share the machine with the server, so the spread includes
//! their own scheduling: it is an upper bound on the server's unfairness.

mod clients;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use tokio::sync::Barrier;

use clients::{ServerProcess, Shared, Slot};

#[derive(clap::Args, Debug, Clone)]
pub struct MarketdataArgs {
    /// WebSocket subscribers of the level2 channel.
    #[arg(long, default_value_t = 1_000)]
    pub subscribers: usize,
    /// Orders the traders place (a quarter of them are then canceled).
    #[arg(long, default_value_t = 20_000)]
    pub orders: usize,
    /// Authenticated sockets placing the orders.
    #[arg(long, default_value_t = 4)]
    pub traders: usize,
    /// Orders each trader keeps in flight.
    #[arg(long, default_value_t = 256)]
    pub window: usize,
    /// Commands per second, all traders together (0: as fast as the
    /// server answers).
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// The instrument traded and watched.
    #[arg(long, default_value = "BTC-USD")]
    pub symbol: String,
    /// Use the server at this address (host:port) instead of starting one;
    /// it needs its admin token (`--admin-token-file`, or
    /// `EXCHANGE_ADMIN_TOKEN`) and no rate limit for the traders' keys.
    #[arg(long)]
    pub url: Option<String>,
    /// A file holding the admin token of the server at --url.
    #[arg(long)]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// Seed of the order flow.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Raises the open-file limit to what the sockets need (both ends of each
/// connection when the server runs here).
fn raise_fd_limit(needed: u64) -> anyhow::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!("getrlimit: {}", std::io::Error::last_os_error());
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    if limit.rlim_max < needed {
        bail!(
            "{needed} open files needed but the hard limit is {}; \
             raise it (ulimit -Hn) or use fewer --subscribers",
            limit.rlim_max
        );
    }
    limit.rlim_cur = needed;
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        bail!("setrlimit: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One trader's messages: limit orders within a dollar of 60,000 (about a
/// third cross and trade), and cancels of its own earlier orders.
fn order_flow(symbol: &str, trader: usize, count: usize, seed: u64) -> Vec<Value> {
    let mut rng = Rng((seed ^ (trader as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
    let mut flow = Vec::with_capacity(count + count / 4);
    for n in 0..count {
        let side = if rng.below(2) == 0 { "buy" } else { "sell" };
        let offset = rng.below(200) as i64 - 100 + if side == "buy" { -30 } else { 30 };
        let price = 6_000_000 + offset;
        flow.push(
            json!({ "type": "place", "request_id": n, "symbol": symbol, "side": side,
            "order_type": "limit", "price": format!("{}.{:02}", price / 100, price % 100),
            "qty": format!("0.0{:03}", 1 + rng.below(500)),
            "client_order_id": format!("t{trader}-{n}") }),
        );
        if n % 4 == 3 {
            let old = n - rng.below(4) as usize;
            flow.push(json!({ "type": "cancel", "request_id": format!("x{n}"),
                "client_order_id": format!("t{trader}-{old}") }));
        }
    }
    flow
}

struct Figures {
    subscribers: usize,
    connected_ms: f64,
    updates: u64,
    complete: u64,
    kicked: u32,
    publish_per_sec: f64,
    delivered_per_sec: f64,
    orders_per_sec: f64,
    spread_us: [f64; 4],
}

fn report(figures: &Figures, json_out: bool) {
    let [p50, p99, p999, max] = figures.spread_us;
    if json_out {
        let value = json!({
            "subscribers": figures.subscribers, "connect_ms": figures.connected_ms,
            "updates": figures.updates, "updates_received_by_all": figures.complete,
            "slow_consumers": figures.kicked, "publish_per_sec": figures.publish_per_sec,
            "delivered_per_sec": figures.delivered_per_sec,
            "commands_per_sec": figures.orders_per_sec,
            "spread_us": { "p50": p50, "p99": p99, "p99_9": p999, "max": max },
        });
        println!("{value}");
        return;
    }
    println!("subscribers             {:>12}", figures.subscribers);
    println!("connected + snapshots   {:>12.0} ms", figures.connected_ms);
    println!("level2 updates          {:>12}", figures.updates);
    println!("  received by all       {:>12}", figures.complete);
    println!("slow consumers dropped  {:>12}", figures.kicked);
    println!(
        "commands sustained      {:>12.0} /s",
        figures.orders_per_sec
    );
    println!(
        "updates published       {:>12.0} /s",
        figures.publish_per_sec
    );
    println!(
        "messages delivered      {:>12.0} /s",
        figures.delivered_per_sec
    );
    println!(
        "first-to-last spread    p50 {p50:.0} us   p99 {p99:.0} us   \
         p99.9 {p999:.0} us   max {max:.0} us"
    );
}

fn figures(
    shared: &Shared,
    args: &MarketdataArgs,
    updates: u64,
    connected: Duration,
    trading: Duration,
) -> anyhow::Result<Figures> {
    let mut spread = Histogram::<u64>::new_with_bounds(1, 600_000_000_000, 3)?;
    let wanted = args.subscribers as u32 - shared.kicked.load(Ordering::Relaxed);
    let slots = &shared.slots[..(updates as usize).min(shared.slots.len())];
    let mut complete = 0;
    for slot in slots {
        if slot.count.load(Ordering::Relaxed) >= wanted && wanted > 0 {
            complete += 1;
            let gap = slot.last.load(Ordering::Relaxed) - slot.first.load(Ordering::Relaxed);
            spread.record(gap.max(1))?;
        }
    }
    let first = |slot: Option<&Slot>| slot.map(|s| s.first.load(Ordering::Relaxed)).unwrap_or(0);
    let published = first(slots.last()).saturating_sub(first(slots.first())) as f64 / 1e9;
    let delivered = slots
        .last()
        .map(|s| s.last.load(Ordering::Relaxed))
        .unwrap_or(0)
        .saturating_sub(first(slots.first())) as f64
        / 1e9;
    let total_messages: u64 = slots
        .iter()
        .map(|s| u64::from(s.count.load(Ordering::Relaxed)))
        .sum();
    let us = |q: f64| spread.value_at_quantile(q) as f64 / 1e3;
    Ok(Figures {
        subscribers: args.subscribers,
        connected_ms: connected.as_secs_f64() * 1e3,
        updates,
        complete,
        kicked: shared.kicked.load(Ordering::Relaxed),
        publish_per_sec: updates.saturating_sub(1) as f64 / published.max(1e-9),
        delivered_per_sec: total_messages as f64 / delivered.max(1e-9),
        orders_per_sec: (args.orders + args.orders / 4) as f64 / trading.as_secs_f64().max(1e-9),
        spread_us: [us(0.5), us(0.99), us(0.999), spread.max() as f64 / 1e3],
    })
}

async fn book_sequence(addr: std::net::SocketAddr, symbol: &str) -> anyhow::Result<u64> {
    let (status, book) = clients::http(
        addr,
        "GET",
        &format!("/v1/markets/{symbol}/book?depth=1"),
        None,
        None,
    )
    .await?;
    if status != 200 {
        bail!("GET book: {status} {book}");
    }
    book["sequence"].as_u64().context("the book's sequence")
}

/// The server's address, and the process if the bench started its own.
async fn server_to_load(
    args: &MarketdataArgs,
    dir: &std::path::Path,
    token: &str,
) -> anyhow::Result<(std::net::SocketAddr, Option<ServerProcess>)> {
    Ok(match &args.url {
        Some(url) => {
            let host = url
                .trim_start_matches("http://")
                .trim_start_matches("ws://")
                .trim_end_matches('/');
            let addr = tokio::net::lookup_host(host)
                .await?
                .next()
                .context("resolving --url")?;
            (addr, None)
        }
        None => {
            let server = ServerProcess::start(dir, token, true)?;
            (server.addr, Some(server))
        }
    })
}

/// Every subscriber's socket, connected a hundred at a time, and the
/// highest sequence their snapshots reached.
async fn connect_subscribers(
    addr: std::net::SocketAddr,
    args: &MarketdataArgs,
) -> anyhow::Result<(Vec<clients::Ws>, u64)> {
    let mut sockets = Vec::with_capacity(args.subscribers);
    let mut base = 0;
    for chunk in (0..args.subscribers).collect::<Vec<_>>().chunks(100) {
        let connecting = chunk
            .iter()
            .map(|_| clients::connect_subscriber(addr, &args.symbol));
        for connected in futures_util::future::join_all(connecting).await {
            let (ws, seq) = connected?;
            base = base.max(seq);
            sockets.push(ws);
        }
    }
    Ok((sockets, base))
}

/// Until every subscriber saw the last update, or a minute passed.
async fn wait_for_subscribers(shared: &Shared, subscribers: usize) {
    let waiting = Instant::now();
    while (shared.done.load(Ordering::Relaxed) as usize) < subscribers {
        if waiting.elapsed() > Duration::from_secs(60) {
            eprintln!(
                "warning: {} subscribers did not see the last update",
                subscribers - shared.done.load(Ordering::Relaxed) as usize
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn bench(args: MarketdataArgs) -> anyhow::Result<()> {
    let token = super::admin_token(args.admin_token_file.as_deref())?
        .unwrap_or_else(|| exchange_node::random_hex(16));
    let dir = tempfile::tempdir()?;
    let (addr, _server) = server_to_load(&args, dir.path(), &token).await?;
    clients::wait_ready(addr, Duration::from_secs(30)).await?;
    let mut traders = Vec::new();
    for _ in 0..args.traders {
        let assets = [
            ("USD", "1000000000"),
            (&args.symbol[..args.symbol.find('-').unwrap_or(3)], "100000"),
        ];
        traders.push(clients::funded_account(addr, &token, &assets).await?);
    }

    let started = Instant::now();
    let (sockets, base) = connect_subscribers(addr, &args).await?;
    let connected = started.elapsed();
    let shared = Arc::new(Shared {
        start: Instant::now(),
        base: AtomicU64::new(base + 1),
        last: AtomicU64::new(u64::MAX),
        slots: (0..args.orders * 2 + 16).map(|_| Slot::default()).collect(),
        kicked: AtomicU32::new(0),
        done: AtomicU32::new(0),
    });
    let barrier = Arc::new(Barrier::new(args.subscribers + 1));
    for ws in sockets {
        tokio::spawn(clients::subscribe(ws, shared.clone(), barrier.clone()));
    }
    barrier.wait().await;

    let trading = Instant::now();
    let per_trader = args.orders / args.traders.max(1);
    let pace =
        (args.rate > 0).then(|| Duration::from_secs_f64(args.traders as f64 / args.rate as f64));
    let mut running = Vec::new();
    for (i, (key, secret)) in traders.into_iter().enumerate() {
        let flow = order_flow(&args.symbol, i, per_trader, args.seed);
        let trader = clients::trade(addr, key, secret, flow, args.window, pace);
        running.push(tokio::spawn(trader));
    }
    for trader in running {
        trader.await??;
    }
    let trading = trading.elapsed();
    let last = book_sequence(addr, &args.symbol).await?;
    shared.last.store(last, Ordering::Release);
    wait_for_subscribers(&shared, args.subscribers).await;
    let updates = last.saturating_sub(base);
    report(
        &figures(&shared, &args, updates, connected, trading)?,
        args.json,
    );
    Ok(())
}

pub fn run(args: MarketdataArgs) -> anyhow::Result<()> {
    if args.subscribers == 0 || args.traders == 0 {
        bail!("--subscribers and --traders must be at least 1");
    }
    let local_server = if args.url.is_none() { 2 } else { 1 };
    raise_fd_limit((args.subscribers as u64 + args.traders as u64 + 64) * local_server + 256)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(bench(args))
}
