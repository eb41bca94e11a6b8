//! `bench e2e`: the whole server, end to end, under order-entry load.
//!
//! Starts `exchange serve` (this binary) in a temporary directory, or uses
//! the server at `--url`; creates one funded account per client; then
//! drives `--clients` clients at once, over WebSocket (each one socket,
//! `--inflight` orders pipelined on it) or REST (each `--inflight`
//! keep-alive connections, one signed request at a time), as fast as the
//! server answers or at `--rate` orders per second in all, for `--warmup`
//! plus `--duration` seconds. `--sequential` is one client with one order
//! at a time: the latency of a lone order.
//!
//! Measured over the `--duration` window only: acknowledged orders per
//! second and the ack latency (from just before a message is written to
//! the socket to the arrival of the answer carrying its request id), the
//! server's group commits (from its `/metrics`), and the CPU time of the
//! server's threads (for a server it started, or `--server-pid`) and of the
//! load generator, which shares the machine with the server as the target
//! says it should. The order mix is described in [`flow`].

mod flow;
mod listing;
pub(super) mod record;
pub(super) mod report;
pub(super) mod rest;
pub(super) mod server;
mod target;
mod windows;
mod ws;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};

use flow::{Flow, Market};
use record::{Recorder, Totals, Window};
use report::{Figures, ServerFigures};
use server::{Credential, ServerProcess};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    Ws,
    Rest,
}

#[derive(clap::Args, Debug, Clone)]
pub struct E2eArgs {
    /// Order entry over WebSocket or signed REST.
    #[arg(long, value_enum, default_value_t = Transport::Ws)]
    pub transport: Transport,
    /// Concurrent clients, each with its own account and API key.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Orders in flight per client: pipelined on its socket (ws), or its
    /// number of connections (rest).
    #[arg(long, default_value_t = 8)]
    pub inflight: usize,
    /// Orders per second, all clients together (0: as fast as answered).
    /// Each connection is paced on tokio's 1 ms timer: when its orders are
    /// less than 1 ms apart they leave in small bursts.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// Seconds measured.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Seconds of load before the measurement starts.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// One client, one order at a time (overrides --clients and --inflight).
    #[arg(long)]
    pub sequential: bool,
    /// The instrument traded; its reference price is the flow's mid.
    #[arg(long, default_value = "BTC-USD")]
    pub symbol: String,
    /// Use the server at this address (host:port) instead of starting one;
    /// needs its admin token (--admin-token-file, or EXCHANGE_ADMIN_TOKEN),
    /// and a rate limit above the per-key load.
    #[arg(long)]
    pub url: Option<String>,
    /// A file holding the admin token of the server at --url.
    #[arg(long)]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// With --url: the server's process id, to report its CPU time.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// The server started for the run keeps no reporting store
    /// (`[reporting] enabled = false`): only trading on its cores.
    #[arg(long, conflicts_with = "url")]
    pub no_reporting: bool,
    /// Threads of the load generator's runtime.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Seed of the order flow.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write every acknowledged order's send time and latency (µs)
    /// to this file, one line each: to see when the slow ones happened.
    #[arg(long)]
    pub latency_log: Option<std::path::PathBuf>,
}

/// When a connection sends: from `start` until `stop`, every `every` if
/// the run has a target rate.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    pub start: Instant,
    /// When the measured window opens.
    pub warmed_up: Instant,
    pub stop: Instant,
    pub every: Option<Duration>,
}

/// One connection's send schedule under `--rate`: an order due every
/// `every` from `start`. Orders the warm-up left unsent are forgiven when
/// the window opens, so it opens on schedule; a backlog built inside the
/// window is kept, and counts in the latency from due time.
pub struct Schedule {
    next: Instant,
    every: Option<Duration>,
    warmed_up: Instant,
    forgiven: bool,
}

impl Schedule {
    pub fn new(pacing: &Pacing) -> Schedule {
        Schedule {
            next: pacing.start,
            every: pacing.every,
            warmed_up: pacing.warmed_up,
            forgiven: false,
        }
    }

    /// The due time of the next order if it is due by `now`, moving on to
    /// the one after; unpaced, every order is due `now`.
    pub fn take(&mut self, now: Instant) -> Option<Instant> {
        let every = match self.every {
            Some(every) => every,
            None => return Some(now),
        };
        if !self.forgiven && now >= self.warmed_up {
            self.forgiven = true;
            self.next = self.next.max(self.warmed_up);
        }
        if self.next > now {
            return None;
        }
        let due = self.next;
        self.next += every;
        Some(due)
    }

