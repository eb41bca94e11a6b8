//! The bench's output: a table for people, one JSON object for scripts.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::peer::PeerSummary;
use super::stream::StreamStats;
use super::timing::{HostGaps, Memory, Span, Timed};

/// One subject's figures.
pub struct Figures {
    pub name: String,
    pub ops: u64,
    /// Throughput of the loop without per-operation clock reads: the
    /// median of its passes.
    pub ops_per_sec: f64,
    /// Each throughput pass's, in the order they ran.
    pub pass_ops_per_sec: Vec<f64>,
    /// The same loop's operations per second actually spent on a CPU.
    pub ops_per_cpu_sec: f64,
    /// Share of that loop's wall time the thread was not on a CPU.
    pub off_cpu: f64,
    /// The same for the latency loop, whose tail such gaps lengthen.
    pub timed_off_cpu: f64,
    /// Throughput of the latency loop, clock reads included.
    pub timed_ops_per_sec: f64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub p9999_ns: u64,
    pub max_ns: u64,
    pub memory: Memory,
    pub peer: Option<PeerSummary>,
}

impl Figures {
    /// `passes` are the subject's throughput passes; its figures are
    /// those of the median pass by wall time (of two middle ones, the
    /// slower).
    pub fn new(
        name: &str,
        timed: &Timed,
        passes: &[Span],
        memory: Memory,
        peer: Option<PeerSummary>,
    ) -> Self {
        let h = &timed.histogram;
        let ops = h.len();
        let per_sec = |d: Duration| ops as f64 / d.as_secs_f64().max(1e-9);
        let mut by_wall = passes.to_vec();
        by_wall.sort_by_key(|pass| pass.wall);
        let median = by_wall.get(by_wall.len() / 2).copied().unwrap_or_default();
        Figures {
            name: name.to_owned(),
            ops,
            ops_per_sec: per_sec(median.wall),
            pass_ops_per_sec: passes.iter().map(|pass| per_sec(pass.wall)).collect(),
            ops_per_cpu_sec: per_sec(median.on_cpu),
            off_cpu: median.off_cpu_share(),
            timed_off_cpu: timed.span.off_cpu_share(),
            timed_ops_per_sec: per_sec(timed.span.wall),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            p9999_ns: h.value_at_quantile(0.9999),
            max_ns: h.max(),
            memory,
            peer,
        }
    }

    fn to_json(&self) -> Value {
        let mut value = json!({
            "name": self.name,
            "ops": self.ops,
            "ops_per_sec": self.ops_per_sec.round(),
            "pass_ops_per_sec": self.pass_ops_per_sec.iter().map(|x| x.round()).collect::<Vec<_>>(),
            "ops_per_cpu_sec": self.ops_per_cpu_sec.round(),
            "off_cpu_fraction": (self.off_cpu * 1000.0).round() / 1000.0,
            "latency_loop_off_cpu_fraction": (self.timed_off_cpu * 1000.0).round() / 1000.0,
            "timed_loop_ops_per_sec": self.timed_ops_per_sec.round(),
            "mean_ns": (self.mean_ns * 10.0).round() / 10.0,
            "p50_ns": self.p50_ns,
            "p99_ns": self.p99_ns,
            "p999_ns": self.p999_ns,
            "p9999_ns": self.p9999_ns,
            "max_ns": self.max_ns,
            "peak_rss_bytes": self.memory.peak,
            "rss_before_bytes": self.memory.rss_before,
        });
        if let (Some(peer), Some(map)) = (&self.peer, value.as_object_mut()) {
            map.insert("traded_ops".into(), json!(peer.traded_ops));
            map.insert("errors".into(), json!(peer.errors));
            map.insert("missing".into(), json!(peer.missing));
            map.insert("best_bid".into(), json!(peer.best_bid));
            map.insert("best_ask".into(), json!(peer.best_ask));
        }
        value
    }
}

pub struct Report<'a> {
    pub seed: Option<u64>,
    pub source: Option<String>,
    pub setup_commands: usize,
    /// Memory held by the prepared commands themselves (in every RSS).
    pub command_bytes: usize,
    pub stats: &'a StreamStats,
    pub final_best: (Option<u64>, Option<u64>),
    pub clock_overhead_ns: u64,
    /// The host's own gaps, probed after the passes.
    pub host: HostGaps,
    pub ours: Figures,
    pub peers: Vec<Figures>,
}

