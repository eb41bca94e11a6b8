//! `exchange bench`: measurements of the exchange's parts.
//!
//! `bench engine` times the trading core alone on exchange-core's standard
//! workload (see [`generator`]) or on a given JSON Lines command stream,
//! and runs the same stream through peer order books from crates.io (see
//! [`peer`]). Everything that is not the measured call — generating or
//! parsing commands, following the book, translating for the peers — is
//! done before the clock starts. `BENCHMARKS.md` at the repository root
//! records the method and the figures.

mod e2e;
mod etcd;
mod generator;
mod marketdata;
mod peer;
mod report;
mod rng;
mod stream;
mod timing;
mod tracker;
mod workload;

#[cfg(test)]
mod tests;

pub use workload::EngineArgs;

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// The trading core alone: throughput, latency percentiles and peak
    /// memory on the standard workload, beside peer order books.
    Engine(EngineArgs),
    /// Public level2 channel: first-to-last subscriber spread and publish
    /// rate with a thousand WebSocket subscribers.
    Marketdata(marketdata::MarketdataArgs),
    /// The whole server under order entry: acknowledged orders/s and ack
    /// latency over WebSocket or REST, fsync on.
    E2e(e2e::E2eArgs),
    /// A running etcd's put throughput and latency through its v3 JSON
    /// gateway, in `bench e2e`'s shape: the baseline for a Raft cluster.
    Etcd(etcd::EtcdArgs),
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Engine(args) => workload::run(&args),
        BenchCmd::Marketdata(args) => marketdata::run(args),
        BenchCmd::E2e(args) => e2e::run(args),
        BenchCmd::Etcd(args) => etcd::run(args),
    }
}