    /// When the next order is due (paced runs).
    pub fn next(&self) -> Instant {
        self.next
    }
}

pub(super) async fn resolve(url: &str) -> anyhow::Result<std::net::SocketAddr> {
    let host = url
        .trim_start_matches("http://")
        .trim_start_matches("ws://")
        .trim_end_matches('/');
    tokio::net::lookup_host(host)
        .await?
        .next()
        .context("resolving --url")
}

pub(super) fn progress(prefix: &'static str, total: Duration) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total.as_millis() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    let style = ProgressStyle::with_template("{prefix:>8} [{bar:40}] {elapsed_precise} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(prefix);
    bar
}

/// Moves the bar with the clock and shows the recent answer rate.
pub(super) async fn show_progress(bar: ProgressBar, start: Instant, answered: Arc<AtomicU64>) {
    let mut last = (Instant::now(), 0u64);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (now, count) = (Instant::now(), answered.load(Ordering::Relaxed));
        let rate = (count - last.1) as f64 / now.duration_since(last.0).as_secs_f64().max(1e-9);
        last = (now, count);
        bar.set_position(now.saturating_duration_since(start).as_millis() as u64);
        bar.set_message(format!("{count} answered, {rate:.0}/s"));
    }
}

async fn bench(args: E2eArgs) -> anyhow::Result<Figures> {
    let token = super::admin_token(args.admin_token_file.as_deref())?
        .unwrap_or_else(|| exchange_node::random_hex(16));
    let dir = tempfile::tempdir()?;
    let (addr, process) = server_to_load(&args, dir.path(), &token).await?;
    server::wait_ready(addr, Duration::from_secs(60)).await?;
    let voters = server::voters(addr, &token).await;
    let market = Arc::new(listing::market(addr, &args.symbol, listing::LISTING_WAIT).await?);
    let credentials = fund_clients(&args, addr, &token).await?;
    let (ws_sockets, rest_sockets) = connect_all(&args, addr, &credentials).await?;
    let connections = match args.transport {
        Transport::Ws => args.clients,
        Transport::Rest => args.clients * args.inflight,
    };
    let every =
        (args.rate > 0).then(|| Duration::from_secs_f64(connections as f64 / args.rate as f64));
    let answered = Arc::new(AtomicU64::new(0));
    // Every connection is open: the clock starts now, for all of them.
    let start = Instant::now() + Duration::from_millis(20);
    let from = start + Duration::from_secs_f64(args.warmup);
    let window = Window {
        from,
        to: from + Duration::from_secs_f64(args.duration),
    };
    let pacing = Pacing {
        start,
        warmed_up: window.from,
        stop: window.to,
        every,
    };
    let mut tasks = spawn_drivers(
        &args,
        &market,
        (ws_sockets, rest_sockets),
        pacing,
        window,
        &answered,
    );
    let bar = progress("e2e", window.to - start);
    let ticker = tokio::spawn(show_progress(bar.clone(), start, answered));

    let pid = process.as_ref().map(ServerProcess::pid).or(args.server_pid);
    let (server_figures, client_cpu, steal) = measure(window, pid, addr, &token).await?;

    let mut totals = Totals::default();
    while let Some(done) = tasks.join_next().await {
        totals.merge(&done.context("a client task failed")??);
    }
    ticker.abort();
    bar.finish_and_clear();
    let catch_up = catch_up(addr, &token).await?;
    if let Some(path) = &args.latency_log {
        write_latency_log(&mut totals, path)?;
    }
    let seconds = window.to.duration_since(window.from).as_secs_f64();
    Ok(Figures {
        transport: args.transport,
        clients: args.clients,
        inflight: args.inflight,
        rate: args.rate,
        seconds,
        totals,
        server: server_figures,
        client_cpu,
        steal,
        voters,
        catch_up,
    })
}

/// An account and key per client, funded in the quote and the base asset.
async fn fund_clients(
    args: &E2eArgs,
    addr: std::net::SocketAddr,
    token: &str,
) -> anyhow::Result<Vec<Credential>> {
    let base = &args.symbol[..args.symbol.find('-').unwrap_or(args.symbol.len())];
    let mut credentials = Vec::with_capacity(args.clients);
    for _ in 0..args.clients {
        let assets = [("USD", "1000000000"), (base, "100000")];
        credentials.push(server::funded_account(addr, token, &assets).await?);
    }
    Ok(credentials)
}

