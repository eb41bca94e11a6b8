//! `exchange serve` against hostile and broken connections: heads and
//! bodies that never finish, floods from one address, oversized WebSocket
//! messages, clients that stop answering pings or stop reading, and who
//! may read `/metrics`. TLS is in `server_tls.rs`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use exchange_testkit::ws::{auth_message, authenticated, close_code, next, send, Socket};
use exchange_testkit::{free_port, limit, wait_until, Client, Server, ADMIN_TOKEN};
use serde_json::{json, Value};
use tungstenite::Message;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

fn start(dir: &Path, config: &str) -> Server {
    let path = dir.join("config.toml");
    std::fs::write(&path, config).expect("write the config");
    Server::start_with(EXCHANGE, &dir.join("data"), Some(&path))
}

fn connect_from(source: [u8; 4], port: u16) -> TcpStream {
    let stream = exchange_testkit::connect_from(source.into(), port).expect("connect");
    stream.set_nonblocking(true).expect("non-blocking");
    stream
}

/// Reads what is there without waiting; true once the server has closed
/// the connection (end of stream or reset).
fn is_closed(mut stream: &TcpStream, received: &mut Vec<u8>) -> bool {
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_partial_and_trickled_heads_are_closed_at_the_header_timeout() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path(), "[http]\nheader_timeout_ms = 1000\n");
    let port = server.api.port;
    let home = [127, 0, 0, 1];
    // Connects and never sends a byte.
    let idle = connect_from(home, port);
    // Sends half a head and stops.
    let mut partial = connect_from(home, port);
    let _ = partial.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n");
    // Keeps sending one byte of a header every 100 ms, never ending it.
    let mut trickled = connect_from(home, port);
    let _ = trickled.write_all(b"GET /health HTTP/1.1\r\nX-Slow: ");
    // Has had its answer, keeps the connection and asks nothing more.
    let mut kept = connect_from(home, port);
    let _ = kept.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");

    let started = Instant::now();
    let mut streams = [idle, partial, trickled, kept];
    let mut received: [Vec<u8>; 4] = Default::default();
    let mut closed_after: [Option<Duration>; 4] = [None; 4];
    while started.elapsed() < Duration::from_secs(8) && closed_after.iter().any(Option::is_none) {
        let _ = streams[2].write_all(b"a");
        for (n, stream) in streams.iter_mut().enumerate() {
            if closed_after[n].is_none() && is_closed(stream, &mut received[n]) {
                closed_after[n] = Some(started.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let kept_answer = String::from_utf8_lossy(&received[3]);
    assert!(kept_answer.starts_with("HTTP/1.1 200"), "{kept_answer}");
    for (name, closed) in ["idle", "partial", "trickled", "kept-alive"]
        .iter()
        .zip(closed_after)
    {
        let closed = closed.unwrap_or_else(|| panic!("the {name} connection is still open"));
        assert!(
            closed < Duration::from_secs(4),
            "the {name} connection closed only after {closed:?}"
        );
    }
    server.api.assert_healthy("the slow connections");
}

#[test]
fn a_trickled_body_is_answered_408_and_its_connection_closed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(dir.path(), "[http]\nbody_timeout_ms = 1000\n");
    let account = server.api.create_account();
    let before = server.api.read(&account, "/v1/balances");
    let body = json!({ "account_id": account.id, "asset": "USD", "amount": "5" }).to_string();
    let head = format!(
        "POST /admin/deposits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut stream = connect_from([127, 0, 0, 1], server.api.port);
    stream.write_all(head.as_bytes()).expect("send the head");
    let bytes = body.as_bytes();
    let mut sent = 0;
    let mut received = Vec::new();
    let started = Instant::now();
    let mut closed = false;
    // One byte every 200 ms: the whole body would take far longer than
    // the timeout.
    while started.elapsed() < Duration::from_secs(8) && !closed {
        if sent < bytes.len() - 1 {
            let _ = stream.write_all(&bytes[sent..=sent]);
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
        closed = is_closed(&stream, &mut received);
    }
    assert!(closed, "the connection is still open");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let answer = String::from_utf8_lossy(&received);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"body_timeout\""), "{answer}");
    assert!(sent < bytes.len(), "the body was sent whole");
    assert_eq!(server.api.read(&account, "/v1/balances"), before);
}

#[test]
fn a_flood_from_one_address_is_held_to_its_limit_and_health_still_answers() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The defaults: 256 connections per address.
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let port = server.api.port;
    let attacker = [127, 0, 0, 2];
    let flood: Vec<TcpStream> = (0..300).map(|_| connect_from(attacker, port)).collect();
    for mut stream in &flood {
        let _ = stream.write_all(b"GET /health HTTP/1.1\r\n");
    }
    let mut open = flood.len();
    wait_until("the connections over the limit to be closed", || {
        let mut scratch = Vec::new();
        open = flood
            .iter()
            .filter(|stream| !is_closed(stream, &mut scratch))
            .count();
        open <= 256
    });
    assert_eq!(open, 256, "connections held from one address");
    // Everyone else is still served, at once.
    let asked = Instant::now();
    server.api.assert_healthy("a flood from one address");
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(
        server.api.metric("exchange_http_connections_refused_total"),
        44
    );
    // The address gets its places back as its connections go.
    drop(flood);
    wait_until("the flood's places to be freed", || {
        let mut again = connect_from(attacker, port);
        let _ = again.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut received = Vec::new();
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(1) && !is_closed(&again, &mut received) {
            if received.starts_with(b"HTTP/1.1 200") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        received.starts_with(b"HTTP/1.1 200")
    });
}

/// The messages up to the close frame, and the frame's code and reason.
fn until_close(socket: &mut Socket) -> (Vec<Value>, Option<(u16, String)>) {
    let mut messages = Vec::new();
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                messages.push(serde_json::from_str(text.as_str()).expect("JSON"))
            }
            Ok(Message::Close(frame)) => {
                return (
                    messages,
                    frame.map(|f| (u16::from(f.code), f.reason.to_string())),
                )
            }
            Ok(_) => continue,
            Err(_) => return (messages, None),
        }
    }
}

