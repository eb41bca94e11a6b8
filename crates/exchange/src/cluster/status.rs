//! `exchange cluster status`: every node and gateway with its role,
//! address, applied index, lag behind the cluster's commit index and
//! health.

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use serde_json::{json, Value};

use super::http::{http_get, parse_addr};
use super::layout::{existing_layout, Kind, Layout};

pub(super) fn node_status(url: &str, token: &str) -> anyhow::Result<Value> {
    let (code, body) = http_get(
        parse_addr(url)?,
        "/admin/replication?state_hash=true",
        Some(token),
    )
    .with_context(|| format!("asking {url} for its replication status"))?;
    if code != 200 {
        bail!("{url}: HTTP {code}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body)?)
}

/// The cluster as the node at `url` and every peer it names see it:
/// `{"leader", "term", "commit_index", "nodes": [{"id", "role",
/// "applied_index", "lag", "state_hash", ...}]}`.
/// Every member the first node knows of, with its HTTP address: empty
/// for a voter whose address it was not told.
fn member_urls(first: &Value, first_id: u64, url: &str) -> Vec<(u64, String)> {
    let mut urls: Vec<(u64, String)> = first["urls"]
        .as_object()
        .map(|urls| {
            urls.iter()
                .filter_map(|(id, u)| Some((id.parse().ok()?, u.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    if !urls.iter().any(|(id, _)| *id == first_id) {
        urls.push((first_id, url.to_string()));
    }
    for voter in first["voters"].as_array().into_iter().flatten() {
        if let Some(id) = voter.as_u64() {
            if !urls.iter().any(|(known, _)| *known == id) {
                urls.push((id, String::new()));
            }
        }
    }
    urls
}

/// One node's row of the cluster status, its lag counted against `commit`.
fn node_row(id: u64, node_url: &str, answer: &anyhow::Result<Value>, commit: u64) -> Value {
    match answer {
        Ok(a) => {
            let applied = a["applied_index"].as_u64().unwrap_or(0);
            json!({
                "id": id,
                "url": node_url,
                "role": a["role"],
                "term": a["term"],
                "applied_index": applied,
                "commit_index": a["commit_index"],
                "lag": commit.saturating_sub(applied),
                "state_hash": a["state_hash"],
                // `nospace` while the node waits for disk space.
                "alarms": a["alarms"],
            })
        }
        Err(error) => json!({
            "id": id,
            "url": node_url,
            "role": "unreachable",
            "error": error.to_string(),
        }),
    }
}

pub fn status(url: &str, token: &str) -> anyhow::Result<Value> {
    let first = node_status(url, token)?;
    let first_id = first["id"].as_u64().unwrap_or(0);
    let mut urls = member_urls(&first, first_id, url);
    urls.sort();
    let mut seen = Vec::new();
    for (id, node_url) in &urls {
        let answer = if *id == first_id {
            Ok(first.clone())
        } else if node_url.is_empty() {
            Err(anyhow!("no HTTP address known (serve --peer-urls)"))
        } else {
            node_status(node_url, token)
        };
        seen.push((*id, node_url.clone(), answer));
    }
    // The leader with the highest term that anyone reports as leading.
    let leader = seen
        .iter()
        .filter_map(|(_, _, a)| a.as_ref().ok())
        .filter(|a| a["role"] == "leader")
        .max_by_key(|a| a["term"].as_u64().unwrap_or(0));
    let term = seen
        .iter()
        .filter_map(|(_, _, a)| a.as_ref().ok()?["term"].as_u64())
        .max()
        .unwrap_or(0);
    let commit = leader
        .and_then(|l| l["commit_index"].as_u64())
        .or_else(|| {
            seen.iter()
                .filter_map(|(_, _, a)| a.as_ref().ok()?["commit_index"].as_u64())
                .max()
        })
        .unwrap_or(0);
    let nodes: Vec<Value> = seen
        .iter()
        .map(|(id, node_url, answer)| node_row(*id, node_url, answer, commit))
        .collect();
    Ok(json!({
        "leader": leader.map(|l| l["id"].clone()).unwrap_or(Value::Null),
        "term": term,
        "commit_index": commit,
        "nodes": nodes,
    }))
}

pub(super) fn replication(addr: std::net::SocketAddr, token: &str) -> anyhow::Result<Value> {
    let (code, body) = http_get(addr, "/admin/replication", Some(token))?;
    if code != 200 {
        bail!("HTTP {code}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body)?)
}

/// One gateway's row of the status: its role, what it follows, how far it
/// is behind the cluster's commit index, and whether it is ready.
fn gateway_row(
    url: &str,
    kind: Option<Kind>,
    commit: u64,
    token: &str,
    layout: Option<&Layout>,
) -> Value {
    let addr = parse_addr(url);
    let ready = addr
        .as_ref()
        .is_ok_and(|&addr| matches!(http_get(addr, "/ready", None), Ok((200, _))));
    let answer = addr.and_then(|addr| replication(addr, token));
    match answer {
        Ok(a) => {
            let applied = a["applied_index"].as_u64().unwrap_or(0);
            let node = a["following"]
                .as_str()
                .and_then(|addr| layout?.node_of_stream(addr));
            json!({
                "url": url,
                "role": a["role"],
                "following": a["following"],
                "following_node": node,
                "leader": a["leader"],
                "applied_index": applied,
                "lag": commit.saturating_sub(applied),
                "ready": ready,
            })
        }
        Err(error) => json!({
            "url": url,
            "role": kind.map_or("unreachable", Kind::as_str),
            "ready": false,
            "error": error.to_string(),
        }),
    }
}

/// `exchange cluster status`: the nodes as any node reached sees them,
/// and the gateways of the venue in `dir` (from its `cluster.json`) and at
/// `extra` URLs. A replica does not know the gateways in front of it, so
/// with `--url` alone none are listed.
pub(super) fn with_gateways(
    url: Option<&str>,
    dir: Option<&Path>,
    extra: &[String],
) -> anyhow::Result<Value> {
    let layout = dir.map(existing_layout).transpose()?;
    let token = super::admin_token(dir)?;
    let mut status = match (url, &layout, dir) {
        (Some(url), _, _) => status(url, &token)?,
        (None, Some(layout), Some(dir)) => layout
            .members()
            .find_map(|id| status(&format!("http://{}", layout.http(id)), &token).ok())
            .ok_or_else(|| anyhow!("no node of the cluster in {} answers", dir.display()))?,
        _ => bail!("give --url (any node) or --data-dir (a local cluster)"),
    };
    let commit = status["commit_index"].as_u64().unwrap_or(0);
    let mut targets: Vec<(String, Option<Kind>)> = layout
        .iter()
        .flat_map(|layout| {
            layout.gateway_processes().into_iter().map(|(kind, n)| {
                (
                    format!("http://{}", layout.gateway_http(kind, n)),
                    Some(kind),
                )
            })
        })
        .collect();
    targets.extend(extra.iter().map(|url| (url.clone(), None)));
    status["gateways"] = targets
        .iter()
        .map(|(url, kind)| gateway_row(url, *kind, commit, &token, layout.as_ref()))
        .collect();
    Ok(status)
}
