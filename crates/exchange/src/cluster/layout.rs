//! Where a local cluster's nodes, gateways and reporters live: ports and data
//! directories, saved in `DIR/cluster.json` so that a restart puts every
//! process back where the others expect it (the port plan is in the
//! module doc of `cluster`).

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
    /// Order-entry gateways (`exchange gateway`) in front of the nodes.
    pub(super) gateways: u64,
    /// Market-data gateways (`exchange md-gateway`).
    pub(super) md_gateways: u64,
    /// Reporters (`exchange reporter`): with any, the nodes keep no
    /// reporting store.
    pub(super) reporters: u64,
}

/// The highest node id, and of each kind of gateway the highest number,
/// that the port plan has room for (offsets of 100 apart).
pub(super) const MAX_PER_KIND: u64 = 99;

/// The kinds of process `up` starts in front of the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Gateway,
    MarketData,
    Reporter,
}

impl Kind {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Kind::Gateway => "gateway",
            Kind::MarketData => "md-gateway",
            Kind::Reporter => "reporter",
        }
    }
    /// Where its HTTP ports start above the port base.
    fn offset(self) -> u64 {
        match self {
            Kind::Gateway => 400,
            Kind::MarketData => 500,
            Kind::Reporter => 600,
        }
    }
    /// Its processes' ids in the cluster's handshakes: apart from the
    /// node ids (1 to 99) and from each other.
    pub(super) fn process_id(self, number: u64) -> u64 {
        match self {
            Kind::Gateway => 1_000 + number,
            Kind::MarketData => 2_000 + number,
            Kind::Reporter => 3_000 + number,
        }
    }
}

impl Layout {
    fn local(&self, offset: u64) -> SocketAddr {
        // `layout` checked that the plan's highest port fits in a u16.
        let port = u16::try_from(u64::from(self.port_base) + offset).unwrap_or(u16::MAX);
        SocketAddr::from(([127, 0, 0, 1], port))
    }
    pub(super) fn http(&self, id: u64) -> SocketAddr {
        self.local(id)
    }
    pub(super) fn raft(&self, id: u64) -> SocketAddr {
        self.local(100 + id)
    }
    /// Node `id`'s ingress, where order-entry gateways send commands.
    pub(super) fn ingress(&self, id: u64) -> SocketAddr {
        self.local(200 + id)
    }
    /// Node `id`'s log stream, where gateways follow the committed log.
    pub(super) fn stream(&self, id: u64) -> SocketAddr {
        self.local(300 + id)
    }
    /// Node `id`'s log stream as gateways are told of it: by name, as a
    /// deployment names its replicas, resolved at each connection.
    pub(super) fn stream_by_name(&self, id: u64) -> String {
        format!("localhost:{}", self.stream(id).port())
    }
    /// Node `id`'s ingress as gateways are told of it (see
    /// [`Layout::stream_by_name`]).
    pub(super) fn ingress_by_name(&self, id: u64) -> String {
        format!("localhost:{}", self.ingress(id).port())
    }
    /// The HTTP address of gateway `number` (from 1) of `kind`.
    pub(super) fn gateway_http(&self, kind: Kind, number: u64) -> SocketAddr {
        self.local(kind.offset() + number)
    }
    /// Whether the nodes serve gateways (an ingress and a log stream).
    pub(super) fn tiered(&self) -> bool {
        self.gateways + self.md_gateways + self.reporters > 0
    }
    /// Every process in front of the nodes: kind and number. Reporters
    /// first: the gateways read history from the first one's store.
    pub(super) fn gateway_processes(&self) -> Vec<(Kind, u64)> {
        let reporters = (1..=self.reporters).map(|n| (Kind::Reporter, n));
        let gateways = (1..=self.gateways).map(|n| (Kind::Gateway, n));
        let md = (1..=self.md_gateways).map(|n| (Kind::MarketData, n));
        reporters.chain(gateways).chain(md).collect()
    }
    /// The node whose log stream is at `addr` (by address or by name),
    /// if any.
    pub(super) fn node_of_stream(&self, addr: &str) -> Option<u64> {
        self.members()
            .find(|&id| self.stream(id).to_string() == addr || self.stream_by_name(id) == addr)
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
                "gateways": self.gateways,
                "md_gateways": self.md_gateways,
                "reporters": self.reporters,
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
    // Absent from a cluster.json written before gateways: none.
    let count = |what: &str| saved[what].as_u64().unwrap_or(0);
    Ok(Some(Layout {
        nodes,
        initial,
        port_base,
        removed,
        gateways: count("gateways"),
        md_gateways: count("md_gateways"),
        reporters: count("reporters"),
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
pub(super) fn layout(
    dir: &Path,
    nodes: u64,
    (gateways, md_gateways, reporters): (u64, u64, u64),
    port_base: u16,
) -> anyhow::Result<Layout> {
    if let Some(layout) = saved_layout(dir)? {
        return Ok(layout);
    }
    if !(1..=MAX_PER_KIND).contains(&nodes) {
        bail!("--nodes must be 1 to {MAX_PER_KIND}");
    }
    if [gateways, md_gateways, reporters]
        .iter()
        .any(|&n| n > MAX_PER_KIND)
    {
        bail!("--gateways, --md-gateways and --reporters must be 0 to {MAX_PER_KIND}");
    }
    let layout = Layout {
        nodes,
        initial: nodes,
        port_base,
        removed: Vec::new(),
        gateways,
        md_gateways,
        reporters,
    };
    if layout.top_port(nodes) > u64::from(u16::MAX) {
        bail!("--port-base too high: the ports of this layout go past 65535");
    }
    layout.save(dir)?;
    Ok(layout)
}

impl Layout {
    /// The highest port the plan uses with `nodes` nodes.
    pub(super) fn top_port(&self, nodes: u64) -> u64 {
        let base = u64::from(self.port_base);
        let mut top = base + 100 + nodes;
        if self.tiered() {
            top = top.max(base + 300 + nodes);
        }
        if self.gateways > 0 {
            top = top.max(base + Kind::Gateway.offset() + self.gateways);
        }
        if self.md_gateways > 0 {
            top = top.max(base + Kind::MarketData.offset() + self.md_gateways);
        }
        if self.reporters > 0 {
            top = top.max(base + Kind::Reporter.offset() + self.reporters);
        }
        top
    }
}

pub(super) fn node_dir(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("node-{id}"))
}

/// Gateway `number`'s data directory: `DIR/gateway-N`, `DIR/md-gateway-N`
/// or `DIR/reporter-N`.
pub(super) fn gateway_dir(dir: &Path, kind: Kind, number: u64) -> PathBuf {
    dir.join(format!("{}-{number}", kind.as_str()))
}
