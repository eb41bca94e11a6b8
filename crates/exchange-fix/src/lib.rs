//! FIX 4.4 gateway: order entry and drop copy for the exchange server.
//!
//! Layers, each usable and tested without the ones above it:
//! - [`frame`]: the byte stream cut into messages (BodyLength, CheckSum);
//! - [`message`] and [`spec`]: fields, and which messages carry which tags;
//! - [`session`]: the session layer as a pure state machine (logon,
//!   sequence numbers, resends, heartbeats, rejects, logout) over a
//!   [`store`] that keeps sequence numbers and sent messages on disk;
//! - [`inbound`], [`orders`], [`reports`], [`app`]: order entry to core
//!   commands, and the core's events to ExecutionReports;
//! - [`security_status`]: trading status requests and pushes (35=e/35=f);
//! - [`acceptor`] and [`runner`]: the tokio acceptor and one task per
//!   configured session, fed by the sequencer's broadcast of applied
//!   entries.
//! - [`continuity`]: what lets a counterparty continue its session at
//!   another process that serves FIX (its numbers in the replicated
//!   state, a takeover's plan).
//!
//! Sessions are configured in the server's `[fix]` section (docs/fix.md).
//! A session's task lives as long as the server, connected or not, so
//! execution reports produced while the counterparty is away are stored
//! under their sequence numbers and delivered by the resend that follows
//! its next logon.

pub mod acceptor;
pub mod admission;
pub mod app;
pub mod config;
pub mod continuity;
pub mod frame;
pub mod fuzzing;
pub mod inbound;
pub mod message;
pub mod orders;
pub mod place_ext;
pub mod reports;
pub mod runner;
pub mod security_status;
pub mod session;
pub mod spec;
pub mod store;
pub mod tags;
pub mod throttle;
pub mod time;
pub mod tls;

#[cfg(test)]
mod testkit;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use exchange_node::config::Config;
use exchange_node::limits::{MAX_FIX_LOGON_TIMEOUT_MS, MAX_FIX_PENDING_LOGONS};
use exchange_node::GatewayStart;
use exchange_node::Handle;
use thiserror::Error;

pub use crate::config::{FixConfig, FixSessionConfig};

#[derive(Debug, Error)]
pub enum FixError {
    #[error("[fix] configuration: {0}")]
    Config(String),
    #[error("FIX gateway cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("[fix] TLS: cannot use {path}: {reason}")]
    Tls {
        path: std::path::PathBuf,
        reason: String,
    },
}

/// A CompID must survive being a FIX value and part of a directory name.
fn valid_comp_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Checks the `[fix]` section: every session's CompIDs are valid and
/// unique, and it is either an order-entry or a drop-copy session.
pub fn validate(config: &FixConfig) -> Result<(), FixError> {
    validate_limits(config)?;
    let mut seen = HashSet::new();
    for session in &config.sessions {
        let name = format!("{}->{}", session.sender_comp_id, session.target_comp_id);
        if !valid_comp_id(&session.sender_comp_id) || !valid_comp_id(&session.target_comp_id) {
            return Err(FixError::Config(format!(
                "session {name}: CompIDs are 1 to 64 letters, digits, '-', '_' or '.'"
            )));
        }
        if !seen.insert((
            session.sender_comp_id.clone(),
            session.target_comp_id.clone(),
        )) {
            return Err(FixError::Config(format!(
                "session {name} is configured twice"
            )));
        }
        if session.password.is_empty() {
            return Err(FixError::Config(format!(
                "session {name}: password must not be empty"
            )));
        }
        match (session.account, session.drop_copy_accounts.is_empty()) {
            (Some(_), true) => {}
            (None, false) if !session.cancel_on_disconnect => {}
            (None, false) => {
                return Err(FixError::Config(format!(
                    "session {name}: cancel_on_disconnect needs an order-entry session"
                )))
            }
            _ => {
                return Err(FixError::Config(format!(
                    "session {name}: give exactly one of `account` (order entry) \
                     and `drop_copy_accounts`"
                )))
            }
        }
    }
    Ok(())
}

