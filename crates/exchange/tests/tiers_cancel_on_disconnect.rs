//! Cancel-on-disconnect when a whole gateway dies: a WebSocket client
//! that asked for it has its account's orders cancelled by the cluster,
//! after the gateway's grace, once the gateway is killed with SIGKILL (so
//! nobody is left to send the cancels); a client that did not ask keeps
//! its orders.

use exchange_testkit::ws::authenticated;
use exchange_testkit::{resting_order, wait_until, Account, Client, TieredVenue};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const ORDERS: usize = 4;

/// Places `ORDERS` resting orders of `account` through `gateway`.
fn place(gateway: &Client, account: &Account, name: &str) {
    for n in 0..ORDERS {
        let body = resting_order(n, &format!("{name}-{n}"));
        let answer = gateway.signed(account, "POST", "/v1/orders", &body);
        assert_eq!(answer.status, 201, "{}", answer.text());
    }
}

/// The number of `account`'s open orders on the process at `port`, if it
/// answers.
fn open_orders(port: u16, account: &Account) -> Option<usize> {
    let response = Client { port }
        .try_signed(account, "GET", "/v1/orders", "")
        .ok()?;
    if response.status != 200 {
        return None;
    }
    Some(response.json()["orders"].as_array()?.len())
}

#[test]
fn the_cluster_cancels_a_dead_gateways_protected_orders_and_only_those() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut venue = TieredVenue::start(EXCHANGE, &tmp.path().join("venue"), 3, 1, 0);
    venue.wait_leader();
    let gateway = venue.wait_gateway(venue.gateway_ports[0]);
    let protected = gateway.funded_account();
    let unprotected = gateway.funded_account();

    // Each has a WebSocket connection open; one asked for the protection.
    let _protected_socket = authenticated(&gateway, &protected, true);
    let _unprotected_socket = authenticated(&gateway, &unprotected, false);
    place(&gateway, &protected, "p");
    place(&gateway, &unprotected, "u");
    for port in venue.replica_ports() {
        wait_until("every replica holds the orders", || {
            open_orders(port, &protected) == Some(ORDERS)
                && open_orders(port, &unprotected) == Some(ORDERS)
        });
    }

    venue.kill_gateway(0);
    for port in venue.replica_ports() {
        wait_until("the protected orders cancelled on every replica", || {
            open_orders(port, &protected) == Some(0)
        });
        assert_eq!(
            open_orders(port, &unprotected),
            Some(ORDERS),
            "replica on port {port}: an unprotected client's orders stay"
        );
    }
}
