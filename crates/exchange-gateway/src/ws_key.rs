//! A socket authenticated with an API key lasts no longer than the key.
//!
//! Its private stream is the account's orders and fills: once the key is
//! revoked, rotated away or expired, the socket is told why (`key_revoked`
//! or `key_expired`) and closed with code 1008. Revocation and rotation
//! are seen when this node applies them (the key map signals each removal),
//! expiry at its time (a timer); and each private update is checked before
//! it is sent, so nothing of the account leaves after the key is gone even
//! when the socket is busy.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::ws::WebSocket;
use tokio::sync::watch;

use super::ws::error_message;
use super::ws_live::{close_within, CLOSE_POLICY};
use super::AppState;

/// Why a socket's key no longer speaks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KeyEnd {
    /// Revoked, or rotated to a new id.
    Revoked,
    Expired,
}

/// Unix nanoseconds, the clock key expiries are on.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Watches the key one socket authenticated with.
#[derive(Clone)]
pub(super) struct KeyWatch {
    app: AppState,
    key: String,
    expires_at: Option<u64>,
    removals: watch::Receiver<u64>,
    /// Found gone when the watch began.
    gone: bool,
}

impl KeyWatch {
    /// Begins after authentication; a key removed since is found gone.
    pub(super) fn new(app: &AppState, key: &str) -> Self {
        // Subscribed before the look, so a removal after it is signalled.
        let removals = app.handle.key_removals();
        let credential = app.handle.credential(key);
        KeyWatch {
            app: app.clone(),
            key: key.to_owned(),
            expires_at: credential.as_ref().and_then(|c| c.expires_at),
            removals,
            gone: credential.is_none(),
        }
    }

    /// Whether the key has ended, as of now: one comparison, and a look
    /// at the key map only when keys were removed since the last look.
    pub(super) fn ended(&mut self) -> Option<KeyEnd> {
        if self.removals.has_changed().unwrap_or(false) {
            self.removals.mark_unchanged();
            self.gone = self.app.handle.credential(&self.key).is_none();
        }
        if self.gone {
            return Some(KeyEnd::Revoked);
        }
        self.expires_at
            .filter(|&at| now_ns() >= at)
            .map(|_| KeyEnd::Expired)
    }

    /// Completes when the key ends.
    pub(super) async fn end(&mut self) -> KeyEnd {
        let mut signalled = true;
        loop {
            if let Some(end) = self.ended() {
                return end;
            }
            let expires_at = self.expires_at;
            let expiry = async move {
                match expires_at {
                    Some(at) => {
                        let left = at.saturating_sub(now_ns());
                        tokio::time::sleep(Duration::from_nanos(left)).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let mut removals = self.removals.clone();
            let removal = async {
                // The key map gone with the node signals nothing more.
                if !signalled || removals.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = removal => {}
                () = expiry => {}
            }
            signalled = self.removals.has_changed().is_ok();
        }
    }
}

/// Completes when the socket's key ends; never on a public socket.
pub(super) async fn ended(watch: Option<&mut KeyWatch>) -> KeyEnd {
    match watch {
        Some(watch) => watch.end().await,
        None => std::future::pending().await,
    }
}

/// Says why the key no longer serves the socket, and closes it.
pub(super) async fn close(socket: &mut WebSocket, end: KeyEnd) {
    let (code, message) = match end {
        KeyEnd::Revoked => (
            "key_revoked",
            "the API key this socket authenticated with was revoked or rotated",
        ),
        KeyEnd::Expired => (
            "key_expired",
            "the API key this socket authenticated with has expired",
        ),
    };
    close_within(socket, CLOSE_POLICY, &error_message(code, message)).await;
}
