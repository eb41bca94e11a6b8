//! Helpers shared by the workspace's integration tests.
//!
//! Most of the kit drives the real `exchange` binary from the outside:
//! [`Server`] starts `exchange serve` on a data directory, [`Client`]
//! speaks plain HTTP/1.1 to it and signs requests, [`ws`] is a WebSocket
//! client, [`ProxiedCluster`] and [`CliCluster`] run Raft clusters of
//! processes, and [`wait_until`] bounds every wait by [`DEADLINE`]. The
//! path of the binary is a parameter: only the `exchange` crate's own tests
//! know it (`env!("CARGO_BIN_EXE_exchange")`). [`compose`] runs the
//! container venue of deploy/compose from that binary.
//!
//! With features, the kit also serves crates that test a library directly:
//! `engine` has the core's command builders, a harness and random command
//! streams; `fix` runs a node with the FIX gateway in-process and has a raw
//! FIX client.

mod cli;
mod cluster;
pub mod compose;
mod http;
pub mod load;
pub mod nemesis;
mod netns;
mod orders_check;
mod ports;
mod rng;
mod server;
mod small_disk;
mod tiers;
mod wait;
pub mod ws;

#[cfg(feature = "engine")]
pub mod engine;
#[cfg(feature = "fix")]
pub mod fix;

pub use cli::{assert_success, node_pid, process_alive, run, run_within};
pub use cluster::{
    converged, leader_among, leader_port, ready_leader, status, CliCluster, Node, ProxiedCluster,
    Proxy,
};
pub use http::{
    build_request, connect_from, limit, parse_response, resting_order, send_raw, send_raw_from,
    sign, signature_headers, units, unix_now_ms, Account, Client, Response, ADMIN_TOKEN,
};
pub use orders_check::{
    each_process_holds_orders_as_expected, open_order_counts, percentile, Expected,
};
pub use ports::{cluster_port_base, free_port, tiered_port_base};
pub use rng::Rng;
pub use server::{copy_dir, last_segment, segments, spawn_serve, Server};
pub use small_disk::{small_disks, SmallDisk};
pub use tiers::{Link, TieredVenue};
pub use wait::{wait_until, OnPanic, DEADLINE};
