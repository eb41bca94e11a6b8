//! Raft clusters of real `exchange serve` processes whose Raft links all
//! pass through fault-injecting TCP proxies owned by the test: partitions
//! are blocked proxies, crashes are SIGKILL, restarts reuse the data
//! directory.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::{free_port, Client, ADMIN_TOKEN};

/// Forwards TCP connections to `target` until blocked; blocking cuts the
/// live connections and refuses new ones.
pub struct Proxy {
    pub addr: SocketAddr,
    blocked: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
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
    pub fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy");
        let addr = listener.local_addr().expect("proxy address");
        let blocked = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let (flag, conns) = (blocked.clone(), live.clone());
        std::thread::spawn(move || {
            for incoming in listener.incoming() {
                let Ok(client) = incoming else { continue };
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
        }
    }

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

pub fn status(port: u16) -> Option<Value> {
    let response = Client { port }
        .try_request(
            "GET",
            "/admin/replication?state_hash=true",
            &[("Authorization", format!("Bearer {ADMIN_TOKEN}"))],
            b"",
        )
        .ok()?;
    (response.status == 200).then(|| response.json())
}

pub fn leader_among(nodes: &[&Node]) -> Option<u64> {
    nodes.iter().find_map(|n| {
        let s = status(n.http)?;
        (s["role"] == "leader").then(|| s["id"].as_u64()).flatten()
    })
}

/// Three nodes, each Raft link `from -> to` through its own proxy.
pub struct ProxiedCluster {
    pub dir: PathBuf,
    pub ids: Vec<u64>,
    pub raft: BTreeMap<u64, SocketAddr>,
    pub http: BTreeMap<u64, u16>,
    pub proxies: BTreeMap<(u64, u64), Proxy>,
    pub nodes: BTreeMap<u64, Node>,
}

impl ProxiedCluster {
    pub fn start(dir: &Path, size: u64) -> ProxiedCluster {
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
        let child = Command::new(env!("CARGO_BIN_EXE_exchange"))
            .args(["serve", "--data-dir"])
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{http}")])
            .args(["--node-id", &id.to_string(), "--peers", &peers.join(",")])
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a node");
        self.nodes.insert(id, Node { child, http });
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

    pub fn heal(&self) {
        for proxy in self.proxies.values() {
            proxy.block(false);
        }
    }

    pub fn live(&self) -> Vec<&Node> {
        self.nodes.values().collect()
    }

    pub fn leader(&self) -> Option<u64> {
        leader_among(&self.live())
    }

    /// Every node alive, at the leader's commit index, with one state hash.
    pub fn converged(&self) -> bool {
        if self.nodes.len() != self.ids.len() {
            return false;
        }
        let statuses: Vec<Value> = self.nodes.values().filter_map(|n| status(n.http)).collect();
        let Some(lead) = statuses.iter().find(|s| s["role"] == "leader") else {
            return false;
        };
        statuses.len() == self.ids.len()
            && statuses.iter().all(|s| {
                s["applied_index"] == lead["commit_index"] && s["state_hash"] == lead["state_hash"]
            })
    }
}
