//! WebSocket gateway at `/v1/ws`: one authenticated account per socket, its
//! private stream (order updates and fills), and order entry; and the
//! public market-data channels ([`super::ws_market`]).
//!
//! The first message must be `auth`, signed like a REST request over
//! `timestamp + "GET" + "/v1/ws"`, or `subscribe`: a socket that begins
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

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use exchange_node::keys::Scope;
use exchange_node::limits::WS_AUTH_TIMEOUT;
use exchange_types::{AccountId, Command, MassCancel, OrderRef};
use futures_util::SinkExt;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::auth::{self, SignedMessage};
use super::error::ApiError;
use super::private::{Feed, FeedEnd};
use super::translate::{self, Op};
use super::ws_entry::{self, Pending};
use super::AppState;
use super::{wire, ws_market};
use exchange_marketdata_service::Subscriber;
use exchange_node::state::Applied;

/// Bytes read from a socket at once. The library zeroes this much before
/// every read, and a socket that streams market data is read (usually to
/// find nothing) after every write: its 128 KiB default cost more than
/// everything else the server does per message.
const READ_BUFFER: usize = 4 * 1024;
/// Close codes (RFC 6455): policy violation, and "try again later".
const CLOSE_POLICY: u16 = 1008;
pub(super) const CLOSE_TRY_AGAIN: u16 = 1013;

