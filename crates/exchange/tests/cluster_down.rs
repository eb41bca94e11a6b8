//! `exchange cluster down` returns only once every node's process has
//! exited, removes the pid files then, and never signals a process that
//! merely reuses a recorded pid.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `exchange` to completion, killing it (and failing) after `limit`.
fn exchange(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_exchange"))
        .args(args)
        .env("EXCHANGE_ADMIN_TOKEN", "cluster-down-test-token")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run exchange");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("poll exchange").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "exchange {args:?} still running after {limit:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect output")
}

fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Whether the process exists and is not a zombie (nodes outlive `up`, so
/// whoever adopts them reaps them, possibly late).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    exists && !zombie
}

fn pid_of(dir: &Path, node: u64) -> Option<i32> {
    std::fs::read_to_string(dir.join(format!("node-{node}/pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// SIGKILLs the given pids when dropped, should the test fail midway.
struct Reaper(Vec<i32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if alive(pid) {
                // SAFETY: SIGKILL to a node this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

fn ports_free(base: u16, nodes: u16) -> bool {
    (1..=nodes)
        .flat_map(|n| [base + n, base + 100 + n])
        .all(|port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
}

#[test]
fn down_returns_once_every_node_has_exited() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("cluster");
    let dir_arg = dir.display().to_string();
    let seed = u64::from(std::process::id())
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
    let base = (0..20u64)
        .map(|i| 20_000 + ((seed.wrapping_mul(7907) + i * 1_009) % 30_000) as u16)
        .find(|&b| ports_free(b, 3))
        .expect("free ports");
    let mut reaper = Reaper(Vec::new());
    let up = exchange(
        &[
            "cluster",
            "up",
            "--nodes",
            "3",
            "--data-dir",
            &dir_arg,
            "--port-base",
            &base.to_string(),
        ],
        Duration::from_secs(120),
    );
    reaper.0 = (1..=3).filter_map(|n| pid_of(&dir, n)).collect();
    ok(&up, "cluster up");
    assert_eq!(reaper.0.len(), 3, "pid files after up");
    for &pid in &reaper.0 {
        assert!(alive(pid), "node pid {pid} after up");
    }

    let stdout = ok(
        &exchange(
            &["cluster", "down", "--data-dir", &dir_arg],
            Duration::from_secs(60),
        ),
        "cluster down",
    );
    let still: Vec<i32> = reaper.0.iter().copied().filter(|&p| alive(p)).collect();
    assert!(still.is_empty(), "alive right after down: {still:?}");
    for node in 1..=3 {
        assert!(
            !dir.join(format!("node-{node}/pid")).exists(),
            "node {node}'s pid file is left"
        );
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("node {node}: stopped (pid "))),
            "no summary for node {node}: {stdout}"
        );
    }
    assert_eq!(stdout.lines().count(), 3, "one line per node: {stdout}");

    let again = ok(
        &exchange(
            &["cluster", "down", "--data-dir", &dir_arg],
            Duration::from_secs(10),
        ),
        "cluster down again",
    );
    assert_eq!(
        again
            .lines()
            .filter(|l| l.ends_with(": not running"))
            .count(),
        3,
        "{again}"
    );
}

#[test]
fn down_leaves_a_process_that_reuses_a_node_pid_alone() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    std::fs::write(
        dir.join("cluster.json"),
        r#"{"nodes": 1, "initial": 1, "port_base": 7100, "removed": []}"#,
    )
    .expect("cluster.json");
    std::fs::create_dir(dir.join("node-1")).expect("node dir");
    // A live process that is not the node, under the node's recorded pid.
    let mut other: Child = Command::new("sleep").arg("30").spawn().expect("sleep");
    let pid = other.id();
    std::fs::write(dir.join("node-1/pid"), pid.to_string()).expect("pid file");
    let out = exchange(
        &["cluster", "down", "--data-dir", &dir.display().to_string()],
        Duration::from_secs(10),
    );
    let survived = other.try_wait().expect("poll sleep").is_none();
    let _ = other.kill();
    let _ = other.wait();
    let stdout = ok(&out, "cluster down");
    assert!(survived, "cluster down signalled another process: {stdout}");
    assert!(
        stdout.contains(&format!(
            "node 1: not running (stale pid file for pid {pid} removed)"
        )),
        "{stdout}"
    );
    assert!(!dir.join("node-1/pid").exists(), "stale pid file kept");
}
