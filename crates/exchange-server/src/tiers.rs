//! The parts of a tiered venue a process starts besides what `serve` always
//! starts: on a replica, the ingress and the log stream the gateways use;
//! on a gateway or market-data gateway, the mirror that replaces the
//! replica's recovered state.

use exchange_node::config::Config;
use exchange_node::ingress::IngressServer;
use exchange_node::recovery::RecoveryReport;
use exchange_node::replication::ClusterSettings;
use exchange_node::stream::StreamServer;
use exchange_node::tiers_config::{Tier, TiersError};
use exchange_node::{Handle, Pipeline};

use crate::ServerError;

/// A replica's services for gateways; dropping it stops them.
pub(crate) struct TierServers {
    _ingress: Option<IngressServer>,
    _stream: Option<StreamServer>,
}

/// Starts the ingress and the log stream `[tiers]` asks a replica for.
pub(crate) fn start_replica_services(
    config: &Config,
    cluster: &ClusterSettings,
    handle: &Handle,
) -> Result<TierServers, ServerError> {
    let tiers = &config.tiers;
    let wanted = tiers.ingress_listen.is_some() || tiers.stream_listen.is_some();
    let key = match (&cluster.key, wanted) {
        (_, false) => {
            return Ok(TierServers {
                _ingress: None,
                _stream: None,
            })
        }
        (Some(key), true) => key.clone(),
        (None, true) => return Err(ServerError::Tiers(TiersError::NoKey("replica"))),
    };
    let listen_error = |addr| move |source| ServerError::Listen { addr, source };
    let ingress = match tiers.ingress_listen {
        Some(addr) => {
            let server = IngressServer::start(addr, key.clone(), cluster.node_id, handle.clone())
                .map_err(listen_error(addr))?;
            eprintln!("ingress: gateways' commands on {}", server.local_addr());
            Some(server)
        }
        None => None,
    };
    let stream = match tiers.stream_listen {
        Some(addr) => {
            let server = StreamServer::start(
                addr,
                key,
                cluster.node_id,
                config.data_dir.clone(),
                handle.clone(),
            )
            .map_err(listen_error(addr))?;
            eprintln!("log stream: committed entries on {}", server.local_addr());
            Some(server)
        }
        None => None,
    };
    Ok(TierServers {
        _ingress: ingress,
        _stream: stream,
    })
}

/// A gateway's or market-data gateway's state: a mirror of the replicas'.
pub(crate) fn start_mirror(
    config: &Config,
    tier: Tier,
    pipeline_config: exchange_node::PipelineConfig,
) -> Result<(Pipeline, RecoveryReport), ServerError> {
    let key = match &config.cluster.key_file {
        Some(path) => Some(exchange_node::cluster_key::load(path)?),
        None => None,
    };
    let settings = config.tiers.mirror(tier, key)?;
    eprintln!(
        "{}: following the log of {:?}",
        tier.as_str(),
        settings.stream
    );
    Ok((
        Pipeline::start_mirror(settings, pipeline_config),
        RecoveryReport::default(),
    ))
}

/// An order-entry gateway given `[reporting] url` serves history reads
/// from that store, which an `exchange reporter` writes; without one it
/// serves none (`503 reporting_disabled`).
pub(crate) fn history_store(
    config: &Config,
    tier: Tier,
    handle: &Handle,
) -> Result<Option<exchange_reporter::Reporting>, ServerError> {
    let Some(url) = config
        .reporting
        .url
        .as_deref()
        .filter(|_| tier == Tier::Gateway)
    else {
        return Ok(None);
    };
    let target = exchange_reporting::Target::resolve(Some(url), &config.data_dir)?;
    let read_wait = std::time::Duration::from_millis(config.reporting.read_wait_ms);
    let reporting = exchange_reporter::Reporting::read_only(handle, target.clone(), read_wait)?;
    eprintln!(
        "history reads: from {}, written by the reporter",
        target.describe()
    );
    Ok(Some(reporting))
}

/// Marks a gateway ready once its mirror has applied what the replica it
/// follows had: before, it would call keys created a moment ago unknown.
pub(crate) async fn ready_when_caught_up(
    handle: Handle,
    ready: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    while !handle.settled() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    eprintln!("caught up with the log: ready");
    ready.store(true, std::sync::atomic::Ordering::Release);
}
