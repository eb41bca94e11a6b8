//! `exchange bench journal`: what one group commit costs the log, with
//! segments that grow as they are written and with preallocated ones.
//!
//! Each pass opens a fresh journal in a temporary directory on the disk
//! being measured, appends one record and syncs it, over and over, and
//! times each append + sync into an HdrHistogram. The two layouts take
//! turns in short passes, so a disk whose speed drifts over minutes (a
//! virtual disk shared with other machines) weighs on both alike. A
//! preallocated pass measures only after the log has moved onto its first
//! spare; later spares are written during the pass, as in the server.
//! Syncs over a millisecond are kept by time as well, to tell a disk
//! whose slow syncs come in spells from one where they are spread out
//! ([`super::spells`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use exchange_journal::{Journal, JournalOptions, DEFAULT_PREALLOCATE_AFTER};
use hdrhistogram::Histogram;
use serde_json::json;

use super::e2e::progress;
use super::spells::{self, Spell, SLOW_SYNC};

#[derive(clap::Args)]
pub struct JournalArgs {
    /// Bytes per record: one group commit's batch (the server's are about
    /// ten commands of 140 bytes under load).
    #[arg(long, default_value_t = 1_400)]
    bytes: usize,
    /// Seconds measured per layout, over all its passes.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Passes per layout, alternating.
    #[arg(long, default_value_t = 4)]
    passes: u32,
    /// Segment size in MiB.
    #[arg(long, default_value_t = 64)]
    segment_mib: u64,
    /// Directory the journals are created in (on the disk measured).
    #[arg(long, default_value = "/var/tmp")]
    dir: PathBuf,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy)]
enum Layout {
    Growing,
    Preallocated,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::Growing => "growing",
            Layout::Preallocated => "preallocated",
        }
    }
}

struct Tally {
    histogram: Histogram<u64>,
    measured: Duration,
    /// Syncs over [`SLOW_SYNC`], and the spells they came in.
    slow_syncs: usize,
    spells: Vec<Spell>,
}

pub fn run(args: JournalArgs) -> anyhow::Result<()> {
    if args.bytes == 0 || args.passes == 0 || args.segment_mib == 0 || args.duration <= 0.0 {
        anyhow::bail!("--bytes, --passes, --segment-mib and --duration must be positive");
    }
    let layouts = [Layout::Growing, Layout::Preallocated];
    let mut tallies = Vec::new();
    for _ in layouts {
        tallies.push(Tally {
            histogram: Histogram::new_with_bounds(1, 60_000_000_000, 3)?,
            measured: Duration::ZERO,
            slow_syncs: 0,
            spells: Vec::new(),
        });
    }
    let pass = Duration::from_secs_f64(args.duration / f64::from(args.passes));
    let bar = progress("journal", pass * args.passes * layouts.len() as u32);
    for _ in 0..args.passes {
        for (layout, tally) in layouts.iter().zip(tallies.iter_mut()) {
            bar.set_message(layout.name());
            measure(&args, *layout, pass, tally)?;
            bar.inc(pass.as_millis() as u64);
        }
    }
    bar.finish_and_clear();
    print(&args, &layouts, &tallies)
}

fn measure(
    args: &JournalArgs,
    layout: Layout,
    pass: Duration,
    tally: &mut Tally,
) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("bench-journal")
        .tempdir_in(&args.dir)
        .with_context(|| format!("a temporary directory in {}", args.dir.display()))?;
    let segment_bytes = args.segment_mib << 20;
    let options = match layout {
        Layout::Growing => JournalOptions::plain(segment_bytes),
        Layout::Preallocated => JournalOptions {
            segment_bytes,
            preallocate_after: Some(DEFAULT_PREALLOCATE_AFTER.min(segment_bytes / 2)),
        },
    };
    let (mut journal, _) = Journal::open_with(dir.path(), 1, options)?;
    let record = vec![0x5au8; args.bytes];
    if let Layout::Preallocated = layout {
        // Until the log runs on a spare: the growing first segment is the
        // other layout's figure.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !on_a_spare(dir.path(), segment_bytes)? {
            append_and_sync(&mut journal, &record)?;
            if Instant::now() > deadline {
                anyhow::bail!("the journal took no spare within a minute");
            }
        }
    }
    let start = Instant::now();
    let mut slow = Vec::new();
    while start.elapsed() < pass {
        let began = Instant::now();
        append_and_sync(&mut journal, &record)?;
        let took = began.elapsed();
        tally
            .histogram
            .saturating_record((took.as_nanos() as u64).max(1));
        if took > SLOW_SYNC {
            slow.push((began - start, took));
        }
    }
    tally.measured += start.elapsed();
    tally.slow_syncs += slow.len();
    tally.spells.extend(spells::spells(&slow));
    Ok(())
}

fn append_and_sync(journal: &mut Journal, record: &[u8]) -> anyhow::Result<()> {
    journal.append(1, &[record])?;
    journal.sync()?;
    Ok(())
}

/// Whether the log has rolled onto a spare: a second segment whose file
/// is already at its full size.
fn on_a_spare(dir: &Path, segment_bytes: u64) -> anyhow::Result<bool> {
    let mut segments = Vec::new();
    for item in std::fs::read_dir(dir)? {
        let path = item?.path();
        if path.extension().is_some_and(|e| e == "log") {
            segments.push(path);
        }
    }
    segments.sort();
    Ok(match segments.last() {
        Some(active) if segments.len() >= 2 => std::fs::metadata(active)?.len() >= segment_bytes,
        _ => false,
    })
}

fn print(args: &JournalArgs, layouts: &[Layout], tallies: &[Tally]) -> anyhow::Result<()> {
    let us = |ns: u64| ns as f64 / 1_000.0;
    let rows: Vec<serde_json::Value> = layouts
        .iter()
        .zip(tallies)
        .map(|(layout, tally)| {
            let h = &tally.histogram;
            json!({
                "layout": layout.name(),
                "syncs": h.len(),
                "syncs_per_sec": h.len() as f64 / tally.measured.as_secs_f64().max(1e-9),
                "mean_us": h.mean() / 1_000.0,
                "p50_us": us(h.value_at_quantile(0.50)),
                "p99_us": us(h.value_at_quantile(0.99)),
                "p999_us": us(h.value_at_quantile(0.999)),
                "max_us": us(h.max()),
                "slow_syncs": tally.slow_syncs,
                "slow_spells": tally.spells.len(),
                "slow_syncs_in_spells": tally.spells.iter().map(|s| s.syncs).sum::<usize>(),
                "spells_summary": spells::summary(tally.slow_syncs, &tally.spells, tally.measured),
            })
        })
        .collect();
    if args.json {
        let out = json!({
            "bytes": args.bytes,
            "segment_mib": args.segment_mib,
            "dir": args.dir.display().to_string(),
            "layouts": rows,
        });
        println!("{out}");
        return Ok(());
    }
    println!(
        "append + fdatasync of one {}-byte record, {} MiB segments, in {}",
        args.bytes,
        args.segment_mib,
        args.dir.display()
    );
    for row in &rows {
        let f = |k: &str| row[k].as_f64().unwrap_or(0.0);
        println!(
            "{:<13} {:>7.0} syncs/s   mean {:>5.0} us   p50 {:>5.0} us   \
             p99 {:>6.0} us   p99.9 {:>6.0} us   max {:>7.0} us",
            row["layout"].as_str().unwrap_or(""),
            f("syncs_per_sec"),
            f("mean_us"),
            f("p50_us"),
            f("p99_us"),
            f("p999_us"),
            f("max_us"),
        );
        println!(
            "{:<13} {}",
            "",
            row["spells_summary"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
