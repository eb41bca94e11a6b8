//! `bench auction`: the opening uncross of a call book of many orders, and
//! what an order costs during the call (where the indicative price is
//! recomputed after every command).
//!
//! Each round lists an instrument, collects `--orders` limit orders in the
//! pre-open call (buys and sells over `--levels` overlapping prices, so
//! about half of them cross), then times the one `set_phase` command that
//! uncrosses the book. Setup is untimed apart from each order's own
//! `apply`, which goes into the second histogram.

use std::time::Instant;

use anyhow::Context;
use exchange_core::Engine;
use exchange_types::{
    AddInstrument, AssetCode, ClientOrderId, Command, Dec, Event, EventKind, OrderType, Phase,
    Place, SelfTradePrevention, Side, Stamped, Symbol, TimeInForce, Transfer,
};
use hdrhistogram::Histogram;
use serde_json::json;

use super::rng::SplitMix64;
use super::timing::progress_bar;

#[derive(clap::Args, Debug, Clone)]
pub struct AuctionArgs {
    /// Orders in the call book of each round.
    #[arg(long, default_value_t = 100_000)]
    pub orders: usize,
    /// Distinct prices the orders spread over (both sides share them).
    #[arg(long, default_value_t = 1_000)]
    pub levels: u64,
    /// Rounds, each a fresh book and one timed uncross.
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Funded accounts placing the orders.
    #[arg(long, default_value_t = 1_000)]
    pub accounts: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

struct Round {
    uncross_ns: u64,
    trades: usize,
}

fn round(
    args: &AuctionArgs,
    rng: &mut SplitMix64,
    places: &mut Histogram<u64>,
) -> anyhow::Result<Round> {
    let symbol = Symbol::new("AUCT-USD").context("bench symbol")?;
    let mut engine = Engine::new();
    let mut out = Vec::new();
    let mut ts = pre_open(args, symbol, &mut engine, &mut out)?;
    // Prices 100.00 +- levels/2 ticks: buys and sells over the same range
    // cross in its middle.
    let low = 10_000 - (args.levels / 2) as i64;
    for n in 0..args.orders {
        let side = if rng.below(2) == 0 {
            Side::Buy
        } else {
            Side::Sell
        };
        let price = low + rng.below(args.levels) as i64;
        let place = Place {
            account: 1 + rng.below(args.accounts),
            client_order_id: ClientOrderId::new(&format!("a{n}")).context("bench id")?,
            symbol,
            side,
            order_type: OrderType::Limit,
            price: Some(Dec::new(price, 2)),
            qty: Dec::new(1 + rng.below(10) as i64, 0),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        };
        ts += 1;
        out.clear();
        let stamped = Stamped {
            ts,
            command: Command::Place(place),
        };
        let start = Instant::now();
        engine.apply(&stamped, &mut out);
        places.saturating_record(start.elapsed().as_nanos() as u64);
    }
    ts += 1;
    out.clear();
    let stamped = Stamped {
        ts,
        command: Command::SetPhase {
            symbol,
            phase: Phase::OpeningAuction,
        },
    };
    let start = Instant::now();
    engine.apply(&stamped, &mut out);
    let uncross_ns = start.elapsed().as_nanos() as u64;
    let trades = out
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Trade(_)))
        .count();
    if trades == 0 {
        anyhow::bail!("the uncross executed nothing");
    }
    Ok(Round { uncross_ns, trades })
}

/// Lists the instrument, funds every account and opens the call; the
/// timestamp of the last command applied.
fn pre_open(
    args: &AuctionArgs,
    symbol: Symbol,
    engine: &mut Engine,
    out: &mut Vec<Event>,
) -> anyhow::Result<u64> {
    let base = AssetCode::new("AUCT").context("bench asset")?;
    let quote = AssetCode::new("USD").context("bench asset")?;
    let mut ts = 0;
    let mut apply = |engine: &mut Engine, command: Command, out: &mut Vec<_>| {
        ts += 1;
        out.clear();
        engine.apply(&Stamped { ts, command }, out);
    };
    let listing = AddInstrument {
        reference_price: Some(Dec::new(10_000, 2)),
        maker_fee_bps: -1,
        taker_fee_bps: 5,
        ..AddInstrument::plain(symbol, base, quote, Dec::new(1, 2), Dec::new(1, 0))
    };
    apply(engine, Command::AddInstrument(Box::new(listing)), out);
    for account in 1..=args.accounts {
        for (asset, amount) in [(quote, 1_000_000_000), (base, 10_000_000)] {
            let transfer = Transfer {
                account,
                asset,
                amount: Dec::new(amount, 0),
            };
            apply(engine, Command::Deposit(transfer), out);
        }
    }
    for phase in [Phase::Closed, Phase::PreOpen] {
        apply(engine, Command::SetPhase { symbol, phase }, out);
    }
    Ok(ts)
}

pub fn run(args: AuctionArgs) -> anyhow::Result<()> {
    if args.orders == 0 || args.levels == 0 || args.accounts == 0 || args.rounds == 0 {
        anyhow::bail!("--orders, --levels, --accounts and --rounds must be at least 1");
    }
    let mut rng = SplitMix64::new(args.seed);
    let mut uncross = Histogram::<u64>::new_with_bounds(1, 600_000_000_000, 3)?;
    let mut places = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3)?;
    let bar = progress_bar(args.rounds, "auction rounds");
    let mut trades = 0;
    for _ in 0..args.rounds {
        let r = round(&args, &mut rng, &mut places)?;
        uncross.saturating_record(r.uncross_ns);
        trades += r.trades;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let ms = |ns: u64| ns as f64 / 1e6;
    let mean_trades = trades / args.rounds;
    if args.json {
        let out = json!({
            "orders": args.orders,
            "levels": args.levels,
            "rounds": args.rounds,
            "trades_per_uncross": mean_trades,
            "uncross_p50_ms": ms(uncross.value_at_quantile(0.50)),
            "uncross_p99_ms": ms(uncross.value_at_quantile(0.99)),
            "uncross_max_ms": ms(uncross.max()),
            "call_place_p50_ns": places.value_at_quantile(0.50),
            "call_place_p99_ns": places.value_at_quantile(0.99),
            "call_place_p999_ns": places.value_at_quantile(0.999),
        });
        println!("{out}");
    } else {
        println!(
            "uncross of {} orders over {} prices, {} rounds, {} trades each:",
            args.orders, args.levels, args.rounds, mean_trades
        );
        println!(
            "  uncross   p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            ms(uncross.value_at_quantile(0.50)),
            ms(uncross.value_at_quantile(0.99)),
            ms(uncross.max())
        );
        println!(
            "  place in the call (indicative recomputed)  p50 {} ns  p99 {} ns  p99.9 {} ns",
            places.value_at_quantile(0.50),
            places.value_at_quantile(0.99),
            places.value_at_quantile(0.999)
        );
    }
    Ok(())
}
