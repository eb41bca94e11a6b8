//! `exchange bench`: measurements of the exchange's parts.
//!
//! `bench engine` times the trading core alone on exchange-core's standard
//! workload (see [`generator`]) or on a given JSON Lines command stream,
//! and runs the same stream through peer order books from crates.io (see
//! [`peer`]). Everything that is not the measured call — generating or
//! parsing commands, following the book, translating for the peers — is
//! done before the clock starts. `BENCHMARKS.md` at the repository root
//! records the method and the figures.

mod generator;
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
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Engine(args) => workload::run(&args),
    }
}
