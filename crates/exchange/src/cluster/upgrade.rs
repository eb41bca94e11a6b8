//! `exchange cluster upgrade`: replaces every process of a local cluster
//! with another binary, one at a time, without losing a majority or an
//! acknowledged order.
//!
//! The replicas go first, followers before the leader. Each turn: when the
//! process is the leader, leadership is handed to the most up-to-date
//! follower (`POST /admin/replication/leader`) and the new leader is
//! awaited; the process is stopped (SIGTERM: it answers what it took and
//! flushes), started from the new binary with the same arguments, and
//! must be ready, caught up with what the cluster had committed when it
//! stopped, and then stay healthy (ready, and the cluster led) for the
//! configured time before the next turn. Only one replica is ever down,
//! so a cluster of three keeps its majority throughout. The gateways
//! follow, the same way: on SIGTERM a gateway closes its clients'
//! connections with a going-away frame after answering what they sent,
//! and they reconnect to another gateway.
//!
//! The verdict is one line: done, with each turn's duration, or stopped
//! with the reason and the process it stopped at (which is left as it
//! is, running the old or the new binary, for the operator to look at).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::http::{http_get, http_send};
use super::layout::{existing_layout, gateway_dir, node_dir, Kind, Layout};
use super::process::{alive, running, serves, spawn, stop, Stopped, STOP_WAITS};
use super::status::node_status;
use super::tiers::{self, Secrets};
use super::{node_command, wait_leader, wait_node_ready};

/// How each turn is judged.
pub(super) struct Pace {
    /// How long a replaced process must stay ready, with the cluster led,
    /// before the next one goes.
    pub(super) healthy_for: Duration,
    /// How long a replaced process may take to be ready and caught up.
    pub(super) timeout: Duration,
}

/// One process of the cluster, as the upgrade replaces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Node(u64),
    Gateway(Kind, u64),
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Member::Node(id) => write!(f, "node {id}"),
            Member::Gateway(kind, number) => write!(f, "{} {number}", kind.as_str()),
        }
    }
}

/// Why the upgrade stopped, and where.
struct Halt {
    at: Member,
    reason: anyhow::Error,
}

pub(super) fn upgrade(
    dir: &Path,
    binary: Option<&Path>,
    config: Option<&Path>,
    pace: &Pace,
) -> anyhow::Result<()> {
    let layout = existing_layout(dir)?;
    let secrets = Secrets {
        token: super::long_enough_admin_token(dir)?,
        master_key: super::master_key(dir)?,
        cluster_key: super::cluster_key_file(dir)?,
    };
    let exe = match binary {
        Some(path) => path
            .canonicalize()
            .with_context(|| format!("{}", path.display()))?,
        None => std::env::current_exe().context("locating the exchange binary")?,
    };
    check_formats(&exe, dir, &layout)?;
    preflight(&layout, dir, &secrets.token)?;
    let order = turn_order(&layout, wait_leader(&layout, &secrets.token)?);
    let bar = ProgressBar::new(order.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:20}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut turns = Vec::new();
    let venue = Venue {
        layout: &layout,
        dir,
        secrets: &secrets,
        exe: &exe,
        config,
    };
    for member in order {
        let turn = Instant::now();
        if let Err(reason) = venue.replace(member, pace, &bar) {
            bar.abandon();
            let halt = Halt { at: member, reason };
            println!(
                "upgrade stopped at {}: {:#} ({} of {} replaced, {:.1} s)",
                halt.at,
                halt.reason,
                turns.len(),
                layout.members().count() as u64 + layout.gateways + layout.md_gateways,
                started.elapsed().as_secs_f64()
            );
            bail!("upgrade stopped at {}", halt.at);
        }
        turns.push((member, turn.elapsed()));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let each: Vec<String> = turns
        .iter()
        .map(|(member, took)| format!("{member} {:.1} s", took.as_secs_f64()))
        .collect();
    println!(
        "upgrade done: {} processes in {:.1} s ({})",
        turns.len(),
        started.elapsed().as_secs_f64(),
        each.join(", ")
    );
    Ok(())
}

/// Followers by id, then the leader, then the order-entry gateways and
/// the market-data gateways.
fn turn_order(layout: &Layout, leader: u64) -> Vec<Member> {
    let followers = layout.members().filter(|&id| id != leader);
    followers
        .chain(std::iter::once(leader))
        .map(Member::Node)
        .chain(
            layout
                .gateway_processes()
                .into_iter()
                .map(|(kind, number)| Member::Gateway(kind, number)),
        )
        .collect()
}

/// Every process runs and is ready: an upgrade that starts with one down
/// would take a second down with its first turn.
fn preflight(layout: &Layout, dir: &Path, token: &str) -> anyhow::Result<()> {
    for id in layout.members() {
        if running(&node_dir(dir, id)).is_none() {
            bail!("not started: node {id} is not running (`exchange cluster up` restarts it)");
        }
        if !matches!(http_get(layout.http(id), "/ready", None), Ok((200, _))) {
            bail!("not started: node {id} is not ready");
        }
    }
    for (kind, number) in layout.gateway_processes() {
        if running(&gateway_dir(dir, kind, number)).is_none() {
            bail!("not started: {} {number} is not running", kind.as_str());
        }
    }
    wait_leader(layout, token).map(|_| ())
}

/// Refuses a binary whose log, snapshot or journal formats differ from
/// those of the binary the cluster runs: a mixed cluster must read every
/// replica's log and snapshots.
fn check_formats(new: &Path, dir: &Path, layout: &Layout) -> anyhow::Result<()> {
    let Some(old) = layout
        .members()
        .find_map(|id| running(&node_dir(dir, id)))
        .and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok())
    else {
        return Ok(());
    };
    let (old_formats, new_formats) = (formats_of(&old)?, formats_of(new)?);
    if old_formats != new_formats {
        bail!(
            "not started: {} writes formats {new_formats} and the running cluster ({}) \
             {old_formats}; a replica could not read another's log or snapshot \
             (docs/deploy.md, rolling upgrades)",
            new.display(),
            old.display()
        );
    }
    Ok(())
}

