//! `serve --demo` runs a stock exchange: in-process, the demo's own
//! configuration (the crypto pairs plus the equities `--demo` adds, on
//! their eight-minute cycle), the scheduler on a clock the test moves from
//! one of the cycle's changes to the next, and the demo's market maker and
//! takers running as they do in the server.
//!
//! Read from the core's events: the equity is closed, a `set_phase` opens
//! its call, the takers' orders cross and an indicative price is
//! published, the opening auction uncrosses with trades, continuous
//! trading has trades of its own, and the closing call and auction follow
//! likewise. Through all of it the crypto pairs trade and never change
//! phase. The demo's bots are random and run on real time, so each stage
//! waits (a bounded time) for what it needs instead of asserting on time.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use exchange_node::config::Config;
use exchange_node::instruments::ensure_instruments;
use exchange_node::master_key::MasterKey;
use exchange_node::recovery;
use exchange_node::schedule::Schedule;
use exchange_node::scheduler::{self, ManualClock};
use exchange_node::{Applied, Pipeline, PipelineConfig};
use exchange_types::{AuctionKind, EventKind, Phase};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;

/// The equity followed; its session starts a cycle at the epoch.
const EQUITY: &str = "NRDL-EUR";
const CRYPTO: [&str; 2] = ["BTC-USD", "ETH-USD"];
/// The longest any one stage may take: the takers send an order every
/// 0.3 to 2 s on one of five instruments.
const STAGE: Duration = Duration::from_secs(90);

fn open(dir: &Path) -> Pipeline {
    let config = PipelineConfig {
        submit_queue: 4_096,
        core_queue: 64,
        events_buffer: 1 << 16,
        snapshot_every: 0,
        snapshot_dir: recovery::snapshot_dir(dir),
        master_key: MasterKey::from_bytes([3; 32]),
    };
    recovery::start(dir, config).expect("start the pipeline").0
}

/// What the test has seen of the core's events so far.
struct Tape {
    events: broadcast::Receiver<Arc<Applied>>,
    /// Trades of each crypto pair.
    crypto_trades: BTreeMap<&'static str, usize>,
    /// Phase events of a crypto pair: there must be none.
    crypto_phases: Vec<String>,
}

impl Tape {
    fn crypto_total(&self) -> usize {
        self.crypto_trades.values().sum()
    }

    fn note(&mut self, applied: &Applied) {
        for event in &applied.events {
            let symbol = match &event.kind {
                EventKind::Trade(trade) => trade.symbol,
                EventKind::Phase(phase) => {
                    if CRYPTO.contains(&phase.symbol.as_str()) {
                        self.crypto_phases.push(format!(
                            "{} {}",
                            phase.symbol,
                            phase.phase.as_str()
                        ));
                    }
                    continue;
                }
                _ => continue,
            };
            if let Some(name) = CRYPTO.iter().find(|c| **c == symbol.as_str()) {
                *self.crypto_trades.entry(name).or_default() += 1;
            }
        }
    }

