//! The upgrade of a local cluster (`exchange cluster up`): each process is
//! stopped with SIGTERM and started again from `--binary` with the same
//! arguments, in its data directory.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;

use super::super::layout::{existing_layout, gateway_dir, node_dir, Kind, Layout};
use super::super::process::{alive, running, serves, spawn, stop, Stopped, STOP_WAITS};
use super::super::tiers::{self, Secrets};
use super::{run, Fleet, Member, Pace};

struct LocalFleet {
    layout: Layout,
    dir: PathBuf,
    secrets: Secrets,
    exe: PathBuf,
    config: Option<PathBuf>,
    /// The processes this upgrade started, by member: its own unreaped
    /// children, so their pids cannot have been reused. (Their command
    /// line cannot tell: between fork and exec it is still this one's.)
    started: std::sync::Mutex<Vec<(Member, u32)>>,
}

pub(in super::super) fn upgrade_local(
    dir: &Path,
    binary: Option<&Path>,
    config: Option<&Path>,
    pace: &Pace,
) -> anyhow::Result<()> {
    let layout = existing_layout(dir)?;
    let secrets = Secrets {
        token: super::super::long_enough_admin_token(dir)?,
        master_key: super::super::master_key(dir)?,
        cluster_key: super::super::cluster_key_file(dir)?,
    };
    let exe = match binary {
        Some(path) => path
            .canonicalize()
            .with_context(|| format!("{}", path.display()))?,
        None => std::env::current_exe().context("locating the exchange binary")?,
    };
    let fleet = LocalFleet {
        layout,
        dir: dir.to_path_buf(),
        secrets,
        exe,
        config: config.map(Path::to_path_buf),
        started: std::sync::Mutex::new(Vec::new()),
    };
    fleet.every_process_runs()?;
    fleet.check_formats()?;
    run(&fleet, pace)
}

impl LocalFleet {
    fn gateway(&self, name: &str) -> Option<(Kind, u64)> {
        self.layout
            .gateway_processes()
            .into_iter()
            .find(|&(kind, number)| gateway_name(kind, number) == name)
    }

    fn data_dir(&self, member: &Member) -> Option<PathBuf> {
        match member {
            Member::Node(id) => Some(node_dir(&self.dir, *id)),
            Member::Gateway(name) => self
                .gateway(name)
                .map(|(kind, number)| gateway_dir(&self.dir, kind, number)),
        }
    }

    fn every_process_runs(&self) -> anyhow::Result<()> {
        for id in self.layout.members() {
            if running(&node_dir(&self.dir, id)).is_none() {
                bail!("not started: node {id} is not running (`exchange cluster up` restarts it)");
            }
        }
        for (kind, number) in self.layout.gateway_processes() {
            if running(&gateway_dir(&self.dir, kind, number)).is_none() {
                bail!("not started: {} is not running", gateway_name(kind, number));
            }
        }
        Ok(())
    }

    /// Refuses a binary whose formats differ from those of the binary the
    /// cluster runs, before anything is touched.
    fn check_formats(&self) -> anyhow::Result<()> {
        let Some(old) = self
            .layout
            .members()
            .find_map(|id| running(&node_dir(&self.dir, id)))
            .and_then(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).ok())
        else {
            return Ok(());
        };
        let (old_formats, new_formats) = (formats_of(&old)?, formats_of(&self.exe)?);
        if old_formats != new_formats {
            bail!(
                "not started: {} writes formats {new_formats} and the running cluster ({}) \
                 {old_formats}; a replica could not read another's log or snapshot \
                 (docs/deploy.md, rolling upgrades)",
                self.exe.display(),
                old.display()
            );
        }
        Ok(())
    }
}

fn gateway_name(kind: Kind, number: u64) -> String {
    format!("{} {number}", kind.as_str())
}

/// The formats a binary reads and writes, as `exchange version --formats`
/// prints them.
fn formats_of(binary: &Path) -> anyhow::Result<Value> {
    let output = std::process::Command::new(binary)
        .args(["version", "--formats"])
        .output()
        .with_context(|| format!("running {} version", binary.display()))?;
    if !output.status.success() {
        bail!("{} version: {}", binary.display(), output.status);
    }
    let all: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("reading what {} version printed", binary.display()))?;
    Ok(all["formats"].clone())
}

impl Fleet for LocalFleet {
    fn nodes(&self) -> Vec<(u64, String)> {
        self.layout
            .members()
            .map(|id| (id, format!("http://{}", self.layout.http(id))))
            .collect()
    }

    fn gateways(&self) -> Vec<(String, String)> {
        self.layout
            .gateway_processes()
            .into_iter()
            .map(|(kind, number)| {
                let url = format!("http://{}", self.layout.gateway_http(kind, number));
                (gateway_name(kind, number), url)
            })
            .collect()
    }

    fn token(&self) -> &str {
        &self.secrets.token
    }

    fn replace(&self, member: &Member) -> anyhow::Result<()> {
        let data = self
            .data_dir(member)
            .with_context(|| format!("{member}: not in this cluster"))?;
        stop_process(&data)?;
        let mut command = match member {
            Member::Node(id) => super::super::node_command(
                &self.exe,
                &self.layout,
                &data,
                *id,
                &self.secrets,
                self.config.as_deref(),
            )?,
            Member::Gateway(name) => {
                let gateway = self.gateway(name).context("no such gateway")?;
                let history = tiers::history_url(&self.layout, &self.dir, self.config.as_deref())?;
                tiers::command(
                    &self.exe,
                    &self.layout,
                    &self.dir,
                    gateway,
                    &self.secrets,
                    self.config.as_deref(),
                    history.as_deref(),
                )
            }
        };
        let pid = spawn(&mut command, &data).context("starting the new binary")?;
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((member.clone(), pid));
        Ok(())
    }

    fn still_running(&self, member: &Member) -> bool {
        let started = self
            .started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .rev()
            .find(|(m, _)| m == member)
            .map(|&(_, pid)| pid);
        match started {
            Some(pid) => alive(pid),
            None => self
                .data_dir(member)
                .is_some_and(|data| running(&data).is_some()),
        }
    }
}

/// Stops the process whose data directory is `data`, SIGTERM first.
fn stop_process(data: &Path) -> anyhow::Result<()> {
    let Some(pid) = running(data) else {
        bail!("not running any more");
    };
    let is_ours = |pid: u32| alive(pid) && serves(pid, data);
    match stop(&[pid], is_ours, STOP_WAITS).pop() {
        Some(Stopped::Exited(_) | Stopped::Killed) => Ok(()),
        _ => bail!("did not exit, even after SIGKILL (pid {pid})"),
    }
}
