//! The server side of `bench e2e`: starting `exchange serve` as a child
//! process, the few admin and operations calls the bench makes (one
//! short-lived HTTP/1.1 connection each), and the server's CPU time by
//! thread, read from `/proc`.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `exchange serve` in a temporary directory, stopped (SIGTERM) on drop.
pub struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts this very binary's `serve` on a free port. Rate limits are
    /// off: they are a per-key policy, and the bench measures capacity with
    /// a handful of keys; so are the per-address connection limits, since
    /// every client connects from loopback. Durability is not touched: every acknowledged
    /// command is fsync'd as in production.
    pub fn start(dir: &Path, admin_token: &str, reporting: bool) -> anyhow::Result<ServerProcess> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "rate_limit_per_sec = 0\nrate_limit_burst = 1000000\n\
                 [reporting]\nenabled = {reporting}\n\
                 [http]\nmax_connections = 65536\nmax_connections_per_ip = 65536\n"
            ),
        )?;
        let child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--config")
            .arg(&config)
            .env("EXCHANGE_ADMIN_TOKEN", admin_token)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting `exchange serve`")?;
        Ok(ServerProcess { child, addr })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        if sent != 0 {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// One request over a fresh connection: the status and the body.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> anyhow::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         {auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").context("an HTTP response")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("an HTTP status")?;
    Ok((status, body.to_owned()))
}

async fn http_json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let (status, text) = http(addr, method, path, Some(token), body).await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// How many Raft voters the server counts (its `/admin/replication`); one
/// where it does not say.
pub async fn voters(addr: SocketAddr, token: &str) -> usize {
    match http_json(addr, "GET", "/admin/replication", token, None).await {
        Ok((200, status)) => status["voters"].as_array().map_or(1, Vec::len),
        _ => 1,
    }
}

