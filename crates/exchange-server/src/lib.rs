//! `exchange serve`: recover, list the configured instruments, and serve
//! HTTP and WebSocket until interrupted.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod admin_token;
mod tiers;

pub use admin_token::{admin_token, ADMIN_TOKEN_ENV, MIN_ADMIN_TOKEN_LEN};
use exchange_reporting::Target;
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use exchange_demo::DemoError;
use exchange_gateway::config::{GatewayConfig, HttpConfig};
use exchange_gateway::{self as http, AppState};
use exchange_marketdata_service::config::MarketDataConfig;
use exchange_marketdata_service::{self as marketdata, MarketDataError, MarketDataService};
use exchange_node::config::Config;
use exchange_node::instruments::{ensure_instruments, InstrumentError};
use exchange_node::limits::{REPORTING_READY_WAIT, WS_SHUTDOWN_WAIT};
use exchange_node::master_key::{MasterKey, MasterKeyError, MasterKeySource, MASTER_KEY_ENV};
use exchange_node::recovery::{self, RecoveryError, RecoveryReport};
use exchange_node::replication::ClusterSettings;
use exchange_node::scheduler::SchedulerConfig;
use exchange_node::tiers_config::Tier;
use exchange_node::{GatewayStart, Handle, Pipeline, PipelineConfig, SubmitError};
use exchange_reporter::{Reporter, ReporterConfig, Reporting};

