//! The exchange server.
//!
//! Data flows one way: gateway → [`sequencer`] (journal, then core) →
//! events → clients. [`node`] recovers a node's state from its data
//! directory; [`state`] is the replicated state machine (core engine, API
//! credentials, open orders); [`reporting`] writes
//! the full record to the reporting store; [`entry`] is the log's vocabulary.

pub mod config;
pub mod demo;
pub mod entry;
pub mod history;
pub mod http;
pub mod limits;
pub mod marketdata;
pub mod metrics;
pub mod metrics_window;
pub mod node;
mod parked;
pub mod replication;
pub mod reporting;
pub mod sequencer;
pub mod server;
pub mod state;
pub mod threads;

pub use entry::LogEntry;
pub use sequencer::{Handle, Pipeline, PipelineConfig, SubmitError};
pub use state::{Applied, ServerState};
