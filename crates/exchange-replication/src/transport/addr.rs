//! Addresses of other processes as their configuration gives them,
//! `HOST:PORT`, resolved at each connection attempt rather than once.
//!
//! A name may not resolve yet when a process starts (a Kubernetes pod's
//! name exists only once the pod does) and may later resolve to another
//! address (a restarted pod comes back at a new IP). Keeping the text and
//! resolving per attempt makes both an ordinary failed connection, tried
//! again with the caller's backoff. An IP literal is parsed once and
//! never looked up.
//!
//! The syntax is checked when the configuration is read: a host name of
//! dot-separated labels, an IPv4 address, or an IPv6 address in brackets,
//! then `:PORT`.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest host name DNS carries.
const MAX_NAME: usize = 253;
/// Longest label of a host name.
const MAX_LABEL: usize = 63;

/// Why a `HOST:PORT` text is not an address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    #[error("{0:?} is not HOST:PORT: the port is missing")]
    NoPort(String),
    #[error("{0:?}: the port is not a number from 0 to 65535")]
    BadPort(String),
    #[error("{0:?}: the host is empty")]
    NoHost(String),
    #[error("{0:?}: an IPv6 address goes in brackets, [ADDRESS]:PORT")]
    UnbracketedIpv6(String),
    #[error("{0:?}: what is in brackets is not an IPv6 address")]
    BadIpv6(String),
    #[error(
        "{0:?}: the host is neither an IP address nor a host name (labels of letters, \
         digits, '-' and '_', 1 to 63 long, separated by dots, the last not all digits)"
    )]
    BadHost(String),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

/// A validated `HOST:PORT`: a host name, resolved at each use, or an IP
/// address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerAddr {
    host: Host,
    port: u16,
}

impl PeerAddr {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address itself when the host is an IP literal.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match &self.host {
            Host::Ip(ip) => Some(SocketAddr::new(*ip, self.port)),
            Host::Name(_) => None,
        }
    }

    /// The host name, when it is one.
    pub fn name(&self) -> Option<&str> {
        match &self.host {
            Host::Ip(_) => None,
            Host::Name(name) => Some(name),
        }
    }

    /// The addresses to try, in order: the literal itself, or what the
    /// resolver answers for the name now. A name without any address is
    /// an error like any other lookup failure.
    pub fn resolve(&self, resolver: &dyn Resolve) -> io::Result<Vec<SocketAddr>> {
        match &self.host {
            Host::Ip(ip) => Ok(vec![SocketAddr::new(*ip, self.port)]),
            Host::Name(name) => {
                let found = resolver.resolve(name, self.port)?;
                if found.is_empty() {
                    return Err(io::Error::new(io::ErrorKind::NotFound, "no address"));
                }
                Ok(found)
            }
        }
    }

    /// Where a process given this as its own address listens: the IP
    /// literal itself, the loopback for `localhost`, and for any other
    /// name every interface at the port (the name may not resolve yet,
    /// and a listener cannot follow it when it changes), IPv6 and IPv4
    /// first, IPv4 only where the host has no IPv6.
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        match &self.host {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, self.port)],
            Host::Name(name) if name.eq_ignore_ascii_case("localhost") => {
                vec![SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))]
            }
            Host::Name(_) => vec![
                SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port)),
                SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.port)),
            ],
        }
    }
}

impl From<SocketAddr> for PeerAddr {
    fn from(addr: SocketAddr) -> PeerAddr {
        PeerAddr {
            host: Host::Ip(addr.ip()),
            port: addr.port(),
        }
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}:{}", self.port),
            Host::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

impl FromStr for PeerAddr {
    type Err = AddrError;

    fn from_str(text: &str) -> Result<PeerAddr, AddrError> {
        let text = text.trim();
        let owned = || text.to_string();
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| AddrError::NoPort(owned()))?;
        if port.is_empty() {
            return Err(AddrError::NoPort(owned()));
        }
        // `u16::from_str` takes a leading '+', which no address has.
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AddrError::BadPort(owned()));
        }
        let port: u16 = port.parse().map_err(|_| AddrError::BadPort(owned()))?;
        let host = if let Some(inner) = host.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| AddrError::BadIpv6(owned()))?;
            Host::Ip(IpAddr::V6(
                inner.parse().map_err(|_| AddrError::BadIpv6(owned()))?,
            ))
        } else if host.is_empty() {
            return Err(AddrError::NoHost(owned()));
        } else if host.contains(':') {
            return Err(AddrError::UnbracketedIpv6(owned()));
        } else if let Ok(ip) = host.parse::<Ipv4Addr>() {
            Host::Ip(IpAddr::V4(ip))
        } else if is_host_name(host) {
            Host::Name(host.to_ascii_lowercase())
        } else {
            return Err(AddrError::BadHost(owned()));
        };
        Ok(PeerAddr { host, port })
    }
}

/// Whether `host` is a name a resolver may be asked for. The last label
/// is never all digits: the C resolver reads such a "name" (`10.1`,
/// `1.2.3.400`) as a short or broken IPv4 address.
fn is_host_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() || host.len() > MAX_NAME {
        return false;
    }
    let label_ok = |label: &str| {
        (1..=MAX_LABEL).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let last_numeric = host
        .rsplit('.')
        .next()
        .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()));
    host.split('.').all(label_ok) && !last_numeric
}

