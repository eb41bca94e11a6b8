//! Server settings: embedded defaults, optionally overridden by a TOML file
//! (`--config`) and then by command-line flags. Every field is documented
//! in docs/server.md.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::config_part::parse_part;
pub use toml::de::Error as TomlError;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {path}: {source}")]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("invalid config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// One instrument listed at start-up (if not listed already), in the
/// replay format's field names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstrumentConfig {
    pub symbol: String,
    pub base: String,
    pub quote: String,
    pub tick_size: String,
    pub lot_size: String,
    #[serde(default)]
    pub min_qty: Option<String>,
    #[serde(default)]
    pub max_qty: Option<String>,
    #[serde(default)]
    pub price_collar_pct: Option<String>,
    #[serde(default)]
    pub reference_price: Option<String>,
    pub maker_fee_bps: i32,
    pub taker_fee_bps: i32,
    #[serde(default)]
    pub min_notional: Option<String>,
    /// Volatility bands (docs/market-model.md): half-widths in percent
    /// around the last auction price and the last trade, and how long the
    /// volatility auction a trade outside them starts lasts.
    #[serde(default)]
    pub static_band_pct: Option<String>,
    #[serde(default)]
    pub dynamic_band_pct: Option<String>,
    #[serde(default)]
    pub volatility_auction_ns: Option<u64>,
    /// How the auction price uses the reference price: `limit_nearest`
    /// (Xetra's, what a listing left without one gets) or `reference`
    /// (Euronext's).
    #[serde(default)]
    pub reference_price_rule: Option<String>,
    /// The phase the instrument is listed in (`pre_open`, `closed`,
    /// `halted`, ...); unset: `continuous`. Only a listing that is missing
    /// at start-up is listed, so it does not move a listed instrument.
    #[serde(default)]
    pub phase: Option<String>,
    /// The smallest value (price times quantity, in the quote asset) a
    /// hidden order may have; unset: the instrument takes no hidden orders.
    #[serde(default)]
    pub hidden_min_notional: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Journal, snapshots and the generated admin token live here.
    pub data_dir: PathBuf,
    /// HTTP and WebSocket address.
    pub listen: SocketAddr,
    /// File holding the master key HMAC API secrets are derived from (64
    /// hex digits, mode 0600 or 0400). `EXCHANGE_MASTER_KEY`, when set,
    /// wins over it; with neither, the file `master_key` in the data
    /// directory, generated on first start. Every node of a cluster needs
    /// the same key.
    pub master_key_file: Option<PathBuf>,
    /// A file holding the admin bearer token; else `EXCHANGE_ADMIN_TOKEN`;
    /// else one is generated into `DATA_DIR/admin_token`. Never the token
    /// itself: a configuration file or command line is too easily read.
    pub admin_token_file: Option<PathBuf>,
    /// Instruments listed at start-up if missing.
    pub instruments: Vec<InstrumentConfig>,
    /// Commands waiting for the journal before new ones get 503.
    pub submit_queue: usize,
    /// Batches waiting for the core.
    pub core_queue: usize,
    /// Applied entries buffered for each event subscriber. A reporter that
    /// falls further behind re-derives what it missed from the journal,
    /// replaying the core for each entry (about a third more CPU an entry
    /// than taking it live), so under a sustained rate near its own it
    /// never gets back to the live path: the default holds about 1.7 s of
    /// entries at 150,000/s, room for the stalls of a busy machine.
    pub events_buffer: usize,
    /// Commands between snapshots (0 disables them). Each snapshot stalls
    /// the core thread while it copies the state (milliseconds), and a
    /// restart replays at most this many commands (about 350,000 a second
    /// on the benchmark machine).
    pub snapshot_every: u64,
    /// Write journal segments full of zeros ahead of need, so that the
    /// log's syncs write data only, not the file's growing size.
    pub journal_preallocate: bool,
    /// The reporting store (docs/reporting.md).
    pub reporting: ReportingConfig,
    /// Raft replication (docs/replication.md); absent: a single node.
    pub cluster: ClusterConfig,
    /// A tiered venue: replicas' ingress and log stream, and where a
    /// gateway finds them (docs/deploy.md).
    pub tiers: crate::tiers_config::TiersConfig,
    /// Trading-day schedules (`[[schedule]]`, docs/schedule.md); an
    /// instrument in none trades continuously around the clock.
    #[serde(rename = "schedule")]
    pub schedules: Vec<crate::schedule::ScheduleConfig>,
    /// The leader logs a `tick` when nothing was logged for this many
    /// milliseconds, so that what falls due with time alone (expiry, the
    /// end of a volatility auction) happens without traffic; 0: never.
    pub tick_ms: u64,
}

