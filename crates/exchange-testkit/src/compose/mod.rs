//! The venue of deploy/compose/docker-compose.yml, run by a test: built
//! from the test's `exchange` binary, under a project name of its own,
//! with free host ports and a `cluster` subnet of its own, so that several
//! can run at once. Faults are the compose file's services': kill, stop,
//! start, pause, and cutting a service off a network; a rolling upgrade
//! makes one service's container anew from another image on its volume.
//!
//! ```text
//! let venue = match ComposeVenue::up(env!("CARGO_BIN_EXE_exchange")) {
//!     Ok(venue) => venue,
//!     Err(why) => return skip_unless_ci(&why),
//! };
//! let gateway = Client { port: venue.gateway_ports[0] };
//! venue.kill("replica-1");
//! venue.start("replica-1");
//! venue.disconnect("gateway-2", Network::Cluster);
//! let next = venue.build_image("path/to/the/next/exchange");
//! venue.upgrade("replica-2", &next);
//! ```
//!
//! Dropping the venue removes its containers, volumes, networks and
//! exchange images (`docker-compose down -v`), after printing the end of
//! every container's log when the test is failing.

mod disks;
mod setup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use setup::{build_exchange, remove_image, succeed, unique, write_secrets};
pub use setup::{compose_available, repo_root, skip_unless_ci, Images};

use crate::ports::free_port;

/// libfaketime, in the image at the path the host has it.
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// How long a venue may take to have every container healthy.
pub const UP_DEADLINE: Duration = Duration::from_secs(120);

/// The compose file's two networks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// Raft, ingress, log stream and PostgreSQL (internal).
    Cluster,
    /// The gateways' published ports.
    Clients,
}

impl Network {
    fn name(self) -> &'static str {
        match self {
            Network::Cluster => "cluster",
            Network::Clients => "clients",
        }
    }
}

/// Every service of the compose file.
pub const SERVICES: [&str; 8] = [
    "postgres",
    "reporter-1",
    "replica-1",
    "replica-2",
    "replica-3",
    "gateway-1",
    "gateway-2",
    "md-gateway-1",
];

pub struct ComposeVenue {
    /// The compose project (`-p`): containers are `PROJECT_SERVICE_1`.
    pub project: String,
    /// Host ports of gateway-1 and gateway-2's HTTP, on 127.0.0.1.
    pub gateway_ports: Vec<u16>,
    /// Host port of md-gateway-1's HTTP.
    pub md_gateway_ports: Vec<u16>,
    /// The first three octets of the `cluster` network (`A.B.C`): replica
    /// N is at `A.B.C.(10 + N)`, the reporter at `A.B.C.21`, PostgreSQL at
    /// `A.B.C.5`.
    pub cluster_net: String,
    file: PathBuf,
    images: Images,
    secrets: tempfile::TempDir,
    /// Services run from another exchange image than the others' (a
    /// rolling upgrade), by service; and every image built for the venue.
    upgraded: Mutex<BTreeMap<String, String>>,
    built: Mutex<Vec<String>>,
    /// Variables given to services beyond the compose file's (a skewed
    /// clock), by service.
    environments: Mutex<BTreeMap<String, Vec<(String, String)>>>,
    /// The replicas' disks of a fixed size and the compose file that
    /// mounts them, when the venue has them ([`ComposeVenue::up_with_disks`]).
    disks: Option<(disks::Disks, PathBuf)>,
}

impl ComposeVenue {
    /// Builds the images from `bin`, writes the secrets and brings the
    /// venue up, returning once every container is healthy. Err says why
    /// docker cannot run it here (for [`skip_unless_ci`]); any other
    /// failure fails the test.
    pub fn up(bin: impl AsRef<Path>) -> Result<ComposeVenue, String> {
        Self::up_with(bin.as_ref(), None)
    }

    /// As [`ComposeVenue::up`], each replica's data on a filesystem of
    /// `size_mb` that [`ComposeVenue::fill_disk`] can fill (root only).
    pub fn up_with_disks(bin: impl AsRef<Path>, size_mb: u64) -> Result<ComposeVenue, String> {
        Self::up_with(bin.as_ref(), Some(size_mb))
    }

