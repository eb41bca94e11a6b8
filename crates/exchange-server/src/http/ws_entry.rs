//! Order entry on one WebSocket: the commands a socket has sent and whose
//! answers it still waits for, and the text of those answers.
//!
//! A socket's commands are queued in the order it sent them, so the core
//! applies them in that order and their outcomes arrive in that order: the
//! socket only ever waits on the oldest. No task per command, no channel
//! between it and the socket, and the answer is written straight to text.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;

use super::error::ApiError;
use super::translate::{Answer, Op};
use crate::sequencer::SubmitError;
use crate::state::Applied;

struct Waiting {
    request_id: Value,
    op: Op,
    outcome: oneshot::Receiver<Arc<Applied>>,
}

/// Commands sent and not yet answered, oldest first.
#[derive(Default)]
pub struct Pending {
    queue: VecDeque<Waiting>,
}

impl Pending {
    pub fn push(&mut self, request_id: Value, op: Op, outcome: oneshot::Receiver<Arc<Applied>>) {
        self.queue.push_back(Waiting {
            request_id,
            op,
            outcome,
        });
    }

    /// The answer to the oldest command, once it has been applied; never
    /// while none waits. Cancel-safe: dropped early, it loses nothing.
    pub async fn next(&mut self) -> String {
        let Some(oldest) = self.queue.front_mut() else {
            return std::future::pending().await;
        };
        let outcome = (&mut oldest.outcome).await;
        let Some(done) = self.queue.pop_front() else {
            return std::future::pending().await;
        };
        let text = match outcome {
            Ok(applied) => serde_json::to_string(&response(
                &done.request_id,
                done.op,
                done.op.answer(&applied),
            )),
            Err(_) => {
                let stopped: Result<Answer<'_>, ApiError> = Err(SubmitError::Stopped.into());
                serde_json::to_string(&response(&done.request_id, done.op, stopped))
            }
        };
        // These types always serialise; a failure would be a bug here.
        text.unwrap_or_else(|e| format!(r#"{{"type":"error","code":"internal","message":"{e}"}}"#))
    }
}

#[derive(Serialize)]
pub struct ErrorDetail {
    code: &'static str,
    message: String,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after: Option<u64>,
}

/// `{"type": "response", "request_id", "ok", ...}`: the order (`order`),
/// what a mass cancel removed (`canceled`), or the refusal (`error`, with
/// the HTTP status REST would give).
#[derive(Serialize)]
pub struct Response<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    request_id: &'a Value,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<Answer<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    canceled: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDetail>,
}

pub fn response<'a>(
    request_id: &'a Value,
    op: Op,
    result: Result<Answer<'a>, ApiError>,
) -> Response<'a> {
    let mut response = Response {
        kind: "response",
        request_id,
        ok: result.is_ok(),
        order: None,
        canceled: None,
        error: None,
    };
    match result {
        Ok(Answer::Canceled { canceled }) if op == Op::MassCancel => {
            response.canceled = Some(canceled)
        }
        Ok(answer) => response.order = Some(answer),
        Err(error) => {
            response.error = Some(ErrorDetail {
                code: error.code,
                status: error.status.as_u16(),
                retry_after: error.retry_after,
                message: error.message,
            })
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use exchange_types::{Command, Event, EventKind, OrderRef};
    use serde_json::json;

    use super::*;
    use crate::http::translate;

    fn applied(kind: EventKind) -> Arc<Applied> {
        Arc::new(Applied {
            index: 9,
            events: vec![Event {
                seq: 1,
                ts: 2,
                kind,
            }],
            ..Applied::default()
        })
    }

    /// What the general path makes of a `place`: the message as a map,
    /// `order_type` read as the REST `type`.
    fn general_place(text: &str) -> Option<Command> {
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        fields.remove("type");
        fields.remove("request_id");
        if let Some(order_type) = fields.remove("order_type") {
            fields.insert("type".into(), order_type);
        }
        let request = serde_json::from_value(Value::Object(fields)).ok()?;
        translate::place(7, request).ok()
    }

    #[test]
    fn the_typed_pass_reads_orders_as_the_general_path_does() {
        let places = [
            r#"{"type":"place","request_id":1,"symbol":"BTC-USD","side":"buy","order_type":"limit","price":"60000.5","qty":"0.25","client_order_id":"a-1"}"#,
            r#"{"request_id":"x","side":"sell","symbol":"ETH-USD","type":"place","qty":"3","price":"10","tif":"ioc","post_only":true,"stp":"decrement","client_order_id":"b"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","order_type":"market","qty":"1","tif":null,"client_order_id":"c"}"#,
        ];
        for text in places {
            let (_, fast) = translate::ws_order_entry(7, text).expect("well formed");
            assert_eq!(Some(fast), general_place(text), "{text}");
        }
        let (id, cancel) =
            translate::ws_order_entry(7, r#"{"type":"cancel","request_id":[2],"order_id":12}"#)
                .expect("cancel");
        assert_eq!(
            (id, cancel),
            (json!([2]), translate::cancel(7, OrderRef::Id(12)))
        );
        let (id, cancel) =
            translate::ws_order_entry(7, r#"{"client_order_id":"a-1","type":"cancel"}"#)
                .expect("cancel");
        let by_client = translate::by_client_id("a-1").expect("id");
        assert_eq!((id, cancel), (Value::Null, translate::cancel(7, by_client)));
        // Everything else is left to the general path, which names the problem.
        let others = [
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1","qty":"1","extra":1}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"up","price":"1","qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":1,"qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1e3","qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1","qty":"1","client_order_id":"has space"}"#,
            r#"{"type":"cancel","order_id":1,"client_order_id":"a"}"#,
            r#"{"type":"cancel"}"#,
            r#"{"type":"cancel","order_id":-1}"#,
            r#"{"type":"cancel","order_id":1,"symbol":"BTC-USD"}"#,
            r#"{"type":"cancel","order_id":1,"qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1","qty":"1","order_id":3}"#,
            r#"{"type":"place","symbol":"BTC-USD","price":"1","qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1"}"#,
            r#"{"type":"replace","order_id":1,"qty":"1"}"#,
            r#"{"type":"mass_cancel"}"#,
            r#"[1]"#,
        ];
        for text in others {
            assert!(translate::ws_order_entry(7, text).is_none(), "{text}");
        }
    }

    #[tokio::test]
    async fn answers_come_oldest_first_with_their_request_ids() {
        let mut pending = Pending::default();
        let (first_tx, first) = oneshot::channel();
        let (second_tx, second) = oneshot::channel();
        let (third_tx, third) = oneshot::channel::<Arc<Applied>>();
        pending.push(json!("a"), Op::MassCancel, first);
        pending.push(json!(7), Op::Cancel, second);
        pending.push(json!(null), Op::Place, third);
        // The second is done first: still nothing until the first is.
        second_tx
            .send(applied(EventKind::Error {
                line: 0,
                message: String::new(),
            }))
            .expect("send");
        let early =
            tokio::time::timeout(std::time::Duration::from_millis(20), pending.next()).await;
        assert!(early.is_err(), "answered out of order");
        first_tx
            .send(applied(EventKind::Error {
                line: 0,
                message: String::new(),
            }))
            .expect("send");
        let text: Value = serde_json::from_str(&pending.next().await).expect("JSON");
        assert_eq!(
            text,
            json!({ "type": "response", "request_id": "a", "ok": true, "canceled": [] })
        );
        let text: Value = serde_json::from_str(&pending.next().await).expect("JSON");
        assert_eq!(
            (text["request_id"].clone(), text["ok"].clone()),
            (json!(7), json!(false))
        );
        assert_eq!(
            (
                text["error"]["code"].as_str(),
                text["error"]["status"].as_u64()
            ),
            (Some("unknown_order"), Some(404))
        );
        drop(third_tx);
        let text: Value = serde_json::from_str(&pending.next().await).expect("JSON");
        assert_eq!(
            text["error"],
            json!({ "code": "unavailable", "message": SubmitError::Stopped.to_string(), "status": 503, "retry_after": 1 })
        );
    }
}