/// The `[reporting]` section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportingConfig {
    /// Whether this node writes a reporting store at all. Off, its history
    /// reads answer `503 reporting_disabled`, and its cores do nothing but
    /// trading: for a node whose history is served elsewhere.
    pub enabled: bool,
    /// `postgres://user:password@host/db`, or `sqlite:PATH`; unset: the
    /// SQLite file `reporting.sqlite` in the data directory.
    pub url: Option<String>,
    /// Log entries written in one transaction at most.
    pub max_batch: usize,
    /// How long a batch waits for more entries after its first, in
    /// milliseconds: fewer, larger transactions.
    pub linger_ms: u64,
    /// How long a history request waits for the store to catch up with
    /// the core before answering 503.
    pub read_wait_ms: u64,
    /// The reporter thread runs in the background (Linux `SCHED_IDLE`):
    /// when the cores are busy, order entry goes first and the store
    /// falls behind, catching up when they are free.
    pub background: bool,
    /// The CPUs the reporter thread keeps to once in the background:
    /// `"auto"` (the last CPU the process may use, when it may use two or
    /// more), `"any"`, or a list such as `"3"`, `"2-3"` or `"1,3"`. Its
    /// pages stream through one CPU's caches, not every CPU's.
    pub cpus: crate::threads::CpuPlacement,
}

impl Default for ReportingConfig {
    fn default() -> Self {
        ReportingConfig {
            enabled: true,
            url: None,
            max_batch: 4_096,
            linger_ms: 5,
            read_wait_ms: 5_000,
            background: true,
            cpus: crate::threads::CpuPlacement::Auto,
        }
    }
}

/// The `[cluster]` section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// This node's id (1, 2, ...).
    pub node_id: u64,
    /// `"ID=HOST:PORT"` Raft addresses of every voter of a new cluster,
    /// this node included (its own is where it listens; a name there
    /// listens on every interface). Names are resolved at each connection
    /// attempt. Empty: a single node.
    pub peers: Vec<String>,
    /// `"ID=http://HOST:PORT"` HTTP addresses of the nodes, named in the
    /// `not_leader` answer a follower gives to writes.
    pub http: Vec<String>,
    /// Raft clock tick, in milliseconds.
    pub tick_ms: u64,
    /// Ticks without hearing from a leader before an election (randomised
    /// up to twice this).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// Join a running cluster instead of founding one: start with no
    /// voters and wait for the leader to add this node.
    pub join: bool,
    /// File holding the cluster key (64 hex digits, mode 0600 or 0400),
    /// the same on every node: the Raft port talks to its holders only.
    /// Required with peers; a single node needs none. Never the key
    /// itself: a configuration file is too easily read.
    pub key_file: Option<PathBuf>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            node_id: 1,
            peers: Vec::new(),
            http: Vec::new(),
            tick_ms: 50,
            election_ticks: 8,
            heartbeat_ticks: 2,
            join: false,
            key_file: None,
        }
    }
}

impl ClusterConfig {
    pub fn settings(
        &self,
    ) -> Result<crate::replication::ClusterSettings, crate::replication::ClusterError> {
        let settings = crate::replication::ClusterSettings {
            node_id: self.node_id,
            peers: crate::replication::parse_peers(&self.peers)?,
            tick: std::time::Duration::from_millis(self.tick_ms),
            election_ticks: self.election_ticks,
            heartbeat_ticks: self.heartbeat_ticks,
            join: self.join,
            preallocate_journal: true,
            key: match &self.key_file {
                Some(path) => Some(
                    crate::cluster_key::load(path)
                        .map_err(|e| crate::replication::ClusterError::Key(e.to_string()))?,
                ),
                None => None,
            },
        };
        settings.validate()?;
        Ok(settings)
    }

    /// The configured HTTP address of each node.
    pub fn http_urls(
        &self,
    ) -> Result<std::collections::BTreeMap<u64, String>, crate::replication::ClusterError> {
        let mut urls = std::collections::BTreeMap::new();
        for item in &self.http {
            let bad = || crate::replication::ClusterError::BadPeer(item.clone());
            let (id, url) = item.split_once('=').ok_or_else(bad)?;
            let id: u64 = id.trim().parse().map_err(|_| bad())?;
            urls.insert(id, url.trim().trim_end_matches('/').to_string());
        }
        Ok(urls)
    }
}