/// Waits until the server answers `/ready`.
pub async fn wait_ready(addr: SocketAddr, timeout: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if let Ok((200, _)) = http(addr, "GET", "/ready", None, None).await {
            return Ok(());
        }
        if started.elapsed() > timeout {
            bail!("the server at {addr} did not become ready within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An API credential of a funded account.
#[derive(Clone)]
pub struct Credential {
    pub key: String,
    pub secret: String,
}

/// Creates an account and deposits `assets` into it.
pub async fn funded_account(
    addr: SocketAddr,
    token: &str,
    assets: &[(&str, &str)],
) -> anyhow::Result<Credential> {
    let (status, account) = http_json(addr, "POST", "/admin/accounts", token, None).await?;
    if status != 201 {
        bail!("creating an account: {status} {account}");
    }
    for (asset, amount) in assets {
        let body = json!({ "account_id": account["account_id"], "asset": asset, "amount": amount });
        let (status, reply) =
            http_json(addr, "POST", "/admin/deposits", token, Some(&body)).await?;
        if status != 200 {
            bail!("depositing {asset}: {status} {reply}");
        }
    }
    let text = |field: &str| account[field].as_str().unwrap_or_default().to_owned();
    Ok(Credential {
        key: text("api_key"),
        secret: text("api_secret"),
    })
}

/// The sequencer's counters from `/metrics` that explain a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerCounters {
    pub commands: f64,
    pub batches: f64,
    pub fsync_seconds: f64,
    /// Fsyncs that took more than 1 ms, and more than 5 ms.
    pub fsyncs_over_1ms: f64,
    pub fsyncs_over_5ms: f64,
    pub overloaded: f64,
    /// Log entries the reporting store wrote, and how far behind the core
    /// it was when read (a gauge: `since` keeps the later reading);
    /// `None` for a server without a store.
    pub reported: Option<ReportingCounters>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReportingCounters {
    pub entries: f64,
    pub lag: f64,
    /// The same lag in log time (`exchange_reporting_lag_seconds`);
    /// `None` from a server that does not publish it.
    pub lag_seconds: Option<f64>,
}

impl ServerCounters {
    pub fn since(&self, before: &ServerCounters) -> ServerCounters {
        ServerCounters {
            commands: self.commands - before.commands,
            batches: self.batches - before.batches,
            fsync_seconds: self.fsync_seconds - before.fsync_seconds,
            fsyncs_over_1ms: self.fsyncs_over_1ms - before.fsyncs_over_1ms,
            fsyncs_over_5ms: self.fsyncs_over_5ms - before.fsyncs_over_5ms,
            overloaded: self.overloaded - before.overloaded,
            reported: self.reported.map(|now| ReportingCounters {
                entries: now.entries - before.reported.map_or(0.0, |b| b.entries),
                ..now
            }),
        }
    }
}

/// `/metrics` asks for the admin token unless the server opened it.
pub async fn counters(addr: SocketAddr, token: &str) -> anyhow::Result<ServerCounters> {
    let (status, text) = http(addr, "GET", "/metrics", Some(token), None).await?;
    if status != 200 {
        bail!("GET /metrics: {status}");
    }
    Ok(parse_counters(&text))
}

/// The counters from Prometheus text; a missing one reads 0.
fn parse_counters(text: &str) -> ServerCounters {
    let present = |name: &str| {
        text.lines().find_map(|line| {
            line.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<f64>()
                .ok()
        })
    };
    let value = |name: &str| present(name).unwrap_or(0.0);
    let fsyncs = value("exchange_fsync_seconds_count");
    ServerCounters {
        commands: value("exchange_commands_total"),
        batches: value("exchange_batches_total"),
        fsync_seconds: value("exchange_fsync_seconds_sum"),
        fsyncs_over_1ms: fsyncs - value("exchange_fsync_seconds_bucket{le=\"0.001\"}"),
        fsyncs_over_5ms: fsyncs - value("exchange_fsync_seconds_bucket{le=\"0.005\"}"),
        overloaded: value("exchange_overloaded_total"),
        reported: present("exchange_reporting_lag_entries").map(|lag| ReportingCounters {
            entries: value("exchange_reporting_entries_total"),
            lag,
            lag_seconds: present("exchange_reporting_lag_seconds"),
        }),
    }
}

/// Whether `path` is on tmpfs, where the journal's fsync costs nothing.
pub fn on_tmpfs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const TMPFS_MAGIC: libc::c_long = 0x0102_1994;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes only into the zeroed struct we own, and reads a
    // NUL-terminated path that outlives the call.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    let found = unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } == 0;
    found && stat.f_type as libc::c_long == TMPFS_MAGIC
}

/// CPU seconds (user + system) by thread name, for a process's threads;
/// threads of the same name (tokio's workers) are added up.
pub fn cpu_by_thread(pid: u32) -> BTreeMap<String, f64> {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ...`: the name may hold spaces, so split at
        // the last parenthesis; utime and stime are fields 14 and 15.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let time = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        *out.entry(name).or_insert(0.0) += (time(11) + time(12)) / ticks;
    }
    out
}

/// The machine's CPU time so far, from `/proc/stat`: (all, stolen) in
/// clock ticks. Stolen time is what the hypervisor gave this virtual
/// machine's CPUs to others while they had work: it lengthens every
/// latency measured here, whatever the exchange does.
pub fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is
    // already in user).
    let all = fields.iter().take(8).sum();
    Some((all, fields.get(7).copied().unwrap_or(0)))
}

/// Share of the machine's CPU time stolen between two readings of
/// [`machine_ticks`].
pub fn steal_share(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((all0, steal0), (all1, steal1)) = before.zip(after)?;
    let all = all1.checked_sub(all0).filter(|&t| t > 0)?;
    Some(steal1.saturating_sub(steal0) as f64 / all as f64)
}

/// What each thread spent between two readings.
pub fn cpu_delta(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(name, t)| (name.clone(), t - before.get(name).copied().unwrap_or(0.0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_a_share_of_the_ticks_between_readings() {
        assert_eq!(
            steal_share(Some((1_000, 10)), Some((1_400, 110))),
            Some(0.25)
        );
        assert_eq!(steal_share(Some((1_000, 10)), Some((1_000, 10))), None);
        assert_eq!(steal_share(None, Some((1_000, 10))), None);
        let now = machine_ticks().expect("/proc/stat on Linux");
        assert!(now.0 >= now.1, "{now:?}");
    }

    #[test]
    fn reads_the_sequencer_counters() {
        let text = "# HELP exchange_commands_total x\nexchange_commands_total 1200\n\
            exchange_batches_total 40\n\
            exchange_fsync_seconds_bucket{le=\"0.0005\"} 20\n\
            exchange_fsync_seconds_bucket{le=\"0.001\"} 30\n\
            exchange_fsync_seconds_bucket{le=\"0.005\"} 38\nexchange_fsync_seconds_sum 0.02\n\
            exchange_fsync_seconds_count 40\n";
        let c = parse_counters(text);
        assert_eq!(
            (c.commands, c.batches, c.fsync_seconds, c.overloaded),
            (1200.0, 40.0, 0.02, 0.0)
        );
        assert_eq!((c.fsyncs_over_1ms, c.fsyncs_over_5ms), (10.0, 2.0));
        assert_eq!(c.reported, None, "no store, no store figures");
        let later = ServerCounters {
            commands: 1500.0,
            ..c
        };
        assert_eq!(later.since(&c).commands, 300.0);
        let with_store = |entries: f64, lag: f64| {
            parse_counters(&format!(
                "{text}exchange_reporting_entries_total {entries}\n\
                 exchange_reporting_lag_entries {lag}\n\
                 exchange_reporting_lag_seconds {}\n",
                lag / 1_000.0
            ))
        };
        let (first, second) = (with_store(1_000.0, 50.0), with_store(1_900.0, 400.0));
        assert_eq!(
            second.since(&first).reported,
            Some(ReportingCounters {
                entries: 900.0,
                lag: 400.0,
                lag_seconds: Some(0.4),
            })
        );
    }

    #[test]
    fn tells_tmpfs_from_a_disk() {
        // /dev/shm is tmpfs on every Linux this runs on; /proc never is.
        if Path::new("/dev/shm").is_dir() {
            assert!(on_tmpfs(Path::new("/dev/shm")));
        }
        assert!(!on_tmpfs(Path::new("/proc")));
        assert!(!on_tmpfs(Path::new("/no/such/path")));
    }

    #[test]
    fn own_threads_have_cpu_time() {
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(100) {
            std::hint::black_box(spin.elapsed());
        }
        let threads = cpu_by_thread(std::process::id());
        assert!(!threads.is_empty());
        assert!(threads.values().sum::<f64>() > 0.0, "{threads:?}");
        let delta = cpu_delta(&BTreeMap::new(), &threads);
        assert_eq!(delta, threads);
    }
}
