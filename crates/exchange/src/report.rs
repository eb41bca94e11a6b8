//! `exchange report`: reads the reporting store (SQLite in the data
//! directory, or `--reporting-url`) and prints trades, orders, fills, daily
//! summaries, the audit trail or the balance ledger for a date range.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use exchange_reporting::report::{self, Format};
use exchange_reporting::time::parse_bound;
use exchange_reporting::{Store, Target};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Every trade, with the auction it executed in, if any.
    Trades,
    /// Orders placed in the range, with their stop, iceberg, funds, expiry and
    /// trigger details (--account and --symbol to filter).
    Orders,
    /// Fills (both sides of each trade), of one account with --account.
    Fills,
    /// Per instrument and UTC day: open, high, low, close, volume, trades, notional.
    DailyInstruments,
    /// Per account, instrument and UTC day: fills, volume, notional, fees paid.
    DailyAccounts,
    /// Every command with its outcome (accepted, or rejected with the reason).
    Audit,
    /// Every change of a balance's total (deposits, withdrawals, trades, fees; not
    /// holds), with its cause.
    Ledger,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Csv,
    Json,
}

#[derive(Args)]
pub struct ReportArgs {
    /// What to report.
    #[arg(value_enum)]
    kind: Kind,
    /// Data directory whose reporting.sqlite to read.
    #[arg(long, default_value = "./data")]
    data_dir: PathBuf,
    /// Read this store instead: postgres://... or sqlite:PATH.
    #[arg(long)]
    reporting_url: Option<String>,
    /// First day (YYYY-MM-DD, UTC), or a time (YYYY-MM-DDTHH:MM:SS), or ns since the epoch.
    #[arg(long)]
    from: Option<String>,
    /// Last day, inclusive (YYYY-MM-DD, UTC), or an exclusive time or ns.
    #[arg(long)]
    to: Option<String>,
    /// Only this account (orders, fills, daily-accounts, ledger).
    #[arg(long)]
    account: Option<u64>,
    /// Only this instrument (trades, orders).
    #[arg(long)]
    symbol: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    format: OutputFormat,
}

pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let from = match &args.from {
        Some(text) => parse_bound(text, false)
            .map_err(anyhow::Error::msg)
            .context("--from")?,
        None => 0,
    };
    let to = match &args.to {
        Some(text) => parse_bound(text, true)
            .map_err(anyhow::Error::msg)
            .context("--to")?,
        None => u64::MAX,
    };
    if from >= to {
        bail!("--from must be before --to");
    }
    if args.account.is_some()
        && matches!(
            args.kind,
            Kind::Trades | Kind::DailyInstruments | Kind::Audit
        )
    {
        bail!("--account applies to orders, fills, daily-accounts and ledger");
    }
    if args.symbol.is_some() && !matches!(args.kind, Kind::Trades | Kind::Orders) {
        bail!("--symbol applies to trades and orders");
    }
    let target = Target::resolve(args.reporting_url.as_deref(), &args.data_dir)?;
    if let Target::Sqlite(path) = &target {
        if !path.exists() {
            bail!(
                "no reporting store at {} \
                 (run `exchange serve --data-dir {}` first, or pass --reporting-url)",
                path.display(),
                args.data_dir.display()
            );
        }
    }
    let mut store =
        Store::open(&target).with_context(|| format!("opening {}", target.describe()))?;
    let table = match args.kind {
        Kind::Trades => report::trades(&store.trades(args.symbol.as_deref(), from, to)?),
        Kind::Orders => {
            report::orders(&store.orders_placed(args.account, args.symbol.as_deref(), from, to)?)
        }
        Kind::Fills => report::fills(&store.fills(args.account, from, to)?),
        Kind::DailyInstruments => report::instrument_days(&store.instrument_days(from, to)?),
        Kind::DailyAccounts => report::account_days(&store.account_days(args.account, from, to)?),
        Kind::Audit => report::audit(&store.audit(from, to)?),
        Kind::Ledger => report::ledger(&store.ledger(args.account, from, to)?),
    };
    let format = match args.format {
        OutputFormat::Table => Format::Table,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Json => Format::Json,
    };
    print!("{}", table.render(format));
    Ok(())
}
