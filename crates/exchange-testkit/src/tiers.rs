//! A tiered venue of real processes: replicas (`exchange serve` with an
//! ingress and a log stream), order-entry gateways (`exchange gateway`)
//! and market-data gateways (`exchange md-gateway`), each on its own
//! ports (or, with [`TieredVenue::start_in_namespaces`], in network
//! namespaces at addresses of their own), started, killed and restarted
//! by the test.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cluster::{leader_port, Node, ProxiedCluster, Proxy};
use crate::http::{Client, ADMIN_TOKEN};
use crate::netns::Netns;
use crate::ports::free_port;
use crate::wait::wait_until;

/// Every address of one process kind, by id.
struct Addresses {
    raft: SocketAddr,
    /// The port the test reaches its HTTP listener on...
    http: u16,
    /// ...which listens here.
    listen: SocketAddr,
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
    /// How each reporter is started, by index.
    reporter_specs: Vec<ReporterSpec>,
    pub reporters: BTreeMap<usize, Node>,
    /// Whether the replicas keep a reporting store of their own.
    replica_stores: bool,
    /// The store order-entry gateways read history from
    /// (`--reporting-url`).
    pub gateway_reporting_url: Option<String>,
    /// Whether gateways reach the replicas through [`Proxy`]s.
    proxied: bool,
    /// By (gateway index, replica id): the proxy the gateway's ingress
    /// link to that replica goes through, when proxied.
    pub ingress_proxies: BTreeMap<(usize, u64), Proxy>,
    /// Likewise for the gateway's log-stream links.
    pub stream_proxies: BTreeMap<(usize, u64), Proxy>,
    /// Where each gateway's (then market-data gateway's) HTTP listens, by
    /// host number (replicas first).
    http_listen: BTreeMap<usize, SocketAddr>,
    /// With namespaces, how the test reaches each process's HTTP.
    http_proxies: Vec<Proxy>,
    /// By gateway index: the configuration file it is started with
    /// (`--config`), when it has one.
    pub gateway_configs: BTreeMap<usize, PathBuf>,
    /// Further arguments every order-entry gateway is started with.
    pub gateway_args: Vec<String>,
    /// Dropped last: the processes are killed before their namespaces go.
    net: Option<Netns>,
}

/// A link of a gateway to a replica.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// Where the gateway sends its commands.
    Ingress,
    /// Where it reads the committed log.
    Stream,
}

/// A reporter's HTTP port, reporting URL (`None`: SQLite in its data
/// directory) and further arguments.
struct ReporterSpec {
    http: u16,
    url: Option<String>,
    args: Vec<String>,
}

