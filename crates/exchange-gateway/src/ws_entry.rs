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
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::error::ApiError;
use super::translate::{Answer, Op};
use super::wire_text;
use exchange_node::sequencer::SubmitError;
use exchange_node::state::Applied;

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
    /// Commands awaiting their answers.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

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
        match outcome {
            Ok(applied) => match SubmitError::unapplied(&applied) {
                Some(error) => answer_text(&done.request_id, done.op, &Err(error.into())),
                None => answer_text(&done.request_id, done.op, &done.op.answer(&applied)),
            },
            Err(_) => answer_text(&done.request_id, done.op, &Err(SubmitError::Stopped.into())),
        }
    }
}

/// Room for a typical answer (an order without fills is about 350
/// bytes), so that writing one seldom grows its buffer.
const ANSWER_CAPACITY: usize = 512;

/// The text of [`response`]'s frame, written by hand (see [`wire_text`]).
fn answer_text(request_id: &Value, op: Op, result: &Result<Answer<'_>, ApiError>) -> String {
    let mut text = Vec::with_capacity(ANSWER_CAPACITY);
    wire_text::push_response(&mut text, request_id, op, result);
    utf8(text)
}

/// Text written by [`wire_text`], which writes only whole `str`s and
/// ASCII: always UTF-8, and were it not, still valid JSON text.
pub fn utf8(text: Vec<u8>) -> String {
    String::from_utf8(text)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// A frame's JSON; should it not serialise (its types always do, so a
/// bug), an `internal` error frame instead: never `null`, which a client
/// cannot tell from an answer.
pub fn frame_value<T: Serialize>(message: &T, request_id: &Value) -> Value {
    serde_json::to_value(message).unwrap_or_else(|error| unwritable(request_id, &error))
}

/// The error frame standing in for one that did not serialise, carrying
/// the request id, if any, so the client knows which message it answers.
fn unwritable(request_id: &Value, error: &serde_json::Error) -> Value {
    tracing::error!(%error, "a WebSocket frame did not serialise");
    let mut frame = json!({
        "type": "error",
        "code": "internal",
        "message": format!("the answer could not be written: {error}"),
    });
    if !request_id.is_null() {
        frame["request_id"] = request_id.clone();
    }
    frame
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
    use exchange_types::event;
    use exchange_types::{Command, Event, EventKind, OrderRef};
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::ws_kind::MessageType;
    use crate::{translate, ws_commands};

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

    /// What the general path makes of a message: its request id and the
    /// command, or why not.
    fn general(text: &str) -> Option<(Value, Result<Command, ApiError>)> {
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        let request_id = fields.remove("request_id").unwrap_or(Value::Null);
        let Some(Value::String(kind)) = fields.remove("type") else {
            return None;
        };
        let Some(MessageType::Order(kind)) = MessageType::parse(&kind) else {
            return None;
        };
        Some((
            request_id,
            ws_commands::order_entry_command(7, kind, fields),
        ))
    }

    fn general_place(text: &str) -> Option<Command> {
        general(text).and_then(|(_, command)| command.ok())
    }

    /// Candidate values per field: well-formed first, then ill-formed,
    /// the wrong type, and null.
    const FIELDS: &[(&str, &[&str])] = &[
        (
            "symbol",
            &[r#""BTC-USD""#, r#""ETH-USD""#, r#""""#, "5", "null"],
        ),
        ("side", &[r#""buy""#, r#""sell""#, r#""up""#, "1", "null"]),
        (
            "qty",
            &[r#""0.25""#, r#""3""#, r#""0""#, r#""abc""#, "2", "null"],
        ),
        (
            "order_type",
            &[r#""limit""#, r#""market""#, r#""stop""#, "null"],
        ),
        (
            "price",
            &[r#""60000.5""#, r#""1""#, r#""1e3""#, r#""-1""#, "1", "null"],
        ),
        (
            "tif",
            &[r#""gtc""#, r#""ioc""#, r#""fok""#, r#""day""#, "null"],
        ),
        ("post_only", &["true", "false", r#""yes""#, "null"]),
        (
            "stp",
            &[r#""decrement""#, r#""cancel_both""#, r#""bogus""#, "null"],
        ),
        (
            "client_order_id",
            &[r#""a-1""#, r#""has space""#, r#""""#, "7", "null"],
        ),
        ("order_id", &["12", "0", "-1", r#""x""#, "null"]),
        ("request_id", &["1", r#""x""#, "[2]", "null"]),
        ("extra", &["1"]),
    ];

    /// The fields a well-formed message of each kind may carry, as indices
    /// into [`FIELDS`]: a place's first three are required.
    const PLACE_FIELDS: std::ops::Range<usize> = 0..9;
    const CANCEL_BY_ID: usize = 9;
    const CANCEL_BY_CLIENT_ID: usize = 8;
    const REQUEST_ID: usize = 10;

    /// A well-formed `place` or `cancel` (the first value of each field it
    /// carries), then up to two mutations (a field set to any candidate,
    /// of its kind or the other, or a field removed), in random order.
    fn order_message() -> impl Strategy<Value = String> {
        let keep = prop::collection::vec(any::<bool>(), FIELDS.len());
        let mutation = (0..FIELDS.len(), 0..6usize, any::<bool>());
        (any::<bool>(), keep, prop::collection::vec(mutation, 0..=2))
            .prop_flat_map(|(is_place, keep, mutations)| {
                let mut fields: Vec<(usize, &str)> = Vec::new();
                let well_formed = |field: usize| (field, FIELDS[field].1[0]);
                if is_place {
                    for field in PLACE_FIELDS {
                        if field < 3 || keep[field] {
                            fields.push(well_formed(field));
                        }
                    }
                } else if keep[0] {
                    fields.push(well_formed(CANCEL_BY_ID));
                } else {
                    fields.push(well_formed(CANCEL_BY_CLIENT_ID));
                }
                if keep[REQUEST_ID] {
                    fields.push(well_formed(REQUEST_ID));
                }
                for (field, value, remove) in mutations {
                    fields.retain(|(present, _)| *present != field);
                    if !remove {
                        let values = FIELDS[field].1;
                        fields.push((field, values[value % values.len()]));
                    }
                }
                let kind = if is_place { "place" } else { "cancel" };
                let mut pairs = vec![format!(r#""type":"{kind}""#)];
                pairs.extend(
                    fields
                        .into_iter()
                        .map(|(field, value)| format!(r#""{}":{value}"#, FIELDS[field].0)),
                );
                Just(pairs).prop_shuffle()
            })
            .prop_map(|pairs| format!("{{{}}}", pairs.join(",")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The typed pass may only ever agree with the general path: what
        /// it accepts, the general path accepts as the same command with
        /// the same request id. (What it leaves, the general path reads.)
        #[test]
        fn the_typed_pass_accepts_only_what_the_general_path_does(text in order_message()) {
            if let Some((request_id, command)) = translate::ws_order_entry(7, &text) {
                let (general_id, general_command) =
                    general(&text).expect("a JSON object with a type");
                let mut general_command = general_command.ok();
                // Without one, each path draws a random client order id.
                if let (Some(Command::Place(theirs)), Command::Place(ours)) =
                    (&mut general_command, &command)
                {
                    if !text.contains(r#""client_order_id":""#) {
                        theirs.client_order_id = ours.client_order_id;
                    }
                }
                prop_assert_eq!(request_id, general_id, "{}", text);
                prop_assert_eq!(general_command, Some(command), "{}", text);
            }
        }
    }

    #[test]
    fn the_typed_pass_reads_orders_as_the_general_path_does() {
        let places = [
            concat!(
                r#"{"type":"place","request_id":1,"symbol":"BTC-USD","side":"buy","#,
                r#""order_type":"limit","price":"60000.5","qty":"0.25","client_order_id":"a-1"}"#
            ),
            concat!(
                r#"{"request_id":"x","side":"sell","symbol":"ETH-USD","type":"place","qty":"3","#,
                r#""price":"10","tif":"ioc","post_only":true,"stp":"decrement","#,
                r#""client_order_id":"b"}"#
            ),
            concat!(
                r#"{"type":"place","symbol":"BTC-USD","side":"buy","order_type":"market","#,
                r#""qty":"1","tif":null,"client_order_id":"c"}"#
            ),
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
            concat!(
                r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1","qty":"1","#,
                r#""client_order_id":"has space"}"#
            ),
            r#"{"type":"cancel","order_id":1,"client_order_id":"a"}"#,
            r#"{"type":"cancel"}"#,
            r#"{"type":"cancel","order_id":-1}"#,
            r#"{"type":"cancel","order_id":1,"symbol":"BTC-USD"}"#,
            r#"{"type":"cancel","order_id":1,"qty":"1"}"#,
            concat!(
                r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1","qty":"1","#,
                r#""order_id":3}"#
            ),
            r#"{"type":"place","symbol":"BTC-USD","price":"1","qty":"1"}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","price":"1"}"#,
            r#"{"type":"cancel","order_id":null,"client_order_id":"a"}"#,
            r#"{"type":"cancel","order_id":1,"symbol":null}"#,
            r#"{"type":"place","symbol":"BTC-USD","side":"buy","qty":"1","order_id":null}"#,
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
            .send(applied(EventKind::Error(event::Error {
                line: 0,
                message: String::new(),
            })))
            .expect("send");
        let early =
            tokio::time::timeout(std::time::Duration::from_millis(20), pending.next()).await;
        assert!(early.is_err(), "answered out of order");
        first_tx
            .send(applied(EventKind::Error(event::Error {
                line: 0,
                message: String::new(),
            })))
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
            json!({ "code": "unavailable", "message": SubmitError::Stopped.to_string(),
                "status": 503, "retry_after": 1 })
        );
    }

    #[tokio::test]
    async fn a_command_its_expired_session_never_applied_is_answered_session_expired() {
        let mut pending = Pending::default();
        let (tx, outcome) = oneshot::channel();
        pending.push(json!("p"), Op::Place, outcome);
        let refused = Applied {
            command: "stale_session",
            session_refusal: Some(exchange_node::sessions::SessionRefusal::ClosedSession),
            ..Applied::default()
        };
        tx.send(Arc::new(refused)).expect("send");
        let text: Value = serde_json::from_str(&pending.next().await).expect("JSON");
        assert_eq!(
            (text["request_id"].clone(), text["ok"].clone()),
            (json!("p"), json!(false))
        );
        assert_eq!(
            text["error"],
            json!({ "code": "session_expired",
                "message": SubmitError::SessionExpired.to_string(),
                "status": 503, "retry_after": 1 })
        );
    }

    /// A value whose serialisation fails, with quotes in its reason (which
    /// text pasted into a JSON template would break on).
    struct Unwritable;

    impl Serialize for Unwritable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom(r#"a "quoted" reason"#))
        }
    }

    #[test]
    fn a_frame_that_does_not_serialise_goes_out_as_an_error_frame() {
        let value = frame_value(&Unwritable, &json!("r-1"));
        assert_eq!(value["type"], "error", "{value}");
        assert_eq!(value["code"], "internal");
        assert_eq!(value["request_id"], "r-1");
        let message = value["message"].as_str().expect("a message");
        assert!(message.contains(r#"a "quoted" reason"#), "{message}");
        let parsed = frame_value(&Unwritable, &Value::Null);
        assert_eq!(parsed["type"], "error", "{parsed}");
        assert_eq!(parsed["code"], "internal");
        assert!(parsed.get("request_id").is_none(), "{parsed}");
    }
}
