//! Preparing a command stream before any clock starts: every command is
//! applied once to a scratch engine, which yields the state the timed runs
//! will start from, the peer translation of each command, and the stream's
//! statistics (mix, trades, rejects, depth). The core is deterministic, so
//! a timed run on a clone of the state at the end of the setup sees exactly
//! what the scratch run saw.

use std::collections::BTreeMap;

use exchange_core::Engine;
use exchange_types::{CancelReason, Command, Event, EventKind, OrderType, Stamped, TimeInForce};

use super::peer::{translate, PeerOp};
use super::tracker::Tracker;

/// Depth and order count are sampled every this many timed commands.
const SAMPLE_EVERY: u64 = 256;

/// Counts over the timed part of a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    pub gtc: u64,
    pub ioc: u64,
    pub fok: u64,
    pub market: u64,
    pub cancel: u64,
    pub replace: u64,
    pub other: u64,
    /// Commands that caused at least one trade.
    pub traded: u64,
    /// Trade events.
    pub trades: u64,
    /// Events of every kind.
    pub events: u64,
    /// Orders (or parts) canceled by self-trade prevention: trades a peer
    /// order book, which has no accounts, makes instead.
    pub self_trade_cancels: u64,
    /// Rejected commands by reason.
    pub rejected: BTreeMap<&'static str, u64>,
    samples: u64,
    bid_levels_sum: u64,
    ask_levels_sum: u64,
    open_orders_sum: u64,
    spread_samples: u64,
    spread_sum: u64,
}

impl StreamStats {
    pub fn total(&self) -> u64 {
        self.gtc + self.ioc + self.fok + self.market + self.cancel + self.replace + self.other
    }

    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }

    /// Fraction of `count` among all timed commands.
    pub fn share(&self, count: u64) -> f64 {
        count as f64 / self.total().max(1) as f64
    }

    /// Mean price levels per side of the first book and mean open orders,
    /// over the timed part.
    pub fn mean_depth(&self) -> (f64, f64, f64) {
        let n = self.samples.max(1) as f64;
        (
            self.bid_levels_sum as f64 / n,
            self.ask_levels_sum as f64 / n,
            self.open_orders_sum as f64 / n,
        )
    }

    /// Mean distance between the best ask and the best bid, in units.
    pub fn mean_spread(&self) -> u64 {
        self.spread_sum / self.spread_samples.max(1)
    }

    fn classify(&mut self, command: &Command) {
        let counter = match command {
            Command::Place(p) => match (p.order_type, p.tif) {
                (OrderType::Market, _) => &mut self.market,
                (OrderType::Limit, TimeInForce::Gtc) => &mut self.gtc,
                (OrderType::Limit, TimeInForce::Ioc) => &mut self.ioc,
                (OrderType::Limit, TimeInForce::Fok) => &mut self.fok,
                (OrderType::Limit, _)
                | (
                    OrderType::Stop
                    | OrderType::StopLimit
                    | OrderType::MarketToLimit
                    | OrderType::MarketIfTouched
                    | OrderType::LimitIfTouched
                    | OrderType::Midpoint,
                    _,
                ) => &mut self.other,
            },
            Command::Cancel(_) => &mut self.cancel,
            Command::Replace(_) | Command::ReplaceStop(_) => &mut self.replace,
            _ => &mut self.other,
        };
        *counter += 1;
    }
}

/// A stream ready to be timed.
pub struct Prepared {
    /// Listing, deposits and book pre-fill: applied before timing starts.
    pub setup: Vec<Stamped>,
    /// The measured commands.
    pub timed: Vec<Stamped>,
    /// Peer translations of `setup` and `timed` (empty without peers).
    #[cfg_attr(
        not(feature = "peer-books"),
        allow(dead_code, reason = "read by the peer books")
    )]
    pub setup_peer: Vec<PeerOp>,
    #[cfg_attr(
        not(feature = "peer-books"),
        allow(dead_code, reason = "read by the peer books")
    )]
    pub timed_peer: Vec<PeerOp>,
    /// The core's state after `setup`.
    pub base: Engine,
    /// `state_hash` after the whole stream, to check the timed runs.
    pub final_hash: String,
    pub stats: StreamStats,
    /// Best bid and ask of the first book at the end, in units.
    pub final_best: (Option<u64>, Option<u64>),
}

