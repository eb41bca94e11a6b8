//! `exchange bench`: measurements of the exchange's parts.
//!
//! `bench engine` times the trading core alone on exchange-core's standard
//! workload (see [`generator`]) or on a given JSON Lines command stream,
//! and runs the same stream through peer order books from crates.io (see
//! [`peer`]). Everything that is not the measured call — generating or
//! parsing commands, following the book, translating for the peers — is
//! done before the clock starts. `BENCHMARKS.md` at the repository root
//! records the figures, `docs/benchmarking.md` the method.

mod auction;
mod codec;
mod e2e;
mod etcd;
mod generator;
mod journal;
mod marketdata;
mod peer;
mod report;
mod rng;
mod sequenced;
mod spells;
mod stream;
mod timing;
mod tracker;
mod workload;

#[cfg(test)]
mod tests;

/// The load shape `bench e2e` and `bench etcd` share.
struct LoadShape<'a> {
    sequential: bool,
    clients: &'a mut usize,
    inflight: &'a mut usize,
    client_threads: usize,
    duration: f64,
    warmup: f64,
}

/// Settles the shape (`--sequential`: one client with one request in
/// flight), checks it, and builds the load generator's runtime: the same
/// for every system driven, so that side-by-side figures compare like
/// with like. It shares the cores with what it measures; scheduled like
/// the server's order path (see `exchange_node::threads`), it adds less
/// of its own waiting to the latencies, as a client on its own machine
/// would.
fn load_generator(shape: LoadShape<'_>) -> anyhow::Result<tokio::runtime::Runtime> {
    if shape.sequential {
        (*shape.clients, *shape.inflight) = (1, 1);
    }
    if *shape.clients == 0 || *shape.inflight == 0 || shape.client_threads == 0 {
        anyhow::bail!("--clients, --inflight and --client-threads must be at least 1");
    }
    if !(shape.duration > 0.0 && shape.warmup >= 0.0) {
        anyhow::bail!("--duration must be positive and --warmup not negative");
    }
    exchange_node::threads::latency_sensitive();
    let runtime = match shape.client_threads {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .on_thread_start(exchange_node::threads::latency_sensitive)
            .build()?,
    };
    Ok(runtime)
}

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
    /// The opening uncross of a 100,000-order call book, and the cost of
    /// an order during the call.
    Auction(auction::AuctionArgs),
    /// The journal alone: append + fdatasync latency of one group commit,
    /// with growing segments and with preallocated ones, taking turns.
    Journal(journal::JournalArgs),
    /// The sequenced path alone, without gateways: commands built in
    /// advance handed to the leader of an in-process cluster, committed
    /// (fsync on) and applied; throughput and commit latency.
    Sequenced(sequenced::SequencedArgs),
    /// Writing and reading a command in the log's two forms, JSON line
    /// and binary, on the standard workload.
    Codec(codec::CodecArgs),
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Engine(args) => workload::run(&args),
        BenchCmd::Marketdata(args) => marketdata::run(args),
        BenchCmd::E2e(args) => e2e::run(args),
        BenchCmd::Etcd(args) => etcd::run(args),
        BenchCmd::Journal(args) => journal::run(args),
        BenchCmd::Auction(args) => auction::run(args),
        BenchCmd::Sequenced(args) => sequenced::run(args),
        BenchCmd::Codec(args) => codec::run(args),
    }
}
use crate::admin_token::from_file_or_env as admin_token;
