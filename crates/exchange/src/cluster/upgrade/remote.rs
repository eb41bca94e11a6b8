//! The upgrade of any venue the command can reach over HTTP: its replicas
//! and gateways named with their URLs, and a command that replaces one
//! process by name (for the compose venue, `docker-compose up -d
//! --no-deps NAME` with the new image: docs/deploy.md, "Containers").

use anyhow::{anyhow, bail, Context};

use super::{replication, run, Fleet, Member, Pace};

/// What `cluster upgrade` is told of a venue it did not start.
pub(in super::super) struct RemoteVenue {
    /// `NAME=URL` of every replica.
    pub(in super::super) nodes: Vec<String>,
    /// `NAME=URL` of every gateway and market-data gateway, in the order
    /// they are replaced.
    pub(in super::super) gateways: Vec<String>,
    /// Run by `sh -c` with `{name}` replaced by the process's name: stops
    /// it and starts the new version; must exit 0.
    pub(in super::super) replace: String,
    pub(in super::super) token: String,
}

struct RemoteFleet {
    /// id, name, URL.
    nodes: Vec<(u64, String, String)>,
    gateways: Vec<(String, String)>,
    replace: String,
    token: String,
}

fn name_and_url(item: &str) -> anyhow::Result<(String, String)> {
    let (name, url) = item
        .split_once('=')
        .ok_or_else(|| anyhow!("{item}: give NAME=URL"))?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(valid) {
        bail!("{item}: a name is letters, digits, '-' and '_' (it goes into a command)");
    }
    Ok((name.to_string(), url.to_string()))
}

pub(in super::super) fn upgrade_remote(venue: RemoteVenue, pace: &Pace) -> anyhow::Result<()> {
    if !venue.replace.contains("{name}") {
        bail!("--replace must name the process to replace with {{name}}");
    }
    let mut nodes = Vec::new();
    for item in &venue.nodes {
        let (name, url) = name_and_url(item)?;
        let status = replication(&url, &venue.token)
            .with_context(|| format!("not started: {name} does not answer"))?;
        let id = status["id"]
            .as_u64()
            .ok_or_else(|| anyhow!("not started: {name} at {url} is not a replica"))?;
        nodes.push((id, name, url));
    }
    let gateways = venue
        .gateways
        .iter()
        .map(|item| name_and_url(item))
        .collect::<anyhow::Result<_>>()?;
    let fleet = RemoteFleet {
        nodes,
        gateways,
        replace: venue.replace,
        token: venue.token,
    };
    run(&fleet, pace)
}

impl RemoteFleet {
    fn name(&self, member: &Member) -> Option<String> {
        match member {
            Member::Node(id) => self
                .nodes
                .iter()
                .find(|(n, _, _)| n == id)
                .map(|(_, name, _)| name.clone()),
            Member::Gateway(name) => Some(name.clone()),
        }
    }
}

impl Fleet for RemoteFleet {
    fn nodes(&self) -> Vec<(u64, String)> {
        self.nodes
            .iter()
            .map(|(id, _, url)| (*id, url.clone()))
            .collect()
    }

    fn gateways(&self) -> Vec<(String, String)> {
        self.gateways.clone()
    }

    fn token(&self) -> &str {
        &self.token
    }

    fn replace(&self, member: &Member) -> anyhow::Result<()> {
        let name = self
            .name(member)
            .ok_or_else(|| anyhow!("{member}: no name"))?;
        let command = self.replace.replace("{name}", &name);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(std::process::Stdio::null())
            .output()
            .with_context(|| format!("running {command}"))?;
        if !output.status.success() {
            bail!(
                "`{command}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    }

    fn still_running(&self, _: &Member) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_into_a_command_so_only_plain_ones_are_taken() {
        let (name, url) = name_and_url("replica-1=http://10.0.0.11:8080").expect("plain");
        assert_eq!(
            (name.as_str(), url.as_str()),
            ("replica-1", "http://10.0.0.11:8080")
        );
        for bad in [
            "http://x",
            "=http://x",
            "a;rm -rf /=http://x",
            "a b=http://x",
        ] {
            assert!(name_and_url(bad).is_err(), "{bad}");
        }
    }
}
