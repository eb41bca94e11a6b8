//! A network partition between real processes: every Raft link goes
//! through a fault-injecting TCP proxy in this test. The leader is cut off
//! from both followers: it takes no write (a write sent to it is never
//! acknowledged), the majority elects a new leader and goes on; after the
//! partition heals there is one history: every replica reaches the same
//! state, which holds every acknowledged order once and not the write the
//! cut-off leader took.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use support::{free_port, limit, wait_until, Account, Client, ADMIN_TOKEN};

/// Forwards TCP connections to `target` until blocked; blocking cuts the
/// live connections and refuses new ones.
struct Proxy {
    addr: SocketAddr,
    blocked: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

fn pump(mut from: TcpStream, mut to: TcpStream, blocked: Arc<AtomicBool>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if blocked.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Proxy {
    fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a proxy");
        let addr = listener.local_addr().expect("proxy address");
        let blocked = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let (flag, conns) = (blocked.clone(), live.clone());
        std::thread::spawn(move || {
            for incoming in listener.incoming() {
                let Ok(client) = incoming else { continue };
                if flag.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(target) else {
                    continue;
                };
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                if let Ok(mut list) = conns.lock() {
                    list.extend(client.try_clone());
                    list.extend(server.try_clone());
                }
                let (f1, f2) = (flag.clone(), flag.clone());
                std::thread::spawn(move || pump(client, s2, f1));
                std::thread::spawn(move || pump(server, c2, f2));
            }
        });
        Proxy {
            addr,
            blocked,
            live,
        }
    }

    fn block(&self, on: bool) {
        self.blocked.store(on, Ordering::SeqCst);
        if on {
            if let Ok(mut list) = self.live.lock() {
                for stream in list.drain(..) {
                    let _ = stream.shutdown(Shutdown::Both);
                }
            }
        }
    }
}

struct Node {
    child: Child,
    http: u16,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status(port: u16) -> Option<Value> {
    let response = Client { port }
        .try_request(
            "GET",
            "/admin/replication?state_hash=true",
            &[("Authorization", format!("Bearer {ADMIN_TOKEN}"))],
            b"",
        )
        .ok()?;
    (response.status == 200).then(|| response.json())
}

fn leader_among(nodes: &[&Node]) -> Option<u64> {
    nodes.iter().find_map(|n| {
        let s = status(n.http)?;
        (s["role"] == "leader").then(|| s["id"].as_u64()).flatten()
    })
}

#[test]
fn a_partitioned_leader_takes_no_write_and_one_history_survives() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ids = [1u64, 2, 3];
    let raft: BTreeMap<u64, SocketAddr> = ids
        .iter()
        .map(|&id| (id, SocketAddr::from(([127, 0, 0, 1], free_port()))))
        .collect();
    // proxies[(from, to)]: the link `from` uses to reach `to`.
    let mut proxies: BTreeMap<(u64, u64), Proxy> = BTreeMap::new();
    for &from in &ids {
        for &to in &ids {
            if from != to {
                proxies.insert((from, to), Proxy::start(raft[&to]));
            }
        }
    }
    let mut nodes: BTreeMap<u64, Node> = BTreeMap::new();
    for &id in &ids {
        let peers: Vec<String> = ids
            .iter()
            .map(|&other| {
                let addr = if other == id {
                    raft[&id]
                } else {
                    proxies[&(id, other)].addr
                };
                format!("{other}={addr}")
            })
            .collect();
        let http = free_port();
        let data = tmp.path().join(format!("node-{id}"));
        let log = std::fs::File::create(tmp.path().join(format!("node-{id}.log"))).expect("log");
        let child = Command::new(env!("CARGO_BIN_EXE_exchange"))
            .args(["serve", "--data-dir"])
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{http}")])
            .args(["--node-id", &id.to_string(), "--peers", &peers.join(",")])
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a node");
        nodes.insert(id, Node { child, http });
    }
    let all: Vec<&Node> = nodes.values().collect();
    let mut old = None;
    wait_until("a leader with the instruments listed", || {
        old = leader_among(&all);
        old.is_some_and(|id| {
            Client {
                port: nodes[&id].http,
            }
            .try_request("GET", "/v1/instruments", &[], b"")
            .is_ok_and(|r| r.text().contains("BTC-USD"))
        })
    });
    let old = old.expect("leader");
    let api = Client {
        port: nodes[&old].http,
    };
    let account: Account = api.funded_account();
    let mut acked = Vec::new();
    for n in 0..10 {
        let id = format!("before-{n}");
        api.place(
            &account,
            &limit("buy", &(59_000 + n).to_string(), "0.01", &id),
        );
        acked.push(id);
    }

    // Cut the leader off from both followers, both ways.
    for ((from, to), proxy) in &proxies {
        if *from == old || *to == old {
            proxy.block(true);
        }
    }
    let majority: Vec<&Node> = nodes
        .iter()
        .filter(|(id, _)| **id != old)
        .map(|(_, n)| n)
        .collect();
    // A write sent to the cut-off leader, in the background: it must not be
    // acknowledged (it waits for a majority it cannot reach, or is refused
    // once the leader steps down).
    let minority = std::thread::spawn({
        let account = account.clone();
        move || {
            api.try_signed(
                &account,
                "POST",
                "/v1/orders",
                &limit("sell", "61000", "0.01", "minority").to_string(),
            )
            .map(|r| r.status)
        }
    });
    let mut new = None;
    wait_until("a new leader on the majority side", || {
        new = leader_among(&majority).filter(|id| *id != old);
        new.is_some()
    });
    let new_api = Client {
        port: nodes[&new.expect("new leader")].http,
    };
    for n in 0..10 {
        let id = format!("during-{n}");
        new_api.place(
            &account,
            &limit("buy", &(59_100 + n).to_string(), "0.01", &id),
        );
        acked.push(id);
    }
    // The old leader has stepped down (check-quorum): no writes there.
    wait_until("the cut-off node to stop leading", || {
        status(nodes[&old].http).is_some_and(|s| s["role"] != "leader")
    });
    let refused = api.signed(
        &account,
        "POST",
        "/v1/orders",
        &limit("sell", "61001", "0.01", "minority-2").to_string(),
    );
    assert_eq!(refused.status, 503, "{}", refused.text());

    for proxy in proxies.values() {
        proxy.block(false);
    }
    let answer = minority.join().expect("minority writer");
    eprintln!("the write sent to the cut-off leader was answered {answer:?}");
    assert!(
        !matches!(answer, Ok(201)),
        "the cut-off leader acknowledged a write: {answer:?}"
    );
    wait_until("one history on every replica", || {
        let statuses: Vec<Value> = all.iter().filter_map(|n| status(n.http)).collect();
        let Some(lead) = statuses.iter().find(|s| s["role"] == "leader") else {
            return false;
        };
        statuses.len() == 3
            && statuses.iter().all(|s| {
                s["applied_index"] == lead["commit_index"] && s["state_hash"] == lead["state_hash"]
            })
    });
    for node in nodes.values() {
        let listed =
            Client { port: node.http }.signed(&account, "GET", "/v1/orders?status=all", "");
        assert_eq!(listed.status, 200, "{}", listed.text());
        let mut count: BTreeMap<String, usize> = BTreeMap::new();
        for order in listed.json()["orders"].as_array().expect("orders") {
            *count
                .entry(
                    order["client_order_id"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
                .or_default() += 1;
        }
        let expected: BTreeMap<String, usize> = acked.iter().map(|id| (id.clone(), 1)).collect();
        assert_eq!(count, expected, "orders on node at port {}", node.http);
    }
}
