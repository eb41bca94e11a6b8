//! The TCP side: accept connections (through a TLS handshake when
//! configured), read each one's first message (the Logon), and hand the
//! connection to the task of the session its CompIDs name. A connection
//! that names no configured session, or sends nothing readable, gets a
//! Logout saying why and is closed.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::FixConfig;
use exchange_node::Handle;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::admission::{Admission, Full};
use crate::frame::{begins_like_fix, next_frame, Frame, FrameError};
use crate::inbound::Role;
use crate::message::Message;
use crate::runner::{self, SessionSpec};
use crate::session::{sessionless_logout, Settings, CREDENTIALS_REFUSED, NOT_A_LOGON};
use crate::store::FileStore;
use crate::throttle::Throttle;
use crate::{session_dir, tags, time, validate, FixError};

/// How long we wait for the answer to our Logout.
pub const LOGOUT_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection's byte stream: TCP, or TLS over TCP.
pub trait FixStream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> FixStream for T {}

pub type BoxedStream = Box<dyn FixStream>;

/// An accepted connection whose first message named a session.
pub struct Connection {
    pub stream: BoxedStream,
    pub first: Message,
    /// Bytes read after the first message.
    pub rest: Vec<u8>,
}

type Routes = Arc<HashMap<(String, String), mpsc::Sender<Connection>>>;

/// What the acceptor allows connections that have not logged on.
#[derive(Clone)]
struct Gate {
    admission: Admission,
    /// For the TLS handshake and the Logon together.
    logon_timeout: Duration,
}

/// A session's store, and its id in the log
/// ([`crate::continuity::owner_id`]).
fn open_store(dir: &Path) -> Result<(FileStore, u64), FixError> {
    Ok((FileStore::open(dir)?, crate::continuity::owner_id(dir)?))
}

/// Binds the acceptor, opens every session's store and starts one task per
/// session. Returns the address it listens on and a task that ends after
/// `stopping` turns true and every session has logged out.
pub fn start(
    handle: Handle,
    config: &FixConfig,
    data_dir: &Path,
    stopping: watch::Receiver<bool>,
) -> Result<(std::net::SocketAddr, JoinHandle<()>), FixError> {
    validate(config)?;
    let tls = crate::tls::acceptor(config)?;
    let bind_error = |source| FixError::Bind {
        addr: config.listen,
        source,
    };
    let std_listener = std::net::TcpListener::bind(config.listen).map_err(bind_error)?;
    std_listener.set_nonblocking(true).map_err(bind_error)?;
    let listener = TcpListener::from_std(std_listener).map_err(bind_error)?;
    let addr = listener.local_addr().map_err(bind_error)?;
    let mut routes = HashMap::new();
    let mut tasks = Vec::new();
    for session in &config.sessions {
        let (store, owner) = open_store(&session_dir(data_dir, session))?;
        let (connections, incoming) = mpsc::channel(4);
        routes.insert(
            (
                session.sender_comp_id.clone(),
                session.target_comp_id.clone(),
            ),
            connections,
        );
        let role = match session.account {
            Some(account) => Role::Trading { account },
            None => Role::DropCopy {
                accounts: session.drop_copy_accounts.clone(),
            },
        };
        let spec = SessionSpec {
            settings: Settings {
                our_comp_id: session.target_comp_id.clone(),
                their_comp_id: session.sender_comp_id.clone(),
                password: session.password.clone(),
                max_skew_ns: config.max_clock_skew_secs.saturating_mul(1_000_000_000),
                logout_timeout_ns: LOGOUT_TIMEOUT.as_nanos() as u64,
            },
            role,
            cancel_on_disconnect: session.cancel_on_disconnect,
            throttle: Throttle::new(config.messages_per_sec, config.message_burst),
            owner,
        };
        tasks.push(tokio::spawn(runner::run(
            spec,
            store,
            handle.clone(),
            incoming,
            stopping.clone(),
        )));
    }
    eprintln!(
        "fix gateway listening on {addr} ({}, {} sessions)",
        if tls.is_some() { "TLS" } else { "plain TCP" },
        config.sessions.len()
    );
    let routes: Routes = Arc::new(routes);
    let gate = Gate {
        admission: Admission::new(
            config.max_pending_logons,
            config.max_pending_logons_per_source,
        ),
        logon_timeout: Duration::from_millis(config.logon_timeout_ms),
    };
    let task = tokio::spawn(async move {
        accept_loop(listener, tls, routes, gate, stopping).await;
        for task in tasks {
            let _ = task.await;
        }
    });
    Ok((addr, task))
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    routes: Routes,
    gate: Gate,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tracing::debug!(%peer, "FIX connection accepted");
                    // Connections that never log on must not pile up
                    // tasks and TLS handshakes without bound, nor one
                    // source take every slot.
                    let slot = match gate.admission.admit(peer.ip()) {
                        Ok(slot) => slot,
                        Err(full) => {
                            let why = match full {
                                Full::All => "too many connections waiting to log on",
                                Full::Source => {
                                    "too many connections from this source waiting to log on"
                                }
                            };
                            tracing::warn!(%peer, "FIX connection closed: {why}");
                            drop(stream);
                            continue;
                        }
                    };
                    let (tls, routes, timeout) = (tls.clone(), routes.clone(), gate.logon_timeout);
                    tokio::spawn(async move {
                        handshake(stream, tls, routes, timeout).await;
                        drop(slot);
                    });
                }
                Err(error) => {
                    // Out of file descriptors and the like: pause, keep serving.
                    tracing::warn!(%error, "FIX accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = stopping.changed() => return,
        }
    }
}

