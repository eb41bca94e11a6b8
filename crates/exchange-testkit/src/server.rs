//! `exchange serve` as a child process: started on a data directory and a
//! free port, waited for until ready, stopped by signal or killed, and the
//! files it leaves behind.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::http::{Client, ADMIN_TOKEN};
use crate::ports::free_port;
use crate::wait::DEADLINE;

/// A running `exchange serve`; killed (SIGKILL) when dropped, even when the
/// test panics.
pub struct Server {
    child: Option<Child>,
    pub api: Client,
    pub data_dir: PathBuf,
    log: PathBuf,
}

static STARTS: AtomicU32 = AtomicU32::new(0);

/// Why a start attempt failed.
enum StartFailure {
    Exited(ExitStatus),
    TimedOut,
}

impl Server {
    /// Starts `bin serve` on `data_dir` and waits for `/ready`.
    pub fn start(bin: impl AsRef<Path>, data_dir: &Path) -> Server {
        Server::start_with(bin, data_dir, None)
    }

    /// As [`Server::start`], with a TOML configuration file.
    pub fn start_with(bin: impl AsRef<Path>, data_dir: &Path, config: Option<&Path>) -> Server {
        Server::try_start(bin, data_dir, config).unwrap_or_else(|(status, stderr)| {
            panic!("server exited during start-up ({status}):\n{stderr}")
        })
    }

    /// `bin serve --demo`: the demo's market makers and takers trade on it.
    pub fn start_demo(bin: impl AsRef<Path>, data_dir: &Path) -> Server {
        Server::start_demo_with(bin, data_dir, None)
    }

    /// `bin serve --demo`, with a configuration file when given (the demo
    /// adds its equities to the instruments it lists).
    pub fn start_demo_with(
        bin: impl AsRef<Path>,
        data_dir: &Path,
        config: Option<&Path>,
    ) -> Server {
        Server::launch(bin.as_ref(), data_dir, config, &["--demo"]).unwrap_or_else(
            |(status, stderr)| {
                panic!("the demo server exited during start-up ({status}):\n{stderr}")
            },
        )
    }

    /// Starts the binary and waits for `/ready`; a process that exits
    /// instead gives its exit status and stderr.
    pub fn try_start(
        bin: impl AsRef<Path>,
        data_dir: &Path,
        config: Option<&Path>,
    ) -> Result<Server, (ExitStatus, String)> {
        Server::launch(bin.as_ref(), data_dir, config, &[])
    }

