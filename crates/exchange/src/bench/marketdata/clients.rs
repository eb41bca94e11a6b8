//! The parts of `bench marketdata` that talk to a server: starting one,
//! a minimal HTTP/1.1 client for the admin and public routes, the level2
//! subscribers and the traders.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::Barrier;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

// Started and stopped as `bench e2e` does (same binary, same settings).
pub use super::super::e2e::server::{wait_ready, ServerProcess};

/// One request over a fresh connection; the status and the JSON body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let (status, text) = super::super::e2e::server::http(addr, method, path, token, body).await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// A new account funded with quote and base; its key and secret.
pub async fn funded_account(
    addr: SocketAddr,
    token: &str,
    assets: &[(&str, &str)],
) -> anyhow::Result<(String, String)> {
    let (status, account) = http(addr, "POST", "/admin/accounts", Some(token), None).await?;
    if status != 201 {
        bail!("creating an account: {status} {account}");
    }
    for (asset, amount) in assets {
        let body = json!({ "account_id": account["account_id"], "asset": asset, "amount": amount });
        let (status, reply) =
            http(addr, "POST", "/admin/deposits", Some(token), Some(&body)).await?;
        if status != 200 {
            bail!("depositing {asset}: {status} {reply}");
        }
    }
    let text = |field: &str| account[field].as_str().unwrap_or_default().to_owned();
    Ok((text("api_key"), text("api_secret")))
}

/// A WebSocket to `/v1/ws` with Nagle's algorithm off, so orders leave at once.
async fn connect(
    addr: SocketAddr,
) -> Result<
    (
        Ws,
        tokio_tungstenite::tungstenite::handshake::client::Response,
    ),
    tokio_tungstenite::tungstenite::Error,
> {
    // The library zeroes its whole read buffer before every read: keep it
    // small, or a thousand subscribers spend their time in memset.
    let config = WebSocketConfig::default().read_buffer_size(4 * 1024);
    tokio_tungstenite::connect_async_with_config(format!("ws://{addr}/v1/ws"), Some(config), true)
        .await
}

/// When each update reached the first and the last subscriber, and how
/// many reached it (nanoseconds since the run's start).
pub struct Slot {
    pub first: AtomicU64,
    pub last: AtomicU64,
    pub count: AtomicU32,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            first: AtomicU64::new(u64::MAX),
            last: AtomicU64::new(0),
            count: AtomicU32::new(0),
        }
    }
}

/// What every subscriber shares.
pub struct Shared {
    pub start: Instant,
    /// Sequence of the first measured update (after the snapshots).
    pub base: AtomicU64,
    /// The sequence to stop at, once known.
    pub last: AtomicU64,
    pub slots: Vec<Slot>,
    pub kicked: AtomicU32,
    pub done: AtomicU32,
}

/// The `sequence` field of a message the server wrote, without parsing
/// the rest: a thousand subscribers share two cores with the server.
fn sequence_of(text: &str) -> Option<u64> {
    let at = text.find("\"sequence\":")? + "\"sequence\":".len();
    let digits: &str = &text[at..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

pub async fn connect_subscriber(addr: SocketAddr, symbol: &str) -> anyhow::Result<(Ws, u64)> {
    let (mut ws, _) = connect(addr).await?;
    let subscribe = json!({ "type": "subscribe", "channel": "level2", "symbols": [symbol] });
    ws.send(Message::text(subscribe.to_string())).await?;
    loop {
        let Some(message) = ws.next().await else {
            bail!("closed before the snapshot");
        };
        if let Message::Text(text) = message? {
            if text.as_str().contains("\"type\":\"snapshot\"") {
                return Ok((ws, sequence_of(text.as_str()).unwrap_or(0)));
            }
        }
    }
}

/// Reads level2 updates, stamping each one's arrival, until the last.
pub async fn subscribe(mut ws: Ws, shared: Arc<Shared>, barrier: Arc<Barrier>) {
    barrier.wait().await;
    let base = shared.base.load(Ordering::Acquire);
    let mut latest = 0;
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let text = text.as_str();
        if text.contains("\"code\":\"slow_consumer\"") {
            shared.kicked.fetch_add(1, Ordering::Relaxed);
            break;
        }
        if text.starts_with("{\"type\":\"update\"") {
            if let Some(seq) = sequence_of(text) {
                let now = shared.start.elapsed().as_nanos() as u64;
                if let Some(slot) = seq
                    .checked_sub(base)
                    .and_then(|i| shared.slots.get(i as usize))
                {
                    slot.first.fetch_min(now, Ordering::Relaxed);
                    slot.last.fetch_max(now, Ordering::Relaxed);
                    slot.count.fetch_add(1, Ordering::Relaxed);
                }
                latest = seq;
            }
        }
        // Heartbeats wake an idle subscriber once the last is known.
        if latest >= shared.last.load(Ordering::Acquire) {
            break;
        }
    }
    shared.done.fetch_add(1, Ordering::Relaxed);
}

/// Authenticates, then sends `orders` keeping `window` of them in flight,
/// one every `pace` at most if given.
pub async fn trade(
    addr: SocketAddr,
    key: String,
    secret: String,
    orders: Vec<Value>,
    window: usize,
    pace: Option<Duration>,
) -> anyhow::Result<()> {
    let (mut ws, _) = connect(addr).await?;
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)?
        .as_millis()
        .to_string();
    let signature = exchange_gateway::auth::sign(&secret, &timestamp, "GET", "/v1/ws", b"");
    let auth =
        json!({ "type": "auth", "key": key, "timestamp": timestamp, "signature": signature });
    ws.send(Message::text(auth.to_string())).await?;
    let started = tokio::time::Instant::now();
    let due = |n: usize| pace.map(|p| started + p * n as u32);
    let (mut sent, mut answered) = (0usize, 0usize);
    while answered < orders.len() {
        while sent < orders.len()
            && sent - answered < window.max(1)
            && due(sent).is_none_or(|at| at <= tokio::time::Instant::now())
        {
            ws.feed(Message::text(orders[sent].to_string())).await?;
            sent += 1;
        }
        ws.flush().await?;
        let next_send = (sent < orders.len() && sent - answered < window.max(1))
            .then(|| due(sent))
            .flatten();
        let message = tokio::select! {
            message = ws.next() => message,
            _ = tokio::time::sleep_until(next_send.unwrap_or(started)),
                if next_send.is_some() => continue,
        };
        let Some(message) = message else {
            bail!("a trader's socket closed");
        };
        if let Message::Text(text) = message? {
            let text = text.as_str();
            if text.contains("\"type\":\"response\"") {
                answered += 1;
            } else if text.contains("\"ok\":false") && text.contains("\"type\":\"auth\"") {
                bail!("trader authentication failed: {text}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::sequence_of;

    #[test]
    fn reads_the_sequence_without_parsing() {
        let text = r#"{"type":"update","channel":"level2","symbol":"X","sequence":1234,"time":5}"#;
        assert_eq!(sequence_of(text), Some(1234));
        assert_eq!(sequence_of(r#"{"type":"pong"}"#), None);
    }
}
