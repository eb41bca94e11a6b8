//! `exchange feed listen`: receives the binary market-data feed (MoldUDP64
//! over UDP), recovers lost packets from the TCP retransmission service,
//! rebuilds every book and prints them (docs/marketdata.md).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use anyhow::Context;
use exchange_marketdata::client::{ClientConfig, FeedClient};

#[derive(clap::Subcommand)]
pub enum FeedCmd {
    /// Rebuild the books from the binary feed and print them.
    Listen(ListenArgs),
}

#[derive(clap::Args, Debug)]
pub struct ListenArgs {
    /// UDP address to receive on: one of the server's `feed_targets`, or
    /// the multicast group's port (with --group).
    #[arg(long, default_value = "127.0.0.1:30001")]
    listen: SocketAddr,
    /// Multicast group to join.
    #[arg(long)]
    group: Option<Ipv4Addr>,
    /// Local interface for the multicast group.
    #[arg(long, default_value = "0.0.0.0")]
    interface: Ipv4Addr,
    /// The server's retransmission and snapshot service (`retransmit_listen`).
    #[arg(long, default_value = "127.0.0.1:30002")]
    service: SocketAddr,
    /// Levels printed per side.
    #[arg(long, default_value_t = 10)]
    depth: usize,
    /// Milliseconds between prints.
    #[arg(long, default_value_t = 1_000)]
    every_ms: u64,
    /// Stop after this many prints (0: run until interrupted).
    #[arg(long, default_value_t = 0)]
    count: u64,
    /// Drop one received packet in this many, to watch recovery (0: none).
    #[arg(long, default_value_t = 0)]
    drop_one_in: u32,
}

pub fn run(cmd: FeedCmd) -> anyhow::Result<()> {
    let FeedCmd::Listen(args) = cmd;
    let config = ClientConfig {
        listen: args.listen,
        multicast: args.group.map(|group| (group, args.interface)),
        service: args.service,
        drop_one_in: args.drop_one_in,
        seed: 1,
    };
    let mut client = FeedClient::connect(&config)
        .with_context(|| format!("connecting to the feed (service {})", args.service))?;
    let every = Duration::from_millis(args.every_ms.max(1));
    let mut printed = 0;
    let mut next_print = Instant::now();
    loop {
        let now = Instant::now();
        if now >= next_print {
            let stats = client.stats();
            println!(
                "--- next sequence {}  packets {}  dropped {}  gaps {}  \
                 retransmitted {}  snapshots {}",
                client.next_seq(),
                stats.packets,
                stats.dropped,
                stats.gaps,
                stats.retransmitted,
                stats.snapshots
            );
            print!("{}", client.books().render(args.depth));
            printed += 1;
            if args.count > 0 && printed >= args.count {
                return Ok(());
            }
            next_print = now + every;
        }
        client.poll(next_print.saturating_duration_since(Instant::now()))?;
        if client.ended() {
            println!("--- the server ended the session");
            print!("{}", client.books().render(args.depth));
            return Ok(());
        }
    }
}
