//! WebSocket gateway at `/v1/ws`: one authenticated account per socket, its
//! private stream (order updates and fills), and order entry.
//!
//! The first message must be `auth`, signed like a REST request over
//! `timestamp + "GET" + "/v1/ws"`. Commands sent on one socket are
//! sequenced in the order they were sent; their answers are awaited
//! concurrently, so a client may pipeline. The private stream comes from
//! the sequencer's broadcast, subscribed before `auth` is acknowledged so
//! nothing after it is missed; a socket too slow to keep up is told
//! `slow_consumer` and closed rather than silently skipping events.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use exchange_types::{AccountId, Command, MassCancel, OrderRef};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::auth::{self, SignedMessage};
use super::error::ApiError;
use super::translate::{self, Op};
use super::AppState;

/// How long a new socket may take to authenticate.
pub const AUTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers waiting to be written to one socket.
const OUTBOX: usize = 1_024;
/// Close codes (RFC 6455): policy violation, and "try again later".
const CLOSE_POLICY: u16 = 1008;
const CLOSE_TRY_AGAIN: u16 = 1013;

pub async fn handler(
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
    State(app): State<AppState>,
) -> Response {
    match upgrade {
        Ok(upgrade) => upgrade
            .max_message_size(app.config.max_body_bytes)
            .on_upgrade(move |socket| session(app, socket)),
        Err(rejection) => ApiError::new(
            rejection.status(),
            "websocket_required",
            rejection.body_text(),
        )
        .into_response(),
    }
}

fn error_message(code: &str, message: &str) -> Value {
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

async fn close(socket: &mut WebSocket, code: u16, error: &Value) {
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
    account: AccountId,
    key: String,
    cancel_on_disconnect: bool,
    outbox: mpsc::Sender<Value>,
}

/// Reads and checks the `auth` message; on failure says why and closes.
async fn authenticate(app: &AppState, socket: &mut WebSocket) -> Option<(AccountId, String, bool)> {
    let text = match tokio::time::timeout(AUTH_TIMEOUT, next_text(socket)).await {
        Ok(Some(text)) => text,
        Ok(None) => return None,
        Err(_) => {
            close(
                socket,
                CLOSE_POLICY,
                &auth_failure("auth_timeout", "no auth message in time"),
            )
            .await;
            return None;
        }
    };
    let checked = async {
        let value: Value = serde_json::from_str(&text).map_err(|e| ApiError::from_json(&e))?;
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
        };
        let account = auth::authenticate(app, &signed).await?;
        Ok::<_, ApiError>((
            account,
            message.key,
            message.cancel_on_disconnect.unwrap_or(false),
        ))
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

async fn session(app: AppState, mut socket: WebSocket) {
    let _open = app.stats.ws_opened();
    let Some((account, key, cancel_on_disconnect)) = authenticate(&app, &mut socket).await else {
        return;
    };
    let mut events = app.handle.subscribe();
    if !send(
        &mut socket,
        &json!({ "type": "auth", "ok": true, "account_id": account }),
    )
    .await
    {
        return;
    }
    let (outbox, mut answers) = mpsc::channel(OUTBOX);
    let mut session = Session {
        app,
        account,
        key,
        cancel_on_disconnect,
        outbox,
    };
    loop {
        tokio::select! {
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
            applied = events.recv() => match applied {
                Ok(applied) => {
                    let mut sent = true;
                    for message in translate::private_messages(&applied.events, session.account) {
                        sent = sent && send(&mut socket, &message).await;
                    }
                    if !sent {
                        break;
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    let text = format!("the socket fell {missed} entries behind the private stream");
                    close(&mut socket, CLOSE_TRY_AGAIN, &error_message("slow_consumer", &text)).await;
                    break;
                }
                Err(RecvError::Closed) => break,
            },
            Some(answer) = answers.recv() => {
                if !send(&mut socket, &answer).await {
                    break;
                }
            }
        }
    }
    if session.cancel_on_disconnect {
        let command = Command::MassCancel(MassCancel {
            account: session.account,
            symbol: None,
        });
        if let Err(error) = session
            .app
            .handle
            .submit_detached(translate::entry(command))
        {
            tracing::warn!(account = session.account, %error, "cancel-on-disconnect could not be submitted");
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

/// The answer to one order-entry message.
fn response(request_id: &Value, op: Op, result: Result<Value, ApiError>) -> Value {
    match result {
        Ok(mut body) if op == Op::MassCancel => {
            json!({ "type": "response", "request_id": request_id, "ok": true, "canceled": body["canceled"].take() })
        }
        Ok(body) => {
            json!({ "type": "response", "request_id": request_id, "ok": true, "order": body })
        }
        Err(error) => {
            let mut detail = error.body();
            detail["status"] = json!(error.status.as_u16());
            if let Some(secs) = error.retry_after {
                detail["retry_after"] = json!(secs);
            }
            json!({ "type": "response", "request_id": request_id, "ok": false, "error": detail })
        }
    }
}

impl Session {
    /// Handles one text message; returns an immediate reply, if any.
    /// Order entry answers later, through the outbox.
    async fn handle(&mut self, text: &str) -> Option<Value> {
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
        match kind.as_str() {
            "place" | "cancel" | "replace" | "mass_cancel" => {
                match self.order_entry(&kind, request_id.clone(), fields).await {
                    Ok(()) => None,
                    Err(error) => Some(response(&request_id, Op::Other, Err(error))),
                }
            }
            "cancel_on_disconnect" => match from_fields::<CancelOnDisconnect>(fields) {
                Ok(setting) => {
                    self.cancel_on_disconnect = setting.enabled;
                    with_id(json!({ "type": "cancel_on_disconnect", "enabled": setting.enabled }))
                }
                Err(error) => with_id(error_message(error.code, &error.message)),
            },
            "ping" => with_id(json!({ "type": "pong" })),
            "subscribe" | "unsubscribe" => with_id(error_message(
                "unsupported",
                "public market-data channels are not available yet",
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

    /// Translates, rate-limits and sequences one command, then answers it
    /// through the outbox when it has been applied.
    async fn order_entry(
        &self,
        kind: &str,
        request_id: Value,
        mut fields: Map<String, Value>,
    ) -> Result<(), ApiError> {
        auth::rate_limit(&self.app, &self.key)?;
        let command = match kind {
            "place" => {
                // `type` names the message, so the order's type travels as
                // `order_type` here.
                if let Some(order_type) = fields.remove("order_type") {
                    fields.insert("type".into(), order_type);
                }
                translate::place(self.account, from_fields(fields)?)?
            }
            "cancel" => {
                let order = take_order_ref(&mut fields)?;
                from_fields::<NoFields>(fields)?;
                translate::cancel(self.account, order)
            }
            "replace" => {
                let order = take_order_ref(&mut fields)?;
                translate::replace(self.account, order, from_fields(fields)?)?
            }
            _ => {
                let symbol = from_fields::<SymbolFields>(fields)?.symbol;
                translate::mass_cancel(self.account, symbol.as_deref())?
            }
        };
        let op = Op::of(&command);
        let pending = translate::submit_in_order(&self.app.handle, translate::entry(command)).await;
        let (handle, outbox) = (self.app.handle.clone(), self.outbox.clone());
        tokio::spawn(async move {
            let result = match pending.await {
                Ok(applied) => op.respond(&handle, &applied).await,
                Err(error) => Err(error.into()),
            };
            let _ = outbox.send(response(&request_id, op, result)).await;
        });
        Ok(())
    }
}
