//! `exchange`: one binary, one subcommand per job.

mod admin;
mod admin_token;
mod bench;
mod cluster;
mod config;
mod feed;
mod keys;
mod log;
mod probe;
mod replay;
mod report;
mod reporter;
mod tier;
mod version;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

/// mimalloc's thread-local free lists suit the server's pattern: buffers
/// allocated on one thread (a gateway worker) and freed on another (the
/// core or the reporter). Built without transparent huge pages
/// (`no_thp`): faulting in a fresh huge page stalled the core thread for
/// 6-7 ms inside one command (`bench engine`'s max); on a host whose THP
/// mode is `always` rather than `madvise`, run with `MIMALLOC_ALLOW_THP=0`.
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
    /// API keys: create, list, revoke, rotate (through a node's admin routes).
    #[command(subcommand)]
    Keys(keys::KeysCmd),
    /// Member risk controls on a running server: suspend, reinstate,
    /// limits, market-maker protection.
    Admin(admin::AdminArgs),
    /// A node's journal: print it as JSON Lines.
    #[command(subcommand)]
    Log(log::LogCmd),
    /// An order-entry gateway in front of the replicas: REST, WebSocket
    /// and FIX, forwarding to whichever replica leads.
    Gateway(tier::GatewayArgs),
    /// A market-data gateway: the public WebSocket channels and the feed,
    /// from any replica's log.
    MdGateway(tier::MdGatewayArgs),
    /// This binary's version, and with --formats the formats it reads and
    /// writes (JSON).
    Version(version::VersionArgs),
    /// One HTTP GET: exit 0 on a 2xx answer, else 1 with the reason (a
    /// container's health check, where the image has no shell or curl).
    Probe(probe::ProbeArgs),
    /// The reporting store's writer as a process of its own: follows any
    /// replica's log stream and writes every entry to the store.
    Reporter(reporter::ReporterArgs),
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
    /// A file holding the admin bearer token (else EXCHANGE_ADMIN_TOKEN,
    /// else one is generated into DATA_DIR/admin_token). The token itself
    /// is never taken on the command line, where `ps` shows it.
    #[arg(long)]
    admin_token_file: Option<PathBuf>,
    /// File (mode 0600) with the 64-hex-digit master key API secrets are
    /// derived from (EXCHANGE_MASTER_KEY wins; neither: DATA_DIR/master_key,
    /// generated on first start).
    #[arg(long)]
    master_key_file: Option<PathBuf>,
    /// Create demo accounts and run a small market maker and takers.
    #[arg(long)]
    demo: bool,
    /// Reporting store: postgres://... or sqlite:PATH (default: reporting.sqlite in the data
    /// directory).
    #[arg(long)]
    reporting_url: Option<String>,
    /// CPUs the reporting writer keeps to in the background: auto, any, or
    /// a list such as 1, 2-3, 1,3 (as `[reporting] cpus`).
    #[arg(long)]
    reporting_cpus: Option<exchange_node::threads::CpuPlacement>,
    /// Keep no reporting store on this node (as `[reporting] enabled =
    /// false`): an `exchange reporter` writes it from the log stream, or
    /// another node does.
    #[arg(long)]
    no_reporting: bool,
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
    /// File (mode 0600) with the 64-hex-digit cluster key, the same on
    /// every node: the Raft port talks to its holders only. Required with
    /// peers (as `[cluster] key_file`).
    #[arg(long)]
    cluster_key_file: Option<PathBuf>,
    /// Serve gateways' commands on this address (as `[tiers]
    /// ingress_listen`; needs the cluster key).
    #[arg(long)]
    ingress_listen: Option<std::net::SocketAddr>,
    /// Serve the committed log to gateways on this address (as `[tiers]
    /// stream_listen`; needs the cluster key).
    #[arg(long)]
    stream_listen: Option<std::net::SocketAddr>,
    /// Serve operators only (admin, health, metrics, `/ops`): clients
    /// connect to the gateways in front (as `[tiers] clients = false`).
    #[arg(long)]
    no_clients: bool,
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut file = match &args.config {
        Some(path) => config::FileConfig::load(path)?,
        None => config::FileConfig::default(),
    };
    let config = &mut file.node;
    if let Some(dir) = args.data_dir {
        config.data_dir = dir;
    }
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if args.admin_token_file.is_some() {
        config.admin_token_file = args.admin_token_file;
    }
    if args.master_key_file.is_some() {
        config.master_key_file = args.master_key_file;
    }
    if args.reporting_url.is_some() {
        config.reporting.url = args.reporting_url;
    }
    if let Some(cpus) = args.reporting_cpus {
        config.reporting.cpus = cpus;
    }
    if args.no_reporting {
        config.reporting.enabled = false;
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
    if args.cluster_key_file.is_some() {
        config.cluster.key_file = args.cluster_key_file;
    }
    if let Some(urls) = &args.peer_urls {
        config.cluster.http = urls.split(',').map(str::to_string).collect();
    }
    if args.ingress_listen.is_some() {
        config.tiers.ingress_listen = args.ingress_listen;
    }
    if args.stream_listen.is_some() {
        config.tiers.stream_listen = args.stream_listen;
    }
    if args.no_clients {
        config.tiers.clients = false;
    }
    data_dir_usable(&config.data_dir)?;
    // Checked here, before start-up recovers the journal and opens the
    // reporting store, which would print their lines before the error.
    config.cluster.settings().context("cluster configuration")?;
    config
        .cluster
        .http_urls()
        .context("cluster configuration: peer HTTP addresses")?;
    run_server(file, args.demo, exchange_node::tiers_config::Tier::Replica)
}

