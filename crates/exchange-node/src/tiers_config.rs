//! The `[tiers]` section: what a replica serves to the gateways in front
//! of it, and where a gateway or market-data gateway finds the replicas
//! (docs/deploy.md).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use exchange_replication::transport::{AddrError, PeerAddr};
use serde::{Deserialize, Serialize};

use crate::mirror::{MirrorRole, MirrorSettings};
use crate::replication::{parse_peers, ClusterError};

/// What one process of a tiered venue is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tier {
    /// A Raft replica with the core (`exchange serve`); with no gateways
    /// in front, it serves clients itself.
    #[default]
    Replica,
    /// An order-entry gateway (`exchange gateway`).
    Gateway,
    /// A market-data gateway (`exchange md-gateway`).
    MarketData,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Replica => "replica",
            Tier::Gateway => "gateway",
            Tier::MarketData => "md-gateway",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TiersConfig {
    /// Replica: where order-entry gateways send commands (needs the
    /// cluster key). Unset: no gateway can send here.
    pub ingress_listen: Option<SocketAddr>,
    /// Replica: where gateways and market-data gateways follow the
    /// committed log (needs the cluster key).
    pub stream_listen: Option<SocketAddr>,
    /// Gateway: `"ID=HOST:PORT"`, every replica's ingress address (a
    /// name is resolved at each connection attempt).
    pub ingress: Vec<String>,
    /// Gateway and market-data gateway: replicas' log-stream addresses,
    /// `HOST:PORT`, tried in order (a name is resolved at each attempt).
    pub stream: Vec<String>,
    /// Gateway: its name; a restarted gateway of the same name replaces
    /// its previous session (whose late commands are refused as stale).
    pub name: String,
    /// Gateway: how long the cluster waits, after the gateway's last entry
    /// in the log, before it cancels the orders of the accounts its
    /// cancel-on-disconnect connections protect (the gateway died). The
    /// gateway writes a keep-alive entry every 500 ms it sends nothing
    /// else, so this must be well above that, and above a leader change.
    pub cancel_grace_ms: u64,
    /// This process's id in the cluster's channel handshakes (for their
    /// logs): distinct from the replicas' node ids.
    pub process_id: u64,
    /// Replica: serve clients (REST, WebSocket, the trading screen, FIX)
    /// as well as operators. False behind gateways: the replica's HTTP
    /// listener then answers `/health`, `/ready`, `/metrics`, `/admin` and
    /// `/ops` only, and it starts no FIX acceptor.
    pub clients: bool,
    /// How long, after SIGTERM, the process answers clients `503
    /// draining` (nothing applied) and reports not ready before it closes
    /// its listeners, so that clients and load balancers move to another
    /// gateway before it goes. Unset: 1000 ms on a gateway or market-data
    /// gateway, none on a replica.
    pub drain_ms: Option<u64>,
    /// What this process runs as; set by the command (`serve`, `gateway`,
    /// `md-gateway`), never by a file.
    #[serde(skip)]
    pub running_as: Tier,
}

impl Default for TiersConfig {
    fn default() -> Self {
        TiersConfig {
            ingress_listen: None,
            stream_listen: None,
            ingress: Vec::new(),
            stream: Vec::new(),
            name: "gateway".into(),
            cancel_grace_ms: 10_000,
            process_id: 1_000,
            clients: true,
            drain_ms: None,
            running_as: Tier::Replica,
        }
    }
}

impl TiersConfig {
    /// [`TiersConfig::drain_ms`], its default by what the process runs as.
    pub fn drain(&self) -> std::time::Duration {
        let default = match self.running_as {
            Tier::Replica => 0,
            Tier::Gateway | Tier::MarketData => 1_000,
        };
        std::time::Duration::from_millis(self.drain_ms.unwrap_or(default))
    }
}

