//! The scheduler: on the leader, logs the `set_phase` commands the
//! trading-day schedules call for ([`crate::schedule`]) and a periodic
//! `tick` so that what falls due with time alone happens without traffic.
//!
//! It keeps no state of its own worth keeping. Every round it reads the
//! phase the core has each scheduled instrument in ([`crate::reads::Phases`])
//! and logs one step from there towards the phase the schedule gives for
//! now, reads the phase again once the step is applied, and so on. The
//! core's phase, not the one last asked for, is what counts: the core
//! also moves by itself (an opening or closing auction settles in
//! continuous trading or post-close within the command that asked for
//! it; a resume reopens into continuous trading; a volatility
//! interruption comes and goes), so a step the core already made is
//! never logged, and none it has not made is skipped. While an instrument
//! is halted or in a volatility auction the schedule waits: those phases
//! are the operator's and the core's to end. A new leader therefore picks
//! up where the old one stopped: what
//! the old one logged is applied before this node counts as settled, so
//! nothing is sent twice, and a leader that was down across a change (or
//! several) still sends every step in between, so an open missed by a
//! minute still runs its opening call and auction.
//!
//! The log's clock, not the schedule, stamps each command (the Raft thread
//! stamps every entry with its own never-decreasing clock when it proposes
//! it): a change is logged at, or a poll interval after, its scheduled
//! instant, and a late one is stamped when it was actually logged, which
//! is when the core acts on it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use exchange_types::{Command, Phase, Stamped, Symbol};
use tokio::sync::watch;

use crate::entry::LogEntry;
use crate::schedule::{steps, Schedule, DAY_CYCLE};
use crate::sequencer::{Handle, SubmitError};

/// Where the scheduler gets the time of day from.
pub trait Clock: Send + Sync + 'static {
    /// Unix nanoseconds.
    fn now_ns(&self) -> u64;
}

/// The host's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos() as u64)
            .unwrap_or_default()
    }
}

/// A clock set by hand, for tests that cross a trading day in moments.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new(now_ns: u64) -> Self {
        ManualClock(AtomicU64::new(now_ns))
    }

    pub fn set(&self, now_ns: u64) {
        self.0.store(now_ns, Ordering::Release);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// What the scheduler runs with.
pub struct SchedulerConfig {
    pub schedules: Vec<Schedule>,
    /// Log a `tick` when nothing else was logged for this long; `None`:
    /// never.
    pub tick_interval: Option<Duration>,
    /// How often the schedules are compared with the log's phases: the
    /// most a change is logged after its instant.
    pub poll: Duration,
}

/// Runs the scheduler until `stop` turns true or the node fails. Every
/// node runs one; it does nothing while its node does not lead.
pub fn spawn(
    handle: Handle,
    config: SchedulerConfig,
    clock: Arc<dyn Clock>,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut unlisted = BTreeSet::new();
        let mut last_tick = Instant::now();
        let mut commands_then = handle.metrics.commands.load(Ordering::Relaxed);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(config.poll) => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() || !handle.is_healthy() {
                return;
            }
            // Until a new leader has applied what its predecessors
            // committed, its phases may be behind the log's.
            if !handle.is_leader() || !handle.settled() {
                continue;
            }
            if !config.schedules.is_empty() {
                let now = clock.now_ns();
                if let Err(error) = round(&handle, &config.schedules, now, &mut unlisted).await {
                    tracing::debug!(%error, "scheduler round stopped; the next one resumes it");
                    continue;
                }
            }
            if let Some(interval) = config.tick_interval {
                if last_tick.elapsed() >= interval {
                    let commands = handle.metrics.commands.load(Ordering::Relaxed);
                    // Anything logged since the last look carried the time
                    // as well as a tick would have.
                    if commands == commands_then {
                        let _ = handle.submit(core(Command::Tick)).await;
                    }
                    commands_then = handle.metrics.commands.load(Ordering::Relaxed);
                    last_tick = Instant::now();
                }
            }
        }
    })
}

fn core(command: Command) -> LogEntry {
    // The Raft thread stamps the time when it proposes the entry.
    LogEntry::Core(Stamped { ts: 0, command })
}

/// The next `set_phase` that takes an instrument the core has in
/// `current` towards `due`, if any.
pub fn next_step(current: Phase, due: Phase) -> Option<Phase> {
    steps(current, due).first().copied()
}

