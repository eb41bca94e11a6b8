//! A FIX session continues at another gateway: a counterparty trades
//! through gateway 0, which is killed with SIGKILL with the counterparty's
//! last order lost on the way; it logs on at gateway 1 with its next
//! MsgSeqNum and is asked for the lost one (the venue applied the one
//! before), which it sends again. The exchange's numbers go on above every
//! one gateway 0 could have used, a ResendRequest brings the execution
//! reports of gateway 0's time again (PossDupFlag, the same ClOrdIDs and
//! ExecIDs, gap fills for the rest), one it never read among them, and it
//! goes on trading. Every order is on every replica exactly once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use exchange_fix::message::Message;
use exchange_testkit::fix::Client as FixClient;
use exchange_testkit::{free_port, open_order_counts, wait_until, Client, TieredVenue};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const SENDER: &str = "BANK1";
const ORDER: &str = "55=BTC-USD|54=1|60=20240101-00:00:00|40=2|44=59000|38=0.01|";

/// A gateway configuration serving the session `SENDER` for `account`,
/// with FIX on `port`.
fn fix_config(dir: &Path, index: usize, port: u16, account: u64) -> PathBuf {
    let path = dir.join(format!("gateway-{index}.toml"));
    let text = format!(
        "[fix]\nlisten = \"127.0.0.1:{port}\"\n\n[[fix.sessions]]\n\
         sender_comp_id = \"{SENDER}\"\npassword = \"pw-{SENDER}\"\naccount = {account}\n"
    );
    std::fs::write(&path, text).expect("gateway configuration");
    path
}

/// Waits until the gateway's FIX acceptor takes connections.
fn wait_fix(addr: SocketAddr) {
    wait_until("the gateway's FIX acceptor", || {
        std::net::TcpStream::connect(addr).is_ok()
    });
}

/// Sends an order and returns its New report.
async fn place(client: &mut FixClient, cl_ord_id: &str) -> Message {
    client.send("D", &format!("11={cl_ord_id}|{ORDER}")).await;
    let report = client.recv_until(|m| m.text(35) == Some("8")).await;
    assert_eq!(report.text(11), Some(cl_ord_id), "{:?}", report.text(58));
    assert_eq!(report.text(150), Some("0"), "{:?}", report.text(58));
    report
}

/// What gateway 0 gave the counterparty before it died.
struct Before {
    /// ExecID of each report read, by ClOrdID.
    exec_ids: BTreeMap<String, String>,
    /// The last MsgSeqNum it read, and its own next one.
    last_read: u64,
    next_seq: u64,
    /// The MsgSeqNum of the order lost with gateway 0, and when it was
    /// first sent.
    lost_seq: u64,
    lost_at: String,
}

/// Trades through gateway 0: three orders whose reports it reads, a
/// fourth it sends and does not read the answer of, then a fifth that
/// never reaches the venue (numbered, not written: lost in the gateway).
fn trade_at_first(rt: &tokio::runtime::Runtime, addr: SocketAddr) -> Before {
    rt.block_on(async {
        let mut client = FixClient::logon(addr, SENDER).await;
        let mut exec_ids = BTreeMap::new();
        let mut last_read = 1;
        for n in 1..=3 {
            let id = format!("c{n}");
            let report = place(&mut client, &id).await;
            exec_ids.insert(id, report.text(17).expect("ExecID").to_string());
            last_read = report.seq_num().expect("MsgSeqNum");
        }
        client.send("D", &format!("11=c4|{ORDER}")).await;
        let lost_seq = client.seq;
        client.encode("D", &format!("11=c5|{ORDER}"));
        Before {
            exec_ids,
            last_read,
            next_seq: client.seq,
            lost_seq,
            lost_at: exchange_fix::time::format(exchange_fix::time::now_ns()),
        }
    })
}

/// The order counts of the account on every replica, once all hold `n`.
fn wait_orders(venue: &TieredVenue, account: &exchange_testkit::Account, n: usize) {
    for port in venue.replica_ports() {
        wait_until("every replica holds the orders", || {
            open_order_counts(&Client { port }, account).len() == n
        });
    }
}

