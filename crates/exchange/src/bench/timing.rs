//! The measuring loops: one that times every operation into an
//! HdrHistogram, and one with no per-operation clock reads that gives the
//! throughput without the timer's own cost in it. Also peak memory from
//! `/proc/self/status`.

use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};

/// Something that applies operations: our core or a peer order book.
pub trait Subject {
    type Op;
    /// The work being measured.
    fn apply(&mut self, op: &Self::Op);
    /// Bookkeeping after each operation, outside the timed window: clearing
    /// the event buffer, dropping a returned result, counting trades.
    fn after(&mut self) {}
    /// A hint about the next operation, given inside the timed window
    /// before this one's `apply` (the core's [`exchange_core::Engine::prefetch`];
    /// the peer books take none).
    fn prefetch(&self, _next: &Self::Op) {}
}

/// Latency distribution of one timed pass.
pub struct Timed {
    pub histogram: Histogram<u64>,
    /// The whole timed loop, clock reads included.
    pub span: Span,
}

/// Wall time of a loop and how much of it this thread spent on a CPU.
/// The machine is shared (and virtual), so the difference tells a slow
/// run from a preempted one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Span {
    pub wall: Duration,
    pub on_cpu: Duration,
}

impl Span {
    /// Share of the wall time the thread was not running: waiting for a
    /// CPU, or its virtual CPU not running at all.
    pub fn off_cpu_share(&self) -> f64 {
        let wall = self.wall.as_secs_f64();
        if wall <= 0.0 {
            return 0.0;
        }
        (1.0 - self.on_cpu.as_secs_f64() / wall).max(0.0)
    }
}

/// Nanoseconds this thread has run, from `/proc/thread-self/schedstat`;
/// zero where the kernel does not say.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|f| f.parse().ok()))
        .unwrap_or(0)
}

/// Measures `f` as a [`Span`].
fn span(f: impl FnOnce()) -> Span {
    let cpu0 = cpu_ns();
    let start = Instant::now();
    f();
    let wall = start.elapsed();
    let cpu1 = cpu_ns();
    Span {
        wall,
        on_cpu: Duration::from_nanos(cpu1.saturating_sub(cpu0)),
    }
}

/// Progress is reported every this many operations, so the bar costs
/// nothing measurable.
const PROGRESS_EVERY: usize = 1 << 16;

pub fn progress_bar(len: usize, label: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    let style =
        ProgressStyle::with_template("{prefix:>22} [{bar:40}] {human_pos}/{human_len}, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(label.to_owned());
    bar
}

/// Runs every op with a clock read before and after it.
pub fn run_timed<S: Subject>(subject: &mut S, ops: &[S::Op], label: &str) -> anyhow::Result<Timed> {
    // 1 ns to 10 s at 3 significant figures; anything slower saturates.
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3)
        .context("creating the latency histogram")?;
    let bar = progress_bar(ops.len(), label);
    let span = span(|| {
        for (i, op) in ops.iter().enumerate() {
            let t0 = Instant::now();
            if let Some(next) = ops.get(i + 1) {
                subject.prefetch(next);
            }
            subject.apply(op);
            let t1 = Instant::now();
            subject.after();
            let ns = u64::try_from(t1.duration_since(t0).as_nanos()).unwrap_or(u64::MAX);
            histogram.saturating_record(ns.max(1));
            if i.is_multiple_of(PROGRESS_EVERY) {
                bar.set_position(i as u64);
            }
        }
    });
    bar.finish_and_clear();
    Ok(Timed { histogram, span })
}

/// Runs every op with no clock read inside the loop.
pub fn run_untimed<S: Subject>(subject: &mut S, ops: &[S::Op], label: &str) -> Span {
    let bar = progress_bar(ops.len(), label);
    let span = span(|| {
        for (i, op) in ops.iter().enumerate() {
            if let Some(next) = ops.get(i + 1) {
                subject.prefetch(next);
            }
            subject.apply(op);
            subject.after();
            if i.is_multiple_of(PROGRESS_EVERY) {
                bar.set_position(i as u64);
            }
        }
    });
    bar.finish_and_clear();
    span
}

/// Applies ops with no measurement at all (book pre-fill).
#[cfg(feature = "peer-books")]
pub fn run_setup<S: Subject>(subject: &mut S, ops: &[S::Op]) {
    for op in ops {
        subject.apply(op);
        subject.after();
    }
}

/// Median cost of one `Instant::now()` pair, which every timed sample
/// includes; reported so readers can judge the floor of the histogram.
pub fn clock_overhead_ns() -> u64 {
    let mut samples: Vec<u64> = (0..10_001)
        .map(|_| {
            let t0 = Instant::now();
            let t1 = Instant::now();
            u64::try_from(t1.duration_since(t0).as_nanos()).unwrap_or(u64::MAX)
        })
        .collect();
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// What the host itself did to a thread with nothing to do but read the
/// clock: the longest gap between two reads, and how many gaps passed
/// 100 µs. On a shared virtual machine the hypervisor and the kernel take
/// the CPU away for hundreds of microseconds at a time with no context
/// switch the guest sees, so a subject's max is judged beside the
/// probe's (docs/benchmarking.md, *Timing*).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostGaps {
    pub seconds: f64,
    pub max_gap_ns: u64,
    pub gaps_over_100us: u64,
}

/// Reads the clock in a loop for `duration` and keeps its gaps.
pub fn host_gaps(duration: Duration) -> HostGaps {
    let start = Instant::now();
    let mut last = start;
    let mut gaps = HostGaps::default();
    while last.duration_since(start) < duration {
        let now = Instant::now();
        gaps.record(now.duration_since(last));
        last = now;
    }
    gaps.seconds = last.duration_since(start).as_secs_f64();
    gaps
}

impl HostGaps {
    fn record(&mut self, gap: Duration) {
        let ns = u64::try_from(gap.as_nanos()).unwrap_or(u64::MAX);
        self.max_gap_ns = self.max_gap_ns.max(ns);
        if ns > 100_000 {
            self.gaps_over_100us += 1;
        }
    }
}

/// Resident-set figures of this process, from `/proc/self/status`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident set when the subject was built.
    pub rss_before: u64,
    /// Peak resident set (VmHWM) from then until the end of its passes.
    pub peak: u64,
}

/// Resets the kernel's peak-RSS mark to the current RSS so the next
/// reading covers only what runs after it. Best effort: if the kernel
/// refuses, the peak is the process's peak so far, which only overstates.
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `(VmRSS, VmHWM)` in bytes.
pub fn rss() -> anyhow::Result<(u64, u64)> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} missing from /proc/self/status"))?;
        let kib: u64 = line
            .trim_start_matches(name)
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .with_context(|| format!("unreadable {name} line: {line:?}"))?;
        Ok(kib * 1024)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_gaps_keep_the_longest_and_count_those_over_100_us() {
        let mut gaps = HostGaps::default();
        for us in [5, 150, 40, 2_000, 100] {
            gaps.record(Duration::from_micros(us));
        }
        assert_eq!(gaps.max_gap_ns, 2_000_000);
        assert_eq!(gaps.gaps_over_100us, 2);
    }

    #[test]
    fn the_probe_reads_the_clock_for_as_long_as_asked() {
        let gaps = host_gaps(Duration::from_millis(20));
        assert!(gaps.seconds >= 0.020, "{gaps:?}");
        assert!(gaps.max_gap_ns > 0, "{gaps:?}");
        assert!(gaps.max_gap_ns as f64 <= gaps.seconds * 1e9, "{gaps:?}");
    }
}