/// Turns a host name into addresses. The system's resolver in service; a
/// test gives its own to make a name appear or move.
pub trait Resolve: Send + Sync + fmt::Debug {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The operating system's resolver (`/etc/hosts`, DNS: `getaddrinfo`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

/// Why a connection attempt failed before any byte was exchanged.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    #[error("{addr} does not resolve: {source}")]
    Unresolved { addr: PeerAddr, source: io::Error },
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: PeerAddr, source: io::Error },
}

/// What the last lookup of a name answered: addresses (sorted, so that a
/// resolver that rotates them is no change) or an error's text.
type Answer = Result<Vec<SocketAddr>, String>;

/// Connects to one [`PeerAddr`], resolving it at every attempt. What the
/// name resolves to is logged when it changes, not at every attempt:
/// a peer that does not exist yet is retried quietly.
#[derive(Debug)]
pub struct Dialer {
    addr: PeerAddr,
    resolver: Arc<dyn Resolve>,
    last: Mutex<Option<Answer>>,
}

impl Dialer {
    pub fn new(addr: PeerAddr, resolver: Arc<dyn Resolve>) -> Dialer {
        Dialer {
            addr,
            resolver,
            last: Mutex::new(None),
        }
    }

    /// A dialer through the system's resolver.
    pub fn system(addr: PeerAddr) -> Dialer {
        Dialer::new(addr, Arc::new(SystemResolver))
    }

    pub fn addr(&self) -> &PeerAddr {
        &self.addr
    }

    /// Resolves the address now and connects to the first of its
    /// addresses that accepts within `timeout`.
    pub fn connect(&self, timeout: Duration) -> Result<TcpStream, DialError> {
        let found = match self.addr.resolve(&*self.resolver) {
            Ok(found) => found,
            Err(source) => {
                let _ = self.note(Err(source.to_string()));
                return Err(DialError::Unresolved {
                    addr: self.addr.clone(),
                    source,
                });
            }
        };
        let mut sorted = found.clone();
        sorted.sort_unstable();
        let _ = self.note(Ok(sorted));
        let mut failure = None;
        for at in found {
            match TcpStream::connect_timeout(&at, timeout) {
                Ok(stream) => return Ok(stream),
                Err(error) => failure = Some(error),
            }
        }
        Err(DialError::Connect {
            addr: self.addr.clone(),
            source: failure.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        })
    }

    /// Logs the answer if it differs from the last one; true if it did.
    fn note(&self, answer: Answer) -> bool {
        if self.addr.name().is_none() {
            return false;
        }
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        if last.as_ref() == Some(&answer) {
            return false;
        }
        match &answer {
            Ok(found) => tracing::info!(peer = %self.addr, resolved = ?found, "peer resolved"),
            Err(error) => tracing::warn!(
                peer = %self.addr, %error,
                "peer does not resolve (yet): retrying"
            ),
        }
        *last = Some(answer);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers what the test set last.
    #[derive(Debug, Default)]
    struct Script(Mutex<Vec<SocketAddr>>);

    impl Resolve for Script {
        fn resolve(&self, _host: &str, _port: u16) -> io::Result<Vec<SocketAddr>> {
            Ok(self.0.lock().map(|found| found.clone()).unwrap_or_default())
        }
    }

    fn at(port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, port))
    }

    #[test]
    fn a_name_is_logged_when_its_answer_changes_not_at_every_attempt() {
        let dialer = Dialer::system("replica-2.replica:7000".parse().expect("name"));
        let failed = || Err("no such name".to_string());
        assert!(dialer.note(failed()), "the first failure");
        assert!(!dialer.note(failed()), "the same failure again");
        assert!(dialer.note(Ok(vec![at(1), at(2)])), "it resolves");
        assert!(!dialer.note(Ok(vec![at(1), at(2)])), "the same addresses");
        assert!(dialer.note(Ok(vec![at(3)])), "it moved");
        assert!(dialer.note(failed()), "it stopped resolving");
        let literal = Dialer::system("10.0.0.1:7000".parse().expect("literal"));
        assert!(
            !literal.note(Ok(vec![at(1)])),
            "a literal is never looked up"
        );
    }

    #[test]
    fn a_dialer_tries_the_answers_in_order_and_notes_them_as_a_set() {
        let script = Arc::new(Script::default());
        let dialer = Dialer::new(
            "replica-2.replica:7000".parse().expect("name"),
            script.clone(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let open = listener.local_addr().expect("addr");
        // Unsorted: a resolver that rotates its answers gives them so.
        *script.0.lock().expect("script") = vec![open, at(1)];
        let stream = dialer.connect(Duration::from_secs(2)).expect("connect");
        assert_eq!(stream.peer_addr().expect("peer"), open);
        assert!(!dialer.note(Ok(vec![at(1), open])), "the same set");
        // A name without any address is one that does not resolve.
        script.0.lock().expect("script").clear();
        let unresolved = dialer.connect(Duration::from_millis(200));
        assert!(
            matches!(unresolved, Err(DialError::Unresolved { .. })),
            "{unresolved:?}"
        );
    }
}