/// A backlog smaller than this is written within a few looks at the
/// counters (the store writes 150,000-400,000 entries/s here): too little
/// to time.
const CATCH_UP_MIN_ENTRIES: f64 = 10_000.0;
/// How often the counters are read while the store catches up: the
/// catch-up's time is known to this much.
const CATCH_UP_POLL: Duration = Duration::from_millis(2);
/// How long the bench waits for the store to work off its backlog.
const CATCH_UP_WAIT: Duration = Duration::from_secs(30);

/// Times the reporting store working off the backlog the window left, now
/// that no orders come in: what a spike's backlog costs to clear.
async fn catch_up(
    addr: std::net::SocketAddr,
    token: &str,
) -> anyhow::Result<Option<report::CatchUp>> {
    let first = server::counters(addr, token).await?;
    let started = Instant::now();
    let Some(backlog) = first.reported.filter(|r| r.lag >= CATCH_UP_MIN_ENTRIES) else {
        return Ok(None);
    };
    loop {
        tokio::time::sleep(CATCH_UP_POLL).await;
        let now = server::counters(addr, token).await?;
        let written = now.reported.map_or(0.0, |r| r.entries - backlog.entries);
        let lag = now.reported.map_or(0.0, |r| r.lag);
        let finished = lag == 0.0;
        if finished || started.elapsed() >= CATCH_UP_WAIT {
            return Ok(Some(report::CatchUp {
                entries: written,
                seconds: started.elapsed().as_secs_f64(),
                finished,
            }));
        }
    }
}

/// One driver per connection, each with its own flow and recorder.
fn spawn_drivers(
    args: &E2eArgs,
    market: &Arc<Market>,
    (ws_sockets, rest_sockets): (Vec<ws::Ws>, Vec<(Credential, tokio::net::TcpStream)>),
    pacing: Pacing,
    window: Window,
    answered: &Arc<AtomicU64>,
) -> tokio::task::JoinSet<anyhow::Result<Totals>> {
    let mut tasks = tokio::task::JoinSet::new();
    let seed = |n: usize| args.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n as u64;
    // What the schedule has each client send over the warm-up and the
    // window, and a quarter more (a closed loop: room for 100,000/s in
    // all), at most 2^24.
    let samples_per_client = {
        let rate = if args.rate > 0 { args.rate } else { 100_000 } as f64;
        let per_client = rate / args.clients.max(1) as f64 * (args.warmup + args.duration) * 1.25;
        (per_client as usize).min(1 << 24)
    };
    for (n, socket) in ws_sockets.into_iter().enumerate() {
        let driver = ws::Driver {
            market: market.clone(),
            flow: Flow::new(seed(n), format!("c{n}")),
            inflight: args.inflight,
            pacing,
            recorder: Recorder::new(window, answered.clone())
                .keeping_samples(args.latency_log.is_some(), samples_per_client),
        };
        tasks.spawn(driver.run(socket));
    }
    for (n, (credential, socket)) in rest_sockets.into_iter().enumerate() {
        let driver = rest::Driver {
            market: market.clone(),
            flow: Flow::new(seed(n), format!("r{n}")),
            credential,
            pacing,
            recorder: Recorder::new(window, answered.clone())
                .keeping_samples(args.latency_log.is_some(), samples_per_client),
        };
        tasks.spawn(driver.run(socket));
    }
    tasks
}

/// Waits out the warm-up and the window, reading the server's counters
/// and the CPU of both sides at its edges: the server's figures, the
/// client's cores and the share the hypervisor stole.
async fn measure(
    window: Window,
    pid: Option<u32>,
    addr: std::net::SocketAddr,
    token: &str,
) -> anyhow::Result<(ServerFigures, f64, Option<f64>)> {
    tokio::time::sleep_until(window.from.into()).await;
    let cpu_before = (
        pid.map(server::cpu_by_thread),
        server::cpu_by_thread(std::process::id()),
    );
    let counters_before = server::counters(addr, token).await?;
    let machine_before = server::machine_ticks();
    tokio::time::sleep_until(window.to.into()).await;
    let steal = server::steal_share(machine_before, server::machine_ticks());
    let cpu_after = (
        pid.map(server::cpu_by_thread),
        server::cpu_by_thread(std::process::id()),
    );
    let counters = server::counters(addr, token).await?.since(&counters_before);
    let server_cpu = match cpu_after.0.zip(cpu_before.0) {
        Some((after, before)) => server::cpu_delta(&before, &after),
        None => Default::default(),
    };
    let client_cpu: f64 = server::cpu_delta(&cpu_before.1, &cpu_after.1)
        .values()
        .sum();
    let figures = ServerFigures {
        counters,
        cpu: server_cpu,
    };
    Ok((figures, client_cpu, steal))
}

