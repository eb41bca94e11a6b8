//! The configuration file (`--config`, docs/server.md): one TOML document
//! whose parts each layer's crate defines and checks. The node's settings
//! (data directory, cluster, queues, snapshots, instruments, schedules,
//! tiers, reporting) are `exchange_node::config::Config`; the API's limits
//! (`rate_limit_per_sec`, `rate_limit_burst`, `max_body_bytes`,
//! `recv_window_ms`) and `[http]` are the HTTP gateway's; `[marketdata]`
//! is the market-data service's, `[fix]` the FIX gateway's. Every process
//! reads and checks the whole file, so that each accepts (and refuses) the
//! same one, and then runs with the parts it needs.

use std::path::Path;

use exchange_fix::config::{self as fix, FixConfig};
use exchange_gateway::config::GatewayConfig;
use exchange_marketdata_service::config::{self as marketdata, MarketDataConfig};
use exchange_node::config::{parse_part, Config, ConfigError, TomlError};
use serde::Deserialize;

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileConfig {
    pub node: Config,
    pub gateway: GatewayConfig,
    pub marketdata: MarketDataConfig,
    pub fix: FixConfig,
}

/// The sections the node does not own, as they sit in the file.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Sections {
    marketdata: MarketDataConfig,
    fix: FixConfig,
}

/// Whether a top-level key of the file belongs to a layer other than the
/// node.
fn layer_key(key: &str) -> bool {
    key == marketdata::SECTION || key == fix::SECTION || GatewayConfig::KEYS.contains(&key)
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        let config = FileConfig::parse(&text).map_err(|source| ConfigError::Parse {
            path: path.into(),
            source,
        })?;
        config.check().map_err(|message| ConfigError::Invalid {
            path: path.into(),
            message,
        })?;
        Ok(config)
    }

    /// Each part from the text, unknown keys refused by the part whose
    /// section they are in (or the node's, at the top level).
    pub fn parse(text: &str) -> Result<FileConfig, TomlError> {
        let node: Config = parse_part(text, |key| !layer_key(key))?;
        let gateway: GatewayConfig = parse_part(text, |key| GatewayConfig::KEYS.contains(&key))?;
        let sections: Sections = parse_part(text, |key| {
            key == marketdata::SECTION || key == fix::SECTION
        })?;
        Ok(FileConfig {
            node,
            gateway,
            marketdata: sections.marketdata,
            fix: sections.fix,
        })
    }

    /// Refuses values no process should run with, naming the field.
    pub fn check(&self) -> Result<(), String> {
        self.gateway.check()?;
        self.node.check()
    }

    /// What `exchange_server::run_tier` runs with (the FIX gateway is
    /// started by the binary, with [`FileConfig::fix`]).
    pub fn server(self) -> exchange_server::ServerConfig {
        exchange_server::ServerConfig {
            node: self.node,
            gateway: self.gateway,
            marketdata: self.marketdata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        FileConfig::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn each_section_refuses_its_unknown_keys_by_name() {
        for (text, key) in [
            (
                "[http]\nmax_connections = 10\nmax_conections = 5\n",
                "max_conections",
            ),
            (
                "[http.tls]\ncert_path = \"c\"\nkey_path = \"k\"\nkey = \"x\"\n",
                "key",
            ),
            ("[fix]\nmax_clock_skew = 5\n", "max_clock_skew"),
            (
                "[[fix.sessions]]\nsender_comp_id = \"A\"\npasword = \"p\"\n",
                "pasword",
            ),
            ("[marketdata]\nheartbeat = 5\n", "heartbeat"),
            ("lisen = \"127.0.0.1:1\"\n", "lisen"),
            ("rate_limit = 5\n", "rate_limit"),
            ("[reporting]\nurll = \"x\"\n", "urll"),
        ] {
            let error = refused(text);
            assert!(error.contains(&format!("unknown field `{key}`")), "{error}");
        }
        // Inside a section the error still points at the line.
        let error = refused("[http]\nmax_connections = 10\nmax_conections = 5\n");
        assert!(error.contains("line 3"), "{error}");
        let error = refused("[marketdata]\nheartbeat_ms = \"soon\"\n");
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(FileConfig::parse("").unwrap(), FileConfig::default());
    }

    #[test]
    fn the_keys_reach_their_parts() {
        let text = concat!(
            "listen = \"127.0.0.1:9999\"\n",
            "rate_limit_per_sec = 7\nmax_body_bytes = 256\n",
            "[http]\nmetrics_auth = false\n",
            "[marketdata]\nheartbeat_ms = 50\n",
            "[cluster]\nnode_id = 3\n",
            "[[fix.sessions]]\nsender_comp_id = \"A\"\npassword = \"p\"\naccount = 7\n",
        );
        let config = FileConfig::parse(text).unwrap();
        assert_eq!(config.node.listen.port(), 9999);
        assert_eq!(config.node.cluster.node_id, 3);
        assert_eq!(config.gateway.rate_limit_per_sec, 7);
        assert_eq!(config.gateway.rate_limit_burst, 4_000);
        assert_eq!(config.gateway.max_body_bytes, 256);
        assert!(!config.gateway.http.metrics_auth);
        assert_eq!(config.marketdata.heartbeat_ms, 50);
        assert_eq!(config.fix.sessions[0].account, Some(7));
    }

    #[test]
    fn loading_checks_the_values_of_every_part() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exchange.toml");
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            FileConfig::load(&path)
        };
        let wide = load("recv_window_ms = 60000\n").unwrap();
        assert_eq!(wide.gateway.recv_window_ms, 60_000);
        for bad in ["recv_window_ms = 0\n", "recv_window_ms = 60001\n"] {
            let error = load(bad).unwrap_err().to_string();
            assert!(
                error.contains("recv_window_ms must be between 1 and 60000"),
                "{error}"
            );
        }
        let error = load(
            "[[schedule]]\nname = \"x\"\nsymbols = [\"BTC-USD\"]\ntime_zone = \"Mars/Olympus\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("time_zone"), "{error}");
        assert!(load("admin_token = \"x\"\n").is_err());
    }

    /// Every TOML example in the documentation is a file the processes take.
    #[test]
    fn the_documented_examples_parse() {
        let docs = [
            include_str!("../../../docs/server.md"),
            include_str!("../../../docs/fix.md"),
            include_str!("../../../docs/marketdata.md"),
            include_str!("../../../docs/reporting.md"),
            include_str!("../../../docs/replication.md"),
            include_str!("../../../docs/schedule.md"),
        ];
        let mut examples = 0;
        for doc in docs {
            for block in doc.split("```toml\n").skip(1) {
                let example = block.split("```").next().unwrap_or_default();
                let parsed = FileConfig::parse(example);
                assert!(parsed.is_ok(), "{example}\n{parsed:?}");
                examples += 1;
            }
        }
        assert!(examples >= 5, "{examples} examples");
    }
}