/// Starts logging and the runtime and runs one process of the venue.
fn run_server(
    config: config::FileConfig,
    demo: bool,
    tier: exchange_node::tiers_config::Tier,
) -> anyhow::Result<()> {
    use exchange_node::tiers_config::Tier;
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
    let gateways = match tier {
        Tier::Replica if !config.node.tiers.clients => Vec::new(),
        Tier::MarketData => Vec::new(),
        Tier::Replica | Tier::Gateway => vec![exchange_fix::gateway(config.fix.clone())],
    };
    runtime.block_on(exchange_server::run_tier(
        config.server(),
        demo,
        gateways,
        tier,
    ))?;
    Ok(())
}

/// Creates the data directory if needed and checks that it can be listed,
/// so that a bad `--data-dir` is reported with its path rather than as a
/// bare I/O error from deep inside start-up.
/// Creates the data directory readable by this user only, and tightens
/// one that exists with looser permissions: it holds the journal (every
/// API secret is in it), the admin token and the reporting store.
fn data_dir_usable(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let context = || format!("data directory {}", dir.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(context)?;
    let mode = std::fs::metadata(dir)
        .with_context(context)?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(context)?;
        eprintln!(
            "data directory {}: was mode {mode:o}, readable by others; now 700",
            dir.display()
        );
    }
    std::fs::read_dir(dir).map(drop).with_context(context)
}

/// Everything the process creates (journal, snapshots, reporting store,
/// tokens, pid files, FIX store) is its user's alone, whichever library
/// creates it and however.
fn private_umask() {
    // SAFETY: umask(2) only sets the process's file mode creation mask; it
    // cannot fail and touches no memory. Called first thing in `main`,
    // before any thread that could be creating a file exists.
    unsafe {
        libc::umask(0o077);
    }
}

/// mimalloc's purge of freed memory is off: it ran inside whichever
/// allocation came a while (1 s in the linked version) after a free, on
/// the thread that made it, and handed a batch of pages back to the OS in
/// one go: 2.1-2.9 ms inside one command of `bench engine --levels 5000`
/// in every run (121-177 µs without it). Freed memory stays with the
/// process for its next allocations instead (`bench engine`'s peak
/// resident set: 2-5% more).
fn allocator_keeps_freed_memory() {
    // mimalloc's `mi_option_purge_delay` (15 in both its v2 and v3
    // `mi_option_e`); -1 never purges. libmimalloc-sys names no constant
    // for it, so the index is spelled here.
    const PURGE_DELAY: libc::c_int = 15;
    extern "C" {
        fn mi_option_set(option: libc::c_int, value: libc::c_long);
    }
    // SAFETY: mi_option_set only stores an option value that mimalloc,
    // linked in as the global allocator, reads on its next purge; the
    // option exists in the linked version and takes a long.
    unsafe {
        mi_option_set(PURGE_DELAY, -1);
    }
}

