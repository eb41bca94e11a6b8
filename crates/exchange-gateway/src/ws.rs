//! WebSocket gateway at `/v1/ws`: one authenticated account per socket, its
//! private stream (order updates and fills), and order entry; and the
//! public market-data channels ([`super::ws_market`]).
//!
//! The first message must be `auth`, signed like a REST request over
//! `timestamp + "\nGET\n/v1/ws\n"` (method GET, path `/v1/ws`, no
//! body), or `subscribe`: a socket that begins
//! with `subscribe` is public and needs no credentials (it cannot enter
//! orders). Any socket may subscribe to the public channels.
//!
//! Commands sent on one socket are sequenced in the order they were sent;
//! their answers are awaited together ([`super::ws_entry`]), so a client may
//! pipeline. The private stream is routed to the socket by account
//! ([`super::private`]), subscribed before `auth` is acknowledged so
//! nothing after it is missed; a socket too slow to keep up is told
//! `slow_consumer` and closed rather than silently skipping events.
//! Whatever is ready to go out is written with one flush.
//!
//! Every socket is pinged and closed when its pong does not come back in
//! time ([`super::ws_live`]), and closed once the key it authenticated
//! with is revoked or expires ([`super::ws_key`]); a message or frame over `max_body_bytes` is
//! answered with close code 1009. Outgoing frames wait in a bounded buffer
//! ([`WS_MAX_WRITE_BUFFER`]), so a peer that stops reading costs a bounded
//! amount of memory until it is found out.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use exchange_node::keys::Scope;
use exchange_node::limits::{
    WS_AUTH_TIMEOUT, WS_MAX_IN_FLIGHT, WS_MAX_WRITE_BUFFER, WS_WRITE_BUFFER,
};
use exchange_types::{AccountId, Command, MassCancel};
use futures_util::SinkExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::auth::{self, SignedMessage};
use super::error::ApiError;
use super::private::{Feed, FeedEnd};
use super::translate::{self, Op};
use super::ws_commands::{from_fields, order_entry_command};
use super::ws_entry::{self, Pending};
use super::ws_key::{self, KeyWatch};
use super::ws_kind::{EntryType, MessageType};
use super::ws_live::{self, Liveness, Verdict, CLOSE_POLICY, CLOSE_TOO_BIG};
use super::AppState;
use super::{wire, wire_text, ws_market};
use exchange_marketdata_service::Subscriber;
use exchange_node::state::Applied;

/// Bytes read from a socket at once. The library zeroes this much before
/// every read, and a socket that streams market data is read (usually to
/// find nothing) after every write: its 128 KiB default cost more than
/// everything else the server does per message.
const READ_BUFFER: usize = 4 * 1024;
pub(super) use super::ws_live::CLOSE_TRY_AGAIN;

/// Room for a typical private-stream message (an accepted order is about
/// 300 bytes), so that writing one seldom grows its buffer.
const PRIVATE_CAPACITY: usize = 384;

pub async fn handler(
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
    State(app): State<AppState>,
    auth::Source(source): auth::Source,
) -> Response {
    match upgrade {
        Ok(upgrade) => upgrade
            .max_message_size(app.gateway.max_body_bytes)
            .max_frame_size(app.gateway.max_body_bytes)
            .read_buffer_size(READ_BUFFER)
            .write_buffer_size(WS_WRITE_BUFFER)
            .max_write_buffer_size(WS_MAX_WRITE_BUFFER)
            .on_upgrade(move |socket| session(app, source, socket)),
        Err(rejection) => ApiError::new(
            rejection.status(),
            "websocket_required",
            rejection.body_text(),
        )
        .into_response(),
    }
}

pub(super) fn error_message(code: &str, message: &str) -> Value {
    json!({ "type": "error", "code": code, "message": message })
}

fn auth_failure(code: &str, message: &str) -> Value {
    json!({ "type": "auth", "ok": false, "code": code, "message": message })
}

async fn send(socket: &mut WebSocket, message: &Value) -> bool {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .is_ok()
}

pub(super) async fn close(socket: &mut WebSocket, code: u16, error: &Value) {
    let _ = send(socket, error).await;
    let reason = error["code"].as_str().unwrap_or_default().to_owned();
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
        })))
        .await;
}

