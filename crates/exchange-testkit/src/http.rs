//! A small HTTP/1.1 client over std sockets for `exchange serve`, HMAC
//! request signing, and the account and admin calls the tests make.
//!
//! The client is deliberately primitive (one connection per request,
//! `Connection: close`) so a test controls every byte it sends and nothing
//! in a client library can hide or paper over a server fault.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

/// The admin token every server and cluster of the kit is started with.
pub const ADMIN_TOKEN: &str = "black-box-admin-token-of-at-least-32-bytes";
/// The master key every node of a test cluster shares (as
/// `EXCHANGE_MASTER_KEY`), so a key created on one verifies on all.
pub const MASTER_KEY: &str = "6d61737465722d6b65792d6f662d7468652d746573742d636c75737465722121";
const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// Unix milliseconds, as signed requests carry them; later on every call,
/// since the server accepts a signed request once and two identical
/// requests signed in the same millisecond would be the same request.
/// More than one call per millisecond runs the count ahead of the wall
/// clock; past [`MAX_AHEAD_MS`] the caller waits for the clock, since the
/// server refuses a timestamp more than a second ahead of its own time.
pub fn unix_now_ms() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    loop {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_millis() as u64;
        let taken = LAST.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            let next = wall.max(last + 1);
            (next <= wall + MAX_AHEAD_MS).then_some(next)
        });
        match taken {
            Ok(previous) => return wall.max(previous + 1),
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// How far [`unix_now_ms`] may run ahead of the wall clock: well inside
/// the second the server allows.
const MAX_AHEAD_MS: u64 = 250;

/// Lowercase hex HMAC-SHA256 over
/// `timestamp + "\n" + METHOD + "\n" + path_and_query + "\n" + body`.
pub fn sign(
    secret: &str,
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("any key length");
    for part in [timestamp, method, path_and_query] {
        mac.update(part.as_bytes());
        mac.update(b"\n");
    }
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// A decimal string as an integer count of 1e-8 units (the server's scale).
pub fn units(text: &str) -> i128 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    assert!(frac.len() <= 8, "more than 8 decimals in {text:?}");
    let padded = format!("{frac:0<8}");
    let value = whole.parse::<i128>().expect("integer part") * 100_000_000
        + padded.parse::<i128>().expect("fraction");
    if negative {
        -value
    } else {
        value
    }
}

#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {} body is not JSON ({e}): {}",
                self.status,
                self.text()
            )
        })
    }

    /// The `code` of an error body.
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }

    /// Asserts the status and the error code, with the body in the message.
    pub fn expect_error(&self, status: u16, code: &str, what: &str) {
        assert_eq!(
            (self.status, self.code().as_str()),
            (status, code),
            "{what}: {}",
            self.text()
        );
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn decode_chunked(mut data: &[u8]) -> io::Result<Vec<u8>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad chunked body");
    let mut out = Vec::new();
    loop {
        let line_end = find(data, b"\r\n").ok_or_else(bad)?;
        let size_text = std::str::from_utf8(&data[..line_end]).map_err(|_| bad())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad())?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(data.get(..size).ok_or_else(bad)?);
        data = data.get(size + 2..).ok_or_else(bad)?;
    }
}

/// Parses a whole HTTP/1.1 response read up to the end of the connection.
pub fn parse_response(raw: &[u8]) -> io::Result<Response> {
    let bad = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: {}", String::from_utf8_lossy(raw)),
        )
    };
    let head_end = find(raw, b"\r\n\r\n").ok_or_else(|| bad("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..head_end]).map_err(|_| bad("headers not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| bad("no status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        decode_chunked(rest)?
    } else if let Some((_, len)) = headers.iter().find(|(n, _)| n == "content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        rest.get(..len)
            .ok_or_else(|| bad("body shorter than content-length"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Sends raw request bytes on a fresh connection and reads the answer.
pub fn send_raw(port: u16, request: &[u8]) -> io::Result<Response> {
    let stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), IO_TIMEOUT)?;
    exchange(stream, request)
}

/// As [`send_raw`], from another loopback address (`127.0.0.2`...): what
/// the server sees as another client machine.
pub fn send_raw_from(
    source: std::net::Ipv4Addr,
    port: u16,
    request: &[u8],
) -> io::Result<Response> {
    exchange(connect_from(source, port)?, request)
}

/// A blocking connection to the server on `port` from the loopback address
/// `source`: the whole of 127/8 is local, so each address stands for
/// another client machine.
pub fn connect_from(source: std::net::Ipv4Addr, port: u16) -> io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.bind(&std::net::SocketAddr::from((source, 0)).into())?;
    socket.connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)).into(),
        IO_TIMEOUT,
    )?;
    Ok(socket.into())
}

fn exchange(mut stream: TcpStream, request: &[u8]) -> io::Result<Response> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    stream.write_all(request)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

/// Builds one request; `Content-Length` is added for any body.
pub fn build_request(method: &str, path: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT") {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// An account's API credentials as `POST /admin/accounts` returned them.
#[derive(Clone, Debug)]
pub struct Account {
    pub id: u64,
    pub key: String,
    pub secret: String,
}

/// The three signature headers for a request signed at `timestamp` (Unix
/// milliseconds).
pub fn signature_headers(
    account: &Account,
    timestamp: u64,
    method: &str,
    path: &str,
    body: &[u8],
) -> Vec<(&'static str, String)> {
    let ts = timestamp.to_string();
    vec![
        ("EX-ACCESS-KEY", account.key.clone()),
        (
            "EX-ACCESS-SIGN",
            sign(&account.secret, &ts, method, path, body),
        ),
        ("EX-ACCESS-TIMESTAMP", ts),
    ]
}

/// Talks to one running server; cheap to copy into worker threads.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    pub port: u16,
}

