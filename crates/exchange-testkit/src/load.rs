//! A load worker for tests of a venue under change (an upgrade, a
//! nemesis): it places resting orders through one of several gateways,
//! moves to the next when the one it uses goes away, and keeps the
//! history a checker needs: what it sent and what it was told.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::http::{resting_order, Account, Client};

/// One worker's history, by client order id.
#[derive(Default, Debug)]
pub struct History {
    /// Answered `201`: must be on every process exactly once.
    pub acked: Vec<String>,
    /// Answered `503 draining` (a gateway about to go): never applied.
    pub absent: Vec<String>,
    /// Sent, with no answer or another one: applied at most once.
    pub unknown: Vec<String>,
    /// Times the worker moved to another gateway: its connection refused
    /// (nothing sent) or a `503 draining`.
    pub moves: usize,
    /// Connections cut after the request went out, and answers other than
    /// `201` and `503 draining`, with what was said.
    pub errors: Vec<String>,
    /// Latency of each acknowledged order.
    pub latencies: Vec<Duration>,
}

/// Places resting orders as `account` through `gateways[first]`, with
/// client order ids `NAME-N`, one every `pace` at most, until `done`;
/// moves to the next gateway when the one it uses refuses the connection
/// or drains, or cuts it.
pub fn place_until_done(
    gateways: &[Client],
    first: usize,
    account: &Account,
    name: &str,
    (done, pace): (&AtomicBool, Duration),
) -> History {
    let mut history = History::default();
    let mut at = first % gateways.len().max(1);
    let mut n = 0;
    while !done.load(Ordering::SeqCst) {
        let client_order_id = format!("{name}-{n}");
        // Prices cycle within the instrument's collar, buys below and
        // sells above, so that no order ever trades.
        let body = resting_order(n % 2_000, &client_order_id);
        n += 1;
        std::thread::sleep(pace);
        let started = Instant::now();
        let next = (at + 1) % gateways.len();
        match gateways[at].try_signed(account, "POST", "/v1/orders", &body) {
            Ok(response) if response.status == 201 => {
                history.latencies.push(started.elapsed());
                history.acked.push(client_order_id);
            }
            Ok(response) if response.status == 503 && response.text().contains("draining") => {
                history.moves += 1;
                history.absent.push(client_order_id);
                at = next;
            }
            Ok(response) => {
                let said = format!("{client_order_id}: {} {}", response.status, response.text());
                history.errors.push(said);
                history.unknown.push(client_order_id);
            }
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                history.moves += 1;
                at = next;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(error) => {
                history
                    .errors
                    .push(format!("{client_order_id}: connection cut: {error}"));
                history.unknown.push(client_order_id);
                at = next;
            }
        }
    }
    history
}
