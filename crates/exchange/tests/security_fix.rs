//! The FIX gateway of the real `exchange serve` under attack and abuse:
//! one address holding idle connections cannot lock other counterparties
//! out or displace a logged-on session, a session flooding messages is
//! refused without its neighbours noticing, and every order type the core
//! has can be entered over FIX.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use exchange_fix::message::Message;
use exchange_testkit::fix::Client as FixClient;
use exchange_testkit::{free_port, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");
const SYMBOL: &str = "BTC-USD";

/// Order-entry sessions `names[i]` trading for account `i + 1`, password
/// `pw-NAME` (what the testkit's client sends), after `fix_settings`.
fn config(dir: &Path, fix_port: u16, fix_settings: &str, names: &[&str]) -> PathBuf {
    let mut text = format!("[fix]\nlisten = \"127.0.0.1:{fix_port}\"\n{fix_settings}\n");
    for (i, name) in names.iter().enumerate() {
        text.push_str(&format!(
            "[[fix.sessions]]\nsender_comp_id = \"{name}\"\n\
             password = \"pw-{name}\"\naccount = {}\n",
            i + 1
        ));
    }
    let path = dir.join("exchange.toml");
    std::fs::write(&path, text).expect("write the config");
    path
}

/// A server with the sessions' accounts created (1, 2, ...) and funded.
fn start(dir: &Path, fix_settings: &str, names: &[&str]) -> (Server, SocketAddr) {
    let fix_port = free_port();
    let config = config(dir, fix_port, fix_settings, names);
    let server = Server::start_with(EXCHANGE, &dir.join("data"), Some(&config));
    for id in 1..=names.len() as u64 {
        assert_eq!(server.api.funded_account().id, id, "accounts count from 1");
    }
    (server, SocketAddr::from(([127, 0, 0, 1], fix_port)))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A TCP connection to `to` from the loopback address `source` (Linux
/// answers on all of 127.0.0.0/8).
async fn connect_from(source: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from((source, 0)))?;
    socket.connect(to).await
}

/// A logon over a connection from `source`.
async fn logon_from(source: [u8; 4], to: SocketAddr, sender: &str) -> FixClient {
    let stream = connect_from(source, to).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    FixClient::logon_over(Box::new(stream), sender).await
}

/// A Logon for `sender` with `password` from `source`; the exchange's
/// answer.
async fn impostor_logon(source: [u8; 4], to: SocketAddr, sender: &str, password: &str) -> Message {
    let mut stream = connect_from(source, to).await.expect("connect");
    let fields = format!(
        "35=A|49={sender}|56=EXCHANGE|34=1|52={}|98=0|108=30|554={password}|",
        now()
    );
    let logon = exchange_fix::frame::seal(&fields.replace('|', "\x01").into_bytes());
    stream.write_all(&logon).await.expect("write");
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut seen));
    read.await.expect("closed in time").expect("read");
    match exchange_fix::frame::next_frame(&seen) {
        Ok(Some((exchange_fix::frame::Frame::Message(raw), _))) => Message::parse(raw),
        other => panic!("no answer to the Logon: {other:?}"),
    }
}

fn now() -> String {
    exchange_fix::time::format(exchange_fix::time::now_ns())
}

fn limit_order(cl_ord_id: &str, side: &str, qty: &str, price: &str) -> String {
    let now = now();
    format!("11={cl_ord_id}|55={SYMBOL}|54={side}|38={qty}|40=2|44={price}|59=1|60={now}|")
}

fn is_report(message: &Message, cl_ord_id: &str, exec_type: &str) -> bool {
    message.text(35) == Some("8")
        && message.text(11) == Some(cl_ord_id)
        && message.text(150) == Some(exec_type)
}