/// How many of each process a venue runs.
#[derive(Clone)]
struct Counts {
    replicas: u64,
    gateways: usize,
    md_gateways: usize,
    replica_stores: bool,
    /// See [`TieredVenue::gateway_reporting_url`].
    history: Option<String>,
    /// See [`TieredVenue::gateway_args`].
    gateway_args: Vec<String>,
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
        let counts = Counts {
            replicas,
            gateways,
            md_gateways,
            replica_stores: true,
            history: None,
            gateway_args: Vec::new(),
        };
        Self::start_with(bin, dir, counts, false, None)
    }

    /// As [`TieredVenue::start`], with every process in a network
    /// namespace of its own, at an address of its own; the test reaches
    /// each one's HTTP through a local [`Proxy`] (`gateway_ports` and the
    /// nodes' `http` are the proxies'). Err says why namespaces cannot be
    /// made here (they need root and `ip`).
    pub fn start_in_namespaces(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        md_gateways: usize,
    ) -> Result<TieredVenue, String> {
        let net = Netns::create(replicas as usize + gateways + md_gateways)?;
        let counts = Counts {
            replicas,
            gateways,
            md_gateways,
            replica_stores: true,
            history: None,
            gateway_args: Vec::new(),
        };
        Ok(Self::start_with(bin, dir, counts, false, Some(net)))
    }

    /// As [`TieredVenue::start`], but every link of an order-entry gateway
    /// to a replica (ingress and log stream) goes through a [`Proxy`] of
    /// its own, which [`TieredVenue::cut_gateway`] blocks.
    pub fn start_proxied(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        md_gateways: usize,
    ) -> TieredVenue {
        let counts = Counts {
            replicas,
            gateways,
            md_gateways,
            replica_stores: true,
            history: None,
            gateway_args: Vec::new(),
        };
        Self::start_with(bin, dir, counts, true, None)
    }

    /// As [`TieredVenue::start_proxied`], with further arguments for
    /// every order-entry gateway (such as `--cancel-grace-ms`).
    pub fn start_proxied_with_gateway_args(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        gateway_args: &[&str],
    ) -> TieredVenue {
        let counts = Counts {
            replicas,
            gateways,
            md_gateways: 0,
            replica_stores: true,
            history: None,
            gateway_args: gateway_args.iter().map(|a| a.to_string()).collect(),
        };
        Self::start_with(bin, dir, counts, true, None)
    }

    /// As [`TieredVenue::start`], with replicas that keep no reporting
    /// store (`--no-reporting`): the venue's store is written by the
    /// reporters the test adds ([`TieredVenue::add_reporter`]), and the
    /// gateways read history from `history` (`--reporting-url`).
    pub fn start_without_replica_stores(
        bin: impl AsRef<Path>,
        dir: &Path,
        replicas: u64,
        gateways: usize,
        history: Option<String>,
    ) -> TieredVenue {
        let counts = Counts {
            replicas,
            gateways,
            md_gateways: 0,
            replica_stores: false,
            history,
            gateway_args: Vec::new(),
        };
        Self::start_with(bin, dir, counts, false, None)
    }

    fn start_with(
        bin: impl AsRef<Path>,
        dir: &Path,
        counts: Counts,
        proxied: bool,
        net: Option<Netns>,
    ) -> TieredVenue {
        let mut venue = TieredVenue {
            bin: bin.as_ref().to_path_buf(),
            dir: dir.to_path_buf(),
            replicas_at: BTreeMap::new(),
            replicas: BTreeMap::new(),
            gateway_ports: Vec::new(),
            gateways: BTreeMap::new(),
            md_gateway_ports: Vec::new(),
            md_gateways: BTreeMap::new(),
            reporter_specs: Vec::new(),
            reporters: BTreeMap::new(),
            replica_stores: true,
            gateway_reporting_url: None,
            proxied,
            ingress_proxies: BTreeMap::new(),
            stream_proxies: BTreeMap::new(),
            http_listen: BTreeMap::new(),
            http_proxies: Vec::new(),
            gateway_configs: BTreeMap::new(),
            gateway_args: counts.gateway_args.clone(),
            net,
        };
        venue.replica_stores = counts.replica_stores;
        venue.gateway_reporting_url = counts.history.clone();
        venue.assign_addresses(&counts);
        std::fs::create_dir_all(dir).expect("venue directory");
        for id in 1..=counts.replicas {
            venue.spawn_replica(id);
        }
        for index in 0..counts.gateways {
            venue.spawn_gateway(index);
        }
        for index in 0..counts.md_gateways {
            venue.spawn_md_gateway(index);
        }
        venue
    }

    /// The address of host `host` (replicas first, then gateways, then
    /// market-data gateways): its namespace's, or the loopback.
    fn ip_of(&self, host: usize) -> IpAddr {
        match &self.net {
            Some(net) => IpAddr::V4(net.addr(host)),
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }

    /// Where host `host`'s HTTP listens, and the local port the test
    /// reaches it on.
    fn http_of(&mut self, host: usize) -> (SocketAddr, u16) {
        let listen = SocketAddr::new(self.ip_of(host), free_port());
        if self.net.is_none() {
            return (listen, listen.port());
        }
        let proxy = Proxy::start(listen);
        let port = proxy.addr.port();
        self.http_proxies.push(proxy);
        (listen, port)
    }

    fn assign_addresses(&mut self, counts: &Counts) {
        for id in 1..=counts.replicas {
            let host = id as usize - 1;
            let at = |venue: &TieredVenue| SocketAddr::new(venue.ip_of(host), free_port());
            let (listen, http) = self.http_of(host);
            let addresses = Addresses {
                raft: at(self),
                http,
                listen,
                ingress: at(self),
                stream: at(self),
            };
            self.replicas_at.insert(id, addresses);
        }
        let first = counts.replicas as usize;
        for host in first..first + counts.gateways + counts.md_gateways {
            let (listen, port) = self.http_of(host);
            self.http_listen.insert(host, listen);
            if host < first + counts.gateways {
                self.gateway_ports.push(port);
            } else {
                self.md_gateway_ports.push(port);
            }
        }
    }

    fn key_file(&self) -> PathBuf {
        // The same key and file layout as the proxied cluster's.
        ProxiedCluster::key_file_in(&self.dir)
    }

    fn command(&self, host: usize, name: &str, args: &[String]) -> Command {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{name}.log")))
            .expect("log");
        let mut command = match &self.net {
            Some(net) => net.command(host, &self.bin),
            None => Command::new(&self.bin),
        };
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
            at.listen.to_string(),
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
        let mut command = self.command(id as usize - 1, &format!("replica-{id}"), &args);
        if !self.replica_stores {
            command.arg("--no-reporting");
        }
        let child = command.spawn().expect("start a replica");
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
        let host = self.replicas_at.len() + index;
        let mut args = vec![
            "gateway".to_string(),
            "--listen".into(),
            self.http_listen[&host].to_string(),
            "--ingress".into(),
            ingress.join(","),
            "--name".into(),
            format!("gw-{index}"),
        ];
        args.extend(self.upstream_args(100 + index as u64, &stream));
        if let Some(url) = &self.gateway_reporting_url {
            args.extend(["--reporting-url".to_string(), url.clone()]);
        }
        if let Some(config) = self.gateway_configs.get(&index) {
            args.extend(["--config".to_string(), config.display().to_string()]);
        }
        args.extend(self.gateway_args.iter().cloned());
        let child = self
            .command(host, &format!("gateway-{index}"), &args)
            .spawn()
            .expect("start a gateway");
        self.gateways.insert(index, Node { child, http });
    }

    /// Cuts (`on`) or heals gateway `index`'s `link` to replica `id`.
    /// Needs a venue started with [`TieredVenue::start_proxied`].
    pub fn cut_gateway(&self, index: usize, id: u64, link: Link, on: bool) {
        self.gateway_proxy(index, id, link).block(on);
    }

    /// The proxy gateway `index`'s `link` to replica `id` goes through.
    pub fn gateway_proxy(&self, index: usize, id: u64, link: Link) -> &Proxy {
        let proxies = match link {
            Link::Ingress => &self.ingress_proxies,
            Link::Stream => &self.stream_proxies,
        };
        proxies
            .get(&(index, id))
            .unwrap_or_else(|| panic!("no proxy for gateway {index} to replica {id}"))
    }

    /// Starts (or restarts) market-data gateway `index`.
    pub fn spawn_md_gateway(&mut self, index: usize) {
        let http = self.md_gateway_ports[index];
        let host = self.replicas_at.len() + self.gateway_ports.len() + index;
        let mut args = vec![
            "md-gateway".to_string(),
            "--listen".into(),
            self.http_listen[&host].to_string(),
        ];
        let (_, stream) = self.upstream_of(None);
        args.extend(self.upstream_args(200 + index as u64, &stream));
        let child = self
            .command(host, &format!("md-gateway-{index}"), &args)
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

    /// Starts one more order-entry gateway, with the configuration file
    /// `config` (its `[fix]` section, say); returns its index. Only on a
    /// venue without market-data gateways or namespaces, whose hosts
    /// would follow the gateways'.
    pub fn add_gateway(&mut self, config: PathBuf) -> usize {
        assert!(
            self.md_gateway_ports.is_empty() && self.net.is_none(),
            "gateways are added to a venue of replicas and gateways on the loopback"
        );
        let index = self.gateway_ports.len();
        let host = self.replicas_at.len() + index;
        let (listen, port) = self.http_of(host);
        self.http_listen.insert(host, listen);
        self.gateway_ports.push(port);
        self.gateway_configs.insert(index, config);
        self.spawn_gateway(index);
        index
    }

    /// SIGKILL to market-data gateway `index`.
    pub fn kill_md_gateway(&mut self, index: usize) {
        self.md_gateways.remove(&index);
    }

    /// Adds a reporter (`exchange reporter`) following every replica's
    /// log stream and writing the store at `reporting_url` (`None`:
    /// SQLite in its data directory, [`TieredVenue::reporter_store`]),
    /// started with `args` besides; returns its index.
    pub fn add_reporter(&mut self, reporting_url: Option<String>, args: &[&str]) -> usize {
        assert!(self.net.is_none(), "reporters run on the loopback only");
        self.reporter_specs.push(ReporterSpec {
            http: free_port(),
            url: reporting_url,
            args: args.iter().map(|a| a.to_string()).collect(),
        });
        let index = self.reporter_specs.len() - 1;
        self.spawn_reporter(index);
        index
    }

    /// Reporter `index`'s HTTP port (`/health`, `/ready`, `/metrics`).
    pub fn reporter_port(&self, index: usize) -> u16 {
        self.reporter_specs[index].http
    }

    /// Starts (or restarts) reporter `index`.
    pub fn spawn_reporter(&mut self, index: usize) {
        let spec = &self.reporter_specs[index];
        let http = spec.http;
        let mut args = vec![
            "reporter".to_string(),
            "--listen".into(),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), http).to_string(),
        ];
        if let Some(url) = &spec.url {
            args.extend(["--reporting-url".to_string(), url.clone()]);
        }
        args.extend(spec.args.iter().cloned());
        let (_, stream) = self.upstream_of(None);
        args.extend(self.upstream_args(300 + index as u64, &stream));
        // Not a host of its own: reporters run beside the test.
        let child = self
            .command(0, &format!("reporter-{index}"), &args)
            .spawn()
            .expect("start a reporter");
        self.reporters.insert(index, Node { child, http });
    }

    /// The SQLite store reporter `index` writes when given no URL.
    pub fn reporter_store(&self, index: usize) -> PathBuf {
        self.dir
            .join(format!("reporter-{index}"))
            .join("reporting.sqlite")
    }

    /// SIGKILL to reporter `index`.
    pub fn kill_reporter(&mut self, index: usize) {
        self.reporters.remove(&index);
    }
}
