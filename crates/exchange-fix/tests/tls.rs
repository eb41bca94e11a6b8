//! The acceptor over TLS: a certificate made for the test, a rustls
//! client logging on through it; and the start refused when the
//! certificate or key cannot be used.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use exchange_fix::config::FixConfig;
use exchange_fix::FixError;
use exchange_testkit::fix::{session, Client, Node};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

struct Certificate {
    der: CertificateDer<'static>,
    cert: PathBuf,
    key: PathBuf,
}

fn certificate(dir: &Path) -> Certificate {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("a self-signed certificate");
    let cert = dir.join("fix.crt");
    let key = dir.join("fix.key");
    std::fs::write(&cert, made.cert.pem()).expect("write the certificate");
    std::fs::write(&key, made.signing_key.serialize_pem()).expect("write the key");
    Certificate {
        der: made.cert.der().clone(),
        cert,
        key,
    }
}

fn tls_config(cert: &Certificate) -> FixConfig {
    FixConfig {
        tls_cert: Some(cert.cert.clone()),
        tls_key: Some(cert.key.clone()),
        sessions: vec![session("A", 1, false)],
        ..FixConfig::default()
    }
}

async fn connect_tls(addr: std::net::SocketAddr, trusted: &CertificateDer<'static>) -> Client {
    let mut roots = RootCertStore::empty();
    roots.add(trusted.clone()).expect("a trust anchor");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("a server name");
    let stream = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("the TLS handshake");
    Client::logon_over(Box::new(stream), "A").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_logs_on_and_trades_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let cert = certificate(dir.path());
    let node = Node::start_with(dir.path(), tls_config(&cert), &[1]).await;
    let mut a = connect_tls(node.addr, &cert.der).await;
    a.send(
        "D",
        "11=t1|55=BTC-USD|54=1|60=20240101-00:00:00|38=0.1|40=2|44=59000|",
    )
    .await;
    let ack = a.recv().await;
    assert_eq!((ack.text(150), ack.text(11)), (Some("0"), Some("t1")));
    a.send("5", "").await;
    assert_eq!(a.recv().await.text(35), Some("5"));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_fix_to_a_tls_acceptor_gets_nothing_back() {
    let dir = tempfile::tempdir().unwrap();
    let cert = certificate(dir.path());
    let node = Node::start_with(dir.path(), tls_config(&cert), &[1]).await;
    let mut plain = TcpStream::connect(node.addr).await.expect("connect");
    // A FIX Logon where a TLS ClientHello belongs ends the connection
    // without a FIX answer.
    tokio::io::AsyncWriteExt::write_all(&mut plain, b"8=FIX.4.4\x019=5\x0135=A\x0110=000\x01")
        .await
        .expect("write");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        plain.read_to_end(&mut answer),
    )
    .await
    .expect("the acceptor closes the connection");
    assert!(read.is_err() || !answer.starts_with(b"8=FIX"), "{answer:?}");
    node.stop().await;
}

fn start_error(config: &FixConfig, dir: &Path) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (pipeline, _) = exchange_node::recovery::start(
            dir,
            exchange_node::sequencer::PipelineConfig {
                submit_queue: 16,
                core_queue: 16,
                events_buffer: 16,
                snapshot_every: 0,
                snapshot_dir: exchange_node::recovery::snapshot_dir(dir),
                master_key: exchange_node::master_key::MasterKey::from_bytes([1; 32]),
            },
        )
        .expect("a node");
        let (_stop, stopping) = tokio::sync::watch::channel(false);
        let config = FixConfig {
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            ..config.clone()
        };
        let result = exchange_fix::acceptor::start(pipeline.handle.clone(), &config, dir, stopping);
        let error = match result {
            Err(error) => error,
            Ok(_) => panic!("the acceptor started with {config:?}"),
        };
        assert!(matches!(error, FixError::Tls { .. } | FixError::Config(_)));
        error.to_string()
    })
}

#[test]
fn an_unusable_certificate_or_key_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cert = certificate(dir.path());
    let missing = dir.path().join("missing.crt");
    let mut config = tls_config(&cert);
    config.tls_cert = Some(missing.clone());
    let error = start_error(&config, &dir.path().join("a"));
    assert!(error.contains("missing.crt"), "{error}");

    let garbage = dir.path().join("garbage.key");
    std::fs::write(&garbage, "not a key").unwrap();
    let mut config = tls_config(&cert);
    config.tls_key = Some(garbage);
    let error = start_error(&config, &dir.path().join("b"));
    assert!(error.contains("garbage.key"), "{error}");

    let mut config = tls_config(&cert);
    config.tls_key = None;
    let error = start_error(&config, &dir.path().join("c"));
    assert!(
        error.contains("tls_cert and tls_key go together"),
        "{error}"
    );
}
