//! The gateways of a local tiered venue (docs/deploy.md): `up` starts
//! `--gateways N` order-entry gateways, `--md-gateways M` market-data
//! gateways and `--reporters R` reporters in front of the nodes, `down`
//! stops them first, and `status` lists them beside the nodes.
//!
//! With reporters the nodes keep no reporting store; reporter K writes
//! `DIR/reporter-K/reporting.sqlite` (HTTP on `PORT_BASE + 600 + K`), and
//! the order-entry gateways read history from reporter 1's.
//!
//! Gateway K serves HTTP on `PORT_BASE + 400 + K` with its data in
//! `DIR/gateway-K`, market-data gateway K on `PORT_BASE + 500 + K` in
//! `DIR/md-gateway-K`. Each follows the nodes' log streams starting with a
//! different node (gateway K with node K, counting round), so that the
//! followers spread over the nodes; an order-entry gateway is named
//! `gw-K` and sends to the leader's ingress.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::Value;

use super::http::http_get;
use super::layout::{gateway_dir, Kind, Layout};
use super::process::{
    alive, recorded_pid, remove_pid_file, report_stop, running, serves, spawn, stop, Stopped,
    STOP_WAITS,
};
use super::status::replication;

/// What every process of a local venue is given.
pub(super) struct Secrets {
    pub(super) token: String,
    pub(super) master_key: String,
    pub(super) cluster_key: PathBuf,
}

fn name(kind: Kind, number: u64) -> String {
    format!("{} {number}", kind.as_str())
}

