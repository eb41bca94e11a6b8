//! `exchange cluster down` returns only once every node's process has
//! exited, removes the pid files then, and never signals a process that
//! merely reuses a recorded pid.

use std::process::{Child, Command};
use std::time::Duration;

use exchange_testkit::{assert_success, cluster_port_base, node_pid, process_alive, run_within};

/// The binary under test.
const EXCHANGE: &str = env!("CARGO_BIN_EXE_exchange");

/// SIGKILLs the given pids when dropped, should the test fail midway.
struct Reaper(Vec<i32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if process_alive(pid) {
                // SAFETY: SIGKILL to a node this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

#[test]
fn down_returns_once_every_node_has_exited() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("cluster");
    let dir_arg = dir.display().to_string();
    let base = cluster_port_base(3);
    let mut reaper = Reaper(Vec::new());
    let up = run_within(
        EXCHANGE,
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
    reaper.0 = (1..=3).filter_map(|n| node_pid(&dir, n)).collect();
    assert_success(&up, "cluster up");
    assert_eq!(reaper.0.len(), 3, "pid files after up");
    for &pid in &reaper.0 {
        assert!(process_alive(pid), "node pid {pid} after up");
    }

    let stdout = assert_success(
        &run_within(
            EXCHANGE,
            &["cluster", "down", "--data-dir", &dir_arg],
            Duration::from_secs(60),
        ),
        "cluster down",
    );
    let still: Vec<i32> = reaper
        .0
        .iter()
        .copied()
        .filter(|&p| process_alive(p))
        .collect();
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

    let again = assert_success(
        &run_within(
            EXCHANGE,
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
    let out = run_within(
        EXCHANGE,
        &["cluster", "down", "--data-dir", &dir.display().to_string()],
        Duration::from_secs(10),
    );
    let survived = other.try_wait().expect("poll sleep").is_none();
    let _ = other.kill();
    let _ = other.wait();
    let stdout = assert_success(&out, "cluster down");
    assert!(survived, "cluster down signalled another process: {stdout}");
    assert!(
        stdout.contains(&format!(
            "node 1: not running (stale pid file for pid {pid} removed)"
        )),
        "{stdout}"
    );
    assert!(!dir.join("node-1/pid").exists(), "stale pid file kept");
}