/// Our figures at the top level (the keys scripts read), the workload and
/// the peers beside them.
pub fn json(report: &Report) -> Value {
    let s = report.stats;
    let (bid_levels, ask_levels, open_orders) = s.mean_depth();
    let mut top = report.ours.to_json();
    if let Some(map) = top.as_object_mut() {
        map.insert(
            "workload".into(),
            json!({
                "seed": report.seed,
                "commands_file": report.source,
                "setup_commands": report.setup_commands,
                "timed_commands": s.total(),
                "gtc": s.gtc, "ioc": s.ioc, "fok": s.fok, "market": s.market,
                "cancel": s.cancel, "replace": s.replace, "other": s.other,
                "traded_commands": s.traded,
                "traded_fraction": s.share(s.traded),
                "trades": s.trades,
                "events_per_command": s.events as f64 / s.total().max(1) as f64,
                "rejected": s.rejected_total(),
                "self_trade_cancels": s.self_trade_cancels,
                "rejected_by_reason": s.rejected,
                "mean_bid_levels": bid_levels.round(),
                "mean_ask_levels": ask_levels.round(),
                "mean_open_orders": open_orders.round(),
                "mean_spread": exchange_types::format_units(s.mean_spread()),
                "command_buffer_bytes": report.command_bytes,
                "clock_overhead_ns": report.clock_overhead_ns,
            }),
        );
        map.insert(
            "host_probe".into(),
            json!({
                "seconds": report.host.seconds,
                "max_gap_ns": report.host.max_gap_ns,
                "gaps_over_100us": report.host.gaps_over_100us,
            }),
        );
        map.insert(
            "peers".into(),
            Value::Array(report.peers.iter().map(Figures::to_json).collect()),
        );
    }
    top
}

