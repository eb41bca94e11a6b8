//! `exchange replay` end to end: the real binary on small command files.

use std::path::{Path, PathBuf};
use std::process::Output;

use exchange_testkit::run;
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const LIST: &str = concat!(
    r#"{"cmd":"add_instrument","symbol":"BTC-USD","base":"BTC","quote":"USD","#,
    r#""tick_size":"0.01","lot_size":"0.0001","maker_fee_bps":-1,"taker_fee_bps":5}"#
);
const LIST_ETH: &str = concat!(
    r#"{"cmd":"add_instrument","symbol":"ETH-USD","base":"ETH","quote":"USD","#,
    r#""tick_size":"0.01","lot_size":"0.001","maker_fee_bps":0,"taker_fee_bps":0}"#
);
const FUND_BUYER: &str = r#"{"cmd":"deposit","account":1,"asset":"USD","amount":"100000","ts":10}"#;
const FUND_SELLER: &str = r#"{"cmd":"deposit","account":2,"asset":"BTC","amount":"10","ts":11}"#;

fn write_commands(dir: &Path, lines: &[&str]) -> PathBuf {
    let path = dir.join("commands.jsonl");
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).expect("write commands");
    path
}

/// Replays `path` and returns its events, asserting a clean exit.
fn replay(path: &Path, extra: &[&str]) -> (Output, Vec<Value>) {
    let mut args = vec!["replay", path.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    let output = run(EXCHANGE, &args, None);
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = parse_events(&output.stdout);
    (output, events)
}

fn parse_events(stdout: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(stdout).expect("utf-8 events");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "seq is gapless"
    );
    events
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

fn place(account: u64, coid: &str, side: &str, price: &str, qty: &str, ts: u64) -> String {
    format!(
        concat!(
            r#"{{"cmd":"place","account":{account},"client_order_id":"{coid}","#,
            r#""symbol":"BTC-USD","side":"{side}","type":"limit","#,
            r#""price":"{price}","qty":"{qty}","tif":"gtc","ts":{ts}}}"#
        ),
        account = account,
        coid = coid,
        side = side,
        price = price,
        qty = qty,
        ts = ts
    )
}

#[test]
fn trades_and_rejects_with_reasons() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let sell = place(2, "s1", "sell", "100.00", "2", 20);
    let off_tick = place(1, "bad-tick", "buy", "100.005", "1", 21);
    let zero_qty = place(1, "zero", "buy", "100", "0", 22);
    let duplicate = place(2, "s1", "sell", "101", "1", 23);
    let buy = place(1, "b1", "buy", "100.50", "1.5", 24);
    let path = write_commands(
        dir,
        &[
            LIST,
            FUND_BUYER,
            FUND_SELLER,
            &sell,
            &off_tick,
            &zero_qty,
            &duplicate,
            &buy,
        ],
    );
    let (_, events) = replay(&path, &[]);

    let rejects = of_kind(&events, "rejected");
    let reasons: Vec<(&str, u64, &str)> = rejects
        .iter()
        .map(|r| {
            let reason = r["reason"].as_str().expect("reason");
            let coid = r["client_order_id"].as_str().expect("client order id");
            (reason, r["code"].as_u64().expect("code"), coid)
        })
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("price_not_on_tick", 106, "bad-tick"),
            ("invalid_quantity", 107, "zero"),
            ("duplicate_client_order_id", 301, "s1"),
        ]
    );
    assert!(rejects
        .iter()
        .all(|r| r["command"] == "place" && r["message"].is_string()));

    let trades = of_kind(&events, "trade");
    assert_eq!(trades.len(), 1, "{trades:?}");
    let trade = trades[0];
    assert_eq!(trade["price"], "100");
    assert_eq!(trade["qty"], "1.5");
    assert_eq!(trade["ts"], 24);
    assert_eq!(
        (&trade["maker_account"], &trade["taker_account"]),
        (&Value::from(2), &Value::from(1))
    );
    assert_eq!(trade["aggressor_side"], "buy");
    // 150 notional: taker pays 5 bps, the maker gets 1 bp back.
    assert_eq!(trade["taker_fee"], "0.075");
    assert_eq!(trade["maker_fee"], "-0.015");
    assert_eq!(trade["maker_leaves_qty"], "0.5");
    assert_eq!(trade["taker_leaves_qty"], "0");
    let fee_balance = events
        .iter()
        .rev()
        .find(|e| e["event"] == "balance" && e["account"] == 0)
        .expect("fee account balance");
    assert_eq!(fee_balance["total"], "0.06");
}