/// The formats a binary reads and writes, as `exchange version --formats`
/// prints them.
fn formats_of(binary: &Path) -> anyhow::Result<Value> {
    let output = std::process::Command::new(binary)
        .args(["version", "--formats"])
        .output()
        .with_context(|| format!("running {} version", binary.display()))?;
    if !output.status.success() {
        bail!("{} version: {}", binary.display(), output.status);
    }
    let all: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("reading what {} version printed", binary.display()))?;
    Ok(all["formats"].clone())
}

/// What replacing a process needs to know.
struct Venue<'a> {
    layout: &'a Layout,
    dir: &'a Path,
    secrets: &'a Secrets,
    exe: &'a PathBuf,
    config: Option<&'a Path>,
}

impl Venue<'_> {
    fn replace(&self, member: Member, pace: &Pace, bar: &ProgressBar) -> anyhow::Result<()> {
        match member {
            Member::Node(id) => self.replace_node(id, pace, bar),
            Member::Gateway(kind, number) => self.replace_gateway(kind, number, pace, bar),
        }
    }

    fn replace_node(&self, id: u64, pace: &Pace, bar: &ProgressBar) -> anyhow::Result<()> {
        let token = &self.secrets.token;
        if wait_leader(self.layout, token)? == id {
            bar.set_message(format!("node {id}: handing leadership over"));
            hand_leadership_over(self.layout, id, token)?;
        }
        let commit = self.commit_index()?;
        bar.set_message(format!("node {id}: stopping"));
        let data = node_dir(self.dir, id);
        stop_process(&data)?;
        bar.set_message(format!("node {id}: starting the new binary"));
        let mut command =
            node_command(self.exe, self.layout, &data, id, self.secrets, self.config)?;
        let pid = spawn(&mut command, &data).context("starting the new binary")?;
        wait_node_ready(self.layout, self.dir, id, pid, token)?;
        bar.set_message(format!("node {id}: catching up to index {commit}"));
        let url = format!("http://{}", self.layout.http(id));
        wait_until(pace.timeout, "catching up", || {
            let status = node_status(&url, token).ok()?;
            let applied = status["applied_index"].as_u64()?;
            (applied >= commit).then_some(())
        })?;
        bar.set_message(format!("node {id}: staying healthy"));
        self.stay_healthy(self.layout.http(id), pid, pace.healthy_for)
    }

    fn replace_gateway(
        &self,
        kind: Kind,
        number: u64,
        pace: &Pace,
        bar: &ProgressBar,
    ) -> anyhow::Result<()> {
        let name = format!("{} {number}", kind.as_str());
        let data = gateway_dir(self.dir, kind, number);
        bar.set_message(format!("{name}: moving its clients and stopping"));
        stop_process(&data)?;
        bar.set_message(format!("{name}: starting the new binary"));
        let pid = tiers::start_one(
            self.layout,
            self.dir,
            (kind, number),
            self.secrets,
            (self.exe, self.config),
        )?;
        bar.set_message(format!("{name}: staying healthy"));
        self.stay_healthy(
            self.layout.gateway_http(kind, number),
            pid,
            pace.healthy_for,
        )
    }

    fn commit_index(&self) -> anyhow::Result<u64> {
        let leader = wait_leader(self.layout, &self.secrets.token)?;
        let url = format!("http://{}", self.layout.http(leader));
        node_status(&url, &self.secrets.token)?["commit_index"]
            .as_u64()
            .ok_or_else(|| anyhow!("the leader did not say its commit index"))
    }

    /// Ready all along, the process alive and the cluster led, for `span`.
    fn stay_healthy(
        &self,
        addr: std::net::SocketAddr,
        pid: u32,
        span: Duration,
    ) -> anyhow::Result<()> {
        let until = Instant::now() + span;
        while Instant::now() < until {
            if !alive(pid) {
                bail!("the new process exited (pid {pid})");
            }
            match http_get(addr, "/ready", None) {
                Ok((200, _)) => {}
                Ok((code, body)) => bail!(
                    "not ready again: HTTP {code}: {}",
                    String::from_utf8_lossy(&body).trim()
                ),
                Err(error) => bail!("not answering: {error}"),
            }
            wait_leader(self.layout, &self.secrets.token).context("the cluster lost its leader")?;
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(())
    }
}