/// Holds `n` connections from `source` that never log on, each renewed as
/// soon as the exchange closes it, until the returned tasks are aborted.
fn hold_idle_connections(
    runtime: &tokio::runtime::Runtime,
    source: [u8; 4],
    to: SocketAddr,
    n: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            runtime.spawn(async move {
                loop {
                    if let Ok(mut stream) = connect_from(source, to).await {
                        let mut sink = Vec::new();
                        let _ = stream.read_to_end(&mut sink).await;
                    }
                    // Refused at once: try again soon, as an attacker would.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        })
        .collect()
}

#[test]
fn idle_connections_from_one_address_lock_no_one_out() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // A short logon timeout: the attacker's connections are closed and
    // renewed several times during the test.
    let (server, fix) = start(
        tmp.path(),
        "logon_timeout_ms = 1000",
        &["VICTIM", "NEWCOMER"],
    );
    let runtime = runtime();
    runtime.block_on(async {
        let mut victim = logon_from([127, 0, 0, 1], fix, "VICTIM").await;
        victim
            .send("D", &limit_order("ask-1", "2", "1", "60000"))
            .await;
        victim.recv_until(|m| is_report(m, "ask-1", "0")).await;
        // More idle connections than the acceptor's whole pre-logon pool,
        // all from one address.
        let attack = hold_idle_connections(&runtime, [127, 0, 0, 2], fix, 300);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        // Another address logs on and trades while the attack goes on.
        let mut newcomer = logon_from([127, 0, 0, 3], fix, "NEWCOMER").await;
        newcomer
            .send("D", &limit_order("bid-1", "1", "1", "60000"))
            .await;
        let filled = newcomer.recv_until(|m| is_report(m, "bid-1", "F")).await;
        assert_eq!(filled.text(31), Some("60000"));
        // The attacker also names the victim's session, without its
        // password, and with it (a stolen password cannot displace the
        // session either).
        for password in ["wrong", "pw-VICTIM"] {
            let refused = impostor_logon([127, 0, 0, 4], fix, "VICTIM", password).await;
            assert_eq!(refused.text(35), Some("5"), "{:?}", refused.text(58));
        }
        // The session logged on before the attack is still up and served.
        let fill = victim.recv_until(|m| is_report(m, "ask-1", "F")).await;
        assert_eq!(fill.text(32), Some("1"));
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        victim.send("1", "112=still-there|").await;
        let heartbeat = victim.recv_until(|m| m.text(35) == Some("0")).await;
        assert_eq!(heartbeat.text(112), Some("still-there"));
        for task in attack {
            task.abort();
        }
    });
    server.api.assert_healthy("the connection flood");
}

/// The next `n` answers to requests: ExecutionReports,
/// OrderCancelRejects and BusinessMessageRejects (the flood's answers name it when some are
/// missing).
async fn answers(client: &mut FixClient, n: usize) -> Vec<Message> {
    let mut seen = Vec::new();
    while seen.len() < n {
        let next = tokio::time::timeout(Duration::from_secs(10), client.next()).await;
        let Ok(Some(message)) = next else {
            let got: Vec<_> = seen
                .iter()
                .map(|m: &Message| (m.text(11), m.text(58)))
                .collect();
            panic!("{} of {n} answers: {got:#?}", seen.len());
        };
        if matches!(message.text(35), Some("8" | "9" | "j")) {
            seen.push(message);
        }
    }
    seen
}

/// The ExecutionReport answering order `id`, or a session Reject.
async fn answer_to(client: &mut FixClient, id: &str) -> Message {
    let answer = client
        .recv_until(|m| m.text(11) == Some(id) || m.text(35) == Some("3"))
        .await;
    assert_eq!(
        (answer.text(35), answer.text(150)),
        (Some("8"), Some("0")),
        "{id}: {:?}",
        answer.text(58)
    );
    answer
}

fn throttled(message: &Message) -> bool {
    message.text(58).is_some_and(|t| t.starts_with("throttled"))
}

/// The answers to a burst of 30 orders, a status request and a cancel,
/// 20 of them within the burst: the rest refused, each the FIX way for
/// its type.
fn check_burst_answers(seen: &[Message]) {
    let accepted = seen.iter().filter(|m| m.text(150) == Some("0")).count();
    let refused: Vec<&Message> = seen.iter().filter(|m| throttled(m)).collect();
    assert!(accepted >= 20, "the burst passes: {accepted}");
    assert!(refused.len() >= 9, "{} refused", refused.len());
    // Orders are refused as orders, FIX 4.4 style; the rest with a
    // BusinessMessageReject.
    for refusal in &refused {
        match refusal.text(35) {
            Some("8") => assert_eq!(
                (refusal.text(150), refusal.text(39), refusal.text(103)),
                (Some("8"), Some("8"), Some("99"))
            ),
            Some("9") => assert_eq!(
                (refusal.text(41), refusal.text(434), refusal.text(102)),
                (Some("f0"), Some("1"), Some("99"))
            ),
            _ => assert_eq!(
                (refusal.text(372), refusal.text(380), refusal.text(379)),
                (Some("H"), Some("0"), Some("f0"))
            ),
        }
    }
    for kind in ["9", "j"] {
        assert!(refused.iter().any(|m| m.text(35) == Some(kind)), "{kind}");
    }
}

#[test]
fn a_session_flooding_messages_is_refused_and_its_neighbour_is_not() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, fix) = start(
        tmp.path(),
        "messages_per_sec = 2\nmessage_burst = 20",
        &["FLOOD", "CALM"],
    );
    runtime().block_on(async {
        let mut flood = FixClient::logon(fix, "FLOOD").await;
        let mut calm = FixClient::logon(fix, "CALM").await;

        // Half again the burst in one write, and a status request.
        let mut burst = Vec::new();
        for i in 0..30 {
            burst.extend(flood.encode("D", &limit_order(&format!("f{i}"), "1", "0.01", "55000")));
        }
        burst.extend(flood.encode("H", &format!("11=f0|55={SYMBOL}|54=1|")));
        let now = now();
        let cancel = format!("41=f0|11=x0|55={SYMBOL}|54=1|60={now}|");
        burst.extend(flood.encode("F", &cancel));
        flood.write(&burst).await;
        check_burst_answers(&answers(&mut flood, 32).await);

        // The neighbour is served meanwhile.
        calm.send("D", &limit_order("c1", "1", "0.01", "55000"))
            .await;
        calm.recv_until(|m| is_report(m, "c1", "0")).await;

        // Moderate overuse: the flooding session is still logged on, and
        // served again once its rate allows.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        flood
            .send("D", &limit_order("again", "1", "0.01", "55000"))
            .await;
        flood.recv_until(|m| is_report(m, "again", "0")).await;

        // Flooding on far past the limit ends the session.
        let mut more = Vec::new();
        for i in 0..100 {
            more.extend(flood.encode("D", &limit_order(&format!("g{i}"), "1", "0.01", "55000")));
        }
        flood.write(&more).await;
        let logout = flood.recv_until(|m| m.text(35) == Some("5")).await;
        assert!(
            logout.text(58).is_some_and(|t| t.contains("rate")),
            "{:?}",
            logout.text(58)
        );
        calm.send("D", &limit_order("c2", "1", "0.01", "55000"))
            .await;
        calm.recv_until(|m| is_report(m, "c2", "0")).await;
    });
    server.api.assert_healthy("the message flood");
}