#[test]
fn malformed_lines_become_error_events_and_processing_goes_on() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let float_price = concat!(
        r#"{"cmd":"place","account":1,"client_order_id":"f","symbol":"BTC-USD","#,
        r#""side":"buy","price":100.5,"qty":"1","ts":50}"#
    );
    let path = write_commands(
        dir,
        &[
            LIST,
            FUND_BUYER,
            "",
            float_price,
            "this is not json",
            r#"{"cmd":"fly"}"#,
            FUND_SELLER,
        ],
    );
    let (output, events) = replay(&path, &[]);
    let errors = of_kind(&events, "error");
    let lines: Vec<u64> = errors
        .iter()
        .map(|e| e["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(lines, vec![4, 5, 6]);
    let message = |i: usize| errors[i]["message"].as_str().expect("message").to_string();
    assert!(
        message(0).contains("`price`") && message(0).contains("decimal string"),
        "{}",
        message(0)
    );
    assert!(message(1).contains("JSON"), "{}", message(1));
    assert!(message(2).contains("\"fly\""), "{}", message(2));
    // An error takes the time of the last command before it.
    assert_eq!(errors[0]["ts"], 10);
    // The line after the errors was still applied.
    let last = events.last().expect("events");
    assert_eq!(
        (&last["event"], &last["account"], &last["total"]),
        (&Value::from("balance"), &Value::from(2), &Value::from("10"))
    );
    let summary = String::from_utf8_lossy(&output.stderr);
    assert!(summary.contains("7 lines read"), "{summary}");
    assert!(summary.contains("3 commands applied"), "{summary}");
    assert!(summary.contains("3 errors"), "{summary}");
}

fn trading_session() -> Vec<String> {
    vec![
        LIST.to_string(),
        LIST_ETH.to_string(),
        FUND_BUYER.to_string(),
        FUND_SELLER.to_string(),
        place(1, "b1", "buy", "99.50", "1", 30),
        place(1, "b2", "buy", "100", "0.25", 31),
        place(2, "a1", "sell", "101.25", "2", 32),
        place(2, "a2", "sell", "100.75", "1", 33),
        place(2, "a3", "sell", "100", "0.1", 34),
    ]
}

#[test]
fn final_state_lists_books_best_first_and_balances() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let lines = trading_session();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let path = write_commands(dir, &refs);
    let state_path = dir.join("final.json");
    replay(
        &path,
        &["--final-state", state_path.to_str().expect("utf-8 path")],
    );
    let text = std::fs::read_to_string(&state_path).expect("final state written");
    let state: Value = serde_json::from_str(&text).expect("final state is JSON");

    let btc = &state["books"]["BTC-USD"];
    assert_eq!(
        btc["bids"],
        serde_json::json!([["100", "0.15"], ["99.5", "1"]])
    );
    assert_eq!(
        btc["asks"],
        serde_json::json!([["100.75", "1"], ["101.25", "2"]])
    );
    assert_eq!(
        state["books"]["ETH-USD"],
        serde_json::json!({"bids": [], "asks": []})
    );

    let seller = &state["balances"]["2"];
    assert_eq!(seller["BTC"]["total"], "9.9");
    assert_eq!(seller["BTC"]["available"], "6.9");
    // The seller took 0.1 at 100: 10 USD less the 5 bp taker fee; the fee
    // account keeps 5 bp less the buyer's 1 bp maker rebate.
    assert_eq!(seller["USD"]["total"], "9.995");
    assert_eq!(state["balances"]["0"]["USD"]["total"], "0.004");
    let hash = state["state_hash"].as_str().expect("state hash");
    assert_eq!(hash.len(), 64);

    let again = dir.join("again.json");
    replay(
        &path,
        &["--final-state", again.to_str().expect("utf-8 path")],
    );
    assert_eq!(
        std::fs::read_to_string(&again).expect("second final state"),
        text
    );
}