/// The server's address, and the process if the bench started its own.
async fn server_to_load(
    args: &E2eArgs,
    dir: &std::path::Path,
    token: &str,
) -> anyhow::Result<(std::net::SocketAddr, Option<ServerProcess>)> {
    Ok(match &args.url {
        Some(url) => (resolve(url).await?, None),
        None => {
            if server::on_tmpfs(dir) {
                eprintln!(
                    "warning: {} is on tmpfs, where fsync does nothing: \
                     point TMPDIR at a disk to measure durable acks",
                    dir.display()
                );
            }
            let process = ServerProcess::start(dir, token, !args.no_reporting)?;
            (process.addr, Some(process))
        }
    })
}

/// Every client's connections, opened before the clock starts: one
/// WebSocket each, or one REST connection per order in flight.
async fn connect_all(
    args: &E2eArgs,
    addr: std::net::SocketAddr,
    credentials: &[Credential],
) -> anyhow::Result<(Vec<ws::Ws>, Vec<(Credential, tokio::net::TcpStream)>)> {
    let (mut ws_sockets, mut rest_sockets) = (Vec::new(), Vec::new());
    for credential in credentials {
        match args.transport {
            Transport::Ws => ws_sockets.push(ws::connect(addr, credential).await?),
            Transport::Rest => {
                for _ in 0..args.inflight {
                    rest_sockets.push((credential.clone(), rest::connect(addr).await?));
                }
            }
        }
    }
    Ok((ws_sockets, rest_sockets))
}

fn write_latency_log(totals: &mut Totals, path: &std::path::Path) -> anyhow::Result<()> {
    let mut file = std::fs::File::create(path)
        .with_context(|| format!("creating the latency log {}", path.display()))?;
    totals
        .write_samples(&mut file)
        .with_context(|| format!("writing the latency log {}", path.display()))?;
    eprintln!(
        "latency log: {} orders written to {}",
        totals.samples.len(),
        path.display()
    );
    Ok(())
}

pub fn run(mut args: E2eArgs) -> anyhow::Result<()> {
    if args.url.is_some() && super::admin_token(args.admin_token_file.as_deref())?.is_none() {
        bail!(
            "--url needs the server's admin token \
             (--admin-token-file or EXCHANGE_ADMIN_TOKEN) to create the accounts"
        );
    }
    let runtime = super::load_generator(super::LoadShape {
        sequential: args.sequential,
        clients: &mut args.clients,
        inflight: &mut args.inflight,
        client_threads: args.client_threads,
        duration: args.duration,
        warmup: args.warmup,
    })?;
    let json = args.json;
    let figures = runtime.block_on(bench(args))?;
    if json {
        println!("{}", report::json(&figures));
    } else {
        print!("{}", report::text(&figures));
    }
    Ok(())
}

#[cfg(test)]
mod schedule_tests {
    use super::*;

    #[test]
    fn the_window_opens_on_schedule_whatever_the_warm_up_left_unsent() {
        let start = Instant::now();
        let ms = |n: u64| start + Duration::from_millis(n);
        let mut schedule = Schedule::new(&Pacing {
            start,
            warmed_up: ms(100),
            stop: ms(200),
            every: Some(Duration::from_millis(10)),
        });
        assert_eq!(schedule.take(start), Some(start));
        assert_eq!(schedule.take(ms(5)), None);
        // Late in the warm-up: what is due comes due, one at a time.
        assert_eq!(schedule.take(ms(25)), Some(ms(10)));
        assert_eq!(schedule.take(ms(25)), Some(ms(20)));
        assert_eq!(schedule.take(ms(25)), None);
        // The window opens with 30..100 unsent: forgiven.
        assert_eq!(schedule.take(ms(103)), Some(ms(100)));
        assert_eq!(schedule.take(ms(103)), None);
        assert_eq!(schedule.next(), ms(110));
        // A backlog inside the window is kept.
        assert_eq!(schedule.take(ms(135)), Some(ms(110)));
        assert_eq!(schedule.take(ms(135)), Some(ms(120)));
        assert_eq!(schedule.take(ms(135)), Some(ms(130)));
        assert_eq!(schedule.take(ms(135)), None);
    }

    #[test]
    fn unpaced_every_order_is_due_at_once() {
        let start = Instant::now();
        let mut schedule = Schedule::new(&Pacing {
            start,
            warmed_up: start,
            stop: start + Duration::from_secs(1),
            every: None,
        });
        let now = start + Duration::from_millis(7);
        assert_eq!(schedule.take(now), Some(now));
        assert_eq!(schedule.take(now), Some(now));
    }
}
