//! `exchange serve` after a crash that damaged the end of its journal: a
//! torn or garbled final record is cut off and reported, everything before
//! it survives, and the server carries on. Damage before the tail is not a
//! crash artefact: the server refuses to start.

use std::path::Path;

use exchange_testkit::{last_segment, limit, Account, Response, Server};
use serde_json::Value;

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

const ORDERS: usize = 8;

/// Places `ORDERS` resting orders one by one (the last journal record is
/// the last placement), waits until the reporting store has them all (a
/// history read waits for it), then kills the server.
fn orders_then_crash(data: &Path) -> (Account, Vec<Value>) {
    let mut server = Server::start(EXCHANGE, data);
    let account = server.api.funded_account();
    let placed: Vec<Value> = (0..ORDERS)
        .map(|n| {
            server.api.place(
                &account,
                &limit("buy", &format!("{}", 59_000 + n), "0.01", &format!("o{n}")),
            )
        })
        .collect();
    let fills = server.api.signed(&account, "GET", "/v1/fills", "");
    assert_eq!(fills.status, 200, "{}", fills.text());
    server.kill();
    (account, placed)
}

/// Parses `N bytes at offset M dropped (REASON)` from the recovery warning.
fn dropped(stderr: &str) -> (u64, u64, String) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("recovery: WARNING: dropped a torn or corrupt journal tail"))
        .unwrap_or_else(|| panic!("no torn-tail warning on stderr:\n{stderr}"));
    let number_before = |label: &str| -> u64 {
        let head = line
            .rsplit_once(label)
            .map(|(head, _)| head)
            .unwrap_or_default();
        let digits: String = head
            .trim_end()
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_owned();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no number before {label:?} in {line:?}"))
    };
    let reason = line
        .rsplit('(')
        .next()
        .unwrap_or_default()
        .trim_end_matches(')')
        .to_owned();
    (
        number_before(" bytes at offset"),
        number_before(" dropped"),
        reason,
    )
}

/// Restarts on the damaged directory and checks what survived.
fn recovers_without_the_last_order(
    data: &Path,
    account: &Account,
    placed: &[Value],
    damaged_len: u64,
    reason: &str,
) {
    let mut server = Server::start(EXCHANGE, data);
    let stderr = server.stderr();
    the_damaged_tail_is_reported_and_cut(data, &stderr, damaged_len, reason);

    let (lost, kept) = placed.split_last().expect("orders were placed");
    for order in kept {
        let now = server.api.signed(
            account,
            "GET",
            &format!("/v1/orders/{}", order["order_id"]),
            "",
        );
        assert_eq!(
            now.status,
            200,
            "order before the damage lost: {}",
            now.text()
        );
        let mut expected = order.clone();
        expected.as_object_mut().map(|o| o.remove("fills"));
        assert_eq!(now.json(), expected);
    }
    let gone = server.api.signed(
        account,
        "GET",
        &format!("/v1/orders/{}", lost["order_id"]),
        "",
    );
    gone.expect_error(404, "unknown_order", "the order in the dropped record");

    // It serves new orders, and the repaired journal is clean next time.
    let fresh = server
        .api
        .place(account, &limit("sell", "61000", "0.02", "after-repair"));
    server.kill();
    let again = Server::start(EXCHANGE, data);
    assert!(!again.stderr().contains("WARNING"), "{}", again.stderr());
    let now = again.api.signed(
        account,
        "GET",
        &format!("/v1/orders/{}", fresh["order_id"]),
        "",
    );
    assert_eq!(
        (now.status, now.json()["client_order_id"].as_str()),
        (200, Some("after-repair")),
        "{}",
        now.text()
    );
    let open = again.api.read(account, "/v1/orders");
    assert_eq!(
        open["orders"].as_array().map(Vec::len),
        Some(ORDERS),
        "{open}"
    );
}

#[test]
fn a_truncated_final_record_is_dropped_and_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (account, placed) = orders_then_crash(&data);
    let segment = last_segment(&data);
    let len = std::fs::metadata(&segment).expect("segment").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open segment");
    file.set_len(len - 5).expect("truncate");
    drop(file);
    // Recovery counts the written part up to its last non-zero byte (zeros
    // after it may be preallocated room), and a binary command may end in
    // the zeros that pad an identifier.
    let bytes = std::fs::read(&segment).expect("read segment");
    let written = bytes.iter().rposition(|&b| b != 0).map_or(0, |at| at + 1) as u64;
    recovers_without_the_last_order(&data, &account, &placed, written, "record cut short");
}

#[test]
fn a_garbled_final_byte_is_dropped_and_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (account, placed) = orders_then_crash(&data);
    let segment = last_segment(&data);
    let mut bytes = std::fs::read(&segment).expect("read segment");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&segment, &bytes).expect("write segment");
    recovers_without_the_last_order(
        &data,
        &account,
        &placed,
        bytes.len() as u64,
        "checksum mismatch",
    );
}

#[test]
fn damage_before_the_tail_refuses_to_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    orders_then_crash(&data);
    let segment = last_segment(&data);
    let mut bytes = std::fs::read(&segment).expect("read segment");
    // The client order id of an early order, well before the final record
    // (a binary command pads it with NUL bytes).
    let at = bytes
        .windows(4)
        .position(|w| w == b"o1\0\0")
        .expect("order o1 in the journal");
    bytes[at + 1] = b'9';
    std::fs::write(&segment, &bytes).expect("write segment");
    let (status, stderr) = Server::start_refused(EXCHANGE, &data);
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert_eq!(
        std::fs::read(&segment).expect("read segment"),
        bytes,
        "a refused start must not alter the journal"
    );
}