#[test]
fn stops_trailing_stops_and_pairs_entered_over_fix_are_accepted_and_trigger() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, fix) = start(tmp.path(), "", &["STOPPER", "SELLER", "BUYER"]);
    runtime().block_on(async {
        let mut stopper = FixClient::logon(fix, "STOPPER").await;
        let mut seller = FixClient::logon(fix, "SELLER").await;
        let mut buyer = FixClient::logon(fix, "BUYER").await;
        let expiry = exchange_fix::time::format(exchange_fix::time::now_ns() + 3_600_000_000_000);
        for (id, fields) in [
            // Sell 1 at market once the last trade is 59000 or below.
            ("stop-1", "38=1|40=3|99=59000"),
            // 1000 below the last price (60000, the reference), following it.
            ("trail-1", "38=1|40=3|18=a|211=1000"),
            // An iceberg and a good-till-date order are taken too.
            ("berg-1", "38=2|40=2|44=65000|111=0.5"),
            ("gtd-1", &format!("38=1|40=2|44=65000|59=6|126={expiry}")),
            // A one-cancels-other pair: a take-profit and a stop-loss.
            ("tp", "38=1|40=2|44=65000"),
            ("sl", "38=1|40=3|99=59000|1385=1|583=tp"),
        ] {
            let now = now();
            let order = format!("11={id}|55={SYMBOL}|54=2|{fields}|60={now}|");
            stopper.send("D", &order).await;
            let new = answer_to(&mut stopper, id).await;
            // A stop's New report carries its stop price (a trailing one's start).
            assert_eq!(new.text(99), fields.contains("40=3").then_some("59000"));
        }

        // A bid for the stops to sell into, then a trade at 59000.
        buyer
            .send("D", &limit_order("bid", "1", "3", "58000"))
            .await;
        buyer.recv_until(|m| is_report(m, "bid", "0")).await;
        seller
            .send("D", &limit_order("ask", "2", "0.5", "59000"))
            .await;
        seller.recv_until(|m| is_report(m, "ask", "0")).await;
        buyer
            .send("D", &limit_order("lift", "1", "0.5", "59000"))
            .await;
        buyer.recv_until(|m| is_report(m, "lift", "F")).await;

        // Each stop's reports come in order: trigger, then fill; the
        // stop-loss's fill cancels its take-profit.
        let mut reports = Vec::new();
        while !["stop-1", "trail-1", "sl"]
            .iter()
            .all(|stop| reports.iter().any(|m| is_report(m, stop, "F")))
            || !reports.iter().any(|m| is_report(m, "tp", "4"))
        {
            reports.push(stopper.recv().await);
        }
        for stop in ["stop-1", "trail-1", "sl"] {
            let at = |exec_type| reports.iter().position(|m| is_report(m, stop, exec_type));
            assert!(at("L").is_some() && at("L") < at("F"), "{stop}");
            let fill = &reports[at("F").expect("filled")];
            assert_eq!((fill.text(31), fill.text(32)), (Some("58000"), Some("1")));
        }
    });
    server.api.assert_healthy("stop orders");
}

