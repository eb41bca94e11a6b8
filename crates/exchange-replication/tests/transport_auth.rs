//! The Raft transport talks to members of the cluster only: those that
//! hold the cluster key. Some tests here speak the wire by hand, as an
//! attacker (or a member) would, which also pins the format down.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver};
use exchange_replication::raft::eraftpb::MessageType;
use exchange_replication::transport::{ClusterKey, Transport, TransportConfig, TAG_BYTES};
use exchange_replication::{encode_message, Message};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const KEY: [u8; 32] = [42; 32];
const QUIET: Duration = Duration::from_millis(400);

fn config(id: u64, key: [u8; 32]) -> TransportConfig {
    let mut config = TransportConfig::new(id, ClusterKey::from_bytes(key));
    config.handshake_timeout = Duration::from_millis(500);
    config
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().expect("addr")
}

/// A transport for node `id` with no peers, and its inbox.
fn listener(id: u64, key: [u8; 32]) -> (Transport, Receiver<Message>) {
    let (tx, rx) = unbounded();
    let transport =
        Transport::start(any_port(), &BTreeMap::new(), tx, config(id, key)).expect("start");
    (transport, rx)
}

/// A transport for node `id` that sends to node `to` at `addr`.
fn sender(id: u64, key: [u8; 32], to: u64, addr: SocketAddr) -> Transport {
    let (tx, _rx) = unbounded();
    let peers = BTreeMap::from([(to, addr.into())]);
    Transport::start(any_port(), &peers, tx, config(id, key)).expect("start")
}

/// A vote request: what an attacker would send to take the cluster over.
fn vote(from: u64, to: u64, term: u64) -> Message {
    let mut message = Message::default();
    message.set_msg_type(MessageType::MsgRequestVote);
    message.from = from;
    message.to = to;
    message.term = term;
    message
}

/// Sends `message` until one arrives (the first may go before the
/// connection is up and be dropped, as Raft allows).
fn deliver(from: &Transport, inbox: &Receiver<Message>, message: &Message) -> Option<Message> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        from.send(message.clone());
        if let Ok(got) = inbox.recv_timeout(Duration::from_millis(100)) {
            return Some(got);
        }
    }
    None
}

#[test]
fn members_with_the_same_key_exchange_messages_both_ways() {
    let (a, a_inbox) = listener(1, KEY);
    let (tx, b_inbox) = unbounded();
    let b = Transport::start(
        any_port(),
        &BTreeMap::from([(1, a.local_addr().into())]),
        tx,
        config(2, KEY),
    )
    .expect("start");
    let mut a = a;
    a.add_peer(2, b.local_addr()).expect("peer");
    let got = deliver(&b, &a_inbox, &vote(2, 1, 7)).expect("delivered to 1");
    assert_eq!((got.from, got.term), (2, 7));
    let got = deliver(&a, &b_inbox, &vote(1, 2, 8)).expect("delivered to 2");
    assert_eq!((got.from, got.term), (1, 8));
    assert_eq!(a.counters().handshakes_refused.load(Ordering::Relaxed), 0);
    assert_eq!(b.counters().bad_frames.load(Ordering::Relaxed), 0);
}

#[test]
fn a_node_with_another_key_is_refused() {
    let (target, inbox) = listener(1, KEY);
    let stranger = sender(2, [7; 32], 1, target.local_addr());
    for _ in 0..20 {
        stranger.send(vote(2, 1, 99));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(inbox.recv_timeout(QUIET).is_err(), "a message got through");
    // Both ends noticed: the target's proof fails at the stranger, which
    // checks first, and the target sees it leave.
    let refused = |t: &Transport| t.counters().handshakes_refused.load(Ordering::Relaxed);
    assert!(refused(&stranger) > 0);
    assert!(refused(&target) > 0);
}

/// Reads until the other end closes; panics if it stays open `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) {
    stream.set_read_timeout(Some(within)).expect("timeout");
    let mut sink = [0u8; 256];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the connection stayed open: {e}"),
        }
    }
}

