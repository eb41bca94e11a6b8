//! A blocking WebSocket client for `exchange serve`'s `/v1/ws`: connect,
//! authenticate with a signed message, send and read JSON.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use crate::http::{sign, unix_now_ms, Account, Client};
use crate::wait::DEADLINE;

/// A client socket to `/v1/ws`.
pub type Socket = WebSocket<TcpStream>;

/// Opens `/v1/ws` on the server `api` talks to; reads time out, so a
/// server that stops answering fails the test instead of hanging it.
pub fn connect(api: &Client) -> Socket {
    let stream = TcpStream::connect(("127.0.0.1", api.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let (socket, _) = tungstenite::client(format!("ws://127.0.0.1:{}/v1/ws", api.port), stream)
        .expect("handshake");
    socket
}

/// Sends one JSON message as text.
pub fn send(socket: &mut Socket, message: &Value) {
    socket
        .send(Message::text(message.to_string()))
        .expect("send");
}

/// The next JSON message; `None` once the server closed the socket.
pub fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                return Some(serde_json::from_str(text.as_str()).expect("JSON message"))
            }
            Ok(Message::Close(_)) => return None,
            Ok(_) => continue,
            Err(
                tungstenite::Error::ConnectionClosed
                | tungstenite::Error::AlreadyClosed
                | tungstenite::Error::Protocol(
                    tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
                ),
            ) => return None,
            Err(e) => panic!("reading the socket: {e}"),
        }
    }
}

/// The code of the close frame the server sends next.
pub fn close_code(socket: &mut Socket) -> u16 {
    loop {
        match socket.read().expect("a close frame") {
            Message::Close(Some(frame)) => return frame.code.into(),
            Message::Close(None) => panic!("a close frame without a code"),
            Message::Text(text) => panic!("expected a close frame, got {text}"),
            _ => continue,
        }
    }
}

/// Reads until every predicate has matched some message; returns the
/// messages that matched, in predicate order.
pub fn collect(socket: &mut Socket, wanted: &[&dyn Fn(&Value) -> bool]) -> Vec<Value> {
    let mut found: Vec<Option<Value>> = vec![None; wanted.len()];
    let mut seen = Vec::new();
    let start = Instant::now();
    while found.iter().any(Option::is_none) {
        assert!(
            start.elapsed() < DEADLINE,
            "missing messages; got {seen:#?}"
        );
        let message = next(socket).unwrap_or_else(|| panic!("socket closed; got {seen:#?}"));
        for (slot, matches) in found.iter_mut().zip(wanted) {
            if slot.is_none() && matches(&message) {
                *slot = Some(message.clone());
            }
        }
        seen.push(message);
    }
    found.into_iter().flatten().collect()
}

/// The `auth` message for `account`, signed now.
pub fn auth_message(account: &Account, cancel_on_disconnect: bool) -> Value {
    let ts = unix_now_ms();
    json!({ "type": "auth", "key": account.key, "timestamp": ts,
            "signature": sign(&account.secret, &ts.to_string(), "GET", "/v1/ws", b""),
            "cancel_on_disconnect": cancel_on_disconnect })
}

/// A socket authenticated as `account`, the answer checked.
pub fn authenticated(api: &Client, account: &Account, cancel_on_disconnect: bool) -> Socket {
    let mut socket = connect(api);
    send(&mut socket, &auth_message(account, cancel_on_disconnect));
    let answer = next(&mut socket).expect("auth answer");
    assert_eq!(
        answer,
        json!({ "type": "auth", "ok": true, "account_id": account.id })
    );
    socket
}