/// Why the first message could not be had.
enum FirstError {
    Frame(FrameError),
    Io,
}

async fn read_first(
    stream: &mut BoxedStream,
    buf: &mut Vec<u8>,
) -> Result<(Vec<u8>, usize), FirstError> {
    loop {
        // Whatever the first bytes of a connection are, they are not a FIX
        // client's: within a session such bytes are skipped as garbled.
        if !begins_like_fix(buf) {
            return Err(FirstError::Frame(FrameError::BadBeginString));
        }
        let mut start = 0;
        loop {
            match next_frame(&buf[start..]) {
                Ok(Some((Frame::Message(raw), used))) => return Ok((raw, start + used)),
                // A garbled Logon is ignored, as any garbled message is.
                Ok(Some((Frame::Garbled { .. }, used))) => start += used,
                Ok(None) => break,
                Err(error) => return Err(FirstError::Frame(error)),
            }
        }
        buf.drain(..start);
        match stream.read_buf(buf).await {
            Ok(0) | Err(_) => return Err(FirstError::Io),
            Ok(_) => {}
        }
    }
}

/// A Logout outside any session (no sequence numbers to keep): for a
/// connection that names no configured session or sends garbage.
pub fn standalone_logout(first: Option<&Message>, text: &str) -> Vec<u8> {
    sessionless_logout(first, text, time::now_ns())
}

/// Says why in a Logout, then closes.
pub async fn refuse(mut stream: BoxedStream, first: Option<&Message>, text: &str) {
    tracing::info!(reason = text, "FIX connection refused");
    let _ = tokio::time::timeout(
        LOGOUT_TIMEOUT,
        stream.write_all(&standalone_logout(first, text)),
    )
    .await;
    let _ = stream.shutdown().await;
}

