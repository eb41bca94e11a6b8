//! Printing `bench e2e`'s figures: a table, or one JSON object.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{json, Value};

use super::record::Totals;
use super::server::ServerCounters;
use super::target::Target;
use super::windows::slow_windows;
use super::Transport;

/// Of the entries the core applied over the window, the share the
/// reporting store must have written over it too: a store that falls
/// ever further behind gives the order path cores it cannot keep.
pub const STORE_KEEPS_UP: f64 = 0.95;
/// The reporting store's backlog at the end of the window, in seconds of
/// the run: at most this many seconds' worth of the entries the core
/// applied per second over the window, and (from a server that publishes
/// it) at most this far behind in log time. A store that kept 95% of the
/// pace but ends ever further behind has not kept up.
pub const STORE_BACKLOG_SECS: f64 = 1.0;
/// Median lateness (from due time) past which a paced run counts as behind
/// its schedule: well over the pacing timer's 1 ms slack.
const BEHIND_NS: u64 = 5_000_000;

pub struct ServerFigures {
    pub counters: ServerCounters,
    /// CPU seconds by thread name over the window (empty for `--url`).
    pub cpu: BTreeMap<String, f64>,
}

pub struct Figures {
    pub transport: Transport,
    pub clients: usize,
    pub inflight: usize,
    pub rate: u64,
    pub seconds: f64,
    pub totals: Totals,
    pub server: ServerFigures,
    /// CPU seconds the load generator used over the window.
    pub client_cpu: f64,
    /// Share of the machine's CPU time the hypervisor stole over the
    /// window (`None` where `/proc/stat` does not say).
    pub steal: Option<f64>,
    /// Raft voters of the server measured: one for a single node.
    pub voters: usize,
    /// How the reporting store worked off its backlog once the load
    /// stopped; `None` without a store or without a backlog to time.
    pub catch_up: Option<CatchUp>,
}

/// The store's backlog at the end of the load, written off with no orders
/// coming in: how fast the store catches up after a spike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CatchUp {
    pub entries: f64,
    pub seconds: f64,
    /// Whether the backlog was all written before the bench stopped waiting.
    pub finished: bool,
}

impl CatchUp {
    pub fn per_sec(&self) -> f64 {
        self.entries / self.seconds.max(f64::EPSILON)
    }
}

impl Figures {
    pub fn per_sec(&self) -> f64 {
        self.totals.acked() as f64 / self.seconds
    }

    fn target(&self) -> Target {
        Target::of(self.voters, self.rate)
    }

    /// A paced run whose median order left over 5 ms after it was due: the
    /// schedule fell behind (in the warm-up, or for good) and the clients
    /// sent whenever an answer freed a slot.
    fn behind_schedule(&self) -> bool {
        self.rate > 0 && self.totals.from_due.value_at_quantile(0.5) > BEHIND_NS
    }

    fn meets_target(&self) -> bool {
        self.transport == Transport::Ws
            && self.target().met_by(
                self.rate,
                self.per_sec(),
                self.behind_schedule(),
                self.totals.latency.value_at_quantile(0.99),
            )
            && self
                .store_share()
                .is_none_or(|share| share >= STORE_KEEPS_UP)
            && self.store_backlog_bounded().is_none_or(|bounded| bounded)
    }

    /// The largest backlog (entries) the store may end the window with:
    /// [`STORE_BACKLOG_SECS`] of the core's applied rate.
    fn store_backlog_bound(&self) -> f64 {
        STORE_BACKLOG_SECS * self.server.counters.commands / self.seconds.max(f64::EPSILON)
    }

    /// Whether the store ended the window within its backlog bound, in
    /// entries and in log time; `None` without a store.
    fn store_backlog_bounded(&self) -> Option<bool> {
        let reported = self.server.counters.reported?;
        Some(
            reported.lag <= self.store_backlog_bound()
                && reported
                    .lag_seconds
                    .is_none_or(|seconds| seconds <= STORE_BACKLOG_SECS),
        )
    }

