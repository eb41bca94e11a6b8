//! `HOST:PORT` addresses: their syntax, checked when the configuration
//! is read, and their resolution, done at each connection attempt.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use exchange_replication::transport::{AddrError, DialError, Dialer, PeerAddr, SystemResolver};

fn parse(text: &str) -> Result<PeerAddr, AddrError> {
    text.parse()
}

#[test]
fn names_and_ip_literals_parse_and_print_back() {
    for text in [
        "replica-1.replica:7000",
        "replica-1.replica.exchange.svc.cluster.local.:7000",
        "localhost:1",
        "_raft.node-2:65535",
        "10.0.0.7:7000",
        "[::1]:7000",
        "[fd00::1:2]:0",
    ] {
        let addr = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(addr.to_string(), text);
    }
}

#[test]
fn an_ip_literal_is_its_own_address_and_a_name_is_not() {
    let v4 = parse("10.0.0.7:7000").expect("v4");
    assert_eq!(
        v4.socket_addr(),
        Some("10.0.0.7:7000".parse().expect("addr"))
    );
    assert_eq!(v4.name(), None);
    let v6 = parse("[fd00::1]:7001").expect("v6");
    assert_eq!(
        v6.socket_addr(),
        Some("[fd00::1]:7001".parse().expect("addr"))
    );
    let name = parse(" Replica-2.Replica:7000 ").expect("name");
    assert_eq!(name.socket_addr(), None);
    assert_eq!(name.name(), Some("replica-2.replica"));
    assert_eq!(name.port(), 7000);
    let from: PeerAddr = SocketAddr::from(([127, 0, 0, 1], 9)).into();
    assert_eq!(from, parse("127.0.0.1:9").expect("literal"));
}

/// The error a text should give, from the text.
type Expected = fn(String) -> AddrError;

#[test]
fn malformed_addresses_say_what_is_wrong() {
    let cases: [(&str, Expected); 14] = [
        ("replica-1", AddrError::NoPort),
        ("replica-1:", AddrError::NoPort),
        ("replica-1:70000", AddrError::BadPort),
        ("replica-1:+7", AddrError::BadPort),
        ("replica-1:x", AddrError::BadPort),
        (":7000", AddrError::NoHost),
        ("::1:7000", AddrError::UnbracketedIpv6),
        ("[::1:7000", AddrError::BadIpv6),
        ("[10.0.0.1]:7000", AddrError::BadIpv6),
        ("replica 1:7000", AddrError::BadHost),
        ("replica..1:7000", AddrError::BadHost),
        ("-replica:7000", AddrError::BadHost),
        ("10.1:7000", AddrError::BadHost),
        ("1.2.3.400:7000", AddrError::BadHost),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(text), Err(expected(text.to_string())), "{text}");
    }
    let long = format!("{}.example:1", "a".repeat(64));
    assert!(matches!(parse(&long), Err(AddrError::BadHost(_))));
}

#[test]
fn a_name_listens_everywhere_and_a_literal_where_it_says() {
    let literal = parse("10.0.0.7:7000").expect("literal");
    assert_eq!(
        literal.listen_addrs(),
        vec!["10.0.0.7:7000".parse().expect("addr")]
    );
    let local = parse("localhost:7000").expect("localhost");
    assert_eq!(
        local.listen_addrs(),
        vec!["127.0.0.1:7000".parse().expect("addr")]
    );
    let name = parse("replica-1.replica:7000").expect("name");
    let wildcard: Vec<SocketAddr> = vec![
        "[::]:7000".parse().expect("v6"),
        "0.0.0.0:7000".parse().expect("v4"),
    ];
    assert_eq!(name.listen_addrs(), wildcard);
}

#[test]
fn a_dialer_connects_to_a_name_through_the_system_resolver() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("local").port();
    let dialer = Dialer::system(parse(&format!("localhost:{port}")).expect("addr"));
    let stream = dialer.connect(Duration::from_secs(2)).expect("connect");
    let (_, from) = listener.accept().expect("accept");
    assert_eq!(stream.local_addr().expect("local"), from);
}

#[test]
fn a_name_that_does_not_resolve_is_a_failed_attempt() {
    // `.invalid` never resolves (RFC 6761).
    let addr = parse("replica-9.invalid:7000").expect("addr");
    assert!(addr.resolve(&SystemResolver).is_err());
    let dialer = Dialer::system(addr);
    let failed = dialer.connect(Duration::from_millis(200));
    assert!(
        matches!(failed, Err(DialError::Unresolved { .. })),
        "{failed:?}"
    );
}
