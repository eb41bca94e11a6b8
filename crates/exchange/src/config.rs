//! The configuration file (`--config`, docs/server.md): one TOML document
//! whose parts each layer's crate defines and checks. The node's settings
//! (data directory, cluster, queues, snapshots, instruments, schedules,
//! tiers, reporting) are `exchange_node::config::Config`; `[marketdata]`
//! is the market-data service's, `[fix]` the FIX gateway's. Every process
//! reads and checks the whole file, so that each accepts (and refuses) the
//! same one, and then runs with the parts it needs.

use std::path::Path;

use exchange_fix::config::{self as fix, FixConfig};
use exchange_marketdata_service::config::{self as marketdata, MarketDataConfig};
use exchange_node::config::{parse_part, Config, ConfigError, TomlError};
use serde::Deserialize;

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileConfig {
    pub node: Config,
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
    key == marketdata::SECTION || key == fix::SECTION
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
        let sections: Sections = parse_part(text, layer_key)?;
        Ok(FileConfig {
            node,
            marketdata: sections.marketdata,
            fix: sections.fix,
        })
    }

    /// Refuses values no process should run with, naming the field.
    pub fn check(&self) -> Result<(), String> {
        self.node.check()
    }

    /// What `exchange_server::run_tier` runs with (the FIX gateway is
    /// started by the binary, with [`FileConfig::fix`]).
    pub fn server(self) -> exchange_server::ServerConfig {
        exchange_server::ServerConfig {
            node: self.node,
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
        let error = refused("[marketdata]\nheartbeat = 5\n");
        assert!(error.contains("unknown field `heartbeat`"), "{error}");
        let error = refused("[fix]\nlisten = \"127.0.0.1:1\"\nmax_clock_skew = 5\n");
        assert!(error.contains("unknown field `max_clock_skew`"), "{error}");
        let error = refused("[[fix.sessions]]\nsender_comp_id = \"A\"\npasword = \"p\"\n");
        assert!(error.contains("unknown field `pasword`"), "{error}");
        let error = refused("lisen = \"127.0.0.1:1\"\n");
        assert!(error.contains("unknown field `lisen`"), "{error}");
        let error = refused("[reporting]\nurll = \"x\"\n");
        assert!(error.contains("unknown field `urll`"), "{error}");
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        assert_eq!(FileConfig::parse("").unwrap(), FileConfig::default());
    }

    #[test]
    fn the_sections_reach_their_parts() {
        let text = concat!(
            "listen = \"127.0.0.1:9999\"\n",
            "[marketdata]\nheartbeat_ms = 50\n",
            "[cluster]\nnode_id = 3\n",
            "[[fix.sessions]]\nsender_comp_id = \"A\"\npassword = \"p\"\naccount = 7\n",
        );
        let config = FileConfig::parse(text).unwrap();
        assert_eq!(config.node.listen.port(), 9999);
        assert_eq!(config.node.cluster.node_id, 3);
        assert_eq!(config.marketdata.heartbeat_ms, 50);
        assert_eq!(config.fix.sessions[0].account, Some(7));
    }
}
