//! A failing `exchange` command prints exactly one line, `error: ` and
//! the error with its causes, and exits with 1; never a backtrace, even
//! with `RUST_BACKTRACE=1`.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

fn exchange(args: &[&str], token: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_exchange"));
    command
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LIB_BACKTRACE", "1")
        .env_remove("EXCHANGE_ADMIN_TOKEN");
    if let Some(token) = token {
        command.env("EXCHANGE_ADMIN_TOKEN", token);
    }
    command.output().expect("run exchange")
}

/// The one line of stderr, after checking the exit code and the shape.
fn error_line(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: exit status; stderr: {stderr}"
    );
    assert!(
        !stderr.to_lowercase().contains("backtrace"),
        "{what}: a backtrace on stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: not one line: {stderr:?}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].len() > "error: ".len(),
        "{what}: {stderr:?}"
    );
    lines[0].to_string()
}

fn assert_names(line: &str, cause: &str) {
    assert!(line.contains(cause), "{line:?} does not name {cause:?}");
}

fn arg(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn a_missing_config_file_is_named_once() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = arg(&tmp.path().join("missing.toml"));
    let data = arg(&tmp.path().join("data"));
    let line = error_line(
        &exchange(&["serve", "--config", &config, "--data-dir", &data], None),
        "serve --config",
    );
    assert_names(&line, &config);
    // The config error quotes its I/O cause; the line must not repeat it.
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line:?}"
    );
}

#[test]
fn an_invalid_config_file_is_one_line() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = tmp.path().join("bad.toml");
    std::fs::write(&config, "listen = \n").expect("write config");
    let data = arg(&tmp.path().join("data"));
    let line = error_line(
        &exchange(
            &["serve", "--config", &arg(&config), "--data-dir", &data],
            None,
        ),
        "serve with a bad config",
    );
    assert_names(&line, &arg(&config));
    assert_names(&line, "line 1");
}

#[test]
fn a_data_directory_that_is_a_file_is_named() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "").expect("write file");
    let line = error_line(
        &exchange(
            &[
                "serve",
                "--data-dir",
                &arg(&file),
                "--listen",
                "127.0.0.1:0",
            ],
            None,
        ),
        "serve --data-dir FILE",
    );
    assert_names(&line, &format!("data directory {}", arg(&file)));
}

#[test]
fn a_bad_peer_list_is_named() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = arg(&tmp.path().join("data"));
    let line = error_line(
        &exchange(
            &[
                "serve",
                "--data-dir",
                &data,
                "--listen",
                "127.0.0.1:0",
                "--peers",
                "1=127.0.0.1:1,garbage",
            ],
            None,
        ),
        "serve --peers",
    );
    assert_names(&line, "\"garbage\"");
}

/// Secure by default: a node with peers and no cluster key would open a
/// Raft port anyone could speak to; it does not start.
#[test]
fn peers_without_a_cluster_key_are_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = arg(&tmp.path().join("data"));
    let line = error_line(
        &exchange(
            &[
                "serve",
                "--data-dir",
                &data,
                "--listen",
                "127.0.0.1:0",
                "--node-id",
                "1",
                "--peers",
                "1=127.0.0.1:1,2=127.0.0.1:2",
            ],
            None,
        ),
        "serve --peers, no key",
    );
    assert_names(&line, "needs the cluster key");
    assert_names(&line, "key_file");
    assert!(
        !tmp.path().join("data").join("journal").exists(),
        "it started before refusing"
    );
}

#[test]
fn a_missing_replay_file_is_named() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = arg(&tmp.path().join("commands.jsonl"));
    let line = error_line(&exchange(&["replay", &file], None), "replay");
    assert_names(&line, &file);
}

#[test]
fn a_report_without_a_store_names_the_directory() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data = arg(&tmp.path().join("nowhere"));
    let line = error_line(
        &exchange(&["report", "trades", "--data-dir", &data], None),
        "report",
    );
    assert_names(&line, &data);
}

#[test]
fn cluster_status_needs_the_admin_token() {
    let line = error_line(
        &exchange(&["cluster", "status", "--url", "http://127.0.0.1:1"], None),
        "cluster status without a token",
    );
    assert_names(&line, "EXCHANGE_ADMIN_TOKEN");
}

#[test]
fn cluster_status_names_the_unreachable_node() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let line = error_line(
        &exchange(&["cluster", "status", "--url", &url], Some("token")),
        "cluster status",
    );
    assert_names(&line, &url);
}

#[test]
fn cluster_down_outside_a_cluster_directory_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = arg(tmp.path());
    let line = error_line(
        &exchange(&["cluster", "down", "--data-dir", &dir], None),
        "cluster down",
    );
    assert_names(&line, &format!("{dir} is not a cluster directory"));
}

#[test]
fn usage_errors_stay_clap_s_with_exit_code_2() {
    let out = exchange(&["serve", "--listen", "nowhere"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--listen"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
}

#[test]
fn a_reporter_refuses_what_it_cannot_follow_or_would_overwrite() {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let tmp = tempfile::tempdir().expect("temp dir");
    let key = tmp.path().join("cluster_key");
    std::fs::write(&key, "ab".repeat(32)).expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("mode");
    let own = arg(&tmp.path().join("reporter"));
    let key_arg = arg(&key);
    let reporter = |data: &str, more: &[&str]| {
        let mut args = vec!["reporter", "--data-dir", data, "--listen", "127.0.0.1:0"];
        args.extend(more);
        exchange(&args, None)
    };
    let line = error_line(
        &reporter(&own, &["--cluster-key-file", &key_arg]),
        "no stream",
    );
    assert_names(&line, "--stream");
    let line = error_line(&reporter(&own, &["--stream", "127.0.0.1:1"]), "no key");
    assert_names(&line, "--cluster-key-file");
    // A replica's directory: its snapshots would be pruned as the reporter's.
    let replica = tmp.path().join("replica");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(replica.join("journal"))
        .expect("a replica's journal");
    let args = ["--stream", "127.0.0.1:1", "--cluster-key-file", &key_arg];
    let line = error_line(&reporter(&arg(&replica), &args), "a replica's directory");
    assert_names(&line, "a replica's data directory");
    assert!(
        !replica.join("snapshots").exists(),
        "it started before refusing"
    );
}
