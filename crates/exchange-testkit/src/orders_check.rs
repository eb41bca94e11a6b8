//! What a load test of a venue checks at its end: every process holds each
//! acknowledged order exactly once, and no order no client sent.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::http::{Account, Client};
use crate::wait::DEADLINE;

/// How many times each client order id is among `account`'s open orders
/// on the process at `api` (a gateway keeps no history, so load tests use
/// orders that never cross: every one stays open).
pub fn open_order_counts(api: &Client, account: &Account) -> BTreeMap<String, usize> {
    let mut count = BTreeMap::new();
    let Ok(response) = api.try_signed(account, "GET", "/v1/orders", "") else {
        return count;
    };
    if response.status != 200 {
        return count;
    }
    let listed = response.json();
    for order in listed["orders"].as_array().cloned().unwrap_or_default() {
        let id = order["client_order_id"].as_str().unwrap_or_default();
        *count.entry(id.to_owned()).or_default() += 1;
    }
    count
}

/// The `p` quantile (0 to 1) of sorted latencies.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).copied().unwrap_or_default()
}

/// What one load worker's client order ids must look like at the end.
#[derive(Default)]
pub struct Expected<'a> {
    /// Acknowledged: present exactly once.
    pub acked: &'a [String],
    /// Answered `503`: never applied.
    pub absent: &'a [String],
    /// Answer lost (its connection died): applied at most once.
    pub at_most_once: &'a [String],
}

/// Each process on `ports` holds, for worker `i` (account `accounts[i]`,
/// client order ids prefixed `w{i}-`), what `expected[i]` says, and no
/// order no client sent; waits for a process still applying the log.
pub fn each_process_holds_orders_as_expected(
    ports: &[u16],
    accounts: &[Account],
    expected: &[Expected<'_>],
) {
    for &port in ports {
        let api = Client { port };
        for (i, (account, expected)) in accounts.iter().zip(expected).enumerate() {
            let count = counts_once_caught_up(&api, account, expected.acked, i);
            for id in expected.acked {
                assert_eq!(
                    count.get(id).copied(),
                    Some(1),
                    "port {port}: acknowledged order {id} of worker {i} must be there exactly once"
                );
            }
            for id in expected.absent {
                assert!(
                    !count.contains_key(id),
                    "port {port}: order {id} was answered 503 yet applied"
                );
            }
            for id in expected.at_most_once {
                assert!(
                    count.get(id).copied().unwrap_or(0) <= 1,
                    "port {port}: order {id} applied twice"
                );
            }
            let prefix = format!("w{i}-");
            assert!(
                count.keys().all(|id| id.starts_with(&prefix)),
                "port {port}: an order no client sent: {count:?}"
            );
        }
    }
}

/// The counts once every acknowledged order is there; a failure names
/// the port and the orders still missing at the deadline.
fn counts_once_caught_up(
    api: &Client,
    account: &Account,
    acked: &[String],
    worker: usize,
) -> BTreeMap<String, usize> {
    let started = Instant::now();
    loop {
        let count = open_order_counts(api, account);
        let missing: Vec<&String> = acked.iter().filter(|id| !count.contains_key(*id)).collect();
        if missing.is_empty() {
            return count;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "port {} never showed acknowledged orders {missing:?} of worker {worker}; holds \
             {count:?}",
            api.port
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
