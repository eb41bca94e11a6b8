//! The REST and WebSocket listener: our own accept loop in front of hyper,
//! so that every connection is bounded in number and in time.
//!
//! A connection is admitted only within `[http] max_connections` overall
//! and `max_connections_per_ip` from its source address; others are closed
//! as soon as accepted, and the overall limit stays below the process's
//! descriptor limit ([`raise_fd_limit`]), so a flood never stops the
//! server from accepting (and answering `/health`). Each admitted
//! connection gets TCP keepalive, the idle timeout ([`GuardedIo`]), a
//! deadline for every request head (hyper's header read timeout, which
//! also ends a kept-alive connection that sends nothing more) and, through
//! [`body_deadline`], for every request body. TLS, when configured, is
//! negotiated within the header timeout.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{HeaderValue, CONNECTION};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::{Extension, Router};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tower::Layer;

use crate::config::{HttpConfig, TlsConfig};
use crate::conn_io::{ConnectionLimits, GuardedIo};
use crate::stats::HttpStats;
use crate::AppState;
use exchange_node::limits::{ACCEPT_RETRY, FD_HEADROOM};

#[derive(Debug, Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("no certificate in {0}")]
    NoCertificate(PathBuf),
    #[error("the certificate or key is not usable: {0}")]
    Rustls(#[from] rustls::Error),
}

fn pem_error(path: &Path) -> impl FnOnce(rustls::pki_types::pem::Error) -> TlsError + '_ {
    move |source| TlsError::Pem {
        path: path.to_path_buf(),
        source,
    }
}

/// A TLS acceptor for HTTP/1.1 over the configured certificate and key.
pub fn tls_acceptor(config: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let certs = CertificateDer::pem_file_iter(&config.cert_path)
        .map_err(pem_error(&config.cert_path))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem_error(&config.cert_path))?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate(config.cert_path.clone()));
    }
    let key =
        PrivateKeyDer::from_pem_file(&config.key_path).map_err(pem_error(&config.key_path))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}

/// Raises the soft open-file limit to the hard one and returns it (`None`
/// where it cannot be read): connections are refused by our own limit
/// long before the kernel refuses descriptors.
pub fn raise_fd_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

/// `max_connections`, lowered if the descriptor limit leaves less than
/// [`FD_HEADROOM`] beyond it.
pub fn effective_max_connections(configured: usize, fd_limit: Option<u64>) -> usize {
    match fd_limit {
        Some(fds) => {
            let room = usize::try_from(fds.saturating_sub(FD_HEADROOM)).unwrap_or(usize::MAX);
            configured.min(room).max(1)
        }
        None => configured,
    }
}

/// What a listener shares with its connections.
pub struct Listener {
    pub tcp: TcpListener,
    pub tls: Option<TlsAcceptor>,
    pub http: HttpConfig,
    pub max_connections: usize,
    pub stats: Arc<HttpStats>,
}

/// Serves `router` on the listener until `shutdown` completes, then lets
/// every open request finish (kept-alive connections close at once) and
/// returns once they have. WebSockets are not waited for: they end with
/// the runtime.
pub async fn serve(listener: Listener, router: Router, shutdown: impl Future<Output = ()>) {
    let Listener {
        tcp,
        tls,
        http,
        max_connections,
        stats,
    } = listener;
    let limits = ConnectionLimits::new(
        max_connections,
        http.max_connections_per_ip.min(max_connections),
        stats.clone(),
    );
    let (stop, stopping) = watch::channel(false);
    // One clone per connection task, until its HTTP part ends: a
    // WebSocket lives on in a task of its own and does not hold the stop.
    let tasks = Arc::new(());
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = tcp.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors or memory: the backlog waits, the
                // open connections go on.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Some(permit) = limits.admit(peer.ip()) else {
            stats.connection_refused();
            drop(stream);
            continue;
        };
        configure(&stream, &http);
        let io = GuardedIo::new(stream, http.idle_timeout(), permit);
        let connection = Connection {
            peer,
            router: router.clone(),
            http: http.clone(),
            stopping: stopping.clone(),
            _task: tasks.clone(),
        };
        match tls.clone() {
            Some(tls) => tokio::spawn(connection.serve_tls(tls, io)),
            None => tokio::spawn(connection.serve(io)),
        };
    }
    drop(tcp);
    let _ = stop.send(true);
    while Arc::strong_count(&tasks) > 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Nagle's algorithm would hold small frames (market data, order updates)
/// for the peer's delayed ACK; keepalive finds peers that vanished.
fn configure(stream: &TcpStream, http: &HttpConfig) {
    let _ = stream.set_nodelay(true);
    if let Some(after) = http.tcp_keepalive() {
        let keepalive = socket2::TcpKeepalive::new()
            .with_time(after)
            .with_interval(after.min(Duration::from_secs(10)));
        let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
    }
}

