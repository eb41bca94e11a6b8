//! A WebSocket client of `bench e2e`: one authenticated socket per account,
//! keeping up to `inflight` orders pipelined, and skipping its private
//! stream (order updates and fills) without parsing it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use futures_util::{FutureExt, SinkExt, StreamExt};
use rustc_hash::FxHashMap;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use super::flow::{Flow, Market};
use super::record::{is_slow_consumer, ws_response, Recorder, Totals};
use super::server::Credential;
use super::{Pacing, Schedule};

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// How long answers still outstanding at the end are waited for.
pub const DRAIN: Duration = Duration::from_secs(10);

/// Bytes read from the socket at once. The library zeroes this much before
/// every read; its 128 KiB default would make the client the bottleneck.
const READ_BUFFER: usize = 8 * 1024;

/// Opens `/v1/ws` (Nagle off, so orders leave at once) and authenticates.
pub async fn connect(addr: std::net::SocketAddr, credential: &Credential) -> anyhow::Result<Ws> {
    let url = format!("ws://{addr}/v1/ws");
    let config = WebSocketConfig::default().read_buffer_size(READ_BUFFER);
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true).await?;
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)?
        .as_millis()
        .to_string();
    let signature =
        exchange_gateway::auth::sign(&credential.secret, &timestamp, "GET", "/v1/ws", b"");
    let auth = serde_json::json!({
        "type": "auth", "key": credential.key, "timestamp": timestamp, "signature": signature,
    });
    ws.send(Message::text(auth.to_string())).await?;
    loop {
        match ws.next().await.context("the socket closed during auth")?? {
            Message::Text(text) if text.as_str().contains("\"ok\":true") => return Ok(ws),
            Message::Text(text) => bail!("authentication refused: {}", text.as_str()),
            _ => {}
        }
    }
}

/// One socket's run: what it sends and how it measures.
pub struct Driver {
    pub market: std::sync::Arc<Market>,
    pub flow: Flow,
    pub inflight: usize,
    pub pacing: Pacing,
    pub recorder: Recorder,
}

struct Pending {
    /// By request id: when the order was due, when it went out, and
    /// whether it was a place.
    sent: FxHashMap<u64, (Instant, Instant, bool)>,
    next_id: u64,
}

impl Driver {
    /// Sends until `pacing.stop`, then waits for the answers in flight.
    pub async fn run(mut self, mut ws: Ws) -> anyhow::Result<Totals> {
        let mut pending = Pending {
            sent: FxHashMap::default(),
            next_id: 0,
        };
        let mut schedule = Schedule::new(&self.pacing);
        loop {
            let now = Instant::now();
            if now >= self.pacing.stop {
                break;
            }
            let mut fed = false;
            while pending.sent.len() < self.inflight {
                let Some(due) = schedule.take(now) else {
                    break;
                };
                self.feed(&mut ws, &mut pending, due).await?;
                fed = true;
            }
            if fed {
                ws.flush().await?;
            }
            let open = pending.sent.len() < self.inflight;
            let wake = match self.pacing.every {
                Some(_) if open => schedule.next().min(self.pacing.stop),
                _ => self.pacing.stop,
            };
            let Ok(message) = tokio::time::timeout_at(wake.into(), ws.next()).await else {
                continue;
            };
            self.answer(message, &mut pending)?;
            // Take every answer already here before sending again, so the
            // refill goes out in one write.
            while let Some(message) = ws.next().now_or_never() {
                self.answer(message, &mut pending)?;
            }
        }
        let deadline = self.pacing.stop + DRAIN;
        while !pending.sent.is_empty() {
            let Ok(message) = tokio::time::timeout_at(deadline.into(), ws.next()).await else {
                bail!(
                    "{} answers still missing {DRAIN:?} after the end",
                    pending.sent.len()
                );
            };
            self.answer(message, &mut pending)?;
        }
        let _ = ws.close(None).await;
        Ok(self.recorder.totals)
    }

    async fn feed(
        &mut self,
        ws: &mut Ws,
        pending: &mut Pending,
        due: Instant,
    ) -> anyhow::Result<()> {
        let action = self.flow.next_action();
        pending.next_id += 1;
        let mut text = String::with_capacity(224);
        self.flow
            .ws_message(&self.market, &action, pending.next_id, &mut text);
        pending.sent.insert(
            pending.next_id,
            (due, Instant::now(), Flow::is_place(&action)),
        );
        ws.feed(Message::text(text)).await?;
        Ok(())
    }

    fn answer(
        &mut self,
        message: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
        pending: &mut Pending,
    ) -> anyhow::Result<()> {
        let text = match message.context("the server closed the socket")?? {
            Message::Text(text) => text,
            Message::Close(frame) => bail!("the server closed the socket: {frame:?}"),
            _ => return Ok(()),
        };
        let text = text.as_str();
        match ws_response(text) {
            Some((id, outcome)) => {
                if let Some((due, sent, place)) = pending.sent.remove(&id) {
                    self.recorder
                        .record_paced(due, sent, Instant::now(), place, outcome);
                }
            }
            None if is_slow_consumer(text) => {
                bail!("the server dropped a client: {text}")
            }
            None => {}
        }
        Ok(())
    }
}
