//! A tiered venue of real processes: replicas (`exchange serve` with an
//! ingress and a log stream), order-entry gateways (`exchange gateway`)
//! and market-data gateways (`exchange md-gateway`), each on its own
//! ports, started, killed and restarted by the test.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cluster::{leader_port, Node, ProxiedCluster, Proxy};
use crate::http::{Client, ADMIN_TOKEN};
use crate::ports::free_port;
use crate::wait::wait_until;

fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Every address of one process kind, by id.
struct Addresses {
    raft: SocketAddr,
    http: u16,
    ingress: SocketAddr,
    stream: SocketAddr,
}

pub struct TieredVenue {
    bin: PathBuf,
    pub dir: PathBuf,
    replicas_at: BTreeMap<u64, Addresses>,
    pub replicas: BTreeMap<u64, Node>,
    /// Each gateway's HTTP port, by index.
    pub gateway_ports: Vec<u16>,
    pub gateways: BTreeMap<usize, Node>,
    pub md_gateway_ports: Vec<u16>,
    pub md_gateways: BTreeMap<usize, Node>,
    /// Whether gateways reach the replicas through [`Proxy`]s.
    proxied: bool,
    /// By (gateway index, replica id): the proxy the gateway's ingress
    /// link to that replica goes through, when proxied.
    pub ingress_proxies: BTreeMap<(usize, u64), Proxy>,
    /// Likewise for the gateway's log-stream links.
    pub stream_proxies: BTreeMap<(usize, u64), Proxy>,
}

impl TieredVenue {
    /// Starts `replicas` replicas, `gateways` gateways and `md_gateways`
    /// market-data gateways of `bin`, with their data under `dir`.
    pub fn start(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        md_gateways: usize,
    ) -> TieredVenue {
        Self::start_with(bin, dir, (replicas, gateways, md_gateways), false)
    }

    /// As [`TieredVenue::start`], but every link of an order-entry gateway
    /// to a replica (ingress and log stream) goes through a [`Proxy`] of
    /// its own, which [`TieredVenue::partition_gateway`] blocks.
    pub fn start_proxied(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        md_gateways: usize,
    ) -> TieredVenue {
        Self::start_with(bin, dir, (replicas, gateways, md_gateways), true)
    }

    fn start_with(
        bin: impl AsRef<Path>,
        dir: &Path,
        (replicas, gateways, md_gateways): (u64, usize, usize),
        proxied: bool,
    ) -> TieredVenue {
        let replicas_at = (1..=replicas)
            .map(|id| {
                let at = Addresses {
                    raft: local(free_port()),
                    http: free_port(),
                    ingress: local(free_port()),
                    stream: local(free_port()),
                };
                (id, at)
            })
            .collect();
        let mut venue = TieredVenue {
            bin: bin.as_ref().to_path_buf(),
            dir: dir.to_path_buf(),
            replicas_at,
            replicas: BTreeMap::new(),
            gateway_ports: (0..gateways).map(|_| free_port()).collect(),
            gateways: BTreeMap::new(),
            md_gateway_ports: (0..md_gateways).map(|_| free_port()).collect(),
            md_gateways: BTreeMap::new(),
            proxied,
            ingress_proxies: BTreeMap::new(),
            stream_proxies: BTreeMap::new(),
        };
        std::fs::create_dir_all(dir).expect("venue directory");
        for id in 1..=replicas {
            venue.spawn_replica(id);
        }
        for index in 0..gateways {
            venue.spawn_gateway(index);
        }
        for index in 0..md_gateways {
            venue.spawn_md_gateway(index);
        }
        venue
    }

    fn key_file(&self) -> PathBuf {
        // The same key and file layout as the proxied cluster's.
        ProxiedCluster::key_file_in(&self.dir)
    }