#[test]
fn final_state_shows_each_instruments_phase_and_reference_price() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let mut lines = trading_session();
    lines.push(
        concat!(
            r#"{"cmd":"add_instrument","symbol":"SOL-USD","base":"SOL","quote":"USD","#,
            r#""tick_size":"0.01","lot_size":"0.01","maker_fee_bps":0,"taker_fee_bps":0,"#,
            r#""reference_price":"20","static_band_pct":"10","volatility_auction_ns":5,"#,
            r#""phase":"pre_open","ts":40}"#
        )
        .to_string(),
    );
    lines.push(
        r#"{"cmd":"set_reference_price","symbol":"SOL-USD","price":"10.5","ts":41}"#.to_string(),
    );
    lines.push(r#"{"cmd":"halt","symbol":"ETH-USD","ts":42}"#.to_string());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let path = write_commands(dir, &refs);
    let state_path = dir.join("final.json");
    let (_, events) = replay(
        &path,
        &["--final-state", state_path.to_str().expect("utf-8 path")],
    );
    let set = events
        .iter()
        .find(|e| e["event"] == "reference_price")
        .expect("a reference_price event");
    assert_eq!(
        (&set["symbol"], &set["price"]),
        (&"SOL-USD".into(), &"10.5".into())
    );
    let text = std::fs::read_to_string(&state_path).expect("final state written");
    let state: Value = serde_json::from_str(&text).expect("final state is JSON");
    let instruments = &state["instruments"];
    assert_eq!(
        instruments["SOL-USD"],
        serde_json::json!({
            "status": "trading",
            "phase": "pre_open",
            "reference_price": "10.5",
            "static_reference_price": "10.5",
        })
    );
    // BTC-USD last traded at 100; ETH-USD never traded and is halted.
    assert_eq!(instruments["BTC-USD"]["phase"], "continuous");
    assert_eq!(instruments["BTC-USD"]["reference_price"], "100");
    assert_eq!(instruments["ETH-USD"]["phase"], "halted");
    assert_eq!(instruments["ETH-USD"]["status"], "halted");
    assert_eq!(instruments["ETH-USD"]["reference_price"], Value::Null);
}

#[test]
fn stdin_dash_matches_file_and_output_is_byte_identical() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let mut lines = trading_session();
    lines.push("{broken".to_string());
    lines.push(r#"{"cmd":"cancel","account":1,"client_order_id":"b1","ts":40}"#.to_string());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let path = write_commands(dir, &refs);

    let (first, events) = replay(&path, &[]);
    let (second, _) = replay(&path, &[]);
    assert!(events.len() > 20, "a real session: {} events", events.len());
    assert_eq!(first.stdout, second.stdout);

    let input = std::fs::read_to_string(&path).expect("read commands");
    let state_path = dir.join("stdin-final.json");
    let piped = run(
        EXCHANGE,
        &[
            "replay",
            "-",
            "--final-state",
            state_path.to_str().expect("utf-8 path"),
        ],
        Some(&input),
    );
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    assert_eq!(piped.stdout, first.stdout);
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).expect("written"))
            .expect("json");
    assert!(state["books"]["BTC-USD"]["bids"].is_array());
}

#[test]
fn missing_file_fails_with_its_name() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let dir = scratch.path();
    let missing = dir.join("nope.jsonl");
    let output = run(
        EXCHANGE,
        &["replay", missing.to_str().expect("utf-8 path")],
        None,
    );
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nope.jsonl"), "{stderr}");
}

#[test]
fn protocol_doc_lists_every_reject_reason_and_command() {
    let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/protocol.md exists");
    for reason in exchange_types::RejectReason::ALL {
        let row = format!(
            "| {} | `{}` | {} |",
            reason.code(),
            reason.as_str(),
            reason.message()
        );
        assert!(doc.contains(&row), "docs/protocol.md lacks the row {row}");
    }
    for name in exchange_codec::COMMAND_NAMES {
        let documented = doc.lines().any(|line| {
            line.strip_prefix("### ")
                .is_some_and(|heading| heading.split(", ").any(|h| h == *name))
        });
        assert!(documented, "docs/protocol.md has no section for {name}");
    }
}
