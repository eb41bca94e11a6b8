//! The duplex channel: both directions authenticated, one protocol never
//! taken for another, and every frame altered on the wire refused. A
//! relay between the two ends plays the attacker on the wire.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use exchange_replication::transport::channel::{Channel, ChannelError, MAX_FRAME_BYTES};
use exchange_replication::transport::{ClusterKey, TAG_BYTES};

const LOGS: [u8; 8] = *b"EXLOGS01";
const INGRESS: [u8; 8] = *b"EXINGR01";
const TIMEOUT: Duration = Duration::from_secs(5);
/// What the initiator sends before its first frame: hello, then (after
/// the answer) its proof.
const INITIATOR_HANDSHAKE: [usize; 2] = [8 + 8 + 32, 32];

fn key(byte: u8) -> ClusterKey {
    ClusterKey::from_bytes([byte; 32])
}

/// A listener, and a thread that accepts one channel on it.
fn serve(
    protocol: [u8; 8],
    key: ClusterKey,
) -> (SocketAddr, JoinHandle<Result<Channel, ChannelError>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept()?;
        Channel::accept(stream, protocol, &key, 1, TIMEOUT)
    });
    (addr, handle)
}

fn joined<T>(handle: JoinHandle<T>) -> T {
    handle.join().expect("thread")
}

#[test]
fn frames_go_both_ways_and_ids_are_proved() {
    let (addr, server) = serve(LOGS, key(7));
    let mut client = Channel::connect(addr, LOGS, &key(7), 9, TIMEOUT).expect("connect");
    let mut server = joined(server).expect("accept");
    assert_eq!(client.peer_id(), 1);
    assert_eq!(server.peer_id(), 9);
    for i in 0..50u32 {
        client.send(&i.to_le_bytes()).expect("send");
        server
            .send(&[i.to_le_bytes(), [1; 4]].concat())
            .expect("send");
    }
    client.send(&[]).expect("empty");
    let big = vec![5u8; 3 << 20];
    server.send(&big).expect("big");
    for i in 0..50u32 {
        assert_eq!(server.recv().expect("recv"), i.to_le_bytes());
        assert_eq!(
            client.recv().expect("recv"),
            [i.to_le_bytes(), [1; 4]].concat()
        );
    }
    assert_eq!(server.recv().expect("empty"), Vec::<u8>::new());
    assert_eq!(client.recv().expect("big"), big);
}

#[test]
fn split_halves_work_from_two_threads_and_a_timeout_keeps_the_channel() {
    let (addr, server) = serve(LOGS, key(7));
    let client = Channel::connect(addr, LOGS, &key(7), 9, TIMEOUT).expect("connect");
    let mut server = joined(server).expect("accept");
    let (mut reader, mut writer) = client.split();
    reader
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    assert!(matches!(reader.recv(), Err(ChannelError::TimedOut)));
    let echo = std::thread::spawn(move || {
        for _ in 0..100 {
            let frame = server.recv().expect("recv");
            server.send(&frame).expect("send");
        }
    });
    let sender = std::thread::spawn(move || {
        for i in 0..100u64 {
            writer.send(&i.to_le_bytes()).expect("send");
        }
    });
    reader.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    for i in 0..100u64 {
        assert_eq!(reader.recv().expect("echo"), i.to_le_bytes());
    }
    joined(sender);
    joined(echo);
}

#[test]
fn a_wrong_key_is_refused_on_both_ends() {
    let (addr, server) = serve(LOGS, key(7));
    let client = Channel::connect(addr, LOGS, &key(8), 9, TIMEOUT);
    assert!(matches!(client, Err(ChannelError::WrongKey)), "{client:?}");
    let server = joined(server);
    assert!(matches!(server, Err(ChannelError::WrongKey)), "{server:?}");
}

#[test]
fn a_wrong_protocol_is_refused_on_both_ends() {
    let (addr, server) = serve(LOGS, key(7));
    let client = Channel::connect(addr, INGRESS, &key(7), 9, TIMEOUT);
    assert!(
        matches!(client, Err(ChannelError::WrongProtocol)),
        "{client:?}"
    );
    let server = joined(server);
    assert!(
        matches!(server, Err(ChannelError::WrongProtocol)),
        "{server:?}"
    );
}

#[test]
fn raft_magic_does_not_make_a_channel_a_raft_connection() {
    use exchange_replication::transport::{Transport, TransportConfig};
    let (tx, inbox) = crossbeam_channel::unbounded();
    let config = TransportConfig::new(1, key(7));
    let raft = Transport::start(
        "127.0.0.1:0".parse().expect("addr"),
        &Default::default(),
        tx,
        config,
    )
    .expect("raft");
    let client = Channel::connect(raft.local_addr(), *b"EXRAFT01", &key(7), 9, TIMEOUT);
    assert!(matches!(client, Err(ChannelError::WrongKey)), "{client:?}");
    assert!(inbox.try_recv().is_err());
}

