//! The `[fix]` section of the configuration file: this crate's settings
//! (docs/fix.md, docs/server.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The top-level key of the file this crate owns.
pub const SECTION: &str = "fix";

/// The `[fix]` section. The gateway listens only when at least one session
/// is configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixConfig {
    /// FIX acceptor address.
    pub listen: SocketAddr,
    /// Largest difference between a message's SendingTime and server time.
    pub max_clock_skew_secs: u64,
    /// PEM certificate chain: with `tls_key`, the acceptor speaks TLS only;
    /// without both, plain TCP.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Milliseconds a new connection has for its TLS handshake and Logon
    /// together; a connection that has not logged on by then is closed.
    pub logon_timeout_ms: u64,
    /// Connections served before their Logon at a time, all sources
    /// together; more are closed at once.
    pub max_pending_logons: usize,
    /// Of those, from one source (an IPv4 address, or an IPv6 /64): one
    /// source cannot take the slots every other counterparty needs.
    pub max_pending_logons_per_source: usize,
    /// Application messages a logged-on session may send per second
    /// (token bucket); 0 turns the limit off.
    pub messages_per_sec: u32,
    /// Messages a session may send at once before the rate applies.
    pub message_burst: u32,
    pub sessions: Vec<FixSessionConfig>,
}

impl Default for FixConfig {
    fn default() -> Self {
        FixConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 9878)),
            max_clock_skew_secs: 120,
            tls_cert: None,
            tls_key: None,
            logon_timeout_ms: 2_000,
            max_pending_logons: exchange_node::limits::FIX_PENDING_LOGONS,
            max_pending_logons_per_source: 8,
            messages_per_sec: 2_000,
            message_burst: 4_000,
            sessions: Vec::new(),
        }
    }
}

/// One FIX session: order entry for `account`, or drop copy of
/// `drop_copy_accounts` (exactly one of the two).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixSessionConfig {
    /// The counterparty's SenderCompID (49).
    pub sender_comp_id: String,
    /// The exchange's CompID: the counterparty's TargetCompID (56).
    #[serde(default = "default_fix_comp_id")]
    pub target_comp_id: String,
    /// Password (554) the Logon must carry.
    pub password: String,
    #[serde(default)]
    pub account: Option<u64>,
    #[serde(default)]
    pub drop_copy_accounts: Vec<u64>,
    /// Cancel the account's open orders when the session disconnects.
    #[serde(default)]
    pub cancel_on_disconnect: bool,
}

fn default_fix_comp_id() -> String {
    "EXCHANGE".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section as it sits in the file.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sections {
        fix: FixConfig,
    }

    #[test]
    fn the_section_parses_with_its_defaults_and_refuses_typos() {
        let text = concat!(
            "[fix]\nmessages_per_sec = 10\n",
            "[[fix.sessions]]\nsender_comp_id = \"A\"\npassword = \"p\"\naccount = 7\n",
        );
        let parsed: Sections = toml::from_str(text).unwrap();
        assert_eq!(parsed.fix.messages_per_sec, 10);
        assert_eq!(parsed.fix.message_burst, FixConfig::default().message_burst);
        assert_eq!(parsed.fix.sessions[0].target_comp_id, "EXCHANGE");
        assert_eq!(parsed.fix.sessions[0].account, Some(7));
        assert!(!parsed.fix.sessions[0].cancel_on_disconnect);
        let typo = text.replace("account", "acount");
        let error = toml::from_str::<Sections>(&typo).unwrap_err().to_string();
        assert!(error.contains("unknown field `acount`"), "{error}");
    }
}