struct Connection {
    peer: SocketAddr,
    router: Router,
    http: Arc<HttpConfig>,
    stopping: watch::Receiver<bool>,
    _task: Arc<()>,
}

impl Connection {
    async fn serve_tls(self, tls: TlsAcceptor, io: GuardedIo) {
        match tokio::time::timeout(self.http.header_timeout(), tls.accept(io)).await {
            Ok(Ok(stream)) => self.serve(stream).await,
            Ok(Err(error)) => tracing::debug!(peer = %self.peer, %error, "TLS handshake failed"),
            Err(_) => tracing::debug!(peer = %self.peer, "TLS handshake timed out"),
        }
    }

    async fn serve<I>(mut self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service =
            TowerToHyperService::new(Extension(ConnectInfo(self.peer)).layer(self.router.clone()));
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.http.header_timeout())
            .keep_alive(true);
        let connection = builder
            .serve_connection(TokioIo::new(io), service)
            .with_upgrades();
        tokio::pin!(connection);
        tokio::select! {
            _ = connection.as_mut() => return,
            _ = self.stopping.wait_for(|stop| *stop) => {}
        }
        connection.as_mut().graceful_shutdown();
        let _ = connection.await;
    }
}

/// The request body did not arrive whole within `[http] body_timeout_ms`.
#[derive(Debug, Error)]
#[error("the request body did not arrive within the body timeout")]
pub struct BodyTimeout;

/// A body that fails with [`BodyTimeout`] once its deadline passes.
struct DeadlineBody {
    inner: Body,
    deadline: Instant,
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            std::task::Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    std::task::Poll::Ready(()) => {
                        std::task::Poll::Ready(Some(Err(axum::Error::new(BodyTimeout))))
                    }
                    std::task::Poll::Pending => std::task::Poll::Pending,
                }
            }
            ready => ready,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Whether `error` (from reading a body) is a [`BodyTimeout`].
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<BodyTimeout>() {
            return true;
        }
        next = error.source();
    }
    false
}

/// Gives the request's body `[http] body_timeout_ms` from now to arrive,
/// and closes the connection after a response that gave up on it: a body
/// still trickling in cannot be skipped to reach the next request.
pub async fn body_deadline(State(app): State<AppState>, request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let deadline = Instant::now() + app.gateway.http.body_timeout();
    let request = request.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            deadline,
            timer: None,
        })
    });
    let mut response = next.run(request).await;
    if response.status() == StatusCode::REQUEST_TIMEOUT {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads a whole body within its deadline (tests).
#[cfg(test)]
async fn collect(body: Body) -> Result<Bytes, axum::Error> {
    use http_body_util::BodyExt;
    Ok(body.collect().await?.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    /// A body that sends a first piece and then nothing more.
    struct Stalled(bool);

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<Frame<Bytes>, io::Error>>> {
            if self.0 {
                return std::task::Poll::Pending;
            }
            self.0 = true;
            std::task::Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"{\"par")))))
        }
    }

    #[tokio::test]
    async fn a_body_that_stops_arriving_fails_with_the_timeout() {
        let started = std::time::Instant::now();
        let timed = Body::new(DeadlineBody {
            inner: Body::new(Stalled(false)),
            deadline: Instant::now() + Duration::from_millis(200),
            timer: None,
        });
        let error = collect(timed).await.unwrap_err();
        assert!(is_body_timeout(&error), "{error}");
        assert!(started.elapsed() >= Duration::from_millis(150));
    }

    /// Handlers see the peer's address as axum's `ConnectInfo`, and a
    /// stop returns once the open requests are done.
    #[tokio::test]
    async fn handlers_see_the_peer_address_and_a_stop_returns() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let router = Router::new().route(
            "/peer",
            axum::routing::get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                peer.ip().to_string()
            }),
        );
        let listener = Listener {
            tcp,
            tls: None,
            http: HttpConfig::default(),
            max_connections: 8,
            stats: Arc::default(),
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve(listener, router, async move {
            let _ = stopped.await;
        }));
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("127.0.0.1"), "{answer}");
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("the listener stops")
            .unwrap();
    }

    #[tokio::test]
    async fn accepted_sockets_get_keepalive_and_no_delay() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let http = HttpConfig {
            tcp_keepalive_secs: 45,
            ..HttpConfig::default()
        };
        configure(&accepted, &http);
        let socket = socket2::SockRef::from(&accepted);
        assert!(socket.keepalive().unwrap());
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(45)
        );
        assert!(accepted.nodelay().unwrap());
    }

    #[test]
    fn the_connection_limit_leaves_descriptor_headroom() {
        assert_eq!(effective_max_connections(4_096, Some(1_024)), 1_024 - 512);
        assert_eq!(effective_max_connections(100, Some(1_048_576)), 100);
        assert_eq!(effective_max_connections(100, Some(10)), 1);
        assert_eq!(effective_max_connections(100, None), 100);
    }
}