    /// The store's catch-up rate over the core's applied rate in the
    /// window: at least 2 means a backlog left by a spike at the sustained
    /// rate is gone in half the spike's time.
    fn catch_up_ratio(&self) -> Option<f64> {
        let applied = self.server.counters.commands / self.seconds.max(f64::EPSILON);
        self.catch_up
            .filter(|_| applied > 0.0)
            .map(|c| c.per_sec() / applied)
    }

    /// Entries the reporting store wrote over the window, as a share of the
    /// commands the core applied; `None` without a store.
    fn store_share(&self) -> Option<f64> {
        let counters = &self.server.counters;
        let reported = counters.reported?;
        Some(if counters.commands > 0.0 {
            reported.entries / counters.commands
        } else {
            1.0
        })
    }

    fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Ws => "ws",
            Transport::Rest => "rest",
        }
    }

    /// Mean entries per group commit, mean fsync time in µs, and the
    /// shares of fsyncs over 1 ms and over 5 ms.
    fn batching(&self) -> (f64, f64, f64, f64) {
        let c = &self.server.counters;
        let batches = c.batches.max(1.0);
        (
            c.commands / batches,
            c.fsync_seconds / batches * 1e6,
            c.fsyncs_over_1ms / batches,
            c.fsyncs_over_5ms / batches,
        )
    }

    /// Busy cores per thread group: CPU seconds over wall seconds.
    fn cores(&self) -> BTreeMap<String, f64> {
        let mut groups = BTreeMap::new();
        for (name, seconds) in &self.server.cpu {
            // tokio names every worker the same; other names are the
            // pipeline's own threads.
            *groups.entry(name.clone()).or_insert(0.0) += seconds / self.seconds;
        }
        groups
    }

    /// CPU µs each thread group spent per acknowledged order: where an
    /// order's cost is, whatever the load the run reached.
    fn us_per_order(&self) -> BTreeMap<String, f64> {
        let acked = self.totals.acked() as f64;
        if acked == 0.0 {
            return BTreeMap::new();
        }
        self.server
            .cpu
            .iter()
            .fold(BTreeMap::new(), |mut groups, (name, seconds)| {
                *groups.entry(name.clone()).or_insert(0.0) += seconds * 1e6 / acked;
                groups
            })
    }
}

pub fn json(figures: &Figures) -> Value {
    let totals = &figures.totals;
    let (batch, fsync_us, over_1ms, over_5ms) = figures.batching();
    let server_cores: f64 = figures.cores().values().sum();
    json!({
        "transport": figures.transport_name(),
        "clients": figures.clients,
        "inflight": figures.inflight,
        "target_rate": figures.rate,
        "seconds": figures.seconds,
        "acked": totals.acked(),
        "acked_per_sec": figures.per_sec(),
        "places": totals.places,
        "cancels": totals.cancels,
        "rejects": totals.rejects,
        "errors": totals.errors,
        "latency_us": latency_json(&totals.latency),
        "latency_from_due_us": latency_json(&totals.from_due),
        "behind_schedule": figures.behind_schedule(),
        "slow_windows": slow_windows(&totals.samples).map(|w| json!({
            "window_ms": super::windows::WINDOW_US / 1_000,
            "windows": w.windows,
            "slow_windows": w.slow_windows,
            "share_of_slowest_1pct": w.share_in_slow,
            "p99_outside_us": w.p99_outside_us,
        })),
        "server": {
            "commands": figures.server.counters.commands,
            "group_commits": figures.server.counters.batches,
            "entries_per_commit": batch,
            "fsync_mean_us": fsync_us,
            "fsyncs_over_1ms": over_1ms,
            "fsyncs_over_5ms": over_5ms,
            "overloaded": figures.server.counters.overloaded,
            "reporting": figures.server.counters.reported.map(|r| json!({
                "entries_written": r.entries,
                "lag_entries_at_end": r.lag,
                "lag_seconds_at_end": r.lag_seconds,
                "lag_bound_entries": figures.store_backlog_bound(),
                "lag_bounded": figures.store_backlog_bounded(),
                "share_of_applied": figures.store_share(),
                "catch_up": figures.catch_up.map(|c| json!({
                    "entries": c.entries,
                    "seconds": c.seconds,
                    "entries_per_sec": c.per_sec(),
                    "finished": c.finished,
                    "over_applied_rate": figures.catch_up_ratio(),
                })),
            })),
            "cores_by_thread": figures.cores(),
            "cpu_us_per_order_by_thread": figures.us_per_order(),
            "cores": server_cores,
        },
        "client_cores": figures.client_cpu / figures.seconds,
        "steal_share": figures.steal,
        "target_met": figures.meets_target(),
        "target_per_sec": figures.target().per_sec,
        "target_paced": figures.target().paced,
        "target_p99_us": figures.target().p99_ns.map(|ns| ns / 1_000),
        "voters": figures.voters,
    })
}

