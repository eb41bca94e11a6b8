use super::*;

#[test]
fn nodes_reporters_roam_unless_the_config_names_cpus() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write config");
        path
    };
    assert!(reporters_roam(None).expect("no config"));
    let silent = config("silent.toml", "rate_limit_per_sec = 0\n");
    assert!(reporters_roam(Some(&silent)).expect("parses"));
    let named = config("named.toml", "[reporting]\ncpus = \"1\"\n");
    assert!(!reporters_roam(Some(&named)).expect("parses"));
    let bad = config("bad.toml", "[reporting]\ncpus = \"x\"\n");
    assert!(reporters_roam(Some(&bad)).is_err());
}

/// `sleep 30`, with SIGTERM ignored if `deaf`, in its own process group.
fn sleeper(deaf: bool) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new("sleep");
    command.arg("30").process_group(0);
    if deaf {
        // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    command.spawn().expect("start sleep")
}

const QUICK: (Duration, Duration) = (Duration::from_millis(300), Duration::from_secs(5));

#[test]
fn a_process_that_exits_on_sigterm_is_not_killed() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = sleeper(false);
    let outcome = stop(&[child.id()], alive, QUICK);
    assert!(
        matches!(outcome[..], [Stopped::Exited(after)] if after < QUICK.0),
        "{outcome:?}"
    );
    assert!(!alive(child.id()));
    let status = child.wait().expect("reap");
    assert_eq!(status.signal(), Some(libc::SIGTERM));
}

#[test]
fn a_process_that_ignores_sigterm_is_killed() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = sleeper(true);
    let started = Instant::now();
    let outcome = stop(&[child.id()], alive, QUICK);
    assert_eq!(outcome, [Stopped::Killed]);
    assert!(started.elapsed() >= QUICK.0);
    assert!(!alive(child.id()));
    let status = child.wait().expect("reap");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn a_process_that_is_not_ours_is_left_alone() {
    let mut child = sleeper(false);
    stop(&[child.id()], |_| false, QUICK);
    let running = alive(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert!(running, "a process that is not ours was signalled");
}

#[test]
fn serves_knows_a_node_by_its_data_directory() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    for node in ["node-1", "node-2"] {
        std::fs::create_dir(tmp.path().join(node)).expect("node dir");
    }
    // A shell whose arguments read like a node's, the data directory
    // relative to its working directory. The `; :` keeps the shell from
    // replacing itself with sleep.
    let shell = Command::new("sh")
        .args(["-c", "sleep 30; :", "sh", "serve", "--data-dir", "node-1"])
        .current_dir(tmp.path())
        .process_group(0)
        .spawn()
        .expect("start sh");
    let pid = shell.id();
    // The kernel lets the parent go on before it has set the new
    // program's arguments: until then /proc shows an empty command line.
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.is_empty())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (ours, other) = (
        serves(pid, &tmp.path().join("node-1")),
        serves(pid, &tmp.path().join("node-2")),
    );
    let sleeping = sleeper(false);
    let not_a_node = serves(sleeping.id(), &tmp.path().join("node-1"));
    for mut child in [shell, sleeping] {
        // SAFETY: SIGKILL to the process group of a child of this test.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
    }
    assert!(ours, "pid {pid} serves node-1");
    assert!(!other, "pid {pid} does not serve node-2");
    assert!(!not_a_node, "sleep is not a node");
    assert!(!serves(pid, &tmp.path().join("node-1")), "an exited pid");
}
