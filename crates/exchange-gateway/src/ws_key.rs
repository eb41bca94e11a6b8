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

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use serde_json::{json, Value};

    use super::super::rest_client::{admin, app, call, ADMIN};
    use super::super::test_support::funded_node;
    use super::*;

    async fn new_key(app: &AppState, request: Value) -> String {
        let made = call(app, admin("/admin/accounts/1/keys", request)).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.json);
        made.json["api_key"].as_str().expect("api_key").to_owned()
    }

    async fn ends(watch: &KeyWatch) -> KeyEnd {
        let mut watch = watch.clone();
        let ended = tokio::time::timeout(Duration::from_secs(10), watch.end()).await;
        ended.expect("the watch ends")
    }

    #[tokio::test]
    async fn a_watch_ends_with_its_key_not_with_others() {
        let node = funded_node().await;
        let app = app(&node, |_| {});
        let kept = new_key(&app, json!({ "scopes": ["read"] })).await;
        let revoked = new_key(&app, json!({ "scopes": ["read"] })).await;
        let mut kept_watch = KeyWatch::new(&app, &kept);
        let mut watch = KeyWatch::new(&app, &revoked);
        assert_eq!(watch.ended(), None);

        let waiting = tokio::spawn({
            let watch = watch.clone();
            async move { ends(&watch).await }
        });
        let revoke = Request::delete(format!("/admin/keys/{revoked}"))
            .header("Authorization", format!("Bearer {ADMIN}"))
            .body(Body::empty())
            .expect("request");
        assert_eq!(call(&app, revoke).await.status, StatusCode::OK);
        assert_eq!(watch.ended(), Some(KeyEnd::Revoked));
        assert_eq!(waiting.await.expect("joined"), KeyEnd::Revoked);
        // Another key's removal ends nothing.
        assert_eq!(kept_watch.ended(), None);
        // A watch begun after the key was gone ends at once.
        assert_eq!(KeyWatch::new(&app, &revoked).ended(), Some(KeyEnd::Revoked));
    }

    #[tokio::test]
    async fn a_watch_ends_when_its_key_expires() {
        let node = funded_node().await;
        let app = app(&node, |_| {});
        let key = new_key(&app, json!({ "scopes": ["read"], "expires_in_secs": 1 })).await;
        let mut watch = KeyWatch::new(&app, &key);
        assert_eq!(watch.ended(), None);
        assert_eq!(ends(&watch).await, KeyEnd::Expired);
        assert_eq!(watch.ended(), Some(KeyEnd::Expired));
    }
}