/// Reads the answer to the ResendRequest sent as `request` for messages up
/// to `end`: the number of messages resent, or the Reject refusing it.
async fn resend_answer(client: &mut FixClient, request: u64, end: u64) -> Result<usize, Message> {
    let mut resent = 0;
    loop {
        let message = client.recv().await;
        if message.text(35) == Some("3") && message.uint(45) == Some(request) {
            return Err(message);
        }
        if message.text(43) != Some("Y") {
            continue;
        }
        if message.text(35) == Some("4") {
            if message.uint(36).is_some_and(|next| next > end) {
                return Ok(resent);
            }
            continue;
        }
        resent += 1;
        if message.seq_num() == Some(end) {
            return Ok(resent);
        }
    }
}

/// Orders `n` resting orders and returns the sequence number of the last
/// report.
async fn make_history(client: &mut FixClient, prefix: &str, n: usize) -> u64 {
    let mut orders = Vec::new();
    for i in 0..n {
        let order = limit_order(&format!("{prefix}{i}"), "1", "0.01", "55000");
        orders.extend(client.encode("D", &order));
    }
    client.write(&orders).await;
    let reports = answers(client, n).await;
    for report in &reports {
        assert_eq!(report.text(150), Some("0"), "{:?}", report.text(58));
    }
    reports
        .iter()
        .filter_map(Message::seq_num)
        .max()
        .expect("reports")
}

#[test]
fn resend_requests_are_charged_to_the_session_rate() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, fix) = start(
        tmp.path(),
        "messages_per_sec = 2\nmessage_burst = 100",
        &["AMPLIFY", "CALM"],
    );
    runtime().block_on(async {
        let mut amplify = FixClient::logon(fix, "AMPLIFY").await;
        let mut calm = FixClient::logon(fix, "CALM").await;
        let last = make_history(&mut amplify, "a", 10).await;

        // An ordinary gap is served in full.
        let request = amplify.seq;
        amplify.send("2", "7=2|16=0|").await;
        let resent = resend_answer(&mut amplify, request, last).await;
        assert_eq!(resent.map_err(|m| m.text(58).map(str::to_string)), Ok(10));

        // Twenty requests for the whole history in one write: served while
        // the session's budget lasts, then refused, the FIX 4.4 way.
        let first = amplify.seq;
        let mut flood = Vec::new();
        for _ in 0..20 {
            flood.extend(amplify.encode("2", "7=1|16=0|"));
        }
        amplify.write(&flood).await;
        let (mut served, mut refused) = (0, 0);
        for request in first..first + 20 {
            match resend_answer(&mut amplify, request, last).await {
                Ok(resent) => {
                    assert_eq!(refused, 0, "served after a refusal");
                    assert_eq!(resent, 10);
                    served += 1;
                }
                Err(reject) => {
                    assert_eq!(
                        (reject.text(372), reject.text(373)),
                        (Some("2"), Some("99"))
                    );
                    assert!(throttled(&reject), "{:?}", reject.text(58));
                    refused += 1;
                }
            }
        }
        assert!(served >= 1, "the budget serves some");
        assert!(refused >= 10, "{served} served, {refused} refused");

        // The neighbour is served meanwhile, resends included.
        let calm_last = make_history(&mut calm, "c", 3).await;
        let request = calm.seq;
        calm.send("2", "7=1|16=0|").await;
        let resent = resend_answer(&mut calm, request, calm_last).await;
        assert_eq!(resent.map_err(|m| m.text(58).map(str::to_string)), Ok(3));
    });
    server.api.assert_healthy("the resend flood");
}