fn price(units: Option<u64>) -> String {
    units.map_or_else(|| "-".to_owned(), exchange_types::format_units)
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn micros(ns: u64) -> String {
    if ns >= 10_000 {
        format!("{:.1} µs", ns as f64 / 1000.0)
    } else {
        format!("{ns} ns")
    }
}

/// What was timed: where the commands came from, their mix, what they
/// did to the book, and what every figure includes.
fn workload_lines(report: &Report, out: &mut String) {
    let s = report.stats;
    let origin = match (&report.source, report.seed) {
        (Some(path), _) => format!("commands from {path}"),
        (None, Some(seed)) => format!("standard workload, seed {seed}"),
        (None, None) => "standard workload".to_owned(),
    };
    let _ = writeln!(
        out,
        "exchange bench engine: {origin}; {} timed commands after {} untimed setup commands",
        s.total(),
        report.setup_commands
    );
    let _ = writeln!(
        out,
        "mix: GTC {}  IOC {}  FOK {}  market {}  cancel {}  replace {}  other {}",
        pct(s.share(s.gtc)),
        pct(s.share(s.ioc)),
        pct(s.share(s.fok)),
        pct(s.share(s.market)),
        pct(s.share(s.cancel)),
        pct(s.share(s.replace)),
        pct(s.share(s.other))
    );
    let _ = writeln!(
        out,
        "trading: {} of commands traded ({} trades, {} self-trade cancels); {:.2} events per \
         command; rejected: {} {:?}",
        pct(s.share(s.traded)),
        s.trades,
        s.self_trade_cancels,
        s.events as f64 / s.total().max(1) as f64,
        s.rejected_total(),
        s.rejected
    );
    let (bid_levels, ask_levels, open_orders) = s.mean_depth();
    let _ = writeln!(
        out,
        "book: mean {bid_levels:.0} bid / {ask_levels:.0} ask levels, \
         {open_orders:.0} open orders, spread {}; final best bid {} / ask {}",
        price(Some(s.mean_spread())),
        price(report.final_best.0),
        price(report.final_best.1)
    );
    let _ = writeln!(
        out,
        "each latency sample includes one Instant::now() pair (~{} ns); the prepared commands \
         take {} of every RSS figure",
        report.clock_overhead_ns,
        mib(report.command_bytes as u64)
    );
}

/// Every throughput pass, so that a reader sees the spread the median
/// came from.
fn pass_lines(report: &Report, out: &mut String) {
    for f in std::iter::once(&report.ours).chain(&report.peers) {
        let passes: Vec<String> = f
            .pass_ops_per_sec
            .iter()
            .map(|x| format!("{:.2} M", x / 1e6))
            .collect();
        let _ = writeln!(
            out,
            "{}: throughput passes (ops/s, in turn with the other subjects) {}",
            f.name,
            passes.join(", ")
        );
    }
}

pub fn text(report: &Report) -> String {
    let s = report.stats;
    let mut out = String::new();
    workload_lines(report, &mut out);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<20} {:>10} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "",
        "ops/s",
        "ops/cpu-s",
        "off-cpu",
        "ops/s(t)",
        "p50",
        "p99",
        "p99.9",
        "p99.99",
        "max",
        "peak RSS"
    );
    for f in std::iter::once(&report.ours).chain(&report.peers) {
        let _ = writeln!(
            out,
            "{:<20} {:>10.0} {:>10.0} {:>7} {:>10.0} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            f.name,
            f.ops_per_sec,
            f.ops_per_cpu_sec,
            format!("{:.0}/{:.0}%", f.off_cpu * 100.0, f.timed_off_cpu * 100.0),
            f.timed_ops_per_sec,
            micros(f.p50_ns),
            micros(f.p99_ns),
            micros(f.p999_ns),
            micros(f.p9999_ns),
            micros(f.max_ns),
            mib(f.memory.peak)
        );
    }
    pass_lines(report, &mut out);
    let host = &report.host;
    let _ = writeln!(
        out,
        "host: a loop only reading the clock for {:.1} s (as long as our latency pass) lost it \
         for up to {} at a time ({} times over 100 µs): the host's own pauses, beside the max",
        host.seconds,
        micros(host.max_gap_ns),
        host.gaps_over_100us
    );
    for f in &report.peers {
        if let Some(p) = &f.peer {
            let _ = writeln!(
                out,
                "{}: {} ops traded (ours {}), {} errors, {} cancels/modifies of orders it lacked, \
                 final best bid {} / ask {}",
                f.name,
                p.traded_ops,
                s.traded,
                p.errors,
                p.missing,
                price(p.best_bid),
                price(p.best_ask)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use hdrhistogram::Histogram;

    use super::*;

    fn span(wall_ms: u64, on_cpu_ms: u64) -> Span {
        Span {
            wall: Duration::from_millis(wall_ms),
            on_cpu: Duration::from_millis(on_cpu_ms),
        }
    }

    fn figures(passes: &[Span]) -> Figures {
        let mut histogram = Histogram::new_with_bounds(1, 1_000_000, 3).unwrap();
        for ns in 1..=1_000 {
            histogram.record(ns).unwrap();
        }
        let timed = Timed {
            histogram,
            span: span(1, 1),
        };
        Figures::new("subject", &timed, passes, Memory::default(), None)
    }

    #[test]
    fn throughput_is_the_median_pass_by_wall_time_with_its_own_cpu_time() {
        // 1,000 ops: the median pass is the 200 ms one (5,000/s), whichever
        // place it ran in, with its 160 ms on a CPU.
        let f = figures(&[span(300, 250), span(100, 80), span(200, 160)]);
        assert_eq!(f.ops_per_sec.round(), 5_000.0);
        assert_eq!(f.ops_per_cpu_sec.round(), 6_250.0);
        assert!((f.off_cpu - 0.2).abs() < 1e-9);
        // Every pass is kept, in the order it ran.
        let rates: Vec<f64> = f.pass_ops_per_sec.iter().map(|x| x.round()).collect();
        assert_eq!(rates, [3_333.0, 10_000.0, 5_000.0]);
    }

    #[test]
    fn of_two_middle_passes_the_slower_is_reported() {
        let f = figures(&[
            span(100, 100),
            span(400, 400),
            span(200, 200),
            span(300, 300),
        ]);
        assert_eq!(f.ops_per_sec.round(), 3_333.0);
    }
}
