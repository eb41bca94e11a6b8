//! Shared helpers for the black-box tests of `exchange serve`: starting and
//! stopping the real binary as a child process, a small HTTP/1.1 client over
//! std sockets, HMAC request signing and the admin calls.
//!
//! The client is deliberately primitive (one connection per request,
//! `Connection: close`) so a test controls every byte it sends and nothing
//! in a client library can hide or paper over a server fault.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const ADMIN_TOKEN: &str = "black-box-admin-token";
/// Longest any single wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);
const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// Polls `done` until it holds, failing the test at `DEADLINE`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// A port nobody listened on a moment ago, below the kernel's ephemeral
/// range: a port from that range can become any outgoing connection's
/// source port while a test's node is down for a restart, and the node
/// then cannot listen on it again ("Address already in use").
pub fn free_port() -> u16 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    const LOW: u32 = 10_000;
    if ephemeral_low <= LOW + 1_000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
        return listener.local_addr().expect("local address").port();
    }
    // Spread over the range so parallel tests (and processes) rarely try
    // the same port; a taken one is skipped.
    let seed = u64::from(std::process::id()) << 32 ^ u64::from(unix_nanos_low());
    for _ in 0..10_000 {
        let mut x = seed
            .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^= x >> 31;
        let port = (LOW + (x % u64::from(ephemeral_low - LOW)) as u32) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port below {ephemeral_low}");
}

fn unix_nanos_low() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default()
}

/// Runs its closure if dropped while the thread unwinds. A failed check
/// inside `std::thread::scope` must stop the scope's load threads, or the
/// scope waits for them forever instead of failing the test.
pub struct OnPanic<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnPanic<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

/// Lowercase hex HMAC-SHA256 over `timestamp + METHOD + path_and_query + body`.
pub fn sign(
    secret: &str,
    timestamp: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.as_bytes());
    mac.update(method.as_bytes());
    mac.update(path_and_query.as_bytes());
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
    let mut stream = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), IO_TIMEOUT)?;
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

