//! This crate's part of the configuration file: the top-level keys that
//! guard the REST and WebSocket API (rate limits, body size, the receive
//! window) and the `[http]` section: how the listener guards its
//! connections (timeouts, connection limits, keepalive, pings), TLS, and
//! who may read `/metrics` and `/openapi.json`. Every field is documented
//! in docs/server.md; the reasons in docs/security.md.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use exchange_node::limits::{MAX_HTTP_CONNECTIONS, MAX_RECV_WINDOW_MS};

/// The gateway's settings: top-level keys of the file, and `[http]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Sustained requests per second per API key.
    pub rate_limit_per_sec: u32,
    /// Burst allowance per API key.
    pub rate_limit_burst: u32,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How old (milliseconds) a signed request's timestamp may be; at
    /// most [`MAX_RECV_WINDOW_MS`].
    pub recv_window_ms: u64,
    /// The REST and WebSocket listener's connections, TLS and `/metrics`.
    pub http: HttpConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            rate_limit_per_sec: 2_000,
            rate_limit_burst: 4_000,
            max_body_bytes: 16 * 1024,
            recv_window_ms: 5_000,
            http: HttpConfig::default(),
        }
    }
}

impl GatewayConfig {
    /// The top-level keys of the file this crate owns.
    pub const KEYS: [&'static str; 5] = [
        "rate_limit_per_sec",
        "rate_limit_burst",
        "max_body_bytes",
        "recv_window_ms",
        "http",
    ];

    /// Refuses values no gateway should run with, naming the field (the
    /// `[http]` section has its own check, [`HttpConfig::check`]).
    pub fn check(&self) -> Result<(), String> {
        if self.recv_window_ms == 0 || self.recv_window_ms > MAX_RECV_WINDOW_MS {
            return Err(format!(
                "recv_window_ms must be between 1 and {MAX_RECV_WINDOW_MS} (is {})",
                self.recv_window_ms
            ));
        }
        Ok(())
    }
}

/// A setting of `[http]` the server cannot run with.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HttpConfigError {
    #[error("[http] {0} must be greater than 0")]
    Zero(&'static str),
    #[error("[http] max_connections must be at most {MAX_HTTP_CONNECTIONS}, not {0}")]
    TooManyConnections(usize),
    #[error("[http] max_connections_per_ip ({per_ip}) exceeds max_connections ({total})")]
    PerIpAboveTotal { per_ip: usize, total: usize },
    #[error(
        "[http] idle_timeout_ms ({idle}) must exceed ws_ping_interval_ms + ws_pong_timeout_ms \
             ({ping}): live WebSockets would be cut"
    )]
    IdleBelowPing { idle: u64, ping: u64 },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// A request's head (request line and headers) must arrive whole
    /// within this long of the connection starting to wait for it; this
    /// also ends a kept-alive connection that sends no next request.
    pub header_timeout_ms: u64,
    /// A request's body must arrive whole within this long of its head.
    pub body_timeout_ms: u64,
    /// A connection on which no byte moves either way for this long is
    /// closed (a response nobody reads, a WebSocket that went silent).
    pub idle_timeout_ms: u64,
    /// Open connections at most; more are closed as soon as accepted.
    pub max_connections: usize,
    /// Open connections from one IP address at most.
    pub max_connections_per_ip: usize,
    /// TCP keepalive probes start after this much silence (0: off).
    pub tcp_keepalive_secs: u64,
    /// The server pings every WebSocket this often.
    pub ws_ping_interval_ms: u64,
    /// A WebSocket whose pong does not come back within this long of a
    /// ping is closed (and its cancel-on-disconnect fires).
    pub ws_pong_timeout_ms: u64,
    /// Serve HTTPS and WSS with this certificate; absent: plain TCP.
    pub tls: Option<TlsConfig>,
    /// Whether `/metrics` and `/openapi.json` on `listen` need the admin
    /// token (`Authorization: Bearer`).
    pub metrics_auth: bool,
    /// A second listener serving only `/metrics`, `/openapi.json` and
    /// `/health`, without the token: bind it where only the scraper reaches.
    pub metrics_bind: Option<SocketAddr>,
}

/// PEM files for TLS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The certificate chain, leaf first.
    pub cert_path: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key_path: PathBuf,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            idle_timeout_ms: 120_000,
            max_connections: 4_096,
            max_connections_per_ip: 256,
            tcp_keepalive_secs: 30,
            ws_ping_interval_ms: 20_000,
            ws_pong_timeout_ms: 20_000,
            tls: None,
            metrics_auth: true,
            metrics_bind: None,
        }
    }
}

