//! `exchange reporter`: the reporting store's writer as a process of its
//! own, following the replicas' log stream (docs/reporting.md, "A
//! reporter of its own").

use std::net::SocketAddr;

use exchange_replication::transport::PeerAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use exchange_node::config::Config;
use exchange_reporter::remote::{RemoteConfig, RemoteReporter, View};
use exchange_reporting::Target;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(clap::Args)]
pub struct ReporterArgs {
    /// The configuration file (`[reporting]`, `[tiers] stream` and
    /// `process_id`, `[cluster] key_file`, `listen`, `data_dir`) and the
    /// flags over it; the data directory holds the reporter's snapshots,
    /// and the SQLite store unless `--reporting-url` names another.
    #[command(flatten)]
    follower: crate::tier::Follower,
    /// Reporting store: postgres://... or sqlite:PATH (default:
    /// reporting.sqlite in the data directory).
    #[arg(long)]
    reporting_url: Option<String>,
    /// Commands between two snapshots of the reporter's state: a restart
    /// asks the replicas for the log after the newest one, so their log
    /// must reach back that far.
    #[arg(long, default_value_t = 100_000)]
    state_every: u64,
    /// `/ready` answers 200 while the store is at most this many Raft
    /// entries behind the replica followed.
    #[arg(long, default_value_t = 1_000)]
    ready_max_lag: u64,
}

fn config(args: &ReporterArgs) -> anyhow::Result<Config> {
    let mut config = args.follower.load()?.node;
    if args.reporting_url.is_some() {
        config.reporting.url = args.reporting_url.clone();
    }
    crate::data_dir_usable(&config.data_dir)?;
    // The reporter keeps its snapshots in DIR/snapshots, two of them:
    // in a replica's directory it would prune the replica's.
    let journal = exchange_node::recovery::journal_dir(&config.data_dir);
    anyhow::ensure!(
        !journal.exists(),
        "{} is a replica's data directory (it has a journal): give the reporter its own \
         --data-dir",
        config.data_dir.display()
    );
    Ok(config)
}

fn remote_config(args: &ReporterArgs, config: &Config) -> anyhow::Result<RemoteConfig> {
    let key_file = config
        .cluster
        .key_file
        .as_ref()
        .context("the reporter needs the cluster key: --cluster-key-file")?;
    let key = exchange_node::cluster_key::load(key_file).context("cluster key")?;
    let stream = config
        .tiers
        .stream
        .iter()
        .map(|item| {
            item.trim()
                .parse::<PeerAddr>()
                .with_context(|| format!("--stream item {item:?} is not HOST:PORT"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(
        !stream.is_empty(),
        "the reporter needs the replicas' log-stream addresses: --stream"
    );
    let target = Target::resolve(config.reporting.url.as_deref(), &config.data_dir)?;
    Ok(RemoteConfig {
        target,
        data_dir: config.data_dir.clone(),
        stream,
        key,
        process_id: config.tiers.process_id,
        max_batch: config.reporting.max_batch,
        linger: Duration::from_millis(config.reporting.linger_ms),
        state_every: args.state_every.max(1),
        ready_lag: args.ready_max_lag,
    })
}

pub fn run(args: ReporterArgs) -> anyhow::Result<()> {
    let config = config(&args)?;
    let remote = remote_config(&args, &config)?;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    eprintln!(
        "reporter: writing {} from the log of {:?}",
        remote.target.describe(),
        remote.stream
    );
    let reporter = Arc::new(RemoteReporter::start(remote)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(serve(config.listen, reporter.clone()));
    // Writes what it received and keeps its state, off the runtime.
    reporter.stop();
    served
}

/// Answers HTTP until SIGINT or SIGTERM.
async fn serve(listen: SocketAddr, reporter: Arc<RemoteReporter>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    eprintln!(
        "reporter: /health, /ready and /metrics on http://{}",
        listener.local_addr()?
    );
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // Over the limit, the connection is closed unanswered.
                let Ok((socket, _)) = accepted else { continue };
                let Ok(permit) = open.clone().try_acquire_owned() else { continue };
                let reporter = reporter.clone();
                tokio::spawn(async move {
                    let answered = answer(socket, reporter);
                    let _ = tokio::time::timeout(CONNECTION_DEADLINE, answered).await;
                    drop(permit);
                });
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        }
    }
    eprintln!("reporter: stopping");
    Ok(())
}

/// The largest request head read.
const HEAD_LIMIT: usize = 8 * 1024;
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections answered at once: the listener is for probes, a
/// Prometheus scraper and an operator, never for clients.
const MAX_CONNECTIONS: usize = 64;
/// A connection's whole life, reading and writing: a peer that does not
/// read its answer cannot hold a slot.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);

/// One request per connection, then the connection is closed.
async fn answer(mut socket: TcpStream, reporter: Arc<RemoteReporter>) {
    let Ok(Some(path)) = tokio::time::timeout(READ_TIMEOUT, request_path(&mut socket)).await else {
        return;
    };
    let (status, content_type, body) = route(&path, &reporter);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.shutdown().await;
}

/// The path of a `GET` request, once its head has come; `None` for
/// anything else.
async fn request_path(socket: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = socket.read(&mut buf).await.ok().filter(|&n| n > 0)?;
        head.extend_from_slice(&buf[..read]);
        if head.len() > HEAD_LIMIT {
            return None;
        }
    }
    let line = std::str::from_utf8(&head).ok()?.lines().next()?.to_string();
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    let target = parts.next()?;
    Some(target.split('?').next().unwrap_or(target).to_string())
}

fn route(path: &str, reporter: &RemoteReporter) -> (&'static str, &'static str, String) {
    const JSON: &str = "application/json";
    match path {
        "/health" => {
            let view = reporter.view();
            let status = if view.fault.is_some() {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            (status, JSON, view_json(&view))
        }
        "/ready" => {
            let view = reporter.view();
            let status = if view.ready {
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            (status, JSON, view_json(&view))
        }
        "/metrics" => ("200 OK", "text/plain; version=0.0.4", reporter.metrics()),
        // What `exchange cluster status` asks every process for.
        "/admin/replication" => ("200 OK", JSON, replication_json(&reporter.view())),
        _ => (
            "404 Not Found",
            JSON,
            json!({"code": "not_found"}).to_string(),
        ),
    }
}

fn view_json(view: &View) -> String {
    let fault = view.fault.as_ref().map(|fault| {
        json!({
            "message": fault.message,
            "store_position": fault.store_position,
            "snapshot_command": fault.snapshot_command,
            "snapshot_raft_index": fault.snapshot_raft_index,
            "missing_commands": fault.missing(),
        })
    });
    let status = match (&fault, view.ready) {
        (Some(_), _) => "stopped",
        (None, true) => "ready",
        (None, false) => "catching_up",
    };
    json!({
        "status": status,
        "tier": "reporter",
        "following": view.following.as_ref().map(ToString::to_string),
        "position": view.position,
        "written_raft_index": view.written_raft,
        "replica_applied_raft_index": view.replica_applied,
        "lag_entries": view.lag_entries,
        "lag_seconds": view.lag_seconds_ns as f64 / 1e9,
        "fault": fault,
    })
    .to_string()
}

/// The reporter as `exchange cluster status` lists a gateway: its role,
/// the replica it follows and the Raft index the store holds through.
fn replication_json(view: &View) -> String {
    json!({
        "role": "reporter",
        "following": view.following.as_ref().map(ToString::to_string),
        "applied_index": view.written_raft,
        "leader": null,
    })
    .to_string()
}
