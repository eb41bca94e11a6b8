//! The standard workload, after exchange-core's published benchmark: one
//! instrument, 1,000 funded accounts, books pre-filled to about 1,000 price
//! levels a side, then a seeded stream of 9% GTC limit orders, 3% IOC limit
//! orders, 6% cancels and 82% replaces (moves), of which about 6% trade.
//!
//! Every command is generated against the scratch engine's state (through
//! the [`Tracker`](super::tracker::Tracker)), so cancels and replaces name
//! orders that are really open and prices sit where the book really is.
//!
//! With the mix fixed, the book can only stay put if trades close few
//! resting orders: passive GTC orders (about 6% of commands) only just
//! match cancels (6%). So resting orders are ten times the size of
//! taking ones, moves re-quote without crossing, and feedback loops hold
//! the book steady over millions of commands, as exchange-core's
//! generator does:
//! - depth: most passive orders open levels further out while a side has
//!   fewer levels than the target, and refresh the existing depth once it
//!   has them; 30% join the best few ticks either way;
//! - order count: taking orders grow when the books hold more orders than
//!   the target (two per level), shrink when they hold fewer, and when far
//!   fewer the aggressive GTC orders rest instead;
//! - price: taking orders lean against the drift of the last trade price
//!   from where it started, and moves pull orders towards the middle by 1%
//!   of their distance.

use anyhow::Context;
use exchange_types::{
    AddInstrument, AssetCode, Cancel, Command, Dec, OrderRef, Side, Stamped, Symbol, Transfer,
};

use super::rng::SplitMix64;
use super::stream::{Phase, Prepared, Scratch};
use super::timing::progress_bar;

mod mix;
mod orders;

use mix::HIDDEN_MIN_NOTIONAL;
#[cfg(test)]
pub use mix::{
    HIDDEN_PPM, ICEBERG_PPM, IF_TOUCHED_PPM, MARKET_TO_LIMIT_PPM, MIDPOINT_PPM, MIN_QTY_PPM,
    RACE_PPM, STOP_PPM,
};

pub const SYMBOL: &str = "BNCH-USD";
const BASE: &str = "BNCH";
const QUOTE: &str = "USD";
/// Tick 0.01 and lot 1, in units of 1e-8.
const TICK_UNITS: u64 = 1_000_000;
const LOT_UNITS: u64 = 100_000_000;
/// Where the price starts: 100.00.
const START_TICKS: u64 = 10_000;
/// Deposits per account: far beyond what its orders can reserve, so risk
/// rejects stay rare.
const DEPOSIT_QUOTE: i64 = 10_000_000;
const DEPOSIT_BASE: i64 = 1_000_000;

/// The command mix, in parts per million (exchange-core's published mix).
pub const GTC_PPM: u64 = 90_000;
pub const IOC_PPM: u64 = 30_000;
pub const CANCEL_PPM: u64 = 60_000;
/// Share of GTC orders priced through the opposite best, so they trade.
/// With the IOC orders, which nearly always trade, this gives about 6% of
/// commands trading.
const AGGRESSIVE_GTC_PPM: u64 = 333_000;
/// Share of moves that pick an order among the best levels, as market
/// makers re-quoting; the others pick any open order.
const NEAR_TOP_MOVE_PPM: u64 = 500_000;
/// Share of passive orders placed within five ticks of the opposite best.
const NEAR_TOP_PASSIVE_PPM: u64 = 300_000;
/// How many of the best levels count as "near the top".
const NEAR_TOP_LEVELS: usize = 10;
/// Resting orders are this many times larger than taking ones, so that a
/// taker usually leaves the order it hits on the book.
const MAKER_SCALE: u64 = 10;

/// Which stream to generate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// The published mix, unchanged.
    #[default]
    Standard,
    /// The published mix with stops, icebergs and requests racing fills
    /// (see `mix.rs`).
    Mix,
}

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Timed commands.
    pub ops: usize,
    pub seed: u64,
    pub accounts: u64,
    /// Price levels to keep on each side.
    pub levels: u64,
    pub workload: Workload,
}

impl Spec {
    /// The standard workload as `bench engine` runs it by default: 1,000
    /// accounts and 1,000 price levels a side.
    pub fn standard(ops: usize, seed: u64) -> Spec {
        Spec {
            ops,
            seed,
            accounts: 1_000,
            levels: 1_000,
            workload: Workload::Standard,
        }
    }

    /// Open orders to keep across both sides: two per level.
    fn target_orders(&self) -> u64 {
        4 * self.levels
    }
}

