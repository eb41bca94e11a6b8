//! Gateway counters for `/metrics`: responses by status code,
//! connections, and WebSocket activity.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use exchange_node::prometheus::{Exposition, Kind};

#[derive(Default)]
pub struct HttpStats {
    responses: Mutex<BTreeMap<u16, u64>>,
    ws_open: AtomicU64,
    ws_total: AtomicU64,
    ws_messages_in: AtomicU64,
    connections_open: AtomicU64,
    connections_refused: AtomicU64,
    ws_slow_consumers: AtomicU64,
    ws_pong_timeouts: AtomicU64,
}

/// Counts one open socket until dropped.
pub struct OpenSocket(Arc<HttpStats>);

impl Drop for OpenSocket {
    fn drop(&mut self) {
        self.0.ws_open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HttpStats {
    pub fn record_response(&self, status: u16) {
        *self
            .responses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(status)
            .or_default() += 1;
    }

    pub fn ws_opened(self: &Arc<Self>) -> OpenSocket {
        self.ws_open.fetch_add(1, Ordering::Relaxed);
        self.ws_total.fetch_add(1, Ordering::Relaxed);
        OpenSocket(self.clone())
    }

    pub fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
    }

    /// HTTP connections open now, WebSockets included.
    pub fn open_connections(&self) -> u64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// A connection over the overall or per-IP limit, closed on accept.
    pub fn connection_refused(&self) {
        self.connections_refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ws_slow_consumer(&self) {
        self.ws_slow_consumers.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ws_pong_timeout(&self) {
        self.ws_pong_timeouts.fetch_add(1, Ordering::Relaxed);
    }

    pub fn ws_message_in(&self) {
        self.ws_messages_in.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds these counters' families to a `/metrics` page.
    pub fn write_metrics(&self, page: &mut Exposition) {
        let mut responses = page.family(
            "exchange_http_responses_total",
            Kind::Counter,
            "HTTP responses by status code.",
        );
        for (status, count) in self
            .responses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            responses.sample(&[("status", &status.to_string())], *count);
        }
        let gauges = [
            (
                "exchange_ws_connections",
                Kind::Gauge,
                "WebSocket connections open now.",
                &self.ws_open,
            ),
            (
                "exchange_ws_connections_total",
                Kind::Counter,
                "WebSocket connections accepted.",
                &self.ws_total,
            ),
            (
                "exchange_ws_messages_received_total",
                Kind::Counter,
                "WebSocket text messages received.",
                &self.ws_messages_in,
            ),
            (
                "exchange_http_connections",
                Kind::Gauge,
                "HTTP connections open now (WebSockets included).",
                &self.connections_open,
            ),
            (
                "exchange_http_connections_refused_total",
                Kind::Counter,
                "Connections closed on accept: over the overall or per-IP limit.",
                &self.connections_refused,
            ),
            (
                "exchange_ws_slow_consumers_total",
                Kind::Counter,
                "WebSockets closed for falling behind their stream.",
                &self.ws_slow_consumers,
            ),
            (
                "exchange_ws_pong_timeouts_total",
                Kind::Counter,
                "WebSockets closed because no pong came back in time.",
                &self.ws_pong_timeouts,
            ),
        ];
        for (name, kind, help, value) in gauges {
            page.family(name, kind, help)
                .sample(&[], value.load(Ordering::Relaxed));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(stats: &HttpStats) -> String {
        let mut page = Exposition::new();
        stats.write_metrics(&mut page);
        page.finish()
    }

    #[test]
    fn counts_responses_and_open_sockets() {
        let stats = Arc::new(HttpStats::default());
        stats.record_response(200);
        stats.record_response(200);
        stats.record_response(429);
        let socket = stats.ws_opened();
        let text = render(&stats);
        assert!(
            text.contains("exchange_http_responses_total{status=\"200\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("exchange_http_responses_total{status=\"429\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("exchange_ws_connections 1\n"), "{text}");
        drop(socket);
        let text = render(&stats);
        assert!(text.contains("exchange_ws_connections 0\n"), "{text}");
        assert!(text.contains("exchange_ws_connections_total 1\n"), "{text}");
    }
}
