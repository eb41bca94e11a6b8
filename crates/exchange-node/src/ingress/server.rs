//! The leader's side of the ingress: one thread per gateway connection
//! puts its commands on the node's submit queue, in the order they came.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use exchange_replication::transport::channel::{Channel, ChannelError};
use exchange_replication::transport::ClusterKey;

use super::wire::{decode_upstream, encode_downstream, Downstream, Refusal, Upstream};
use super::PROTOCOL;
use crate::entry::LogEntry;
use crate::sequencer::{Handle, SubmitError};

/// Gateway connections served at once; one more is closed at accept.
pub const MAX_GATEWAYS: usize = 256;
/// The handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// A silent connection hears a heartbeat this often...
const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);
/// ...and is closed after this many heartbeats without a frame back.
const SILENT_HEARTBEATS: u32 = 10;

/// The running listener; dropping it stops accepting, and the connections
/// being served end within a heartbeat.
pub struct IngressServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl IngressServer {
    pub fn start(
        addr: SocketAddr,
        key: ClusterKey,
        node_id: u64,
        handle: Handle,
    ) -> std::io::Result<IngressServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("ingress-accept".into())
                .spawn(move || accept_loop(listener, key, node_id, handle, stop))?
        };
        tracing::info!(%addr, "ingress listening for gateways");
        Ok(IngressServer {
            addr,
            stop,
            acceptor: Some(acceptor),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for IngressServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    key: ClusterKey,
    node_id: u64,
    handle: Handle,
    stop: Arc<AtomicBool>,
) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if open.fetch_add(1, Ordering::AcqRel) >= MAX_GATEWAYS {
            open.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!("ingress: too many gateway connections; one refused");
            continue;
        }
        let (key, handle, open, stop) = (key.clone(), handle.clone(), open.clone(), stop.clone());
        let spawned = std::thread::Builder::new()
            .name("ingress".into())
            .spawn(move || {
                serve_gateway(stream, &key, node_id, &handle, &stop);
                open.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            tracing::warn!("ingress: no thread for a gateway connection");
        }
    }
}

fn serve_gateway(
    stream: TcpStream,
    key: &ClusterKey,
    node_id: u64,
    handle: &Handle,
    stop: &AtomicBool,
) {
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().ok();
    let mut channel = match Channel::accept(stream, PROTOCOL, key, node_id, HANDSHAKE_TIMEOUT) {
        Ok(channel) => channel,
        Err(error) => {
            tracing::warn!(?peer, %error, "ingress: handshake refused");
            return;
        }
    };
    if let Err(refusal) = handle.check_leader() {
        let leader = match refusal {
            SubmitError::NotLeader { leader, .. } => leader,
            _ => None,
        };
        let _ = channel.send(&encode_downstream(&Downstream::NotLeader { leader }));
        return;
    }
    if channel
        .send(&encode_downstream(&Downstream::Ready { node_id }))
        .is_err()
        || channel.set_read_timeout(Some(HEARTBEAT_EVERY)).is_err()
    {
        return;
    }
    tracing::info!(
        ?peer,
        gateway = channel.peer_id(),
        "ingress: gateway connected"
    );
    let outcome = relay(&mut channel, handle, stop);
    tracing::info!(
        ?peer,
        gateway = channel.peer_id(),
        outcome,
        "ingress: gateway gone"
    );
}

/// Puts the gateway's commands on the submit queue until it goes, this
/// node stops leading, or the node stops; says which. A heartbeat goes
/// back whenever nothing else did for a while, busy or not, so that the
/// gateway can tell a live leader from a dead one. Ends within a
/// heartbeat once the server stops: the thread holds a handle, and the
/// node stops only once every handle is gone.
fn relay(channel: &mut Channel, handle: &Handle, stop: &AtomicBool) -> &'static str {
    let mut silent = 0;
    let mut last_sent = Instant::now();
    loop {
        if stop.load(Ordering::Acquire) {
            return "stopping";
        }
        if last_sent.elapsed() >= HEARTBEAT_EVERY {
            if channel
                .send(&encode_downstream(&Downstream::Heartbeat))
                .is_err()
            {
                return "closed";
            }
            last_sent = Instant::now();
        }
        let frame = match channel.recv() {
            Ok(frame) => frame,
            Err(error) if is_timeout(&error) => {
                silent += 1;
                if silent > SILENT_HEARTBEATS {
                    return "silent";
                }
                continue;
            }
            Err(_) => return "closed",
        };
        silent = 0;
        let entries = match decode_upstream(&frame) {
            Ok(Upstream::Heartbeat) => continue,
            Ok(Upstream::Submit(entries)) => entries,
            Err(error) => {
                tracing::warn!(%error, "ingress: a frame that does not decode; closing");
                return "malformed";
            }
        };
        match enqueue(entries, handle) {
            Ok(refused) => {
                for message in refused {
                    if channel.send(&encode_downstream(&message)).is_err() {
                        return "closed";
                    }
                    last_sent = Instant::now();
                }
            }
            Err(leader) => {
                let _ = channel.send(&encode_downstream(&Downstream::NotLeader { leader }));
                return "not leader";
            }
        }
    }
}

/// Queues each entry; the refusals to report, or `Err` with the leader
/// once this node no longer leads (the rest is not queued: the gateway
/// re-sends it to the new leader).
fn enqueue(entries: Vec<LogEntry>, handle: &Handle) -> Result<Vec<Downstream>, Option<u64>> {
    let mut refused: Vec<Downstream> = Vec::new();
    for entry in entries {
        let session_seq = match &entry {
            LogEntry::Sequenced { session, seq, .. } => Some((*session, *seq)),
            _ => None,
        };
        let why = match handle.submit_detached(entry) {
            Ok(()) => continue,
            Err(SubmitError::NotLeader { leader, .. }) => return Err(leader),
            // Passing: a full leader hands leadership over, and the
            // gateway then hears `NotLeader` and follows the new one.
            Err(SubmitError::Overloaded | SubmitError::NoSpace) => Refusal::Overloaded,
            // Queuing alone never hears of a session.
            Err(SubmitError::Stopped | SubmitError::SessionExpired) => Refusal::Stopped,
        };
        let Some((session, seq)) = session_seq else {
            continue;
        };
        match refused.last_mut() {
            Some(Downstream::Refused {
                why: last_why,
                session: last_session,
                seqs,
            }) if *last_why == why && *last_session == session => seqs.push(seq),
            _ => refused.push(Downstream::Refused {
                why,
                session,
                seqs: vec![seq],
            }),
        }
    }
    Ok(refused)
}

fn is_timeout(error: &ChannelError) -> bool {
    matches!(error, ChannelError::TimedOut)
}
