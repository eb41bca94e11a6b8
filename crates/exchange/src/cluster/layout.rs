//! Where a local cluster's nodes live: ports and data directories, saved
//! in `DIR/cluster.json` so that a restart puts every node back where its
//! peers expect it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};

pub(super) struct Layout {
    pub(super) nodes: u64,
    /// Nodes that founded the cluster; later ones joined it.
    pub(super) initial: u64,
    pub(super) port_base: u16,
    pub(super) removed: Vec<u64>,
}

impl Layout {
    pub(super) fn http(&self, id: u64) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port_base + id as u16))
    }
    pub(super) fn raft(&self, id: u64) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port_base + 100 + id as u16))
    }
    pub(super) fn save(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join("cluster.json"),
            serde_json::to_string_pretty(&json!({
                "nodes": self.nodes,
                "initial": self.initial,
                "port_base": self.port_base,
                "removed": self.removed,
            }))?,
        )?;
        Ok(())
    }
    pub(super) fn members(&self) -> impl Iterator<Item = u64> + '_ {
        (1..=self.nodes).filter(|id| !self.removed.contains(id))
    }
    pub(super) fn peers(&self) -> String {
        self.members()
            .map(|id| format!("{id}={}", self.raft(id)))
            .collect::<Vec<_>>()
            .join(",")
    }
    pub(super) fn urls(&self) -> String {
        self.members()
            .map(|id| format!("{id}=http://{}", self.http(id)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The layout `up` saved in `DIR/cluster.json`, if there is one.
pub(super) fn saved_layout(dir: &Path) -> anyhow::Result<Option<Layout>> {
    let path = dir.join("cluster.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    let bad = |what: &str| anyhow!("{}: no valid {what}", path.display());
    let saved: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let nodes = saved["nodes"].as_u64().ok_or_else(|| bad("nodes"))?;
    let port_base = saved["port_base"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .ok_or_else(|| bad("port_base"))?;
    let initial = saved["initial"].as_u64().unwrap_or(nodes);
    let removed = saved["removed"]
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    Ok(Some(Layout {
        nodes,
        initial,
        port_base,
        removed,
    }))
}

/// The layout of the cluster in `dir`, for the commands that need one.
pub(super) fn existing_layout(dir: &Path) -> anyhow::Result<Layout> {
    saved_layout(dir)?.ok_or_else(|| {
        anyhow!(
            "{} is not a cluster directory (no cluster.json; `exchange cluster up` makes one)",
            dir.display()
        )
    })
}

/// The layout of an existing cluster wins over the flags: a restarted node
/// must come back where its peers expect it.
pub(super) fn layout(dir: &Path, nodes: u64, port_base: u16) -> anyhow::Result<Layout> {
    if let Some(layout) = saved_layout(dir)? {
        return Ok(layout);
    }
    if !(1..=99).contains(&nodes) {
        bail!("--nodes must be 1 to 99");
    }
    if u32::from(port_base) + 100 + nodes as u32 > u32::from(u16::MAX) {
        bail!("--port-base too high for {nodes} nodes");
    }
    let layout = Layout {
        nodes,
        initial: nodes,
        port_base,
        removed: Vec::new(),
    };
    layout.save(dir)?;
    Ok(layout)
}

pub(super) fn node_dir(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("node-{id}"))
}