/// Logs, for every scheduled instrument, the steps from the core's phase
/// to the schedule's phase at `now`, one at a time.
async fn round(
    handle: &Handle,
    schedules: &[Schedule],
    now: u64,
    unlisted: &mut BTreeSet<String>,
) -> Result<(), SubmitError> {
    let view = handle.phases().await?;
    for schedule in schedules {
        let due = schedule.position(now).phase;
        for name in &schedule.symbols {
            let Ok(symbol) = Symbol::new(name) else {
                continue;
            };
            if !view.listed.contains(&symbol) {
                if unlisted.insert(name.clone()) {
                    tracing::warn!(
                        schedule = %schedule.name,
                        symbol = %name,
                        "scheduled instrument is not listed; it is skipped until it is"
                    );
                }
                continue;
            }
            unlisted.remove(name);
            let mut current = view.phases.get(&symbol).copied();
            // A day has fewer steps than this; the bound only guards against
            // a core that keeps refusing without changing phase.
            for _ in 0..DAY_CYCLE.len() {
                let Some(phase) = current.and_then(|c| next_step(c, due)) else {
                    break;
                };
                handle
                    .submit(core(Command::SetPhase { symbol, phase }))
                    .await?;
                tracing::info!(
                    schedule = %schedule.name,
                    symbol = %name,
                    phase = phase.as_str(),
                    "phase set"
                );
                let now_in = handle.phases().await?.phases.get(&symbol).copied();
                if now_in == current {
                    // Refused (someone else moved it first, or the core
                    // would not): the next round looks again.
                    tracing::debug!(
                        symbol = %name,
                        phase = phase.as_str(),
                        "phase step changed nothing"
                    );
                    break;
                }
                current = now_in;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core_state::CoreState;

    fn entry(ts: u64, line: &str) -> LogEntry {
        let mut stamped: Stamped = exchange_codec::decode_command(line).expect("command");
        stamped.ts = ts;
        LogEntry::Core(stamped)
    }

    const LIST: &str = concat!(
        r#"{"cmd":"add_instrument","symbol":"SAP-EUR","base":"SAP","quote":"EUR","#,
        r#""tick_size":"0.01","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0}"#,
    );

    /// The scheduler reads the core's phase: an auction phase it asks for
    /// settles at once, so the next step starts from where the core went,
    /// and a halt (the operator's) stops the schedule.
    #[test]
    fn steps_start_from_the_phase_the_core_is_in() {
        let mut core = CoreState::new();
        core.apply(1, &entry(1, LIST));
        let symbol = Symbol::new("SAP-EUR").unwrap();
        let phase_of = |core: &CoreState| {
            core.state
                .engine
                .instruments()
                .iter()
                .find(|i| i.symbol == symbol)
                .map(|i| i.phase)
                .unwrap()
        };
        let mut index = 1;
        let mut walk = |core: &mut CoreState, due: Phase| {
            let mut logged = Vec::new();
            while let Some(phase) = next_step(phase_of(core), due) {
                index += 1;
                core.apply(
                    index,
                    &LogEntry::Core(Stamped {
                        ts: index,
                        command: Command::SetPhase { symbol, phase },
                    }),
                );
                logged.push(phase);
                assert!(logged.len() <= DAY_CYCLE.len());
            }
            logged
        };
        assert_eq!(
            walk(&mut core, Phase::PreOpen),
            [
                Phase::ClosingCall,
                Phase::ClosingAuction,
                Phase::Closed,
                Phase::PreOpen
            ]
        );
        // The opening auction settles in continuous trading by itself: no
        // `continuous` is logged after it.
        assert_eq!(walk(&mut core, Phase::Continuous), [Phase::OpeningAuction]);
        assert_eq!(phase_of(&core), Phase::Continuous);
        core.apply(
            100,
            &LogEntry::Core(Stamped {
                ts: 100,
                command: Command::Halt { symbol },
            }),
        );
        assert_eq!(walk(&mut core, Phase::PostClose), Vec::<Phase>::new());
        assert_eq!(phase_of(&core), Phase::Halted);
        assert_eq!(next_step(Phase::VolatilityAuction, Phase::PostClose), None);
    }

    #[test]
    fn a_manual_clock_reads_what_it_was_set_to() {
        let clock = ManualClock::new(5);
        assert_eq!(clock.now_ns(), 5);
        clock.set(9);
        assert_eq!(clock.now_ns(), 9);
        assert!(SystemClock.now_ns() > 1_700_000_000_000_000_000);
    }
}