impl HttpConfig {
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms)
    }
    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms)
    }
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }
    pub fn ws_ping_interval(&self) -> Duration {
        Duration::from_millis(self.ws_ping_interval_ms)
    }
    pub fn ws_pong_timeout(&self) -> Duration {
        Duration::from_millis(self.ws_pong_timeout_ms)
    }
    /// `None` when keepalive is off.
    pub fn tcp_keepalive(&self) -> Option<Duration> {
        (self.tcp_keepalive_secs > 0).then(|| Duration::from_secs(self.tcp_keepalive_secs))
    }

    /// Refuses settings that would leave a connection unguarded or cut
    /// healthy ones.
    pub fn check(&self) -> Result<(), HttpConfigError> {
        for (name, value) in [
            ("header_timeout_ms", self.header_timeout_ms),
            ("body_timeout_ms", self.body_timeout_ms),
            ("idle_timeout_ms", self.idle_timeout_ms),
            ("ws_ping_interval_ms", self.ws_ping_interval_ms),
            ("ws_pong_timeout_ms", self.ws_pong_timeout_ms),
        ] {
            if value == 0 {
                return Err(HttpConfigError::Zero(name));
            }
        }
        if self.max_connections == 0 {
            return Err(HttpConfigError::Zero("max_connections"));
        }
        if self.max_connections_per_ip == 0 {
            return Err(HttpConfigError::Zero("max_connections_per_ip"));
        }
        if self.max_connections > MAX_HTTP_CONNECTIONS {
            return Err(HttpConfigError::TooManyConnections(self.max_connections));
        }
        if self.max_connections_per_ip > self.max_connections {
            return Err(HttpConfigError::PerIpAboveTotal {
                per_ip: self.max_connections_per_ip,
                total: self.max_connections,
            });
        }
        let ping = self
            .ws_ping_interval_ms
            .saturating_add(self.ws_pong_timeout_ms);
        if self.idle_timeout_ms <= ping {
            return Err(HttpConfigError::IdleBelowPing {
                idle: self.idle_timeout_ms,
                ping,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_pass_the_check() {
        assert_eq!(HttpConfig::default().check(), Ok(()));
        assert_eq!(GatewayConfig::default().check(), Ok(()));
    }

    #[test]
    fn recv_window_is_bounded() {
        let parse = |text: &str| toml::from_str::<GatewayConfig>(text).unwrap();
        assert_eq!(parse("recv_window_ms = 60000\n").check(), Ok(()));
        for bad in ["recv_window_ms = 0\n", "recv_window_ms = 60001\n"] {
            let error = parse(bad).check().unwrap_err();
            assert!(
                error.contains("recv_window_ms must be between 1 and 60000"),
                "{error}"
            );
        }
        let parsed = parse("rate_limit_per_sec = 1\n[http]\nmetrics_auth = false\n");
        assert_eq!(parsed.rate_limit_per_sec, 1);
        assert_eq!(parsed.rate_limit_burst, 4_000);
        assert!(!parsed.http.metrics_auth);
        assert!(toml::from_str::<GatewayConfig>("[http]\nmetrics = 1\n").is_err());
    }

    #[test]
    fn unguarded_or_contradictory_settings_are_refused() {
        let zero = HttpConfig {
            header_timeout_ms: 0,
            ..HttpConfig::default()
        };
        assert_eq!(
            zero.check(),
            Err(HttpConfigError::Zero("header_timeout_ms"))
        );
        let huge = HttpConfig {
            max_connections: MAX_HTTP_CONNECTIONS + 1,
            ..HttpConfig::default()
        };
        assert!(matches!(
            huge.check(),
            Err(HttpConfigError::TooManyConnections(_))
        ));
        let per_ip = HttpConfig {
            max_connections: 10,
            max_connections_per_ip: 11,
            ..HttpConfig::default()
        };
        assert!(matches!(
            per_ip.check(),
            Err(HttpConfigError::PerIpAboveTotal { .. })
        ));
        let idle = HttpConfig {
            idle_timeout_ms: 1_000,
            ..HttpConfig::default()
        };
        assert!(matches!(
            idle.check(),
            Err(HttpConfigError::IdleBelowPing { .. })
        ));
    }

    #[test]
    fn the_section_parses_with_tls() {
        let text = concat!(
            "header_timeout_ms = 500\nmetrics_bind = \"127.0.0.1:9100\"\n",
            "[tls]\ncert_path = \"c.pem\"\nkey_path = \"k.pem\"\n",
        );
        let parsed: HttpConfig = toml::from_str(text).unwrap();
        assert_eq!(parsed.header_timeout(), Duration::from_millis(500));
        assert_eq!(parsed.tls.unwrap().key_path, PathBuf::from("k.pem"));
        assert!(parsed.metrics_auth);
        assert!(toml::from_str::<HttpConfig>("header_timeout = 5\n").is_err());
    }
}