/// Whether a command belongs to the untimed setup or to the measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Setup,
    Timed,
}

/// The scratch run that prepares a stream.
pub struct Scratch {
    engine: Engine,
    pub tracker: Tracker,
    events: Vec<Event>,
    with_peers: bool,
    base: Option<Engine>,
    setup: Vec<Stamped>,
    timed: Vec<Stamped>,
    setup_peer: Vec<PeerOp>,
    timed_peer: Vec<PeerOp>,
    stats: StreamStats,
}

impl Scratch {
    pub fn new(with_peers: bool, timed_capacity: usize) -> Self {
        Scratch {
            engine: Engine::new(),
            tracker: Tracker::default(),
            events: Vec::with_capacity(64),
            with_peers,
            base: None,
            setup: Vec::new(),
            timed: Vec::with_capacity(timed_capacity),
            setup_peer: Vec::new(),
            timed_peer: Vec::with_capacity(if with_peers { timed_capacity } else { 0 }),
            stats: StreamStats::default(),
        }
    }

    /// The events of the last command pushed.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Applies one command and records it with its peer translation.
    pub fn push(&mut self, stamped: Stamped, phase: Phase) {
        if phase == Phase::Timed && self.base.is_none() {
            self.base = Some(self.engine.clone());
        }
        self.events.clear();
        self.engine.apply(&stamped, &mut self.events);
        let peer_op = self
            .with_peers
            .then(|| translate(&stamped, &self.events, &self.tracker));
        self.tracker.observe(&self.events);
        match phase {
            Phase::Setup => {
                self.setup.push(stamped);
                self.setup_peer.extend(peer_op);
            }
            Phase::Timed => {
                self.count(&stamped);
                self.timed.push(stamped);
                self.timed_peer.extend(peer_op);
            }
        }
    }

    fn count(&mut self, stamped: &Stamped) {
        let stats = &mut self.stats;
        stats.classify(&stamped.command);
        let trades = self
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Trade(_)))
            .count() as u64;
        stats.trades += trades;
        stats.events += self.events.len() as u64;
        stats.traded += u64::from(trades > 0);
        for event in &self.events {
            match &event.kind {
                EventKind::Rejected(rejected) => {
                    *stats.rejected.entry(rejected.reason.as_str()).or_default() += 1;
                }
                EventKind::Canceled(canceled) if canceled.reason == CancelReason::SelfTrade => {
                    stats.self_trade_cancels += 1;
                }
                _ => {}
            }
        }
        if (stats.total() - 1).is_multiple_of(SAMPLE_EVERY) {
            if let Some(levels) = self.tracker.levels(0) {
                stats.samples += 1;
                stats.bid_levels_sum += levels.bids.len() as u64;
                stats.ask_levels_sum += levels.asks.len() as u64;
                stats.open_orders_sum += self.tracker.open_count() as u64;
                if let (Some(bid), Some(ask)) = (levels.best_bid(), levels.best_ask()) {
                    stats.spread_samples += 1;
                    stats.spread_sum += ask.saturating_sub(bid);
                }
            }
        }
    }

    pub fn finish(self) -> Prepared {
        let final_best = self
            .tracker
            .levels(0)
            .map_or((None, None), |l| (l.best_bid(), l.best_ask()));
        let final_hash = self.engine.state_hash();
        Prepared {
            base: self.base.unwrap_or(self.engine),
            setup: self.setup,
            timed: self.timed,
            setup_peer: self.setup_peer,
            timed_peer: self.timed_peer,
            final_hash,
            stats: self.stats,
            final_best,
        }
    }
}
