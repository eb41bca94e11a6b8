//! What `exchange serve` writes is its user's alone: the data directory is
//! 0700 and every file in it 0600 (journal, snapshots, reporting store,
//! admin token), a looser existing directory is tightened; and the admin
//! token is never on the command line nor printed.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use exchange_testkit::{free_port, limit, spawn_serve, wait_until, Client, Server};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// Every path under `dir`, with its permission bits.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        out.push((path.clone(), meta.mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            walk(&path, out);
        }
    }
}

#[test]
fn the_data_directory_and_every_file_in_it_are_private() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    // An operator's directory made with the usual umask: tightened.
    std::fs::create_dir(&data).expect("data dir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = dir.path().join("exchange.toml");
    std::fs::write(&config, "snapshot_every = 3\n").expect("config");
    let mut server = Server::start_with(EXCHANGE, &data, Some(&config));
    let api = server.api;
    let alice = api.funded_account();
    for i in 0..5 {
        api.place(&alice, &limit("buy", "59000", "0.01", &format!("f-{i}")));
    }
    let status = server.stop_with(libc::SIGTERM);
    assert!(status.success(), "{status}\n{}", server.stderr());
    assert!(
        server.stderr().contains("now 700"),
        "no line about the tightened directory:\n{}",
        server.stderr()
    );

    let mut found = Vec::new();
    walk(&data, &mut found);
    let names: Vec<String> = found
        .iter()
        .map(|(p, _, _)| p.strip_prefix(&data).expect("under").display().to_string())
        .collect();
    for wanted in ["journal", "snapshot", "reporting.sqlite"] {
        assert!(
            names.iter().any(|n| n.contains(wanted)),
            "no {wanted} among {names:?}"
        );
    }
    let data_mode = std::fs::metadata(&data).expect("data").mode() & 0o777;
    assert_eq!(data_mode, 0o700, "the data directory");
    for (path, mode, is_dir) in &found {
        let wanted = if *is_dir { 0o700 } else { 0o600 };
        assert_eq!(*mode, wanted, "{} is {mode:o}", path.display());
    }
}

/// `exchange serve` on `data` with `args` and the admin token `token` in
/// the environment, its stderr in `log`.
fn spawn(data: &Path, log: &Path, port: u16, args: &[&str], token: Option<&str>) -> Child {
    spawn_serve(EXCHANGE, data, port, args, token, log)
}

fn ready(api: Client) {
    wait_until("the server is ready", || {
        api.try_request("GET", "/ready", &[], b"")
            .is_ok_and(|r| r.status == 200)
    });
}

fn stop(mut child: Child) {
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
}

fn create_account(api: Client, token: &str) -> u16 {
    api.request(
        "POST",
        "/admin/accounts",
        &[("Authorization", format!("Bearer {token}"))],
        b"",
    )
    .status
}

#[test]
fn a_generated_admin_token_is_kept_privately_and_never_printed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let port = free_port();
    let child = spawn(&data, &log, port, &[], None);
    let api = Client { port };
    ready(api);
    let path = data.join("admin_token");
    let token = std::fs::read_to_string(&path).expect("the token file");
    let token = token.trim();
    assert!(token.len() >= 32, "{token:?}");
    let mode = std::fs::metadata(&path).expect("token file").mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(create_account(api, token), 201);
    stop(child);
    let printed = std::fs::read_to_string(&log).expect("log")
        + &std::fs::read_to_string(log.with_extension("out")).expect("out");
    assert!(
        !printed.contains(token),
        "the token was printed:\n{printed}"
    );
    assert!(
        printed.contains(&path.display().to_string()),
        "the token's path was not logged:\n{printed}"
    );
}

#[test]
fn the_admin_token_comes_from_a_file_or_the_environment_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let refused = Command::new(EXCHANGE)
        .args(["serve", "--admin-token", "visible-in-ps"])
        .arg("--data-dir")
        .arg(dir.path().join("never"))
        .output()
        .expect("run");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--admin-token"));
    assert!(!dir.path().join("never").exists());

    let log = dir.path().join("serve.log");
    the_file_wins_over_the_environment(dir.path(), &log);
    the_environment_alone_serves(dir.path(), &log);
    an_empty_token_file_is_refused(dir.path());
}

fn the_file_wins_over_the_environment(dir: &Path, log: &Path) {
    let file = dir.join("token");
    std::fs::write(&file, "from-a-file-with-at-least-32-bytes\n").expect("token file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let data = dir.join("data");
    let port = free_port();
    let child = spawn(
        &data,
        log,
        port,
        &["--admin-token-file", file.to_str().expect("utf-8")],
        Some("from-the-environment-at-least-32-bytes"),
    );
    let api = Client { port };
    ready(api);
    // The file wins over the environment; nothing is generated.
    assert_eq!(
        create_account(api, "from-a-file-with-at-least-32-bytes"),
        201
    );
    assert_eq!(
        create_account(api, "from-the-environment-at-least-32-bytes"),
        401
    );
    assert!(!data.join("admin_token").exists());
    stop(child);
}

fn the_environment_alone_serves(dir: &Path, log: &Path) {
    let data = dir.join("data-env");
    let port = free_port();
    let child = spawn(
        &data,
        log,
        port,
        &[],
        Some("from-the-environment-at-least-32-bytes"),
    );
    let api = Client { port };
    ready(api);
    assert_eq!(
        create_account(api, "from-the-environment-at-least-32-bytes"),
        201
    );
    stop(child);
}

fn an_empty_token_file_is_refused(dir: &Path) {
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").expect("empty file");
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let out = Command::new(EXCHANGE)
        .args([
            "serve",
            "--admin-token-file",
            empty.to_str().expect("utf-8"),
        ])
        .arg("--data-dir")
        .arg(dir.join("data-empty"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{}", free_port()))
        .env_remove("EXCHANGE_ADMIN_TOKEN")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("admin token file") && stderr.contains("empty"),
        "{stderr}"
    );
}
