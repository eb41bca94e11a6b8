//! `exchange cluster`: a local Raft cluster of separate `exchange serve`
//! processes for trying replication out, and a status view of any cluster.
//!
//! `up` lays node N out as `DIR/node-N` (data), HTTP on `PORT_BASE + N`,
//! Raft on `PORT_BASE + 100 + N`, remembers the layout in
//! `DIR/cluster.json`, and starts every node whose pid (`DIR/node-N/pid`)
//! is not running — so running it again restarts nodes that died. The
//! processes outlive the command (their own process group); `down` stops
//! them and returns once they have exited.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};

pub(crate) mod http;
mod layout;
mod process;

use http::{http_get, http_send, parse_addr};
use layout::{existing_layout, layout, node_dir, Layout};
use process::{
    alive, recorded_pid, remove_pid_file, report_stop, running, serves, stop, Stopped, STOP_WAITS,
};

#[derive(clap::Subcommand)]
pub enum ClusterCmd {
    /// Start (or restart the dead nodes of) a local cluster.
    Up {
        /// Number of nodes (voters).
        #[arg(long, default_value_t = 3)]
        nodes: u64,
        /// Parent of the nodes' data directories.
        #[arg(long)]
        data_dir: PathBuf,
        /// Node N serves HTTP on PORT_BASE + N and Raft on PORT_BASE + 100 + N.
        #[arg(long, default_value_t = 7100)]
        port_base: u16,
        /// TOML configuration given to every node (its `[cluster]` and
        /// listen settings are overridden).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Start one more node and have the leader add it as a voter.
    Add {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Have the leader remove a voter, then stop that node.
    Remove {
        #[arg(long)]
        data_dir: PathBuf,
        /// The node to remove.
        #[arg(long)]
        id: u64,
    },
    /// Stop a local cluster's nodes: SIGTERM, then SIGKILL for any still
    /// running after 30 s. Returns once they have exited.
    Down {
        #[arg(long)]
        data_dir: PathBuf,
    },
    /// Print the cluster's state as JSON, asking every node it can reach.
    Status {
        /// Any node's HTTP address.
        #[arg(long)]
        url: String,
    },
}

pub fn run(cmd: ClusterCmd) -> anyhow::Result<()> {
    match cmd {
        ClusterCmd::Up {
            nodes,
            data_dir,
            port_base,
            config,
        } => up(nodes, &data_dir, port_base, config.as_deref()),
        ClusterCmd::Down { data_dir } => down(&data_dir),
        ClusterCmd::Add { data_dir, config } => add(&data_dir, config.as_deref()),
        ClusterCmd::Remove { data_dir, id } => remove(&data_dir, id),
        ClusterCmd::Status { url } => {
            let status = status(&url, &admin_token(None)?)?;
            println!("{}", serde_json::to_string_pretty(&status)?);
            Ok(())
        }
    }
}

/// The admin token: `EXCHANGE_ADMIN_TOKEN`, else the one `up` saved.
fn admin_token(dir: Option<&Path>) -> anyhow::Result<String> {
    if let Some(token) = std::env::var("EXCHANGE_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    {
        return Ok(token);
    }
    if let Some(dir) = dir {
        let path = dir.join("admin_token");
        if let Ok(token) = std::fs::read_to_string(&path) {
            return Ok(token.trim().to_string());
        }
        let token = exchange_node::random_hex(24);
        std::fs::create_dir_all(dir)?;
        std::fs::write(&path, &token)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
        eprintln!("admin token: generated, in {}", path.display());
        return Ok(token);
    }
    bail!("set EXCHANGE_ADMIN_TOKEN to the cluster's admin token")
}

/// The master key every node derives API secrets from:
/// `EXCHANGE_MASTER_KEY`, else the one `up` saved (mode 0600) beside the
/// nodes, else a new one saved there. Every node gets the same.
fn master_key(dir: &Path) -> anyhow::Result<String> {
    use exchange_node::master_key::{MasterKey, MASTER_KEY_ENV, MASTER_KEY_FILE};
    if let Some(key) = std::env::var(MASTER_KEY_ENV)
        .ok()
        .filter(|k| !k.trim().is_empty())
    {
        MasterKey::from_hex(&key, MASTER_KEY_ENV)?;
        return Ok(key.trim().to_string());
    }
    let (key, _) = MasterKey::load(None, dir)?;
    let path = dir.join(MASTER_KEY_FILE);
    eprintln!("master key: {} (every node uses it)", path.display());
    Ok(key.to_hex())
}

/// Whether `up` starts its nodes with `--reporting-cpus any`. Every node
/// of this cluster shares the machine: "auto" would keep all their
/// reporters on one CPU, which measured slower than letting them roam
/// (BENCHMARKS.md, the changelog). CPUs a config names are kept.
fn reporters_roam(config: Option<&Path>) -> anyhow::Result<bool> {
    Ok(match config {
        Some(path) => {
            exchange_node::config::Config::load(path)?.reporting.cpus
                == exchange_node::threads::CpuPlacement::Auto
        }
        None => true,
    })
}

fn long_enough_admin_token(dir: &Path) -> anyhow::Result<String> {
    let token = admin_token(Some(dir))?;
    // Every node would refuse it at its start: say so once, before any.
    let min = exchange_server::MIN_ADMIN_TOKEN_LEN;
    if token.len() < min {
        bail!(
            "the admin token is {} bytes; \
             a node needs at least {min} (e.g. `openssl rand -hex 24`)",
            token.len()
        );
    }
    Ok(token)
}

fn up(nodes: u64, dir: &Path, port_base: u16, config: Option<&Path>) -> anyhow::Result<()> {
    let layout = layout(dir, nodes, port_base)?;
    let token = long_enough_admin_token(dir)?;
    let master_key = master_key(dir)?;
    let exe = std::env::current_exe().context("locating the exchange binary")?;
    let reporters_roam = reporters_roam(config)?;
    let mut started = Vec::new();
    for id in layout.members().collect::<Vec<_>>() {
        let data = node_dir(dir, id);
        std::fs::create_dir_all(&data)?;
        let pid_file = exchange_node::pid_file(&data);
        if let Some(pid) = running(&data) {
            println!(
                "node {id}: http://{} (pid {pid}, already running)",
                layout.http(id)
            );
            continue;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data.join("log"))?;
        let mut command = Command::new(&exe);
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(&data)
            .arg("--listen")
            .arg(layout.http(id).to_string())
            .arg("--node-id")
            .arg(id.to_string())
            .arg("--peers")
            .arg(layout.peers())
            .arg("--peer-urls")
            .arg(layout.urls())
            .env("EXCHANGE_ADMIN_TOKEN", &token)
            .env(exchange_node::master_key::MASTER_KEY_ENV, &master_key)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        if reporters_roam {
            command.arg("--reporting-cpus").arg("any");
        }
        if id > layout.initial {
            command.arg("--join");
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group: a ctrl-c meant for this command does
            // not take the cluster down with it.
            command.process_group(0);
        }
        let child = command.spawn().context("starting a node")?;
        std::fs::write(&pid_file, child.id().to_string())?;
        started.push((id, child.id()));
    }
    for (id, pid) in started {
        wait_node_ready(&layout, dir, id, pid, &token)?;
        println!("node {id}: http://{} (pid {pid})", layout.http(id));
    }
    // Ready means serving reads; writes need a leader, which lists the
    // configured instruments once it leads.
    let leader = wait_leader(&layout, &token)?;
    wait_listed(&layout, leader);
    println!("leader: node {leader}");
    Ok(())
}

/// Until node `id` answers as ready, and as itself; an error if it
/// exited or took over a minute.
fn wait_node_ready(
    layout: &Layout,
    dir: &Path,
    id: u64,
    pid: u32,
    token: &str,
) -> anyhow::Result<()> {
    let addr = layout.http(id);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if matches!(http_get(addr, "/ready", None), Ok((200, _))) {
            // Ready, and really this node: not another process that
            // holds the port while this one failed to bind it.
            let me = node_status(&format!("http://{addr}"), token)
                .ok()
                .and_then(|s| s["id"].as_u64());
            if me != Some(id) {
                bail!(
                    "{addr} answers as node {me:?}, not node {id}: the port is taken; see {}",
                    node_dir(dir, id).join("log").display()
                );
            }
            return Ok(());
        }
        // Its own unreaped child: the pid cannot have been reused, and
        // checking the command line could catch the exec half done.
        if !alive(pid) {
            bail!(
                "node {id} exited during start-up; see {}",
                node_dir(dir, id).join("log").display()
            );
        }
        if Instant::now() > deadline {
            bail!("node {id} not ready after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Until the leader lists the configured instruments, for ten seconds at
/// most.
fn wait_listed(layout: &Layout, leader: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let listed = http_get(layout.http(leader), "/v1/instruments", None)
            .ok()
            .and_then(|(_, body)| serde_json::from_slice::<Value>(&body).ok())
            .is_some_and(|v| v["instruments"].as_array().is_some_and(|a| !a.is_empty()));
        if listed {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_leader(layout: &Layout, token: &str) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leader = layout
            .members()
            .map(|id| format!("http://{}", layout.http(id)))
            .find_map(|url| status(&url, token).ok())
            .and_then(|s| s["leader"].as_u64());
        if let Some(leader) = leader {
            return Ok(leader);
        }
        if Instant::now() > deadline {
            bail!("no leader elected after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends a membership change to the leader, following `not_leader`.
fn propose_change(layout: &Layout, token: &str, body: &Value) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leader = wait_leader(layout, token)?;
        let (code, answer) = http_send(
            layout.http(leader),
            "POST",
            "/admin/replication/voters",
            Some(token),
            &body.to_string(),
        )?;
        match code {
            202 => return Ok(()),
            503 if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => bail!("{body}: HTTP {code}: {}", String::from_utf8_lossy(&answer)),
        }
    }
}

fn voters_of_leader(layout: &Layout, token: &str) -> Option<Vec<u64>> {
    let leader = wait_leader(layout, token).ok()?;
    let (_, body) = http_get(layout.http(leader), "/admin/replication", Some(token)).ok()?;
    let status: Value = serde_json::from_slice(&body).ok()?;
    Some(
        status["voters"]
            .as_array()?
            .iter()
            .filter_map(Value::as_u64)
            .collect(),
    )
}

fn wait_voters(layout: &Layout, token: &str, done: impl Fn(&[u64]) -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if voters_of_leader(layout, token).is_some_and(|v| done(&v)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("the membership change did not take effect within 60 s")
}

fn add(dir: &Path, config: Option<&Path>) -> anyhow::Result<()> {
    let mut layout = existing_layout(dir)?;
    let token = admin_token(Some(dir))?;
    layout.nodes += 1;
    let id = layout.nodes;
    if u32::from(layout.port_base) + 100 + id as u32 > u32::from(u16::MAX) {
        bail!("no port left for node {id}");
    }
    layout.save(dir)?;
    // The new node starts empty and waits to be added.
    up(layout.nodes, dir, layout.port_base, config)?;
    propose_change(
        &layout,
        &token,
        &json!({ "add": id, "raft_addr": layout.raft(id).to_string() }),
    )?;
    wait_voters(&layout, &token, |voters| voters.contains(&id))?;
    // Caught up: it has applied what the leader had committed.
    let leader = wait_leader(&layout, &token)?;
    let commit = node_status(&format!("http://{}", layout.http(leader)), &token)?["commit_index"]
        .as_u64()
        .unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let applied = node_status(&format!("http://{}", layout.http(id)), &token)
            .ok()
            .and_then(|s| s["applied_index"].as_u64())
            .unwrap_or(0);
        if applied >= commit {
            break;
        }
        if Instant::now() > deadline {
            bail!("node {id} has not caught up after 60 s (applied {applied} of {commit})");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("node {id} added: http://{}", layout.http(id));
    Ok(())
}

fn remove(dir: &Path, id: u64) -> anyhow::Result<()> {
    let mut layout = existing_layout(dir)?;
    if !layout.members().any(|m| m == id) {
        bail!("node {id} is not a member of this cluster");
    }
    let token = admin_token(Some(dir))?;
    propose_change(&layout, &token, &json!({ "remove": id }))?;
    wait_voters(&layout, &token, |voters| !voters.contains(&id))?;
    layout.removed.push(id);
    layout.save(dir)?;
    let data = node_dir(dir, id);
    if let Some(pid) = running(&data) {
        let outcome = stop(&[pid], |pid| alive(pid) && serves(pid, &data), STOP_WAITS)
            .pop()
            .unwrap_or(Stopped::Stuck);
        report_stop(dir, id, pid, &outcome);
        if outcome == Stopped::Stuck {
            bail!("node {id} was removed from the cluster but did not exit");
        }
    }
    println!("node {id} removed");
    Ok(())
}

fn down(dir: &Path) -> anyhow::Result<()> {
    let layout = existing_layout(dir)?;
    let mut targets = Vec::new();
    // Removed nodes too: `remove` stops its node, but one that outlived
    // it is still this cluster's process.
    for id in 1..=layout.nodes {
        let data = node_dir(dir, id);
        match (recorded_pid(&data), running(&data)) {
            (_, Some(pid)) => targets.push((id, pid, data)),
            (Some(pid), None) => {
                // The pid is gone, or now another process's.
                println!("node {id}: not running (stale pid file for pid {pid} removed)");
                remove_pid_file(dir, id);
            }
            (None, None) => {
                if layout.members().any(|member| member == id) {
                    println!("node {id}: not running");
                }
            }
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
    for ((id, pid, _), outcome) in targets.iter().zip(&outcomes) {
        report_stop(dir, *id, *pid, outcome);
        stuck += usize::from(*outcome == Stopped::Stuck);
    }
    if stuck > 0 {
        bail!("{stuck} node(s) did not exit, even after SIGKILL");
    }
    Ok(())
}

fn node_status(url: &str, token: &str) -> anyhow::Result<Value> {
    let (code, body) = http_get(
        parse_addr(url)?,
        "/admin/replication?state_hash=true",
        Some(token),
    )
    .with_context(|| format!("asking {url} for its replication status"))?;
    if code != 200 {
        bail!("{url}: HTTP {code}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body)?)
}

/// The cluster as the node at `url` and every peer it names see it:
/// `{"leader", "term", "commit_index", "nodes": [{"id", "role",
/// "applied_index", "lag", "state_hash", ...}]}`.
/// Every member the first node knows of, with its HTTP address: empty
/// for a voter whose address it was not told.
fn member_urls(first: &Value, first_id: u64, url: &str) -> Vec<(u64, String)> {
    let mut urls: Vec<(u64, String)> = first["urls"]
        .as_object()
        .map(|urls| {
            urls.iter()
                .filter_map(|(id, u)| Some((id.parse().ok()?, u.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    if !urls.iter().any(|(id, _)| *id == first_id) {
        urls.push((first_id, url.to_string()));
    }
    for voter in first["voters"].as_array().into_iter().flatten() {
        if let Some(id) = voter.as_u64() {
            if !urls.iter().any(|(known, _)| *known == id) {
                urls.push((id, String::new()));
            }
        }
    }
    urls
}

/// One node's row of the cluster status, its lag counted against `commit`.
fn node_row(id: u64, node_url: &str, answer: &anyhow::Result<Value>, commit: u64) -> Value {
    match answer {
        Ok(a) => {
            let applied = a["applied_index"].as_u64().unwrap_or(0);
            json!({
                "id": id,
                "url": node_url,
                "role": a["role"],
                "term": a["term"],
                "applied_index": applied,
                "commit_index": a["commit_index"],
                "lag": commit.saturating_sub(applied),
                "state_hash": a["state_hash"],
            })
        }
        Err(error) => json!({
            "id": id,
            "url": node_url,
            "role": "unreachable",
            "error": error.to_string(),
        }),
    }
}

pub fn status(url: &str, token: &str) -> anyhow::Result<Value> {
    let first = node_status(url, token)?;
    let first_id = first["id"].as_u64().unwrap_or(0);
    let mut urls = member_urls(&first, first_id, url);
    urls.sort();
    let mut seen = Vec::new();
    for (id, node_url) in &urls {
        let answer = if *id == first_id {
            Ok(first.clone())
        } else if node_url.is_empty() {
            Err(anyhow!("no HTTP address known (serve --peer-urls)"))
        } else {
            node_status(node_url, token)
        };
        seen.push((*id, node_url.clone(), answer));
    }
    // The leader with the highest term that anyone reports as leading.
    let leader = seen
        .iter()
        .filter_map(|(_, _, a)| a.as_ref().ok())
        .filter(|a| a["role"] == "leader")
        .max_by_key(|a| a["term"].as_u64().unwrap_or(0));
    let term = seen
        .iter()
        .filter_map(|(_, _, a)| a.as_ref().ok()?["term"].as_u64())
        .max()
        .unwrap_or(0);
    let commit = leader
        .and_then(|l| l["commit_index"].as_u64())
        .or_else(|| {
            seen.iter()
                .filter_map(|(_, _, a)| a.as_ref().ok()?["commit_index"].as_u64())
                .max()
        })
        .unwrap_or(0);
    let nodes: Vec<Value> = seen
        .iter()
        .map(|(id, node_url, answer)| node_row(*id, node_url, answer, commit))
        .collect();
    Ok(json!({
        "leader": leader.map(|l| l["id"].clone()).unwrap_or(Value::Null),
        "term": term,
        "commit_index": commit,
        "nodes": nodes,
    }))
}

#[cfg(test)]
mod tests;