    fn command(&self, name: &str, args: &[String]) -> Command {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))
            .expect("log");
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .arg("--data-dir")
            .arg(self.dir.join(name))
            .arg("--cluster-key-file")
            .arg(self.key_file())
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("EXCHANGE_MASTER_KEY", crate::http::MASTER_KEY)
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        command
    }

    /// Starts (or restarts) replica `id` on its data directory.
    pub fn spawn_replica(&mut self, id: u64) {
        let peers: Vec<String> = self
            .replicas_at
            .iter()
            .map(|(other, at)| format!("{other}={}", at.raft))
            .collect();
        let at = &self.replicas_at[&id];
        let args = [
            "serve".to_string(),
            "--listen".into(),
            local(at.http).to_string(),
            "--node-id".into(),
            id.to_string(),
            "--peers".into(),
            peers.join(","),
            "--ingress-listen".into(),
            at.ingress.to_string(),
            "--stream-listen".into(),
            at.stream.to_string(),
        ];
        let http = at.http;
        let child = self
            .command(&format!("replica-{id}"), &args)
            .spawn()
            .expect("start a replica");
        self.replicas.insert(id, Node { child, http });
    }

    fn upstream_args(&self, process_id: u64, stream: &[SocketAddr]) -> Vec<String> {
        let stream: Vec<String> = stream.iter().map(SocketAddr::to_string).collect();
        vec![
            "--stream".into(),
            stream.join(","),
            "--process-id".into(),
            process_id.to_string(),
        ]
    }

    /// The addresses gateway `index` (None: a market-data gateway) is
    /// given for each replica's ingress and log stream: the replica's own,
    /// or its proxies' when the venue is proxied (kept across restarts).
    fn upstream_of(&mut self, index: Option<usize>) -> (Vec<(u64, SocketAddr)>, Vec<SocketAddr>) {
        let mut ingress = Vec::new();
        let mut stream = Vec::new();
        for (&id, at) in &self.replicas_at {
            match index.filter(|_| self.proxied) {
                Some(index) => {
                    let proxy = self
                        .ingress_proxies
                        .entry((index, id))
                        .or_insert_with(|| Proxy::start(at.ingress));
                    ingress.push((id, proxy.addr));
                    let proxy = self
                        .stream_proxies
                        .entry((index, id))
                        .or_insert_with(|| Proxy::start(at.stream));
                    stream.push(proxy.addr);
                }
                None => {
                    ingress.push((id, at.ingress));
                    stream.push(at.stream);
                }
            }
        }
        (ingress, stream)
    }

    /// Starts (or restarts) gateway `index`.
    pub fn spawn_gateway(&mut self, index: usize) {
        let (ingress, stream) = self.upstream_of(Some(index));
        let ingress: Vec<String> = ingress
            .iter()
            .map(|(id, addr)| format!("{id}={addr}"))
            .collect();
        let http = self.gateway_ports[index];
        let mut args = vec![
            "gateway".to_string(),
            "--listen".into(),
            local(http).to_string(),
            "--ingress".into(),
            ingress.join(","),
            "--name".into(),
            format!("gw-{index}"),
        ];
        args.extend(self.upstream_args(100 + index as u64, &stream));
        let child = self
            .command(&format!("gateway-{index}"), &args)
            .spawn()
            .expect("start a gateway");
        self.gateways.insert(index, Node { child, http });
    }

    /// Cuts (`on`) or heals gateway `index`'s ingress link to replica
    /// `id`, and its log-stream link too when `stream`. Needs a venue
    /// started with [`TieredVenue::start_proxied`].
    pub fn partition_gateway(&self, index: usize, id: u64, stream: bool, on: bool) {
        let proxy = |proxies: &BTreeMap<(usize, u64), Proxy>| {
            proxies
                .get(&(index, id))
                .unwrap_or_else(|| panic!("no proxy for gateway {index} to replica {id}"))
                .block(on)
        };
        proxy(&self.ingress_proxies);
        if stream {
            proxy(&self.stream_proxies);
        }
    }

    /// Starts (or restarts) market-data gateway `index`.
    pub fn spawn_md_gateway(&mut self, index: usize) {
        let http = self.md_gateway_ports[index];
        let mut args = vec![
            "md-gateway".to_string(),
            "--listen".into(),
            local(http).to_string(),
        ];
        let (_, stream) = self.upstream_of(None);
        args.extend(self.upstream_args(200 + index as u64, &stream));
        let child = self
            .command(&format!("md-gateway-{index}"), &args)
            .spawn()
            .expect("start a market-data gateway");
        self.md_gateways.insert(index, Node { child, http });
    }

    /// The HTTP ports of the replicas running now.
    pub fn replica_ports(&self) -> Vec<u16> {
        self.replicas.values().map(|node| node.http).collect()
    }

    /// The id of the replica that leads, once one does and has listed the
    /// configured instruments.
    pub fn wait_leader(&self) -> u64 {
        let mut leader = None;
        wait_until("a leader that lists the instruments", || {
            let Some(port) = leader_port(&self.replica_ports()) else {
                return false;
            };
            let listed = Client { port }
                .try_request("GET", "/v1/instruments", &[], b"")
                .is_ok_and(|r| r.status == 200 && r.text().contains("BTC-USD"));
            leader = self
                .replicas
                .iter()
                .find(|(_, node)| node.http == port)
                .map(|(id, _)| *id);
            listed
        });
        leader.expect("a leader")
    }

    /// Waits until gateway `index` answers with the instruments (it has
    /// followed the log that far).
    pub fn wait_gateway(&self, port: u16) -> Client {
        let client = Client { port };
        wait_until("a gateway serving the instruments", || {
            client
                .try_request("GET", "/v1/instruments", &[], b"")
                .is_ok_and(|r| r.status == 200 && r.text().contains("BTC-USD"))
        });
        client
    }

    /// SIGKILL to replica `id`.
    pub fn kill_replica(&mut self, id: u64) {
        self.replicas.remove(&id);
    }

    /// SIGKILL to gateway `index`.
    pub fn kill_gateway(&mut self, index: usize) {
        self.gateways.remove(&index);
    }

    /// SIGKILL to market-data gateway `index`.
    pub fn kill_md_gateway(&mut self, index: usize) {
        self.md_gateways.remove(&index);
    }
}
