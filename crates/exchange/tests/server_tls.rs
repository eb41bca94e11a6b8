//! `exchange serve` with `[http.tls]`: REST and WebSocket over TLS with a
//! certificate made for the test, and nothing in plain text.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use exchange_testkit::{free_port, parse_response, Response, ADMIN_TOKEN, DEADLINE};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::{json, Value};
use tungstenite::Message;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// The server process, killed when dropped.
struct TlsServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TlsServer {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A certificate for `localhost`, written as PEM files in `dir`; its DER.
fn certificate(dir: &Path) -> CertificateDer<'static> {
    let made =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("a certificate");
    std::fs::write(dir.join("cert.pem"), made.cert.pem()).expect("write the certificate");
    std::fs::write(dir.join("key.pem"), made.signing_key.serialize_pem()).expect("write the key");
    made.cert.der().clone()
}

fn start(dir: &Path) -> TlsServer {
    let port = free_port();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[http.tls]\ncert_path = \"{}\"\nkey_path = \"{}\"\n",
            dir.join("cert.pem").display(),
            dir.join("key.pem").display()
        ),
    )
    .expect("write the config");
    let log = dir.join("stderr.log");
    let child = Command::new(EXCHANGE)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--config")
        .arg(&config)
        .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("the stderr log"))
        .spawn()
        .expect("spawn the exchange binary");
    let server = TlsServer { child, port, log };
    let listening = format!("listening on https://127.0.0.1:{port}\n");
    let started = Instant::now();
    while !server.stderr().contains(&listening) {
        assert!(
            started.elapsed() < DEADLINE,
            "not listening in time:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

fn tls_stream(
    port: u16,
    trusted: &CertificateDer<'static>,
) -> StreamOwned<ClientConnection, TcpStream> {
    let mut roots = RootCertStore::empty();
    roots.add(trusted.clone()).expect("trust the certificate");
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = ServerName::try_from("localhost").expect("a server name");
    let connection = ClientConnection::new(Arc::new(config), name).expect("a TLS client");
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    StreamOwned::new(connection, tcp)
}

/// One request over a new TLS connection.
fn request(
    port: u16,
    trusted: &CertificateDer<'static>,
    method: &str,
    path: &str,
    body: &str,
) -> Response {
    let mut stream = tls_stream(port, trusted);
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: Bearer {ADMIN_TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    stream.write_all(body.as_bytes()).expect("send the body");
    let mut raw = Vec::new();
    // A peer may end without close_notify; what arrived is the answer.
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw).expect("an HTTP response over TLS")
}

#[test]
fn rest_and_websocket_are_served_over_tls_and_plain_text_is_not() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trusted = certificate(dir.path());
    let server = start(dir.path());
    let port = server.port;
    let started = Instant::now();
    while request(port, &trusted, "GET", "/ready", "").text() != "ready" {
        assert!(
            started.elapsed() < DEADLINE,
            "not ready:\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let health = request(port, &trusted, "GET", "/health", "");
    assert_eq!((health.status, health.text().as_str()), (200, "ok"));
    let created = request(port, &trusted, "POST", "/admin/accounts", "");
    assert_eq!(created.status, 201, "{}", created.text());
    let instruments = request(port, &trusted, "GET", "/v1/instruments", "").json();
    assert!(instruments.to_string().contains("BTC-USD"), "{instruments}");

    // WebSocket over the same TLS listener.
    let stream = tls_stream(port, &trusted);
    let (mut socket, _) = tungstenite::client(format!("wss://localhost:{port}/v1/ws"), stream)
        .expect("WebSocket handshake over TLS");
    let subscribe = json!({ "type": "subscribe", "channel": "ticker", "symbols": ["BTC-USD"],
                            "request_id": 1 });
    socket
        .send(Message::text(subscribe.to_string()))
        .expect("send");
    let answer: Value = loop {
        match socket.read().expect("an answer") {
            Message::Text(text) => break serde_json::from_str(text.as_str()).expect("JSON"),
            _ => continue,
        }
    };
    assert_eq!(answer["type"], "subscribed", "{answer}");

    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    plain
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    assert!(
        !raw.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
}

#[test]
fn an_unusable_certificate_stops_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("cert.pem"), "not a certificate").expect("write");
    std::fs::write(dir.path().join("key.pem"), "not a key").expect("write");
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[http.tls]\ncert_path = \"{}\"\nkey_path = \"{}\"\n",
            dir.path().join("cert.pem").display(),
            dir.path().join("key.pem").display()
        ),
    )
    .expect("write the config");
    let output = Command::new(EXCHANGE)
        .arg("serve")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run the exchange binary");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TLS: no certificate in"), "{stderr}");
}
