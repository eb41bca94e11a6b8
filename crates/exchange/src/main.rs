//! `exchange`: one binary, one subcommand per job.

mod bench;
mod cluster;
mod feed;
mod replay;
mod report;

use std::path::PathBuf;

/// mimalloc's thread-local free lists suit the server's pattern: buffers
/// allocated on one thread (a gateway worker) and freed on another (the
/// core or the reporter).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "exchange", version, about = "An open-source stock exchange")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Apply JSON Lines commands to a fresh core and print the events as JSON Lines.
    Replay {
        /// Command file, or `-` for standard input.
        file: PathBuf,
        /// Write the final books, balances and state hash to this JSON file.
        #[arg(long)]
        final_state: Option<PathBuf>,
    },
    /// Run the exchange: journal, core, REST, WebSocket and FIX.
    Serve(ServeArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// The binary market-data feed.
    #[command(subcommand)]
    Feed(feed::FeedCmd),
    /// Reports from the reporting store: trades, fills, daily summaries, audit, ledger.
    Report(report::ReportArgs),
    /// A local Raft cluster (up, down) and any cluster's status.
    #[command(subcommand)]
    Cluster(cluster::ClusterCmd),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Data directory (journal, snapshots, admin token).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// HTTP and WebSocket address.
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// TOML configuration file (see docs/server.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Admin bearer token (else EXCHANGE_ADMIN_TOKEN, else generated).
    #[arg(long)]
    admin_token: Option<String>,
    /// Create demo accounts and run a small market maker and takers.
    #[arg(long)]
    demo: bool,
    /// Reporting store: postgres://... or sqlite:PATH (default: reporting.sqlite in the data directory).
    #[arg(long)]
    reporting_url: Option<String>,
    /// CPUs the reporting writer keeps to in the background: auto, any, or
    /// a list such as 1, 2-3, 1,3 (as `[reporting] cpus`).
    #[arg(long)]
    reporting_cpus: Option<exchange_node::threads::CpuPlacement>,
    /// This node's id in a Raft cluster (see docs/replication.md).
    #[arg(long)]
    node_id: Option<u64>,
    /// Every voter's Raft address, this node's included:
    /// `1=HOST:PORT,2=HOST:PORT,3=HOST:PORT`.
    #[arg(long)]
    peers: Option<String>,
    /// Every node's HTTP address, for the `not_leader` answers of
    /// followers: `1=http://HOST:PORT,2=...`.
    #[arg(long)]
    peer_urls: Option<String>,
    /// Join a running cluster (the leader adds this node with
    /// `POST /admin/replication/voters`) instead of founding one.
    #[arg(long)]
    join: bool,
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    use exchange_node::config::Config;
    let mut config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    if let Some(dir) = args.data_dir {
        config.data_dir = dir;
    }
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if args.admin_token.is_some() {
        config.admin_token = args.admin_token;
    }
    if args.reporting_url.is_some() {
        config.reporting.url = args.reporting_url;
    }
    if let Some(cpus) = args.reporting_cpus {
        config.reporting.cpus = cpus;
    }
    if let Some(id) = args.node_id {
        config.cluster.node_id = id;
    }
    if let Some(peers) = &args.peers {
        config.cluster.peers = peers.split(',').map(str::to_string).collect();
    }
    if args.join {
        config.cluster.join = true;
    }
    if let Some(urls) = &args.peer_urls {
        config.cluster.http = urls.split(',').map(str::to_string).collect();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    // The gateway's workers are on every order's path.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(exchange_node::threads::latency_sensitive)
        .build()?;
    let gateways = vec![exchange_fix::gateway()];
    runtime.block_on(exchange_server::run_with_gateways(
        config, args.demo, gateways,
    ))?;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Replay { file, final_state } => replay::run(&file, final_state.as_deref()),
        Cmd::Serve(args) => serve(args),
        Cmd::Bench(cmd) => bench::run(cmd),
        Cmd::Feed(cmd) => feed::run(cmd),
        Cmd::Report(args) => report::run(args),
        Cmd::Cluster(cmd) => cluster::run(cmd),
    }
}