    /// Reads applied entries until `found` picks something out of one.
    async fn until<T>(&mut self, what: &str, mut found: impl FnMut(&Applied) -> Option<T>) -> T {
        let deadline = Instant::now() + STAGE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let applied = match tokio::time::timeout(left, self.events.recv()).await {
                Err(_) => panic!("no {what} within {STAGE:?}"),
                Ok(Ok(applied)) => applied,
                Ok(Err(RecvError::Lagged(missed))) => {
                    panic!("the test fell {missed} entries behind the core")
                }
                Ok(Err(RecvError::Closed)) => panic!("the pipeline stopped"),
            };
            self.note(&applied);
            if let Some(value) = found(&applied) {
                return value;
            }
        }
    }

    /// Waits, if need be, for a crypto trade after the `before`-th.
    async fn crypto_trade_after(&mut self, before: usize, stage: &str) {
        while self.crypto_total() <= before {
            let what = format!("crypto trade while the equity is {stage}");
            self.until(&what, |applied| {
                applied.events.iter().find_map(|e| match &e.kind {
                    EventKind::Trade(t) if CRYPTO.contains(&t.symbol.as_str()) => Some(()),
                    _ => None,
                })
            })
            .await;
        }
    }

    /// Waits for the equity to enter `phase` by a `set_phase`.
    async fn set_phase(&mut self, phase: Phase) {
        let what = format!("set_phase {} for {EQUITY}", phase.as_str());
        self.until(&what, |applied| {
            (applied.command == "set_phase"
                && applied.events.iter().any(|e| {
                    matches!(&e.kind, EventKind::Phase(p)
                        if p.symbol.as_str() == EQUITY && p.phase == phase)
                }))
            .then_some(())
        })
        .await;
    }

    /// Waits for an indicative price with volume for the equity: the
    /// takers' auction orders crossed the book.
    async fn indicative(&mut self) -> (u64, u64) {
        self.until("indicative price with volume", |applied| {
            applied.events.iter().find_map(|e| match &e.kind {
                EventKind::Indicative(i) if i.symbol.as_str() == EQUITY && i.volume > 0 => {
                    i.price.map(|price| (price, i.volume))
                }
                _ => None,
            })
        })
        .await
    }

    /// Waits for the equity's auction of `kind`, and returns its volume
    /// and how many trades it printed.
    async fn auction(&mut self, kind: AuctionKind) -> (u64, usize) {
        let what = format!("{} auction with trades", kind.as_str());
        self.until(&what, |applied| {
            let volume = applied.events.iter().find_map(|e| match &e.kind {
                EventKind::Auction(a) if a.symbol.as_str() == EQUITY && a.kind == kind => {
                    Some(a.volume)
                }
                _ => None,
            })?;
            Some((volume, equity_trades(applied)))
        })
        .await
    }
}

fn equity_trades(applied: &Applied) -> usize {
    applied
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Trade(t) if t.symbol.as_str() == EQUITY))
        .count()
}

/// The next change of `schedule` after `at`, checked to start `phase`.
fn next_change(schedule: &Schedule, at: u64, phase: Phase) -> u64 {
    let (next, starts) = schedule.position(at).next.expect("a cycle always goes on");
    assert_eq!(
        starts,
        phase,
        "the demo's day goes on with {}",
        phase.as_str()
    );
    next
}

/// The demo as `serve --demo` runs it, with the scheduler on `clock`.
struct Demo {
    pipeline: Pipeline,
    tape: Tape,
    clock: Arc<ManualClock>,
    /// The equity's schedule.
    session: Schedule,
    stop: watch::Sender<bool>,
    scheduler: tokio::task::JoinHandle<()>,
}

/// Lists the demo's instruments and starts its scheduler at `now` and its
/// bots.
async fn start(dir: &Path, now: u64) -> Demo {
    let mut config = Config {
        data_dir: dir.into(),
        ..Config::default()
    };
    exchange_demo::configure(&mut config);
    let pipeline = open(dir);
    let handle = pipeline.handle.clone();
    let tape = Tape {
        events: handle.subscribe(),
        crypto_trades: BTreeMap::new(),
        crypto_phases: Vec::new(),
    };
    ensure_instruments(&handle, &config.instruments)
        .await
        .expect("list");
    let mut scheduling = config.scheduler().expect("the demo's schedules");
    scheduling.poll = Duration::from_millis(20);
    let session = scheduling
        .schedules
        .iter()
        .find(|s| s.symbols.iter().any(|symbol| symbol == EQUITY))
        .expect("the equity is scheduled")
        .clone();
    let clock = Arc::new(ManualClock::new(now));
    let (stop, stopping) = watch::channel(false);
    let scheduler = scheduler::spawn(handle.clone(), scheduling, clock.clone(), stopping.clone());
    exchange_demo::start(handle, dir, &config, stopping)
        .await
        .expect("the demo starts");
    Demo {
        pipeline,
        tape,
        clock,
        session,
        stop,
        scheduler,
    }
}

