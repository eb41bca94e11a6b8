//! `exchange admin`: the operator's member risk controls and instrument
//! rules on a running server, over its admin HTTP routes (docs/server.md). The token comes
//! from `--token-file` or `EXCHANGE_ADMIN_TOKEN`; the answer is printed as
//! JSON, and a refusal is an error with the server's code and message.

use anyhow::{anyhow, bail};
use serde_json::{json, Map, Value};

use crate::cluster::http::{http_send, parse_addr};

#[derive(clap::Args)]
pub struct AdminArgs {
    /// The server's HTTP address.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// A file holding the admin bearer token (else EXCHANGE_ADMIN_TOKEN);
    /// a server that generated its token keeps it in DATA_DIR/admin_token.
    #[arg(long)]
    token_file: Option<std::path::PathBuf>,
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
    Limits(LimitsArgs),
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
    /// Change a listed instrument's rules from now on (each one left out
    /// is kept); resting orders that no longer fit are canceled.
    Rules(RulesArgs),
    /// Cancel every order of the instrument and refuse new ones for good.
    Delist {
        #[arg(long)]
        symbol: String,
    },
}

// The arguments of `admin limits`, kept apart for the request they make.
#[derive(clap::Args)]
struct LimitsArgs {
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
    #[arg(
        long,
        conflicts_with_all = [
            "max_order_qty",
            "max_order_notional",
            "max_open_orders",
            "price_band_pct",
        ]
    )]
    clear: bool,
}

// The arguments of `admin rules`, kept apart for the request they make.
#[derive(clap::Args)]
struct RulesArgs {
    #[arg(long)]
    symbol: String,
    #[arg(long)]
    tick_size: Option<String>,
    #[arg(long)]
    lot_size: Option<String>,
    #[arg(long)]
    min_qty: Option<String>,
    #[arg(long)]
    max_qty: Option<String>,
    /// Smallest price times quantity; 0 removes it.
    #[arg(long)]
    min_notional: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    maker_fee_bps: Option<i32>,
    #[arg(long)]
    taker_fee_bps: Option<i32>,
    /// Collar half-width in percent; 0 removes it.
    #[arg(long)]
    price_collar_pct: Option<String>,
    #[arg(long)]
    static_band_pct: Option<String>,
    #[arg(long)]
    dynamic_band_pct: Option<String>,
    #[arg(long)]
    volatility_auction_ns: Option<u64>,
}

/// The request a command makes: method, path and body.
fn request(command: &AdminCmd) -> (&'static str, String, Option<Value>) {
    let account_path = |account: u64, rest: &str| format!("/admin/accounts/{account}/{rest}");
    match command {
        AdminCmd::Suspend { account } => ("POST", account_path(*account, "suspend"), None),
        AdminCmd::Reinstate { account } => ("POST", account_path(*account, "reinstate"), None),
        AdminCmd::Limits(limits) => limits.request(),
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
        } => (
            "PUT",
            account_path(*account, &format!("mmp/{symbol}")),
            Some(mmp_body(*window_ms, max_qty.as_deref(), *max_count)),
        ),
        AdminCmd::MmpReset { account, symbol } => (
            "POST",
            account_path(*account, &format!("mmp/{symbol}/reset")),
            None,
        ),
        AdminCmd::Rules(rules) => (
            "PUT",
            format!("/admin/instruments/{}/rules", rules.symbol),
            Some(rules.body()),
        ),
        AdminCmd::Delist { symbol } => {
            ("POST", format!("/admin/instruments/{symbol}/delist"), None)
        }
    }
}

impl LimitsArgs {
    fn request(&self) -> (&'static str, String, Option<Value>) {
        let path = format!("/admin/accounts/{}/risk-limits", self.account);
        if self.clear {
            return ("DELETE", path, None);
        }
        let mut body = Map::new();
        put_some(
            &mut body,
            "max_order_qty",
            self.max_order_qty.clone().map(Value::from),
        );
        put_some(
            &mut body,
            "max_order_notional",
            self.max_order_notional.clone().map(Value::from),
        );
        put_some(
            &mut body,
            "max_open_orders",
            self.max_open_orders.map(Value::from),
        );
        put_some(
            &mut body,
            "price_band_pct",
            self.price_band_pct.clone().map(Value::from),
        );
        ("PUT", path, Some(Value::Object(body)))
    }
}

impl RulesArgs {
    /// Only the rules the command names: the others are kept.
    fn body(&self) -> Value {
        let mut body = Map::new();
        for (key, text) in [
            ("tick_size", &self.tick_size),
            ("lot_size", &self.lot_size),
            ("min_qty", &self.min_qty),
            ("max_qty", &self.max_qty),
            ("min_notional", &self.min_notional),
            ("price_collar_pct", &self.price_collar_pct),
            ("static_band_pct", &self.static_band_pct),
            ("dynamic_band_pct", &self.dynamic_band_pct),
        ] {
            put_some(&mut body, key, text.clone().map(Value::from));
        }
        put_some(
            &mut body,
            "maker_fee_bps",
            self.maker_fee_bps.map(Value::from),
        );
        put_some(
            &mut body,
            "taker_fee_bps",
            self.taker_fee_bps.map(Value::from),
        );
        put_some(
            &mut body,
            "volatility_auction_ns",
            self.volatility_auction_ns.map(Value::from),
        );
        Value::Object(body)
    }
}

/// Adds `key` to a request body only when the command gave it.
fn put_some(body: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        body.insert(key.to_string(), value);
    }
}

fn mmp_body(window_ms: Option<u64>, max_qty: Option<&str>, max_count: Option<u32>) -> Value {
    let mut body = json!({ "window_ms": window_ms });
    if let Some(qty) = max_qty {
        body["max_qty"] = json!(qty);
    }
    if let Some(count) = max_count {
        body["max_count"] = json!(count);
    }
    body
}

fn token(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    crate::admin_token::from_file_or_env(file)?.ok_or_else(|| {
        anyhow!(
            "give --token-file (a server keeps a generated token in DATA_DIR/admin_token) \
             or set EXCHANGE_ADMIN_TOKEN"
        )
    })
}

pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let token = token(args.token_file.as_deref())?;
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