#[test]
fn an_oversized_websocket_message_is_refused_with_close_code_1009() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let alice = server.api.funded_account();
    // The limit is max_body_bytes (16 KiB by default), before and after
    // authentication.
    let huge = "x".repeat(20_000);
    let mut fresh = exchange_testkit::ws::connect(&server.api);
    fresh.send(Message::text(huge.clone())).expect("send");
    let (messages, close) = until_close(&mut fresh);
    assert_eq!(close, Some((1009, "message_too_big".to_owned())));
    assert_eq!(messages[0]["code"], "message_too_big", "{messages:?}");

    let mut trading = authenticated(&server.api, &alice, false);
    trading.send(Message::text(huge)).expect("send");
    assert_eq!(
        close_code_after_error(&mut trading, "message_too_big"),
        1009
    );
    server.api.assert_healthy("oversized messages");
}

fn close_code_after_error(socket: &mut Socket, code: &str) -> u16 {
    let error = next(socket).expect("an error before the close");
    assert_eq!(error["code"], code, "{error}");
    close_code(socket)
}

fn open_orders(api: &Client, account: &exchange_testkit::Account) -> Vec<Value> {
    api.read(account, "/v1/orders")["orders"]
        .as_array()
        .expect("orders")
        .clone()
}

#[test]
fn a_client_that_stops_answering_pings_is_closed_and_its_orders_canceled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = start(
        dir.path(),
        "[http]\nws_ping_interval_ms = 300\nws_pong_timeout_ms = 700\n",
    );
    let api = &server.api;
    let (alice, bob) = (api.funded_account(), api.funded_account());
    // Alice's socket asks for cancel-on-disconnect, then never reads (so
    // never answers a ping) but stays connected.
    let silent = authenticated(api, &alice, true);
    api.place(&alice, &limit("buy", "59000", "0.01", "alice-rests"));
    // Bob's reads, which answers the pings.
    let mut live = authenticated(api, &bob, true);
    api.place(&bob, &limit("buy", "59000", "0.01", "bob-rests"));
    live.get_mut()
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("read timeout");
    let started = Instant::now();
    let mut pings = 0;
    while started.elapsed() < Duration::from_secs(3) {
        match live.read() {
            Ok(Message::Ping(_)) => pings += 1,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("the answering socket was closed: {e}"),
        }
    }
    assert!(pings >= 3, "{pings} pings in 3 s");
    // Found within an interval and a timeout (1 s), well inside the 3 s.
    assert_eq!(api.metric("exchange_ws_pong_timeouts_total"), 1);
    wait_until("alice's cancel-on-disconnect", || {
        open_orders(api, &alice).is_empty()
    });
    let bobs = open_orders(api, &bob);
    assert_eq!(bobs.len(), 1, "{bobs:?}");
    assert_eq!(api.metric("exchange_ws_connections"), 1);
    drop(silent);
}

/// A socket authenticated as `account` whose receive buffer is small, so
/// that the server's writes back up soon once it stops reading.
fn authenticated_small_buffer(api: &Client, account: &exchange_testkit::Account) -> Socket {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    socket.set_recv_buffer_size(4096).expect("receive buffer");
    socket
        .connect(&SocketAddr::from(([127, 0, 0, 1], api.port)).into())
        .expect("connect");
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let (mut socket, _) = tungstenite::client(format!("ws://127.0.0.1:{}/v1/ws", api.port), stream)
        .expect("handshake");
    send(&mut socket, &auth_message(account, false));
    let answer = next(&mut socket).expect("auth answer");
    assert_eq!(answer["ok"], true, "{answer}");
    socket
}