/// The ack latency percentiles, one line; `bench etcd` prints the same.
pub fn latency_line(latency: &hdrhistogram::Histogram<u64>) -> String {
    percentiles_line("ack latency", latency)
}

/// `latency`'s percentiles in µs after a label, aligned with the report's
/// other lines.
fn percentiles_line(label: &str, latency: &hdrhistogram::Histogram<u64>) -> String {
    let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
    format!(
        "{label:<15} p50 {:.0} us   p90 {:.0} us   p99 {:.0} us   p99.9 {:.0} us   max {:.0} us",
        us(0.5),
        us(0.9),
        us(0.99),
        us(0.999),
        latency.max() as f64 / 1e3
    )
}

/// The percentiles of `latency` in µs, as in `--json`'s `latency_us`.
pub fn latency_json(latency: &hdrhistogram::Histogram<u64>) -> Value {
    let us = |q: f64| latency.value_at_quantile(q) as f64 / 1e3;
    json!({
        "p50": us(0.5), "p90": us(0.9), "p99": us(0.99),
        "p99_9": us(0.999), "max": latency.max() as f64 / 1e3,
        "mean": latency.mean() / 1e3,
    })
}

pub fn text(figures: &Figures) -> String {
    let mut out = String::new();
    load_lines(figures, &mut out);
    outcome_lines(figures, &mut out);
    machine_lines(figures, &mut out);
    // The target is about load: a lone order at a time says nothing of it.
    if figures.transport == Transport::Ws && figures.clients * figures.inflight > 1 {
        let verdict = if figures.meets_target() {
            "met"
        } else {
            "NOT met"
        };
        let _ = writeln!(
            out,
            "target ({}): {verdict}",
            figures.target().describe(figures.voters)
        );
    }
    out
}

/// What was asked of the server, the rate it acknowledged and how fast.
fn load_lines(figures: &Figures, out: &mut String) {
    let totals = &figures.totals;
    let rate = match figures.rate {
        0 => "as fast as answered".to_owned(),
        r => format!("{r}/s target"),
    };
    let _ = writeln!(
        out,
        "{} clients x {} in flight over {}, {rate}, {:.1} s measured",
        figures.clients,
        figures.inflight,
        figures.transport_name(),
        figures.seconds
    );
    let _ = writeln!(
        out,
        "acknowledged    {:>10.0} orders/s  ({} places, {} cancels)",
        figures.per_sec(),
        totals.places,
        totals.cancels
    );
    let _ = writeln!(out, "{}", latency_line(&totals.latency));
    if figures.rate > 0 {
        // The verdict is on ack latency, from the send. Counted from when
        // each order was due, an order that waited for a free in-flight slot
        // counts its wait too, and every order the pacing timer's slack
        // (tokio's 1 ms) as well.
        let _ = writeln!(
            out,
            "{}",
            percentiles_line("from due time", &totals.from_due)
        );
        if figures.behind_schedule() {
            let _ = writeln!(
                out,
                "pacing          behind schedule: the in-flight cap held the rate back, \
                 so this was a closed loop at {} in flight and the rate a ceiling",
                figures.clients * figures.inflight
            );
        }
    }
    if let Some(windows) = slow_windows(&totals.samples) {
        let _ = writeln!(out, "{}", windows.line());
    }
}