/// What the relay does to the initiator's frames.
#[derive(Clone, Copy)]
enum Attack {
    /// Flips a bit of the first frame's payload.
    Tamper,
    /// Sends the first frame twice.
    Replay,
    /// Sends the second frame before the first.
    Reorder,
    /// Replaces the first frame by a length over the limit.
    Oversize,
}

/// Relays the handshake both ways untouched, then applies `attack` to
/// the first two frames from the initiator.
fn relay(to: SocketAddr, attack: Attack) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let (mut client, _) = listener.accept().expect("accept");
        let mut server = TcpStream::connect(to).expect("connect");
        let (mut back_from, mut back_to) = (
            server.try_clone().expect("clone"),
            client.try_clone().expect("clone"),
        );
        std::thread::spawn(move || std::io::copy(&mut back_from, &mut back_to));
        for len in INITIATOR_HANDSHAKE {
            let mut handshake = vec![0u8; len];
            client.read_exact(&mut handshake).expect("handshake");
            server.write_all(&handshake).expect("handshake");
        }
        let (first, second) = (frame(&mut client), frame(&mut client));
        let out = match attack {
            Attack::Tamper => {
                let mut bad = first.clone();
                bad[4] ^= 1;
                [bad, second].concat()
            }
            Attack::Replay => [first.clone(), first, second].concat(),
            Attack::Reorder => [second, first].concat(),
            Attack::Oversize => ((MAX_FRAME_BYTES + 1) as u32).to_le_bytes().to_vec(),
        };
        let _ = server.write_all(&out);
        let _ = std::io::copy(&mut client, &mut server);
    });
    addr
}

fn frame(stream: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("len");
    let mut rest = vec![0u8; u32::from_le_bytes(len) as usize + TAG_BYTES];
    stream.read_exact(&mut rest).expect("frame");
    [len.to_vec(), rest].concat()
}

/// The error the responder reports on the frames after `attack`.
fn attacked(attack: Attack) -> ChannelError {
    let (addr, server) = serve(LOGS, key(7));
    let via = relay(addr, attack);
    let mut client = Channel::connect(via, LOGS, &key(7), 9, TIMEOUT).expect("connect");
    let mut server = joined(server).expect("accept");
    client.send(b"first").expect("send");
    client.send(b"second").expect("send");
    let mut got = Vec::new();
    loop {
        match server.recv() {
            Ok(frame) => got.push(frame),
            Err(e) => {
                // Nothing after the attack is believed, and what came
                // before it is the client's own.
                assert!(got.iter().all(|f| f == b"first"), "{got:?}");
                assert!(matches!(server.recv(), Err(ChannelError::Broken)));
                return e;
            }
        }
    }
}

#[test]
fn a_tampered_frame_is_refused() {
    let e = attacked(Attack::Tamper);
    assert!(matches!(e, ChannelError::BadFrame), "{e:?}");
}

#[test]
fn a_replayed_frame_is_refused() {
    let e = attacked(Attack::Replay);
    assert!(matches!(e, ChannelError::BadFrame), "{e:?}");
}

#[test]
fn reordered_frames_are_refused() {
    let e = attacked(Attack::Reorder);
    assert!(matches!(e, ChannelError::BadFrame), "{e:?}");
}

#[test]
fn an_oversize_frame_is_refused_on_both_ends() {
    let e = attacked(Attack::Oversize);
    assert!(
        matches!(e, ChannelError::FrameTooLarge { len, .. } if len == MAX_FRAME_BYTES + 1),
        "{e:?}"
    );
    let (addr, server) = serve(LOGS, key(7));
    let mut client = Channel::connect(addr, LOGS, &key(7), 9, TIMEOUT).expect("connect");
    let mut server = joined(server).expect("accept");
    let too_big = vec![0u8; MAX_FRAME_BYTES + 1];
    assert!(matches!(
        client.send(&too_big),
        Err(ChannelError::FrameTooLarge { .. })
    ));
    // Refused before a byte left: the channel goes on.
    client.send(b"after").expect("send");
    assert_eq!(server.recv().expect("recv"), b"after");
}

#[test]
fn a_closed_peer_is_reported() {
    let (addr, server) = serve(LOGS, key(7));
    let client = Channel::connect(addr, LOGS, &key(7), 9, TIMEOUT).expect("connect");
    let mut server = joined(server).expect("accept");
    drop(client);
    assert!(matches!(server.recv(), Err(ChannelError::Closed)));
}