    fn up_with(bin: &Path, disk_mb: Option<u64>) -> Result<ComposeVenue, String> {
        compose_available()?;
        let disks = match disk_mb {
            Some(size) => {
                let disks = disks::Disks::mount(3, size)?;
                let file = disks.write_override();
                Some((disks, file))
            }
            None => None,
        };
        let secrets = tempfile::tempdir().map_err(|e| format!("a temp dir: {e}"))?;
        write_secrets(secrets.path())?;
        let images = Images::build(bin);
        let built = Mutex::new(vec![images.exchange.clone()]);
        let mut venue = ComposeVenue {
            project: unique("exchtest"),
            gateway_ports: vec![free_port(), free_port()],
            md_gateway_ports: vec![free_port()],
            cluster_net: String::new(),
            file: repo_root().join("deploy/compose/docker-compose.yml"),
            images,
            secrets,
            upgraded: Mutex::new(BTreeMap::new()),
            built,
            environments: Mutex::new(BTreeMap::new()),
            disks,
        };
        venue.up_on_a_free_subnet();
        venue.wait_healthy(&SERVICES);
        Ok(venue)
    }

    /// `up -d` with a `cluster` subnet no other docker network has, trying
    /// another one when docker says it overlaps.
    fn up_on_a_free_subnet(&mut self) {
        let seed = std::process::id() as usize;
        for attempt in 0..8 {
            self.cluster_net = format!("10.213.{}", (seed + attempt * 37) % 250 + 1);
            let output = self.compose(&["up", "-d", "--no-build"]);
            if output.status.success() {
                return;
            }
            let stderr = String::from_utf8_lossy(&output.stderr).to_string();
            let _ = self.compose(&["down", "-v"]);
            assert!(
                stderr.contains("overlap"),
                "docker-compose up failed:\n{stderr}"
            );
        }
        panic!("no free subnet for the cluster network after 8 tries");
    }

