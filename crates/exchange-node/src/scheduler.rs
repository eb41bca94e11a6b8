//! The scheduler: on the leader, logs the `set_phase` commands the
//! trading-day schedules call for ([`crate::schedule`]) and a periodic
//! `tick` so that what falls due with time alone happens without traffic.
//!
//! It keeps no state of its own worth keeping. Every round it reads the
//! phase the log last set for each scheduled instrument
//! ([`crate::state::ServerState::phases`]) and logs the steps from there to
//! the phase the schedule gives for now, each applied before the next is
//! sent. A new leader therefore picks up where the old one stopped: what
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
use crate::schedule::{steps, Schedule};
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

/// Logs, for every scheduled instrument, the steps from the phase the log
/// last set (continuous if none: an instrument's phase before any
/// schedule) to the schedule's phase at `now`.
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
            let current = view
                .phases
                .get(&symbol)
                .copied()
                .unwrap_or(Phase::Continuous);
            for phase in steps(current, due) {
                handle
                    .submit(core(Command::SetPhase { symbol, phase }))
                    .await?;
                tracing::info!(schedule = %schedule.name, symbol = %name, phase = phase.as_str(), "phase set");
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

    const LIST: &str = r#"{"cmd":"add_instrument","symbol":"SAP-EUR","base":"SAP","quote":"EUR","tick_size":"0.01","lot_size":"1","maker_fee_bps":0,"taker_fee_bps":0}"#;

    /// The phase the log last set is replicated state: in the hash and the
    /// snapshot once set, and absent from both (as before schedules
    /// existed) until then.
    #[test]
    fn logged_phases_are_kept_through_a_snapshot_and_hashed() {
        let mut core = CoreState::new();
        core.apply(1, &entry(1, LIST));
        let before = core.state.state_hash();
        let symbol = Symbol::new("SAP-EUR").unwrap();
        assert!(core.state.phases.is_empty());
        let set = |phase: Phase| {
            LogEntry::Core(Stamped {
                ts: 2,
                command: Command::SetPhase { symbol, phase },
            })
        };
        core.apply(2, &set(Phase::PreOpen));
        core.apply(3, &set(Phase::OpeningAuction));
        assert_eq!(core.state.phases.get(&symbol), Some(&Phase::OpeningAuction));
        assert_ne!(core.state.state_hash(), before);
        let restored = CoreState::restore(&core.snapshot()).expect("restore");
        assert_eq!(restored.state.phases, core.state.phases);
        assert_eq!(restored.state.state_hash(), core.state.state_hash());
        // Without any set_phase the replicated bytes are as before.
        let mut plain = CoreState::new();
        plain.apply(1, &entry(1, LIST));
        plain.apply(2, &entry(2, r#"{"cmd":"tick"}"#));
        let bytes = plain.snapshot();
        assert!(!bytes.windows(6).any(|w| w == b"phases"));
        assert!(core.snapshot().windows(6).any(|w| w == b"phases"));
        let restored = CoreState::restore(&bytes).expect("restore");
        assert!(restored.state.phases.is_empty());
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
