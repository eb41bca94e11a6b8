//! Raft clusters of real `exchange serve` processes, and finding their
//! leader and whether they agree.
//!
//! [`ProxiedCluster`] starts each node itself and passes every Raft link
//! through a fault-injecting TCP proxy owned by the test: partitions are
//! blocked proxies, crashes are SIGKILL, restarts reuse the data
//! directory. [`CliCluster`] is started the way an operator does it, with
//! `exchange cluster up`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::cli::{assert_success, node_pid, run};
use crate::http::{Client, ADMIN_TOKEN};
use crate::ports::{cluster_port_base, free_port};
use crate::wait::wait_until;

/// Forwards TCP connections to `target` until blocked; blocking cuts the
/// live connections and refuses new ones.
pub struct Proxy {
    pub addr: SocketAddr,
    blocked: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
    accepted: Arc<AtomicUsize>,
}

fn pump(mut from: TcpStream, mut to: TcpStream, blocked: Arc<AtomicBool>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if blocked.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Proxy {
    /// A proxy to `target` on a port of its own.
    pub fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy");
        let addr = listener.local_addr().expect("proxy address");
        let blocked = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (flag, conns, count) = (blocked.clone(), live.clone(), accepted.clone());
        std::thread::spawn(move || {
            for incoming in listener.incoming() {
                let Ok(client) = incoming else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                if flag.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                if let Ok(mut list) = conns.lock() {
                    list.extend(client.try_clone());
                    list.extend(server.try_clone());
                }
                let (f1, f2) = (flag.clone(), flag.clone());
                std::thread::spawn(move || pump(client, s2, f1));
                std::thread::spawn(move || pump(server, c2, f2));
            }
        });
        Proxy {
            addr,
            blocked,
            live,
            accepted,
        }
    }

    /// How many connections the proxy has accepted, blocked or not.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Blocks (`true`) or unblocks the link.
    pub fn block(&self, on: bool) {
        self.blocked.store(on, Ordering::SeqCst);
        if on {
            if let Ok(mut list) = self.live.lock() {
                for stream in list.drain(..) {
                    let _ = stream.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

/// One node process of a [`ProxiedCluster`]; killed when dropped.
pub struct Node {
    pub child: Child,
    pub http: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /admin/replication` on the node at `port`, with its state hash
/// when `hashed` (the node hashes its whole state for that); `None` if it
/// does not answer 200.
fn replication(port: u16, hashed: bool) -> Option<Value> {
    let path = if hashed {
        "/admin/replication?state_hash=true"
    } else {
        "/admin/replication"
    };
    let response = Client { port }
        .try_request(
            "GET",
            path,
            &[("Authorization", format!("Bearer {ADMIN_TOKEN}"))],
            b"",
        )
        .ok()?;
    (response.status == 200).then(|| response.json())
}

/// The replication status of the node at `port`, state hash included.
pub fn status(port: u16) -> Option<Value> {
    replication(port, true)
}

/// The port of the node that says it leads, if one does.
pub fn leader_port(ports: &[u16]) -> Option<u16> {
    ports
        .iter()
        .copied()
        .find(|&port| replication(port, false).is_some_and(|s| s["role"] == "leader"))
}

/// Every node in `ports` answers, at the leader's commit index, with one
/// state hash.
pub fn converged(ports: &[u16]) -> bool {
    let statuses: Vec<Value> = ports.iter().filter_map(|&p| status(p)).collect();
    let Some(lead) = statuses.iter().find(|s| s["role"] == "leader") else {
        return false;
    };
    let hashes: BTreeSet<String> = statuses
        .iter()
        .filter_map(|s| s["state_hash"].as_str().map(str::to_owned))
        .collect();
    statuses.len() == ports.len()
        && hashes.len() == 1
        && statuses
            .iter()
            .all(|s| s["applied_index"] == lead["commit_index"])
}

/// The id of the node among `nodes` that says it leads, if one does.
pub fn leader_among(nodes: &[&Node]) -> Option<u64> {
    nodes.iter().find_map(|n| {
        let s = status(n.http)?;
        (s["role"] == "leader").then(|| s["id"].as_u64()).flatten()
    })
}

/// The cluster key of every [`ProxiedCluster`] (64 hex digits).
pub const CLUSTER_KEY: &str = "636c75737465722d6b65792d6f662d7468652d746573742d636c757374657221";

/// Nodes `1..=size`, each Raft link `from -> to` through its own proxy.
pub struct ProxiedCluster {
    bin: PathBuf,
    pub dir: PathBuf,
    pub ids: Vec<u64>,
    pub raft: BTreeMap<u64, SocketAddr>,
    pub http: BTreeMap<u64, u16>,
    pub proxies: BTreeMap<(u64, u64), Proxy>,
    pub nodes: BTreeMap<u64, Node>,
}

impl ProxiedCluster {
    /// Starts `size` nodes of `bin` with their data under `dir`.
    pub fn start(bin: impl AsRef<Path>, dir: &Path, size: u64) -> ProxiedCluster {
        let ids: Vec<u64> = (1..=size).collect();
        let raft: BTreeMap<u64, SocketAddr> = ids
            .iter()
            .map(|&id| (id, SocketAddr::from(([127, 0, 0, 1], free_port()))))
            .collect();
        let http = ids.iter().map(|&id| (id, free_port())).collect();
        let mut proxies = BTreeMap::new();
        for &from in &ids {
            for &to in &ids {
                if from != to {
                    proxies.insert((from, to), Proxy::start(raft[&to]));
                }
            }
        }
        let mut cluster = ProxiedCluster {
            bin: bin.as_ref().to_path_buf(),
            dir: dir.to_path_buf(),
            ids: ids.clone(),
            raft,
            http,
            proxies,
            nodes: BTreeMap::new(),
        };
        for id in ids {
            cluster.spawn(id);
        }
        cluster
    }

    /// Starts (or restarts) node `id` on its data directory.
    pub fn spawn(&mut self, id: u64) {
        let peers: Vec<String> = self
            .ids
            .iter()
            .map(|&other| {
                let addr = if other == id {
                    self.raft[&id]
                } else {
                    self.proxies[&(id, other)].addr
                };
                format!("{other}={addr}")
            })
            .collect();
        let http = self.http[&id];
        let data = self.dir.join(format!("node-{id}"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("node-{id}.log")))
            .expect("log");
        let child = Command::new(&self.bin)
            .args(["serve", "--data-dir"])
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{http}")])
            .args(["--node-id", &id.to_string(), "--peers", &peers.join(",")])
            .arg("--cluster-key-file")
            .arg(self.key_file())
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("EXCHANGE_MASTER_KEY", crate::http::MASTER_KEY)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a node");
        self.nodes.insert(id, Node { child, http });
    }

    /// The cluster key's file, shared by every node (written on first
    /// use, mode 0600).
    pub fn key_file(&self) -> PathBuf {
        Self::key_file_in(&self.dir)
    }

    /// [`CLUSTER_KEY`] in `dir`'s `cluster_key` file, written on first use
    /// (mode 0600).
    pub fn key_file_in(dir: &Path) -> PathBuf {
        let path = dir.join("cluster_key");
        if !path.exists() {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            std::fs::create_dir_all(dir).expect("cluster directory");
            let mut file = options.open(&path).expect("cluster key file");
            file.write_all(CLUSTER_KEY.as_bytes())
                .expect("write the cluster key");
        }
        path
    }

    /// SIGKILL.
    pub fn kill(&mut self, id: u64) {
        self.nodes.remove(&id);
    }

    /// Cuts node `id` off from every other node, both ways (or heals it).
    pub fn isolate(&self, id: u64, on: bool) {
        for ((from, to), proxy) in &self.proxies {
            if *from == id || *to == id {
                proxy.block(on);
            }
        }
    }

    /// Unblocks every proxy.
    pub fn heal(&self) {
        for proxy in self.proxies.values() {
            proxy.block(false);
        }
    }

    /// The nodes running now.
    pub fn live(&self) -> Vec<&Node> {
        self.nodes.values().collect()
    }

    /// The id of the running node that says it leads, if one does.
    pub fn leader(&self) -> Option<u64> {
        leader_among(&self.live())
    }

    /// Every node alive, at the leader's commit index, with one state hash.
    pub fn converged(&self) -> bool {
        let ports: Vec<u16> = self.nodes.values().map(|n| n.http).collect();
        self.nodes.len() == self.ids.len() && converged(&ports)
    }
}
/// Waits until `find_leader` names the port of a node that leads and lists
/// the default instruments (start-up has listed them through the log), and
/// returns a client for it.
pub fn ready_leader(mut find_leader: impl FnMut() -> Option<u16>) -> Client {
    let mut port = None;
    wait_until("a leader with the instruments listed", || {
        port = find_leader();
        port.is_some_and(|p| {
            Client { port: p }
                .try_request("GET", "/v1/instruments", &[], b"")
                .is_ok_and(|r| r.text().contains("BTC-USD"))
        })
    });
    Client {
        port: port.expect("leader"),
    }
}

/// A cluster started the way an operator starts one, with `exchange
/// cluster up`: node `n` serves HTTP on `base + n` and Raft on
/// `base + 100 + n`, and keeps its data, log and pid file in `DIR/node-N/`.
/// Every node with a pid file is killed (SIGKILL) when dropped.
pub struct CliCluster {
    bin: PathBuf,
    pub dir: PathBuf,
    pub base: u16,
    /// The founding nodes' HTTP ports, node 1's first.
    pub ports: Vec<u16>,
    /// Order-entry gateways, market-data gateways and reporters in front
    /// of the nodes.
    pub tiers: (u16, u16, u16),
}

impl CliCluster {
    /// `bin cluster up` with `nodes` nodes on ports nobody uses (with room
    /// for one node added later), and `config` for every node; a start
    /// that loses a port to another process is retried on other ports.
    pub fn up(bin: impl AsRef<Path>, dir: &Path, nodes: u64, config: Option<&Path>) -> CliCluster {
        CliCluster::up_tiered(bin, dir, nodes, (0, 0, 0), config)
    }

    /// [`CliCluster::up`] with `gateways` order-entry gateways,
    /// `md_gateways` market-data gateways and `reporters` reporters
    /// (`--gateways`, `--md-gateways`, `--reporters`).
    pub fn up_tiered(
        bin: impl AsRef<Path>,
        dir: &Path,
        nodes: u64,
        tiers: (u16, u16, u16),
        config: Option<&Path>,
    ) -> CliCluster {
        let count = u16::try_from(nodes).expect("a small cluster");
        let dir_arg = dir.display().to_string();
        let config_arg = config.map(|c| c.display().to_string());
        for _ in 0..10 {
            let base = if tiers != (0, 0, 0) {
                crate::ports::tiered_port_base(count + 1, tiers)
            } else {
                cluster_port_base(count + 1)
            };
            let cluster = CliCluster {
                bin: bin.as_ref().to_path_buf(),
                dir: dir.to_path_buf(),
                base,
                ports: (1..=count).map(|n| base + n).collect(),
                tiers,
            };
            let counts =
                [nodes, tiers.0.into(), tiers.1.into(), tiers.2.into()].map(|n| n.to_string());
            let base_arg = base.to_string();
            let mut args = vec![
                "cluster",
                "up",
                "--data-dir",
                &dir_arg,
                "--port-base",
                &base_arg,
            ];
            for (flag, count) in ["--nodes", "--gateways", "--md-gateways", "--reporters"]
                .into_iter()
                .zip(&counts)
            {
                args.extend([flag, count.as_str()]);
            }
            if let Some(config) = &config_arg {
                args.extend(["--config", config]);
            }
            let out = cluster.exchange(&args);
            if out.status.success() {
                eprintln!("{}", String::from_utf8_lossy(&out.stdout));
                return cluster;
            }
            eprintln!(
                "cluster up failed (port race?): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            drop(cluster);
            // A half-started cluster's files would be taken for this one's.
            if let Err(e) = std::fs::remove_dir_all(dir) {
                assert!(
                    e.kind() == std::io::ErrorKind::NotFound,
                    "remove {}: {e}",
                    dir.display()
                );
            }
        }
        panic!("could not start a cluster");
    }

    /// Runs `bin args...` (a `cluster` subcommand, say) to completion.
    pub fn exchange(&self, args: &[&str]) -> Output {
        run(&self.bin, args, None)
    }

    /// Node `node`'s HTTP port.
    pub fn port(&self, node: u64) -> u16 {
        self.base + u16::try_from(node).expect("a small node id")
    }

    /// Gateway `k`'s HTTP port (from 1); market-data gateway `k`'s is
    /// 100 above.
    pub fn gateway_port(&self, k: u16) -> u16 {
        self.base + 400 + k
    }

    /// The pids in the gateways' and reporters' pid files:
    /// `DIR/gateway-K/pid`, `DIR/md-gateway-K/pid`, `DIR/reporter-K/pid`.
    pub fn gateway_pids(&self) -> Vec<i32> {
        let (gateways, md, reporters) = self.tiers;
        let dirs = (1..=gateways)
            .map(|k| format!("gateway-{k}"))
            .chain((1..=md).map(|k| format!("md-gateway-{k}")))
            .chain((1..=reporters).map(|k| format!("reporter-{k}")));
        dirs.filter_map(|name| {
            std::fs::read_to_string(self.dir.join(name).join("pid"))
                .ok()?
                .trim()
                .parse()
                .ok()
        })
        .collect()
    }

    /// The pid that node `node`'s pid file names, if it has one.
    pub fn pid(&self, node: u64) -> Option<i32> {
        node_pid(&self.dir, node)
    }

    /// SIGKILL to node `node`.
    pub fn kill(&self, node: u64) {
        if let Some(pid) = self.pid(node) {
            // SAFETY: SIGKILL to a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    /// `bin cluster up` on the existing directory: starts every node that
    /// is not running.
    pub fn restart_dead(&self) {
        let dir = self.dir.display().to_string();
        assert_success(
            &self.exchange(&["cluster", "up", "--data-dir", &dir]),
            "cluster up (restart)",
        );
    }

    /// `bin cluster status` through node 1, parsed; `None` if it fails.
    pub fn status(&self) -> Option<Value> {
        let out = self.exchange(&[
            "cluster",
            "status",
            "--url",
            &format!("http://127.0.0.1:{}", self.ports[0]),
        ]);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).ok())
            .flatten()
    }

    /// Ids of the nodes that have a directory here, added ones included.
    fn node_ids(&self) -> Vec<u64> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("node-")?.parse().ok())
            .collect()
    }
}

impl Drop for CliCluster {
    fn drop(&mut self) {
        for node in self.node_ids() {
            self.kill(node);
        }
        for pid in self.gateway_pids() {
            // SAFETY: SIGKILL to a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
