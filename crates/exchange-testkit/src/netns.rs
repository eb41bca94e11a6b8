//! Network namespaces for a venue whose every process has an address of
//! its own: one namespace per process, each joined by a veth pair to a
//! bridge in a hub namespace of its own (so the host's firewall, which
//! may drop bridged traffic, never sees theirs), and one more pair that
//! gives the test, in the host's namespace, an address on that bridge.
//! Needs root and `ip`; [`Netns::create`] says why when it cannot.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};

/// The namespaces of one venue; removed when dropped.
pub struct Netns {
    tag: String,
    subnet: [u8; 3],
    hosts: usize,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

impl Netns {
    /// `hosts` namespaces on a fresh /24 subnet, or why they cannot be
    /// made here (not root, no `ip`, no namespaces in this container).
    pub fn create(hosts: usize) -> Result<Netns, String> {
        let pid = std::process::id();
        // Interface names have at most 15 bytes; the subnet is one of
        // 10.201-250.x.0/24, which a test host's routes rarely use.
        let tag = format!("xv{}", pid % 100_000);
        let subnet = [10, 201 + (pid % 50) as u8, ((pid / 50) % 250) as u8];
        let net = Netns { tag, subnet, hosts };
        net.hub()?;
        for host in 0..hosts {
            net.join(host)?;
        }
        net.join_test()?;
        Ok(net)
    }

    fn name(&self, host: usize) -> String {
        format!("{}-{host}", self.tag)
    }

    fn hub_name(&self) -> String {
        format!("{}-hub", self.tag)
    }

    /// Host `host`'s address (the test has `.1`).
    pub fn addr(&self, host: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 2 + host as u8)
    }

    fn cidr(&self, last: u8) -> String {
        let [a, b, c] = self.subnet;
        format!("{a}.{b}.{c}.{last}/24")
    }

    fn hub(&self) -> Result<(), String> {
        let hub = self.hub_name();
        ip(&["netns", "add", &hub])?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])
    }

    /// A veth pair from the hub's bridge into namespace `inside` (None:
    /// the host's), named `name` on the bridge's side.
    fn wire(&self, name: &str, inside: Option<&str>, last: u8) -> Result<(), String> {
        let hub = self.hub_name();
        let peer = format!("{name}p");
        ip(&["link", "add", name, "type", "veth", "peer", "name", &peer])?;
        ip(&["link", "set", name, "netns", &hub])?;
        ip(&["-n", &hub, "link", "set", name, "master", "br0"])?;
        ip(&["-n", &hub, "link", "set", name, "up"])?;
        let cidr = self.cidr(last);
        match inside {
            Some(ns) => {
                ip(&["link", "set", &peer, "netns", ns])?;
                ip(&["-n", ns, "addr", "add", &cidr, "dev", &peer])?;
                ip(&["-n", ns, "link", "set", &peer, "up"])?;
                ip(&["-n", ns, "link", "set", "lo", "up"])
            }
            None => {
                ip(&["addr", "add", &cidr, "dev", &peer])?;
                ip(&["link", "set", &peer, "up"])
            }
        }
    }

    fn join(&self, host: usize) -> Result<(), String> {
        let ns = self.name(host);
        ip(&["netns", "add", &ns])?;
        self.wire(&format!("{}h{host}", self.tag), Some(&ns), 2 + host as u8)
    }

    fn join_test(&self) -> Result<(), String> {
        self.wire(&format!("{}t", self.tag), None, 1)
    }

    /// A command running `bin` in host `host`'s namespace. `ip netns
    /// exec` replaces itself with `bin`: killing the child kills it.
    pub fn command(&self, host: usize, bin: &Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name(host)]).arg(bin);
        command
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends in it, and with them
        // their peers.
        for host in 0..self.hosts {
            let _ = ip(&["netns", "del", &self.name(host)]);
        }
        let _ = ip(&["netns", "del", &self.hub_name()]);
        let _ = ip(&["link", "del", &format!("{}tp", self.tag)]);
    }
}