/// The next text message; `None` once the socket is gone.
async fn next_text(socket: &mut WebSocket, limit: usize) -> Option<String> {
    loop {
        match socket.recv().await? {
            Ok(Message::Text(text)) => return Some(text.as_str().to_owned()),
            Ok(Message::Binary(bytes)) => {
                return Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Err(error) if ws_live::is_too_big(&error) => {
                too_big(socket, limit).await;
                return None;
            }
            Ok(Message::Close(_)) | Err(_) => return None,
        }
    }
}

/// Refuses a message or frame over `limit` bytes with close code 1009.
async fn too_big(socket: &mut WebSocket, limit: usize) {
    let message = format!("a message may have at most {limit} bytes");
    ws_live::close_within(
        socket,
        CLOSE_TOO_BIG,
        &error_message("message_too_big", &message),
    )
    .await;
    ws_live::linger(socket).await;
}

/// A timestamp as JSON number or string; signed as its decimal text.
#[derive(Deserialize)]
#[serde(untagged)]
enum Timestamp {
    Number(u64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthMessage {
    #[serde(rename = "type")]
    _kind: String,
    key: String,
    timestamp: Timestamp,
    signature: String,
    cancel_on_disconnect: Option<bool>,
}

struct Session {
    app: AppState,
    /// The account and API key; `None` on a public socket.
    auth: Option<(AccountId, String)>,
    cancel_on_disconnect: bool,
    /// Order entry awaiting its answers.
    answers: Pending,
    /// Public channel subscriptions, once the socket has any.
    market: Option<Subscriber>,
    /// The key it authenticated with; `None` on a public socket.
    key: Option<KeyWatch>,
}

/// The first message, within [`WS_AUTH_TIMEOUT`]; on timeout says why and closes.
async fn first_message(socket: &mut WebSocket, limit: usize) -> Option<String> {
    match tokio::time::timeout(WS_AUTH_TIMEOUT, next_text(socket, limit)).await {
        Ok(found) => found,
        Err(_) => {
            close(
                socket,
                CLOSE_POLICY,
                &auth_failure("auth_timeout", "no auth message in time"),
            )
            .await;
            None
        }
    }
}

/// Checks the `auth` message; on failure says why and closes.
async fn authenticate(
    app: &AppState,
    source: std::net::IpAddr,
    socket: &mut WebSocket,
    text: &str,
) -> Option<(AccountId, String, bool)> {
    let checked = async {
        let value: Value = serde_json::from_str(text).map_err(|e| ApiError::from_json(&e))?;
        if MessageType::of(&value) != Some(MessageType::Auth) {
            return Err(ApiError::unauthorized(
                "auth_required",
                "the first message must be {\"type\":\"auth\",...}",
            ));
        }
        let message: AuthMessage =
            serde_json::from_value(value).map_err(|e| ApiError::from_json(&e))?;
        let timestamp = match &message.timestamp {
            Timestamp::Number(n) => n.to_string(),
            Timestamp::Text(t) => t.clone(),
        };
        let signed = SignedMessage {
            source,
            key: &message.key,
            timestamp: &timestamp,
            signature: &message.signature,
            method: "GET",
            path_and_query: "/v1/ws",
            body: b"",
        };
        // The private stream is what a socket reads: `read` at least.
        let caller = auth::authenticate(app, &signed)?;
        caller.require(Scope::Read)?;
        let cancel_on_disconnect = message.cancel_on_disconnect.unwrap_or(false);
        // Cancelling the account's orders is trading.
        if cancel_on_disconnect {
            caller.require(Scope::Trade)?;
        }
        Ok::<_, ApiError>((caller.account, message.key, cancel_on_disconnect))
    };
    match checked.await {
        Ok(found) => Some(found),
        Err(error) => {
            close(
                socket,
                CLOSE_POLICY,
                &auth_failure(error.code, &error.message),
            )
            .await;
            None
        }
    }
}

/// Queues a text message without flushing it.
async fn feed(socket: &mut WebSocket, text: String) -> bool {
    socket.feed(Message::Text(text.into())).await.is_ok()
}

/// The private stream's next entry; never, on a public socket.
async fn private_entry(events: &mut Option<Feed>) -> Result<Arc<Applied>, FeedEnd> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

async fn session(app: AppState, source: std::net::IpAddr, mut socket: WebSocket) {
    let _open = app.stats.ws_opened();
    let limit = app.gateway.max_body_bytes;
    let Some(first) = first_message(&mut socket, limit).await else {
        return;
    };
    let public = ws_market::is_market_request(&first);
    let (auth, cancel_on_disconnect, mut events) = if public {
        (None, false, None)
    } else {
        let Some((account, key, cancel_on_disconnect)) =
            authenticate(&app, source, &mut socket, &first).await
        else {
            return;
        };
        let events = app.private.subscribe(account);
        // Registered before the client hears it is in: whatever it sends
        // next is sequenced after it.
        if cancel_on_disconnect {
            protect(&app, account, true);
        }
        if !send(
            &mut socket,
            &json!({ "type": "auth", "ok": true, "account_id": account }),
        )
        .await
        {
            if cancel_on_disconnect {
                protect(&app, account, false);
            }
            return;
        }
        (Some((account, key)), cancel_on_disconnect, Some(events))
    };
    let live = Liveness::new(&app.gateway.http);
    let lag = events.as_ref().map(Feed::lag);
    let key = auth.as_ref().map(|(_, key)| KeyWatch::new(&app, key));
    let mut key_end = key.clone();
    let mut session = Session {
        app,
        auth,
        cancel_on_disconnect,
        answers: Pending::default(),
        market: None,
        key,
    };
    if public {
        if let Some(reply) = session.handle(&first).await {
            if !send(&mut socket, &reply).await {
                return;
            }
        }
    }
    let closing = session.app.closing.subscribe();
    let verdict = tokio::select! {
        _ = session.pump(&mut socket, &mut events, &live) => None,
        verdict = ws_live::watch(&live, lag, closing) => Some(verdict),
        end = ws_key::ended(key_end.as_mut()) => Some(Verdict::KeyEnded(end)),
    };
    if let Some(verdict) = verdict {
        ws_live::close_for(&mut socket, &session.app, verdict).await;
    }
    drop(socket);
    session.cancel_on_disconnect();
}

impl Session {
    /// Moves messages both ways until the socket ends or is closed.
    async fn pump(&mut self, socket: &mut WebSocket, events: &mut Option<Feed>, live: &Liveness) {
        let account = self.auth.as_ref().map_or(0, |(account, _)| *account);
        let limit = self.app.gateway.max_body_bytes;
        let mut unflushed = false;
        // Kept across turns of the loop: a fresh wait each turn would
        // join and leave the signal's waiters, under its lock, for every
        // message.
        let mut ping = std::pin::pin!(live.ping_due());
        loop {
            tokio::select! {
                // Output first, and one flush once nothing more is ready: a
                // busy socket's answers and updates leave in one write.
                biased;
                text = self.answers.next() => {
                    if !feed(socket, text).await {
                        return;
                    }
                    unflushed = true;
                }
                applied = private_entry(events) => {
                    if !self.forward_private(socket, applied, account).await {
                        return;
                    }
                    unflushed = true;
                }
                delivery = ws_market::next(&mut self.market) => {
                    if !ws_market::forward(socket, &mut self.market, delivery).await {
                        return;
                    }
                }
                () = &mut ping => {
                    ping.set(live.ping_due());
                    if socket.feed(Message::Ping(Default::default())).await.is_err() {
                        return;
                    }
                    unflushed = true;
                }
                () = std::future::ready(()), if unflushed => {
                    if socket.flush().await.is_err() {
                        return;
                    }
                    unflushed = false;
                }
                incoming = socket.recv() => {
                    if !self.receive(socket, incoming, live, limit).await {
                        return;
                    }
                }
            }
        }
    }

    /// Writes the account's share of one applied entry; false once the
    /// socket is done: write failed, key gone, or too far behind.
    async fn forward_private(
        &mut self,
        socket: &mut WebSocket,
        applied: Result<Arc<Applied>, FeedEnd>,
        account: AccountId,
    ) -> bool {
        match applied {
            Ok(applied) => {
                // Nothing of the account leaves once the key is gone.
                if let Some(end) = self.key.as_mut().and_then(KeyWatch::ended) {
                    ws_key::close(socket, end).await;
                    return false;
                }
                let mut sent = true;
                for message in wire::private_messages(&applied.events, account) {
                    let mut text = Vec::with_capacity(PRIVATE_CAPACITY);
                    wire_text::push_private(&mut text, &message);
                    sent = sent && feed(socket, ws_entry::utf8(text)).await;
                }
                sent
            }
            Err(FeedEnd::Lagged) => {
                self.app.stats.ws_slow_consumer();
                let text = "the socket fell too far behind the private stream";
                close(
                    socket,
                    CLOSE_TRY_AGAIN,
                    &error_message("slow_consumer", text),
                )
                .await;
                false
            }
            Err(FeedEnd::Closed) => false,
        }
    }

    /// Acts on one frame from the client; false once the socket is done.
    async fn receive(
        &mut self,
        socket: &mut WebSocket,
        incoming: Option<Result<Message, axum::Error>>,
        live: &Liveness,
        limit: usize,
    ) -> bool {
        match incoming {
            Some(Ok(Message::Text(text))) => {
                self.app.stats.ws_message_in();
                match self.handle(text.as_str()).await {
                    Some(reply) => send(socket, &reply).await,
                    None => true,
                }
            }
            Some(Ok(Message::Binary(_))) => {
                let reply = error_message("unsupported", "send JSON as text messages");
                send(socket, &reply).await
            }
            Some(Ok(Message::Pong(_))) => {
                live.pong();
                true
            }
            Some(Ok(Message::Ping(_))) => true,
            Some(Err(error)) if ws_live::is_too_big(&error) => {
                too_big(socket, limit).await;
                false
            }
            Some(Ok(Message::Close(_)) | Err(_)) | None => false,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelOnDisconnect {
    enabled: bool,
}

/// The answer refusing an order-entry message at once.
fn refusal(request_id: &Value, error: ApiError) -> Value {
    ws_entry::frame_value(
        &ws_entry::response(request_id, Op::Other, Err(error)),
        request_id,
    )
}

/// Splits a message into its request id, its type and its other fields,
/// or the reply refusing it.
fn split_message(text: &str) -> Result<(Value, String, Map<String, Value>), Value> {
    let mut fields = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        Ok(_) => {
            return Err(error_message(
                "malformed_json",
                "a message must be a JSON object",
            ))
        }
        Err(e) => return Err(error_message("malformed_json", &e.to_string())),
    };
    let request_id = fields.remove("request_id").unwrap_or(Value::Null);
    let kind = match fields.remove("type") {
        Some(Value::String(kind)) => kind,
        _ => {
            return Err(error_message(
                "missing_field",
                "a message needs a string field `type`",
            ))
        }
    };
    Ok((request_id, kind, fields))
}

impl Session {
    /// Handles one text message; returns an immediate reply, if any.
    /// Order entry answers later, through [`Session::answers`].
    async fn handle(&mut self, text: &str) -> Option<Value> {
        if let Some(refused) = self.fast_order_entry(text) {
            return refused;
        }
        let (request_id, kind, fields) = match split_message(text) {
            Ok(parts) => parts,
            Err(reply) => return Some(reply),
        };
        let with_id = |mut reply: Value| {
            reply["request_id"] = request_id.clone();
            Some(reply)
        };
        let Some(message_type) = MessageType::parse(&kind) else {
            return with_id(error_message(
                "unknown_type",
                &format!("unknown message type {kind:?}"),
            ));
        };
        let public = self.auth.is_none();
        match message_type {
            MessageType::Order(_) | MessageType::CancelOnDisconnect if public => {
                with_id(error_message(
                    "auth_required",
                    concat!(
                        "this socket began with subscribe and is public; ",
                        "authenticate on a new socket to trade"
                    ),
                ))
            }
            MessageType::Order(entry) => {
                match self.order_entry(entry, request_id.clone(), fields) {
                    Ok(()) => None,
                    Err(error) => Some(refusal(&request_id, error)),
                }
            }
            MessageType::CancelOnDisconnect => match self.set_cancel_on_disconnect(fields) {
                Ok(enabled) => {
                    with_id(json!({ "type": "cancel_on_disconnect", "enabled": enabled }))
                }
                Err(error) => with_id(error_message(error.code, &error.message)),
            },
            MessageType::Ping => with_id(json!({ "type": "pong" })),
            MessageType::Subscribe | MessageType::Unsubscribe => {
                let subscribe = message_type == MessageType::Subscribe;
                ws_market::handle(
                    &self.app,
                    &mut self.market,
                    subscribe,
                    fields,
                    request_id.clone(),
                )
                .await
                .and_then(with_id)
            }
            MessageType::Auth if public => with_id(error_message(
                "auth_required",
                "authenticate with the first message of a socket",
            )),
            MessageType::Auth => with_id(error_message(
                "already_authenticated",
                "this socket is already authenticated",
            )),
        }
    }

    /// The fast path for order entry on an authenticated socket: `None` when
    /// the text is not an order-entry message it recognises, else the
    /// immediate refusal, if any.
    fn fast_order_entry(&mut self, text: &str) -> Option<Option<Value>> {
        let (account, key) = self.auth.as_ref()?;
        let (request_id, command) = translate::ws_order_entry(*account, text)?;
        let allowed = auth::rate_limit(&self.app, key)
            .and_then(|()| auth::still_allows(&self.app, key, Scope::Trade));
        let queued = allowed.and_then(|()| self.enqueue(request_id.clone(), command));
        Some(queued.err().map(|error| refusal(&request_id, error)))
    }

    /// Applies a `cancel_on_disconnect` message; returns the setting now in force.
    fn set_cancel_on_disconnect(&mut self, fields: Map<String, Value>) -> Result<bool, ApiError> {
        let setting = from_fields::<CancelOnDisconnect>(fields)?;
        let key = self
            .auth
            .as_ref()
            .map(|(_, key)| key.as_str())
            .unwrap_or_default();
        auth::still_allows(&self.app, key, Scope::Trade)?;
        if setting.enabled != self.cancel_on_disconnect {
            self.protect(setting.enabled);
        }
        self.cancel_on_disconnect = setting.enabled;
        Ok(setting.enabled)
    }

    /// The connection ended: its orders are cancelled if it asked for it;
    /// then the cluster need no longer keep that for it.
    fn cancel_on_disconnect(&self) {
        let (Some((account, _)), true) = (&self.auth, self.cancel_on_disconnect) else {
            return;
        };
        let command = Command::MassCancel(MassCancel {
            account: *account,
            symbol: None,
        });
        if let Err(error) = self.app.handle.submit_detached(translate::entry(command)) {
            tracing::warn!(account, %error, "cancel-on-disconnect could not be submitted");
        }
        self.protect(false);
    }

    /// Registers the connection's cancel-on-disconnect with the cluster,
    /// which keeps it if the whole gateway dies.
    fn protect(&self, on: bool) {
        if let Some((account, _)) = &self.auth {
            protect(&self.app, *account, on);
        }
    }

    /// Translates, rate-limits and sequences one command; its answer
    /// follows through [`Session::answers`] once it has been applied.
    fn order_entry(
        &mut self,
        kind: EntryType,
        request_id: Value,
        fields: Map<String, Value>,
    ) -> Result<(), ApiError> {
        let Some((account, key)) = &self.auth else {
            return Err(ApiError::unauthorized(
                "auth_required",
                "authenticate first",
            ));
        };
        let account = *account;
        auth::rate_limit(&self.app, key)?;
        auth::still_allows(&self.app, key, Scope::Trade)?;
        let command = order_entry_command(account, kind, fields)?;
        self.enqueue(request_id, command)
    }

    /// Sequences a command; its answer follows through [`Session::answers`].
    /// A client that sends faster than it reads its answers is refused
    /// rather than queued without bound.
    fn enqueue(&mut self, request_id: Value, command: Command) -> Result<(), ApiError> {
        if self.answers.len() >= WS_MAX_IN_FLIGHT {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "too_many_in_flight",
                format!(
                    "{WS_MAX_IN_FLIGHT} orders on this socket await their answers; read them first"
                ),
            ));
        }
        translate::validate(&command)?;
        let op = Op::of(&command);
        let outcome = self.app.handle.enqueue_entry(translate::entry(command))?;
        self.answers.push(request_id, op, outcome);
        Ok(())
    }
}

/// Registers a connection's cancel-on-disconnect for `account` with the
/// cluster (`on`), or ends it.
fn protect(app: &AppState, account: AccountId, on: bool) {
    if let Err(error) = app.handle.protect_account(account, on) {
        tracing::warn!(account, %error, "cancel-on-disconnect could not be registered");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::test_support::funded_node;
    use exchange_node::config::Config;

    #[tokio::test]
    async fn a_socket_with_too_many_answers_unread_is_refused_more_orders() {
        let node = funded_node().await;
        let app = AppState::new(
            node.pipeline.handle.clone(),
            Config::default(),
            crate::config::GatewayConfig::default(),
            "t".into(),
            Arc::new(AtomicBool::new(true)),
        );
        let mut session = Session {
            app,
            auth: Some((1, "key-1".into())),
            cancel_on_disconnect: false,
            answers: Pending::default(),
            market: None,
            key: None,
        };
        // Answers that never come: the socket's reader is stuck.
        let mut unanswered = Vec::new();
        for n in 0..WS_MAX_IN_FLIGHT {
            let (sender, outcome) = tokio::sync::oneshot::channel();
            unanswered.push(sender);
            session.answers.push(json!(n), Op::Place, outcome);
        }
        let place = concat!(
            r#"{"type":"place","request_id":"over","symbol":"BTC-USD","side":"buy","#,
            r#""order_type":"limit","price":"99","qty":"0.01"}"#
        );
        let reply = session.handle(place).await.expect("an immediate refusal");
        assert_eq!(reply["request_id"], "over", "{reply}");
        assert_eq!(reply["error"]["code"], "too_many_in_flight", "{reply}");
        assert_eq!(session.answers.len(), WS_MAX_IN_FLIGHT);
        // One answer read makes room for one more order.
        drop(unanswered.remove(0));
        session.answers.next().await;
        assert!(session.handle(place).await.is_none(), "accepted");
        assert_eq!(session.answers.len(), WS_MAX_IN_FLIGHT);
    }
}
