//! The container venue of deploy/compose, built from this build's binary:
//! three replicas with their own volumes, two order-entry gateways, a
//! market-data gateway and the PostgreSQL reporting store, each in a
//! `FROM scratch` image (deploy/image). Signed orders go in through both
//! gateways; the trade they make is on the market-data gateway; both
//! gateways' mirrors hold every resting order once; every replica's
//! journal holds each order once, and the reporter wrote the trade to the
//! store. Then a replica is killed and started again and
//! a gateway cut off the cluster network and put back: an order through
//! that gateway still reaches every replica's journal once. Last, a
//! replica's container is made anew from another image (a rolling
//! upgrade's step): it keeps its journal and takes new orders.
//!
//! Needs docker and docker-compose (v1): without them the test says
//! `SKIPPED` and passes, unless CI=true.

use std::collections::BTreeMap;

use exchange_testkit::compose::{skip_unless_ci, ComposeVenue, Network};
use exchange_testkit::{
    each_process_holds_orders_as_expected, limit, resting_order, wait_until, Account, Client,
    Expected,
};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Resting orders per account.
const RESTING: usize = 10;

#[test]
fn orders_through_both_gateways_reach_every_replica_and_the_store() {
    let venue = match ComposeVenue::up(EXCHANGE) {
        Ok(venue) => venue,
        Err(why) => return skip_unless_ci(&format!("no docker venue here ({why})")),
    };
    let gateways: Vec<Client> = venue
        .gateway_ports
        .iter()
        .map(|&port| serving_instruments(Client { port }))
        .collect();
    // Account i trades through gateway i; each is known to the other
    // gateway once its mirror applied the key.
    let accounts: Vec<Account> = gateways.iter().map(Client::funded_account).collect();
    for (gateway, account) in gateways.iter().zip(&accounts).rev() {
        wait_until("the other gateway knowing the key", || {
            gateway
                .try_signed(account, "GET", "/v1/balances", "")
                .is_ok_and(|r| r.status == 200)
        });
    }
    let acked: Vec<Vec<String>> = gateways
        .iter()
        .zip(&accounts)
        .enumerate()
        .map(|(i, (gateway, account))| place_resting(gateway, account, i))
        .collect();
    cross(&gateways, &accounts);
    let md = Client {
        port: venue.md_gateway_ports[0],
    };
    wait_until("the trade on the market-data gateway", || {
        recent_trades(&md)
            .iter()
            .any(|t| t["price"] == "60000" && t["qty"] == "0.01")
    });
    let expected: Vec<Expected<'_>> = acked
        .iter()
        .map(|ids| Expected {
            acked: ids,
            ..Expected::default()
        })
        .collect();
    each_process_holds_orders_as_expected(&venue.gateway_ports, &accounts, &expected);
    let every_order: Vec<String> = acked
        .concat()
        .into_iter()
        .chain(["w0-cross".to_string(), "w1-cross".to_string()])
        .collect();
    for replica in 1..=3 {
        journal_holds_each_once(&venue, replica, &every_order);
    }
    store_holds_the_trade(&venue);
    after_a_killed_replica_and_a_cut_gateway(&venue, &gateways[1], &accounts[1]);
    let before_upgrade = venue.placed_in_journal(2);
    after_an_upgraded_replica(&venue, &gateways[0], &accounts[0], &before_upgrade);
}

/// replica-2 from an image of its own (the same binary: what is checked is
/// the container made anew on the old volume).
fn after_an_upgraded_replica(
    venue: &ComposeVenue,
    gateway: &Client,
    account: &Account,
    before: &BTreeMap<String, usize>,
) {
    let old = venue.image_of("replica-2");
    let next = venue.build_image(EXCHANGE);
    venue.upgrade("replica-2", &next);
    assert_eq!(venue.image_of("replica-2"), next);
    assert_ne!(old, next);
    let id = "w0-upgraded".to_string();
    let response = gateway.signed(account, "POST", "/v1/orders", &resting_order(RESTING, &id));
    assert_eq!(response.status, 201, "order {id}: {}", response.text());
    journal_holds_each_once(venue, 2, std::slice::from_ref(&id));
    let after = venue.placed_in_journal(2);
    for (kept, count) in before {
        assert_eq!(
            after.get(kept),
            Some(count),
            "order {kept} after the upgrade"
        );
    }
}

