//! Rules the server holds at its edges and in the core, on the real
//! binary: the admin token must be private and long; decimals have one
//! strict grammar; a suspended account's funds stay where the kill switch
//! caught them; the fee account cannot be suspended.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Instant;

use exchange_testkit::{
    free_port, limit, spawn_serve, wait_until, Account, Client, Server, DEADLINE,
};
use serde_json::{json, Value};

const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// `exchange serve` on `data`, with `args`, and the admin token in the
/// environment if `env_token` gives one; stderr goes to `data.stderr`.
fn serve(data: &Path, port: u16, args: &[&str], env_token: Option<&str>) -> Child {
    spawn_serve(
        EXCHANGE,
        data,
        port,
        args,
        env_token,
        &data.with_extension("stderr"),
    )
}

/// Runs `exchange serve` that must refuse to start: its exit code and
/// stderr. A server still running at the deadline fails the test.
fn refused(data: &Path, args: &[&str], env_token: Option<&str>) -> (Option<i32>, String) {
    let mut child = serve(data, free_port(), args, env_token);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the server started with an admin token it must refuse:\n{}",
                stderr_of(data)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (status.code(), stderr_of(data))
}

fn stderr_of(data: &Path) -> String {
    std::fs::read_to_string(data.with_extension("stderr")).unwrap_or_default()
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

fn create_account_with(api: Client, token: &str) -> u16 {
    let auth = [("Authorization", format!("Bearer {token}"))];
    api.request("POST", "/admin/accounts", &auth, b"").status
}

fn ready(api: Client) {
    wait_until("the server is ready", || {
        api.try_request("GET", "/ready", &[], b"")
            .is_ok_and(|r| r.status == 200)
    });
}

fn write_token(path: &Path, token: &str, mode: u32) {
    std::fs::write(path, format!("{token}\n")).expect("token file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn an_admin_token_file_others_can_read_stops_the_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("token");
    let token = "a-long-enough-admin-token-for-this-test-0123";
    let file_arg = file.to_str().expect("utf-8");
    // Refused whoever owns the file: a file root owns may be read by its
    // group (as an orchestrator mounts a secret), never written by it or
    // read by others.
    for mode in [0o644, 0o660, 0o604] {
        write_token(&file, token, mode);
        let data = dir.path().join(format!("data-{mode:o}"));
        let (code, stderr) = refused(&data, &["--admin-token-file", file_arg], None);
        assert_eq!(code, Some(1), "mode {mode:o}: {stderr}");
        assert!(
            stderr.contains(file_arg)
                && stderr.contains(&format!("{mode:o}"))
                && stderr.contains("chmod 600"),
            "mode {mode:o}: the error must name the file, its mode and the fix:\n{stderr}"
        );
    }
    // The same file made private is taken.
    write_token(&file, token, 0o600);
    let port = free_port();
    let child = serve(
        &dir.path().join("data-600"),
        port,
        &["--admin-token-file", file_arg],
        None,
    );
    let api = Client { port };
    ready(api);
    assert_eq!(create_account_with(api, token), 201);
    stop(child);

    // The token file kept in the data directory is held to the same rule.
    let data = dir.path().join("data-kept");
    std::fs::create_dir(&data).expect("data dir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let kept = data.join("admin_token");
    write_token(&kept, token, 0o644);
    let (code, stderr) = refused(&data, &[], None);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&kept.display().to_string()) && stderr.contains("chmod 600"),
        "{stderr}"
    );
}

#[test]
fn a_short_admin_token_stops_the_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let short = "x".repeat(31);
    let (code, stderr) = refused(&dir.path().join("env"), &[], Some(&short));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("EXCHANGE_ADMIN_TOKEN") && stderr.contains("31 bytes"),
        "the error must name the variable and the length:\n{stderr}"
    );
    assert!(stderr.contains("at least 32"), "{stderr}");

    let file = dir.path().join("token");
    // Surrounding whitespace does not count towards the length.
    write_token(&file, &format!("  {short}  "), 0o600);
    let file_arg = file.to_str().expect("utf-8");
    let (code, stderr) = refused(
        &dir.path().join("file"),
        &["--admin-token-file", file_arg],
        None,
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(file_arg) && stderr.contains("at least 32"),
        "{stderr}"
    );

    // Exactly 32 bytes is enough.
    let port = free_port();
    let token = "y".repeat(32);
    let child = serve(&dir.path().join("ok"), port, &[], Some(&token));
    let api = Client { port };
    ready(api);
    assert_eq!(create_account_with(api, &token), 201);
    stop(child);
}