/// Generates the workload and prepares it (see [`Scratch`]).
pub fn generate(spec: &Spec, with_peers: bool, show_progress: bool) -> anyhow::Result<Prepared> {
    let mut g = Generator {
        spec: *spec,
        rng: SplitMix64::new(spec.seed),
        scratch: Scratch::new(with_peers, spec.ops),
        ts: 0,
        next_coid: 0,
        symbol: Symbol::new(SYMBOL).context("bench symbol")?,
        filled: mix::Filled::default(),
    };
    g.setup()?;
    let bar = progress_bar(spec.ops, "generating");
    if !show_progress {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    for i in 0..spec.ops {
        g.step()?;
        if i.is_multiple_of(65_536) {
            bar.set_position(i as u64);
        }
    }
    bar.finish_and_clear();
    Ok(g.scratch.finish())
}

struct Generator {
    spec: Spec,
    rng: SplitMix64,
    scratch: Scratch,
    ts: u64,
    next_coid: u64,
    symbol: Symbol,
    filled: mix::Filled,
}

fn ticks(n: u64) -> Dec {
    Dec::from_parts(n, 2).normalized()
}

fn lots(n: u64) -> Dec {
    Dec::from_parts(n, 0)
}

impl Generator {
    fn push(&mut self, command: Command, phase: Phase) {
        self.ts += 1_000;
        self.scratch.push(
            Stamped {
                ts: self.ts,
                command,
            },
            phase,
        );
    }

    /// Listing, deposits and the pre-fill: all untimed.
    fn setup(&mut self) -> anyhow::Result<()> {
        let base = AssetCode::new(BASE).context("bench asset")?;
        let quote = AssetCode::new(QUOTE).context("bench asset")?;
        let listing = AddInstrument {
            symbol: self.symbol,
            base,
            quote,
            tick_size: Dec::new(1, 2),
            lot_size: Dec::new(1, 0),
            min_qty: None,
            max_qty: None,
            collar_bps: None,
            reference_price: None,
            maker_fee_bps: -1,
            taker_fee_bps: 5,
            min_notional: None,
            static_band_bps: None,
            dynamic_band_bps: None,
            volatility_auction_ns: None,
            reference_price_rule: exchange_types::ReferencePriceRule::FOR_NEW_LISTINGS,
            phase: None,
            // Only the mixed workload enters hidden orders: the standard
            // stream's listing stays as it was.
            hidden_min_notional: (self.spec.workload == Workload::Mix)
                .then(|| Dec::from_parts(HIDDEN_MIN_NOTIONAL, 0)),
        };
        self.push(Command::AddInstrument(Box::new(listing)), Phase::Setup);
        for account in 1..=self.spec.accounts {
            for (asset, amount) in [(quote, DEPOSIT_QUOTE), (base, DEPOSIT_BASE)] {
                let transfer = Transfer {
                    account,
                    asset,
                    amount: Dec::new(amount, 0),
                };
                self.push(Command::Deposit(transfer), Phase::Setup);
            }
        }
        let mut side = Side::Buy;
        while self.levels(Side::Buy) < self.spec.levels
            || self.levels(Side::Sell) < self.spec.levels
        {
            let place = self.passive(side, true)?;
            self.push(Command::Place(place), Phase::Setup);
            side = side.opposite();
        }
        Ok(())
    }

    /// One timed command in the published mix.
    fn step(&mut self) -> anyhow::Result<()> {
        // The standard stream draws nothing more, so it stays the same.
        if self.spec.workload == Workload::Mix {
            if let Some(command) = self.mixed()? {
                self.push(command, Phase::Timed);
                self.note_fills();
                return Ok(());
            }
        }
        let draw = self.rng.below(1_000_000);
        let command = if draw < GTC_PPM {
            Command::Place(self.gtc()?)
        } else if draw < GTC_PPM + IOC_PPM {
            Command::Place(self.ioc()?)
        } else if draw < GTC_PPM + IOC_PPM + CANCEL_PPM {
            match self.scratch.tracker.random_order(&mut self.rng) {
                Some((id, order)) => Command::Cancel(Cancel {
                    account: order.account(),
                    order: OrderRef::Id(id),
                }),
                None => Command::Place(self.gtc()?),
            }
        } else {
            match self.replace() {
                Some(replace) => Command::Replace(replace),
                None => Command::Place(self.gtc()?),
            }
        };
        self.push(command, Phase::Timed);
        if self.spec.workload == Workload::Mix {
            self.note_fills();
        }
        Ok(())
    }
}