/// Checks the bounds on connections that have not logged on and on a
/// session's message rate.
fn validate_limits(config: &FixConfig) -> Result<(), FixError> {
    if !(100..=MAX_FIX_LOGON_TIMEOUT_MS).contains(&config.logon_timeout_ms) {
        return Err(FixError::Config(format!(
            "logon_timeout_ms must be 100 to {MAX_FIX_LOGON_TIMEOUT_MS}"
        )));
    }
    if !(1..=MAX_FIX_PENDING_LOGONS).contains(&config.max_pending_logons) {
        return Err(FixError::Config(format!(
            "max_pending_logons must be 1 to {MAX_FIX_PENDING_LOGONS}"
        )));
    }
    if !(1..=config.max_pending_logons).contains(&config.max_pending_logons_per_source) {
        return Err(FixError::Config(
            "max_pending_logons_per_source must be 1 to max_pending_logons".into(),
        ));
    }
    if config.messages_per_sec > 0 && config.message_burst == 0 {
        return Err(FixError::Config(
            "message_burst must be at least 1 when messages_per_sec is set".into(),
        ));
    }
    Ok(())
}

/// Where a session's sequence numbers and sent messages live.
pub fn session_dir(data_dir: &Path, session: &FixSessionConfig) -> PathBuf {
    data_dir.join("fix").join(format!(
        "{}-{}",
        session.sender_comp_id, session.target_comp_id
    ))
}

/// The FIX gateway as the server's binary starts it, with the file's
/// `[fix]` section: nothing at all when no session is configured.
pub fn gateway(fix: FixConfig) -> GatewayStart {
    Box::new(move |handle: &Handle, config: &Config, stopping| {
        if fix.sessions.is_empty() {
            return Ok(tokio::spawn(async {}));
        }
        let started = acceptor::start(handle.clone(), &fix, &config.data_dir, stopping);
        started.map(|(_, task)| task).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(sender: &str, account: Option<u64>, drop_copy: Vec<u64>) -> FixSessionConfig {
        FixSessionConfig {
            sender_comp_id: sender.into(),
            target_comp_id: "EXCHANGE".into(),
            password: "pw".into(),
            account,
            drop_copy_accounts: drop_copy,
            cancel_on_disconnect: false,
        }
    }

    #[test]
    fn configuration_is_checked() {
        let mut config = FixConfig {
            sessions: vec![
                session("A", Some(1), vec![]),
                session("B", None, vec![1, 2]),
            ],
            ..FixConfig::default()
        };
        assert!(validate(&config).is_ok());
        config.sessions.push(session("A", Some(2), vec![]));
        assert!(validate(&config).unwrap_err().to_string().contains("twice"));
        config.sessions = vec![session("A", Some(1), vec![1])];
        assert!(validate(&config)
            .unwrap_err()
            .to_string()
            .contains("exactly one"));
        config.sessions = vec![session("A B", Some(1), vec![])];
        assert!(validate(&config).is_err());
        let mut dc = session("DC", None, vec![1]);
        dc.cancel_on_disconnect = true;
        config.sessions = vec![dc];
        assert!(validate(&config).is_err());
    }

    #[test]
    fn connection_and_rate_limits_are_checked() {
        let ok = FixConfig {
            sessions: vec![session("A", Some(1), vec![])],
            ..FixConfig::default()
        };
        assert!(validate(&ok).is_ok());
        let bad = [
            FixConfig {
                logon_timeout_ms: 0,
                ..ok.clone()
            },
            FixConfig {
                max_pending_logons: 0,
                ..ok.clone()
            },
            FixConfig {
                max_pending_logons_per_source: ok.max_pending_logons + 1,
                ..ok.clone()
            },
            FixConfig {
                max_pending_logons_per_source: 0,
                ..ok.clone()
            },
            FixConfig {
                message_burst: 0,
                ..ok.clone()
            },
        ];
        for config in bad {
            assert!(validate(&config).is_err(), "{config:?}");
        }
    }
}
