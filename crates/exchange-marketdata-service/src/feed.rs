//! The binary feed's sockets: MoldUDP64 packets out over UDP (unicast
//! to each configured receiver and/or to a multicast group), and the TCP
//! retransmission and snapshot service.
//!
//! Sending never waits: the socket is non-blocking and a packet the
//! kernel will not take is dropped like any packet lost on the way;
//! receivers recover it from the retransmission service.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use exchange_marketdata::mold::{self, Request as FeedRequest, REQUEST_LEN};
use exchange_marketdata::publisher::Publisher;
use exchange_marketdata::wire::Message;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use super::{Request, Stats};
use crate::config::MarketDataConfig;

pub(crate) struct Feed {
    socket: Option<UdpSocket>,
    targets: Vec<SocketAddr>,
    publisher: Arc<Mutex<Publisher>>,
    last_sent: Instant,
    stats: Arc<Stats>,
}

/// The publisher, even if a thread panicked holding it: its state is a
/// queue of bytes that stays consistent between calls.
pub(crate) fn lock(publisher: &Mutex<Publisher>) -> MutexGuard<'_, Publisher> {
    publisher.lock().unwrap_or_else(|e| e.into_inner())
}

fn udp_socket(config: &MarketDataConfig) -> io::Result<Option<UdpSocket>> {
    if config.feed_targets.is_empty() && config.multicast_group.is_none() {
        return Ok(None);
    }
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    if config.multicast_group.is_some() {
        socket.set_multicast_ttl_v4(config.multicast_ttl)?;
        socket.set_multicast_loop_v4(true)?;
        if let Some(interface) = config.multicast_interface {
            socket.set_multicast_if_v4(&interface)?;
        }
    }
    // A feed that only goes to this machine never needs more than loopback.
    let local_only = config.multicast_group.is_none()
        && config.feed_targets.iter().all(|t| t.ip().is_loopback());
    let ip = if local_only {
        Ipv4Addr::LOCALHOST
    } else {
        Ipv4Addr::UNSPECIFIED
    };
    socket.bind(&SocketAddr::V4(SocketAddrV4::new(ip, 0)).into())?;
    socket.set_nonblocking(true)?;
    Ok(Some(socket.into()))
}

/// A session name nobody used before on this host: the start time.
fn session_name() -> mold::Session {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    mold::session_from(&format!("{:010}", secs % 10_000_000_000))
}

impl Feed {
    /// `None` when the configuration publishes no binary feed at all.
    pub fn open(config: &MarketDataConfig, stats: Arc<Stats>) -> io::Result<Option<Feed>> {
        if !config.publishes_feed() {
            return Ok(None);
        }
        let socket = udp_socket(config)?;
        let mut targets = config.feed_targets.clone();
        targets.extend(config.multicast_group);
        let publisher = Publisher::new(
            session_name(),
            config.retransmit_buffer,
            config.max_packet_bytes.max(mold::HEADER_LEN + 64),
        );
        Ok(Some(Feed {
            socket,
            targets,
            publisher: Arc::new(Mutex::new(publisher)),
            last_sent: Instant::now(),
            stats,
        }))
    }

    pub fn publisher(&self) -> Arc<Mutex<Publisher>> {
        self.publisher.clone()
    }

    pub fn push(&mut self, messages: &[Message]) {
        if messages.is_empty() {
            return;
        }
        let mut publisher = lock(&self.publisher);
        for message in messages {
            publisher.push(message);
        }
    }

    /// Sends every finished packet and the one being filled.
    pub fn flush(&mut self) {
        let packets = {
            let mut publisher = lock(&self.publisher);
            publisher.flush();
            self.stats
                .feed_next_seq
                .store(publisher.next_seq(), Ordering::Relaxed);
            publisher.take_packets()
        };
        if packets.is_empty() {
            return;
        }
        for packet in &packets {
            self.send(packet);
        }
        self.stats
            .feed_packets
            .fetch_add(packets.len() as u64, Ordering::Relaxed);
    }

    fn send(&mut self, packet: &[u8]) {
        let Some(socket) = &self.socket else {
            return;
        };
        for target in &self.targets {
            if socket.send_to(packet, target).is_err() {
                self.stats.feed_send_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.last_sent = Instant::now();
    }

    /// When the next heartbeat is due: `interval` after the last packet of
    /// any kind, so an idle feed never goes longer than that in silence.
    pub fn heartbeat_due(&self, interval: Duration) -> Instant {
        self.last_sent + interval
    }

    /// A heartbeat if nothing went out for `interval`.
    pub fn heartbeat(&mut self, interval: Duration) {
        if Instant::now() >= self.heartbeat_due(interval) {
            let beat = lock(&self.publisher).heartbeat();
            self.send(&beat);
        }
    }

    /// Tells receivers the session is over (on shutdown).
    pub fn end_session(&mut self) {
        self.flush();
        let (session, next) = {
            let publisher = lock(&self.publisher);
            (publisher.session(), publisher.next_seq())
        };
        let mut end = mold::heartbeat(&session, next);
        end[18..20].copy_from_slice(&mold::END_OF_SESSION.to_be_bytes());
        self.send(&end);
    }
}

/// Accepts retransmission and snapshot clients until the task is aborted.
pub(crate) async fn serve(
    listener: TcpListener,
    publisher: Arc<Mutex<Publisher>>,
    requests: mpsc::Sender<Request>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of descriptors, say: back off instead of spinning.
                tracing::warn!(%error, "feed retransmission accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (publisher, requests) = (publisher.clone(), requests.clone());
        tokio::spawn(async move {
            if let Err(error) = connection(stream, publisher, requests).await {
                tracing::debug!(%peer, %error, "feed retransmission client left");
            }
        });
    }
}

async fn connection(
    mut stream: TcpStream,
    publisher: Arc<Mutex<Publisher>>,
    requests: mpsc::Sender<Request>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut raw = [0u8; REQUEST_LEN];
    loop {
        match stream.read_exact(&mut raw).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let body = match FeedRequest::decode(&raw) {
            Ok(FeedRequest::Retransmit {
                session,
                seq,
                count,
            }) => {
                let packet = lock(&publisher).retransmit(&session, seq, count);
                let mut body = Vec::with_capacity(packet.len() + 1);
                body.push(b'P');
                body.extend_from_slice(&packet);
                body
            }
            Ok(FeedRequest::Snapshot) => {
                let (reply, answer) = oneshot::channel();
                if requests
                    .send(Request::FeedSnapshot { reply })
                    .await
                    .is_err()
                {
                    return Ok(());
                }
                match answer.await {
                    Ok(body) => body,
                    Err(_) => return Ok(()),
                }
            }
            Err(error) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, error));
            }
        };
        stream.write_all(&mold::frame(&body)).await?;
    }
}