/// Refusals and errors, then what the journal and the reporting store did.
fn outcome_lines(figures: &Figures, out: &mut String) {
    let totals = &figures.totals;
    let tally = |map: &BTreeMap<String, u64>| {
        if map.is_empty() {
            "none".to_owned()
        } else {
            map.iter()
                .map(|(code, n)| format!("{code} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(out, "core refusals   {}", tally(&totals.rejects));
    let _ = writeln!(out, "gateway errors  {}", tally(&totals.errors));
    let (batch, fsync_us, over_1ms, over_5ms) = figures.batching();
    let _ = writeln!(
        out,
        "group commits   {:.0}/s, {batch:.1} entries each; fsync {fsync_us:.0} us on average, \
         {:.1}% over 1 ms, {:.1}% over 5 ms",
        figures.server.counters.batches / figures.seconds,
        over_1ms * 100.0,
        over_5ms * 100.0
    );
    if let (Some(reported), Some(share)) = (figures.server.counters.reported, figures.store_share())
    {
        let seconds = reported
            .lag_seconds
            .map(|s| format!(" ({s:.3} s of log time)"))
            .unwrap_or_default();
        let bounded = if figures.store_backlog_bounded() == Some(false) {
            "OVER"
        } else {
            "within"
        };
        let _ = writeln!(
            out,
            "reporting store {:.0} entries/s written ({:.0}% of those applied), \
             {:.0} behind at the end{seconds}: {bounded} the bound of {STORE_BACKLOG_SECS:.0} s \
             ({:.0} entries)",
            reported.entries / figures.seconds,
            share * 100.0,
            reported.lag,
            figures.store_backlog_bound()
        );
    }
    if let (Some(c), Some(ratio)) = (figures.catch_up, figures.catch_up_ratio()) {
        let _ = writeln!(
            out,
            "store catch-up  {:.0} entries in {:.2} s once the load stopped: {:.0} entries/s, \
             {ratio:.1}x the applied rate{}",
            c.entries,
            c.seconds,
            c.per_sec(),
            if c.finished { "" } else { " (not finished)" }
        );
    }
}

/// The CPU the server and the clients used, and what the hypervisor took.
fn machine_lines(figures: &Figures, out: &mut String) {
    let cores = figures.cores();
    if !cores.is_empty() {
        let busy: Vec<String> = cores
            .iter()
            .filter(|(_, c)| **c >= 0.005)
            .map(|(n, c)| format!("{n} {c:.2}"))
            .collect();
        let _ = writeln!(
            out,
            "server cores    {:.2}: {}",
            cores.values().sum::<f64>(),
            busy.join(", ")
        );
        let per_order = figures.us_per_order();
        let spent: Vec<String> = per_order
            .iter()
            .filter(|(_, us)| **us >= 0.01)
            .map(|(n, us)| format!("{n} {us:.2}"))
            .collect();
        let _ = writeln!(
            out,
            "CPU per order   {:.2} µs: {}",
            per_order.values().sum::<f64>(),
            spent.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "client cores    {:.2}",
        figures.client_cpu / figures.seconds
    );
    if let Some(steal) = figures.steal {
        let _ = writeln!(
            out,
            "machine         {:.1}% of CPU time stolen by the hypervisor",
            steal * 100.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::server::ReportingCounters;
    use super::*;

    fn figures(per_sec: u64, p99_ns: u64) -> Figures {
        let mut totals = Totals {
            places: per_sec * 2,
            ..Totals::default()
        };
        for _ in 0..50 {
            totals.latency.record(p99_ns / 2).unwrap();
            totals.from_due.record(p99_ns / 2).unwrap();
        }
        totals.latency.record(p99_ns).unwrap();
        totals.from_due.record(p99_ns).unwrap();
        Figures {
            transport: Transport::Ws,
            clients: 16,
            inflight: 8,
            rate: 0,
            seconds: 2.0,
            totals,
            server: ServerFigures {
                counters: ServerCounters {
                    commands: 1000.0,
                    batches: 10.0,
                    fsync_seconds: 0.001,
                    fsyncs_over_1ms: 1.0,
                    fsyncs_over_5ms: 0.0,
                    overloaded: 0.0,
                    reported: None,
                },
                cpu: BTreeMap::from([("core".to_owned(), 1.0), ("journal".to_owned(), 0.5)]),
            },
            client_cpu: 1.0,
            steal: Some(0.02),
            voters: 1,
            catch_up: None,
        }
    }

    #[test]
    fn a_paced_run_shows_its_lateness_and_says_when_it_fell_behind() {
        let mut paced = figures(100_000, 1_000_000);
        paced.rate = 100_000;
        let shown = text(&paced);
        assert!(shown.contains("from due time   p50"), "{shown}");
        assert!(!shown.contains("behind schedule"));
        assert!(paced.meets_target());
        assert!(
            shown.contains("p99 <= 2 ms, store keeping up): met"),
            "{shown}"
        );
        assert!(!text(&figures(60_000, 1_000_000)).contains("from due time"));
        // Every order left 400 ms late: the clients never caught up.
        paced.totals.from_due.reset();
        for _ in 0..60 {
            paced.totals.from_due.record(400_000_000).unwrap();
        }
        let shown = text(&paced);
        assert!(
            shown.contains(
                "behind schedule: the in-flight cap held the rate back, \
                 so this was a closed loop at 128 in flight"
            ),
            "{shown}"
        );
        assert_eq!(json(&paced)["behind_schedule"], true);
        assert!(json(&paced)["latency_from_due_us"]["p50"].as_f64() >= Some(399_000.0));
        // A paced target is met on schedule only.
        assert!(!paced.meets_target());
    }

    #[test]
    fn a_cluster_is_held_to_its_own_latency_target() {
        let mut three = figures(100_000, 4_000_000);
        three.voters = 3;
        assert!(three.meets_target());
        assert!(text(&three).contains("p99 <= 5 ms, 3 voters, store keeping up): met"));
        assert_eq!(json(&three)["target_p99_us"], 5_000);
        assert_eq!(json(&three)["target_per_sec"], 100_000);
        // The single node's 2 ms does not hold at 4 ms.
        let mut one = figures(100_000, 4_000_000);
        one.rate = 100_000;
        assert!(!one.meets_target());
        three.totals.latency.record(9_000_000).unwrap();
        three.totals.latency.record(9_000_000).unwrap();
        assert!(!three.meets_target());
    }

    #[test]
    fn a_closed_loop_on_a_single_node_is_held_to_its_rate() {
        assert!(figures(150_000, 1_000_000).meets_target());
        assert!(!figures(140_000, 1_000_000).meets_target());
        // Queueing sets a closed loop's latency: only a paced run's counts.
        assert!(figures(150_000, 9_000_000).meets_target());
        assert_eq!(
            json(&figures(150_000, 1_000_000))["target_p99_us"],
            Value::Null
        );
        // 1 of 51 samples is above p99: it counts against a paced target.
        let mut slow = figures(100_000, 4_000_000);
        slow.rate = 100_000;
        assert!(slow.totals.latency.value_at_quantile(0.99) >= 2_000_000);
        assert!(!slow.meets_target());
        let value = json(&figures(60_000, 1_000_000));
        assert_eq!(value["acked_per_sec"], 60_000.0);
        assert_eq!(value["server"]["entries_per_commit"], 100.0);
        assert_eq!(value["server"]["fsyncs_over_1ms"], 0.1);
        assert_eq!(value["server"]["cores"], 0.75);
        let per_order = &value["server"]["cpu_us_per_order_by_thread"];
        let acked = figures(60_000, 1_000_000).totals.acked() as f64;
        assert_eq!(per_order["core"], 1.0 * 1e6 / acked);
        assert_eq!(per_order["journal"], 0.5 * 1e6 / acked);
        assert!(text(&figures(60_000, 1_000_000)).contains("CPU per order"));
        let fast = text(&figures(150_000, 1_000_000));
        assert!(
            fast.contains(">= 150,000/s, store keeping up): met"),
            "{fast}"
        );
        assert!(text(&figures(60_000, 1_000_000)).contains(": NOT met"));
    }

    fn with_store(entries: f64, lag: f64, lag_seconds: Option<f64>) -> Figures {
        let mut f = figures(150_000, 1_000_000);
        f.server.counters.reported = Some(ReportingCounters {
            entries,
            lag,
            lag_seconds,
        });
        f
    }

    #[test]
    fn the_store_catch_up_is_its_rate_over_the_applied_rate() {
        let mut f = with_store(1_000.0, 3_000.0, Some(0.5));
        assert!(f.catch_up_ratio().is_none());
        // 1,000 commands applied over the 2 s window: 500 a second.
        f.catch_up = Some(CatchUp {
            entries: 3_000.0,
            seconds: 1.5,
            finished: true,
        });
        assert_eq!(f.catch_up_ratio(), Some(4.0));
        let catch_up = &json(&f)["server"]["reporting"]["catch_up"];
        assert_eq!(catch_up["entries_per_sec"], 2_000.0);
        assert_eq!(catch_up["over_applied_rate"], 4.0);
        assert!(text(&f).contains("3000 entries in 1.50 s once the load stopped: 2000 entries/s"));
        f.catch_up = Some(CatchUp {
            entries: 10.0,
            seconds: 30.0,
            finished: false,
        });
        assert!(text(&f).contains("(not finished)"));
    }

    #[test]
    fn the_target_needs_a_store_that_keeps_up() {
        // 1,000 commands applied over the window.
        let kept_up = with_store(990.0, 300.0, Some(0.2));
        assert!(kept_up.meets_target());
        assert!(text(&kept_up).contains(
            "reporting store 495 entries/s written (99% of those applied), 300 behind at the \
             end (0.200 s of log time): within the bound of 1 s (500 entries)"
        ));
        assert_eq!(
            json(&kept_up)["server"]["reporting"]["entries_written"],
            990.0
        );
        let behind = with_store(600.0, 300.0, Some(0.2));
        assert!(!behind.meets_target());
        assert!(text(&behind).contains("NOT met"));
        assert!(json(&figures(60_000, 1_000_000))["server"]["reporting"].is_null());
    }

    /// Over the window's 2 s the core applied 500 entries a second: a
    /// store that wrote 99% of them but ends more than a second's worth
    /// behind, in entries or in log time, has not kept up.
    #[test]
    fn the_target_needs_a_bounded_store_backlog() {
        let within = with_store(990.0, 500.0, Some(1.0));
        assert!(within.meets_target());
        assert_eq!(json(&within)["server"]["reporting"]["lag_bounded"], true);
        let entries_over = with_store(990.0, 501.0, Some(0.5));
        assert!(!entries_over.meets_target());
        assert!(text(&entries_over).contains("501 behind at the end (0.500 s of log time): OVER"));
        let value = json(&entries_over);
        assert_eq!(value["server"]["reporting"]["lag_bounded"], false);
        assert_eq!(value["server"]["reporting"]["lag_bound_entries"], 500.0);
        assert_eq!(value["target_met"], false);
        let seconds_over = with_store(990.0, 100.0, Some(1.5));
        assert!(!seconds_over.meets_target());
        assert_eq!(
            json(&seconds_over)["server"]["reporting"]["lag_seconds_at_end"],
            1.5
        );
        // A server that does not publish the time is held to the count.
        let no_seconds = with_store(990.0, 100.0, None);
        assert!(no_seconds.meets_target());
        assert!(text(&no_seconds).contains("100 behind at the end: within"));
    }

    #[test]
    fn slow_windows_show_only_with_samples() {
        use super::super::record::Sample;
        let plain = figures(60_000, 1_000_000);
        assert!(!text(&plain).contains("slow windows"));
        assert!(json(&plain)["slow_windows"].is_null());
        let mut kept = figures(60_000, 1_000_000);
        // 400 orders over four windows; the slowest four, all in the
        // first.
        kept.totals.samples = (0..400i64)
            .map(|i| Sample {
                sent_us: i * 1_000,
                latency_us: if i < 4 { 9_000 } else { 400 },
            })
            .collect();
        assert!(text(&kept).contains("slow windows    1 of 4 100 ms windows hold 100%"));
        let value = json(&kept);
        assert_eq!(value["slow_windows"]["slow_windows"], 1);
        assert_eq!(value["slow_windows"]["p99_outside_us"], 400);
    }
}