/// Usage errors are clap's: it prints them with the usage and exits with
/// 2. Every other failure is one line on stderr and exit code 1; the
/// backtrace anyhow captures under `RUST_BACKTRACE` is never printed, as
/// it says nothing to an operator.
fn main() -> ExitCode {
    private_umask();
    allocator_keeps_freed_memory();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined with ": ", as `{:#}` joins them, with
/// two differences. A cause whose text the line already holds is left
/// out: several library errors put their source in their own message and
/// also return it from `source()`, which `{:#}` would print twice. And a
/// multi-line message is folded into one line (see [`fold`]).
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = fold(&cause.to_string());
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    if line.is_empty() {
        line.push_str("failed without a message");
    }
    line
}

/// Joins a message's lines with "; ". TOML's parse errors quote the bad
/// line with a caret under the column; those lines (`  |`, `3 | x =`)
/// mean nothing once folded, and the first line already names the line
/// and column, so they are dropped.
fn fold(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .filter(|line| {
            let gutter = line.trim_start_matches(|c: char| c.is_ascii_digit());
            !gutter.trim_start().starts_with('|')
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn run(command: Cmd) -> anyhow::Result<()> {
    match command {
        Cmd::Replay { file, final_state } => replay::run(&file, final_state.as_deref()),
        Cmd::Serve(args) => serve(args),
        Cmd::Gateway(args) => tier::gateway(args),
        Cmd::MdGateway(args) => tier::md_gateway(args),
        Cmd::Version(args) => {
            version::run(&args);
            Ok(())
        }
        Cmd::Reporter(args) => reporter::run(args),
        Cmd::Bench(cmd) => bench::run(cmd),
        Cmd::Feed(cmd) => feed::run(cmd),
        Cmd::Report(args) => report::run(args),
        Cmd::Cluster(cmd) => cluster::run(cmd),
        Cmd::Keys(cmd) => keys::run(cmd),
        Cmd::Admin(args) => admin::run(args),
        Cmd::Log(cmd) => log::run(cmd),
        Cmd::Probe(args) => probe::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that, like many thiserror types, quotes its source in its
    /// own message and also returns it from `source()`.
    #[derive(Debug)]
    struct Quoting(std::io::Error);

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot read config /etc/x.toml: {}", self.0)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_quotes_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(Quoting(io)).context("starting");
        assert_eq!(
            one_line(&error),
            "starting: cannot read config /etc/x.toml: no such file"
        );
    }

    #[test]
    fn causes_are_joined_like_the_alternate_format() {
        let error = anyhow::anyhow!("connection refused")
            .context("asking http://127.0.0.1:1")
            .context("cluster status");
        assert_eq!(one_line(&error), format!("{error:#}"));
    }

    #[test]
    fn a_toml_error_folds_to_one_line_without_its_snippet() {
        let message = "TOML parse error at line 1, column 7\n  |\n1 | foo = \n  |       ^\n\
            invalid string\nexpected `\"`, `'`\n";
        assert_eq!(
            fold(message),
            "TOML parse error at line 1, column 7; invalid string; expected `\"`, `'`"
        );
    }

    #[test]
    fn the_admin_command_takes_its_token_from_a_file_never_the_command_line() {
        use clap::Parser;
        let inline = Cli::try_parse_from([
            "exchange",
            "admin",
            "--token",
            "t",
            "suspend",
            "--account",
            "1",
        ]);
        assert!(inline.is_err(), "an inline admin token must be refused");
        let from_file = Cli::try_parse_from([
            "exchange",
            "admin",
            "--token-file",
            "/run/secrets/admin",
            "suspend",
            "--account",
            "1",
        ]);
        assert!(from_file.is_ok());
    }

    #[test]
    fn an_admin_token_file_wins_and_an_empty_one_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("token");
        std::fs::write(&file, "  secret-token\n").expect("write");
        let token = admin_token::from_file_or_env(Some(&file)).expect("read");
        assert_eq!(token.as_deref(), Some("secret-token"));
        std::fs::write(&file, "\n").expect("write");
        let empty = admin_token::from_file_or_env(Some(&file));
        assert!(empty.is_err_and(|e| e.to_string().contains("is empty")));
    }
}
