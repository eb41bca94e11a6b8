//! FIX order-entry latency: NewOrderSingle → ExecutionReport (New), and
//! OrderCancelRequest → ExecutionReport (Canceled), one request at a time
//! over TCP on loopback, through the whole server path (FIX acceptor,
//! sequencer, journal with fsync, core, event broadcast, session).
//!
//!     cargo run --release -p exchange-fix --example fix_latency -- [ORDERS] [DATA_DIR]
//!
//! ORDERS defaults to 20000 (each followed by its cancel, so the account
//! never nears its open-order limit); DATA_DIR defaults to a temporary
//! directory, and decides which disk the journal's fsync hits.

use std::path::Path;
use std::time::{Duration, Instant};

use exchange_fix::config::FixConfig;
use exchange_testkit::fix::{session, Client, Node};
use hdrhistogram::Histogram;

const WARMUP: usize = 500;

fn summary(name: &str, h: &Histogram<u64>) {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1_000.0;
    println!(
        "{name:<28} n={:<7} p50={:>8.1}µs p90={:>8.1}µs \
         p99={:>8.1}µs p99.9={:>8.1}µs max={:>8.1}µs",
        h.len(),
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        h.max() as f64 / 1_000.0
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let orders: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let temp = tempfile::tempdir().expect("temporary directory");
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(measure(&dir, orders));
}

/// Runs `orders` orders, each with its cancel, after a warm-up, against a
/// node journaling into `dir`, and prints their latencies.
async fn measure(dir: &Path, orders: usize) {
    // Latency, not the message rate limit, is measured: the session
    // sends far more than the default rate over the run.
    let config = FixConfig {
        sessions: vec![session("LAT", 1, false)],
        messages_per_sec: 0,
        ..FixConfig::default()
    };
    let node = Node::start_with(dir, config, &[1]).await;
    let mut client = Client::logon(node.addr, "LAT").await;
    let mut place = Histogram::<u64>::new(3).expect("histogram");
    let mut cancel = Histogram::<u64>::new(3).expect("histogram");
    let started = Instant::now();
    for i in 0..orders + WARMUP {
        let (placed, canceled) = round_trip(&mut client, i).await;
        if i >= WARMUP {
            place.record(placed.as_nanos() as u64).expect("record");
            cancel.record(canceled.as_nanos() as u64).expect("record");
        }
    }
    let elapsed = started.elapsed();
    println!(
        "FIX round trips on loopback, one request in flight, journal on {}",
        dir.display()
    );
    summary("NewOrderSingle -> ER New", &place);
    summary("CancelRequest -> ER Canceled", &cancel);
    println!(
        "{} requests in {:.2}s",
        2 * (orders + WARMUP),
        elapsed.as_secs_f64()
    );
    node.stop().await;
}

/// Order `i` and its cancel, one at a time; returns how long each took to
/// be answered.
async fn round_trip(client: &mut Client, i: usize) -> (Duration, Duration) {
    let (side, price) = if i.is_multiple_of(2) {
        ("1", "59000")
    } else {
        ("2", "61000")
    };
    let id = format!("o{i}");
    let order = client.encode(
        "D",
        &format!("11={id}|55=BTC-USD|54={side}|60=20240101-00:00:00|38=0.01|40=2|44={price}|"),
    );
    let sent = Instant::now();
    client.write(&order).await;
    let ack = client.recv().await;
    let placed = sent.elapsed();
    assert_eq!(
        (ack.text(150), ack.text(11)),
        (Some("0"), Some(id.as_str())),
        "{:?}",
        ack.text(58)
    );
    let request = client.encode(
        "F",
        &format!("41={id}|11=x{i}|55=BTC-USD|54={side}|60=20240101-00:00:00|"),
    );
    let sent = Instant::now();
    client.write(&request).await;
    let done = client.recv().await;
    let canceled = sent.elapsed();
    assert_eq!(done.text(150), Some("4"), "{:?}", done.text(58));
    (placed, canceled)
}