impl Demo {
    /// Moves the clock to the change after `at`, which starts `phase`.
    fn advance(&self, at: u64, phase: Phase) -> u64 {
        let next = next_change(&self.session, at, phase);
        self.clock.set(next);
        next
    }

    /// Checks the crypto pairs and the core, and stops everything.
    async fn finish(self) {
        let mut tape = self.tape;
        // The takers send an order every 0.3-2 s, on an instrument drawn at
        // random: on a loaded machine the equity's day can pass before a
        // pair's first trade, which is still to come (and the test fails if
        // it does not come within a stage).
        for pair in CRYPTO {
            if tape.crypto_trades.get(pair).copied().unwrap_or(0) == 0 {
                let what = format!("trade of {pair}");
                tape.until(&what, |applied| {
                    applied
                        .events
                        .iter()
                        .any(
                            |e| matches!(&e.kind, EventKind::Trade(t) if t.symbol.as_str() == pair),
                        )
                        .then_some(())
                })
                .await;
            }
        }
        assert!(
            tape.crypto_phases.is_empty(),
            "the crypto pairs changed phase: {:?}",
            tape.crypto_phases
        );
        let handle = self.pipeline.handle.clone();
        for (symbol, phase) in handle.phases().await.expect("phases").phases {
            if CRYPTO.contains(&symbol.as_str()) {
                assert_eq!(phase, Phase::Continuous, "{symbol}");
            }
        }
        handle
            .audit()
            .await
            .expect("audit")
            .expect("the core's invariants hold");
        drop(handle);
        self.stop.send_replace(true);
        self.scheduler.await.expect("the scheduler stops");
        let pipeline = self.pipeline;
        tokio::time::timeout(
            Duration::from_secs(10),
            tokio::task::spawn_blocking(move || pipeline.join()),
        )
        .await
        .expect("the pipeline stops once the demo lets go of it")
        .expect("join");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_runs_an_equity_day_beside_round_the_clock_crypto() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 2026-12-01T00:00:00Z starts a cycle; a second before, it is closed.
    let midnight = 1_796_083_200 * 1_000_000_000u64;
    let mut demo = start(dir.path(), midnight - 1).await;
    let tape = &mut demo.tape;
    // Listed continuous, the equity is taken through an (empty) close.
    tape.set_phase(Phase::Closed).await;
    tape.crypto_trade_after(0, "closed").await;

    let mark = demo.tape.crypto_total();
    let pre_open = demo.advance(midnight - 1, Phase::PreOpen);
    assert_eq!(pre_open, midnight);
    let tape = &mut demo.tape;
    tape.set_phase(Phase::PreOpen).await;
    let (price, volume) = tape.indicative().await;
    assert!(price > 0 && volume > 0);
    tape.crypto_trade_after(mark, "in its opening call").await;

    let mark = demo.tape.crypto_total();
    let open = demo.advance(pre_open, Phase::Continuous);
    let tape = &mut demo.tape;
    let (volume, trades) = tape.auction(AuctionKind::Open).await;
    assert!(volume > 0 && trades > 0, "the opening auction traded");
    // Continuous trading: the takers' orders trade on arrival.
    tape.until("continuous trade of the equity", |applied| {
        (applied.command == "place" && equity_trades(applied) > 0).then_some(())
    })
    .await;
    tape.crypto_trade_after(mark, "trading continuously").await;

    let mark = demo.tape.crypto_total();
    let closing_call = demo.advance(open, Phase::ClosingCall);
    demo.tape.set_phase(Phase::ClosingCall).await;
    demo.tape.indicative().await;
    demo.advance(closing_call, Phase::PostClose);
    let (volume, trades) = demo.tape.auction(AuctionKind::Close).await;
    assert!(volume > 0 && trades > 0, "the closing auction traded");
    demo.tape
        .crypto_trade_after(mark, "in its closing call and auction")
        .await;
    demo.finish().await;
}