/// Places and cancels in batches of 500 entries until the server cut a
/// slow consumer off or 40 batches were sent: the entries produced, and
/// whether it did.
fn trade_until_a_slow_consumer_is_cut(api: &Client, trader: &mut Socket) -> (usize, bool) {
    let mut produced = 0;
    let mut cut = false;
    for batch in 0..40 {
        for n in 0..250 {
            let id = format!("n-{batch}-{n}");
            send(
                trader,
                &json!({ "type": "place", "request_id": 2 * n, "symbol": "BTC-USD", "side": "buy",
                         "order_type": "limit", "price": "59000", "qty": "0.01",
                         "client_order_id": id }),
            );
            send(
                trader,
                &json!({ "type": "cancel", "request_id": 2 * n + 1, "client_order_id": id }),
            );
        }
        let mut answered = 0;
        while answered < 500 {
            let message = next(trader).expect("the trader's socket stays open");
            if message["type"] == "response" {
                answered += 1;
            }
        }
        produced += 500;
        if api.metric("exchange_ws_slow_consumers_total") > 0 {
            cut = true;
            break;
        }
    }
    (produced, cut)
}

/// Reads for up to 20 s: the text messages received before the
/// connection ended, and whether it did.
fn read_until_closed(silent: &mut Socket) -> (usize, bool) {
    let mut received = 0;
    let mut ended = false;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        match silent.read() {
            Ok(Message::Text(_)) => received += 1,
            Ok(Message::Close(frame)) => {
                if let Some(frame) = frame {
                    assert_eq!(u16::from(frame.code), 1013);
                    assert_eq!(frame.reason.as_str(), "slow_consumer");
                }
                ended = true;
                break;
            }
            Ok(_) => {}
            Err(_) => {
                ended = true;
                break;
            }
        }
    }
    (received, ended)
}

#[test]
fn a_private_socket_that_stops_reading_is_cut_off_and_its_orders_stay() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Rate limits off: the test produces events as fast as it can.
    let server = start(
        dir.path(),
        "rate_limit_per_sec = 0\nrate_limit_burst = 1000000\n",
    );
    let api = &server.api;
    let alice = api.funded_account();
    for n in 0..5 {
        api.place(&alice, &limit("buy", "59000", "0.01", &format!("keep-{n}")));
    }
    let mut silent = authenticated_small_buffer(api, &alice);
    // Another socket of the same account places and cancels orders, each
    // an update for the silent one too, until the server gives up on it.
    let mut trader = authenticated(api, &alice, false);
    let (produced, cut) = trade_until_a_slow_consumer_is_cut(api, &mut trader);
    assert!(
        cut,
        "the silent socket was never cut off ({produced} entries)"
    );
    // What reached the silent client before the cut is bounded, and then
    // its connection ends.
    let (received, ended) = read_until_closed(&mut silent);
    assert!(ended, "the silent socket is still open");
    assert!(
        received < produced,
        "{received} messages reached a client that stopped reading, of {produced}"
    );
    // Its account's orders are untouched: it had no cancel-on-disconnect.
    let orders = open_orders(api, &alice);
    assert_eq!(orders.len(), 5, "{orders:?}");
    api.assert_healthy("a slow consumer");
}

#[test]
fn metrics_and_the_api_document_need_the_admin_token_or_their_own_listener() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    for path in ["/metrics", "/openapi.json"] {
        server
            .api
            .get(path)
            .expect_error(401, "missing_token", path);
        assert_eq!(server.api.admin("GET", path, "").status, 200, "{path}");
    }

    let other = tempfile::tempdir().expect("temp dir");
    let metrics_port = free_port();
    let server = start(
        other.path(),
        &format!("[http]\nmetrics_bind = \"127.0.0.1:{metrics_port}\"\n"),
    );
    let scraper = Client { port: metrics_port };
    let scraped = scraper.get("/metrics");
    assert_eq!(scraped.status, 200);
    assert!(scraped.text().contains("exchange_commands_total "));
    assert_eq!(scraper.get("/openapi.json").status, 200);
    assert_eq!(scraper.get("/health").text(), "ok");
    assert_eq!(scraper.get("/v1/instruments").status, 404);
    server
        .api
        .get("/metrics")
        .expect_error(401, "missing_token", "the main listener");
}

#[test]
fn a_stop_does_not_wait_for_open_websockets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut server = Server::start(EXCHANGE, &dir.path().join("data"));
    let alice = server.api.funded_account();
    let _trading = authenticated(&server.api, &alice, false);
    let mut public = exchange_testkit::ws::connect(&server.api);
    send(
        &mut public,
        &json!({ "type": "subscribe", "channel": "ticker", "symbols": ["BTC-USD"] }),
    );
    assert_eq!(next(&mut public).expect("an answer")["type"], "subscribed");
    // A kept-alive HTTP connection that sends nothing more.
    let mut kept = connect_from([127, 0, 0, 1], server.api.port);
    let _ = kept.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    let asked = Instant::now();
    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "{}", server.stderr());
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
}