pub async fn handler(
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
    State(app): State<AppState>,
    auth::PeerAddr(peer): auth::PeerAddr,
) -> Response {
    match upgrade {
        Ok(upgrade) => upgrade
            .max_message_size(app.config.max_body_bytes)
            .read_buffer_size(READ_BUFFER)
            .on_upgrade(move |socket| session(app, socket, peer)),
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
async fn next_text(socket: &mut WebSocket) -> Option<String> {
    loop {
        match socket.recv().await? {
            Ok(Message::Text(text)) => return Some(text.as_str().to_owned()),
            Ok(Message::Binary(bytes)) => {
                return Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return None,
        }
    }
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
}

/// The first message, within [`WS_AUTH_TIMEOUT`]; on timeout says why and closes.
async fn first_message(socket: &mut WebSocket) -> Option<String> {
    match tokio::time::timeout(WS_AUTH_TIMEOUT, next_text(socket)).await {
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
    socket: &mut WebSocket,
    text: &str,
    peer: Option<std::net::IpAddr>,
) -> Option<(AccountId, String, bool)> {
    let checked = async {
        let value: Value = serde_json::from_str(text).map_err(|e| ApiError::from_json(&e))?;
        if value.get("type").and_then(Value::as_str) != Some("auth") {
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
            key: &message.key,
            timestamp: &timestamp,
            signature: &message.signature,
            method: "GET",
            path_and_query: "/v1/ws",
            body: b"",
            peer,
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

async fn session(app: AppState, mut socket: WebSocket, peer: Option<std::net::IpAddr>) {
    let _open = app.stats.ws_opened();
    let Some(first) = first_message(&mut socket).await else {
        return;
    };
    let public = ws_market::is_market_request(&first);
    let (auth, cancel_on_disconnect, mut events) = if public {
        (None, false, None)
    } else {
        let Some((account, key, cancel_on_disconnect)) =
            authenticate(&app, &mut socket, &first, peer).await
        else {
            return;
        };
        let events = app.private.subscribe(account);
        if !send(
            &mut socket,
            &json!({ "type": "auth", "ok": true, "account_id": account }),
        )
        .await
        {
            return;
        }
        (Some((account, key)), cancel_on_disconnect, Some(events))
    };
    let mut session = Session {
        app,
        auth,
        cancel_on_disconnect,
        answers: Pending::default(),
        market: None,
    };
    let account = session.auth.as_ref().map_or(0, |(account, _)| *account);
    let mut unflushed = false;
    if public {
        if let Some(reply) = session.handle(&first).await {
            if !send(&mut socket, &reply).await {
                return;
            }
        }
    }
    loop {
        tokio::select! {
            // Output first, and one flush once nothing more is ready: a
            // busy socket's answers and updates leave in one write.
            biased;
            text = session.answers.next() => {
                if !feed(&mut socket, text).await {
                    break;
                }
                unflushed = true;
            }
            applied = private_entry(&mut events) => match applied {
                Ok(applied) => {
                    let mut sent = true;
                    for message in wire::private_messages(&applied.events, account) {
                        let text = serde_json::to_string(&message).unwrap_or_default();
                        sent = sent && feed(&mut socket, text).await;
                    }
                    if !sent {
                        break;
                    }
                    unflushed = true;
                }
                Err(FeedEnd::Lagged) => {
                    let text = "the socket fell too far behind the private stream";
                    close(&mut socket, CLOSE_TRY_AGAIN, &error_message("slow_consumer", text)).await;
                    break;
                }
                Err(FeedEnd::Closed) => break,
            },
            delivery = ws_market::next(&mut session.market) => {
                if !ws_market::forward(&mut socket, &mut session.market, delivery).await {
                    break;
                }
            }
            () = std::future::ready(()), if unflushed => {
                if socket.flush().await.is_err() {
                    break;
                }
                unflushed = false;
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    session.app.stats.ws_message_in();
                    if let Some(reply) = session.handle(text.as_str()).await {
                        if !send(&mut socket, &reply).await {
                            break;
                        }
                    }
                }
                Some(Ok(Message::Binary(_))) => {
                    if !send(&mut socket, &error_message("unsupported", "send JSON as text messages")).await {
                        break;
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            },
        }
    }
    if let (Some((account, _)), true) = (&session.auth, session.cancel_on_disconnect) {
        let command = Command::MassCancel(MassCancel {
            account: *account,
            symbol: None,
        });
        if let Err(error) = session
            .app
            .handle
            .submit_detached(translate::entry(command))
        {
            tracing::warn!(account, %error, "cancel-on-disconnect could not be submitted");
        }
    }
}

/// Takes `order_id` or `client_order_id` (exactly one) out of a message.
fn take_order_ref(fields: &mut Map<String, Value>) -> Result<OrderRef, ApiError> {
    let by_id = fields.remove("order_id");
    let by_client = fields.remove("client_order_id");
    match (by_id, by_client) {
        (Some(Value::Number(n)), None) => n.as_u64().map(OrderRef::Id).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_type",
                "field `order_id` must be an unsigned integer",
            )
        }),
        (None, Some(Value::String(text))) => translate::by_client_id(&text),
        (Some(_), None) => Err(ApiError::bad_request(
            "invalid_type",
            "field `order_id` must be an unsigned integer",
        )),
        (None, Some(_)) => Err(ApiError::bad_request(
            "invalid_type",
            "field `client_order_id` must be a string",
        )),
        _ => Err(ApiError::bad_request(
            "missing_field",
            "give exactly one of `order_id` and `client_order_id`",
        )),
    }
}

fn from_fields<T: serde::de::DeserializeOwned>(fields: Map<String, Value>) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(fields)).map_err(|e| ApiError::from_json(&e))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolFields {
    symbol: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancelOnDisconnect {
    enabled: bool,
}

/// The answer refusing an order-entry message at once.
fn refusal(request_id: &Value, error: ApiError) -> Value {
    serde_json::to_value(ws_entry::response(request_id, Op::Other, Err(error))).unwrap_or_default()
}

/// The command an order-entry message (`place`, `cancel`, `replace`,
/// `mass_cancel`) asks for, its `type` and `request_id` taken out: the
/// general path, which checks every field and names every mistake.
/// [`translate::ws_order_entry`] may only ever agree with it.
pub(crate) fn order_entry_command(
    account: AccountId,
    kind: &str,
    mut fields: Map<String, Value>,
) -> Result<Command, ApiError> {
    Ok(match kind {
        "place" => {
            // `type` names the message, so the order's type travels as
            // `order_type` here.
            if let Some(order_type) = fields.remove("order_type") {
                fields.insert("type".into(), order_type);
            }
            translate::place(account, from_fields(fields)?)?
        }
        "cancel" => {
            let order = take_order_ref(&mut fields)?;
            from_fields::<NoFields>(fields)?;
            translate::cancel(account, order)
        }
        "replace" => {
            let order = take_order_ref(&mut fields)?;
            translate::replace(account, order, from_fields(fields)?)?
        }
        _ => {
            let symbol = from_fields::<SymbolFields>(fields)?.symbol;
            translate::mass_cancel(account, symbol.as_deref())?
        }
    })
}

impl Session {
    /// Handles one text message; returns an immediate reply, if any.
    /// Order entry answers later, through [`Session::answers`].
    async fn handle(&mut self, text: &str) -> Option<Value> {
        let fast = match &self.auth {
            Some((account, key)) => {
                translate::ws_order_entry(*account, text).map(|(id, command)| {
                    let allowed = auth::rate_limit(&self.app, key)
                        .and_then(|()| auth::still_allows(&self.app, key, Scope::Trade));
                    (id, command, allowed)
                })
            }
            None => None,
        };
        if let Some((request_id, command, allowed)) = fast {
            let queued = allowed.and_then(|()| self.enqueue(request_id.clone(), command));
            return queued.err().map(|error| refusal(&request_id, error));
        }
        let mut fields = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => {
                return Some(error_message(
                    "malformed_json",
                    "a message must be a JSON object",
                ))
            }
            Err(e) => return Some(error_message("malformed_json", &e.to_string())),
        };
        let request_id = fields.remove("request_id").unwrap_or(Value::Null);
        let kind = match fields.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => {
                return Some(error_message(
                    "missing_field",
                    "a message needs a string field `type`",
                ))
            }
        };
        let with_id = |mut reply: Value| {
            reply["request_id"] = request_id.clone();
            Some(reply)
        };
        let public = self.auth.is_none();
        match kind.as_str() {
            "place" | "cancel" | "replace" | "mass_cancel" | "cancel_on_disconnect" if public => {
                with_id(error_message(
                    "auth_required",
                    "this socket began with subscribe and is public; authenticate on a new socket to trade",
                ))
            }
            "place" | "cancel" | "replace" | "mass_cancel" => {
                match self.order_entry(&kind, request_id.clone(), fields) {
                    Ok(()) => None,
                    Err(error) => Some(refusal(&request_id, error)),
                }
            }
            "cancel_on_disconnect" => match from_fields::<CancelOnDisconnect>(fields).and_then(|s| {
                let key = self.auth.as_ref().map(|(_, key)| key.as_str()).unwrap_or_default();
                auth::still_allows(&self.app, key, Scope::Trade).map(|()| s)
            }) {
                Ok(setting) => {
                    self.cancel_on_disconnect = setting.enabled;
                    with_id(json!({ "type": "cancel_on_disconnect", "enabled": setting.enabled }))
                }
                Err(error) => with_id(error_message(error.code, &error.message)),
            },
            "ping" => with_id(json!({ "type": "pong" })),
            "subscribe" | "unsubscribe" => {
                let subscribe = kind == "subscribe";
                ws_market::handle(&self.app, &mut self.market, subscribe, fields, request_id.clone())
                    .await
                    .and_then(with_id)
            }
            "auth" if public => with_id(error_message(
                "auth_required",
                "authenticate with the first message of a socket",
            )),
            "auth" => with_id(error_message(
                "already_authenticated",
                "this socket is already authenticated",
            )),
            other => with_id(error_message(
                "unknown_type",
                &format!("unknown message type {other:?}"),
            )),
        }
    }

    /// Translates, rate-limits and sequences one command; its answer
    /// follows through [`Session::answers`] once it has been applied.
    fn order_entry(
        &mut self,
        kind: &str,
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
    fn enqueue(&mut self, request_id: Value, command: Command) -> Result<(), ApiError> {
        let op = Op::of(&command);
        let outcome = self.app.handle.enqueue_entry(translate::entry(command))?;
        self.answers.push(request_id, op, outcome);
        Ok(())
    }
}
