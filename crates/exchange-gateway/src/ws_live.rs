//! Whether a WebSocket's peer is still there and keeping up.
//!
//! The server pings every `[http] ws_ping_interval_ms`; a peer whose pong
//! does not come back within `ws_pong_timeout_ms` is gone (or no longer
//! reads), and a private socket whose stream was cut off is a slow
//! consumer. The [`watch`] runs beside the socket's loop rather than in
//! it: a loop stuck writing to a peer that stopped reading must still be
//! ended, and its cancel-on-disconnect fired.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocket;
use serde_json::Value;
use tokio::sync::{watch, Notify};

use super::private::Lag;
use super::ws::{close, error_message};
use super::AppState;
use crate::config::HttpConfig;
use exchange_node::limits::WS_CLOSE_TIMEOUT;

/// Close codes (RFC 6455).
pub(super) const CLOSE_GOING_AWAY: u16 = 1001;
pub(super) const CLOSE_POLICY: u16 = 1008;
pub(super) const CLOSE_TOO_BIG: u16 = 1009;
pub(super) const CLOSE_TRY_AGAIN: u16 = 1013;

/// Why [`watch`] ended a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No pong within the timeout.
    Unresponsive,
    /// Its private stream was cut off.
    SlowConsumer,
    /// The server is stopping.
    Stopping,
    /// The API key it authenticated with was revoked or expired.
    KeyEnded(super::ws_key::KeyEnd),
}

/// Shared by a socket's loop and its [`watch`].
pub(super) struct Liveness {
    interval: Duration,
    timeout: Duration,
    pong_seen: AtomicBool,
    ping_due: Notify,
}

impl Liveness {
    pub(super) fn new(http: &HttpConfig) -> Self {
        Liveness {
            interval: http.ws_ping_interval(),
            timeout: http.ws_pong_timeout(),
            pong_seen: AtomicBool::new(false),
            ping_due: Notify::new(),
        }
    }

    /// The loop saw a pong.
    pub(super) fn pong(&self) {
        self.pong_seen.store(true, Ordering::Release);
    }

    /// Completes when the loop should send a ping.
    pub(super) async fn ping_due(&self) {
        self.ping_due.notified().await;
    }

    /// Completes when the peer missed a pong.
    async fn unresponsive(&self) {
        loop {
            tokio::time::sleep(self.interval).await;
            self.pong_seen.store(false, Ordering::Release);
            self.ping_due.notify_one();
            tokio::time::sleep(self.timeout).await;
            if !self.pong_seen.load(Ordering::Acquire) {
                return;
            }
        }
    }
}

/// Completes with the reason the socket must end; never while it is well
/// and the server runs.
pub(super) async fn watch(
    live: &Liveness,
    lag: Option<Arc<Lag>>,
    mut closing: watch::Receiver<bool>,
) -> Verdict {
    let lagged = async {
        match lag {
            Some(lag) => lag.wait().await,
            None => std::future::pending().await,
        }
    };
    let stopping = async {
        if closing.wait_for(|closing| *closing).await.is_err() {
            // The state that could say so is gone: it never will.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = live.unresponsive() => Verdict::Unresponsive,
        () = lagged => Verdict::SlowConsumer,
        () = stopping => Verdict::Stopping,
    }
}

/// Says why and closes, giving a peer that no longer reads
/// [`WS_CLOSE_TIMEOUT`] before the connection is simply dropped.
pub(super) async fn close_within(socket: &mut WebSocket, code: u16, error: &Value) {
    let _ = tokio::time::timeout(WS_CLOSE_TIMEOUT, close(socket, code, error)).await;
}

/// Counts the verdict, says why to the peer and closes the socket.
pub(super) async fn close_for(socket: &mut WebSocket, app: &AppState, verdict: Verdict) {
    let (code, reason, text) = match verdict {
        Verdict::Unresponsive => {
            app.stats.ws_pong_timeout();
            (CLOSE_POLICY, "pong_timeout", "no pong came back in time")
        }
        Verdict::SlowConsumer => {
            app.stats.ws_slow_consumer();
            let text = "the socket fell too far behind the private stream";
            (CLOSE_TRY_AGAIN, "slow_consumer", text)
        }
        Verdict::Stopping => (CLOSE_GOING_AWAY, "shutting_down", "the server is stopping"),
        Verdict::KeyEnded(end) => return super::ws_key::close(socket, end).await,
    };
    close_within(socket, code, &error_message(reason, text)).await;
}

/// Whether a read failed because a frame or message was over the limit.
pub(super) fn is_too_big(error: &axum::Error) -> bool {
    std::error::Error::source(error)
        .and_then(|inner| inner.downcast_ref::<tungstenite::Error>())
        .is_some_and(|inner| matches!(inner, tungstenite::Error::Capacity(_)))
}

/// After a close frame, reads what the peer still sends until it closes
/// too (or [`WS_CLOSE_TIMEOUT`]): closing a socket with unread data resets
/// the connection, and the peer could lose the close frame with it.
pub(super) async fn linger(socket: &mut WebSocket) {
    let _ = tokio::time::timeout(WS_CLOSE_TIMEOUT, async {
        while let Some(Ok(_)) = socket.recv().await {}
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(ping_ms: u64, pong_ms: u64) -> HttpConfig {
        HttpConfig {
            ws_ping_interval_ms: ping_ms,
            ws_pong_timeout_ms: pong_ms,
            ..HttpConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_answers_pings_stays_and_one_that_stops_is_found() {
        let live = Liveness::new(&config(1_000, 500));
        let answering = async {
            for _ in 0..5 {
                live.ping_due().await;
                live.pong();
            }
            // Then it stops answering.
            std::future::pending::<()>().await;
        };
        let started = tokio::time::Instant::now();
        let (_closing, open) = watch::channel(false);
        let verdict = tokio::select! {
            verdict = watch(&live, None, open) => verdict,
            () = answering => unreachable!("the peer never finishes"),
        };
        assert_eq!(verdict, Verdict::Unresponsive);
        // Five answered rounds and a sixth unanswered, each a ping interval
        // and a pong timeout.
        assert_eq!(started.elapsed(), Duration::from_millis(6 * 1_500));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cut_stream_ends_the_socket_at_once() {
        let live = Liveness::new(&config(1_000, 500));
        let lag = Arc::new(Lag::default());
        let started = tokio::time::Instant::now();
        let (_closing, open) = watch::channel(false);
        let verdict = tokio::select! {
            verdict = watch(&live, Some(lag.clone()), open) => verdict,
            () = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                lag.set_for_tests();
                std::future::pending::<()>().await
            } => unreachable!(),
        };
        assert_eq!(verdict, Verdict::SlowConsumer);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopping_server_ends_every_socket() {
        let live = Liveness::new(&config(1_000, 500));
        let (closing, open) = watch::channel(false);
        closing.send_replace(true);
        let verdict = watch(&live, None, open).await;
        assert_eq!(verdict, Verdict::Stopping);
    }
}