/// Logs on at gateway 1 with the next MsgSeqNum: sends the lost order
/// again when asked, reads the reports of gateway 0's time again, trades.
async fn continue_at_second(addr: SocketAddr, before: &Before) {
    let mut client = FixClient::logon_at(addr, SENDER, before.next_seq).await;
    let logon = client.recv().await;
    assert_eq!(logon.text(35), Some("A"), "{:?}", logon.text(58));
    let logon_seq = logon.seq_num().expect("MsgSeqNum");
    assert!(
        logon_seq > before.last_read + 1,
        "the exchange's numbers go on above gateway 0's: {logon_seq} after {}",
        before.last_read
    );
    // The venue applied c4: the lost c5 is the first it asks for.
    let request = client.recv().await;
    assert_eq!(request.text(35), Some("2"), "{:?}", request.text(58));
    assert_eq!(request.uint(7), Some(before.lost_seq));
    client.seq = before.lost_seq;
    let resent = format!("43=Y|122={}|", before.lost_at);
    let again = client.encode_with_header("D", &resent, &format!("11=c5|{ORDER}"));
    client.write(&again).await;
    let fill = format!("123=Y|36={}|", before.next_seq + 1);
    let gap_fill = client.encode_with_header("4", &resent, &fill);
    client.write(&gap_fill).await;
    let report = client.recv_until(|m| m.text(35) == Some("8")).await;
    assert_eq!((report.text(11), report.text(150)), (Some("c5"), Some("0")));

    // Now the counterparty asks for what it missed, up to the Logon.
    let begin = before.last_read + 1;
    client
        .send("2", &format!("7={begin}|16={}|", logon_seq - 1))
        .await;
    let mut expected = begin;
    let mut resent = BTreeMap::new();
    while expected < logon_seq {
        let message = client.recv().await;
        assert_eq!(message.seq_num(), Some(expected), "{:?}", message.text(35));
        match message.text(35) {
            Some("4") => {
                assert_eq!(message.text(123), Some("Y"), "a gap fill");
                expected = message.uint(36).expect("NewSeqNo");
            }
            Some("8") => {
                assert_eq!(message.text(43), Some("Y"), "PossDupFlag");
                assert!(message.get(122).is_some(), "OrigSendingTime");
                let id = message.text(11).expect("ClOrdID").to_string();
                let exec_id = message.text(17).expect("ExecID").to_string();
                assert!(resent.insert(id, exec_id).is_none(), "each report once");
                expected += 1;
            }
            other => panic!("unexpected message {other:?} in the resend"),
        }
    }
    assert_eq!(expected, logon_seq, "the resend ends where asked");
    for (id, exec_id) in &before.exec_ids {
        assert_eq!(resent.get(id), Some(exec_id), "{id}: the same report again");
    }
    assert!(
        resent.contains_key("c4"),
        "the report gateway 0 could not deliver"
    );
    assert!(!resent.contains_key("c5"), "{resent:?}");

    // Trading goes on.
    let report = place(&mut client, "c6").await;
    assert!(report.seq_num() > Some(logon_seq));
    assert_eq!(report.get(43), None, "a new report");
}

#[test]
fn a_fix_session_continues_at_another_gateway() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let (mut venue, account, addrs) = venue_with_fix(&dir);
    let rt = tokio::runtime::Runtime::new().expect("runtime");

    let before = trade_at_first(&rt, addrs[0]);
    // The fourth order is in the log before gateway 0 dies.
    wait_orders(&venue, &account, 4);
    venue.kill_gateway(0);

    rt.block_on(continue_at_second(addrs[1], &before));
    wait_orders(&venue, &account, 6);
    for port in venue.replica_ports() {
        let counts = open_order_counts(&Client { port }, &account);
        let expected: BTreeMap<String, usize> = (1..=6).map(|n| (format!("c{n}"), 1)).collect();
        assert_eq!(counts, expected, "replica on port {port}: each order once");
    }
}

