//! `exchange cluster upgrade`: replaces every process of a venue with a
//! new version, one at a time, without losing a majority or an
//! acknowledged order. The venue is a local cluster (`--data-dir`: its
//! processes are restarted from `--binary`, [`local`]) or any other
//! (`--node`/`--gateway` URLs and a `--replace` command that recreates one
//! process, such as a compose service from a new image, [`remote`]).
//!
//! The replicas go first, followers before the leader. Each turn: when the
//! process is the leader, leadership is handed to the most up-to-date
//! follower (`POST /admin/replication/leader`) and the new leader is
//! awaited; the process is replaced, and must be ready, caught up with
//! what the cluster had committed before it went, report the cluster's
//! formats, and then stay healthy (ready, and the cluster led) for the
//! configured time before the next turn. Only one replica is ever down,
//! so a cluster of three keeps its majority. The gateways follow, the
//! same way: on SIGTERM a gateway answers what its clients sent and
//! closes their connections, and they reconnect to another gateway.
//!
//! The verdict is one line: done, with each turn's duration, or stopped
//! with the reason and the process it stopped at (left as it is, for the
//! operator to look at).

mod local;
mod remote;

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

use super::http::{http_get, http_send, parse_addr};

pub(super) use local::upgrade_local;
pub(super) use remote::{upgrade_remote, RemoteVenue};

/// How each turn is judged.
pub(super) struct Pace {
    /// How long a replaced process must stay ready, with the cluster led,
    /// before the next one goes.
    pub(super) healthy_for: Duration,
    /// How long a replaced process may take to be ready and caught up.
    pub(super) timeout: Duration,
}

/// One process of the venue, as the upgrade replaces it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Member {
    /// Replica `id`.
    Node(u64),
    /// A gateway or market-data gateway, by name (`gateway 1`,
    /// `md-gateway-1`).
    Gateway(String),
}

impl std::fmt::Display for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Member::Node(id) => write!(f, "node {id}"),
            Member::Gateway(name) => f.write_str(name),
        }
    }
}

/// What the orchestration needs of a venue.
trait Fleet {
    /// The replicas' ids and HTTP URLs.
    fn nodes(&self) -> Vec<(u64, String)>;
    /// The gateways, in the order they are replaced, and their URLs.
    fn gateways(&self) -> Vec<(String, String)>;
    fn token(&self) -> &str;
    /// Stops the member and starts it anew from the new version; returns
    /// once it was started (not necessarily ready).
    fn replace(&self, member: &Member) -> anyhow::Result<()>;
    /// Whether the member's new process still runs, as far as the fleet
    /// can tell (a container's restarts are the orchestrator's).
    fn still_running(&self, member: &Member) -> bool;
}

fn url_of(fleet: &dyn Fleet, member: &Member) -> anyhow::Result<String> {
    let found = match member {
        Member::Node(id) => fleet
            .nodes()
            .into_iter()
            .find(|(n, _)| n == id)
            .map(|(_, u)| u),
        Member::Gateway(name) => fleet
            .gateways()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, u)| u),
    };
    found.ok_or_else(|| anyhow!("{member}: no URL"))
}

/// `GET /admin/replication` of the process at `url` (no state hash: it
/// is asked many times a second, under load).
fn replication(url: &str, token: &str) -> anyhow::Result<Value> {
    let (code, body) = http_get(parse_addr(url)?, "/admin/replication", Some(token))
        .with_context(|| format!("asking {url}"))?;
    if code != 200 {
        bail!(
            "{url}: HTTP {code}: {}",
            String::from_utf8_lossy(&body).trim()
        );
    }
    Ok(serde_json::from_slice(&body)?)
}

/// The leader some replica names, with its URL.
fn leader(fleet: &dyn Fleet) -> Option<(u64, String)> {
    let nodes = fleet.nodes();
    let id = nodes
        .iter()
        .find_map(|(_, url)| replication(url, fleet.token()).ok()?["leader"].as_u64())?;
    nodes.into_iter().find(|(n, _)| *n == id)
}