impl Client {
    pub fn try_request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> io::Result<Response> {
        send_raw(self.port, &build_request(method, path, headers, body))
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Response {
        self.try_request(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path} on port {}: {e}", self.port))
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    /// The value of the metric `name` in `GET /metrics` (with the admin
    /// token, which the route asks for by default).
    pub fn metric(&self, name: &str) -> u64 {
        let text = self.admin("GET", "/metrics", "").text();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}"))
    }

    /// `GET /health` answers `ok`: the process is alive and serving.
    pub fn assert_healthy(&self, after: &str) {
        let health = self.get("/health");
        assert_eq!(
            (health.status, health.text().as_str()),
            (200, "ok"),
            "health after {after}"
        );
    }

    pub fn admin(&self, method: &str, path: &str, body: &str) -> Response {
        self.request(
            method,
            path,
            &[("Authorization", format!("Bearer {ADMIN_TOKEN}"))],
            body.as_bytes(),
        )
    }

    pub fn create_account(&self) -> Account {
        let response = self.admin("POST", "/admin/accounts", "");
        assert_eq!(response.status, 201, "create account: {}", response.text());
        let body = response.json();
        Account {
            id: body["account_id"].as_u64().expect("account_id"),
            key: body["api_key"].as_str().expect("api_key").to_owned(),
            secret: body["api_secret"].as_str().expect("api_secret").to_owned(),
        }
    }

    pub fn deposit(&self, account: &Account, asset: &str, amount: &str) {
        let body =
            json!({ "account_id": account.id, "asset": asset, "amount": amount }).to_string();
        let response = self.admin("POST", "/admin/deposits", &body);
        assert_eq!(response.status, 200, "deposit: {}", response.text());
    }

    /// A funded account: plenty of USD and BTC for every test's orders.
    pub fn funded_account(&self) -> Account {
        let account = self.create_account();
        self.deposit(&account, "USD", "100000000");
        self.deposit(&account, "BTC", "10000");
        account
    }

    pub fn try_signed(
        &self,
        account: &Account,
        method: &str,
        path: &str,
        body: &str,
    ) -> io::Result<Response> {
        let headers = signature_headers(account, unix_now_ms(), method, path, body.as_bytes());
        self.try_request(method, path, &headers, body.as_bytes())
    }

    /// How many times each client order id appears among `account`'s
    /// orders (open and closed) on this node: a replica must show every
    /// acknowledged order exactly once.
    pub fn order_counts(&self, account: &Account) -> std::collections::BTreeMap<String, usize> {
        let listed = self.read(account, "/v1/orders?status=all");
        let mut count = std::collections::BTreeMap::new();
        for order in listed["orders"].as_array().expect("orders") {
            let id = order["client_order_id"].as_str().unwrap_or_default();
            *count.entry(id.to_owned()).or_default() += 1;
        }
        count
    }

    pub fn signed(&self, account: &Account, method: &str, path: &str, body: &str) -> Response {
        self.try_signed(account, method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path} on port {}: {e}", self.port))
    }

    /// A signed `GET path` as `account` that must answer 200, as JSON.
    pub fn read(&self, account: &Account, path: &str) -> Value {
        let response = self.signed(account, "GET", path, "");
        assert_eq!(
            response.status,
            200,
            "GET {path} on port {}: {}",
            self.port,
            response.text()
        );
        response.json()
    }

    /// Places an order and asserts it was accepted; returns the answer.
    pub fn place(&self, account: &Account, order: &Value) -> Value {
        let response = self.signed(account, "POST", "/v1/orders", &order.to_string());
        assert_eq!(response.status, 201, "place {order}: {}", response.text());
        response.json()
    }

    /// Everything an account can read about itself, for before/after
    /// comparisons: all its orders, its fills and its balances.
    pub fn account_view(&self, account: &Account) -> Value {
        let read = |path: &str| self.read(account, path);
        json!({
            "orders": read("/v1/orders?status=all"),
            "fills": read("/v1/fills?limit=1000"),
            "balances": read("/v1/balances"),
        })
    }
}

/// A limit order body on BTC-USD.
pub fn limit(side: &str, price: &str, qty: &str, client_order_id: &str) -> Value {
    json!({ "symbol": "BTC-USD", "side": side, "type": "limit", "price": price, "qty": qty,
            "client_order_id": client_order_id })
}

/// The `n`-th order of a load worker as a request body: buys below and
/// sells above 60,000 that never cross, so every acknowledged order rests
/// and must be found open afterwards.
pub fn resting_order(n: usize, client_order_id: &str) -> String {
    let (side, price) = if n.is_multiple_of(2) {
        ("buy", 59_000 - n)
    } else {
        ("sell", 61_000 + n)
    };
    limit(side, &price.to_string(), "0.01", client_order_id).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_times_increase_and_never_run_far_ahead_of_the_clock() {
        let mut previous = 0;
        for _ in 0..3_000 {
            let ts = unix_now_ms();
            let wall = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock after 1970")
                .as_millis() as u64;
            assert!(ts > previous, "{ts} after {previous}");
            assert!(
                ts <= wall + MAX_AHEAD_MS,
                "{ts} is more than {MAX_AHEAD_MS} ms past {wall}"
            );
            previous = ts;
        }
    }
}
