//! `exchange gateway` and `exchange md-gateway`: the processes in front of
//! the replicas (docs/deploy.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::config::FileConfig;
use anyhow::Context;
use exchange_node::tiers_config::Tier;

/// What every process that follows the replicas' log stream takes: both
/// kinds of gateway and the reporter.
#[derive(clap::Args)]
pub struct Follower {
    /// TOML configuration file (see docs/server.md and docs/deploy.md).
    #[arg(long)]
    config: Option<PathBuf>,
    /// This process's own directory (a gateway's admin token and FIX
    /// session store, a reporter's snapshots); never a replica's.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// HTTP address (a gateway's API; a reporter's `/health`, `/ready`
    /// and `/metrics`).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// File (mode 0600) with the cluster key the replicas hold.
    #[arg(long)]
    cluster_key_file: Option<PathBuf>,
    /// The replicas' log-stream addresses, comma-separated, tried in
    /// order: `HOST:PORT,HOST:PORT`.
    #[arg(long)]
    stream: Option<String>,
    /// This process's id in the cluster's handshakes (for their logs).
    #[arg(long)]
    process_id: Option<u64>,
}

impl Follower {
    /// The configuration file (or the defaults) with these flags over it.
    pub fn load(&self) -> anyhow::Result<FileConfig> {
        let mut file = match &self.config {
            Some(path) => FileConfig::load(path)?,
            None => FileConfig::default(),
        };
        let config = &mut file.node;
        if let Some(dir) = &self.data_dir {
            config.data_dir = dir.clone();
        }
        if let Some(listen) = self.listen {
            config.listen = listen;
        }
        if self.cluster_key_file.is_some() {
            config.cluster.key_file = self.cluster_key_file.clone();
        }
        if let Some(stream) = &self.stream {
            config.tiers.stream = list(stream);
        }
        if let Some(id) = self.process_id {
            config.tiers.process_id = id;
        }
        Ok(file)
    }
}

/// What both kinds of gateway take.
#[derive(clap::Args)]
pub struct Upstream {
    #[command(flatten)]
    follower: Follower,
    /// A file holding the admin bearer token (as for `serve`).
    #[arg(long)]
    admin_token_file: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct GatewayArgs {
    #[command(flatten)]
    upstream: Upstream,
    /// Every replica's ingress address: `1=HOST:PORT,2=HOST:PORT,...`.
    #[arg(long)]
    ingress: Option<String>,
    /// This gateway's name: a restarted gateway of the same name replaces
    /// its previous session.
    #[arg(long)]
    name: Option<String>,
    /// How long after this gateway's last log entry the cluster cancels
    /// the orders its cancel-on-disconnect clients protect (it died), in
    /// milliseconds; at least 2000.
    #[arg(long)]
    cancel_grace_ms: Option<u64>,
    /// File (mode 0600) with the replicas' master key, which API secrets
    /// are derived from (EXCHANGE_MASTER_KEY wins).
    #[arg(long)]
    master_key_file: Option<PathBuf>,
    /// Serve history reads (closed orders, fills, candles) from this
    /// reporting store, which an `exchange reporter` writes:
    /// postgres://... or sqlite:PATH. Without it they answer 503.
    #[arg(long)]
    reporting_url: Option<String>,
}

#[derive(clap::Args)]
pub struct MdGatewayArgs {
    #[command(flatten)]
    upstream: Upstream,
}

fn list(text: &str) -> Vec<String> {
    text.split(',').map(str::to_string).collect()
}

fn base_config(args: Upstream) -> anyhow::Result<FileConfig> {
    let mut file = args.follower.load()?;
    let config = &mut file.node;
    if args.admin_token_file.is_some() {
        config.admin_token_file = args.admin_token_file;
    }
    // A gateway writes no reporting store; an order-entry gateway given
    // `[reporting] url` reads history from it.
    config.reporting.enabled = false;
    crate::data_dir_usable(&config.data_dir)?;
    Ok(file)
}

pub fn gateway(args: GatewayArgs) -> anyhow::Result<()> {
    let mut file = base_config(args.upstream)?;
    let config = &mut file.node;
    if let Some(ingress) = &args.ingress {
        config.tiers.ingress = list(ingress);
    }
    if let Some(name) = args.name {
        config.tiers.name = name;
    }
    if let Some(grace) = args.cancel_grace_ms {
        config.tiers.cancel_grace_ms = grace;
    }
    if args.master_key_file.is_some() {
        config.master_key_file = args.master_key_file;
    }
    if args.reporting_url.is_some() {
        config.reporting.url = args.reporting_url;
    }
    check(config, Tier::Gateway)?;
    crate::run_server(file, false, Tier::Gateway)
}

pub fn md_gateway(args: MdGatewayArgs) -> anyhow::Result<()> {
    let file = base_config(args.upstream)?;
    check(&file.node, Tier::MarketData)?;
    crate::run_server(file, false, Tier::MarketData)
}

/// Refuses a configuration that cannot reach the cluster before anything
/// starts.
fn check(config: &exchange_node::config::Config, tier: Tier) -> anyhow::Result<()> {
    let key = match &config.cluster.key_file {
        Some(path) => Some(exchange_node::cluster_key::load(path).context("cluster key")?),
        None => None,
    };
    config
        .tiers
        .mirror(tier, key)
        .with_context(|| format!("{} configuration", tier.as_str()))?;
    Ok(())
}
