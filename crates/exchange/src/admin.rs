//! `exchange admin`: the operator's member risk controls on a running
//! server, over its admin HTTP routes (docs/server.md). The token comes
//! from `--token` or `EXCHANGE_ADMIN_TOKEN`; the answer is printed as
//! JSON, and a refusal is an error with the server's code and message.

use anyhow::{anyhow, bail};
use serde_json::{json, Map, Value};

use crate::cluster::http::{http_send, parse_addr};

#[derive(clap::Args)]
pub struct AdminArgs {
    /// The server's HTTP address.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Admin bearer token (else EXCHANGE_ADMIN_TOKEN).
    #[arg(long)]
    token: Option<String>,
    #[command(subcommand)]
    command: AdminCmd,
}

#[derive(clap::Subcommand)]
enum AdminCmd {
    /// Kill switch: cancel every open order of the account and refuse its
    /// new orders and replaces until it is reinstated.
    Suspend {
        #[arg(long)]
        account: u64,
    },
    /// Lift a suspension.
    Reinstate {
        #[arg(long)]
        account: u64,
    },
    /// Set the account's pre-trade limits (each one left out is no limit),
    /// or clear them all with --clear.
    Limits {
        #[arg(long)]
        account: u64,
        #[arg(long)]
        max_order_qty: Option<String>,
        #[arg(long)]
        max_order_notional: Option<String>,
        #[arg(long)]
        max_open_orders: Option<u32>,
        /// Half-width of the fat-finger band around the reference price,
        /// in percent (at most two decimals).
        #[arg(long)]
        price_band_pct: Option<String>,
        #[arg(long, conflicts_with_all = ["max_order_qty", "max_order_notional", "max_open_orders", "price_band_pct"])]
        clear: bool,
    },
    /// Set market-maker protection for the account on an instrument, or
    /// remove it with --remove.
    Mmp {
        #[arg(long)]
        account: u64,
        #[arg(long)]
        symbol: String,
        /// Window of log time the fills are counted in, milliseconds.
        #[arg(long, required_unless_present = "remove")]
        window_ms: Option<u64>,
        #[arg(long)]
        max_qty: Option<String>,
        #[arg(long)]
        max_count: Option<u32>,
        #[arg(long, conflicts_with_all = ["window_ms", "max_qty", "max_count"])]
        remove: bool,
    },
    /// Reset tripped market-maker protection.
    MmpReset {
        #[arg(long)]
        account: u64,
        #[arg(long)]
        symbol: String,
    },
}

/// The request a command makes: method, path and body.
fn request(command: &AdminCmd) -> (&'static str, String, Option<Value>) {
    let account_path = |account: u64, rest: &str| format!("/admin/accounts/{account}/{rest}");
    match command {
        AdminCmd::Suspend { account } => ("POST", account_path(*account, "suspend"), None),
        AdminCmd::Reinstate { account } => ("POST", account_path(*account, "reinstate"), None),
        AdminCmd::Limits {
            account,
            clear: true,
            ..
        } => ("DELETE", account_path(*account, "risk-limits"), None),
        AdminCmd::Limits {
            account,
            max_order_qty,
            max_order_notional,
            max_open_orders,
            price_band_pct,
            ..
        } => {
            let mut body = Map::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    body.insert(key.to_string(), value);
                }
            };
            put("max_order_qty", max_order_qty.clone().map(Value::from));
            put(
                "max_order_notional",
                max_order_notional.clone().map(Value::from),
            );
            put("max_open_orders", max_open_orders.map(Value::from));
            put("price_band_pct", price_band_pct.clone().map(Value::from));
            (
                "PUT",
                account_path(*account, "risk-limits"),
                Some(Value::Object(body)),
            )
        }
        AdminCmd::Mmp {
            account,
            symbol,
            remove: true,
            ..
        } => (
            "DELETE",
            account_path(*account, &format!("mmp/{symbol}")),
            None,
        ),
        AdminCmd::Mmp {
            account,
            symbol,
            window_ms,
            max_qty,
            max_count,
            ..
        } => {
            let mut body = json!({ "window_ms": window_ms });
            if let Some(qty) = max_qty {
                body["max_qty"] = json!(qty);
            }
            if let Some(count) = max_count {
                body["max_count"] = json!(count);
            }
            (
                "PUT",
                account_path(*account, &format!("mmp/{symbol}")),
                Some(body),
            )
        }
        AdminCmd::MmpReset { account, symbol } => (
            "POST",
            account_path(*account, &format!("mmp/{symbol}/reset")),
            None,
        ),
    }
}

fn token(given: Option<String>) -> anyhow::Result<String> {
    given
        .or_else(|| std::env::var("EXCHANGE_ADMIN_TOKEN").ok())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| anyhow!("give --token or set EXCHANGE_ADMIN_TOKEN"))
}

pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let token = token(args.token)?;
    let addr = parse_addr(&args.url)?;
    let (method, path, body) = request(&args.command);
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let (status, answer) = http_send(addr, method, &path, Some(&token), &body)?;
    let text = String::from_utf8_lossy(&answer);
    if !(200..300).contains(&status) {
        let reason: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        match (reason["code"].as_str(), reason["message"].as_str()) {
            (Some(code), Some(message)) => bail!("{method} {path}: {status} {code}: {message}"),
            _ => bail!("{method} {path}: {status} {text}"),
        }
    }
    println!("{text}");
    Ok(())
}