/// A grace shorter than this would expire a live gateway's session between
/// two of its keep-alives (sent every 500 ms) as soon as one is late.
pub const MIN_CANCEL_GRACE_MS: u64 = 2_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TiersError {
    #[error(
        "`[tiers] cancel_grace_ms` is {0}: it must be at least {MIN_CANCEL_GRACE_MS} \
         (the gateway's keep-alives come every 500 ms)"
    )]
    GraceTooShort(u64),
    #[error("a {0} needs `[tiers] stream`: the replicas' log-stream addresses")]
    NoStream(&'static str),
    #[error("a gateway needs `[tiers] ingress`: every replica's ingress as ID=HOST:PORT")]
    NoIngress,
    #[error("`[tiers] stream` item {item:?}: {source}")]
    BadStream { item: String, source: AddrError },
    #[error("`[tiers] ingress`: {0}")]
    BadIngress(#[from] ClusterError),
    #[error("the {0} talks to the cluster: it needs the cluster key (`[cluster] key_file`)")]
    NoKey(&'static str),
}

/// Whether a process serves a request for `path` with `method`, by what
/// it runs as: a replica behind gateways serves operators only; a
/// market-data gateway serves reads only.
pub fn refusal(tiers: &TiersConfig, method: &str, path: &str) -> Option<TierRefusal> {
    let operator = path.starts_with("/admin")
        || path.starts_with("/ops")
        || path.starts_with("/ui/")
        || matches!(path, "/health" | "/ready" | "/metrics" | "/openapi.json");
    match tiers.running_as {
        Tier::Replica if !tiers.clients && !operator => Some(TierRefusal::ClientsAtGateways),
        Tier::MarketData if !operator && !matches!(method, "GET" | "HEAD") => {
            Some(TierRefusal::MarketDataOnly)
        }
        _ => None,
    }
}

/// Why a process does not serve a request (see [`refusal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierRefusal {
    ClientsAtGateways,
    MarketDataOnly,
}

impl TiersConfig {
    /// How a gateway or market-data gateway reaches the cluster.
    pub fn mirror(
        &self,
        tier: Tier,
        key: Option<exchange_replication::transport::ClusterKey>,
    ) -> Result<MirrorSettings, TiersError> {
        let key = key.ok_or(TiersError::NoKey(tier.as_str()))?;
        let stream = self
            .stream
            .iter()
            .map(|item| {
                item.parse::<PeerAddr>()
                    .map_err(|source| TiersError::BadStream {
                        item: item.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if stream.is_empty() {
            return Err(TiersError::NoStream(tier.as_str()));
        }
        if tier == Tier::Gateway && self.cancel_grace_ms < MIN_CANCEL_GRACE_MS {
            return Err(TiersError::GraceTooShort(self.cancel_grace_ms));
        }
        let role = match tier {
            Tier::Gateway => MirrorRole::Gateway {
                name: self.name.clone(),
                ingress: self.ingress_addrs()?,
                cancel_grace_ms: self.cancel_grace_ms,
            },
            _ => MirrorRole::MarketData,
        };
        Ok(MirrorSettings {
            process_id: self.process_id,
            role,
            stream,
            key,
        })
    }

    fn ingress_addrs(&self) -> Result<BTreeMap<u64, PeerAddr>, TiersError> {
        let ingress = parse_peers(&self.ingress)?;
        if ingress.is_empty() {
            return Err(TiersError::NoIngress);
        }
        Ok(ingress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tier_serves_its_own_routes() {
        let mut tiers = TiersConfig::default();
        assert_eq!(refusal(&tiers, "POST", "/v1/orders"), None);
        tiers.clients = false;
        assert_eq!(
            refusal(&tiers, "GET", "/v1/instruments"),
            Some(TierRefusal::ClientsAtGateways)
        );
        assert_eq!(
            refusal(&tiers, "GET", "/"),
            Some(TierRefusal::ClientsAtGateways)
        );
        assert_eq!(refusal(&tiers, "POST", "/admin/deposits"), None);
        assert_eq!(refusal(&tiers, "GET", "/ready"), None);
        tiers.running_as = Tier::MarketData;
        assert_eq!(refusal(&tiers, "GET", "/v1/markets/BTC-USD/book"), None);
        assert_eq!(
            refusal(&tiers, "POST", "/v1/orders"),
            Some(TierRefusal::MarketDataOnly)
        );
        tiers.running_as = Tier::Gateway;
        assert_eq!(refusal(&tiers, "POST", "/v1/orders"), None);
    }
    use exchange_replication::transport::ClusterKey;

    #[test]
    fn a_gateway_needs_the_replicas_and_the_key() {
        let key = Some(ClusterKey::from_bytes([7; 32]));
        let mut tiers = TiersConfig::default();
        assert_eq!(
            tiers.mirror(Tier::Gateway, None).err(),
            Some(TiersError::NoKey("gateway"))
        );
        assert_eq!(
            tiers.mirror(Tier::MarketData, key.clone()).err(),
            Some(TiersError::NoStream("md-gateway"))
        );
        tiers.stream = vec!["127.0.0.1:7201".into()];
        assert_eq!(
            tiers.mirror(Tier::Gateway, key.clone()).err(),
            Some(TiersError::NoIngress)
        );
        tiers.ingress = vec!["1=127.0.0.1:7101".into(), "2=127.0.0.1:7102".into()];
        tiers.cancel_grace_ms = MIN_CANCEL_GRACE_MS - 1;
        assert_eq!(
            tiers.mirror(Tier::Gateway, key.clone()).err(),
            Some(TiersError::GraceTooShort(MIN_CANCEL_GRACE_MS - 1))
        );
        tiers.cancel_grace_ms = MIN_CANCEL_GRACE_MS;
        let settings = tiers.mirror(Tier::Gateway, key.clone()).expect("valid");
        match settings.role {
            MirrorRole::Gateway {
                ingress,
                cancel_grace_ms,
                ..
            } => {
                assert_eq!(ingress.len(), 2);
                assert_eq!(cancel_grace_ms, MIN_CANCEL_GRACE_MS);
            }
            MirrorRole::MarketData => panic!("a gateway"),
        }
        tiers.stream = vec!["nowhere".into()];
        assert!(matches!(
            tiers.mirror(Tier::MarketData, key.clone()),
            Err(TiersError::BadStream {
                source: AddrError::NoPort(_),
                ..
            })
        ));
        // A name is kept for each connection to resolve, even one that
        // never will: a replica's may not exist yet.
        tiers.stream = vec![
            "replica-1.replica.invalid:7200".into(),
            " [::1]:7200".into(),
        ];
        let settings = tiers
            .mirror(Tier::MarketData, key)
            .expect("names are valid");
        let stream: Vec<String> = settings.stream.iter().map(ToString::to_string).collect();
        assert_eq!(stream, ["replica-1.replica.invalid:7200", "[::1]:7200"]);
    }
}