/// `cluster up` would hand a short token to every node, each of which
/// would refuse it: it says so itself, and starts nothing.
#[test]
fn cluster_up_refuses_a_short_admin_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = dir.path().join("cluster");
    let port_base = exchange_testkit::cluster_port_base(1);
    let out = Command::new(EXCHANGE)
        .args(["cluster", "up", "--nodes", "1", "--port-base"])
        .arg(port_base.to_string())
        .arg("--data-dir")
        .arg(&cluster)
        .env("EXCHANGE_ADMIN_TOKEN", "short")
        .env_remove("EXCHANGE_MASTER_KEY")
        .output()
        .expect("run cluster up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("5 bytes") && stderr.contains("at least 32"),
        "{stderr}"
    );
    let node_dirs = std::fs::read_dir(&cluster)
        .map(|dir| dir.flatten().filter(|e| e.path().is_dir()).count())
        .unwrap_or(0);
    assert_eq!(node_dirs, 0, "a node directory was created: {stderr}");
}

/// `serve --demo` with no token given generates one that passes its own
/// rules, and it opens the admin routes.
#[test]
fn the_demo_generates_a_token_that_passes_the_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let port = free_port();
    let child = serve(&data, port, &["--demo"], None);
    let api = Client { port };
    ready(api);
    let path = data.join("admin_token");
    let token = std::fs::read_to_string(&path).expect("generated token");
    let token = token.trim();
    assert!(token.len() >= 32, "{token:?}");
    let mode = std::fs::metadata(&path)
        .expect("token file")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(create_account_with(api, token), 201);
    stop(child);
    // And the next start takes it again.
    let port = free_port();
    let child = serve(&data, port, &["--demo"], None);
    let api = Client { port };
    ready(api);
    assert_eq!(create_account_with(api, token), 201);
    stop(child);
}

/// The forms outside the grammar `-?(0|[1-9][0-9]*)(\.[0-9]+)?`.
const BAD_DECIMALS: &[&str] = &[
    "55000.", ".5", "055000", "00", "-.5", "0.", "1e3", "+1", " 1", "1 ", "1,5",
];

fn balances(api: &Client, account: &Account) -> Value {
    api.read(account, "/v1/balances")
}

fn link_sub_account(api: &Client, owner: &Account, sub: &Account) {
    let path = format!("/admin/accounts/{}/sub-accounts", owner.id);
    let body = json!({ "account_id": sub.id }).to_string();
    let linked = api.admin("POST", &path, &body);
    assert_eq!(linked.status, 200, "link: {}", linked.text());
}

fn transfer(
    api: &Client,
    from: &Account,
    to: &Account,
    amount: &str,
) -> exchange_testkit::Response {
    let body = json!({ "to_account_id": to.id, "asset": "USD", "amount": amount }).to_string();
    api.signed(from, "POST", "/v1/transfers", &body)
}

