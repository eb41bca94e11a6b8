//! The exchange node: everything between a gateway's submission and the
//! applied events, and nothing a client sees.
//!
//! Data flows one way: a gateway submits a [`LogEntry`] through the
//! [`Handle`]; the Raft thread ([`replication`]) makes it durable on a
//! majority; the core thread ([`sequencer`]) applies committed entries to
//! the [`ServerState`] (and the history beside it, [`core_state`]) and
//! publishes each [`Applied`] outcome, which the
//! gateways, the market-data service and the reporter consume.
//! [`recovery`] rebuilds a node's state from its data directory.
//!
//! Layers above this crate (gateway, market data, reporter, demo, server)
//! depend on it; it depends on none of them.

pub mod admission;
pub mod cluster_key;
pub mod config;
mod config_part;
pub mod core_state;
pub mod entry;
pub mod fix_links;
#[cfg(test)]
#[path = "fix_links_tests.rs"]
mod fix_links_tests;
pub mod formats;
pub mod history;
pub mod ingress;
pub mod instruments;
pub mod key_rules;
#[cfg(test)]
mod key_rules_tests;
pub mod keys;
#[cfg(test)]
mod keys_tests;
pub mod limits;
pub mod log_files;
pub mod master_key;
pub mod metrics;
pub mod metrics_window;
pub mod mirror;
mod parked;
mod pipeline;
pub mod prometheus;
mod publisher;
pub mod reads;
pub mod recovery;
pub mod replay_guard;
#[cfg(test)]
mod replay_guard_tests;
pub mod replication;
pub mod schedule;
pub mod scheduler;
pub mod secret_file;
pub mod sequencer;
pub mod sessions;
#[cfg(test)]
mod sessions_expiry_prop_tests;
#[cfg(test)]
mod sessions_expiry_tests;
#[cfg(test)]
mod sessions_prop_tests;
#[cfg(test)]
mod sessions_tests;
mod snapshot_writer;
pub mod source;
pub mod state;
pub mod stream;
pub mod threads;
pub mod tiers_config;

pub use core_state::CoreState;
pub use entry::LogEntry;
pub use reads::{MarketQuery, OrderQuery};
pub use sequencer::{Handle, Pipeline, PipelineConfig, SubmitError};
pub use state::{Applied, ServerState};

/// Random bytes as lowercase hex, for tokens, keys and secrets.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source");
    hex::encode(buf)
}

/// Starts a gateway beside the node once it has recovered (the FIX gateway
/// is one). It gets a signal that turns true at shutdown and returns the
/// task to wait for before the pipeline stops.
pub type GatewayStart = Box<
    dyn FnOnce(
            &Handle,
            &config::Config,
            tokio::sync::watch::Receiver<bool>,
        ) -> Result<tokio::task::JoinHandle<()>, String>
        + Send,
>;

/// Path of the data directory's pid file (used by the cluster tooling).
pub fn pid_file(data_dir: &std::path::Path) -> std::path::PathBuf {
    data_dir.join("pid")
}