    /// `docker-compose -f deploy/compose/docker-compose.yml -p PROJECT args`
    /// with the venue's variables.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("docker-compose");
        for file in self.files() {
            command.arg("-f").arg(file);
        }
        command
            .arg("-p")
            .arg(&self.project)
            .args(args)
            .envs(self.env());
        command
    }

    /// The compose file and the overrides in force: the replicas' disks,
    /// upgraded services' images.
    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.file.clone()];
        if let Some((_, file)) = &self.disks {
            files.push(file.clone());
        }
        if !self.upgraded_services().is_empty() || !self.environments().is_empty() {
            files.push(self.override_file());
        }
        files
    }

    /// The variables the compose file reads, as this venue sets them.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let port = |ports: &[u16], i: usize| ports[i].to_string();
        vec![
            ("EXCHANGE_IMAGE", self.images.exchange.clone()),
            ("EXCHANGE_POSTGRES_IMAGE", self.images.postgres.clone()),
            ("EXCHANGE_CLUSTER_NET", self.cluster_net.clone()),
            (
                "EXCHANGE_SECRETS",
                self.secrets.path().display().to_string(),
            ),
            ("EXCHANGE_BIND", "127.0.0.1".to_string()),
            ("EXCHANGE_GATEWAY_1_PORT", port(&self.gateway_ports, 0)),
            ("EXCHANGE_GATEWAY_2_PORT", port(&self.gateway_ports, 1)),
            (
                "EXCHANGE_MD_GATEWAY_1_PORT",
                port(&self.md_gateway_ports, 0),
            ),
        ]
    }

    /// For `exchange cluster upgrade --replace`: every exchange service
    /// runs `image` from now on, each once it is made anew by the returned
    /// command (`{name}` stands for the service; run with [`Self::env`]).
    pub fn replace_command(&self, image: &str) -> String {
        {
            let mut upgraded = self.upgraded.lock().unwrap_or_else(|e| e.into_inner());
            for service in SERVICES.iter().filter(|s| **s != "postgres") {
                upgraded.insert((*service).to_string(), image.to_string());
            }
        }
        self.write_override();
        let files: Vec<String> = self
            .files()
            .iter()
            .map(|f| format!("-f {}", f.display()))
            .collect();
        format!(
            "docker-compose {} -p {} up -d --no-deps {{name}}",
            files.join(" "),
            self.project
        )
    }

    /// Each replica's name and HTTP URL on the `cluster` network (the host
    /// reaches it through the network's bridge).
    pub fn replica_urls(&self) -> Vec<(String, String)> {
        (1..=3)
            .map(|n| {
                let name = format!("replica-{n}");
                let ip = self.fixed_ip(&name).unwrap_or_default();
                (name, format!("http://{ip}:8080"))
            })
            .collect()
    }

    /// Builds an image of another exchange binary for
    /// [`ComposeVenue::upgrade`]; its tag (removed with the venue).
    pub fn build_image(&self, bin: impl AsRef<Path>) -> String {
        let tag = build_exchange(bin.as_ref());
        self.built
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tag.clone());
        tag
    }

    /// Runs `service` from `image` from now on: its container is made
    /// anew from that image (`up -d --no-deps`) on the same volume, the
    /// others are left as they are. Returns once the new one is healthy.
    pub fn upgrade(&self, service: &str, image: &str) {
        self.upgraded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(service.to_string(), image.to_string());
        self.write_override();
        self.compose_ok(&["up", "-d", "--no-deps", service]);
        self.wait_healthy(&[service]);
    }

    fn write_override(&self) {
        let images = self.upgraded_services();
        let environments = self.environments();
        let mut services: Vec<&String> = images.keys().chain(environments.keys()).collect();
        services.sort();
        services.dedup();
        let mut text = String::from("services:\n");
        for service in services {
            text.push_str(&format!("  {service}:\n"));
            if let Some(image) = images.get(service) {
                text.push_str(&format!("    image: {image}\n"));
            }
            if let Some(variables) = environments.get(service) {
                text.push_str("    environment:\n");
                for (name, value) in variables {
                    text.push_str(&format!("      {name}: \"{value}\"\n"));
                }
            }
        }
        std::fs::write(self.override_file(), text).expect("write the override");
    }

    fn environments(&self) -> BTreeMap<String, Vec<(String, String)>> {
        self.environments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the image can skew a container's clock: it carries
    /// libfaketime when the host has it (deploy/image/build-exchange).
    pub fn can_skew_clocks(&self) -> bool {
        Path::new(FAKETIME).exists()
    }

    /// Makes `service`'s container anew with its wall clock `seconds` off
    /// (libfaketime; its monotonic clocks, which time elections and
    /// timeouts, stay true), or true again with `0`. Returns once it is
    /// started, not necessarily healthy.
    pub fn skew_clock(&self, service: &str, seconds: i64) {
        {
            let mut environments = self.environments.lock().unwrap_or_else(|e| e.into_inner());
            if seconds == 0 {
                environments.remove(service);
            } else {
                let variables = vec![
                    ("LD_PRELOAD".to_string(), FAKETIME.to_string()),
                    ("FAKETIME".to_string(), format!("{seconds:+}")),
                    ("FAKETIME_DONT_FAKE_MONOTONIC".to_string(), "1".to_string()),
                ];
                environments.insert(service.to_string(), variables);
            }
        }
        self.write_override();
        self.compose_ok(&["up", "-d", "--no-deps", service]);
    }

    fn upgraded_services(&self) -> BTreeMap<String, String> {
        self.upgraded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The compose file [`ComposeVenue::upgrade`] writes beside the
    /// secrets: each upgraded service's image.
    fn override_file(&self) -> PathBuf {
        self.secrets.path().join("images.yml")
    }

    /// The image `service`'s container runs now.
    pub fn image_of(&self, service: &str) -> String {
        let mut command = Command::new("docker");
        command
            .args(["inspect", "--format", "{{.Config.Image}}"])
            .arg(self.container(service));
        let output = succeed(&mut command, &format!("inspect {service}"));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Runs a docker-compose command to its end.
    pub fn compose(&self, args: &[&str]) -> Output {
        self.command(args)
            .output()
            .unwrap_or_else(|e| panic!("docker-compose {}: {e}", args.join(" ")))
    }

    /// Runs a docker-compose command that must succeed; its stdout.
    pub fn compose_ok(&self, args: &[&str]) -> String {
        let output = succeed(
            &mut self.command(args),
            &format!("docker-compose {}", args.join(" ")),
        );
        String::from_utf8_lossy(&output.stdout).to_string()
    }

    /// Whether the replicas' data is on disks the test can fill.
    pub fn has_disks(&self) -> bool {
        self.disks.is_some()
    }

    /// Fills replica `replica`'s disk to the last byte.
    pub fn fill_disk(&self, replica: u64) -> Result<(), String> {
        match &self.disks {
            Some((disks, _)) => disks.fill(replica),
            None => Err("this venue's replicas have no disk of their own".into()),
        }
    }

    /// Gives replica `replica`'s disk its space back.
    pub fn free_disk(&self, replica: u64) -> Result<(), String> {
        match &self.disks {
            Some((disks, _)) => disks.free(replica),
            None => Err("this venue's replicas have no disk of their own".into()),
        }
    }

    /// The id of `service`'s container.
    pub fn container(&self, service: &str) -> String {
        let id = self.compose_ok(&["ps", "-q", service]).trim().to_string();
        assert!(!id.is_empty(), "{service} has no container");
        id
    }

    /// SIGKILL to `service` (it stays down: [`ComposeVenue::start`]).
    pub fn kill(&self, service: &str) {
        self.compose_ok(&["kill", "-s", "SIGKILL", service]);
    }

    /// SIGTERM to `service`, SIGKILL after ten seconds.
    pub fn stop(&self, service: &str) {
        self.compose_ok(&["stop", "-t", "10", service]);
    }

    /// Starts a killed or stopped `service` on its volume.
    pub fn start(&self, service: &str) {
        self.compose_ok(&["start", service]);
    }

    /// Freezes every process of `service` (SIGSTOP to its cgroup): alive to
    /// the kernel, silent to the others.
    pub fn pause(&self, service: &str) {
        self.compose_ok(&["pause", service]);
    }

    pub fn unpause(&self, service: &str) {
        self.compose_ok(&["unpause", service]);
    }

    /// The network's docker name.
    pub fn network(&self, network: Network) -> String {
        format!("{}_{}", self.project, network.name())
    }

    /// Cuts `service` off `network`: its connections there break.
    pub fn disconnect(&self, service: &str, network: Network) {
        let mut command = Command::new("docker");
        command.args(["network", "disconnect", "--force"]);
        command
            .arg(self.network(network))
            .arg(self.container(service));
        succeed(&mut command, &format!("disconnect {service}"));
    }

    /// Puts `service` back on `network`, at its fixed address if it has
    /// one there (the replicas' and PostgreSQL's on `cluster`).
    pub fn connect(&self, service: &str, network: Network) {
        let mut command = Command::new("docker");
        command.args(["network", "connect"]);
        if let Some(ip) = self
            .fixed_ip(service)
            .filter(|_| network == Network::Cluster)
        {
            command.arg("--ip").arg(ip);
        }
        command
            .arg(self.network(network))
            .arg(self.container(service));
        succeed(&mut command, &format!("connect {service}"));
    }

    /// `service`'s address on `cluster`, when the compose file fixes it.
    pub fn fixed_ip(&self, service: &str) -> Option<String> {
        let host = match service {
            "postgres" => 5,
            "reporter-1" => 21,
            replica => 10 + replica.strip_prefix("replica-")?.parse::<u8>().ok()?,
        };
        Some(format!("{}.{host}", self.cluster_net))
    }

    /// Runs `args` in `service`'s container (`exec -T`); its stdout. The
    /// image has no shell: `args[0]` is a binary's path.
    pub fn exec(&self, service: &str, args: &[&str]) -> String {
        let mut all = vec!["exec", "-T", service];
        all.extend_from_slice(args);
        self.compose_ok(&all)
    }

    /// How many `place` commands of each client order id replica
    /// `replica`'s journal holds, read in its container by `exchange log
    /// dump`.
    pub fn placed_in_journal(&self, replica: u64) -> BTreeMap<String, usize> {
        let service = format!("replica-{replica}");
        let dump = self.exec(
            &service,
            &[
                "/usr/local/bin/exchange",
                "log",
                "dump",
                "/data",
                "--core-only",
            ],
        );
        let mut placed = BTreeMap::new();
        for line in dump.lines() {
            let Ok(command) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if command["cmd"] == "place" {
                let id = command["client_order_id"].as_str().unwrap_or_default();
                *placed.entry(id.to_string()).or_default() += 1;
            }
        }
        placed
    }

    /// A running container's health (`healthy`, `unhealthy`, `starting`),
    /// else its state (`exited`, `paused`...): a stopped container keeps
    /// the health it had last.
    pub fn health(&self, service: &str) -> String {
        let format = "{{if and (eq .State.Status \"running\") .State.Health}}\
                      {{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}";
        let mut command = Command::new("docker");
        command
            .args(["inspect", "--format", format])
            .arg(self.container(service));
        let output = succeed(&mut command, &format!("inspect {service}"));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Until each of `services` is healthy ([`UP_DEADLINE`] at most).
    pub fn wait_healthy(&self, services: &[&str]) {
        let start = Instant::now();
        loop {
            let unhealthy: Vec<(String, String)> = services
                .iter()
                .map(|s| (s.to_string(), self.health(s)))
                .filter(|(_, health)| health != "healthy")
                .collect();
            if unhealthy.is_empty() {
                return;
            }
            assert!(
                start.elapsed() < UP_DEADLINE,
                "not healthy after {} s: {unhealthy:?}",
                UP_DEADLINE.as_secs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last `lines` lines of every container's log.
    pub fn logs(&self, lines: usize) -> String {
        let tail = lines.to_string();
        let output = self.compose(&["logs", "--no-color", "--tail", &tail]);
        String::from_utf8_lossy(&output.stdout).to_string()
    }
}

impl Drop for ComposeVenue {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "compose venue {} at the failure:\n{}",
                self.project,
                self.logs(40)
            );
        }
        let down = self.compose(&["down", "-v", "--timeout", "5"]);
        if !down.status.success() {
            eprintln!(
                "docker-compose down -v failed for {}: {}",
                self.project,
                String::from_utf8_lossy(&down.stderr)
            );
        }
        for tag in self.built.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            remove_image(tag);
        }
    }
}