fn wait_leader(fleet: &dyn Fleet, within: Duration) -> anyhow::Result<(u64, String)> {
    wait_until(within, "a leader", || leader(fleet))
}

/// Runs the upgrade over `fleet` and prints its verdict.
fn run(fleet: &dyn Fleet, pace: &Pace) -> anyhow::Result<()> {
    let formats = preflight(fleet)?;
    let (leader_id, _) = wait_leader(fleet, Duration::from_secs(30))?;
    let order = turn_order(fleet, leader_id);
    let bar = ProgressBar::new(order.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:20}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut turns: Vec<(Member, Duration)> = Vec::new();
    for member in &order {
        let turn = Instant::now();
        let done = match member {
            Member::Node(id) => replace_node(fleet, *id, (&formats, pace), &bar),
            Member::Gateway(_) => replace_gateway(fleet, member, pace, &bar),
        };
        if let Err(reason) = done {
            bar.abandon();
            println!(
                "upgrade stopped at {member}: {reason:#} ({} of {} replaced, {:.1} s)",
                turns.len(),
                order.len(),
                started.elapsed().as_secs_f64()
            );
            bail!("upgrade stopped at {member}");
        }
        turns.push((member.clone(), turn.elapsed()));
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

/// Every replica answers, ready, with the same formats (returned); every
/// gateway is ready. An upgrade that starts with one down would take a
/// second down with its first turn.
fn preflight(fleet: &dyn Fleet) -> anyhow::Result<Value> {
    let mut formats: Option<Value> = None;
    for (id, url) in fleet.nodes() {
        let status = replication(&url, fleet.token())
            .with_context(|| format!("not started: node {id} does not answer"))?;
        ready(&url).with_context(|| format!("not started: node {id}"))?;
        match &formats {
            None => formats = Some(status["formats"].clone()),
            Some(seen) if *seen != status["formats"] => bail!(
                "not started: node {id} runs formats {} and another {seen}",
                status["formats"]
            ),
            Some(_) => {}
        }
    }
    for (name, url) in fleet.gateways() {
        ready(&url).with_context(|| format!("not started: {name}"))?;
    }
    Ok(formats.unwrap_or(Value::Null))
}

/// Followers by id, then the leader, then the gateways.
fn turn_order(fleet: &dyn Fleet, leader: u64) -> Vec<Member> {
    let mut ids: Vec<u64> = fleet.nodes().into_iter().map(|(id, _)| id).collect();
    ids.sort_unstable();
    let followers = ids.into_iter().filter(|&id| id != leader);
    followers
        .chain(std::iter::once(leader))
        .map(Member::Node)
        .chain(
            fleet
                .gateways()
                .into_iter()
                .map(|(name, _)| Member::Gateway(name)),
        )
        .collect()
}

fn ready(url: &str) -> anyhow::Result<()> {
    match http_get(parse_addr(url)?, "/ready", None) {
        Ok((200, _)) => Ok(()),
        Ok((code, body)) => bail!(
            "not ready: HTTP {code}: {}",
            String::from_utf8_lossy(&body).trim()
        ),
        Err(error) => bail!("not answering: {error}"),
    }
}

fn replace_node(
    fleet: &dyn Fleet,
    id: u64,
    (formats, pace): (&Value, &Pace),
    bar: &ProgressBar,
) -> anyhow::Result<()> {
    let member = Member::Node(id);
    let (leader_id, leader_url) = wait_leader(fleet, Duration::from_secs(30))?;
    if leader_id == id {
        bar.set_message(format!("{member}: handing leadership over"));
        hand_leadership_over(fleet, id, &leader_url)?;
    }
    let (_, leader_url) = wait_leader(fleet, Duration::from_secs(30))?;
    let commit = replication(&leader_url, fleet.token())?["commit_index"]
        .as_u64()
        .ok_or_else(|| anyhow!("the leader did not say its commit index"))?;
    bar.set_message(format!("{member}: replacing"));
    fleet.replace(&member)?;
    let url = url_of(fleet, &member)?;
    bar.set_message(format!("{member}: catching up to index {commit}"));
    let status = wait_running(fleet, &member, pace.timeout, "ready and caught up", || {
        ready(&url).ok()?;
        let status = replication(&url, fleet.token()).ok()?;
        (status["applied_index"].as_u64()? >= commit).then_some(status)
    })?;
    if status["formats"] != *formats {
        bail!(
            "the new version runs formats {} and the cluster {formats}: \
             a mixed cluster could not read each other's log (docs/deploy.md)",
            status["formats"]
        );
    }
    bar.set_message(format!("{member}: staying healthy"));
    stay_healthy(fleet, &member, &url, pace.healthy_for)
}

fn replace_gateway(
    fleet: &dyn Fleet,
    member: &Member,
    pace: &Pace,
    bar: &ProgressBar,
) -> anyhow::Result<()> {
    bar.set_message(format!("{member}: moving its clients and replacing it"));
    fleet.replace(member)?;
    let url = url_of(fleet, member)?;
    wait_running(fleet, member, pace.timeout, "ready", || ready(&url).ok())?;
    bar.set_message(format!("{member}: staying healthy"));
    stay_healthy(fleet, member, &url, pace.healthy_for)
}

/// As [`wait_until`], failing at once when the member's process exits.
fn wait_running<T>(
    fleet: &dyn Fleet,
    member: &Member,
    within: Duration,
    what: &str,
    mut done: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let mut exited = false;
    let waited = wait_until(within, what, || {
        if !fleet.still_running(member) {
            exited = true;
            return Some(None);
        }
        done().map(Some)
    })?;
    match waited {
        Some(value) if !exited => Ok(value),
        _ => bail!("{member} exited during start-up"),
    }
}

/// Ready all along, still running and the cluster led, for `span`.
fn stay_healthy(
    fleet: &dyn Fleet,
    member: &Member,
    url: &str,
    span: Duration,
) -> anyhow::Result<()> {
    let until = Instant::now() + span;
    while Instant::now() < until {
        if !fleet.still_running(member) {
            bail!("the new process exited");
        }
        ready(url)?;
        wait_leader(fleet, Duration::from_secs(10)).context("the cluster lost its leader")?;
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

/// Asks leader `id` to hand over, and waits until another node leads.
fn hand_leadership_over(fleet: &dyn Fleet, id: u64, url: &str) -> anyhow::Result<()> {
    let (code, body) = http_send(
        parse_addr(url)?,
        "POST",
        "/admin/replication/leader",
        Some(fleet.token()),
        "{}",
    )?;
    if code != 202 {
        bail!(
            "the leader refused to hand over: HTTP {code}: {}",
            String::from_utf8_lossy(&body).trim()
        );
    }
    wait_until(Duration::from_secs(10), "handing leadership over", || {
        let (leader, _) = leader(fleet)?;
        (leader != id).then_some(())
    })
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
    use super::*;

    struct Listed;

    impl Fleet for Listed {
        fn nodes(&self) -> Vec<(u64, String)> {
            [3, 1, 2]
                .map(|id| (id, format!("http://127.0.0.1:{id}")))
                .to_vec()
        }
        fn gateways(&self) -> Vec<(String, String)> {
            ["gateway 1", "gateway 2", "md-gateway 1"]
                .map(|n| (n.to_string(), String::new()))
                .to_vec()
        }
        fn token(&self) -> &str {
            ""
        }
        fn replace(&self, _: &Member) -> anyhow::Result<()> {
            Ok(())
        }
        fn still_running(&self, _: &Member) -> bool {
            true
        }
    }

    #[test]
    fn the_leader_goes_after_every_follower_and_before_the_gateways() {
        let order: Vec<String> = turn_order(&Listed, 2)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            order,
            [
                "node 1",
                "node 3",
                "node 2",
                "gateway 1",
                "gateway 2",
                "md-gateway 1"
            ]
        );
    }
}