fn instrument(
    symbol: &str,
    base: &str,
    tick: &str,
    lot: &str,
    reference: &str,
) -> InstrumentConfig {
    InstrumentConfig {
        symbol: symbol.into(),
        base: base.into(),
        quote: "USD".into(),
        tick_size: tick.into(),
        lot_size: lot.into(),
        min_qty: None,
        max_qty: None,
        price_collar_pct: Some("10".into()),
        reference_price: Some(reference.into()),
        maker_fee_bps: -1,
        taker_fee_bps: 5,
        min_notional: None,
        static_band_pct: None,
        dynamic_band_pct: None,
        volatility_auction_ns: None,
        reference_price_rule: None,
        phase: None,
        hidden_min_notional: None,
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            master_key_file: None,
            admin_token_file: None,
            instruments: vec![
                instrument("BTC-USD", "BTC", "0.01", "0.0001", "60000.00"),
                instrument("ETH-USD", "ETH", "0.01", "0.001", "3000.00"),
            ],
            submit_queue: 65_536,
            core_queue: 1_024,
            events_buffer: 262_144,
            snapshot_every: 1_000_000,
            journal_preallocate: true,
            reporting: ReportingConfig::default(),
            cluster: ClusterConfig::default(),
            tiers: crate::tiers_config::TiersConfig::default(),
            schedules: Vec::new(),
            tick_ms: 1_000,
        }
    }
}

impl Config {
    /// Refuses values no server should run with, naming the field.
    pub fn check(&self) -> Result<(), String> {
        use crate::limits::{MAX_CORE_QUEUE, MAX_EVENTS_BUFFER, MAX_SUBMIT_QUEUE};
        let queues = [
            ("submit_queue", self.submit_queue, MAX_SUBMIT_QUEUE),
            ("core_queue", self.core_queue, MAX_CORE_QUEUE),
            ("events_buffer", self.events_buffer, MAX_EVENTS_BUFFER),
        ];
        for (name, value, max) in queues {
            if !(1..=max).contains(&value) {
                return Err(format!("{name} = {value}: must be 1 to {max}"));
            }
        }
        crate::schedule::build(&self.schedules).map_err(|error| error.to_string())?;
        Ok(())
    }