/// The three signature headers for a request signed at `timestamp`.
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
        let headers = signature_headers(account, unix_now(), method, path, body.as_bytes());
        self.try_request(method, path, &headers, body.as_bytes())
    }

    /// How many times each client order id appears among `account`'s
    /// orders (open and closed) on this node: a replica must show every
    /// acknowledged order exactly once.
    pub fn order_counts(&self, account: &Account) -> std::collections::BTreeMap<String, usize> {
        let listed = self.signed(account, "GET", "/v1/orders?status=all", "");
        assert_eq!(listed.status, 200, "port {}: {}", self.port, listed.text());
        let mut count = std::collections::BTreeMap::new();
        for order in listed.json()["orders"].as_array().expect("orders") {
            let id = order["client_order_id"].as_str().unwrap_or_default();
            *count.entry(id.to_owned()).or_default() += 1;
        }
        count
    }

    pub fn signed(&self, account: &Account, method: &str, path: &str, body: &str) -> Response {
        self.try_signed(account, method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path} on port {}: {e}", self.port))
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
        let read = |path: &str| {
            let response = self.signed(account, "GET", path, "");
            assert_eq!(response.status, 200, "GET {path}: {}", response.text());
            response.json()
        };
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

/// Waits until `find_leader` names the port of a node that leads and lists
/// the default instruments (start-up has listed them through the log), and
/// returns a client for it.
pub fn ready_leader(mut find_leader: impl FnMut() -> Option<u16>) -> Client {
    let mut port = None;
    wait_until("a leader with the instruments listed", || {
        port = find_leader();
        port.is_some_and(|p| {
            Client { port: p }
                .try_request("GET", "/v1/instruments", &[], b"")
                .is_ok_and(|r| r.text().contains("BTC-USD"))
        })
    });
    Client {
        port: port.expect("leader"),
    }
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

/// A running `exchange serve`; killed (SIGKILL) when dropped, even when the
/// test panics.
pub struct Server {
    child: Option<Child>,
    pub api: Client,
    pub data_dir: PathBuf,
    log: PathBuf,
}

static STARTS: AtomicU32 = AtomicU32::new(0);

/// Why a start attempt failed.
enum StartFailure {
    Exited(ExitStatus),
    TimedOut,
}

impl Server {
    /// Starts the binary on `data_dir` and waits for `/ready`.
    pub fn start(data_dir: &Path) -> Server {
        Server::start_with(data_dir, None)
    }

    /// As [`Server::start`], with a TOML configuration file.
    pub fn start_with(data_dir: &Path, config: Option<&Path>) -> Server {
        Server::try_start(data_dir, config).unwrap_or_else(|(status, stderr)| {
            panic!("server exited during start-up ({status}):\n{stderr}")
        })
    }

    /// Starts the binary and waits for `/ready`; a process that exits
    /// instead gives its exit status and stderr.
    pub fn try_start(
        data_dir: &Path,
        config: Option<&Path>,
    ) -> Result<Server, (ExitStatus, String)> {
        // Another process may take the free port before the server binds
        // it; only that case is retried.
        for _ in 0..3 {
            let mut server = Server::spawn(data_dir, config, free_port());
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(StartFailure::Exited(status)) if server.stderr().contains("in use") => {
                    eprintln!("port taken ({status}); retrying on another");
                }
                Err(StartFailure::Exited(status)) => return Err((status, server.stderr())),
                Err(StartFailure::TimedOut) => {
                    panic!(
                        "server neither ready nor exited in time:\n{}",
                        server.stderr()
                    )
                }
            }
        }
        panic!("could not find a free port for the server");
    }

    /// Starts the binary on a data directory it must refuse; returns its
    /// exit status and stderr.
    pub fn start_refused(data_dir: &Path) -> (ExitStatus, String) {
        match Server::try_start(data_dir, None) {
            Ok(server) => panic!(
                "the server started on a directory it must refuse:\n{}",
                server.stderr()
            ),
            Err(refused) => refused,
        }
    }

    fn spawn(data_dir: &Path, config: Option<&Path>, port: u16) -> Server {
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let log = PathBuf::from(format!("{}.start{n}.stderr", data_dir.display()));
        let stderr = std::fs::File::create(&log).expect("create the stderr log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_exchange"));
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--admin-token")
            .arg(ADMIN_TOKEN)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let child = command.spawn().expect("spawn the exchange binary");
        Server {
            child: Some(child),
            api: Client { port },
            data_dir: data_dir.to_path_buf(),
            log,
        }
    }

    fn wait_ready(&mut self) -> Result<(), StartFailure> {
        let start = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(StartFailure::Exited(status));
            }
            // Our own process says where it listens before it turns ready;
            // without that line the answer came from whoever took the port.
            let listening = format!("listening on http://127.0.0.1:{}\n", self.api.port);
            if let Ok(ready) = self.api.try_request("GET", "/ready", &[], b"") {
                if ready.status == 200
                    && ready.text() == "ready"
                    && self.stderr().contains(&listening)
                {
                    return Ok(());
                }
            }
            if start.elapsed() > DEADLINE {
                return Err(StartFailure::TimedOut);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> i32 {
        let child = self.child.as_ref().expect("the server is running");
        i32::try_from(child.id()).expect("pid fits in pid_t")
    }

    /// SIGKILL: the process gets no chance to flush or snapshot anything.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `signal` and waits for the process to exit on its own.
    pub fn stop_with(&mut self, signal: i32) -> ExitStatus {
        let pid = self.pid();
        // SAFETY: kill(2) on our own child's pid, which it still is: the
        // child has not been waited for yet.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill({pid}, {signal})");
        let mut child = self.child.take().expect("the server is running");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                return status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "server ignored signal {signal}:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the process wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The `state hash` from the recovery line printed at start-up.
    pub fn recovery_hash(&self) -> String {
        let stderr = self.stderr();
        let line = stderr
            .lines()
            .find(|l| l.starts_with("recovery: ") && l.contains("state hash "))
            .unwrap_or_else(|| panic!("no recovery line on stderr:\n{stderr}"));
        let hash = line
            .rsplit("state hash ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        assert_eq!(hash.len(), 64, "a BLAKE3 hex hash in {line:?}");
        hash
    }

    /// The value after `label` in the recovery line (`replayed`, `applied index`).
    pub fn recovery_number(&self, label: &str) -> u64 {
        let stderr = self.stderr();
        let line = stderr
            .lines()
            .find(|l| l.contains("state hash "))
            .unwrap_or_default();
        let after = line
            .split(label)
            .nth(1)
            .unwrap_or_else(|| panic!("no {label:?} in {line:?}"));
        let digits: String = after
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no number after {label:?} in {line:?}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Copies a directory tree (the data directory of a stopped server).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The highest-numbered (active) journal segment of a data directory.
pub fn last_segment(data_dir: &Path) -> PathBuf {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(data_dir.join("journal"))
        .expect("read the journal directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    segments.sort();
    segments.pop().expect("at least one journal segment")
}