/// The nodes' log streams, starting with the `number`-th node.
fn streams(layout: &Layout, number: u64) -> String {
    let members: Vec<u64> = layout.members().collect();
    let first = usize::try_from(number.saturating_sub(1)).unwrap_or(0) % members.len().max(1);
    members[first..]
        .iter()
        .chain(&members[..first])
        .map(|&id| layout.stream_by_name(id))
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn command(
    exe: &Path,
    layout: &Layout,
    dir: &Path,
    (kind, number): (Kind, u64),
    secrets: &Secrets,
    config: Option<&Path>,
    history: Option<&str>,
) -> Command {
    let mut command = Command::new(exe);
    command
        .arg(kind.as_str())
        .arg("--data-dir")
        .arg(gateway_dir(dir, kind, number))
        .arg("--listen")
        .arg(layout.gateway_http(kind, number).to_string())
        .arg("--cluster-key-file")
        .arg(&secrets.cluster_key)
        .arg("--stream")
        .arg(streams(layout, number))
        .arg("--process-id")
        .arg(kind.process_id(number).to_string())
        .env("EXCHANGE_ADMIN_TOKEN", &secrets.token)
        .env(
            exchange_node::master_key::MASTER_KEY_ENV,
            &secrets.master_key,
        );
    if kind == Kind::Gateway {
        let ingress: Vec<String> = layout
            .members()
            .map(|id| format!("{id}={}", layout.ingress_by_name(id)))
            .collect();
        command
            .arg("--ingress")
            .arg(ingress.join(","))
            .arg("--name")
            .arg(format!("gw-{number}"));
    }
    if let Some(url) = history.filter(|_| kind == Kind::Gateway) {
        command.arg("--reporting-url").arg(url);
    }
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command
}

/// The store order-entry gateways read history from when reporters write
/// it, if `--reporting-url` must name it: the first reporter's SQLite
/// file. A `[reporting] url` in the configuration names it to gateways
/// and reporters alike; one store takes one writer.
pub(super) fn history_url(
    layout: &Layout,
    dir: &Path,
    config: Option<&Path>,
) -> anyhow::Result<Option<String>> {
    if layout.reporters == 0 {
        return Ok(None);
    }
    let configured = match config {
        Some(path) => crate::config::FileConfig::load(path)?.node.reporting.url,
        None => None,
    };
    if configured.is_some() {
        if layout.reporters > 1 {
            bail!("reporters given one `[reporting] url` would all write that store: run one");
        }
        return Ok(None);
    }
    let store = gateway_dir(dir, Kind::Reporter, 1).join(exchange_reporting::SQLITE_FILE);
    Ok(Some(format!("sqlite:{}", store.display())))
}

/// Starts every gateway of the layout that is not running, and waits
/// until each started one is ready.
pub(super) fn start_gateways(
    layout: &Layout,
    dir: &Path,
    secrets: &Secrets,
    exe: &Path,
    config: Option<&Path>,
) -> anyhow::Result<()> {
    let history = history_url(layout, dir, config)?;
    let mut started = Vec::new();
    for (kind, number) in layout.gateway_processes() {
        let data = gateway_dir(dir, kind, number);
        let url = format!("http://{}", layout.gateway_http(kind, number));
        if let Some(pid) = running(&data) {
            println!("{}: {url} (pid {pid}, already running)", name(kind, number));
            continue;
        }
        let history = history.as_deref();
        let mut command = command(exe, layout, dir, (kind, number), secrets, config, history);
        let pid = spawn(&mut command, &data)
            .with_context(|| format!("starting {}", name(kind, number)))?;
        started.push((kind, number, pid));
    }
    for (kind, number, pid) in started {
        wait_ready(layout, dir, (kind, number), pid, &secrets.token)?;
        let url = format!("http://{}", layout.gateway_http(kind, number));
        println!("{}: {url} (pid {pid})", name(kind, number));
    }
    Ok(())
}

/// Until the gateway answers as ready, and as a gateway of its kind; an
/// error if it exited or took over a minute.
fn wait_ready(
    layout: &Layout,
    dir: &Path,
    (kind, number): (Kind, u64),
    pid: u32,
    token: &str,
) -> anyhow::Result<()> {
    let addr = layout.gateway_http(kind, number);
    let log = gateway_dir(dir, kind, number).join("log");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(http_get(addr, "/ready", None), Ok((200, _))) {
            // Ready, and really this process: not another one holding the
            // port while this one failed to bind it.
            let role = replication(addr, token).ok().map(|s| s["role"].clone());
            if role != Some(Value::from(kind.as_str())) {
                bail!(
                    "{addr} answers as {role:?}, not a {}: the port is taken; see {}",
                    kind.as_str(),
                    log.display()
                );
            }
            return Ok(());
        }
        if !alive(pid) {
            bail!(
                "{} exited during start-up; see {}",
                name(kind, number),
                log.display()
            );
        }
        if Instant::now() > deadline {
            bail!("{} not ready after 60 s", name(kind, number));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops every gateway process of the layout (SIGTERM, then SIGKILL);
/// returns how many did not exit.
pub(super) fn stop_gateways(layout: &Layout, dir: &Path) -> usize {
    let mut targets = Vec::new();
    for (kind, number) in layout.gateway_processes() {
        let data = gateway_dir(dir, kind, number);
        let name = name(kind, number);
        match (recorded_pid(&data), running(&data)) {
            (_, Some(pid)) => targets.push((name, pid, data)),
            (Some(pid), None) => {
                println!("{name}: not running (stale pid file for pid {pid} removed)");
                remove_pid_file(&name, &data);
            }
            (None, None) => println!("{name}: not running"),
        }
    }
    let pids: Vec<u32> = targets.iter().map(|(_, pid, _)| *pid).collect();
    let is_ours = |pid: u32| {
        targets
            .iter()
            .any(|(_, target, data)| *target == pid && alive(pid) && serves(pid, data))
    };
    let outcomes = stop(&pids, is_ours, STOP_WAITS);
    let mut stuck = 0;
    for ((name, pid, data), outcome) in targets.iter().zip(&outcomes) {
        report_stop(name, data, *pid, outcome);
        stuck += usize::from(*outcome == Stopped::Stuck);
    }
    stuck
}

#[cfg(test)]
mod tests {
    use super::super::layout::{existing_layout, layout};
    use super::*;

    #[test]
    fn the_port_plan_keeps_every_process_apart_and_within_u16() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let venue = layout(&tmp.path().join("a"), 3, (2, 1, 1), 7100).expect("a venue");
        let mut ports: Vec<u16> = (1..=3)
            .flat_map(|id| {
                [
                    venue.http(id),
                    venue.raft(id),
                    venue.ingress(id),
                    venue.stream(id),
                ]
            })
            .chain(
                venue
                    .gateway_processes()
                    .into_iter()
                    .map(|(kind, n)| venue.gateway_http(kind, n)),
            )
            .map(|addr| addr.port())
            .collect();
        assert_eq!(venue.gateway_http(Kind::MarketData, 1).port(), 7601);
        assert_eq!(venue.gateway_http(Kind::Reporter, 1).port(), 7701);
        let count = ports.len();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), count, "two processes on one port");
        // The saved layout comes back with its gateways.
        let saved = existing_layout(&tmp.path().join("a")).expect("saved");
        assert_eq!(
            (saved.gateways, saved.md_gateways, saved.reporters),
            (2, 1, 1)
        );
        // The highest port, 65100 + 500 + 1, would not fit; without gateways,
        // 65100 + 100 + 3 does.
        assert!(layout(&tmp.path().join("b"), 3, (0, 1, 0), 65_100).is_err());
        assert!(layout(&tmp.path().join("c"), 3, (0, 0, 0), 65_100).is_ok());
        assert!(layout(&tmp.path().join("d"), 3, (100, 0, 0), 7100).is_err());
    }

    #[test]
    fn gateways_start_following_different_nodes() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let venue = layout(tmp.path(), 3, (4, 0, 0), 7100).expect("a venue");
        assert_eq!(
            streams(&venue, 1),
            "localhost:7401,localhost:7402,localhost:7403"
        );
        assert_eq!(
            streams(&venue, 2),
            "localhost:7402,localhost:7403,localhost:7401"
        );
        assert_eq!(streams(&venue, 4), streams(&venue, 1));
        assert_eq!(venue.node_of_stream("127.0.0.1:7403"), Some(3));
        assert_eq!(venue.node_of_stream("localhost:7402"), Some(2));
        assert_eq!(venue.node_of_stream("localhost:7409"), None);
    }
}