    /// The scheduler's settings (schedules checked by [`Config::check`]).
    pub fn scheduler(&self) -> Result<crate::scheduler::SchedulerConfig, String> {
        Ok(crate::scheduler::SchedulerConfig {
            schedules: crate::schedule::build(&self.schedules)
                .map_err(|error| error.to_string())?,
            tick_interval: (self.tick_ms > 0)
                .then(|| std::time::Duration::from_millis(self.tick_ms)),
            poll: std::time::Duration::from_millis(100),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_through_toml() {
        let text = toml::to_string(&Config::default()).unwrap();
        let parsed: Config = toml::from_str(&text).unwrap();
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn a_queue_of_zero_or_past_its_limit_is_refused() {
        assert_eq!(Config::default().check(), Ok(()));
        for (text, field) in [
            ("events_buffer = 0", "events_buffer"),
            ("core_queue = 0", "core_queue"),
            ("submit_queue = 0", "submit_queue"),
            ("events_buffer = 4194305", "events_buffer"),
            ("submit_queue = 1048577", "submit_queue"),
            ("core_queue = 65537", "core_queue"),
        ] {
            let parsed: Config = toml::from_str(text).unwrap();
            let refused = parsed.check().unwrap_err();
            assert!(refused.starts_with(field), "{text}: {refused}");
        }
        let largest: Config = toml::from_str("events_buffer = 4194304").unwrap();
        assert_eq!(largest.check(), Ok(()));
    }

    #[test]
    fn partial_file_keeps_other_defaults_and_typos_are_refused() {
        let parsed: Config = toml::from_str("listen = \"127.0.0.1:9999\"\n").unwrap();
        assert_eq!(parsed.listen.port(), 9999);
        assert_eq!(parsed.instruments.len(), 2);
        assert!(toml::from_str::<Config>("lisen = \"x\"\n").is_err());
    }

    #[test]
    fn the_admin_token_is_never_inline() {
        assert!(toml::from_str::<Config>("admin_token = \"x\"\n").is_err());
        let parsed: Config = toml::from_str("admin_token_file = \"/run/secrets/admin\"\n").unwrap();
        assert_eq!(
            parsed.admin_token_file,
            Some(PathBuf::from("/run/secrets/admin"))
        );
    }

    #[test]
    fn reporting_section_parses() {
        let parsed: Config = toml::from_str("[reporting]\nurl = \"postgres://u@h/db\"\n").unwrap();
        assert_eq!(parsed.reporting.url.as_deref(), Some("postgres://u@h/db"));
        assert_eq!(parsed.reporting.max_batch, 4_096);
        assert!(toml::from_str::<Config>("[reporting]\nurll = \"x\"\n").is_err());
        assert_eq!(parsed.reporting.cpus, crate::threads::CpuPlacement::Auto);
        let pinned: Config = toml::from_str("[reporting]\ncpus = \"1,3\"\n").unwrap();
        assert_eq!(
            pinned.reporting.cpus,
            crate::threads::CpuPlacement::Cpus(vec![1, 3])
        );
        let refused = toml::from_str::<Config>("[reporting]\ncpus = \"last\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("\"last\" is not a CPU number"),
            "{refused}"
        );
    }

    #[test]
    fn cluster_section_parses_and_is_checked() {
        let text = concat!(
            "[cluster]\nnode_id = 2\n",
            "peers = [\"1=127.0.0.1:7001\", \"2=127.0.0.1:7002\", \"3=127.0.0.1:7003\"]\n",
            "tick_ms = 20\n",
        );
        let mut parsed: Config = toml::from_str(text).unwrap();
        // Secure by default: peers, and no key, is no start.
        assert_eq!(
            parsed.cluster.settings(),
            Err(crate::replication::ClusterError::NoKey)
        );
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join(crate::cluster_key::CLUSTER_KEY_FILE);
        let key = crate::cluster_key::load_or_generate(&key_file).unwrap();
        parsed.cluster.key_file = Some(key_file);
        let settings = parsed.cluster.settings().unwrap();
        assert_eq!(settings.key, Some(key));
        assert_eq!(settings.node_id, 2);
        assert_eq!(settings.voters(), vec![1, 2, 3]);
        assert_eq!(settings.others().len(), 2);
        assert_eq!(settings.tick, std::time::Duration::from_millis(20));
        let mut missing = parsed.cluster.clone();
        missing.node_id = 4;
        assert_eq!(
            missing.settings(),
            Err(crate::replication::ClusterError::SelfMissing(4))
        );
        let mut bad = parsed.cluster.clone();
        bad.peers.push("x=1".into());
        assert!(matches!(
            bad.settings(),
            Err(crate::replication::ClusterError::BadPeer(_))
        ));
        let mut slow = parsed.cluster;
        slow.heartbeat_ticks = slow.election_ticks;
        assert!(matches!(
            slow.settings(),
            Err(crate::replication::ClusterError::Timings { .. })
        ));
        assert_eq!(
            Config::default().cluster.settings().unwrap().voters(),
            vec![1]
        );
        let mut missing_file = Config::default().cluster;
        missing_file.key_file = Some(dir.path().join("nope"));
        assert!(matches!(
            missing_file.settings(),
            Err(crate::replication::ClusterError::Key(_))
        ));
    }

    #[test]
    fn schedule_sections_parse_and_are_checked_by_field() {
        let text = r#"
tick_ms = 500

[[schedule]]
name = "xetra"
symbols = ["SAP-EUR"]
time_zone = "Europe/Berlin"
pre_open = "08:00"
open = "09:00"
closing_call = "17:30"
close = "17:35"
closed = "20:00"
holidays = ["2026-12-24"]
"#;
        let parsed: Config = toml::from_str(text).unwrap();
        assert_eq!(parsed.tick_ms, 500);
        assert_eq!(parsed.schedules.len(), 1);
        assert_eq!(parsed.schedules[0].trading_days, None);
        parsed.check().unwrap();
        let scheduler = parsed.scheduler().unwrap();
        assert_eq!(scheduler.schedules[0].symbols, ["SAP-EUR"]);
        assert_eq!(
            scheduler.tick_interval,
            Some(std::time::Duration::from_millis(500))
        );
        let bad: Config = toml::from_str(&text.replace("Europe/Berlin", "Mars/Olympus")).unwrap();
        let error = bad.check().unwrap_err();
        assert!(error.contains("schedule \"xetra\": time_zone"), "{error}");
        assert!(toml::from_str::<Config>(&text.replace("holidays", "holiday")).is_err());
        assert_eq!(Config::default().scheduler().unwrap().schedules.len(), 0);
        let silent = Config {
            tick_ms: 0,
            ..Config::default()
        };
        assert_eq!(silent.scheduler().unwrap().tick_interval, None);
    }
}