/// Asks leader `id` to hand over, and waits until another node leads.
fn hand_leadership_over(layout: &Layout, id: u64, token: &str) -> anyhow::Result<()> {
    let (code, body) = http_send(
        layout.http(id),
        "POST",
        "/admin/replication/leader",
        Some(token),
        "{}",
    )?;
    if code != 202 {
        bail!(
            "the leader refused to hand over: HTTP {code}: {}",
            String::from_utf8_lossy(&body).trim()
        );
    }
    wait_until(Duration::from_secs(10), "handing leadership over", || {
        let leader = wait_leader(layout, token).ok()?;
        (leader != id).then_some(())
    })
}

/// Stops the process whose data directory is `data`, SIGTERM first.
fn stop_process(data: &Path) -> anyhow::Result<()> {
    let Some(pid) = running(data) else {
        bail!("not running any more");
    };
    let is_ours = |pid: u32| alive(pid) && serves(pid, data);
    match stop(&[pid], is_ours, STOP_WAITS).pop() {
        Some(Stopped::Exited(_) | Stopped::Killed) => Ok(()),
        _ => bail!("did not exit, even after SIGKILL (pid {pid})"),
    }
}

/// Polls `done` every 100 ms until it answers, for `within` at most.
fn wait_until<T>(
    within: Duration,
    what: &str,
    mut done: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = done() {
            return Ok(value);
        }
        if Instant::now() > deadline {
            bail!("{what}: not done after {} s", within.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::layout;
    use super::*;

    #[test]
    fn the_leader_goes_after_every_follower_and_before_the_gateways() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let venue = layout(tmp.path(), 3, (2, 1), 7100).expect("a venue");
        let order = turn_order(&venue, 2);
        assert_eq!(
            order,
            vec![
                Member::Node(1),
                Member::Node(3),
                Member::Node(2),
                Member::Gateway(Kind::Gateway, 1),
                Member::Gateway(Kind::Gateway, 2),
                Member::Gateway(Kind::MarketData, 1),
            ]
        );
    }
}