async fn handshake(
    tcp: TcpStream,
    tls: Option<TlsAcceptor>,
    routes: Routes,
    logon_timeout: Duration,
) {
    let _ = tcp.set_nodelay(true);
    // One deadline for the TLS handshake and the Logon together.
    let deadline = tokio::time::Instant::now() + logon_timeout;
    let mut stream: BoxedStream = match tls {
        None => Box::new(tcp),
        Some(tls) => match tokio::time::timeout_at(deadline, tls.accept(tcp)).await {
            Ok(Ok(stream)) => Box::new(stream),
            Ok(Err(error)) => {
                tracing::info!(%error, "FIX TLS handshake failed");
                return;
            }
            Err(_) => return,
        },
    };
    let mut buf = Vec::with_capacity(1024);
    let (raw, used) = match tokio::time::timeout_at(deadline, read_first(&mut stream, &mut buf))
        .await
    {
        Ok(Ok(first)) => first,
        Ok(Err(FirstError::Frame(error))) => return refuse(stream, None, &error.to_string()).await,
        Ok(Err(FirstError::Io)) => return,
        Err(_) => {
            let text = format!("no Logon within {} ms", logon_timeout.as_millis());
            return refuse(stream, None, &text).await;
        }
    };
    let first = Message::parse(raw);
    // Everything checked before the CompIDs are looked up is checked the
    // same way for every connection, so the answers do not tell whether
    // a session exists.
    if first.msg_type() != Some(tags::msg::LOGON.as_bytes()) {
        return refuse(stream, Some(&first), NOT_A_LOGON).await;
    }
    let key = (
        first
            .text(tags::SENDER_COMP_ID)
            .unwrap_or_default()
            .to_string(),
        first
            .text(tags::TARGET_COMP_ID)
            .unwrap_or_default()
            .to_string(),
    );
    let Some(session) = routes.get(&key) else {
        return refuse(stream, Some(&first), CREDENTIALS_REFUSED).await;
    };
    let rest = buf.get(used..).unwrap_or_default().to_vec();
    if let Err(refused) = session
        .send(Connection {
            stream,
            first,
            rest,
        })
        .await
    {
        let Connection { stream, first, .. } = refused.0;
        refuse(stream, Some(&first), "the exchange is shutting down").await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads until the acceptor closes the connection.
    async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
        let mut seen = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut seen));
        read.await.expect("closed in time").expect("read");
        seen
    }

    #[tokio::test]
    async fn connections_waiting_to_log_on_are_bounded() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (_stop, stopping) = watch::channel(false);
        let gate = Gate {
            admission: Admission::new(1, 1),
            logon_timeout: Duration::from_secs(10),
        };
        let routes: Routes = Arc::new(HashMap::new());
        tokio::spawn(accept_loop(listener, None, routes, gate, stopping));

        let mut waiting = TcpStream::connect(addr).await.expect("connect");
        // Past the limit: closed without a word while the first waits.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut refused = TcpStream::connect(addr).await.expect("connect");
        assert!(until_closed(&mut refused).await.is_empty());
        // The first one is still served, and once it is done the next is.
        waiting
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .await
            .expect("write");
        assert!(until_closed(&mut waiting).await.starts_with(b"8=FIX.4.4"));
        let mut next = TcpStream::connect(addr).await.expect("connect");
        next.write_all(b"GET / HTTP/1.1\r\n\r\n")
            .await
            .expect("write");
        assert!(until_closed(&mut next).await.starts_with(b"8=FIX.4.4"));
    }

    async fn connect_from(source: [u8; 4], to: std::net::SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind(std::net::SocketAddr::from((source, 0)))
            .expect("bind a loopback source");
        socket.connect(to).await.expect("connect")
    }

    #[tokio::test]
    async fn one_source_cannot_take_the_slots_of_others() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (_stop, stopping) = watch::channel(false);
        let gate = Gate {
            admission: Admission::new(8, 2),
            logon_timeout: Duration::from_secs(10),
        };
        tokio::spawn(accept_loop(listener, None, Arc::default(), gate, stopping));

        let mut idle = Vec::new();
        for _ in 0..2 {
            idle.push(connect_from([127, 0, 0, 2], addr).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        // The flooding source's next connection is closed without a word...
        let mut refused = connect_from([127, 0, 0, 2], addr).await;
        assert!(until_closed(&mut refused).await.is_empty());
        // ...while another source is served.
        let mut other = connect_from([127, 0, 0, 3], addr).await;
        other
            .write_all(b"GET / HTTP/1.1\r\n\r\n")
            .await
            .expect("write");
        assert!(until_closed(&mut other).await.starts_with(b"8=FIX.4.4"));
    }

    #[tokio::test]
    async fn a_connection_without_a_logon_is_closed_at_the_logon_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (_stop, stopping) = watch::channel(false);
        let gate = Gate {
            admission: Admission::new(8, 2),
            logon_timeout: Duration::from_millis(200),
        };
        tokio::spawn(accept_loop(listener, None, Arc::default(), gate, stopping));
        let mut idle = TcpStream::connect(addr).await.expect("connect");
        let said = until_closed(&mut idle).await;
        let said = String::from_utf8_lossy(&said);
        assert!(said.contains("no Logon within 200 ms"), "{said}");
    }
}