    fn launch(
        bin: &Path,
        data_dir: &Path,
        config: Option<&Path>,
        extra: &[&str],
    ) -> Result<Server, (ExitStatus, String)> {
        // Another process may take the free port before the server binds
        // it; only that case is retried.
        for _ in 0..3 {
            let mut server = Server::spawn(bin, data_dir, config, extra, free_port());
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(StartFailure::Exited(status)) if server.stderr().contains("in use") => {
                    eprintln!("port taken ({status}); retrying on another");
                }
                Err(StartFailure::Exited(status)) => return Err((status, server.stderr())),
                Err(StartFailure::TimedOut) => {
                    panic!(
                        "server neither ready nor exited in time:\n{}",
                        server.stderr()
                    )
                }
            }
        }
        panic!("could not find a free port for the server");
    }

    /// Starts the binary on a data directory it must refuse; returns its
    /// exit status and stderr.
    pub fn start_refused(bin: impl AsRef<Path>, data_dir: &Path) -> (ExitStatus, String) {
        match Server::try_start(bin, data_dir, None) {
            Ok(server) => panic!(
                "the server started on a directory it must refuse:\n{}",
                server.stderr()
            ),
            Err(refused) => refused,
        }
    }

    fn spawn(
        bin: &Path,
        data_dir: &Path,
        config: Option<&Path>,
        extra: &[&str],
        port: u16,
    ) -> Server {
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let log = PathBuf::from(format!("{}.start{n}.stderr", data_dir.display()));
        let stderr = std::fs::File::create(&log).expect("create the stderr log");
        let mut command = Command::new(bin);
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .env("EXCHANGE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        command.args(extra);
        let child = command.spawn().expect("spawn the exchange binary");
        Server {
            child: Some(child),
            api: Client { port },
            data_dir: data_dir.to_path_buf(),
            log,
        }
    }

    fn wait_ready(&mut self) -> Result<(), StartFailure> {
        let start = Instant::now();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(StartFailure::Exited(status));
            }
            // Our own process says where it listens before it turns ready;
            // without that line the answer came from whoever took the port.
            let listening = format!("listening on http://127.0.0.1:{}\n", self.api.port);
            if let Ok(ready) = self.api.try_request("GET", "/ready", &[], b"") {
                if ready.status == 200
                    && ready.text() == "ready"
                    && self.stderr().contains(&listening)
                {
                    return Ok(());
                }
            }
            if start.elapsed() > DEADLINE {
                return Err(StartFailure::TimedOut);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> i32 {
        let child = self.child.as_ref().expect("the server is running");
        i32::try_from(child.id()).expect("pid fits in pid_t")
    }

    /// SIGKILL: the process gets no chance to flush or snapshot anything.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `signal` and waits for the process to exit on its own.
    pub fn stop_with(&mut self, signal: i32) -> ExitStatus {
        let pid = self.pid();
        // SAFETY: kill(2) on our own child's pid, which it still is: the
        // child has not been waited for yet.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill({pid}, {signal})");
        let mut child = self.child.take().expect("the server is running");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                return status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "server ignored signal {signal}:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the process wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The `state hash` from the recovery line printed at start-up.
    pub fn recovery_hash(&self) -> String {
        let stderr = self.stderr();
        let line = stderr
            .lines()
            .find(|l| l.starts_with("recovery: ") && l.contains("state hash "))
            .unwrap_or_else(|| panic!("no recovery line on stderr:\n{stderr}"));
        let hash = line
            .rsplit("state hash ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        assert_eq!(hash.len(), 64, "a BLAKE3 hex hash in {line:?}");
        hash
    }

    /// The value after `label` in the recovery line (`replayed`, `applied index`).
    pub fn recovery_number(&self, label: &str) -> u64 {
        let stderr = self.stderr();
        let line = stderr
            .lines()
            .find(|l| l.contains("state hash "))
            .unwrap_or_default();
        let after = line
            .split(label)
            .nth(1)
            .unwrap_or_else(|| panic!("no {label:?} in {line:?}"));
        let digits: String = after
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("no number after {label:?} in {line:?}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `exchange serve` on `data_dir` at `port` with `args`, as a bare child
/// that is not waited for: for tests of how the server finds, makes or
/// refuses its admin token, which it gets from the environment only when
/// `token` gives one. Its stderr goes to `log`, its stdout beside it
/// (`log` with the extension `out`).
pub fn spawn_serve(
    bin: impl AsRef<Path>,
    data_dir: &Path,
    port: u16,
    args: &[&str],
    token: Option<&str>,
    log: &Path,
) -> Child {
    let mut command = Command::new(bin.as_ref());
    command
        .arg("serve")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .env_remove("EXCHANGE_ADMIN_TOKEN")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(log.with_extension("out")).expect("stdout log"))
        .stderr(std::fs::File::create(log).expect("stderr log"));
    if let Some(token) = token {
        command.env("EXCHANGE_ADMIN_TOKEN", token);
    }
    command.spawn().expect("spawn the exchange binary")
}

/// Copies a directory tree (the data directory of a stopped server).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// The journal's segment files in `dir`, oldest first.
pub fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the journal directory")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    all.sort();
    all
}

/// The highest-numbered (active) journal segment of a data directory.
pub fn last_segment(data_dir: &Path) -> PathBuf {
    segments(&data_dir.join("journal"))
        .pop()
        .expect("at least one journal segment")
}