/// A venue of three replicas and two gateways serving `SENDER` for a
/// funded account, and their FIX addresses.
fn venue_with_fix(dir: &Path) -> (TieredVenue, exchange_testkit::Account, [SocketAddr; 2]) {
    let mut venue = TieredVenue::start(EXCHANGE, dir, 3, 0, 0);
    let leader = venue.wait_leader();
    let account = Client {
        port: venue.replicas[&leader].http,
    }
    .funded_account();
    let fix_ports = [free_port(), free_port()];
    for (index, port) in fix_ports.iter().enumerate() {
        let config = fix_config(dir, index, *port, account.id);
        venue.add_gateway(config);
        venue.wait_gateway(venue.gateway_ports[index]);
    }
    let addrs = fix_ports.map(|port| SocketAddr::from(([127, 0, 0, 1], port)));
    addrs.iter().for_each(|addr| wait_fix(*addr));
    (venue, account, addrs)
}

/// Python with QuickFIX, or None (then the test is skipped, except in CI).
fn quickfix_python() -> Option<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = std::process::Command::new(&python)
        .args(["-c", "import quickfix, simplefix"])
        .output();
    if probe.is_ok_and(|p| p.status.success()) {
        return Some(python);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
    assert!(
        !in_ci,
        "QuickFIX is needed: pip install -r tests/fix/requirements.txt"
    );
    println!("SKIPPED: python3 lacks quickfix (pip install -r tests/fix/requirements.txt)");
    None
}

/// Runs one phase of tests/fix/continuity_client.py; its JSON report.
fn quickfix_phase(python: &str, phase: &str, addr: SocketAddr, store: &Path) -> serde_json::Value {
    let suite = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fix");
    let output = std::process::Command::new(python)
        .arg("continuity_client.py")
        .args([phase, &addr.port().to_string()])
        .arg(store)
        .current_dir(&suite)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run the QuickFIX counterparty");
    assert!(
        output.status.success(),
        "QuickFIX phase {phase} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let report: serde_json::Value = serde_json::from_str(line).expect("the phase's JSON report");
    assert_eq!(
        report["rejects"],
        serde_json::json!([]),
        "phase {phase}: session Rejects between QuickFIX and the exchange"
    );
    report
}

/// ExecID by ClOrdID of the reports in `report` with PossDupFlag `poss_dup`.
fn exec_ids(report: &serde_json::Value, poss_dup: bool) -> BTreeMap<String, String> {
    let received = report["received"].as_array().cloned().unwrap_or_default();
    received
        .iter()
        .filter(|m| (m["43"].as_str() == Some("Y")) == poss_dup)
        .filter_map(|m| Some((m["11"].as_str()?.to_string(), m["17"].as_str()?.to_string())))
        .collect()
}

/// The same with QuickFIX, a complete FIX engine, as the counterparty: it
/// logs out of gateway 0, which is then killed, and logs on at gateway 1
/// with its own stored numbers; its session layer recovers the gap by
/// itself, without a session Reject either way.
#[test]
fn quickfix_continues_its_session_at_another_gateway() {
    let Some(python) = quickfix_python() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("venue");
    let (mut venue, account, addrs) = venue_with_fix(&dir);
    let store = tmp.path().join("quickfix");

    let first = quickfix_phase(&python, "first", addrs[0], &store);
    let originals = exec_ids(&first, false);
    assert_eq!(originals.len(), 3, "{first}");
    wait_orders(&venue, &account, 3);
    venue.kill_gateway(0);

    let second = quickfix_phase(&python, "second", addrs[1], &store);
    assert_eq!(exec_ids(&second, true), originals, "the same reports again");
    assert!(exec_ids(&second, false).contains_key("c4"), "{second}");
    wait_orders(&venue, &account, 4);
    for port in venue.replica_ports() {
        let counts = open_order_counts(&Client { port }, &account);
        let expected: BTreeMap<String, usize> = (1..=4).map(|n| (format!("c{n}"), 1)).collect();
        assert_eq!(counts, expected, "replica on port {port}: each order once");
    }
}
