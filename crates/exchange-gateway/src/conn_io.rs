//! What every accepted connection carries for its whole life, through TLS
//! and a WebSocket upgrade alike: its place in the connection limits, and
//! the idle timeout.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use exchange_node::source::source_of;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

use crate::stats::HttpStats;

/// Open connections, overall and by source address.
pub struct ConnectionLimits {
    max_total: usize,
    max_per_ip: usize,
    open: Mutex<Open>,
    stats: Arc<HttpStats>,
}

#[derive(Default)]
struct Open {
    total: usize,
    // Only addresses with a connection open: at most `max_total` entries.
    by_ip: HashMap<IpAddr, usize>,
}

/// One admitted connection; gives its place back when dropped.
pub struct Permit {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl ConnectionLimits {
    pub fn new(max_total: usize, max_per_ip: usize, stats: Arc<HttpStats>) -> Arc<Self> {
        Arc::new(ConnectionLimits {
            max_total,
            max_per_ip,
            open: Mutex::default(),
            stats,
        })
    }

    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        // Two counters, each updated in one step: a panic cannot tear them.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `ip`, unless either limit is reached.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Permit> {
        let ip = source_of(ip);
        let mut open = self.open();
        if open.total >= self.max_total {
            return None;
        }
        let from_ip = open.by_ip.entry(ip).or_default();
        if *from_ip >= self.max_per_ip {
            return None;
        }
        *from_ip += 1;
        open.total += 1;
        drop(open);
        self.stats.connection_opened();
        Some(Permit {
            limits: self.clone(),
            ip,
        })
    }

    /// Connections open now.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.open().total
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.limits.open();
        open.total = open.total.saturating_sub(1);
        if let Some(from_ip) = open.by_ip.get_mut(&self.ip) {
            *from_ip -= 1;
            if *from_ip == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
        drop(open);
        self.limits.stats.connection_closed();
    }
}

/// An accepted TCP connection that fails with `TimedOut` once no byte has
/// moved either way for `idle`: a response its client never reads, or a
/// peer that vanished, cannot hold the connection forever.
pub struct GuardedIo {
    tcp: TcpStream,
    idle: Duration,
    last_activity: Instant,
    timer: Option<Pin<Box<Sleep>>>,
    _permit: Permit,
}

impl GuardedIo {
    pub fn new(tcp: TcpStream, idle: Duration, permit: Permit) -> Self {
        GuardedIo {
            tcp,
            idle,
            last_activity: Instant::now(),
            timer: None,
            _permit: permit,
        }
    }

    fn moved(&mut self) {
        self.last_activity = Instant::now();
    }

    /// Called when the socket is not ready: `Ready(Err)` once idle too long.
    fn poll_idle<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let deadline = self.last_activity + self.idle;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if timer.deadline() != deadline {
            timer.as_mut().reset(deadline);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no data moved within the idle timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn after<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(result) => {
                self.moved();
                Poll::Ready(result)
            }
            Poll::Pending => self.poll_idle(cx),
        }
    }
}

impl AsyncRead for GuardedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        this.after(cx, polled)
    }
}

impl AsyncWrite for GuardedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write(cx, buf);
        this.after(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs);
        this.after(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_flush(cx);
        this.after(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
    }

    #[test]
    fn limits_hold_per_ip_and_overall_and_free_on_drop() {
        let limits = ConnectionLimits::new(3, 2, Arc::default());
        let a1 = limits.admit(ip(1)).expect("first from a");
        let _a2 = limits.admit(ip(1)).expect("second from a");
        assert!(limits.admit(ip(1)).is_none(), "third from one address");
        let _b1 = limits.admit(ip(2)).expect("first from b");
        assert!(limits.admit(ip(3)).is_none(), "over the overall limit");
        drop(a1);
        assert_eq!(limits.total(), 2);
        assert!(limits.admit(ip(3)).is_some(), "a freed place is reused");
        assert!(limits.open().by_ip.len() <= 3);
    }

    #[test]
    fn an_ipv6_64_counts_as_one_source_and_mapped_ipv4_as_itself() {
        let limits = ConnectionLimits::new(10, 1, Arc::default());
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        let _first = limits.admit(one).expect("first from the /64");
        assert!(limits.admit(same_64).is_none(), "same /64");
        assert!(limits.admit(other_64).is_some(), "another /64");
        let _v4 = limits.admit(ip(9)).expect("an IPv4 address");
        let mapped: IpAddr = "::ffff:127.0.0.9".parse().unwrap();
        assert!(
            limits.admit(mapped).is_none(),
            "the same IPv4 address, mapped"
        );
    }

    #[tokio::test]
    async fn an_idle_connection_times_out_and_an_active_one_does_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let limits = ConnectionLimits::new(1, 1, Arc::default());
        let permit = limits.admit(ip(1)).unwrap();
        let mut io = GuardedIo::new(tcp, Duration::from_millis(300), permit);
        // Activity within the timeout keeps it open.
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            client.write_all(b"x").await.unwrap();
            let mut byte = [0u8; 1];
            io.read_exact(&mut byte).await.unwrap();
        }
        let started = std::time::Instant::now();
        let mut byte = [0u8; 1];
        let error = io.read(&mut byte).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(250));
        drop(io);
        assert_eq!(limits.total(), 0, "the permit goes with the connection");
    }
}
