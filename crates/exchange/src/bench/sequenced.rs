//! `exchange bench sequenced`: the sequenced path alone, without gateways.
//! A cluster of replicas runs in this process (each with its own journal,
//! Raft thread, core thread and TCP transport on the loopback), and the
//! standard workload's commands, built before timing starts, are handed
//! to the leader's pipeline with a window of them in flight. Each is
//! timed from its hand-over until the leader has it committed on a
//! majority (fsync on) and applied: what every order pays before any
//! gateway can answer it.
//!
//! Completions arrive in log order, so the oldest command in flight is
//! waited for and the ones after it that are done by then are collected
//! at once; a command is timed when it is collected, at most a few
//! microseconds after it completed.

use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use exchange_node::cluster_key::ClusterKey;
use exchange_node::master_key::MasterKey;
use exchange_node::recovery::{self, snapshot_dir};
use exchange_node::replication::ClusterSettings;
use exchange_node::{Applied, Handle, LogEntry, Pipeline, PipelineConfig};
use exchange_replication::transport::PeerAddr;
use hdrhistogram::Histogram;
use serde_json::json;
use tokio::sync::oneshot;

use super::generator::{self, Spec};
use super::timing::progress_bar;

#[derive(clap::Args, Debug)]
pub struct SequencedArgs {
    /// Replicas in the cluster (1 is a single node, as `exchange serve`).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=5))]
    replicas: u64,
    /// Timed commands of the standard workload.
    #[arg(long, default_value_t = 1_000_000)]
    commands: usize,
    /// Commands in flight at once (the pipeline's submit queue holds
    /// 65,536).
    #[arg(
        long,
        default_value_t = 16_384,
        value_parser = clap::value_parser!(u64).range(1..=65_536)
    )]
    inflight: u64,
    /// Directory the replicas' data directories are created in (on the
    /// disk measured: fsync is on).
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// What one run measured.
struct Figures {
    replicas: u64,
    inflight: u64,
    commands: u64,
    seconds: f64,
    latency: Histogram<u64>,
    followers_behind_at_end: u64,
}

pub fn run(args: SequencedArgs) -> anyhow::Result<()> {
    let prepared =
        generator::generate(&Spec::standard(args.commands, args.seed), false, !args.json)?;
    let root = tempfile::Builder::new()
        .prefix("bench-sequenced")
        .tempdir_in(&args.dir)
        .with_context(|| format!("a directory in {}", args.dir.display()))?;
    let nodes = start_cluster(root.path(), args.replicas)?;
    let leader = wait_for_leader(&nodes)?;
    // The listing, deposits and book pre-fill, untimed.
    let setup: Vec<LogEntry> = prepared.setup.into_iter().map(LogEntry::Core).collect();
    drive(&leader, setup, args.inflight, None)?;
    let timed: Vec<LogEntry> = prepared.timed.into_iter().map(LogEntry::Core).collect();
    let bar = (!args.json).then(|| progress_bar(timed.len(), "sequenced"));
    let mut latency = Histogram::new_with_bounds(1, 60_000_000_000, 3)?;
    let started = Instant::now();
    let commands = drive(&leader, timed, args.inflight, Some((&mut latency, bar)))?;
    let seconds = started.elapsed().as_secs_f64();
    let figures = Figures {
        replicas: args.replicas,
        inflight: args.inflight,
        commands,
        seconds,
        latency,
        followers_behind_at_end: followers_behind(&nodes, &leader),
    };
    print_figures(&figures, args.json);
    // A pipeline stops once every handle to it is gone.
    drop(leader);
    for pipeline in nodes {
        pipeline.join();
    }
    Ok(())
}

fn free_port() -> anyhow::Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

fn start_cluster(root: &Path, replicas: u64) -> anyhow::Result<Vec<Pipeline>> {
    let peers: BTreeMap<u64, PeerAddr> = (1..=replicas)
        .map(|id| Ok((id, free_port()?.into())))
        .collect::<anyhow::Result<_>>()?;
    // As every real cluster: the replicas authenticate each other, and
    // their frames carry MACs, so the figures include that cost.
    let key = ClusterKey::generate()?;
    let mut nodes = Vec::new();
    for id in 1..=replicas {
        let dir = root.join(format!("node-{id}"));
        let config = PipelineConfig {
            submit_queue: 65_536,
            core_queue: 1_024,
            events_buffer: 65_536,
            snapshot_every: 0,
            snapshot_dir: snapshot_dir(&dir),
            master_key: MasterKey::from_bytes([7; 32]),
        };
        let settings = ClusterSettings {
            node_id: id,
            peers: if replicas > 1 {
                peers.clone()
            } else {
                BTreeMap::new()
            },
            key: Some(key.clone()),
            ..ClusterSettings::default()
        };
        let (pipeline, _) = recovery::start_cluster(&dir, config, &settings)
            .with_context(|| format!("starting replica {id}"))?;
        nodes.push(pipeline);
    }
    Ok(nodes)
}

fn wait_for_leader(nodes: &[Pipeline]) -> anyhow::Result<Handle> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some(node) = nodes
            .iter()
            .find(|n| n.handle.is_leader() && n.handle.settled())
        {
            return Ok(node.handle.clone());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    anyhow::bail!("no leader within 30 s")
}

type InFlight = VecDeque<(Instant, oneshot::Receiver<Arc<Applied>>)>;