fn bare_frame(message: &Message) -> Vec<u8> {
    let bytes = encode_message(message);
    let mut frame = (bytes.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&bytes);
    frame
}

#[test]
fn an_unauthenticated_protobuf_frame_is_refused() {
    let (target, inbox) = listener(1, KEY);
    let mut raw = TcpStream::connect(target.local_addr()).expect("connect");
    // What the transport accepted before it authenticated anyone.
    raw.write_all(&bare_frame(&vote(2, 1, 99))).expect("write");
    closed_within(&mut raw, Duration::from_secs(5));
    assert!(inbox.recv_timeout(QUIET).is_err(), "a message got through");
    assert!(target.counters().handshakes_refused.load(Ordering::Relaxed) > 0);
}

#[test]
fn a_stalled_handshake_is_dropped_after_the_timeout() {
    let (target, inbox) = listener(1, KEY);
    let mut raw = TcpStream::connect(target.local_addr()).expect("connect");
    // Half a hello, then nothing.
    raw.write_all(b"EXRAFT01\x02\0\0").expect("write");
    let started = Instant::now();
    closed_within(&mut raw, Duration::from_secs(5));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(inbox.try_recv().is_err());
    assert_eq!(
        target.counters().handshakes_refused.load(Ordering::Relaxed),
        1
    );
}

#[test]
fn connections_waiting_for_a_handshake_are_bounded() {
    let (tx, _inbox) = unbounded();
    let mut config = config(1, KEY);
    config.max_pending_handshakes = 2;
    config.handshake_timeout = Duration::from_secs(30);
    let target = Transport::start(any_port(), &BTreeMap::new(), tx, config).expect("start");
    let _waiting: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(target.local_addr()).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(target.local_addr()).expect("connect");
    closed_within(&mut third, Duration::from_secs(5));
}

/// A member's end of a connection, spoken by hand from the key.
struct Handshaken {
    stream: TcpStream,
    session: HmacSha256,
    counter: u64,
}

fn keyed(key: &[u8]) -> HmacSha256 {
    <HmacSha256 as Mac>::new_from_slice(key).expect("any length")
}

fn transcript_mac(key: &[u8], label: &[u8], nonces: &[u8; 64], ids: &[u8; 16]) -> [u8; 32] {
    let mut mac = keyed(key);
    mac.update(label);
    mac.update(nonces);
    mac.update(ids);
    mac.finalize().into_bytes().into()
}

fn handshake(addr: SocketAddr, id: u64, key: &[u8]) -> Handshaken {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let nonce_i = [5u8; 32];
    let mut hello = b"EXRAFT01".to_vec();
    hello.extend_from_slice(&id.to_le_bytes());
    hello.extend_from_slice(&nonce_i);
    stream.write_all(&hello).expect("hello");
    let mut answer = [0u8; 80];
    stream.read_exact(&mut answer).expect("answer");
    assert_eq!(&answer[..8], b"EXRAFT01");
    let mut nonces = [0u8; 64];
    nonces[..32].copy_from_slice(&nonce_i);
    nonces[32..].copy_from_slice(&answer[16..48]);
    let mut ids = [0u8; 16];
    ids[..8].copy_from_slice(&id.to_le_bytes());
    ids[8..].copy_from_slice(&answer[8..16]);
    let expected = transcript_mac(key, b"exchange-raft-v1 responder\n", &nonces, &ids);
    assert_eq!(answer[48..], expected, "the responder's proof");
    let proof = transcript_mac(key, b"exchange-raft-v1 initiator\n", &nonces, &ids);
    stream.write_all(&proof).expect("proof");
    let session = transcript_mac(key, b"exchange-raft-v1 session\n", &nonces, &ids);
    Handshaken {
        stream,
        session: keyed(&session),
        counter: 0,
    }
}