/// After a clean stop the snapshot covers the final record: that record was
/// durable and acknowledged, so damage to it loses nothing. The damaged
/// record is dropped and reported like a torn tail, the server starts from
/// the snapshot with nothing left to replay, and the log goes on after the
/// snapshot: the next command is acknowledged and survives a restart.
#[test]
fn damage_to_a_final_record_the_snapshot_covers_is_not_a_torn_tail() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut server = Server::start(EXCHANGE, &data);
    let account = server.api.funded_account();
    let placed = server
        .api
        .place(&account, &limit("buy", "59000", "0.01", "covered"));
    let applied = server.api.metric("exchange_applied_index");
    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "{}", server.stderr());
    let snapshot = newest_snapshot_index(&data);
    let segment = last_segment(&data);
    let mut bytes = std::fs::read(&segment).expect("read segment");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&segment, &bytes).expect("write segment");

    let mut restarted = Server::start(EXCHANGE, &data);
    let stderr = restarted.stderr();
    recovery_drops_the_record_and_starts_from_the_snapshot(
        &restarted,
        &stderr,
        bytes.len() as u64,
        snapshot,
        applied,
    );
    let order = restarted.api.signed(
        &account,
        "GET",
        &format!("/v1/orders/{}", placed["order_id"]),
        "",
    );
    assert_eq!(order.status, 200, "the snapshot's order: {}", order.text());
    let mut expected = placed.clone();
    expected.as_object_mut().map(|o| o.remove("fills"));
    assert_eq!(order.json(), expected);
    let next = restarted.api.signed(
        &account,
        "POST",
        "/v1/orders",
        &limit("buy", "59001", "0.01", "next").to_string(),
    );
    assert_eq!(
        next.status,
        201,
        "the first command after recovery: {}\n{}",
        next.text(),
        restarted.stderr()
    );
    assert_eq!(
        next.json()["order_id"].as_u64(),
        placed["order_id"].as_u64().map(|id| id + 1),
        "order ids go on from the snapshot's"
    );
    restarted.kill();
    the_next_order_survives_a_restart(&data, &account, &next);
}

fn the_damaged_tail_is_reported_and_cut(data: &Path, stderr: &str, damaged_len: u64, reason: &str) {
    let (bytes, offset, why) = dropped(stderr);
    // The reporting store had recorded the damaged entry: it is set aside
    // (kept as evidence) and rebuilt, so the lost order is not served from
    // it either.
    assert!(
        stderr.contains("reporting: WARNING: the store was at log entry")
            && stderr.contains("is rebuilt from the journal"),
        "{stderr}"
    );
    let aside = std::fs::read_dir(data)
        .expect("data dir")
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().contains("ahead-of-journal"));
    assert!(aside, "the old store is kept beside the new one");
    assert_eq!(why, reason, "{stderr}");
    assert!(bytes > 0, "{stderr}");
    assert_eq!(
        offset + bytes,
        damaged_len,
        "the whole damaged tail, and only it, is dropped: {stderr}"
    );
    // The file is cut at the offset; a Raft leader may since have appended
    // the empty entry of its new term after it. (That the damage is gone
    // is checked below: the next start finds nothing to repair.)
    assert!(
        std::fs::metadata(last_segment(data))
            .expect("segment")
            .len()
            >= offset,
        "the file is cut"
    );
}

fn recovery_drops_the_record_and_starts_from_the_snapshot(
    restarted: &Server,
    stderr: &str,
    segment_len: u64,
    snapshot: u64,
    applied: u64,
) {
    let (dropped_bytes, offset, reason) = dropped(stderr);
    assert_eq!(reason, "checksum mismatch", "{stderr}");
    assert!(dropped_bytes > 0, "{stderr}");
    assert_eq!(
        offset + dropped_bytes,
        segment_len,
        "the damaged final record, and only it, is dropped: {stderr}"
    );
    assert!(
        stderr.contains(&format!("recovery: loaded snapshot at index {snapshot}\n")),
        "recovery starts from the snapshot the clean stop wrote: {stderr}"
    );
    assert_eq!(restarted.recovery_number("replayed"), 0, "{stderr}");
    assert_eq!(
        restarted.recovery_number("applied index"),
        applied,
        "every command applied before the stop: {stderr}"
    );
}

fn the_next_order_survives_a_restart(data: &Path, account: &Account, next: &Response) {
    let again = Server::start(EXCHANGE, data);
    assert!(!again.stderr().contains("WARNING"), "{}", again.stderr());
    let kept = again.api.signed(
        account,
        "GET",
        &format!("/v1/orders/{}", next.json()["order_id"]),
        "",
    );
    assert_eq!(
        kept.status,
        200,
        "an acknowledged order lost on restart: {}\n{}",
        kept.text(),
        again.stderr()
    );
}

/// The index of the newest snapshot file in a data directory.
fn newest_snapshot_index(data: &Path) -> u64 {
    std::fs::read_dir(data.join("snapshots"))
        .expect("the snapshot directory")
        .filter_map(|e| {
            let name = e.expect("directory entry").file_name();
            let name = name.to_str()?;
            name.strip_prefix("snapshot-")?
                .strip_suffix(".snap")?
                .parse()
                .ok()
        })
        .max()
        .expect("a snapshot written by the clean stop")
}
