//! The public market-data channels on `/v1/ws` (docs/marketdata.md):
//! `subscribe` and `unsubscribe`, and writing what the market-data
//! service queued for the socket.
//!
//! The acknowledgement and the first snapshot are queued by the service
//! itself, ahead of the channel's updates, so a client always sees
//! `subscribed`, then the snapshot, then the updates that follow it.

use axum::extract::ws::{Message, WebSocket};
use exchange_marketdata::{Channel, Interval};
use exchange_node::limits::{MAX_SUBSCRIBE_SYMBOLS, WS_CLOSE_TIMEOUT};
use futures_util::SinkExt;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::ws::{close, error_message, CLOSE_TRY_AGAIN};
use super::ws_kind::MessageType;
use super::AppState;
use exchange_marketdata_service::{Delivery, SubscribeError, Subscriber};

/// Queued messages written before one flush.
const WRITE_BATCH: usize = 64;

/// Whether a socket's first message asks for public channels.
pub(super) fn is_market_request(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| {
        matches!(
            MessageType::of(&v),
            Some(MessageType::Subscribe | MessageType::Unsubscribe)
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SubscribeFields {
    channel: String,
    symbols: Vec<String>,
    interval: Option<String>,
}

fn parse(fields: Map<String, Value>) -> Result<(Channel, Vec<String>), Value> {
    let fields: SubscribeFields = serde_json::from_value(Value::Object(fields)).map_err(|e| {
        let error = super::error::ApiError::from_json(&e);
        error_message(error.code, &error.message)
    })?;
    let interval = match fields.interval.as_deref() {
        None => None,
        Some(text) => Some(Interval::parse(text).ok_or_else(|| {
            error_message("invalid_value", "`interval` must be 1m, 5m, 1h or 1d")
        })?),
    };
    let channel = Channel::parse(&fields.channel, interval).ok_or_else(|| {
        error_message(
            "unsupported",
            &format!(
                "unknown channel {:?}; the channels are level2, trades, ticker, candles and status",
                fields.channel
            ),
        )
    })?;
    if interval.is_some() && !matches!(channel, Channel::Candles(_)) {
        return Err(error_message(
            "invalid_value",
            "`interval` applies to the candles channel only",
        ));
    }
    if fields.symbols.is_empty() || fields.symbols.len() > MAX_SUBSCRIBE_SYMBOLS {
        return Err(error_message(
            "invalid_value",
            &format!("`symbols` must name 1 to {MAX_SUBSCRIBE_SYMBOLS} instruments"),
        ));
    }
    Ok((channel, fields.symbols))
}

/// Handles `subscribe` or `unsubscribe`: an error reply, or `None` when
/// the acknowledgement was queued.
pub(super) async fn handle(
    app: &AppState,
    link: &mut Option<Subscriber>,
    subscribe: bool,
    fields: Map<String, Value>,
    request_id: Value,
) -> Option<Value> {
    let Some(market) = &app.market else {
        return Some(error_message(
            "unsupported",
            "this node does not serve market data",
        ));
    };
    let (channel, symbols) = match parse(fields) {
        Ok(parsed) => parsed,
        Err(error) => return Some(error),
    };
    if link.is_none() {
        *link = market.attach().await;
    }
    let stopped = || error_message("unavailable", "the market-data service has stopped");
    let Some(subscriber) = link.as_ref() else {
        return Some(stopped());
    };
    match subscriber
        .subscribe(subscribe, channel, symbols, request_id)
        .await
    {
        Ok(()) => None,
        Err(SubscribeError::UnknownInstrument(symbol)) => Some(error_message(
            "unknown_instrument",
            &format!("no instrument has the symbol {symbol:?}"),
        )),
        Err(SubscribeError::Stopped) => Some(stopped()),
    }
}

/// What the service queued next for this socket; never, without
/// subscriptions.
pub(super) async fn next(link: &mut Option<Subscriber>) -> Delivery {
    match link {
        Some(subscriber) => subscriber.next().await,
        None => std::future::pending().await,
    }
}

/// Writes a delivery, and what is queued behind it, with one flush.
/// False once the socket is to be closed.
pub(super) async fn forward(
    socket: &mut WebSocket,
    link: &mut Option<Subscriber>,
    delivery: Delivery,
) -> bool {
    let ending = match (delivery, link.as_mut()) {
        (Delivery::Message(first), Some(subscriber)) => {
            let batch = subscriber.batch(first, WRITE_BATCH);
            // A client that stops reading blocks the write; the service
            // then disconnects it, which must end the write too.
            let outcome = tokio::select! {
                written = async {
                    for message in batch {
                        socket.feed(Message::Text(message)).await?;
                    }
                    socket.flush().await
                } => Ok(written.is_ok()),
                ending = subscriber.kicked() => Err(ending),
            };
            match outcome {
                Ok(written) => return written,
                Err(ending) => ending,
            }
        }
        (delivery, _) => delivery,
    };
    let error = match ending {
        Delivery::Kicked(reason) => error_message("slow_consumer", &reason),
        _ => error_message("unavailable", "the market-data service has stopped"),
    };
    *link = None;
    let _ = tokio::time::timeout(WS_CLOSE_TIMEOUT, close(socket, CLOSE_TRY_AGAIN, &error)).await;
    false
}