impl Handshaken {
    /// The connection's next frame, tagged.
    fn frame(&mut self, message: &Message) -> Vec<u8> {
        let mut frame = bare_frame(message);
        let mut mac = self.session.clone();
        mac.update(&self.counter.to_le_bytes());
        mac.update(&frame);
        self.counter += 1;
        frame.extend_from_slice(&mac.finalize().into_bytes()[..TAG_BYTES]);
        frame
    }
}

#[test]
fn a_member_speaking_the_wire_by_hand_is_heard() {
    let (target, inbox) = listener(1, KEY);
    let mut member = handshake(target.local_addr(), 2, &KEY);
    for term in [3, 4] {
        let frame = member.frame(&vote(2, 1, term));
        member.stream.write_all(&frame).expect("frame");
        let got = inbox
            .recv_timeout(Duration::from_secs(5))
            .expect("delivered");
        assert_eq!(got.term, term);
    }
}

#[test]
fn a_tampered_frame_closes_the_connection_and_delivers_nothing() {
    let (target, inbox) = listener(1, KEY);
    let mut member = handshake(target.local_addr(), 2, &KEY);
    let frame = member.frame(&vote(2, 1, 3));
    member.stream.write_all(&frame).expect("frame");
    assert_eq!(
        inbox
            .recv_timeout(Duration::from_secs(5))
            .expect("first")
            .term,
        3
    );
    let mut tampered = member.frame(&vote(2, 1, 4));
    // The message's last byte.
    let at = tampered.len() - TAG_BYTES - 1;
    tampered[at] ^= 0x01;
    member.stream.write_all(&tampered).expect("frame");
    closed_within(&mut member.stream, Duration::from_secs(5));
    assert!(
        inbox.recv_timeout(QUIET).is_err(),
        "a tampered frame got through"
    );
    assert_eq!(target.counters().bad_frames.load(Ordering::Relaxed), 1);
}

#[test]
fn a_replayed_frame_closes_the_connection_and_delivers_nothing() {
    let (target, inbox) = listener(1, KEY);
    let mut member = handshake(target.local_addr(), 2, &KEY);
    let frame = member.frame(&vote(2, 1, 3));
    member.stream.write_all(&frame).expect("frame");
    assert_eq!(
        inbox
            .recv_timeout(Duration::from_secs(5))
            .expect("first")
            .term,
        3
    );
    member.stream.write_all(&frame).expect("replay");
    closed_within(&mut member.stream, Duration::from_secs(5));
    assert!(
        inbox.recv_timeout(QUIET).is_err(),
        "a replayed frame got through"
    );
    // Nor does a frame of one connection pass on another.
    let mut other = handshake(target.local_addr(), 2, &KEY);
    other.stream.write_all(&frame).expect("replay");
    closed_within(&mut other.stream, Duration::from_secs(5));
    assert!(
        inbox.recv_timeout(QUIET).is_err(),
        "a replayed frame got through"
    );
    assert_eq!(target.counters().bad_frames.load(Ordering::Relaxed), 2);
}

#[test]
fn a_responder_without_the_key_gets_no_message() {
    // The initiator checks the responder first: a stranger posing as a
    // peer's address learns nothing of the cluster's traffic.
    let (impostor, inbox) = listener(2, [7; 32]);
    let member = sender(1, KEY, 2, impostor.local_addr());
    for _ in 0..10 {
        member.send(vote(1, 2, 5));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(inbox.recv_timeout(QUIET).is_err());
    assert!(member.counters().handshakes_refused.load(Ordering::Relaxed) > 0);
}

#[test]
fn a_peer_answering_as_another_node_is_refused() {
    let (three, inbox) = listener(3, KEY);
    // Node 1 believes node 2 listens there.
    let member = sender(1, KEY, 2, three.local_addr());
    for _ in 0..10 {
        member.send(vote(1, 2, 5));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(inbox.recv_timeout(QUIET).is_err());
    assert!(member.counters().handshakes_refused.load(Ordering::Relaxed) > 0);
}