#[test]
fn loose_decimals_are_refused_in_orders_and_transfers_and_change_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let sub = api.create_account();
    link_sub_account(&api, &owner, &sub);
    let before = (api.account_view(&owner), balances(&api, &sub));
    for bad in BAD_DECIMALS {
        let orders = [
            limit("buy", bad, "1", "bad-price"),
            limit("buy", "50000", bad, "bad-qty"),
            limit("sell", "70000", bad, "bad-qty-sell"),
        ];
        for order in orders {
            let answer = api.signed(&owner, "POST", "/v1/orders", &order.to_string());
            answer.expect_error(400, "invalid_decimal", &format!("order {order}"));
        }
        let answer = transfer(&api, &owner, &sub, bad);
        answer.expect_error(400, "invalid_decimal", &format!("transfer of {bad:?}"));
        let deposit = json!({ "account_id": owner.id, "asset": "USD", "amount": bad });
        let answer = api.admin("POST", "/admin/deposits", &deposit.to_string());
        answer.expect_error(400, "invalid_decimal", &format!("deposit of {bad:?}"));
    }
    assert_eq!(
        (api.account_view(&owner), balances(&api, &sub)),
        before,
        "a refused decimal changed something"
    );
    // The same values written in the grammar are taken.
    api.place(&owner, &limit("buy", "55000", "0.5", "good"));
    let moved = transfer(&api, &owner, &sub, "0.5");
    assert_eq!(moved.status, 200, "{}", moved.text());
}

#[test]
fn a_suspended_account_cannot_move_its_funds_to_trade_elsewhere() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let owner = api.funded_account();
    let sub = api.create_account();
    let sibling = api.create_account();
    link_sub_account(&api, &owner, &sub);
    link_sub_account(&api, &owner, &sibling);
    let seller = api.funded_account();
    api.place(&seller, &limit("sell", "60000", "1", "offer"));

    let suspended = api.admin("POST", &format!("/admin/accounts/{}/suspend", owner.id), "");
    assert_eq!(suspended.status, 200, "{}", suspended.text());
    let before = (
        balances(&api, &owner),
        balances(&api, &sub),
        balances(&api, &sibling),
    );
    transfer(&api, &owner, &sub, "100000").expect_error(
        422,
        "transfer_from_suspended",
        "transfer out of a suspended account",
    );
    transfer(&api, &owner, &sibling, "1").expect_error(
        422,
        "transfer_from_suspended",
        "transfer out of a suspended account",
    );
    // The sub-account got nothing to trade with.
    let order = limit("buy", "60000", "1", "around-the-switch").to_string();
    let answer = api.signed(&sub, "POST", "/v1/orders", &order);
    answer.expect_error(422, "insufficient_funds", "the sub-account's order");
    assert_eq!(
        (
            balances(&api, &owner),
            balances(&api, &sub),
            balances(&api, &sibling)
        ),
        before,
        "a refused transfer moved funds"
    );
    // The rest of the family is not suspended: funds can come in, and the
    // seller's offer is still there for others.
    api.deposit(&sibling, "USD", "10");
    let inbound = transfer(&api, &sibling, &owner, "10");
    assert_eq!(inbound.status, 200, "{}", inbound.text());

    let reinstated = api.admin(
        "POST",
        &format!("/admin/accounts/{}/reinstate", owner.id),
        "",
    );
    assert_eq!(reinstated.status, 200, "{}", reinstated.text());
    let moved = transfer(&api, &owner, &sub, "100000");
    assert_eq!(moved.status, 200, "{}", moved.text());
    api.place(&sub, &limit("buy", "60000", "1", "after-reinstate"));
}

#[test]
fn the_fee_account_cannot_be_suspended() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(EXCHANGE, &dir.path().join("data"));
    let api = server.api;
    let answer = api.admin("POST", "/admin/accounts/0/suspend", "");
    answer.expect_error(
        422,
        "fee_account_not_suspendable",
        "suspending the fee account",
    );
    // Nothing was recorded: there is no suspension to lift.
    let answer = api.admin("POST", "/admin/accounts/0/reinstate", "");
    answer.expect_error(
        422,
        "account_already_in_status",
        "reinstating the fee account",
    );
    // Other accounts are suspended as before.
    let member = api.create_account();
    let path = format!("/admin/accounts/{}/suspend", member.id);
    assert_eq!(api.admin("POST", &path, "").status, 200);
}
