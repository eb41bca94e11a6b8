//! `exchange serve` flooded up to its open-file limit: the connection limit
//! stays below the descriptors the process has, so the server keeps
//! accepting, `/health` keeps answering on the metrics listener, and
//! everyone is served again once the flood ends.
//!
//! A file of its own: it lowers this test process's open-file limit, which
//! the server inherits.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use exchange_testkit::{free_port, wait_until, Client, Server};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");
/// Descriptors the server may have: 1100 - 512 kept free = 588 connections.
const FD_LIMIT: u64 = 1_100;

fn connect_from(source: [u8; 4], port: u16) -> TcpStream {
    let stream = exchange_testkit::connect_from(source.into(), port).expect("connect");
    stream.set_nonblocking(true).expect("non-blocking");
    stream
}

fn is_open(mut stream: &TcpStream) -> bool {
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn a_flood_to_the_descriptor_limit_leaves_the_server_answering() {
    let limit = libc::rlimit {
        rlim_cur: FD_LIMIT,
        rlim_max: FD_LIMIT,
    };
    // SAFETY: setrlimit reads only the struct passed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let dir = tempfile::tempdir().expect("temp dir");
    let metrics_port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[http]\nmetrics_bind = \"127.0.0.1:{metrics_port}\"\n"),
    )
    .expect("write the config");
    let server = Server::start_with(EXCHANGE, &dir.path().join("data"), Some(&config));
    assert!(
        server
            .stderr()
            .contains("allows 588 connections, not [http] max_connections = 4096"),
        "{}",
        server.stderr()
    );
    let port = server.api.port;
    // Three addresses, each within its own limit (256), together past
    // what the descriptors allow.
    let mut flood = Vec::new();
    for source in [[127, 0, 0, 2], [127, 0, 0, 3], [127, 0, 0, 4]] {
        for _ in 0..250 {
            let mut stream = connect_from(source, port);
            let _ = stream.write_all(b"GET /health HTTP/1.1\r\n");
            flood.push(stream);
        }
    }
    let mut open = flood.len();
    wait_until("the connections over the limit to be closed", || {
        open = flood.iter().filter(|stream| is_open(stream)).count();
        open <= 588
    });
    assert_eq!(open, 588);
    let scraper = Client { port: metrics_port };
    assert_eq!(scraper.get("/health").text(), "ok");
    let metrics = scraper.get("/metrics").text();
    assert!(
        metrics.contains("exchange_http_connections_refused_total 162\n"),
        "{metrics}"
    );
    drop(flood);
    wait_until("the main listener to answer again", || {
        server
            .api
            .try_request("GET", "/health", &[], b"")
            .is_ok_and(|r| r.text() == "ok")
    });
}
