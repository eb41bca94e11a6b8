//! `exchange keys`: an account's API keys through a node's admin routes
//! (docs/security.md): create, list, revoke, rotate. The admin token comes
//! from `EXCHANGE_ADMIN_TOKEN`; answers are printed as JSON, and a refusal
//! is an error naming the server's code and message.

use anyhow::{anyhow, bail};
use serde_json::{json, Value};

use crate::cluster::http::{http_send, parse_addr};

#[derive(clap::Subcommand)]
pub enum KeysCmd {
    /// Create a key for an account; an HMAC key's secret is printed only now.
    Create {
        /// The leader's HTTP address, e.g. http://127.0.0.1:8080.
        #[arg(long)]
        url: String,
        #[arg(long)]
        account: u64,
        /// Comma-separated: read, trade, transfer.
        #[arg(long, value_delimiter = ',', required = true)]
        scopes: Vec<String>,
        #[arg(long)]
        label: Option<String>,
        /// Seconds until the key expires.
        #[arg(long)]
        expires_in: Option<u64>,
        /// Comma-separated addresses or CIDR ranges the key may be used from.
        #[arg(long, value_delimiter = ',')]
        allow: Vec<String>,
        /// Make an Ed25519 key with this public key (hex or base64).
        #[arg(long)]
        ed25519_public_key: Option<String>,
    },
    /// List an account's keys (no secrets).
    List {
        #[arg(long)]
        url: String,
        #[arg(long)]
        account: u64,
    },
    /// Revoke a key.
    Revoke {
        #[arg(long)]
        url: String,
        key: String,
    },
    /// Replace a key by a new id and secret (or Ed25519 public key).
    Rotate {
        #[arg(long)]
        url: String,
        key: String,
        #[arg(long)]
        ed25519_public_key: Option<String>,
    },
}

pub fn run(cmd: KeysCmd) -> anyhow::Result<()> {
    let (url, method, path, body) = match cmd {
        KeysCmd::Create {
            url,
            account,
            scopes,
            label,
            expires_in,
            allow,
            ed25519_public_key,
        } => {
            let mut body = json!({ "scopes": scopes, "allow": allow });
            if let Some(label) = label {
                body["label"] = json!(label);
            }
            if let Some(secs) = expires_in {
                body["expires_in_secs"] = json!(secs);
            }
            if let Some(key) = ed25519_public_key {
                body["ed25519_public_key"] = json!(key);
            }
            let path = format!("/admin/accounts/{account}/keys");
            (url, "POST", path, body.to_string())
        }
        KeysCmd::List { url, account } => {
            let path = format!("/admin/accounts/{account}/keys");
            (url, "GET", path, String::new())
        }
        KeysCmd::Revoke { url, key } => {
            (url, "DELETE", format!("/admin/keys/{key}"), String::new())
        }
        KeysCmd::Rotate {
            url,
            key,
            ed25519_public_key,
        } => {
            let body = ed25519_public_key
                .map(|k| json!({ "ed25519_public_key": k }).to_string())
                .unwrap_or_default();
            (url, "POST", format!("/admin/keys/{key}/rotate"), body)
        }
    };
    let Some(token) = std::env::var("EXCHANGE_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    else {
        bail!("set EXCHANGE_ADMIN_TOKEN to the node's admin token");
    };
    let (status, answer) = http_send(parse_addr(&url)?, method, &path, Some(&token), &body)?;
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|_| anyhow!("{url}: HTTP {status} with a body that is not JSON"))?;
    if !(200..300).contains(&status) {
        bail!(
            "HTTP {status} {}: {}",
            answer["code"].as_str().unwrap_or("error"),
            answer["message"].as_str().unwrap_or_default()
        );
    }
    println!("{}", serde_json::to_string_pretty(&answer)?);
    Ok(())
}