#[derive(Debug, Error)]
pub enum ServerError {
    #[error("recovery failed: {0}")]
    Recovery(#[from] RecoveryError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Instrument(#[from] InstrumentError),
    #[error("demo: {0}")]
    Demo(#[from] DemoError),
    #[error("the sequencer stopped: {0}")]
    Submit(#[from] SubmitError),
    #[error("gateway: {0}")]
    Gateway(String),
    #[error(transparent)]
    MarketData(#[from] MarketDataError),
    #[error("reporting store: {0}")]
    Reporting(#[from] exchange_reporting::StoreError),
    #[error("master key: {0}")]
    MasterKey(#[from] MasterKeyError),
    #[error("admin token file {path}: {problem}")]
    AdminToken {
        path: std::path::PathBuf,
        problem: String,
    },
    #[error("{ADMIN_TOKEN_ENV}: {0}")]
    AdminTokenEnv(String),
    #[error("cluster configuration: {0}")]
    Cluster(#[from] exchange_node::replication::ClusterError),
    #[error(transparent)]
    Http(#[from] exchange_gateway::config::HttpConfigError),
    #[error("TLS: {0}")]
    Tls(#[from] http::listener::TlsError),
    #[error("{0}")]
    Schedule(String),
    #[error("tiers: {0}")]
    Tiers(#[from] exchange_node::tiers_config::TiersError),
    #[error("cluster key: {0}")]
    ClusterKey(#[from] exchange_node::cluster_key::ClusterKeyError),
}

fn pipeline_config(config: &Config) -> Result<PipelineConfig, ServerError> {
    let (master_key, source) =
        MasterKey::load(config.master_key_file.as_deref(), &config.data_dir)?;
    match source {
        MasterKeySource::Generated(path) => eprintln!(
            "master key (generated, saved in {}): give every node of a cluster the same one",
            path.display()
        ),
        MasterKeySource::File(path) => eprintln!("master key: {}", path.display()),
        MasterKeySource::Environment => eprintln!("master key: from {MASTER_KEY_ENV}"),
    }
    Ok(PipelineConfig {
        submit_queue: config.submit_queue,
        core_queue: config.core_queue,
        events_buffer: config.events_buffer,
        snapshot_every: config.snapshot_every,
        snapshot_dir: recovery::snapshot_dir(&config.data_dir),
        master_key,
    })
}

/// Prints what recovery did; an operator must see dropped bytes.
pub fn report_recovery(report: &RecoveryReport) {
    if let Some(index) = report.snapshot_index {
        eprintln!("recovery: loaded snapshot at index {index}");
    }
    for path in &report.invalid_snapshots {
        eprintln!(
            "recovery: WARNING: ignored invalid snapshot {}",
            path.display()
        );
    }
    if let Some(reason) = &report.truncated_reason {
        eprintln!("recovery: WARNING: dropped a torn or corrupt journal tail: {reason}");
    }
    eprintln!(
        "recovery: replayed {} journal entries; applied index {}; state hash {}",
        report.replayed, report.applied_index, report.state_hash
    );
}

/// What a process of the venue runs with: the node's settings and those of
/// the layers this crate composes, each defined by the layer's crate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerConfig {
    pub node: Config,
    pub gateway: GatewayConfig,
    pub marketdata: MarketDataConfig,
}

/// Runs the server until ctrl-c (or SIGTERM), then drains and stops.
pub async fn run(config: ServerConfig, demo: bool) -> Result<(), ServerError> {
    run_with_gateways(config, demo, Vec::new()).await
}

/// As [`run`], with more gateways.
pub async fn run_with_gateways(
    config: ServerConfig,
    demo: bool,
    gateways: Vec<GatewayStart>,
) -> Result<(), ServerError> {
    run_tier(config, demo, gateways, Tier::Replica).await
}

/// Runs one process of a tiered venue: a replica (which serves clients
/// too, unless gateways stand in front of it), an order-entry gateway or a
/// market-data gateway. Only a replica lists instruments, runs the
/// schedule and the demo, and writes the reporting store: the others
/// would repeat the replica's commands.
pub async fn run_tier(
    ServerConfig {
        node: mut config,
        gateway,
        marketdata,
    }: ServerConfig,
    demo: bool,
    gateways: Vec<GatewayStart>,
    tier: Tier,
) -> Result<(), ServerError> {
    let scheduler = prepare(&mut config, &gateway, demo, tier)?;
    // Before anything opens a descriptor: refused certificates stop the
    // start, not the first client.
    let tls = gateway.http.tls.as_ref();
    let tls = tls.map(http::listener::tls_acceptor).transpose()?;
    let fd_limit = http::listener::raise_fd_limit();
    let (token, generated) = admin_token(&config)?;
    let ready = Arc::new(AtomicBool::new(false));
    let (stop_gateways, stopping) = watch::channel(false);
    let OpenedState {
        pipeline,
        report,
        reporting,
        reporter,
        tier_servers,
    } = open_state(&config, tier)?;
    let handle = pipeline.handle.clone();
    if tier == Tier::Replica {
        list_instruments(&handle, &config, &stopping).await?;
    }
    if generated {
        announce_generated_token(&config);
    }
    let market = start_market_data(&handle, tier, &config, &marketdata).await?;
    let mut app = AppState::new(
        handle.clone(),
        config.clone(),
        gateway,
        token,
        ready.clone(),
    );
    if let Some(market) = &market {
        app = app.with_market_data(market.market.clone());
    }
    if let Some(reporting) = &reporting {
        app = app.with_reporting(reporting.clone());
    }
    let (listener, metrics_listener) =
        bind_listeners(&config, &app.gateway.http, tls.is_some()).await?;
    if demo && tier == Tier::Replica {
        exchange_demo::start(handle.clone(), &config.data_dir, &config, stopping.clone()).await?;
    }
    let scheduler = (tier == Tier::Replica).then_some(scheduler);
    let gateway_tasks = start_gateways(&handle, &config, scheduler, gateways, &stopping)?;
    if tier == Tier::Replica {
        tokio::spawn(ready_after_reporting(
            reporting.clone(),
            report.applied_index,
            ready.clone(),
        ));
    } else {
        tokio::spawn(tiers::ready_when_caught_up(handle.clone(), ready.clone()));
    }
    let max_connections = max_connections(&app.gateway.http, fd_limit);
    let listener = http::listener::Listener {
        tcp: listener,
        tls,
        http: app.gateway.http.clone(),
        max_connections,
        stats: app.stats.clone(),
    };
    serve_until_signal(app, listener, metrics_listener, &config, max_connections).await;
    let gateways = StartedGateways {
        stop: stop_gateways,
        tasks: gateway_tasks,
    };
    // The gateways' connections hold handles: gone before the pipeline
    // waits for its last handle.
    drop(tier_servers);
    stop_in_order(market, gateways, handle, pipeline, reporter).await;
    Ok(())
}

/// Sets what the process runs as, checks the listener's settings and the
/// schedules, and gives the demo its instruments; the scheduler's settings.
fn prepare(
    config: &mut Config,
    gateway: &GatewayConfig,
    demo: bool,
    tier: Tier,
) -> Result<SchedulerConfig, ServerError> {
    config.tiers.running_as = tier;
    gateway.http.check()?;
    if demo {
        // Listed and scheduled like configured instruments, so that the
        // scheduler, the gateways and the demo all see the same ones.
        exchange_demo::configure(config);
    }
    config.scheduler().map_err(ServerError::Schedule)
}

fn announce_generated_token(config: &Config) {
    eprintln!(
        "admin token: generated, in {} (read it from there)",
        config.data_dir.join("admin_token").display()
    );
}

/// The node's recovered pipeline and, when enabled, its reporting store.
struct OpenedState {
    pipeline: Pipeline,
    report: RecoveryReport,
    reporting: Option<Reporting>,
    reporter: Option<Reporter>,
    tier_servers: Option<tiers::TierServers>,
}

/// Recovers the node into its cluster and opens the reporting store; on
/// a gateway, starts the mirror instead.
fn open_state(config: &Config, tier: Tier) -> Result<OpenedState, ServerError> {
    if tier != Tier::Replica {
        if tier == Tier::Gateway
            && config.master_key_file.is_none()
            && std::env::var_os(MASTER_KEY_ENV).is_none()
        {
            // A generated key would derive secrets no client holds.
            return Err(ServerError::Gateway(
                "a gateway checks signatures with the replicas' master key: give it \
                 `--master-key-file` (or EXCHANGE_MASTER_KEY)"
                    .into(),
            ));
        }
        let (pipeline, report) = tiers::start_mirror(config, tier, pipeline_config(config)?)?;
        let reporting = tiers::history_store(config, tier, &pipeline.handle)?;
        return Ok(OpenedState {
            pipeline,
            report,
            reporting,
            reporter: None,
            tier_servers: None,
        });
    }
    let cluster = ClusterSettings {
        preallocate_journal: config.journal_preallocate,
        ..config.cluster.settings()?
    };
    let (pipeline, report) =
        recovery::start_cluster(&config.data_dir, pipeline_config(config)?, &cluster)?;
    report_recovery(&report);
    let handle = &pipeline.handle;
    let reporting = if config.reporting.enabled {
        Some(start_reporting(
            handle,
            config,
            report.truncated_bytes > 0,
            cluster.voters().len() > 1 || cluster.join,
        )?)
    } else {
        eprintln!(
            "reporting store: disabled ([reporting] enabled = false); history reads answer 503"
        );
        None
    };
    let (reporting, reporter) = reporting.unzip();
    handle.set_leader_urls(config.cluster.http_urls()?);
    if let Some(addr) = cluster.peers.get(&cluster.node_id) {
        eprintln!(
            "raft: node {} of voters {:?}, raft address {addr}",
            cluster.node_id,
            cluster.voters()
        );
    }
    let tier_servers = Some(tiers::start_replica_services(
        config,
        &cluster,
        &pipeline.handle,
    )?);
    Ok(OpenedState {
        pipeline,
        report,
        reporting,
        reporter,
        tier_servers,
    })
}

/// Lists the configured instruments now if this node leads, else in the
/// background once it does.
async fn list_instruments(
    handle: &Handle,
    config: &Config,
    stopping: &watch::Receiver<bool>,
) -> Result<(), ServerError> {
    if handle.is_leader() {
        ensure_instruments(handle, &config.instruments).await?;
        return Ok(());
    }
    // Whichever node leads lists them; this one does if it ever leads.
    let (handle, instruments) = (handle.clone(), config.instruments.clone());
    let mut stop = stopping.clone();
    tokio::spawn(async move {
        while !*stop.borrow() && handle.is_healthy() {
            if handle.is_leader() && ensure_instruments(&handle, &instruments).await.is_ok() {
                break;
            }
            let pause = tokio::time::sleep(std::time::Duration::from_millis(100));
            tokio::select! {
                _ = pause => {}
                _ = stop.changed() => {}
            }
        }
    });
    Ok(())
}

/// Whether this process runs the market-data service. A replica behind
/// gateways (`[tiers] clients = false`) serves no channels and no candles
/// (the market-data gateways derive theirs from the log), so it runs the
/// service only to publish the binary feed, rather than follow every
/// entry for no one.
fn runs_market_data(tier: Tier, config: &Config, marketdata: &MarketDataConfig) -> bool {
    let serves_clients = tier != Tier::Replica || config.tiers.clients;
    serves_clients || marketdata.publishes_feed()
}

/// The market-data service, if this process runs one.
async fn start_market_data(
    handle: &Handle,
    tier: Tier,
    config: &Config,
    marketdata: &MarketDataConfig,
) -> Result<Option<MarketDataService>, ServerError> {
    if !runs_market_data(tier, config, marketdata) {
        return Ok(None);
    }
    let market = marketdata::start(handle.clone(), marketdata).await?;
    if let Some(addr) = market.retransmit_addr {
        eprintln!("market-data feed: retransmission and snapshots on tcp://{addr}");
    }
    Ok(Some(market))
}

/// Binds the client listener and, when configured, the metrics one.
async fn bind_listeners(
    config: &Config,
    http_config: &HttpConfig,
    tls: bool,
) -> Result<(TcpListener, Option<TcpListener>), ServerError> {
    let listener = bind(config.listen).await?;
    let scheme = if tls { "https" } else { "http" };
    eprintln!(
        "exchange listening on {scheme}://{}",
        listener.local_addr()?
    );
    let metrics_listener = match http_config.metrics_bind {
        Some(addr) => {
            let listener = bind(addr).await?;
            eprintln!("metrics listening on http://{}", listener.local_addr()?);
            Some(listener)
        }
        None => None,
    };
    Ok((listener, metrics_listener))
}

/// Starts the trading scheduler and each extra gateway; every task ends
/// once `stopping` turns true.
fn start_gateways(
    handle: &Handle,
    config: &Config,
    scheduler: Option<SchedulerConfig>,
    gateways: Vec<GatewayStart>,
    stopping: &watch::Receiver<bool>,
) -> Result<Vec<JoinHandle<()>>, ServerError> {
    let mut gateway_tasks = Vec::new();
    if let Some(scheduler) = scheduler {
        gateway_tasks.push(exchange_node::scheduler::spawn(
            handle.clone(),
            scheduler,
            std::sync::Arc::new(exchange_node::scheduler::SystemClock),
            stopping.clone(),
        ));
    }
    for start in gateways {
        gateway_tasks.push(start(handle, config, stopping.clone()).map_err(ServerError::Gateway)?);
    }
    Ok(gateway_tasks)
}

/// The configured connection limit, lowered to what the open-file limit
/// allows.
fn max_connections(config: &HttpConfig, fd_limit: Option<u64>) -> usize {
    let max_connections =
        http::listener::effective_max_connections(config.max_connections, fd_limit);
    if max_connections < config.max_connections {
        eprintln!(
            "http: WARNING: the open-file limit ({}) allows {max_connections} connections, \
             not [http] max_connections = {}",
            fd_limit.unwrap_or_default(),
            config.max_connections
        );
    }
    max_connections
}

/// Serves clients, and metrics when bound, until ctrl-c or SIGTERM; then
/// closes the WebSockets and waits a little for them to go.
async fn serve_until_signal(
    app: AppState,
    listener: http::listener::Listener,
    metrics_listener: Option<TcpListener>,
    config: &Config,
    max_connections: usize,
) {
    let (stop_metrics, metrics_stopping) = watch::channel(false);
    let metrics_task = metrics_listener.map(|tcp| {
        let listener = http::listener::Listener {
            tcp,
            tls: None,
            http: app.gateway.http.clone(),
            max_connections,
            stats: app.stats.clone(),
        };
        let router = http::metrics_router(app.clone());
        let mut stopping = metrics_stopping;
        tokio::spawn(http::listener::serve(listener, router, async move {
            let _ = stopping.wait_for(|stop| *stop).await;
        }))
    });
    let sockets = app.clone();
    let drain = config.tiers.drain();
    let drained = app.clone();
    let stop = async move {
        shutdown_signal().await;
        if !drain.is_zero() {
            // New requests are turned away with nothing applied and the
            // WebSockets told to go, while the listeners still answer:
            // every client learns to move before a connection is cut.
            eprintln!("draining for {} ms", drain.as_millis());
            drained
                .draining
                .store(true, std::sync::atomic::Ordering::Release);
            drained.close_sockets();
            tokio::time::sleep(drain).await;
        }
    };
    http::listener::serve(listener, http::router(app), stop).await;
    let _ = stop_metrics.send(true);
    if let Some(task) = metrics_task {
        let _ = task.await;
    }
    // Each WebSocket holds a sequencer handle; its cancel-on-disconnect
    // must still reach the log.
    sockets.close_sockets();
    let waited = std::time::Instant::now();
    while sockets.stats.open_connections() > 0 && waited.elapsed() < WS_SHUTDOWN_WAIT {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The scheduler and gateway tasks, and the signal that stops them.
struct StartedGateways {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// Stops whatever holds a sequencer handle, then the pipeline, then the
/// reporter it feeds.
async fn stop_in_order(
    market: Option<MarketDataService>,
    gateways: StartedGateways,
    handle: Handle,
    pipeline: Pipeline,
    reporter: Option<Reporter>,
) {
    // A write waiting for disk space fails now, so that requests waiting
    // for it are answered and the gateways below can stop.
    handle.stop_disk_retries();
    // The service holds a sequencer handle: stop it before the pipeline.
    if let Some(market) = market {
        market.shutdown().await;
    }
    let _ = gateways.stop.send(true);
    for task in gateways.tasks {
        let _ = task.await;
    }
    drop(handle);
    let _ = tokio::task::spawn_blocking(move || {
        pipeline.join();
        // It writes what the core published last, then stops.
        if let Some(reporter) = reporter {
            reporter.join();
        }
    })
    .await;
}

/// Marks the node ready. History reads right after a restart should not
/// wait on a long catch-up, so readiness first waits for the store to
/// reach what recovery applied, but only so long: reporting never holds up
/// trading. Meanwhile the listener serves `/health` and `/ready`.
async fn ready_after_reporting(
    reporting: Option<Reporting>,
    recovered: u64,
    ready: Arc<AtomicBool>,
) {
    if let Some(reporting) = reporting {
        if !reporting.wait_until(recovered, REPORTING_READY_WAIT).await {
            eprintln!(
                "reporting: WARNING: the store is still behind the journal after {} s; trading \
                 starts, history reads answer 503 until it catches up",
                REPORTING_READY_WAIT.as_secs()
            );
        }
    }
    ready.store(true, std::sync::atomic::Ordering::Release);
}

async fn bind(addr: std::net::SocketAddr) -> Result<tokio::net::TcpListener, ServerError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Listen { addr, source })
}

/// Opens the reporting store (`[reporting] url`, else SQLite in the data
/// directory) and starts the reporter on the node's events.
pub fn start_reporting(
    handle: &Handle,
    config: &Config,
    journal_tail_dropped: bool,
    replica_of_many: bool,
) -> Result<(Reporting, Reporter), ServerError> {
    let target = Target::resolve(config.reporting.url.as_deref(), &config.data_dir)?;
    let (reporting, reporter) = Reporting::start(
        handle,
        ReporterConfig {
            target: target.clone(),
            data_dir: config.data_dir.clone(),
            max_batch: config.reporting.max_batch,
            linger: std::time::Duration::from_millis(config.reporting.linger_ms),
            read_wait: std::time::Duration::from_millis(config.reporting.read_wait_ms),
            background: config.reporting.background,
            cpus: config.reporting.cpus.clone(),
            journal_tail_dropped,
            replica_of_many,
        },
    )?;
    eprintln!(
        "reporting store: {} (at log index {})",
        target.describe(),
        reporting.written()
    );
    Ok((reporting, reporter))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    eprintln!("shutting down");
}
