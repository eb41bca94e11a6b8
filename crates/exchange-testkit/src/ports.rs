//! Free ports for servers and clusters that the tests start.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Ports below this are left to well-known services.
const LOW: u32 = 10_000;

/// The first port of the kernel's ephemeral range.
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768)
}

fn bindable(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The first of many candidates in `LOW..below` that `free` accepts.
/// Candidates are spread over the range so parallel tests (and processes)
/// rarely try the same one.
fn spread(below: u32, mut free: impl FnMut(u16) -> bool) -> Option<u16> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seed = u64::from(std::process::id()) << 32 ^ u64::from(unix_nanos_low());
    (0..10_000).find_map(|_| {
        let mut x = seed
            .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 31;
        let port = (LOW + (x % u64::from(below - LOW)) as u32) as u16;
        free(port).then_some(port)
    })
}

/// A port nobody listened on a moment ago, below the kernel's ephemeral
/// range: a port from that range can become any outgoing connection's
/// source port while a test's node is down for a restart, and the node
/// then cannot listen on it again ("Address already in use").
pub fn free_port() -> u16 {
    let ephemeral_low = ephemeral_low();
    if ephemeral_low <= LOW + 1_000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        return listener.local_addr().expect("local address").port();
    }
    spread(ephemeral_low, bindable).unwrap_or_else(|| panic!("no free port below {ephemeral_low}"))
}

/// A `--port-base` for `exchange cluster up`, whose node `n` listens on
/// `base + n` (HTTP) and `base + 100 + n` (Raft): every port of nodes
/// `1..=nodes` is free, below the ephemeral range for the reason
/// [`free_port`] gives.
pub fn cluster_port_base(nodes: u16) -> u16 {
    let top = 100 + u32::from(nodes);
    let ephemeral_low = ephemeral_low();
    let below = if ephemeral_low > LOW + 1_000 + top {
        ephemeral_low - top
    } else {
        u32::from(u16::MAX) - top
    };
    spread(below, |base| {
        (1..=nodes)
            .flat_map(|n| [base + n, base + 100 + n])
            .all(bindable)
    })
    .unwrap_or_else(|| panic!("no free ports for {nodes} nodes"))
}

/// A `--port-base` for `exchange cluster up` with gateways: besides the
/// nodes' HTTP and Raft ports, their ingress (`base + 200 + n`) and log
/// stream (`base + 300 + n`), gateway `k`'s HTTP (`base + 400 + k`),
/// market-data gateway `k`'s (`base + 500 + k`) and reporter `k`'s
/// (`base + 600 + k`) are free.
pub fn tiered_port_base(nodes: u16, (gateways, md_gateways, reporters): (u16, u16, u16)) -> u16 {
    let top = 600 + u32::from(nodes.max(gateways).max(md_gateways).max(reporters));
    let ephemeral_low = ephemeral_low();
    let below = if ephemeral_low > LOW + 1_000 + top {
        ephemeral_low - top
    } else {
        u32::from(u16::MAX) - top
    };
    spread(below, |base| {
        let nodes = (1..=nodes).flat_map(|n| [n, 100 + n, 200 + n, 300 + n]);
        let gateways = (1..=gateways).map(|k| 400 + k);
        let md = (1..=md_gateways).map(|k| 500 + k);
        let reporters = (1..=reporters).map(|k| 600 + k);
        nodes
            .chain(gateways)
            .chain(md)
            .chain(reporters)
            .all(|offset| bindable(base + offset))
    })
    .unwrap_or_else(|| panic!("no free ports for a venue of {nodes} nodes"))
}

fn unix_nanos_low() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default()
}
