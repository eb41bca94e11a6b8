//! The Raft transport resolves a peer's name at each connection attempt:
//! a peer whose name does not resolve yet is reached once it does, and a
//! peer that comes back at another address is reached there.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver};
use exchange_replication::raft::eraftpb::MessageType;
use exchange_replication::transport::{
    ClusterKey, Feedback, PeerAddr, Resolve, Transport, TransportConfig,
};
use exchange_replication::Message;

const KEY: [u8; 32] = [42; 32];
const NAME: &str = "replica-2.replica";

/// A resolver the test rewrites: a name answers the address it is given
/// (whatever the port asked), or nothing.
#[derive(Debug, Default)]
struct Names {
    table: Mutex<HashMap<String, SocketAddr>>,
    asked: AtomicUsize,
}

impl Names {
    fn set(&self, name: &str, addr: SocketAddr) {
        self.table
            .lock()
            .expect("table")
            .insert(name.to_string(), addr);
    }
}

impl Resolve for Names {
    fn resolve(&self, host: &str, _port: u16) -> io::Result<Vec<SocketAddr>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        match self.table.lock().expect("table").get(host) {
            Some(addr) => Ok(vec![*addr]),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such name")),
        }
    }
}

fn config(id: u64, names: &Arc<Names>) -> TransportConfig {
    let mut config = TransportConfig::new(id, ClusterKey::from_bytes(KEY));
    config.handshake_timeout = Duration::from_millis(500);
    config.resolver = names.clone();
    config
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().expect("addr")
}

/// Node 2's transport, with no peers, and its inbox.
fn node_two(names: &Arc<Names>) -> (Transport, Receiver<Message>) {
    let (tx, rx) = unbounded();
    let peers: BTreeMap<u64, PeerAddr> = BTreeMap::new();
    let transport = Transport::start(any_port(), &peers, tx, config(2, names)).expect("start");
    (transport, rx)
}

/// Node 1's transport, which knows node 2 by its name only.
fn node_one(names: &Arc<Names>) -> Transport {
    let (tx, _rx) = unbounded();
    let peer: PeerAddr = format!("{NAME}:7000").parse().expect("name");
    let peers = BTreeMap::from([(2, peer)]);
    Transport::start(any_port(), &peers, tx, config(1, names)).expect("start")
}

fn heartbeat(term: u64) -> Message {
    let mut message = Message::default();
    message.set_msg_type(MessageType::MsgHeartbeat);
    message.from = 1;
    message.to = 2;
    message.term = term;
    message
}

/// Sends until a message arrives (those sent while the peer cannot be
/// reached are dropped, as Raft allows).
fn deliver(from: &Transport, inbox: &Receiver<Message>, term: u64) -> Option<Message> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        from.send(heartbeat(term));
        if let Ok(got) = inbox.recv_timeout(Duration::from_millis(50)) {
            return Some(got);
        }
    }
    None
}

#[test]
fn a_peer_whose_name_resolves_later_is_reached_then() {
    let names = Arc::new(Names::default());
    let (two, inbox) = node_two(&names);
    // Starting with a name nobody answers yet is no error.
    let one = node_one(&names);
    for _ in 0..5 {
        one.send(heartbeat(1));
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(
        inbox.try_recv().is_err(),
        "delivered before the name resolved"
    );
    assert!(
        names.asked.load(Ordering::SeqCst) > 0,
        "the name was never looked up"
    );
    let unreachable = one
        .feedback()
        .try_iter()
        .any(|f| f == Feedback::Unreachable(2));
    assert!(unreachable, "the failed attempts were not reported");

    names.set(NAME, two.local_addr());
    let got = deliver(&one, &inbox, 2).expect("delivered once the name resolves");
    assert_eq!((got.from, got.term), (1, 2));
}

#[test]
fn a_peer_back_at_another_address_is_reached_there() {
    let names = Arc::new(Names::default());
    let (before, before_inbox) = node_two(&names);
    names.set(NAME, before.local_addr());
    let one = node_one(&names);
    let got = deliver(&one, &before_inbox, 1).expect("delivered at the first address");
    assert_eq!(got.term, 1);

    // Node 2 restarts elsewhere: the old process stops reading (its
    // connections close at the next message) and the name moves.
    let (after, after_inbox) = node_two(&names);
    assert_ne!(after.local_addr(), before.local_addr());
    names.set(NAME, after.local_addr());
    drop(before_inbox);
    let got = deliver(&one, &after_inbox, 2).expect("delivered at the new address");
    assert_eq!((got.from, got.term), (1, 2));
}