/// Hands `entries` to the leader, `inflight` at a time, and waits for all
/// of them; records each one's latency in ns when `timing` is given.
/// Returns how many were applied.
fn drive(
    leader: &Handle,
    entries: Vec<LogEntry>,
    inflight: u64,
    mut timing: Option<(&mut Histogram<u64>, Option<indicatif::ProgressBar>)>,
) -> anyhow::Result<u64> {
    let window = usize::try_from(inflight).unwrap_or(usize::MAX);
    let mut waiting: InFlight = VecDeque::with_capacity(window);
    let mut applied = 0u64;
    for entry in entries {
        if waiting.len() == window {
            applied += collect(&mut waiting, &mut timing)?;
        }
        let receiver = leader
            .enqueue_entry(entry)
            .map_err(|e| anyhow::anyhow!("the leader refused a command: {e}"))?;
        waiting.push_back((Instant::now(), receiver));
    }
    while !waiting.is_empty() {
        applied += collect(&mut waiting, &mut timing)?;
    }
    if let Some((_, Some(bar))) = &timing {
        bar.finish_and_clear();
    }
    Ok(applied)
}

/// Waits for the oldest command in flight, then takes every later one
/// already done.
fn collect(
    waiting: &mut InFlight,
    timing: &mut Option<(&mut Histogram<u64>, Option<indicatif::ProgressBar>)>,
) -> anyhow::Result<u64> {
    let stopped = || anyhow::anyhow!("the leader stopped before answering");
    let Some((sent, oldest)) = waiting.pop_front() else {
        return Ok(0);
    };
    oldest.blocking_recv().map_err(|_| stopped())?;
    let mut done = vec![sent];
    while let Some((sent, receiver)) = waiting.front_mut() {
        match receiver.try_recv() {
            Ok(_) => done.push(*sent),
            Err(oneshot::error::TryRecvError::Empty) => break,
            Err(oneshot::error::TryRecvError::Closed) => return Err(stopped()),
        }
        waiting.pop_front();
    }
    let at = Instant::now();
    if let Some((latency, bar)) = timing {
        for sent in &done {
            let ns = u64::try_from(at.duration_since(*sent).as_nanos()).unwrap_or(u64::MAX);
            latency.saturating_record(ns.max(1));
        }
        if let Some(bar) = bar {
            bar.inc(done.len() as u64);
        }
    }
    Ok(done.len() as u64)
}

/// How far, in Raft entries, the slowest replica is behind what the
/// leader had applied when the last command was answered, after waiting
/// a second at most for it to catch up.
fn followers_behind(nodes: &[Pipeline], leader: &Handle) -> u64 {
    let target = leader.replication_status().applied_index;
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let behind = nodes
            .iter()
            .map(|n| target.saturating_sub(n.handle.replication_status().applied_index))
            .max()
            .unwrap_or(0);
        if behind == 0 || Instant::now() > deadline {
            return behind;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn us(latency: &Histogram<u64>, quantile: f64) -> f64 {
    latency.value_at_quantile(quantile) as f64 / 1_000.0
}

fn print_figures(f: &Figures, as_json: bool) {
    let per_sec = f.commands as f64 / f.seconds.max(1e-9);
    if as_json {
        println!(
            "{}",
            json!({
                "replicas": f.replicas,
                "inflight": f.inflight,
                "commands": f.commands,
                "seconds": f.seconds,
                "commands_per_sec": per_sec,
                "commit_latency_us": {
                    "p50": us(&f.latency, 0.50),
                    "p99": us(&f.latency, 0.99),
                    "p99_9": us(&f.latency, 0.999),
                    "max": f.latency.max() as f64 / 1_000.0,
                },
                "followers_behind_at_end": f.followers_behind_at_end,
            })
        );
        return;
    }
    println!(
        "sequenced path: {} replicas, {} in flight, fsync on",
        f.replicas, f.inflight
    );
    println!(
        "  {} commands in {:.2} s: {:.0} commands/s committed and applied",
        f.commands, f.seconds, per_sec
    );
    println!(
        "  commit latency (µs): p50 {:.0}  p99 {:.0}  p99.9 {:.0}  max {:.0}",
        us(&f.latency, 0.50),
        us(&f.latency, 0.99),
        us(&f.latency, 0.999),
        f.latency.max() as f64 / 1_000.0
    );
    println!(
        "  slowest follower behind a second after the end: {} entries",
        f.followers_behind_at_end
    );
}

#[cfg(test)]
mod tests {
    use super::generator::Workload;
    use super::*;

    #[test]
    fn every_command_handed_over_is_applied_and_reaches_every_replica() {
        let root = tempfile::tempdir().unwrap();
        let nodes = start_cluster(root.path(), 3).unwrap();
        let leader = wait_for_leader(&nodes).unwrap();
        let prepared = generator::generate(
            &Spec {
                ops: 2_000,
                seed: 3,
                accounts: 10,
                levels: 10,
                workload: Workload::Standard,
            },
            false,
            false,
        )
        .unwrap();
        let entries: Vec<LogEntry> = prepared
            .setup
            .into_iter()
            .chain(prepared.timed)
            .map(LogEntry::Core)
            .collect();
        let count = entries.len() as u64;
        let mut latency = Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        let applied = drive(&leader, entries, 64, Some((&mut latency, None))).unwrap();
        assert_eq!(applied, count);
        assert_eq!(latency.len(), count);
        assert_eq!(followers_behind(&nodes, &leader), 0);
        drop(leader);
        for pipeline in nodes {
            pipeline.join();
        }
    }
}