/// The faults the compose helpers make heal: replica-1 killed and
/// started on its volume, gateway-2 off the `cluster` network and back.
fn after_a_killed_replica_and_a_cut_gateway(
    venue: &ComposeVenue,
    gateway: &Client,
    account: &Account,
) {
    venue.kill("replica-1");
    assert_eq!(venue.health("replica-1"), "exited");
    venue.start("replica-1");
    venue.disconnect("gateway-2", Network::Cluster);
    venue.connect("gateway-2", Network::Cluster);
    venue.wait_healthy(&["replica-1", "gateway-2"]);
    let id = "w1-after".to_string();
    let response = gateway.signed(account, "POST", "/v1/orders", &resting_order(RESTING, &id));
    assert_eq!(response.status, 201, "order {id}: {}", response.text());
    for replica in 1..=3 {
        journal_holds_each_once(venue, replica, std::slice::from_ref(&id));
    }
}

/// `gateway` once it lists BTC-USD: it follows a log the leader has
/// listed the configured instruments in.
fn serving_instruments(gateway: Client) -> Client {
    wait_until("a gateway listing BTC-USD", || {
        gateway
            .try_request("GET", "/v1/instruments", &[], b"")
            .is_ok_and(|r| r.status == 200 && r.text().contains("BTC-USD"))
    });
    gateway
}

/// Places `RESTING` orders that never cross as `account` (worker `i`'s
/// ids, `wI-N`); their ids.
fn place_resting(gateway: &Client, account: &Account, i: usize) -> Vec<String> {
    (0..RESTING)
        .map(|n| {
            let id = format!("w{i}-{n}");
            let response = gateway.signed(account, "POST", "/v1/orders", &resting_order(n, &id));
            assert_eq!(response.status, 201, "order {id}: {}", response.text());
            id
        })
        .collect()
}

/// Account 0 sells through gateway 0 at 60,000 what account 1 buys
/// through gateway 1: between the resting buys below and sells above.
fn cross(gateways: &[Client], accounts: &[Account]) {
    gateways[0].place(&accounts[0], &limit("sell", "60000", "0.01", "w0-cross"));
    let buy = gateways[1].place(&accounts[1], &limit("buy", "60000", "0.01", "w1-cross"));
    assert_eq!(buy["status"], "filled", "the buy crosses the sell: {buy}");
}

fn recent_trades(md: &Client) -> Vec<Value> {
    let Ok(response) = md.try_request("GET", "/v1/markets/BTC-USD/trades", &[], b"") else {
        return Vec::new();
    };
    if response.status != 200 {
        return Vec::new();
    }
    let listed = response.json();
    listed["trades"]
        .as_array()
        .or(listed.as_array())
        .cloned()
        .unwrap_or_default()
}

fn journal_holds_each_once(venue: &ComposeVenue, replica: u64, ids: &[String]) {
    let mut placed = BTreeMap::new();
    wait_until("every order in the replica's journal", || {
        placed = venue.placed_in_journal(replica);
        ids.iter().all(|id| placed.contains_key(id))
    });
    for id in ids {
        assert_eq!(
            placed.get(id),
            Some(&1),
            "replica {replica}'s journal must hold order {id} once: {placed:?}"
        );
    }
}

/// The venue's reporter wrote the trade to the store.
fn store_holds_the_trade(venue: &ComposeVenue) {
    let query = "select count(*) from trades";
    let mut trades = String::new();
    wait_until("the trade in the reporting store", || {
        trades = venue
            .exec(
                "postgres",
                &[
                    "psql",
                    "-h",
                    "127.0.0.1",
                    "-U",
                    "postgres",
                    "-tA",
                    "exchange",
                    "-c",
                    query,
                ],
            )
            .trim()
            .to_string();
        trades == "1"
    });
    assert_eq!(trades, "1", "the store holds the one trade");
}
